//! The scenario: its typed form, how it is loaded, and its fail-closed
//! validation.
//!
//! A scenario is loaded in two parts. [`load`] reads (the file, once, and
//! every fixture folder a server names, confined as [`crate::fixtures`]
//! describes) and parses; [`validate`] is pure: it reads nothing, and checks
//! a fixture folder against the files already read, a
//! [`FixtureSet`](crate::fixtures::FixtureSet). A node that receives the
//! scenario's bytes and fixture files from the controller therefore
//! validates exactly what the controller validated, without a filesystem.
//! The pipeline stops at the first refusal:
//!
//! 1. TOML syntax;
//! 2. inline secrets over the whole tree, keys and every string value
//!    including the title ([`crate::secrets`], built on the kernel's one
//!    credential detector), before any other message could quote a value;
//! 3. the closed schema of [`crate::model`] (unknown keys, missing keys,
//!    wrong types);
//! 4. the determinism contract (schema version, scheduler, locale, tick,
//!    `[determinism]` copies, clock start, seed range);
//! 5. ids, duplicates and agents' models;
//! 6. the world: nodes, kernels, servers (each fixture folder as read),
//!    guards (their configuration is built by the kernel's guard builder),
//!    grants, budgets;
//! 7. steps: per-action keys, references, then the schedule, walked in
//!    execution order to check that each delegation hands on a capability
//!    its agent holds at that point and to resolve each call's capability,
//!    and that each message forwards an earlier call step of its sender;
//!    and that faults follow each other as a run can suffer them (a crash
//!    before its restart, a partition before its heal, no message across
//!    a fault);
//! 8. adversaries.
//!
//! A scenario without a world (no nodes, kernels, servers, grants or agent
//! kernels) validates as the seed's example does, and its steps may name any
//! server; once any world key is present the world must be complete.
//!
//! Module map:
//! - [`actions`]: the typed actions and the words they parse;
//! - [`lint`]: warnings about what validates but is probably wrong;
//! - [`load`]: reading, parsing and the entry points;
//! - [`locate`]: the line and column where an error's field is written;
//! - [`mcp`]: an MCP `tools/list` result read as a recorded server's tools;
//! - [`tools`]: the tools each server kind publishes or declares;
//! - [`trace`]: a recorded agent trace (MCP log, OpenAI or Anthropic
//!   transcript) written as a scenario;
//! - [`validate`]: the validator, one module per section (checks shared by
//!   all, world, steps, schedule).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chio_kernel::guards::GuardSpec;

use crate::clock::VirtualClock;
use crate::error::ArenaError;
use crate::fixtures::{FixtureFiles, FixtureSet};
use crate::model::{GrantDecl, ScenarioFile, ServerDecl, StepHead};
use crate::rng::ArenaRng;
use crate::scheduler::{ScheduledStep, SchedulerKind};
use crate::witness::DeterminismWitness;

pub mod actions;
pub mod lint;
pub mod load;
pub mod locate;
pub mod mcp;
pub mod sealed;
mod split;
pub mod text;
pub mod tools;
pub mod trace;
pub mod validate;
pub mod value;

pub use text::ScenarioText;
use text::Span;

pub use actions::{
    Action, ActionKind, AdvanceAction, CallAction, DelegateAction, ExpectedVerdict, FaultAction,
    FaultLink, HandOverAction, MessageAction, RedefineAction, RevokeAction, ServerKind,
    StepExpectation, TRUST_CONTROL,
};
pub use load::{
    load_scenario, load_scenario_with_bytes, parse_scenario, parse_scenario_bytes,
    parse_scenario_with_fixtures, parse_world_with_fixtures, world_bytes,
};
pub use locate::locate;
pub use validate::is_valid_id;

use validate::guard_spec;

/// The only schema this build reads.
pub const SCENARIO_SCHEMA_VERSION: &str = "chio.arena.scenario/v1";
/// Where a workspace server is mounted when `root` is absent.
pub const DEFAULT_WORKSPACE_ROOT: &str = "/workspace";
/// A grant's validity when `expires_after_ms` is absent: one virtual day.
pub const DEFAULT_GRANT_EXPIRY_MS: u64 = 86_400_000;
/// A capability's share when `share_bps` is absent: the whole allowance.
pub const DEFAULT_SHARE_BPS: u64 = 10_000;

