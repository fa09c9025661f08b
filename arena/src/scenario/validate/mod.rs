//! The scenario validator: pure checks over a parsed file, in the order the
//! pipeline of [`super`] lists, stopping at the first refusal.
//!
//! Validation reads nothing: fixture folders are looked up in what the
//! loader read ([`FixtureSource`]). This module holds the entry point, the
//! determinism contract, agents and adversaries; the other sections have a
//! module each:
//! - [`checks`]: the small rules every section shares (ids, ranges,
//!   references, TOML to JSON);
//! - [`world`]: nodes, guards, kernels, servers, grants and budgets;
//! - [`steps`]: each step's keys and typed action;
//! - [`schedule`]: what the schedule order implies (holdings, messages);
//! - [`faults`]: fault steps' keys and the order faults may come in;
//! - [`recorded`]: recorded servers' declared tools and answers;
//! - [`monetary`]: the monetary scope constraint of grants and delegations.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::load::{parse_step_table, spool_failed, Parsed};
use super::text::{ScenarioText, Span};
use super::{Action, FaultAction, Scenario, Step, Steps, SCENARIO_SCHEMA_VERSION};
use crate::clock::{VirtualClock, DEFAULT_TICK_MS};
use crate::error::ArenaError;
use crate::fixtures::{FixtureFiles, FixtureSet};
use crate::model::{ScenarioFile, StepDecl, StepHead};
use crate::scheduler::{
    DeterministicScheduler, ScheduleInput, ScheduledStep, SchedulerKind, MAX_OFFSET_MS,
};

mod budgets;
mod checks;
mod contracts;
mod faults;
mod guard_names;
mod in_force;
pub use guard_names::check_guard_served;
mod monetary;
mod recorded;
pub(crate) use recorded::field_label;
mod schedule;
mod steps;
mod world;

use schedule::Walk;
pub(crate) use steps::rebuild_action;

pub use budgets::shared_id_conflict;
use checks::{check_id, check_unique, declared_ids, table_to_json};
pub use checks::{is_valid_id, MAX_ID_BYTES};

/// A step's TOML `arguments` as the JSON the kernel receives: the one
/// conversion the run uses (a TOML date becomes its RFC 3339 text), for
/// every reader that shows a step's arguments, so what `explain` and the
/// report show is what was sent. `None` for a value a run would refuse.
pub fn arguments_as_sent(value: &toml::Value) -> Option<serde_json::Value> {
    checks::toml_to_json(value, "arguments").ok()
}
pub(crate) use world::guard_spec;

const ADVERSARY_CLASSES: &[&str] = &[
    "prompt-injection",
    "capability-overrequest",
    "replay-attempt",
    "scope-escape",
];
/// Provider names whose presence in a model string means a live dependency.
const PROVIDER_MARKERS: &[&str] = &[
    "openai",
    "anthropic",
    "claude",
    "gpt-",
    "gemini",
    "mistral",
    "ollama",
    "cohere",
    "bedrock",
    "vertex",
    "azure",
    "huggingface",
    "http://",
    "https://",
    "live:",
];

