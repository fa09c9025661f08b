//! The world a validated scenario declares, resolved into what nodes host.
//!
//! Every process of a run (the controller and each node) resolves the same
//! world from the same scenario bytes and fixture files with this one
//! function, so they agree on keys, issued grants, guard pipelines and
//! placement without any of it crossing the wire. Keys are arena keys derived
//! from `(rng_seed, role, id)` by `chio_kernel::keys::derive_arena_key`, and
//! grant tokens are issued by the arena authority at the clock's start, so
//! two resolutions give byte-identical tokens. This module decides nothing
//! at run time; the actors in `actors` act on what it resolves.

use std::collections::{BTreeMap, BTreeSet};

use chio_arena::Scenario;
use chio_kernel::amount::MoneyLimit;
use chio_kernel::contract::Redefinition;
use chio_kernel::guards::GuardSpec;
use chio_kernel::kernel::{BudgetSubject, BudgetWindow, KernelConfig, MonetaryBudget, ToolBudget};
use chio_kernel::keys::{derive_arena_key, public_key_hex};
use chio_kernel::provenance::{AgentRole, OutputRules};
use chio_kernel::token::CapabilityToken;
use ed25519_dalek::SigningKey;

use crate::error::NodeError;

mod grants;
mod servers;
use crate::tools::{IntegrityPolicy, ToolServerConfig};
use grants::issue_grants;
use servers::resolve_servers;

/// The role name of the arena authority's key.
pub const AUTHORITY_ROLE: &str = "authority";
/// The role name of kernel keys.
pub const KERNEL_ROLE: &str = "kernel";
/// The role name of agent keys.
pub const AGENT_ROLE: &str = "agent";
/// The id under which the single arena authority derives its key.
pub const AUTHORITY_ID: &str = "arena";

/// The files a scenario's workspace servers are seeded with, by server id
/// (the arena's type: it travels with the scenario bytes to every node, so a
/// node needs no shared filesystem).
pub use chio_arena::fixtures::FixtureSet;
pub use servers::answer_labeller;

/// A kernel as the world places it.
#[derive(Debug, Clone)]
pub struct KernelPlan {
    /// Kernel id.
    pub id: String,
    /// Logical node hosting it.
    pub node: String,
    /// Its complete configuration, guards in pipeline order.
    pub config: KernelConfig,
}

/// A tool server as the world places it.
#[derive(Debug, Clone)]
pub struct ServerPlan {
    /// Server id.
    pub id: String,
    /// The kernel that serves it.
    pub kernel: String,
    /// Logical node hosting it (its kernel's node).
    pub node: String,
    /// The simulated server's configuration.
    pub config: ToolServerConfig,
    /// How far the server's results can be trusted.
    pub integrity: IntegrityPolicy,
    /// What the server declares of its tools' outputs, by tool: the labels
    /// it gives their parts (`[[servers.fields]]`), which a value taken from
    /// an output by reference carries, and whether it computes its answers
    /// from what it is sent.
    pub outputs: BTreeMap<String, OutputRules>,
}

impl ServerPlan {
    /// The id of the server whose store keeps what this one is sent: the
    /// server it shares state with (`shares_state_with`), else its own.
    /// Two servers over one store are one state to the run's ordering.
    pub fn store(&self) -> &str {
        self.outputs
            .values()
            .find_map(|rules| rules.kept_with.as_deref())
            .unwrap_or(&self.id)
    }
}

/// An agent as the world places it.
#[derive(Debug, Clone)]
pub struct AgentPlan {
    /// Agent id.
    pub id: String,
    /// The kernel it enters through.
    pub kernel: String,
    /// Logical node hosting it (its kernel's node).
    pub node: String,
    /// Its arena key, which grants name as subject.
    pub key: SigningKey,
    /// Its role in the planner / reader split.
    pub role: AgentRole,
}

/// The resolved world of one scenario.
#[derive(Debug, Clone)]
pub struct World {
    /// Scenario id, for logs and errors.
    pub scenario_id: String,
    /// The seed every key derives from.
    pub rng_seed: u64,
    /// Unix milliseconds of the virtual clock's start.
    pub start_ms: u64,
    /// The arena authority that issues grants.
    pub authority: SigningKey,
    /// Logical nodes in declaration order.
    pub nodes: Vec<String>,
    /// Kernels by id.
    pub kernels: BTreeMap<String, KernelPlan>,
    /// Tool servers by id.
    pub servers: BTreeMap<String, ServerPlan>,
    /// Agents by id.
    pub agents: BTreeMap<String, AgentPlan>,
    /// Grants issued at setup, by grant id, with the agent holding each.
    pub grants: BTreeMap<String, (String, CapabilityToken)>,
    /// The sealed files call arguments read, by path (empty where the
    /// scenario was not read from its folder, as on a node: only the
    /// controller resolves values).
    pub sealed: chio_arena::scenario::sealed::SealedSet,
}