/// One step: its head (id, agent, action word, expected reason) and its
/// typed action, a call's capability resolved when it named none.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The step's head, without its declaration.
    pub head: StepHead,
    /// What the step does.
    pub action: Action,
}

/// How a validated scenario keeps its steps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Steps {
    /// Every step parsed, in declaration order (a short schedule, or a file
    /// parsed whole).
    Held(Vec<Step>),
    /// Where each step's table lies in the scenario's text, and what each
    /// call without `capability` resolved to (see `validate::Built`).
    Spans {
        spans: Vec<Span>,
        resolved: Vec<u32>,
        names: Vec<String>,
    },
}

/// A validated scenario. Only the loaders of [`load`] make one.
///
/// A long schedule is not held parsed: each step's table is parsed again
/// from the scenario's text when [`Scenario::step`] is asked for it, and
/// what the scenario keeps per step is the table's place, the schedule's
/// entry, the capability a call resolved to and the step id's canonical
/// text for the determinism witness (about 40 bytes and the id).
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The declarations as written, but for the steps (see [`Self::step`]).
    file: ScenarioFile,
    /// The folder fixture paths are relative to.
    base_dir: PathBuf,
    /// The parsed scheduler.
    scheduler: SchedulerKind,
    /// The tick in milliseconds.
    tick_ms: u64,
    /// The clock at the start instant.
    clock: VirtualClock,
    /// Whether the scenario declares a world.
    has_world: bool,
    /// The bytes validated.
    text: ScenarioText,
    /// The text without its step tables, when the file was cut.
    world_text: Option<String>,
    /// The steps, held or by place.
    steps: Steps,
    /// The actions in execution order with their times.
    schedule: Vec<ScheduledStep>,
    /// The fault steps' faults, in declaration order.
    faults: Vec<FaultAction>,
    /// The call steps whose output a message forwards.
    forwarded: BTreeSet<String>,
    /// The delegate steps' indices, in declaration order.
    delegations: Vec<usize>,
    /// The redefine steps' indices, in declaration order.
    redefinitions: Vec<usize>,
    /// The step ids as the witness's `steps` members
    /// ([`Self::write_witness_steps`]).
    witness_ids: String,
    /// The fixture files read and checked at load, by workspace server id.
    fixtures: FixtureSet,
    /// Each file a call argument reads sealed, with the first argument
    /// naming it.
    sealed_paths: BTreeMap<String, String>,
    /// The sealed files read, by path: empty until [`Self::read_sealed`]
    /// (a node never reads them: the controller resolves every value).
    sealed: sealed::SealedSet,
}

impl Scenario {
    /// The declarations as written, but for the steps, which it does not
    /// hold: a step is [`Self::step`].
    pub fn file(&self) -> &ScenarioFile {
        &self.file
    }

    /// The scenario id.
    pub fn id(&self) -> &str {
        &self.file.id
    }

    /// The scenario title.
    pub fn title(&self) -> &str {
        &self.file.title
    }

    /// The folder fixture paths resolve against.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// The scheduler the scenario runs under.
    pub fn scheduler(&self) -> SchedulerKind {
        self.scheduler
    }

    /// Milliseconds between default step instants.
    pub fn tick_ms(&self) -> u64 {
        self.tick_ms
    }

    /// A clock at the scenario's start instant, with the scenario's tick.
    pub fn clock(&self) -> VirtualClock {
        self.clock.clone()
    }

    /// The scenario's random streams.
    pub fn rng(&self) -> ArenaRng {
        ArenaRng::new(self.file.rng_seed)
    }

    /// Whether the scenario declares the world it runs in.
    pub fn has_world(&self) -> bool {
        self.has_world
    }

    /// The bytes the scenario was validated from (what a bundle records).
    pub fn text(&self) -> &ScenarioText {
        &self.text
    }

    /// What a node is sent: the file without its `[[steps]]` tables, every
    /// other byte kept in order, when the file was cut; otherwise the whole
    /// file. What a node holds therefore does not grow with the schedule.
    pub fn world_bytes(&self) -> std::io::Result<Vec<u8>> {
        match &self.world_text {
            Some(world) => Ok(world.as_bytes().to_vec()),
            None => self.text.to_vec(),
        }
    }

