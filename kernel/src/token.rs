//! Capability tokens, scope grants and delegation links.
//!
//! A root capability is issued by an authority: its body (schema
//! `chio.capability/v1`, id, issuer and subject keys, scope grants, validity
//! window in Unix milliseconds, invocation budget, share in basis points) is
//! signed by the issuer over its RFC 8785 canonical JSON.
//!
//! Delegation keeps the token self-contained. The holder of a capability
//! signs a [`DelegationLink`] (schema `chio.delegation/v1`) naming the parent
//! id, the child id, itself as delegator, the delegatee, the child's complete
//! attenuated state (scope, window, budget, share) and a virtual timestamp.
//! The child token the delegatee presents carries:
//! - its own effective state in the top-level fields (id = the last link's
//!   child id, subject = the last delegatee, scope/window/budget/share = the
//!   last link's attenuation), which the kernel checks against the last link;
//! - `delegation_chain`: every link from the root to it, in order;
//! - `root`: the root body exactly as the issuer signed it, and `signature`:
//!   the issuer's signature over that root body.
//!
//! So the kernel verifies the whole chain from the presented token alone:
//! the root signature, each link signature by the previous holder, that the
//! top-level fields are the last link's, continuity (each link's parent is the
//! previous child and its delegator the previous delegatee), no repeated id
//! or key (acyclic), depth, and that each child's scope is a subset of its
//! parent's, its window inside its parent's, its budget and share no larger.
//!
//! [`CapabilityToken::delegate`] applies an [`Attenuation`] literally: it
//! does not refuse a widening (the arena's scope-escape adversaries build
//! such links on purpose); the kernel refuses it when the child is presented.

use std::collections::BTreeMap;

use ed25519_dalek::{Signer, SigningKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::to_canonical_vec;
use crate::error::KernelError;
use crate::keys::public_key_hex;

/// Schema id of capability bodies.
pub const CAPABILITY_SCHEMA: &str = "chio.capability/v1";
/// Schema id of delegation links.
pub const DELEGATION_SCHEMA: &str = "chio.delegation/v1";
/// A full share, in basis points.
pub const FULL_SHARE_BPS: u32 = 10_000;
/// The tool name that grants every tool of a server.
pub const ANY_TOOL: &str = "*";

/// The constraint names the kernel evaluates; any other denies.
pub const KNOWN_CONSTRAINTS: &[&str] = &["path_prefix", "monetary", "tool_digests"];

/// Permission to call some tools of one server, under constraints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeGrant {
    /// The tool server.
    pub server: String,
    /// The tools granted (`*` for all of the server's tools).
    pub tools: Vec<String>,
    /// Constraints by name. `path_prefix` (a string) and `monetary` (see
    /// [`MonetaryLimit`]) are evaluated; any other name is kept as written and
    /// denies every call it would govern, since the kernel cannot evaluate it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub constraints: BTreeMap<String, Value>,
}

impl ScopeGrant {
    /// A grant without constraints.
    pub fn new(server: &str, tools: &[&str]) -> Self {
        ScopeGrant {
            server: server.to_string(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
            constraints: BTreeMap::new(),
        }
    }

    /// Adds a `path_prefix` constraint.
    pub fn with_path_prefix(mut self, prefix: &str) -> Self {
        self.constraints
            .insert("path_prefix".into(), Value::String(prefix.to_string()));
        self
    }

    /// Adds a constraint by name (known or not).
    pub fn with_constraint(mut self, name: &str, value: Value) -> Self {
        self.constraints.insert(name.to_string(), value);
        self
    }

    /// Whether the grant names `tool` (or every tool).
    pub fn covers_tool(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool || t == ANY_TOOL)
    }

    /// The `path_prefix` constraint, when present and a string.
    pub fn path_prefix(&self) -> Option<&str> {
        self.constraints.get("path_prefix").and_then(Value::as_str)
    }
}

/// A monetary constraint: `{ "argument": "amount", "currency": "USD",
/// "max_per_invocation": 500, "max_total": 2000 }`, amounts in whole minor
/// units. Held before dispatch against the total, committed after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonetaryLimit {
    /// The argument that carries the amount.
    pub argument: String,
    /// Currency code, part of the budget key.
    pub currency: String,
    /// Largest amount one call may carry.
    pub max_per_invocation: u64,
    /// Largest sum over all calls under this capability.
    pub max_total: u64,
}