/// Where validation finds the files of a server's fixture folder.
pub(crate) enum FixtureSource<'a> {
    /// What the loader read from disk before validation, by server index:
    /// a read's refusal is reported when validation reaches that server.
    Read(&'a BTreeMap<usize, Result<FixtureFiles, ArenaError>>),
    /// Files read and validated before, by server id (a node receives them
    /// with the scenario's bytes); a folder with no entry does not exist.
    Given(&'a FixtureSet),
}

/// What validation derives from the file.
struct Resolved {
    scheduler: SchedulerKind,
    tick_ms: u64,
    clock: VirtualClock,
    has_world: bool,
    fixtures: FixtureSet,
    steps: Built,
}

/// What the steps' validation derives, beside the world.
#[derive(Default)]
pub(crate) struct Built {
    /// Every step parsed, when the scenario keeps them in memory.
    pub held: Option<Vec<Step>>,
    /// The actions in execution order with their times.
    pub schedule: Vec<ScheduledStep>,
    /// For each step, the capability a call without `capability` resolved
    /// to (an index into `names`), or [`UNRESOLVED`].
    pub resolved: Vec<u32>,
    /// The capability ids `resolved` indexes.
    pub names: Vec<String>,
    /// Each fault step's index and fault, in declaration order.
    pub faults: Vec<(usize, FaultAction)>,
    /// The call steps whose output a later step reads: a message forwards
    /// it, or a call's argument takes a value from it.
    pub forwarded: BTreeSet<String>,
    /// Each call argument that takes its value from a step: the call's
    /// index, the JSON pointer of the argument and the step it names.
    pub references: Vec<(usize, String, String)>,
    /// Each file a call argument reads sealed (`{ fixture = ... }`), with
    /// the first argument naming it.
    pub sealed: BTreeMap<String, String>,
    /// The delegate steps' indices, in declaration order.
    pub delegations: Vec<usize>,
    /// The redefine steps' indices, in declaration order.
    pub redefinitions: Vec<usize>,
    /// Every step id's canonical JSON string in declaration order, joined
    /// by commas: the determinism witness's `steps` members, kept at load
    /// so that writing them reads no step again.
    pub witness_ids: String,
}

/// `Built::resolved` of a step that resolved nothing.
pub(crate) const UNRESOLVED: u32 = u32::MAX;

/// At most this many steps are kept parsed in memory; a longer schedule is
/// parsed again from the scenario's text a step at a time.
pub(crate) const HELD_STEPS_LIMIT: usize = 512;

/// Converts one step's `arguments` table to its JSON object; `field` names
/// the table in an error (`steps[3].arguments`).
pub(crate) fn arguments_json(
    table: &toml::Table,
    field: &str,
) -> Result<serde_json::Value, ArenaError> {
    checks::table_to_json(table, field)
}

/// Converts a TOML value to JSON as a scenario's values are (`field`
/// names it in an error).
pub(crate) fn value_json(
    value: &toml::Value,
    field: &str,
) -> Result<serde_json::Value, ArenaError> {
    checks::toml_to_json(value, field)
}

/// Where validation finds each step's declaration.
#[derive(Clone, Copy)]
pub(crate) enum StepSource<'a> {
    /// The whole parse: each head holds its declaration.
    Held(&'a [StepHead]),
    /// The cut parse: each step's table lies in the text.
    Spans {
        text: &'a ScenarioText,
        spans: &'a [Span],
    },
}

impl<'a> StepSource<'a> {
    /// The number of steps.
    pub(crate) fn len(&self) -> usize {
        match self {
            StepSource::Held(heads) => heads.len(),
            StepSource::Spans { spans, .. } => spans.len(),
        }
    }

    /// Step `index`'s whole declaration: the one its head holds, or its
    /// table parsed again (the loader parsed and checked that table before,
    /// so it parses the same way).
    pub(crate) fn decl(&self, index: usize) -> Result<Cow<'a, StepDecl>, ArenaError> {
        let again = |reason: String| ArenaError::Syntax {
            line: 0,
            column: 0,
            reason,
        };
        match self {
            StepSource::Held(heads) => heads
                .get(index)
                .and_then(|s| s.decl.as_deref())
                .map(Cow::Borrowed)
                .ok_or_else(|| again(format!("steps[{index}] holds no declaration"))),
            StepSource::Spans { text, spans } => {
                let span = spans
                    .get(index)
                    .ok_or_else(|| again(format!("steps[{index}] is past the last step")))?;
                let bytes = text.read_span(*span).map_err(spool_failed)?;
                std::str::from_utf8(&bytes)
                    .ok()
                    .and_then(parse_step_table)
                    .map(Cow::Owned)
                    .ok_or_else(|| {
                        again(format!(
                            "steps[{index}] could not be parsed again from its table"
                        ))
                    })
            }
        }
    }
}

/// One validation of one parsed file.
struct Validator<'a> {
    file: &'a ScenarioFile,
    /// Each step's declaration.
    source: StepSource<'a>,
    fixtures: FixtureSource<'a>,
    /// The file's world only: the steps were not parsed (a node's load).
    world_only: bool,
    /// The most steps of a cut file kept parsed in memory.
    held_limit: usize,
}

/// Validates a parsed file (stages 4 to 8) and builds the scenario;
/// `base_dir` is recorded, never read. A step is parsed again from its
/// table each time validation walks it.
pub(crate) fn validate(
    parsed: Parsed,
    base_dir: &Path,
    fixtures: FixtureSource<'_>,
) -> Result<Scenario, ArenaError> {
    validate_holding(parsed, base_dir, fixtures, HELD_STEPS_LIMIT)
}

/// [`validate`], keeping the steps parsed in memory only when the file was
/// parsed whole or has at most `held_limit` steps.
pub(crate) fn validate_holding(
    parsed: Parsed,
    base_dir: &Path,
    fixtures: FixtureSource<'_>,
    held_limit: usize,
) -> Result<Scenario, ArenaError> {
    let Parsed { file, text, cut } = parsed;
    let (spans, world_text) = match cut {
        Some((spans, world)) => (Some(spans), Some(world)),
        None => (None, None),
    };
    let source = match &spans {
        Some(spans) => StepSource::Spans { text: &text, spans },
        None => StepSource::Held(&file.steps),
    };
    let resolved = Validator {
        file: &file,
        source,
        fixtures,
        world_only: false,
        held_limit,
    }
    .run()?;
    build(file, base_dir, resolved, text, spans, world_text)
}

