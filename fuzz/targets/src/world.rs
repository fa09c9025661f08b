//! The fixed worlds the targets evaluate in, built once per process from
//! derived keys, so every run of every target sees the same keys, tokens and
//! clock.
//!
//! [`TokenWorld`] is what the token and envelope targets verify against: an
//! issuer, six registered agents, and every capability it legitimately
//! issued (two roots and a chain of delegations of depth one to three, each
//! prefix kept), plus a depth-four chain the kernel's limit refuses. A token
//! whose canonical bytes are not among [`TokenWorld::valid`] was never
//! issued, so any verifier must refuse it: an unforgeable signature is the
//! property under test. The node targets host the scenario of
//! `fuzz/targets/world.toml` (see [`crate::node`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use chio_kernel::canonical::to_canonical_vec;
use chio_kernel::keys::{derive_arena_key, public_key_hex};
use chio_kernel::stores::KernelStores;
use chio_kernel::token::{
    Attenuation, CapabilityBody, ScopeGrant, CAPABILITY_SCHEMA, FULL_SHARE_BPS,
};
use chio_kernel::{CapabilityToken, Kernel, KernelConfig};
use ed25519_dalek::SigningKey;

/// Seed of every key of the token world.
pub const SEED: u64 = 7;
/// The token world's "now", in Unix seconds.
pub const NOW_SECS: u64 = 1_800_000_000;
/// The token world's "now", in milliseconds.
pub const NOW_MS: u64 = NOW_SECS * 1000;
/// The delegation depth limit of the token world's kernel.
pub const MAX_DEPTH: usize = 3;
/// The agents the token world's kernel knows.
pub const AGENTS: &[&str] = &["alice", "bob", "carol", "dave", "erin", "mallory"];

/// Keys and issued tokens of the token and envelope targets.
#[derive(Debug)]
pub struct TokenWorld {
    /// The issuer's public key (hex), the only trusted one.
    pub issuer_hex: String,
    /// Agent name to signing key.
    pub agents: BTreeMap<String, SigningKey>,
    /// Every token issued and valid now, root first, each chain prefix kept.
    pub tokens: Vec<CapabilityToken>,
    /// A depth-four chain: signed correctly, refused for its depth.
    pub too_deep: CapabilityToken,
    /// Canonical bytes of every token in `tokens`.
    pub valid: BTreeSet<Vec<u8>>,
}

/// The agent's signing key, derived like the arena derives it.
fn agent_key(name: &str) -> SigningKey {
    derive_arena_key(SEED, "agent", name)
}

fn root(id: &str, agent: &str, scope: Vec<ScopeGrant>, issuer: &SigningKey) -> CapabilityToken {
    CapabilityToken::issue(
        CapabilityBody {
            schema: CAPABILITY_SCHEMA.into(),
            id: id.into(),
            issuer: public_key_hex(issuer),
            subject: public_key_hex(&agent_key(agent)),
            scope,
            not_before_ms: NOW_MS - 3_600_000,
            expires_at_ms: NOW_MS + 3_600_000,
            max_invocations: Some(100),
            share_bps: FULL_SHARE_BPS,
        },
        issuer,
    )
    .expect("the token world's root capability signs")
}

fn delegate(
    parent: &CapabilityToken,
    from: &str,
    to: &str,
    child: &str,
    share_bps: u32,
    at_ms: u64,
) -> CapabilityToken {
    parent
        .delegate(
            &agent_key(from),
            &public_key_hex(&agent_key(to)),
            &Attenuation {
                tools: Some(vec!["read_file".into()]),
                path_prefix: Some("/workspace/shared/".into()),
                max_invocations: Some(10),
                share_bps: Some(share_bps),
                ..Attenuation::default()
            },
            child,
            at_ms,
        )
        .expect("the token world's delegation signs")
}

fn build() -> TokenWorld {
    let issuer = derive_arena_key(SEED, "authority", "root");
    let files = vec![
        ScopeGrant::new("files", &["read_file", "write_file", "list_dir"])
            .with_path_prefix("/workspace/"),
    ];
    let alice = root("cap-alice", "alice", files, &issuer);
    let mallory = root(
        "cap-mallory",
        "mallory",
        vec![ScopeGrant::new("publish", &["publish"])],
        &issuer,
    );
    let bob = delegate(&alice, "alice", "bob", "cap-bob", 5000, NOW_MS - 4000);
    let carol = delegate(&bob, "bob", "carol", "cap-carol", 2500, NOW_MS - 3000);
    let dave = delegate(&carol, "carol", "dave", "cap-dave", 1000, NOW_MS - 2000);
    let too_deep = delegate(&dave, "dave", "erin", "cap-erin", 500, NOW_MS - 1000);
    let tokens = vec![alice, mallory, bob, carol, dave];
    let valid = tokens
        .iter()
        .map(|t| to_canonical_vec(t).expect("an issued token has a canonical form"))
        .collect();
    TokenWorld {
        issuer_hex: public_key_hex(&issuer),
        agents: AGENTS
            .iter()
            .map(|name| (name.to_string(), agent_key(name)))
            .collect(),
        tokens,
        too_deep,
        valid,
    }
}

/// The token world, built on first use.
pub fn token_world() -> &'static TokenWorld {
    static WORLD: OnceLock<TokenWorld> = OnceLock::new();
    WORLD.get_or_init(build)
}

impl TokenWorld {
    /// Whether `token` is one the world issued, compared by canonical bytes
    /// (so two spellings of one signed value count as the same token).
    pub fn issued(&self, token: &CapabilityToken) -> bool {
        to_canonical_vec(token).is_ok_and(|bytes| self.valid.contains(&bytes))
    }

    /// The name of the registered agent whose public key is `subject`.
    pub fn agent_of(&self, subject: &str) -> Option<(&str, &SigningKey)> {
        self.agents
            .iter()
            .find(|(_, key)| public_key_hex(key) == subject)
            .map(|(name, key)| (name.as_str(), key))
    }

    /// A fresh kernel with in-memory stores that trusts the world's issuer
    /// and knows its agents.
    pub fn kernel(&self) -> Kernel {
        let mut config = KernelConfig::new("kernel-fuzz", derive_arena_key(SEED, "kernel", "k"));
        config.trusted_issuers = vec![self.issuer_hex.clone()];
        config.max_delegation_depth = MAX_DEPTH;
        config.agent_keys = self
            .agents
            .iter()
            .map(|(name, key)| (name.clone(), public_key_hex(key)))
            .collect();
        Kernel::new(config, KernelStores::in_memory()).expect("the token world's kernel builds")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chio_kernel::verification::verify_capability;

    // Proves every issued token verifies now and the depth-four chain does not.
    #[test]
    fn issued_tokens_verify_and_the_deep_chain_is_refused() {
        let world = token_world();
        let trusted = [world.issuer_hex.clone()];
        for token in &world.tokens {
            assert!(world.issued(token));
            let verified = verify_capability(token, &trusted, NOW_MS, MAX_DEPTH, None);
            assert!(verified.is_ok(), "{}: {verified:?}", token.id);
        }
        let refused = verify_capability(&world.too_deep, &trusted, NOW_MS, MAX_DEPTH, None);
        assert!(refused.is_err_and(|reason| reason.to_string().contains("depth")));
        assert!(!world.issued(&world.too_deep));
    }
}