/// The part of a capability that delegation attenuates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantState {
    /// Scope grants.
    pub scope: Vec<ScopeGrant>,
    /// Valid from (Unix milliseconds, inclusive).
    pub not_before_ms: u64,
    /// Valid through (Unix milliseconds, inclusive).
    pub expires_at_ms: u64,
    /// Invocation budget; `None` is unlimited.
    pub max_invocations: Option<u64>,
    /// Share of the parent's allowance, in basis points.
    pub share_bps: u32,
}

/// The issuer-signed body of a root capability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityBody {
    /// Always [`CAPABILITY_SCHEMA`].
    pub schema: String,
    /// Capability id (revocation and receipts name it).
    pub id: String,
    /// Issuer public key (hex); must be a trusted issuer.
    pub issuer: String,
    /// Subject public key (hex); the holder who must prove possession.
    pub subject: String,
    /// Scope grants.
    pub scope: Vec<ScopeGrant>,
    /// Valid from (Unix milliseconds, inclusive).
    pub not_before_ms: u64,
    /// Valid through (Unix milliseconds, inclusive).
    pub expires_at_ms: u64,
    /// Invocation budget; `None` is unlimited.
    pub max_invocations: Option<u64>,
    /// Share in basis points (10,000 = all).
    pub share_bps: u32,
}

impl CapabilityBody {
    /// The attenuable state of this body.
    pub fn state(&self) -> GrantState {
        GrantState {
            scope: self.scope.clone(),
            not_before_ms: self.not_before_ms,
            expires_at_ms: self.expires_at_ms,
            max_invocations: self.max_invocations,
            share_bps: self.share_bps,
        }
    }
}

/// One delegation step, signed by the delegator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelegationLink {
    /// Always [`DELEGATION_SCHEMA`].
    pub schema: String,
    /// The capability delegated from.
    pub parent_id: String,
    /// The capability this link creates.
    pub child_id: String,
    /// The parent's subject (hex), who signs the link.
    pub delegator: String,
    /// The child's subject (hex).
    pub delegatee: String,
    /// The child's complete state after attenuation.
    pub attenuation: GrantState,
    /// Virtual time of the delegation, in milliseconds.
    pub timestamp_ms: u64,
    /// Ed25519 signature (hex) by the delegator over the canonical link
    /// without this field.
    pub signature: String,
}

/// The signed part of a delegation link.
#[derive(Serialize)]
struct LinkBody<'a> {
    schema: &'a str,
    parent_id: &'a str,
    child_id: &'a str,
    delegator: &'a str,
    delegatee: &'a str,
    attenuation: &'a GrantState,
    timestamp_ms: u64,
}

impl DelegationLink {
    /// The canonical bytes the delegator signs.
    pub fn signing_bytes(&self) -> Result<Vec<u8>, KernelError> {
        Ok(to_canonical_vec(&LinkBody {
            schema: &self.schema,
            parent_id: &self.parent_id,
            child_id: &self.child_id,
            delegator: &self.delegator,
            delegatee: &self.delegatee,
            attenuation: &self.attenuation,
            timestamp_ms: self.timestamp_ms,
        })?)
    }

    /// Signs (or re-signs) the link with the delegator's key.
    pub fn sign(mut self, delegator_key: &SigningKey) -> Result<Self, KernelError> {
        self.signature = hex::encode(delegator_key.sign(&self.signing_bytes()?).to_bytes());
        Ok(self)
    }
}

/// What a delegator narrows; every field left `None` is inherited. Applied
/// literally by [`CapabilityToken::delegate`]: `tools`, `path_prefix` and
/// `monetary` replace the tools, prefix and monetary constraint of every
/// grant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attenuation {
    /// Tools the child may call.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Path prefix the child is confined to.
    #[serde(default)]
    pub path_prefix: Option<String>,
    /// Child validity start (Unix milliseconds).
    #[serde(default)]
    pub not_before_ms: Option<u64>,
    /// Child expiry (Unix milliseconds).
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
    /// Child invocation budget.
    #[serde(default)]
    pub max_invocations: Option<u64>,
    /// Child share, in basis points.
    #[serde(default)]
    pub share_bps: Option<u32>,
    /// Monetary constraint the child's every grant carries (replacing its
    /// parent's, which the kernel then requires it to stay within).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monetary: Option<MonetaryLimit>,
}