impl World {
    /// Resolves the world of `scenario`, seeding workspaces from `fixtures`:
    /// agents and their keys, kernels with their guards, tool servers, then
    /// the grants the authority issues at the clock's start.
    pub fn resolve(scenario: &Scenario, fixtures: &FixtureSet) -> Result<World, NodeError> {
        let redefinitions = scenario
            .redefinitions()
            .map_err(|e| NodeError::Scenario(e.to_string()))?;
        Self::resolve_with(scenario, fixtures, &redefinitions)
    }

    /// The parties of `scenario`'s world: the authority, the agents and
    /// their keys, the kernels and the grants the authority issues, without
    /// its tool servers, which may answer with sealed values only a run
    /// reads. What a caller needs to rebuild a recorded call's envelope.
    pub fn resolve_parties(scenario: &Scenario) -> Result<World, NodeError> {
        let redefinitions = scenario
            .redefinitions()
            .map_err(|e| NodeError::Scenario(e.to_string()))?;
        Self::resolve_inner(scenario, None, &redefinitions)
    }

    /// [`World::resolve`] with the run's tool redefinitions given apart,
    /// for a node sent the world without its schedule.
    pub fn resolve_with(
        scenario: &Scenario,
        fixtures: &FixtureSet,
        redefinitions: &[Redefinition],
    ) -> Result<World, NodeError> {
        Self::resolve_inner(scenario, Some(fixtures), redefinitions)
    }

    /// The world, its tool servers seeded from `fixtures` when given.
    fn resolve_inner(
        scenario: &Scenario,
        fixtures: Option<&FixtureSet>,
        redefinitions: &[Redefinition],
    ) -> Result<World, NodeError> {
        scenario
            .require_world()
            .map_err(|e| NodeError::Scenario(e.to_string()))?;
        let file = scenario.file();
        let seed = file.rng_seed;
        let start_ms = scenario.clock().now_ms();
        let authority = derive_arena_key(seed, AUTHORITY_ROLE, AUTHORITY_ID);
        let authority_hex = public_key_hex(&authority);

        let specs: BTreeMap<String, GuardSpec> = scenario
            .guard_specs()
            .map_err(|e| NodeError::Scenario(e.to_string()))?
            .into_iter()
            .map(|s| (s.id.clone(), s))
            .collect();

        let (agents, agent_keys) = resolve_agents(scenario)?;
        let kernels =
            resolve_kernels(scenario, &specs, &authority_hex, &agent_keys, redefinitions)?;
        let servers = match fixtures {
            Some(fixtures) => resolve_servers(scenario, fixtures)?,
            None => BTreeMap::new(),
        };
        let grants = issue_grants(scenario, start_ms, &authority, &authority_hex, &agent_keys)?;

        Ok(World {
            scenario_id: file.id.clone(),
            rng_seed: seed,
            start_ms,
            authority,
            nodes: file.nodes.iter().map(|n| n.id.clone()).collect(),
            kernels,
            servers,
            agents,
            grants,
            sealed: scenario.sealed().clone(),
        })
    }

    /// The logical node hosting `agent`.
    pub fn agent_node(&self, agent: &str) -> Option<&str> {
        self.agents.get(agent).map(|a| a.node.as_str())
    }

    /// The kernel serving `server`.
    pub fn server_kernel(&self, server: &str) -> Option<&str> {
        self.servers.get(server).map(|s| s.kernel.as_str())
    }

    /// The logical node hosting `kernel`.
    pub fn kernel_node(&self, kernel: &str) -> Option<&str> {
        self.kernels.get(kernel).map(|k| k.node.as_str())
    }

    /// Each kernel's logical node, by kernel id: what a link between nodes
    /// needs to know of the world to route a call.
    pub fn kernel_nodes(&self) -> BTreeMap<String, String> {
        self.kernels
            .values()
            .map(|k| (k.id.clone(), k.node.clone()))
            .collect()
    }

