//! A small authority world for the kernel's integration tests: derived
//! keys, root grants, kernels with in-memory stores, signed requests, and a
//! deterministic tool dispatcher.
#![allow(dead_code)] // the benches include this file by path and use part of it

use std::collections::BTreeMap;

use chio_kernel::batch::{run_ops, BatchAnswers, BatchStore, StoreOp};
use chio_kernel::guards::{GuardKind, GuardMode, GuardSpec};
use chio_kernel::keys::{derive_arena_key, public_key_hex};
use chio_kernel::request::RequestProof;
use chio_kernel::stores::{InMemoryAuthority, KernelStores};
use chio_kernel::token::{CapabilityBody, ScopeGrant, CAPABILITY_SCHEMA, FULL_SHARE_BPS};
use chio_kernel::{
    AdmissionTicket, CapabilityToken, Decision, Kernel, KernelConfig, StoreError, StoreName,
    ToolCallRequest, ToolOutput,
};
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};

/// Seed of every key in these tests.
pub const SEED: u64 = 42;
/// The tests' "now", in Unix seconds.
pub const NOW_SECS: u64 = 1_800_000_000;
/// The tests' "now", in milliseconds.
pub const NOW_MS: u64 = NOW_SECS * 1000;

pub fn agent_key(name: &str) -> SigningKey {
    derive_arena_key(SEED, "agent", name)
}

pub fn agent_pk(name: &str) -> String {
    public_key_hex(&agent_key(name))
}

pub fn authority() -> SigningKey {
    derive_arena_key(SEED, "authority", "root")
}

pub fn authority_pk() -> String {
    public_key_hex(&authority())
}

/// Issues a root capability valid one hour either side of now.
pub fn issue(id: &str, agent: &str, scope: Vec<ScopeGrant>) -> CapabilityToken {
    issue_with(id, agent, scope, &authority(), Some(100), FULL_SHARE_BPS)
}

/// Delegation with no attenuation at [`NOW_MS`], from one test agent to another.
pub trait HandDown {
    /// `self` handed by `from` to `to` as the link `id`.
    fn hand_down_to(&self, from: &str, to: &str, id: &str) -> CapabilityToken;
}

impl HandDown for CapabilityToken {
    fn hand_down_to(&self, from: &str, to: &str, id: &str) -> CapabilityToken {
        self.delegate(
            &agent_key(from),
            &agent_pk(to),
            &chio_kernel::token::Attenuation::default(),
            id,
            NOW_MS,
        )
        .unwrap()
    }
}

pub fn issue_with(
    id: &str,
    agent: &str,
    scope: Vec<ScopeGrant>,
    issuer: &SigningKey,
    max_invocations: Option<u64>,
    share_bps: u32,
) -> CapabilityToken {
    CapabilityToken::issue(
        CapabilityBody {
            schema: CAPABILITY_SCHEMA.into(),
            id: id.into(),
            issuer: public_key_hex(issuer),
            subject: agent_pk(agent),
            scope,
            not_before_ms: (NOW_SECS - 3600) * 1000,
            expires_at_ms: (NOW_SECS + 3600) * 1000,
            max_invocations,
            share_bps,
        },
        issuer,
    )
    .expect("test capability issues")
}

pub fn files_scope() -> Vec<ScopeGrant> {
    vec![
        ScopeGrant::new("files", &["read_file", "write_file", "list_dir"])
            .with_path_prefix("/workspace/"),
    ]
}

pub fn guard(id: &str, kind: GuardKind, config: Value) -> GuardSpec {
    GuardSpec {
        id: id.into(),
        kind,
        mode: GuardMode::Enforce,
        config,
    }
}

pub fn kernel_config(guards: Vec<GuardSpec>) -> KernelConfig {
    let mut config = KernelConfig::new("kernel-a", derive_arena_key(SEED, "kernel", "kernel-a"));
    config.trusted_issuers = vec![authority_pk()];
    config.guards = guards;
    config.max_delegation_depth = 3;
    config.agent_keys = REGISTERED_AGENTS
        .iter()
        .map(|name| (name.to_string(), agent_pk(name)))
        .collect();
    config
}

/// The agents a test kernel knows: the principal of a call is the one
/// among them whose key signed its proof. Any other name is refused.
pub const REGISTERED_AGENTS: &[&str] = &["alice", "bob", "carol", "dave", "erin", "mallory"];

pub fn kernel(guards: Vec<GuardSpec>) -> Kernel {
    Kernel::new(kernel_config(guards), KernelStores::in_memory()).expect("test kernel builds")
}