impl MonetaryLimit {
    /// The constraint's value as a [`ScopeGrant`] carries it under `monetary`.
    pub fn to_constraint(&self) -> Value {
        serde_json::json!({
            "argument": self.argument,
            "currency": self.currency,
            "max_per_invocation": self.max_per_invocation,
            "max_total": self.max_total,
        })
    }
}

impl Attenuation {
    /// The child state this attenuation makes from `parent`.
    pub fn apply(&self, parent: &GrantState) -> GrantState {
        let scope = parent
            .scope
            .iter()
            .map(|g| {
                let mut g = g.clone();
                if let Some(tools) = &self.tools {
                    g.tools = tools.clone();
                }
                if let Some(prefix) = &self.path_prefix {
                    g.constraints
                        .insert("path_prefix".into(), Value::String(prefix.clone()));
                }
                if let Some(monetary) = &self.monetary {
                    g.constraints
                        .insert("monetary".into(), monetary.to_constraint());
                }
                g
            })
            .collect();
        GrantState {
            scope,
            not_before_ms: self.not_before_ms.unwrap_or(parent.not_before_ms),
            expires_at_ms: self.expires_at_ms.unwrap_or(parent.expires_at_ms),
            max_invocations: self.max_invocations.or(parent.max_invocations),
            share_bps: self.share_bps.unwrap_or(parent.share_bps),
        }
    }
}

/// A capability as presented to the kernel (see the module doc for the
/// delegated form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityToken {
    /// Always [`CAPABILITY_SCHEMA`].
    pub schema: String,
    /// Id of this capability (the leaf's for a delegated one).
    pub id: String,
    /// Root issuer key (hex).
    pub issuer: String,
    /// Holder key (hex): who must sign requests.
    pub subject: String,
    /// Effective scope grants.
    pub scope: Vec<ScopeGrant>,
    /// Effective validity start (Unix milliseconds, inclusive).
    pub not_before_ms: u64,
    /// Effective expiry (Unix milliseconds, inclusive).
    pub expires_at_ms: u64,
    /// Effective invocation budget.
    pub max_invocations: Option<u64>,
    /// Effective share, in basis points.
    pub share_bps: u32,
    /// Links from the root to this capability; empty for a root.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delegation_chain: Vec<DelegationLink>,
    /// The root body as issued; present exactly when the chain is not empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<CapabilityBody>,
    /// Issuer signature (hex) over the canonical root body.
    pub signature: String,
}

impl CapabilityToken {
    /// Issues a root capability: signs `body` with the issuer key. The body's
    /// `issuer` must be that key.
    pub fn issue(body: CapabilityBody, issuer_key: &SigningKey) -> Result<Self, KernelError> {
        if body.issuer != public_key_hex(issuer_key) {
            return Err(KernelError::InvalidPublicKey {
                detail: "the body's issuer is not the signing key".to_string(),
            });
        }
        let signature = hex::encode(issuer_key.sign(&to_canonical_vec(&body)?).to_bytes());
        Ok(CapabilityToken {
            schema: body.schema,
            id: body.id,
            issuer: body.issuer,
            subject: body.subject,
            scope: body.scope,
            not_before_ms: body.not_before_ms,
            expires_at_ms: body.expires_at_ms,
            max_invocations: body.max_invocations,
            share_bps: body.share_bps,
            delegation_chain: Vec::new(),
            root: None,
            signature,
        })
    }

    /// The effective state (top-level fields).
    pub fn state(&self) -> GrantState {
        GrantState {
            scope: self.scope.clone(),
            not_before_ms: self.not_before_ms,
            expires_at_ms: self.expires_at_ms,
            max_invocations: self.max_invocations,
            share_bps: self.share_bps,
        }
    }

    /// The body the issuer signed: `root` for a delegated token, the
    /// top-level fields for a root token.
    pub fn root_body(&self) -> CapabilityBody {
        match &self.root {
            Some(root) => root.clone(),
            None => CapabilityBody {
                schema: self.schema.clone(),
                id: self.id.clone(),
                issuer: self.issuer.clone(),
                subject: self.subject.clone(),
                scope: self.scope.clone(),
                not_before_ms: self.not_before_ms,
                expires_at_ms: self.expires_at_ms,
                max_invocations: self.max_invocations,
                share_bps: self.share_bps,
            },
        }
    }

