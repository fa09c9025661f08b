//! The scenario file as written: one serde struct per TOML table.
//!
//! These types mirror `chio.arena.scenario/v1` key for key, every table
//! closed with `deny_unknown_fields`, so an unknown key is refused where
//! serde meets it. Words from closed sets (scheduler, action, verdict, kind,
//! mode) stay strings here: the validator in [`crate::scenario`] turns them
//! into typed values with an error that names the field. Free-form tables
//! (`arguments`, `[guards.config]`, `[adversaries.params]`) stay TOML values.
//! The key reference is `docs/scenario-schema.md`.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The whole scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Must be `chio.arena.scenario/v1`; lets the format evolve without guessing.
    pub schema_version: String,
    /// The scenario's name in outputs and bundle paths.
    pub id: String,
    /// A human title printed next to the id.
    pub title: String,
    /// The seed of every random stream of a run.
    pub rng_seed: u64,
    /// The virtual instant the run starts at (strict RFC 3339 UTC).
    pub virtual_clock_start: String,
    /// The determinism contract, restated so it is visible in one place.
    pub determinism: DeterminismSection,
    /// Logical node names that kernels are placed on.
    #[serde(default)]
    pub nodes: Vec<NodeDecl>,
    /// The kernels of the world and their guard pipelines.
    #[serde(default)]
    pub kernels: Vec<KernelDecl>,
    /// The simulated tool servers and the kernel that serves each.
    #[serde(default)]
    pub servers: Vec<ServerDecl>,
    /// The agents that act in the scenario.
    #[serde(default)]
    pub agents: Vec<AgentDecl>,
    /// Capabilities the authority issues at setup.
    #[serde(default)]
    pub grants: Vec<GrantDecl>,
    /// Guards available to kernel pipelines.
    #[serde(default)]
    pub guards: Vec<GuardDecl>,
    /// Invocation and monetary budgets per agent (or grant), server and tool.
    #[serde(default)]
    pub budgets: Vec<BudgetDecl>,
    /// The scheduled actions with the verdicts they expect.
    #[serde(default)]
    pub steps: Vec<StepHead>,
    /// Adversary populations that mutate the scenario.
    #[serde(default)]
    pub adversaries: Vec<AdversaryDecl>,
}

/// `[determinism]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeterminismSection {
    /// Optional copy of the top-level seed; must agree when present.
    pub rng_seed: Option<u64>,
    /// Optional copy of the top-level clock start; must agree when present.
    pub virtual_clock_start: Option<String>,
    /// `single-agent-v1` or `deterministic-multi-v1`.
    pub scheduler: String,
    /// Only `C`: outputs must not depend on the host's locale.
    pub locale: String,
    /// Milliseconds between default step instants; 1 when absent.
    pub tick_ms: Option<u64>,
}

/// `[[nodes]]`: a logical node; its address lives in a topology file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeDecl {
    /// The node's logical name.
    pub id: String,
}

/// `[[kernels]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelDecl {
    /// The kernel's id.
    pub id: String,
    /// The logical node hosting it.
    pub node: String,
    /// Guard ids in pipeline order.
    #[serde(default)]
    pub guards: Vec<String>,
    /// The oldest request the kernel admits, in virtual milliseconds
    /// between the request's issue (its step's instant) and its decision
    /// (its arrival, later over a delayed link); a request from the future
    /// is bounded alike. No bound when absent.
    #[serde(default)]
    pub max_request_age_ms: Option<u64>,
}

