//! How a kernel is set up: its identity and signing key, trusted issuers,
//! the guard pipeline, registered agents, tool and monetary budgets and
//! limits.
//!
//! Validation of what is configured (issuer and agent keys, guard
//! configurations) happens when the kernel is built (`Kernel::new`); the
//! pipeline that uses the configuration lives in the sibling modules.

use std::collections::BTreeMap;
use std::fmt;

use ed25519_dalek::SigningKey;

use crate::amount::MoneyLimit;
use crate::contract::{Redefinition, ToolCatalog};
use crate::guards::GuardSpec;
use crate::keys::public_key_hex;

/// Default limit on delegation depth.
pub const DEFAULT_MAX_DELEGATION_DEPTH: usize = 8;
/// Default signature-cache capacity.
pub const DEFAULT_SIGNATURE_CACHE: usize = 4096;

/// Who authorised a call, for the budgets that name an agent: the call's
/// principal, and every agent whose key delegated a link of the presented
/// chain (its root holder included). An agent's budget counts every call
/// the agent authorised, so handing its capability on never multiplies the
/// budget: the delegate, and a delegate of the delegate, spend from it.
#[derive(Debug, Clone, Copy)]
pub struct Authorisers<'a> {
    /// The registered agent whose key signed the call's proof.
    pub principal: &'a str,
    /// The key (hex) of every link's delegator, root holder first.
    pub delegators: &'a [String],
    /// Registered agents' keys by agent id, to match delegators to agents.
    pub agent_keys: &'a BTreeMap<String, String>,
}

impl Authorisers<'_> {
    /// Whether `agent` made the call or delegated a link of its chain: the
    /// one rule every budget naming an agent applies.
    pub fn include(&self, agent: &str) -> bool {
        agent == self.principal
            || self
                .agent_keys
                .get(agent)
                .is_some_and(|key| self.delegators.contains(key))
    }
}

/// An invocation budget for one agent on one tool (a scenario's
/// `[[budgets]]`): it counts every call the agent authorised
/// ([`Authorisers::include`]).
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

/// Whose calls a monetary budget counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetSubject {
    /// Every call this agent authorised: its own (its key signed the
    /// proof) and every call under a chain one of whose links it delegated
    /// ([`Authorisers::include`]).
    Agent(String),
    /// Every call presenting this root capability (a grant) or one
    /// delegated from it: the presented chain's root is this id.
    Capability(String),
}

/// Fixed windows of virtual time a monetary budget counts in: window `k`
/// holds the calls at `origin_ms + k * length_ms` up to, not including,
/// `origin_ms + (k + 1) * length_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetWindow {
    /// Where window 0 starts (Unix ms; a scenario's clock start).
    pub origin_ms: u64,
    /// How long each window is (ms, at least 1).
    pub length_ms: u64,
}

/// A monetary budget on one tool (a scenario's `[[budgets]]` with a
/// `limit`): the amounts of the calls it covers, summed exactly in the
/// limit's minor units, never exceed the limit (in each window, when it
/// has windows). Budgets sharing an id share one total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonetaryBudget {
    /// Names the budget in reasons and in its store key.
    pub id: String,
    /// Whose calls it counts.
    pub subject: BudgetSubject,
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The argument carrying each call's amount.
    pub amount_argument: String,
    /// The budget's currency.
    pub currency: String,
    /// An argument that must name `currency`, when set.
    pub currency_argument: Option<String>,
    /// The limit, its scale and its minor units.
    pub limit: MoneyLimit,
    /// The windows it counts in; `None` counts over the whole run.
    pub window: Option<BudgetWindow>,
}

impl MonetaryBudget {
    /// Whether the budget counts a call authorised by `by` to
    /// `server`/`tool` presenting `chain` (capability ids, root first).
    pub fn covers(&self, by: &Authorisers<'_>, chain: &[String], server: &str, tool: &str) -> bool {
        self.server == server
            && self.tool == tool
            && match &self.subject {
                BudgetSubject::Agent(agent) => by.include(agent),
                // The lineage's root, which its issuer named: a delegated
                // link's id is its delegator's choice, and a link of another
                // lineage named like this capability is not in its lineage.
                BudgetSubject::Capability(id) => chain.first() == Some(id),
            }
    }
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
    /// Monetary budgets, in declaration order.
    pub monetary_budgets: Vec<MonetaryBudget>,
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
    /// Definitions the catalog's servers put in force later in the run
    /// (a server changing a tool between two `tools/list` calls): a call is
    /// checked against the definition in force at its decision instant.
    pub redefinitions: Vec<Redefinition>,
    /// The planner / reader role of each agent that has one
    /// (`crate::provenance::AgentRole`); an agent not listed is ordinary.
    pub agent_roles: BTreeMap<String, crate::provenance::AgentRole>,
    /// What its server declares of a tool's output, by `(server, tool)`:
    /// the integrity of its parts (`[[servers.fields]]`; a released output
    /// feeds a run-time allowlist only from its trusted parts,
    /// `crate::allowlist`) and whether the server computes its answers
    /// from what it is sent (`crate::provenance::OutputRules`).
    pub output_fields: BTreeMap<(String, String), crate::provenance::OutputRules>,
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
            monetary_budgets: Vec::new(),
            max_request_age_ms: None,
            signature_cache_capacity: DEFAULT_SIGNATURE_CACHE,
            tools: None,
            redefinitions: Vec::new(),
            agent_roles: BTreeMap::new(),
            output_fields: BTreeMap::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    // Proves an agent authorised a call it made and every call under a chain one of whose links its key delegated (a delegate, a delegate's delegate), and no other: an unregistered agent, an agent outside the chain.
    #[test]
    fn an_agent_authorises_what_it_delegated() {
        let keys: BTreeMap<String, String> = [("clerk", "k-clerk"), ("helper", "k-helper")]
            .iter()
            .map(|(a, k)| (a.to_string(), k.to_string()))
            .collect();
        let own = Authorisers {
            principal: "clerk",
            delegators: &[],
            agent_keys: &keys,
        };
        assert!(own.include("clerk"));
        assert!(!own.include("helper"));
        let chain = ["k-clerk".to_string(), "k-helper".to_string()];
        let deputy = Authorisers {
            principal: "deputy",
            delegators: &chain,
            agent_keys: &keys,
        };
        assert!(deputy.include("deputy"));
        assert!(deputy.include("clerk"));
        assert!(deputy.include("helper"));
        assert!(!deputy.include("other"));
        let unregistered = Authorisers {
            principal: "deputy",
            delegators: &chain,
            agent_keys: &BTreeMap::new(),
        };
        assert!(!unregistered.include("clerk"));
    }
}