    /// Refuses a scenario without a world, saying that no step can be
    /// dispatched and naming the keys to add; a runner calls this before
    /// dispatching or writing anything.
    pub fn require_world(&self) -> Result<(), ArenaError> {
        if self.has_world {
            Ok(())
        } else {
            Err(ArenaError::NoWorld {
                steps: self.step_count(),
            })
        }
    }

    /// Refuses an agent whose `seed_prompt_ref` is not a relative path
    /// below the scenario's folder that resolves inside it
    /// (`CHIO-SCENARIO-FIXTURE-OUTSIDE`, the rule of fixtures and sealed
    /// files, [`crate::fixtures::resolve_below`]) or names no file there
    /// (`CHIO-SCENARIO-SEED-PROMPT-MISSING`, naming the agent's key and the
    /// file). This is the only check that reads the prompt's
    /// place on disk: a node validates a world without its files, and no
    /// kernel reads the prompt.
    pub fn check_seed_prompts(&self) -> Result<(), ArenaError> {
        for (i, agent) in self.file.agents.iter().enumerate() {
            // The path rule of fixtures and sealed files: below the
            // scenario's folder, no link out, so validation says nothing
            // about a file elsewhere.
            let field = format!("agents[{i}].seed_prompt_ref");
            let found =
                crate::fixtures::resolve_below(&self.base_dir, &agent.seed_prompt_ref, &field)?;
            if !found.is_ok_and(|real| real.is_file()) {
                return Err(ArenaError::SeedPromptMissing {
                    field,
                    file: agent.seed_prompt_ref.clone(),
                });
            }
        }
        Ok(())
    }

    /// The number of steps.
    pub fn step_count(&self) -> usize {
        match &self.steps {
            Steps::Held(held) => held.len(),
            Steps::Spans { spans, .. } => spans.len(),
        }
    }