/// `[[servers]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerDecl {
    /// The server's id, named by steps, grants and budgets.
    pub id: String,
    /// The kernel that serves it.
    pub kernel: String,
    /// `workspace`, `publish`, `test-runner`, `http`, `bank`, `recorded`
    /// or `mcp`.
    pub kind: String,
    /// Workspace only: the mount point of the simulated filesystem.
    pub root: Option<String>,
    /// Workspace only: folder next to the scenario seeded under `root`.
    pub fixtures: Option<String>,
    /// Workspace and recorded only: glob to information-flow label of what
    /// a call whose `path` argument matches returns.
    pub labels: Option<BTreeMap<String, String>>,
    /// Test-runner only: tests that fail when requested.
    pub failing: Option<Vec<String>>,
    /// How far what the server returns can be trusted (`trusted`, the
    /// default, or `untrusted`): an untrusted result lowers the integrity
    /// of its reader.
    pub integrity: Option<String>,
    /// Workspace and recorded only: glob to integrity of a call whose
    /// `path` argument matches, overriding `integrity` for the paths it
    /// matches.
    pub integrity_globs: Option<BTreeMap<String, String>>,
    /// Recorded only: the tools the server declares, as contracts.
    pub tools: Option<Vec<ToolDecl>>,
    /// Recorded only: the answers the server gives, in order.
    pub answers: Option<Vec<AnswerDecl>>,
    /// Recorded only: labels per part of a tool's output, for the values
    /// later calls take from it by reference.
    pub fields: Option<Vec<FieldDecl>>,
    /// Mcp only: the command that starts the server over stdio, program
    /// first (`chio arena record` runs it; nothing else does).
    pub command: Option<Vec<String>>,
    /// Mcp only: environment variables the server is started with, beside
    /// the recording command's own.
    pub env: Option<BTreeMap<String, String>>,
    /// Mcp only: the folder the server starts in, relative to the
    /// scenario's folder (default the scenario's folder).
    pub cwd: Option<String>,
    /// Mcp only: milliseconds of wall time the server has to answer one
    /// call (1 to 600000, default 10000).
    pub timeout_ms: Option<u64>,
    /// Recorded and mcp only: another recorded or mcp server whose store
    /// this one shares (two servers over one repository or database), so
    /// what either is sent reaches the readers of both.
    pub shares_state_with: Option<String>,
}

/// `[[servers.fields]]`: the integrity a recorded server gives one part of a
/// tool's output (a transaction's `recipient` is the bank's own record,
/// its `subject` third-party text).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldDecl {
    /// The tool whose output it labels.
    pub tool: String,
    /// An RFC 6901 pointer into the tool's output; a segment `*` matches
    /// any one key or index.
    pub pointer: String,
    /// `trusted` or `untrusted`: the integrity of what the pointer covers.
    pub integrity: String,
}

/// `[[servers.tools]]`: one tool a recorded server declares, as MCP's
/// `tools/list` defines a tool.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDecl {
    /// The tool's name (MCP's grammar: 1 to 128 of `[A-Za-z0-9_.-]`).
    pub name: String,
    /// What the tool does (empty when absent).
    pub description: Option<String>,
    /// The input schema, draft 2020-12, as JSON text (lossless: JSON
    /// Schema may hold `null`, which TOML cannot write).
    pub input_schema: String,
    /// The output schema, draft 2020-12, as JSON text; a recorded answer
    /// that is `ok` must satisfy it.
    pub output_schema: Option<String>,
    /// What the tool touches; an absent hint takes MCP's default.
    pub annotations: Option<AnnotationsDecl>,
    /// The SHA-256 (hex) of the definition's canonical JSON; when present
    /// the definition must digest to it.
    pub digest: Option<String>,
}

/// `[servers.tools.annotations]`: MCP's tool annotations, snake_case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnotationsDecl {
    /// Changes nothing (default false).
    pub read_only_hint: Option<bool>,
    /// A change may be destructive (default true).
    pub destructive_hint: Option<bool>,
    /// Calling again with the same arguments changes nothing more
    /// (default false).
    pub idempotent_hint: Option<bool>,
    /// Reaches an open world (default true).
    pub open_world_hint: Option<bool>,
}

/// `[[servers.answers]]`: one recorded answer of a recorded server,
/// matched to a call by its step, or by agent, tool and arguments.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerDecl {
    /// The call step this answers (its request id is the step id).
    pub step: Option<String>,
    /// Without `step`: the calling agent.
    pub agent: Option<String>,
    /// Without `step`: the tool called.
    pub tool: Option<String>,
    /// Without `step`: the arguments, matched by canonical JSON (default
    /// `{}`).
    pub arguments: Option<toml::Table>,
    /// What the server answers (any value).
    pub output: toml::Value,
    /// Whether the server carried the call out (default true); `false`
    /// answers the output as a failure, not performed (the server still
    /// received the call, so it spends its budget).
    pub ok: Option<bool>,
}

