//! How a kernel is set up: its identity and signing key, trusted issuers,
//! the guard pipeline, registered agents, tool budgets and limits.
//!
//! Validation of what is configured (issuer and agent keys, guard
//! configurations) happens when the kernel is built (`Kernel::new`); the
//! pipeline that uses the configuration lives in the sibling modules.

use std::collections::BTreeMap;
use std::fmt;

use ed25519_dalek::SigningKey;

use crate::contract::ToolCatalog;
use crate::guards::GuardSpec;
use crate::keys::public_key_hex;

/// Default limit on delegation depth.
pub const DEFAULT_MAX_DELEGATION_DEPTH: usize = 8;
/// Default signature-cache capacity.
pub const DEFAULT_SIGNATURE_CACHE: usize = 4096;

/// An invocation budget for one agent on one tool (a scenario's `[[budgets]]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolBudget {
    /// The agent.
    pub agent: String,
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// How many calls it may make.
    pub max_invocations: u64,
}

/// How a kernel is set up.
#[derive(Clone)]
pub struct KernelConfig {
    /// Names the kernel in receipts.
    pub kernel_id: String,
    /// Signs receipts.
    pub signing_key: SigningKey,
    /// Issuer keys (hex) whose capabilities the kernel accepts.
    pub trusted_issuers: Vec<String>,
    /// The guard pipeline, in order.
    pub guards: Vec<GuardSpec>,
    /// Longest delegation chain accepted.
    pub max_delegation_depth: usize,
    /// Known agents' public keys (hex) by agent id; when an agent is listed,
    /// its requests must present a capability whose subject is that key.
    pub agent_keys: BTreeMap<String, String>,
    /// Per-agent tool budgets.
    pub tool_budgets: Vec<ToolBudget>,
    /// Oldest request accepted, in milliseconds of virtual time (`None`: any age).
    pub max_request_age_ms: Option<u64>,
    /// Capacity of the verified-signature cache (0 disables it).
    pub signature_cache_capacity: usize,
    /// The tools of every server the kernel serves. With a catalog, a
    /// call to another server, to an undeclared tool or with arguments its
    /// schema refuses is denied at the scope stage; `None` (a kernel
    /// built outside a world, such as a portable evaluation) checks no
    /// contract.
    pub tools: Option<ToolCatalog>,
    /// The planner / reader role of each agent that has one
    /// (`crate::provenance::AgentRole`); an agent not listed is ordinary.
    pub agent_roles: BTreeMap<String, crate::provenance::AgentRole>,
}

impl KernelConfig {
    /// A configuration with defaults: no trusted issuer, no guards, depth
    /// limit 8, no request-age limit, signature cache of 4096.
    pub fn new(kernel_id: &str, signing_key: SigningKey) -> Self {
        KernelConfig {
            kernel_id: kernel_id.to_string(),
            signing_key,
            trusted_issuers: Vec::new(),
            guards: Vec::new(),
            max_delegation_depth: DEFAULT_MAX_DELEGATION_DEPTH,
            agent_keys: BTreeMap::new(),
            tool_budgets: Vec::new(),
            max_request_age_ms: None,
            signature_cache_capacity: DEFAULT_SIGNATURE_CACHE,
            tools: None,
            agent_roles: BTreeMap::new(),
        }
    }
}

impl fmt::Debug for KernelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelConfig")
            .field("kernel_id", &self.kernel_id)
            .field("kernel_key", &public_key_hex(&self.signing_key))
            .field("trusted_issuers", &self.trusted_issuers)
            .field("guards", &self.guards)
            .field("max_delegation_depth", &self.max_delegation_depth)
            .finish_non_exhaustive()
    }
}