/// Validates the world of a parsed file (stages 4 to 6) whose steps were
/// left unparsed: the scenario it builds has no steps and no schedule.
pub(crate) fn validate_world(
    file: ScenarioFile,
    base_dir: &Path,
    fixtures: FixtureSource<'_>,
) -> Result<Scenario, ArenaError> {
    let resolved = Validator {
        file: &file,
        source: StepSource::Held(&[]),
        fixtures,
        world_only: true,
        held_limit: 0,
    }
    .run()?;
    let text = ScenarioText::memory(Vec::new());
    build(file, base_dir, resolved, text, None, None)
}

fn build(
    mut file: ScenarioFile,
    base_dir: &Path,
    resolved: Resolved,
    text: ScenarioText,
    spans: Option<Vec<Span>>,
    world_text: Option<String>,
) -> Result<Scenario, ArenaError> {
    // A validated scenario keeps no step in its file: each is a
    // [`Step`], held or parsed again from the text.
    file.steps = Vec::new();
    let Built {
        held,
        schedule,
        resolved: resolutions,
        names,
        faults,
        forwarded,
        delegations,
        redefinitions,
        references: _,
        sealed: mut sealed_paths,
        witness_ids,
    } = resolved.steps;
    for (path, field) in recorded::answer_sealed_paths(&file) {
        sealed_paths.entry(path).or_insert(field);
    }
    let steps = match (held, spans) {
        (Some(mut held), _) => {
            for (step, slot) in held.iter_mut().zip(&resolutions) {
                apply_resolution(&mut step.action, *slot, &names);
            }
            Steps::Held(held)
        }
        (None, Some(spans)) => Steps::Spans {
            spans,
            resolved: resolutions,
            names,
        },
        (None, None) => Steps::Held(Vec::new()),
    };
    Ok(Scenario {
        file,
        base_dir: base_dir.to_path_buf(),
        scheduler: resolved.scheduler,
        tick_ms: resolved.tick_ms,
        clock: resolved.clock,
        has_world: resolved.has_world,
        text,
        world_text,
        steps,
        schedule,
        faults: faults.into_iter().map(|(_, fault)| fault).collect(),
        forwarded,
        delegations,
        redefinitions,
        witness_ids,
        fixtures: resolved.fixtures,
        sealed_paths,
        sealed: Default::default(),
    })
}

/// Gives a call without `capability` the one it resolved to.
pub(crate) fn apply_resolution(action: &mut Action, slot: u32, names: &[String]) {
    if let Action::Call(call) = action {
        if call.capability.is_none() {
            if let Some(name) = names.get(slot as usize) {
                call.capability = Some(name.clone());
            }
        }
    }
}

impl<'a> Validator<'a> {
    fn run(&self) -> Result<Resolved, ArenaError> {
        let f = self.file;
        if f.schema_version != SCENARIO_SCHEMA_VERSION {
            return Err(ArenaError::UnsupportedSchemaVersion {
                field: "schema_version".into(),
                value: f.schema_version.clone(),
            });
        }
        let (scheduler, tick_ms, clock) = self.determinism()?;
        check_id(&f.id, "id".into())?;
        if f.agents.is_empty() {
            return Err(ArenaError::EmptyAgents);
        }
        if self.source.len() == 0 && !self.world_only {
            return Err(ArenaError::EmptySteps);
        }
        self.agents()?;
        if scheduler == SchedulerKind::SingleAgentV1 && f.agents.len() > 1 {
            return Err(ArenaError::SingleAgentScheduler {
                count: f.agents.len(),
            });
        }
        let has_world = !f.nodes.is_empty()
            || !f.kernels.is_empty()
            || !f.servers.is_empty()
            || !f.grants.is_empty()
            || f.agents.iter().any(|a| a.kernel.is_some());
        // Every virtual instant is the clock start plus an offset; each must
        // print exactly as canonical JSON, so offsets are bounded by it.
        let start_ms = clock.now_ms();
        let fixtures = self.world(has_world, start_ms)?;
        self.budgets(has_world)?;
        if self.world_only {
            return Ok(Resolved {
                scheduler,
                tick_ms,
                clock: clock.with_tick_ms(tick_ms),
                has_world,
                fixtures,
                steps: Built::default(),
            });
        }
        let mut built = self.steps(has_world)?;
        let agents = std::mem::take(&mut built.agents);
        let at = std::mem::take(&mut built.at);
        let advances = std::mem::take(&mut built.advances);
        let schedule = DeterministicScheduler::new(scheduler, tick_ms)
            .with_start_ms(start_ms)
            .schedule_with(self.source.len(), |i| ScheduleInput {
                agent: agents.get(i).copied().unwrap_or(0),
                at: at.get(&i).copied(),
                advance_ms: advances.get(&i).copied(),
            })?;
        drop((at, advances));
        let ranked = self.ranked_agents();
        let walk = Walk {
            schedule: &schedule,
            agents: &agents,
            ranked: &ranked,
            kinds: &built.kinds,
            held: built.steps.held.as_deref(),
            references: &built.steps.references,
            has_world,
        };
        let (resolved, names) = self.holdings(&walk, start_ms)?;
        self.messages(&walk)?;
        self.fault_sequence(&walk, &built.steps.faults, start_ms)?;
        self.tool_contracts(&walk)?;
        self.recorded_answers(&walk)?;
        self.adversaries()?;
        drop((agents, ranked));
        let mut steps = built.steps;
        steps.schedule = schedule;
        steps.resolved = resolved;
        steps.names = names;
        Ok(Resolved {
            scheduler,
            tick_ms,
            clock: clock.with_tick_ms(tick_ms),
            has_world,
            fixtures,
            steps,
        })
    }