    /// The id of the root capability, which names the lineage.
    pub fn lineage_id(&self) -> &str {
        match &self.root {
            Some(root) => &root.id,
            None => &self.id,
        }
    }

    /// Delegates this capability to `delegatee` (hex key) as `child_id`,
    /// applying `attenuation` literally, signed by `delegator_key` (which
    /// must hold this capability for the kernel to accept the child).
    pub fn delegate(
        &self,
        delegator_key: &SigningKey,
        delegatee: &str,
        attenuation: &Attenuation,
        child_id: &str,
        now_ms: u64,
    ) -> Result<CapabilityToken, KernelError> {
        let state = attenuation.apply(&self.state());
        self.delegate_state(delegator_key, delegatee, state, child_id, now_ms)
    }

    /// Delegates with an explicit child state (for callers that build the
    /// child's scope themselves).
    pub fn delegate_state(
        &self,
        delegator_key: &SigningKey,
        delegatee: &str,
        state: GrantState,
        child_id: &str,
        now_ms: u64,
    ) -> Result<CapabilityToken, KernelError> {
        let link = DelegationLink {
            schema: DELEGATION_SCHEMA.to_string(),
            parent_id: self.id.clone(),
            child_id: child_id.to_string(),
            delegator: public_key_hex(delegator_key),
            delegatee: delegatee.to_string(),
            attenuation: state.clone(),
            timestamp_ms: now_ms,
            signature: String::new(),
        }
        .sign(delegator_key)?;
        let mut chain = self.delegation_chain.clone();
        chain.push(link);
        Ok(CapabilityToken {
            schema: CAPABILITY_SCHEMA.to_string(),
            id: child_id.to_string(),
            issuer: self.issuer.clone(),
            subject: delegatee.to_string(),
            scope: state.scope,
            not_before_ms: state.not_before_ms,
            expires_at_ms: state.expires_at_ms,
            max_invocations: state.max_invocations,
            share_bps: state.share_bps,
            delegation_chain: chain,
            root: Some(self.root_body()),
            signature: self.signature.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::derive_arena_key;

    fn root() -> (CapabilityToken, SigningKey) {
        let issuer = derive_arena_key(1, "authority", "root");
        let alice = derive_arena_key(1, "agent", "alice");
        let body = CapabilityBody {
            schema: CAPABILITY_SCHEMA.into(),
            id: "cap-1".into(),
            issuer: public_key_hex(&issuer),
            subject: public_key_hex(&alice),
            scope: vec![
                ScopeGrant::new("files", &["read_file", "write_file"]).with_path_prefix("/w/")
            ],
            not_before_ms: 100,
            expires_at_ms: 200,
            max_invocations: Some(10),
            share_bps: FULL_SHARE_BPS,
        };
        (CapabilityToken::issue(body, &issuer).unwrap(), alice)
    }

    // A delegated token carries the root as issued, the link, and the child's state on top.
    #[test]
    fn delegation_shape() {
        let (cap, alice) = root();
        let bob = public_key_hex(&derive_arena_key(1, "agent", "bob"));
        let att = Attenuation {
            tools: Some(vec!["read_file".into()]),
            path_prefix: Some("/w/shared/".into()),
            share_bps: Some(5000),
            ..Default::default()
        };
        let child = cap.delegate(&alice, &bob, &att, "cap-1.bob", 5).unwrap();
        assert_eq!(child.subject, bob);
        assert_eq!(child.id, "cap-1.bob");
        assert_eq!(child.root.as_ref().unwrap(), &cap.root_body());
        assert_eq!(child.signature, cap.signature);
        assert_eq!(child.delegation_chain.len(), 1);
        assert_eq!(child.scope[0].tools, vec!["read_file"]);
        assert_eq!(child.scope[0].path_prefix(), Some("/w/shared/"));
        assert_eq!(child.lineage_id(), "cap-1");
        // The JSON form round-trips exactly.
        let text = serde_json::to_string(&child).unwrap();
        assert_eq!(
            serde_json::from_str::<CapabilityToken>(&text).unwrap(),
            child
        );
    }

    // Issuing refuses a body whose issuer is not the signing key.
    #[test]
    fn issue_checks_issuer() {
        let (cap, alice) = root();
        assert!(CapabilityToken::issue(cap.root_body(), &alice).is_err());
    }
}