/// `[[agents]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentDecl {
    /// The agent's id.
    pub id: String,
    /// What the agent does, for readers and prompts.
    pub role: String,
    /// The recorded model driving it (`recorded:<name>`).
    pub model: String,
    /// The prompt the agent starts from.
    pub seed_prompt_ref: String,
    /// World: the kernel the agent enters through.
    pub kernel: Option<String>,
    /// A quarantined reader: may read untrusted content, calls nothing
    /// consequential, and passes values on only by schema-checked
    /// hand-overs.
    pub quarantined: Option<bool>,
    /// A planner: judged by argument, so a schema-checked hand-over from a
    /// quarantined reader leaves its session trusted.
    pub planner: Option<bool>,
}

/// `[[grants]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantDecl {
    /// The capability's id, presented by steps and delegated onward.
    pub id: String,
    /// The agent the capability is issued to.
    pub agent: String,
    /// The server it covers.
    pub server: String,
    /// The tools it covers.
    pub tools: Vec<String>,
    /// Optional path constraint on the `path` argument.
    pub path_prefix: Option<String>,
    /// Start of validity, milliseconds after the clock start (default 0).
    pub not_before_ms: Option<u64>,
    /// End of validity, milliseconds after the clock start (default one day).
    pub expires_after_ms: Option<u64>,
    /// Optional invocation cap carried by the capability.
    pub max_invocations: Option<u64>,
    /// Share of the allowance in basis points (default 10000).
    pub share_bps: Option<u64>,
    /// Whether the capability binds the digests of the definitions of the
    /// tools it covers, as the server declares them when it is issued: a
    /// call after the server changes a definition (a rug pull) is denied.
    pub pin_definitions: Option<bool>,
    /// A monetary scope constraint the capability carries: the kernel
    /// checks each call's amount against it when it admits the call.
    pub monetary: Option<MonetaryDecl>,
}

/// `monetary = { argument, currency, max_per_invocation, max_total }` on a
/// grant or a delegate step: the kernel's monetary scope constraint
/// (`chio_kernel::token::MonetaryLimit`), amounts in whole minor units. The
/// amounts stay TOML values until validation, so a decimal string or a
/// negative number is refused naming the unit.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonetaryDecl {
    /// The argument that carries each call's amount, a whole number of
    /// minor units.
    pub argument: String,
    /// The currency code the amounts are counted in.
    pub currency: String,
    /// The largest amount one call may carry, in minor units.
    pub max_per_invocation: toml::Value,
    /// The largest sum over every call of the capability's lineage, in
    /// minor units.
    pub max_total: toml::Value,
}

/// `[[guards]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuardDecl {
    /// The guard's id, listed by kernel pipelines.
    pub id: String,
    /// The guard kind; required once a world is declared.
    pub kind: Option<String>,
    /// `enforce` (default) or `observe`.
    pub mode: Option<String>,
    /// Kind-specific configuration, checked by the kernel's builder.
    pub config: Option<toml::Table>,
}

/// `[[budgets]]`: an invocation budget, a monetary budget, or both, on one
/// tool of one server.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetDecl {
    /// Names a monetary budget in reasons; entries sharing an id share one
    /// total. Defaults to one id per entry (see [`BudgetDecl::money_id`]).
    pub id: Option<String>,
    /// The agent the budget limits (or `capability`).
    pub agent: Option<String>,
    /// The grant whose lineage a monetary budget limits: every call
    /// presenting it or a capability delegated from it (or `agent`).
    pub capability: Option<String>,
    /// The server of the limited tool.
    pub server: String,
    /// The limited tool.
    pub tool: String,
    /// How many calls are admitted; at least 1.
    pub max_invocations: Option<u64>,
    /// Monetary: the argument carrying each call's amount.
    pub amount: Option<String>,
    /// Monetary: the budget's currency code.
    pub currency: Option<String>,
    /// Monetary: an argument that must name `currency`.
    pub currency_argument: Option<String>,
    /// Monetary: the most the calls may spend, as an exact decimal string;
    /// its decimal places are the budget's minor unit.
    pub limit: Option<String>,
    /// Monetary: the length of the fixed virtual-time windows, counted from
    /// the clock start, each with a total of its own.
    pub window_ms: Option<u64>,
}