    /// Step `index` in declaration order: held, or parsed again from the
    /// scenario's text (which validation parsed and accepted before, so a
    /// refusal here is the text's storage failing, never the scenario).
    pub fn step(&self, index: usize) -> Result<Cow<'_, Step>, ArenaError> {
        match &self.steps {
            Steps::Held(held) => {
                held.get(index)
                    .map(Cow::Borrowed)
                    .ok_or_else(|| ArenaError::Syntax {
                        line: 0,
                        column: 0,
                        reason: format!("steps[{index}] is past the last step"),
                    })
            }
            Steps::Spans {
                spans,
                resolved,
                names,
            } => {
                let source = validate::StepSource::Spans {
                    text: &self.text,
                    spans,
                };
                let decl = source.decl(index)?;
                let mut action = validate::rebuild_action(index, &decl, self.has_world)?;
                let slot = resolved.get(index).copied().unwrap_or(validate::UNRESOLVED);
                validate::apply_resolution(&mut action, slot, names);
                Ok(Cow::Owned(Step {
                    head: StepHead::of(&decl),
                    action,
                }))
            }
        }
    }

    /// Every step in declaration order.
    pub fn steps(&self) -> impl Iterator<Item = Result<Cow<'_, Step>, ArenaError>> + '_ {
        (0..self.step_count()).map(|i| self.step(i))
    }

    /// The fault steps' faults, in declaration order.
    pub fn fault_steps(&self) -> impl Iterator<Item = &FaultAction> {
        self.faults.iter()
    }

    /// The ids of the call steps whose output some message forwards.
    pub fn forwarded_steps(&self) -> &BTreeSet<String> {
        &self.forwarded
    }

    /// The indices of the delegate steps, in declaration order.
    pub fn delegate_steps(&self) -> &[usize] {
        &self.delegations
    }

    /// Every redefinition as the kernels hold it, with the instant it takes
    /// effect (Unix ms of virtual time: the clock start plus the step's
    /// evaluation offset) and its step's place in the schedule's total
    /// order, in declaration order.
    pub fn redefinitions(&self) -> Result<Vec<chio_kernel::contract::Redefinition>, ArenaError> {
        if self.redefinitions.is_empty() {
            return Ok(Vec::new());
        }
        let placed: BTreeMap<usize, (u64, u64)> = self
            .schedule
            .iter()
            .enumerate()
            .map(|(position, s)| (s.step_index, (position as u64, s.evaluation_ms)))
            .collect();
        let start = self.clock.now_ms();
        let mut out = Vec::with_capacity(self.redefinitions.len());
        for &i in &self.redefinitions {
            if let Action::Redefine(r) = &self.step(i)?.action {
                let (position, offset) = placed.get(&i).copied().unwrap_or_default();
                out.push(chio_kernel::contract::Redefinition {
                    at_ms: start.saturating_add(offset),
                    position,
                    server: r.server.clone(),
                    contract: r.contract.clone(),
                });
            }
        }
        Ok(out)
    }

    /// Every tool definition of the world that the injection reader flags,
    /// by kernel (in declaration order): each kernel's catalog, then the
    /// redefinitions of its servers, as the kernel reads them when it loads
    /// ([`chio_kernel::contract::poisoned_definitions`]).
    pub fn poisoned_definitions(
        &self,
    ) -> Result<Vec<(String, chio_kernel::contract::PoisonedDefinition)>, ArenaError> {
        let redefinitions = self.redefinitions()?;
        let mut out = Vec::new();
        for kernel in &self.file.kernels {
            let catalog = tools::catalog_of(&self.file, &kernel.id).unwrap_or_default();
            out.extend(
                chio_kernel::contract::poisoned_definitions(&catalog, &redefinitions)
                    .into_iter()
                    .map(|found| (kernel.id.clone(), found)),
            );
        }
        Ok(out)
    }

    /// The ids of the scenario's nodes, in declaration order.
    pub fn node_ids(&self) -> Vec<String> {
        self.file.nodes.iter().map(|n| n.id.clone()).collect()
    }

    /// The actions in execution order, with scheduled and evaluation offsets.
    pub fn schedule(&self) -> &[ScheduledStep] {
        &self.schedule
    }

    /// The guards that declare a kind, as the kernel's data form, in declaration order.
    pub fn guard_specs(&self) -> Result<Vec<GuardSpec>, ArenaError> {
        guard_specs_of(&self.file.guards)
    }

    /// The fixture files of each workspace server that declares a folder, by
    /// server id, as the loader read and checked them: a run seeds exactly
    /// these bytes and never reads the folder again.
    pub fn fixtures(&self) -> &BTreeMap<String, FixtureFiles> {
        &self.fixtures.servers
    }

    /// The same files as a [`FixtureSet`], the form that travels with the
    /// scenario's bytes to a node.
    pub fn fixture_set(&self) -> &FixtureSet {
        &self.fixtures
    }

    /// The sealed files read so far, by path as the scenario writes them.
    pub fn sealed(&self) -> &sealed::SealedSet {
        &self.sealed
    }

    /// Reads every sealed file the scenario's arguments name below
    /// `folder` (the scenario's folder, or the one a replay is given),
    /// refusing one the rules of [`sealed`] refuse; a path named by several
    /// arguments is read once and reported at the first.
    pub fn read_sealed(&mut self, folder: &Path) -> Result<(), ArenaError> {
        let server_folders: Vec<String> = self
            .file
            .servers
            .iter()
            .filter_map(|server| server.fixtures.as_deref())
            .filter_map(crate::fixtures::normalized_folder)
            .collect();
        let mut read = sealed::SealedSet::new();
        for (path, field) in &self.sealed_paths {
            let text = sealed::read_sealed(folder, path, field, &server_folders)?;
            sealed::refuse_served(&self.fixtures, &text, path, field)?;
            read.insert(path.clone(), text);
        }
        self.sealed = read;
        Ok(())
    }

    /// The determinism witness: the projection replay depends on.
    pub fn determinism_witness(&self) -> Result<DeterminismWitness, ArenaError> {
        let mut witness = self.determinism_head();
        witness.steps = self
            .steps()
            .map(|step| step.map(|s| s.head.id.clone()))
            .collect::<Result<_, _>>()?;
        Ok(witness)
    }

    /// The witness without its step ids, which a long schedule writes one
    /// at a time ([`Self::write_witness_steps`]).
    pub fn determinism_head(&self) -> DeterminismWitness {
        DeterminismWitness {
            scenario_id: self.file.id.clone(),
            schema_version: self.file.schema_version.clone(),
            rng_seed: self.file.rng_seed,
            virtual_clock_start: self.clock.format_start(),
            scheduler: self.scheduler.as_str().to_string(),
            locale: self.file.determinism.locale.clone(),
            agents: self.file.agents.iter().map(|a| a.id.clone()).collect(),
            steps: Vec::new(),
        }
    }

    /// Writes the witness's step ids as the members of its canonical
    /// `steps` array: each id's canonical JSON string, joined by commas.
    pub fn write_witness_steps(&self, out: &mut dyn std::io::Write) -> Result<(), ArenaError> {
        out.write_all(self.witness_ids.as_bytes())
            .map_err(|e| ArenaError::BundleIo {
                path: "the manifest's determinism witness".to_string(),
                cause: e.to_string(),
            })
    }
}