/// A request signed by `signer` presenting `cap` as agent `agent`.
pub fn request_by(
    signer: &str,
    agent: &str,
    cap: &CapabilityToken,
    server: &str,
    tool: &str,
    arguments: Value,
    request_id: &str,
) -> ToolCallRequest {
    ToolCallRequest {
        request_id: request_id.into(),
        capability: cap.clone(),
        server: server.into(),
        tool: tool.into(),
        arguments,
        agent_id: agent.into(),
        session_id: format!("session-{agent}"),
        issued_at_ms: NOW_MS,
        proof: RequestProof::default(),
        sealed: Vec::new(),
        argument_sources: Vec::new(),
    }
    .sign(&agent_key(signer))
    .expect("test request signs")
}

pub fn request(
    agent: &str,
    cap: &CapabilityToken,
    server: &str,
    tool: &str,
    arguments: Value,
    request_id: &str,
) -> ToolCallRequest {
    request_by(agent, agent, cap, server, tool, arguments, request_id)
}

/// What `kernel` decides at [`NOW_MS`] for `agent` calling `tool` on
/// `server` with `cap`, the call dispatched to the tool world of `files`.
pub fn decide(
    kernel: &mut Kernel,
    files: &BTreeMap<String, (String, Option<String>)>,
    agent: &str,
    cap: &CapabilityToken,
    (server, tool): (&str, &str),
    arguments: Value,
    request_id: &str,
) -> Decision {
    let call = request(agent, cap, server, tool, arguments, request_id);
    kernel.evaluate(&call, NOW_MS, &mut dispatch(files))
}

/// A deterministic tool world: files under /workspace with labels, a
/// publish sink and a test runner.
pub fn dispatch(
    files: &BTreeMap<String, (String, Option<String>)>,
) -> impl FnMut(&AdmissionTicket) -> Result<ToolOutput, String> + '_ {
    move |admitted: &AdmissionTicket| {
        let req = admitted.request();
        match req.tool.as_str() {
            "read_file" => {
                let path = req.arguments["path"].as_str().unwrap_or_default();
                match files.get(path) {
                    // A file's label may be an integrity label (`integrity:untrusted`).
                    Some((content, label)) => Ok(ToolOutput {
                        content: json!({ "content": content }),
                        label: label.as_deref().and_then(chio_kernel::label::Label::parse),
                        integrity: label
                            .clone()
                            .filter(|l| chio_kernel::label::is_integrity_label(l)),
                        performed: true,
                        received: true,
                    }),
                    None => Err(format!("no such file {path}")),
                }
            }
            _ => Ok(ToolOutput {
                content: json!({ "ok": true }),
                label: None,
                integrity: None,
                performed: true,
                received: true,
            }),
        }
    }
}

pub fn standard_files() -> BTreeMap<String, (String, Option<String>)> {
    let mut files = BTreeMap::new();
    for path in [
        "/workspace/notes.txt",
        "/workspace/shared/plan.md",
        "/workspace/a.txt",
    ] {
        files.insert(path.to_string(), (format!("contents of {path}"), None));
    }
    files
}

/// Authority state whose operations on one store fail as an unreachable
/// store fails (`cause` names why), every other operation answered by
/// in-memory state: a kernel over it meets that store's outage.
pub struct FailingStore {
    /// The store whose operations fail.
    pub store: StoreName,
    /// The cause the failure names.
    pub cause: &'static str,
    /// Whether only the store's commits of holds fail (its holds and
    /// releases answered): a store that breaks inside a closing batch.
    pub commits_only: bool,
    /// Everything else.
    pub inner: InMemoryAuthority,
}

impl FailingStore {
    /// Fails `store`'s operations with `cause`, over `inner`.
    pub fn new(store: StoreName, cause: &'static str, inner: InMemoryAuthority) -> Self {
        Self {
            store,
            cause,
            commits_only: false,
            inner,
        }
    }

    /// Fails only the commits of budget holds with `cause`, over `inner`.
    pub fn commits(cause: &'static str, inner: InMemoryAuthority) -> Self {
        Self {
            commits_only: true,
            ..Self::new(StoreName::Budget, cause, inner)
        }
    }

    fn fails(&self, op: &StoreOp) -> bool {
        op.store() == self.store && (!self.commits_only || matches!(op, StoreOp::Commit { .. }))
    }
}

impl BatchStore for FailingStore {
    fn run(&mut self, ops: Vec<StoreOp>) -> BatchAnswers {
        run_ops(&ops, |op| {
            if self.fails(op) {
                return Err(StoreError::unavailable(self.store, self.cause));
            }
            match self.inner.run(vec![op.clone()]).pop() {
                Some(answer) => answer,
                None => Err(StoreError::unavailable(op.store(), "no answer")),
            }
        })
    }
}