impl BudgetDecl {
    /// Whether the entry declares a monetary limit.
    pub fn is_monetary(&self) -> bool {
        self.limit.is_some()
    }

    /// The monetary budget's id: `id` as written, or one naming the
    /// entry's subject, server and tool (`agent:<a>/<s>/<t>` or
    /// `capability:<c>/<s>/<t>`, which no written id can spell).
    pub fn money_id(&self) -> String {
        if let Some(id) = &self.id {
            return id.clone();
        }
        let subject = match (&self.agent, &self.capability) {
            (Some(agent), _) => format!("agent:{agent}"),
            (None, Some(capability)) => format!("capability:{capability}"),
            (None, None) => "unnamed".to_string(),
        };
        format!("{subject}/{}/{}", self.server, self.tool)
    }
}

/// One step as a scenario keeps it: the keys every later stage reads of
/// every step (the schedule, the records, the checks that depend on the
/// order), and the whole declaration only until validation has read it.
///
/// A [`StepDecl`] has a field for every key of every action kind (over 600
/// bytes, most of them empty); a long schedule holds one head per step
/// instead. The whole parse of a file keeps each declaration in `decl`;
/// the loader that parses the file one step table at a time keeps none and
/// hands validation the tables to parse again, one at a time. A validated
/// scenario's heads hold no declaration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "StepDecl")]
pub struct StepHead {
    /// The step's id.
    pub id: String,
    /// The acting agent.
    pub agent: String,
    /// The action word as written (`call` when absent).
    pub action: Option<String>,
    /// Delegate: the id of the new capability.
    pub delegation: Option<String>,
    /// Any action: virtual offset in milliseconds from the clock start.
    pub at: Option<u64>,
    /// Advance: milliseconds the clock moves for all later actions.
    pub advance_ms: Option<u64>,
    /// The substring the step's reason must contain.
    pub expect_reason: Option<String>,
    /// The whole declaration, while validation still needs it.
    pub decl: Option<Box<StepDecl>>,
}

impl StepHead {
    /// The head of `decl`, without the declaration itself.
    pub fn of(decl: &StepDecl) -> Self {
        Self {
            id: decl.id.clone(),
            agent: decl.agent.clone(),
            action: decl.action.clone(),
            delegation: decl.delegation.clone(),
            at: decl.at,
            advance_ms: decl.advance_ms,
            expect_reason: decl.expect_reason.clone(),
            decl: None,
        }
    }
}

impl From<StepDecl> for StepHead {
    fn from(decl: StepDecl) -> Self {
        let head = Self::of(&decl);
        Self {
            decl: Some(Box::new(decl)),
            ..head
        }
    }
}