    fn determinism(&self) -> Result<(SchedulerKind, u64, VirtualClock), ArenaError> {
        let f = self.file;
        let d = &f.determinism;
        let scheduler =
            SchedulerKind::parse(&d.scheduler).ok_or_else(|| ArenaError::UnsupportedScheduler {
                field: "determinism.scheduler".into(),
                value: d.scheduler.clone(),
            })?;
        if d.locale != "C" {
            return Err(ArenaError::UnsupportedLocale {
                field: "determinism.locale".into(),
                value: d.locale.clone(),
            });
        }
        let tick_ms = d.tick_ms.unwrap_or(DEFAULT_TICK_MS);
        if tick_ms == 0 || tick_ms > 86_400_000 {
            return Err(ArenaError::OutOfRange {
                field: "determinism.tick_ms".into(),
                rule: "tick_ms is between 1 and 86400000",
            });
        }
        if d.rng_seed.is_some_and(|s| s != f.rng_seed) {
            return Err(ArenaError::DeterminismMismatch {
                field: "determinism.rng_seed".into(),
                twin: "rng_seed",
            });
        }
        if d.virtual_clock_start
            .as_ref()
            .is_some_and(|s| *s != f.virtual_clock_start)
        {
            return Err(ArenaError::DeterminismMismatch {
                field: "determinism.virtual_clock_start".into(),
                twin: "virtual_clock_start",
            });
        }
        let clock = VirtualClock::parse(&f.virtual_clock_start)?;
        if f.rng_seed > MAX_OFFSET_MS {
            return Err(ArenaError::OutOfRange {
                field: "rng_seed".into(),
                rule: "rng_seed is at most 2^53 so it prints exactly in JSON",
            });
        }
        Ok((scheduler, tick_ms, clock))
    }

    fn agents(&self) -> Result<(), ArenaError> {
        let agents = &self.file.agents;
        declared_ids("agent", "agents", agents.iter().map(|a| a.id.as_str()))?;
        for (i, agent) in agents.iter().enumerate() {
            let field = format!("agents[{i}].model");
            let recorded = agent
                .model
                .strip_prefix("recorded:")
                .is_some_and(is_valid_id);
            if recorded {
                continue;
            }
            let lower = agent.model.to_ascii_lowercase();
            if let Some(marker) = PROVIDER_MARKERS.iter().find(|m| lower.contains(**m)) {
                return Err(ArenaError::ProviderDependency { field, marker });
            }
            return Err(ArenaError::UnrecordedModel { field });
        }
        Ok(())
    }

    fn agent_ids(&self) -> BTreeSet<&'a str> {
        self.file.agents.iter().map(|a| a.id.as_str()).collect()
    }

    fn adversaries(&self) -> Result<(), ArenaError> {
        let list = &self.file.adversaries;
        for (i, adversary) in list.iter().enumerate() {
            if !ADVERSARY_CLASSES.contains(&adversary.class.as_str()) {
                return Err(ArenaError::UnsupportedValue {
                    field: format!("adversaries[{i}].class"),
                    value: adversary.class.clone(),
                    allowed:
                        "prompt-injection, capability-overrequest, replay-attempt, scope-escape",
                });
            }
            check_id(
                &adversary.population,
                format!("adversaries[{i}].population"),
            )?;
            if let Some(params) = &adversary.params {
                table_to_json(params, &format!("adversaries[{i}].params"))?;
            }
            // Class parameters are checked here, at load, naming the parameter.
            let servers: Vec<String> = self.file.servers.iter().map(|s| s.id.clone()).collect();
            crate::adversaries::resolve_block(i, adversary, &servers)?;
        }
        check_unique(
            "population",
            list.iter().enumerate().map(|(i, a)| {
                (
                    a.population.as_str(),
                    format!("adversaries[{i}].population"),
                )
            }),
        )?;
        Ok(())
    }
}