impl GrantDecl {
    /// Start of validity after the clock start, with the default applied.
    pub fn not_before(&self) -> u64 {
        self.not_before_ms.unwrap_or(0)
    }

    /// End of validity after the clock start, with the default applied.
    pub fn expires_after(&self) -> u64 {
        self.expires_after_ms.unwrap_or(DEFAULT_GRANT_EXPIRY_MS)
    }

    /// Share in basis points, with the default applied.
    pub fn share(&self) -> u64 {
        self.share_bps.unwrap_or(DEFAULT_SHARE_BPS)
    }
}

impl crate::model::MonetaryDecl {
    /// The constraint as the kernel carries it, or `None` when a limit is
    /// not a whole number of minor units of at least 1 (which validation
    /// refuses, naming the key).
    pub fn to_limit(&self) -> Option<chio_kernel::token::MonetaryLimit> {
        let units = |v: &toml::Value| v.as_integer().filter(|n| *n >= 1).map(i64::unsigned_abs);
        Some(chio_kernel::token::MonetaryLimit {
            argument: self.argument.clone(),
            currency: self.currency.clone(),
            max_per_invocation: units(&self.max_per_invocation)?,
            max_total: units(&self.max_total)?,
        })
    }
}

impl ServerDecl {
    /// The workspace mount point, with the default applied.
    pub fn root_or_default(&self) -> &str {
        self.root.as_deref().unwrap_or(DEFAULT_WORKSPACE_ROOT)
    }
}

impl crate::model::AnswerDecl {
    /// The answer's arguments as JSON (`{}` when absent).
    pub fn arguments_json(&self) -> Result<serde_json::Value, ArenaError> {
        match &self.arguments {
            Some(table) => validate::arguments_json(table, "arguments"),
            None => Ok(serde_json::Value::Object(Default::default())),
        }
    }

    /// The answer's output as JSON, read by the value grammar: each
    /// `{ literal = ... }` and `{ null = true }` is the value it writes,
    /// each `{ fixture = ... }` the text of its file in `sealed` (the
    /// files the controller read; an answer naming one not there is
    /// refused, never answered without it).
    pub fn output_json(&self, sealed: &sealed::SealedSet) -> Result<serde_json::Value, ArenaError> {
        use value::{resolve, Reference, Resolution};
        let written = validate::value_json(&self.output, "output")?;
        let mut lookup = |reference: &Reference| match reference {
            Reference::Fixture { path } => sealed
                .get(path)
                .map(|text| serde_json::Value::String(text.text().to_string()))
                .ok_or(()),
            Reference::Step { .. } => Err(()),
        };
        resolve(&written, &mut lookup).map_err(|why| match why {
            Resolution::Malformed(m) => ArenaError::ValueReference {
                field: format!("output{}", m.at),
                problem: m.problem,
            },
            Resolution::Unanswered { at, reference, .. } => ArenaError::SealedFixture {
                field: format!("output{at}"),
                path: match reference {
                    Reference::Fixture { path } => path,
                    Reference::Step { step, .. } => step,
                },
                problem: "it was not read where this world is resolved: only the controller reads sealed files, so a recorded answer that reads one is served by the embedded topology".to_string(),
            },
        })
    }
}

/// `[[guards]]` entries as the kernel's data form, in declaration order,
/// read exactly as a scenario's are (mode, kind and config checked the same
/// way; a guard without a kind has no spec): what a file of guards outside
/// a scenario, such as the MCP edge's `--policy`, is read with.
pub fn guard_specs_of(guards: &[crate::model::GuardDecl]) -> Result<Vec<GuardSpec>, ArenaError> {
    let mut specs = Vec::new();
    for (index, guard) in guards.iter().enumerate() {
        if let Some(spec) = guard_spec(index, guard)? {
            specs.push(spec);
        }
    }
    Ok(specs)
}
