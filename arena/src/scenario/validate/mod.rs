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
//! - [`faults`]: fault steps' keys and the order faults may come in.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::load::{parse_step_table, Parsed};
use super::{Action, Scenario, SCENARIO_SCHEMA_VERSION};
use crate::clock::{VirtualClock, DEFAULT_TICK_MS};
use crate::error::ArenaError;
use crate::fixtures::{FixtureFiles, FixtureSet};
use crate::model::{ScenarioFile, StepDecl};
use crate::scheduler::{
    DeterministicScheduler, ScheduleInput, ScheduledAction, SchedulerKind, MAX_OFFSET_MS,
};

mod checks;
mod faults;
mod schedule;
mod steps;
mod world;

pub use checks::is_valid_id;
use checks::{check_id, check_unique, declared_ids, table_to_json};
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
    actions: Vec<Action>,
    schedule: Vec<ScheduledAction>,
    fixtures: FixtureSet,
}

/// A step's `arguments` as validation receives them: the TOML table as
/// parsed, or the JSON object the loader already converted it to. The
/// loader converts each step table's arguments as it parses that table, so
/// a long schedule never holds the TOML tree (hundreds of bytes per call
/// step) beside the JSON; a conversion it refuses sends the file through
/// the whole parse, whose validation reports the refusal in stage order.
pub(crate) enum StepArguments {
    /// Not converted yet: validation converts it when it builds the call.
    Toml(toml::Table),
    /// Converted by the loader, with the same rules ([`arguments_json`]).
    Json(serde_json::Value),
}

/// Converts one step's `arguments` table to its JSON object; `field` names
/// the table in an error (`steps[3].arguments`).
pub(crate) fn arguments_json(
    table: &toml::Table,
    field: &str,
) -> Result<serde_json::Value, ArenaError> {
    checks::table_to_json(table, field)
}

/// One validation of one parsed file.
struct Validator<'a> {
    file: &'a ScenarioFile,
    /// Each step's table, for the steps whose head holds no declaration.
    tables: &'a [&'a str],
    fixtures: FixtureSource<'a>,
    /// The file's world only: the steps were not parsed (a node's load).
    world_only: bool,
    /// Each step's `arguments`, moved out of the file (which keeps an empty
    /// table where they were written, for the key checks) and taken one by
    /// one as each call's action is built, so a long schedule never holds
    /// its arguments twice.
    arguments: RefCell<Vec<Option<StepArguments>>>,
}

impl<'a> Validator<'a> {
    /// Step `index`'s whole declaration: the one its head holds, or its
    /// table parsed again (the loader parsed and checked that table before
    /// and kept only the head, so it parses the same way).
    fn decl(&self, index: usize) -> Result<Cow<'a, StepDecl>, ArenaError> {
        let held = self.file.steps.get(index).and_then(|s| s.decl.as_deref());
        if let Some(decl) = held {
            return Ok(Cow::Borrowed(decl));
        }
        self.tables
            .get(index)
            .and_then(|table| parse_step_table(table))
            .map(Cow::Owned)
            .ok_or_else(|| ArenaError::Syntax {
                line: 0,
                column: 0,
                reason: format!("steps[{index}] could not be parsed again from its table"),
            })
    }

    /// Step `index`'s arguments, taken: each is converted once.
    fn take_arguments(&self, index: usize) -> Option<StepArguments> {
        self.arguments
            .borrow_mut()
            .get_mut(index)
            .and_then(Option::take)
    }
}

/// Validates a parsed file (stages 4 to 8) and builds the scenario;
/// `base_dir` is recorded, never read. A step whose head holds no
/// declaration is parsed again from its table when its turn comes, and its
/// `arguments` are the ones the loader converted.
pub(crate) fn validate(
    parsed: Parsed<'_>,
    base_dir: &Path,
    fixtures: FixtureSource<'_>,
) -> Result<Scenario, ArenaError> {
    let Parsed {
        file,
        converted,
        tables,
    } = parsed;
    validate_as(file, converted, &tables, base_dir, fixtures, false)
}

/// Validates the world of a parsed file (stages 4 to 6) whose steps were
/// left unparsed: the scenario it builds has no actions and no schedule.
pub(crate) fn validate_world(
    file: ScenarioFile,
    base_dir: &Path,
    fixtures: FixtureSource<'_>,
) -> Result<Scenario, ArenaError> {
    validate_as(file, Vec::new(), &[], base_dir, fixtures, true)
}

fn validate_as(
    mut file: ScenarioFile,
    mut converted: Vec<Option<serde_json::Value>>,
    tables: &[&str],
    base_dir: &Path,
    fixtures: FixtureSource<'_>,
    world_only: bool,
) -> Result<Scenario, ArenaError> {
    let arguments = file
        .steps
        .iter_mut()
        .enumerate()
        .map(|(i, step)| {
            let json = converted.get_mut(i).and_then(Option::take);
            match json {
                Some(json) => Some(StepArguments::Json(json)),
                None => step
                    .decl
                    .as_mut()
                    .and_then(|decl| decl.arguments.as_mut())
                    .map(std::mem::take)
                    .map(StepArguments::Toml),
            }
        })
        .collect();
    drop(converted);
    let resolved = Validator {
        file: &file,
        tables,
        fixtures,
        world_only,
        arguments: RefCell::new(arguments),
    }
    .run()?;
    // Each call's typed action carries what its declaration said; a
    // validated scenario keeps only the heads.
    for step in &mut file.steps {
        step.decl = None;
    }
    Ok(Scenario {
        file,
        base_dir: base_dir.to_path_buf(),
        scheduler: resolved.scheduler,
        tick_ms: resolved.tick_ms,
        clock: resolved.clock,
        has_world: resolved.has_world,
        actions: resolved.actions,
        schedule: resolved.schedule,
        fixtures: resolved.fixtures,
    })
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
        if f.steps.is_empty() && !self.world_only {
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
                actions: Vec::new(),
                schedule: Vec::new(),
                fixtures,
            });
        }
        let actions = self.steps(has_world)?;
        let inputs: Vec<ScheduleInput> = f
            .steps
            .iter()
            .map(|s| ScheduleInput {
                step_id: &s.id,
                agent_id: &s.agent,
                at: s.at,
                advance_ms: s.advance_ms,
            })
            .collect();
        let schedule = DeterministicScheduler::new(scheduler, tick_ms)
            .with_start_ms(start_ms)
            .schedule(&inputs)?;
        drop(inputs);
        let actions = self.holdings(actions, &schedule, has_world, start_ms)?;
        self.messages(&actions, &schedule)?;
        self.fault_sequence(&actions, &schedule)?;
        self.adversaries()?;
        Ok(Resolved {
            scheduler,
            tick_ms,
            clock: clock.with_tick_ms(tick_ms),
            has_world,
            actions,
            schedule,
            fixtures,
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
            crate::adversary::population::population_from_block(i, adversary, &servers)?;
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