/// `[[steps]]`: one scheduled action; which keys apply depends on `action`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepDecl {
    /// The step's id.
    pub id: String,
    /// The acting agent.
    pub agent: String,
    /// `call` (default), `delegate`, `revoke`, `message`, `advance`, `fault`
    /// or `redefine`.
    pub action: Option<String>,
    /// Call: the server called.
    pub server: Option<String>,
    /// Call: the tool called.
    pub tool: Option<String>,
    /// Call: the tool's arguments. Validation moves them into the call's
    /// typed action (`Scenario::actions`, as JSON) and clears this copy, so
    /// a validated scenario holds each call's arguments once.
    pub arguments: Option<toml::Table>,
    /// Call: `allow`, `deny` or `rewrite`.
    pub expect_verdict: Option<String>,
    /// Call: capability presented; delegate: capability attenuated.
    pub capability: Option<String>,
    /// Any action: virtual offset in milliseconds from the clock start.
    pub at: Option<u64>,
    /// Delegate and message: the receiving agent.
    pub to: Option<String>,
    /// Delegate: the id of the new capability.
    pub delegation: Option<String>,
    /// Delegate: attenuated tools.
    pub tools: Option<Vec<String>>,
    /// Delegate: attenuated path prefix.
    pub path_prefix: Option<String>,
    /// Delegate: validity after the delegation instant, in milliseconds.
    pub expires_after_ms: Option<u64>,
    /// Delegate: attenuated invocation cap.
    pub max_invocations: Option<u64>,
    /// Delegate: share of the parent's allowance in basis points.
    pub share_bps: Option<u64>,
    /// Delegate: the monetary constraint the child carries instead of its
    /// parent's.
    pub monetary: Option<MonetaryDecl>,
    /// Revoke: the grant or delegation revoked.
    pub target: Option<String>,
    /// Revoke: who revokes; `"authority"` for the issuing authority,
    /// absent for the step's agent (who must hold an ancestor of the target).
    pub by: Option<String>,
    /// Delegate and revoke: whether the step is expected to be `done` (the
    /// default) or `refused`; a mismatch stops the run like an unexpected
    /// verdict.
    pub expect: Option<String>,
    /// Advance: milliseconds the clock moves for all later actions.
    pub advance_ms: Option<u64>,
    /// Message: literal text the sender says to the receiver.
    pub content: Option<String>,
    /// Message: the id of an earlier call step of the sender whose output
    /// is forwarded (its label travels with it).
    pub from_step: Option<String>,
    /// Message (hand-over): the schema the handed-over value must satisfy.
    pub schema: Option<toml::Table>,
    /// Message (hand-over): the value handed over, in the value grammar.
    pub value: Option<toml::Value>,
    /// Call, delegate and revoke: a substring the kernel's reason (or the
    /// refusal reason) must contain; a mismatch stops the run like an
    /// unexpected verdict.
    pub expect_reason: Option<String>,
    /// Fault: what fails (`crash`, `restart`, `partition`, `heal`, `stall`
    /// or `delay`).
    pub fault: Option<String>,
    /// Fault (`crash`, `restart`): the logical node that fails or comes back.
    pub node: Option<String>,
    /// Fault (`restart`): whether the node comes back with its agents'
    /// held capabilities (`true`) or fresh, holding only its grants (`false`).
    pub keep_state: Option<bool>,
    /// Fault (`partition`, `heal`, `delay`): the two ends of the link, each a
    /// node or `trust-control`.
    pub between: Option<Vec<String>>,
    /// Fault (`stall`): virtual milliseconds trust-control answers nothing.
    pub duration_ms: Option<u64>,
    /// Fault (`delay`): virtual milliseconds a call crossing the link arrives late.
    pub delay_ms: Option<u64>,
    /// Redefine: the tool's new definition, which the server puts in force
    /// at the step's instant.
    pub definition: Option<DefinitionDecl>,
}

/// `[steps.definition]`: a tool's definition as a `redefine` step gives it,
/// the keys of a declared tool but its name (the step's `tool`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefinitionDecl {
    /// What the tool now says it does (empty when absent).
    pub description: Option<String>,
    /// The new input schema, draft 2020-12, as JSON text.
    pub input_schema: String,
    /// The new output schema, as JSON text.
    pub output_schema: Option<String>,
    /// What the tool now says it touches.
    pub annotations: Option<AnnotationsDecl>,
    /// The SHA-256 (hex) the new definition must digest to, when stated.
    pub digest: Option<String>,
}

impl DefinitionDecl {
    /// The definition as a declared tool named `tool`.
    pub fn as_tool(&self, tool: &str) -> ToolDecl {
        ToolDecl {
            name: tool.to_string(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            output_schema: self.output_schema.clone(),
            annotations: self.annotations,
            digest: self.digest.clone(),
        }
    }
}

/// `[[adversaries]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdversaryDecl {
    /// The adversary class.
    pub class: String,
    /// The population's name.
    pub population: String,
    /// Where the population's seed corpus lives.
    pub seed_ref: String,
    /// Class-specific parameters.
    pub params: Option<toml::Table>,
    /// What the adversary tries to reach (default: its class's goal).
    pub goal: Option<String>,
    /// The path a `reach-forbidden-path` goal tries to reach.
    pub goal_path: Option<String>,
    /// The tools that path is forbidden to (default: every tool).
    pub goal_tools: Option<Vec<String>>,
    /// Populations the block's lineage breeds per generation (default: the evolve configuration's).
    pub population_size: Option<i64>,
}