    /// Each agent's logical node, by agent id.
    pub fn agent_nodes(&self) -> BTreeMap<String, String> {
        self.agents
            .values()
            .map(|a| (a.id.clone(), a.node.clone()))
            .collect()
    }

    /// The public keys of the run, printed as arena keys: by role, then id.
    pub fn public_keys(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut keys = BTreeMap::new();
        keys.insert(
            AUTHORITY_ROLE.to_string(),
            BTreeMap::from([(AUTHORITY_ID.to_string(), public_key_hex(&self.authority))]),
        );
        keys.insert(
            KERNEL_ROLE.to_string(),
            self.kernels
                .values()
                .map(|k| (k.id.clone(), public_key_hex(&k.config.signing_key)))
                .collect(),
        );
        keys.insert(
            AGENT_ROLE.to_string(),
            self.agents
                .values()
                .map(|a| (a.id.clone(), public_key_hex(&a.key)))
                .collect(),
        );
        keys
    }

    /// The ids of the kernels, servers and agents placed on `node`.
    pub fn placed_on(&self, node: &str) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
        (
            self.kernels
                .values()
                .filter(|k| k.node == node)
                .map(|k| k.id.clone())
                .collect(),
            self.servers
                .values()
                .filter(|s| s.node == node)
                .map(|s| s.id.clone())
                .collect(),
            self.agents
                .values()
                .filter(|a| a.node == node)
                .map(|a| a.id.clone())
                .collect(),
        )
    }
}

/// Agent id to the agent's public key (hex), as kernels and grants name it.
type AgentKeys = BTreeMap<String, String>;

/// Every agent placed on its kernel's node, and every agent's public key
/// by agent id.
/// The agents a world declares quarantined or planner, by id.
fn agent_roles(file: &chio_arena::model::ScenarioFile) -> BTreeMap<String, AgentRole> {
    file.agents
        .iter()
        .filter_map(|agent| match (agent.quarantined, agent.planner) {
            (Some(true), _) => Some((agent.id.clone(), AgentRole::Quarantined)),
            (_, Some(true)) => Some((agent.id.clone(), AgentRole::Planner)),
            _ => None,
        })
        .collect()
}

impl World {
    /// The role of `agent` (ordinary for an unknown one).
    pub fn role(&self, agent: &str) -> AgentRole {
        self.agents.get(agent).map(|a| a.role).unwrap_or_default()
    }
}

fn resolve_agents(
    scenario: &Scenario,
) -> Result<(BTreeMap<String, AgentPlan>, AgentKeys), NodeError> {
    let (file, seed) = (scenario.file(), scenario.file().rng_seed);
    let mut agents = BTreeMap::new();
    let mut agent_keys = BTreeMap::new();
    for agent in &file.agents {
        let kernel = agent
            .kernel
            .clone()
            .ok_or_else(|| NodeError::Scenario(format!("agent {} names no kernel", agent.id)))?;
        let node = kernel_node(scenario, &kernel)?;
        let key = derive_arena_key(seed, AGENT_ROLE, &agent.id);
        agent_keys.insert(agent.id.clone(), public_key_hex(&key));
        let role = match (agent.quarantined, agent.planner) {
            (Some(true), _) => AgentRole::Quarantined,
            (_, Some(true)) => AgentRole::Planner,
            _ => AgentRole::Ordinary,
        };
        agents.insert(
            agent.id.clone(),
            AgentPlan {
                id: agent.id.clone(),
                kernel,
                node,
                key,
                role,
            },
        );
    }

    Ok((agents, agent_keys))
}

/// Every kernel with its node, its key, the authority it trusts, the agent
/// keys and budgets it knows and its guard pipeline.
/// The tools of every server kernel `kernel` serves, from each server's
/// kind: the catalog its admission checks every call against.
fn catalog_of(
    file: &chio_arena::model::ScenarioFile,
    kernel: &str,
) -> Result<chio_kernel::contract::ToolCatalog, NodeError> {
    chio_arena::scenario::tools::catalog_of(file, kernel)
        .map_err(|server| NodeError::Scenario(format!("server {server} has no known kind")))
}

/// The scenario's monetary budgets (`[[budgets]]` with a `limit`), their
/// windows counted from the clock start.
fn monetary_budgets(scenario: &Scenario) -> Result<Vec<MonetaryBudget>, NodeError> {
    monetary_budgets_of(&scenario.file().budgets, scenario.clock().now_ms())
}

/// The kernel's monetary budgets of the `[[budgets]]` entries `declared`
/// that have a `limit`, their windows counted from `origin_ms`: a run's
/// from its clock start, the MCP edge's from the Unix epoch.
pub fn monetary_budgets_of(
    declared: &[chio_arena::model::BudgetDecl],
    origin_ms: u64,
) -> Result<Vec<MonetaryBudget>, NodeError> {
    let start_ms = origin_ms;
    let invalid = |id: &str, what: &str| {
        NodeError::Scenario(format!("monetary budget {id} has no valid {what}"))
    };
    let mut budgets = Vec::new();
    for b in declared.iter().filter(|b| b.is_monetary()) {
        let id = b.money_id();
        let subject = match (&b.agent, &b.capability) {
            (Some(agent), None) => BudgetSubject::Agent(agent.clone()),
            (None, Some(capability)) => BudgetSubject::Capability(capability.clone()),
            _ => return Err(invalid(&id, "agent or capability")),
        };
        let limit = MoneyLimit::parse(b.limit.as_deref().unwrap_or_default())
            .map_err(|_| invalid(&id, "limit"))?;
        budgets.push(MonetaryBudget {
            subject,
            server: b.server.clone(),
            tool: b.tool.clone(),
            amount_argument: b.amount.clone().ok_or_else(|| invalid(&id, "amount"))?,
            currency: b.currency.clone().ok_or_else(|| invalid(&id, "currency"))?,
            currency_argument: b.currency_argument.clone(),
            limit,
            window: b.window_ms.map(|length_ms| BudgetWindow {
                origin_ms: start_ms,
                length_ms,
            }),
            id,
        });
    }
    Ok(budgets)
}

fn resolve_kernels(
    scenario: &Scenario,
    specs: &BTreeMap<String, GuardSpec>,
    authority_hex: &str,
    agent_keys: &AgentKeys,
    redefinitions: &[Redefinition],
) -> Result<BTreeMap<String, KernelPlan>, NodeError> {
    let (file, seed) = (scenario.file(), scenario.file().rng_seed);
    let tool_budgets: Vec<ToolBudget> = file
        .budgets
        .iter()
        .filter_map(|b| {
            Some(ToolBudget {
                agent: b.agent.clone()?,
                server: b.server.clone(),
                tool: b.tool.clone(),
                max_invocations: b.max_invocations?,
            })
        })
        .collect();
    let monetary_budgets = monetary_budgets(scenario)?;
    let mut kernels = BTreeMap::new();
    for kernel in &file.kernels {
        let mut config =
            KernelConfig::new(&kernel.id, derive_arena_key(seed, KERNEL_ROLE, &kernel.id));
        config.trusted_issuers = vec![authority_hex.to_string()];
        config.agent_keys = agent_keys.clone();
        config.agent_roles = agent_roles(file);
        config.output_fields = file
            .servers
            .iter()
            .filter(|s| s.kernel == kernel.id)
            .flat_map(|s| {
                chio_arena::scenario::tools::output_rules(s)
                    .into_iter()
                    .map(|(tool, rules)| ((s.id.clone(), tool), rules))
            })
            .collect();
        config.tool_budgets = tool_budgets.clone();
        config.max_request_age_ms = kernel.max_request_age_ms;
        config.monetary_budgets = monetary_budgets.clone();
        config.tools = Some(catalog_of(file, &kernel.id)?);
        config.redefinitions = redefinitions
            .iter()
            .filter(|r| {
                file.servers
                    .iter()
                    .any(|s| s.id == r.server && s.kernel == kernel.id)
            })
            .cloned()
            .collect();
        config.guards = kernel
            .guards
            .iter()
            .map(|id| {
                specs.get(id).cloned().ok_or_else(|| {
                    NodeError::Scenario(format!("kernel {} names unknown guard {id}", kernel.id))
                })
            })
            .collect::<Result<_, _>>()?;
        kernels.insert(
            kernel.id.clone(),
            KernelPlan {
                id: kernel.id.clone(),
                node: kernel.node.clone(),
                config,
            },
        );
    }

    Ok(kernels)
}

fn kernel_node(scenario: &Scenario, kernel: &str) -> Result<String, NodeError> {
    scenario
        .file()
        .kernels
        .iter()
        .find(|k| k.id == kernel)
        .map(|k| k.node.clone())
        .ok_or_else(|| NodeError::Scenario(format!("unknown kernel {kernel}")))
}
