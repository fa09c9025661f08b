//! The actions `--from-trace` promotes and re-evaluates, read from an
//! evolve trace that is not taken on its word.
//!
//! A trace is a file anyone can edit: its records' results (`survived`,
//! `defeated`), its scenario's id and digest, its configuration and its
//! counts are signed by nothing the trace keeps. So no field of it decides
//! whether it is checked: every trace promoted is first searched again,
//! and promotion then takes from it only which actions were tried, and
//! re-decides each one:
//!
//! - **Every trace is searched again.** The search is deterministic in the
//!   scenario and the configuration the trace records, so it is run again
//!   (`arena evolve`'s path, embedded, every generation the trace lists)
//!   against the scenario the trace searched, and every generation must be
//!   the recorded one: the populations bred, the samples ranked, each
//!   action's verdict and result, and the generation's figures. That
//!   scenario is FILE when it is, byte for byte, the one the trace names
//!   (its id and file SHA-256); when FILE is another (the fixed twin), it
//!   is the file given as `--searched`, whose id, digest and seed must be
//!   the trace's. A trace that cannot be searched again is refused
//!   (`CHIO-ARENA-PROMOTE-TRACE`): one without its configuration, one that
//!   lists no generation, more than its configuration runs, another number
//!   than its `generations_completed` says, or fewer than its configuration
//!   runs without recording that its wall budget stopped it (`stopped_by`),
//!   and one of another scenario than FILE without `--searched`. A trace
//!   that records the stop is searched again for exactly the generations
//!   it lists. A trace whose recorded result for an
//!   action is not what re-evaluating it gives (escapes rewritten as
//!   defeats with the counts made consistent among them, a record removed)
//!   is refused as not a genuine search, naming the first record that
//!   differs.
//! - **Every recorded action is rebuilt**, not only those recorded as
//!   escapes: from the trace's population (gene, operator sequence, goal)
//!   in FILE, each once, in trace order. A trace with an action FILE
//!   cannot rebuild (its population not listed in its generation, or FILE's
//!   populations and steps do not make it: a twin that is no twin) is
//!   refused. Against the fixed twin the results differ by design; the
//!   caller re-evaluates every rebuilt action there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use chio_adversary::action::AdversaryAction;
use chio_adversary::{
    actions_for, ActionResult, AdversaryPopulation, EvolveConfig, GenerationRecord, TRACE_SCHEMA,
};
use chio_arena::{ArenaError, Scenario};
use serde::Deserialize;

use super::{arena_error, COMMAND};
use crate::error::{codes, CliError};

/// The part of an evolve trace promotion reads.
#[derive(Deserialize)]
pub(super) struct TraceFile {
    /// Always [`TRACE_SCHEMA`].
    pub(super) schema_version: String,
    /// The scenario the search ran, by id: the scenario searched again
    /// must have it.
    pub(super) scenario_id: String,
    /// Its seed: the scenario searched again must declare it.
    pub(super) rng_seed: u64,
    /// The SHA-256 of the scenario file it searched: the scenario searched
    /// again must hash to it.
    pub(super) scenario_sha256: String,
    /// The configuration it ran with; absent in a trace written before the
    /// trace recorded it, which cannot be searched again and is refused.
    #[serde(default)]
    pub(super) config: Option<EvolveConfig>,
    /// The generations it says it completed: the ones it lists.
    pub(super) generations_completed: u32,
    /// `wall-budget` when the wall budget stopped the search before the
    /// generations its configuration runs; absent when it ran them all.
    #[serde(default)]
    pub(super) stopped_by: Option<String>,
    /// Its generation records.
    pub(super) generations: Vec<GenerationRecord>,
}

/// What refusing a trace with an action not rebuilt spares.
const UNSAID: &str = "no action of it is dropped unsaid";

/// What refusing a trace that cannot be searched again spares.
const UNCHECKED: &str = "a trace not searched again would be taken on its word";

/// How to get a trace that can be searched again.
const EVOLVE_AGAIN: &str = "run `chio arena evolve` again to write a trace that records its configuration and every generation it ran, and promote that trace";

/// One action of the trace, rebuilt in the scenario given.
pub(super) struct TraceAction {
    /// The action.
    pub(super) action: AdversaryAction,
    /// Whether the trace records it as an escape (`survived`): only those
    /// become regression cases.
    pub(super) recorded_escape: bool,
}

/// The scenario files `promote --from-trace` is given.
pub(super) struct Scenarios<'a> {
    /// FILE, loaded: the actions are rebuilt and evaluated in it.
    pub(super) given: &'a Scenario,
    /// FILE's path.
    pub(super) file: &'a Path,
    /// `--searched`: the scenario the trace searched, needed when FILE is
    /// another (its fixed twin).
    pub(super) searched: Option<&'a Path>,
}

/// Reads `path` as an evolve trace of this schema.
fn read_trace(path: &Path) -> Result<TraceFile, CliError> {
    let unreadable = |reason: String| {
        arena_error(&ArenaError::Unreadable {
            path: path.display().to_string(),
            reason,
        })
    };
    let bytes = chio_arena::files::read_named(path, chio_arena::bundle::MAX_FILE_BYTES)
        .map_err(|e| unreadable(e.describe("an evolve trace")))?;
    let text = String::from_utf8(bytes).map_err(|_| unreadable("not UTF-8 text".to_string()))?;
    let trace: TraceFile = serde_json::from_str(&text).map_err(|e| {
        unreadable(format!(
            "not an evolve trace ({e}); pass the evolve-trace.json chio arena evolve wrote"
        ))
    })?;
    if trace.schema_version != TRACE_SCHEMA {
        return Err(unreadable(format!(
            "its schema {:?} is not {TRACE_SCHEMA}; pass the evolve-trace.json chio arena evolve wrote",
            trace.schema_version
        )));
    }
    Ok(trace)
}

/// The refusal of the trace at `path`: `why` it is not a search promotion
/// can stand behind, what refusing it spares (`spared`), and `help`.
fn refusal(path: &Path, trace: &TraceFile, (why, spared): (String, &str), help: &str) -> CliError {
    CliError::new(
        codes::PROMOTE_TRACE,
        COMMAND,
        format!(
            "{} is a search of scenario {:?} (scenario file SHA-256 {}), and {why}; {spared}, so nothing was written",
            path.display(),
            trace.scenario_id,
            trace.scenario_sha256,
        ),
        help,
    )
}

/// The refusal of a trace with an action `scenario` cannot rebuild.
fn refused(path: &Path, trace: &TraceFile, scenario: &Scenario, why: String) -> CliError {
    let why = format!(
        "{why} in {:?} ({})",
        scenario.id(),
        scenario.text().sha256()
    );
    refusal(
        path,
        trace,
        (why, UNSAID),
        "promote a trace as `chio arena evolve` wrote it, against the scenario it searched or, with --searched naming that scenario, its fixed twin that keeps its populations and steps",
    )
}

/// Every action the trace at `path` records, rebuilt in the scenario
/// given, in trace order, each once; `lineages` narrows them when not
/// empty. The trace is searched again first, and refused unless it is
/// what the search gives (see the module doc).
pub(super) fn trace_actions(
    scenarios: &Scenarios<'_>,
    path: &Path,
    lineages: &[String],
) -> Result<Vec<TraceAction>, CliError> {
    let trace = read_trace(path)?;
    let config = searchable(path, &trace)?;
    let searched = searched_file(scenarios, path, &trace)?;
    let admit = |scenario: &Scenario| same_search(path, &trace, searched, scenario);
    let again = crate::arena_evolve::search_again(COMMAND, searched, &config, &admit)?;
    if let Some(why) = first_disagreement(&trace.generations, &again.trace) {
        let why = format!(
            "it is not the search that scenario gives: {why} (searched again from {})",
            searched.display()
        );
        let spared = "a trace whose results are not its search's is no search to promote";
        return Err(refusal(
            path,
            &trace,
            (why, spared),
            "promote a trace as `chio arena evolve` wrote it, with the scenario it searched",
        ));
    }
    rebuild(scenarios.given, path, &trace, lineages)
}

/// The configuration to search the trace again with, once the trace
/// records one and lists every generation it runs, or records that its
/// wall budget stopped it (`stopped_by`) and lists fewer: the search is
/// then run again for exactly the generations listed (generation k of a
/// search does not depend on how many it was configured to run). Never a
/// trace whose own fields would spare it the search, and never a shortfall
/// the trace does not record.
fn searchable(path: &Path, trace: &TraceFile) -> Result<EvolveConfig, CliError> {
    let listed = trace.generations.len();
    let stopped = trace.stopped_by.as_deref();
    let why = match (&trace.config, stopped) {
        (None, _) => "it records no configuration (`config`), so its search cannot be run again to check its results".to_string(),
        (Some(_), _) if listed == 0 => "it lists no generation".to_string(),
        (Some(_), _) if trace.generations_completed as usize != listed => format!(
            "its generations_completed is {}, but it lists {listed} generation(s)",
            trace.generations_completed
        ),
        (Some(_), Some(by)) if by != crate::arena_evolve::WALL_BUDGET => format!(
            "it records a stop by {by:?}, which no search writes"
        ),
        (Some(config), _) if config.generations as usize == listed => {
            return Ok(*config)
        }
        (Some(config), Some(_)) if (config.generations as usize) > listed => {
            let mut config = *config;
            config.generations = trace.generations_completed;
            return Ok(config);
        }
        (Some(config), None) if (config.generations as usize) > listed => format!(
            "its configuration runs {} generation(s), but it lists {listed} and records no stop (`stopped_by`): generations cut from a trace are not a search its wall budget stopped",
            config.generations
        ),
        (Some(config), _) => format!(
            "its configuration runs {} generation(s), but it lists {listed}",
            config.generations
        ),
    };
    let help = match trace.config {
        Some(_) if listed > 0 => format!(
            "{EVOLVE_AGAIN} (a search its wall budget stopped records it; run it again with --generations {listed} or a longer --wall-seconds)"
        ),
        _ => EVOLVE_AGAIN.to_string(),
    };
    Err(refusal(path, trace, (why, UNCHECKED), &help))
}

/// The file holding the scenario the trace searched: FILE when it is that
/// scenario byte for byte, else `--searched`; refused when neither is
/// given.
fn searched_file<'a>(
    scenarios: &Scenarios<'a>,
    path: &Path,
    trace: &TraceFile,
) -> Result<&'a Path, CliError> {
    let given = scenarios.given;
    let is_searched =
        given.id() == trace.scenario_id && given.text().sha256() == trace.scenario_sha256;
    match scenarios.searched {
        Some(file) => Ok(file),
        None if is_searched => Ok(scenarios.file),
        None => {
            let why = format!(
                "{} is another scenario ({:?}, SHA-256 {}), so its search cannot be run again without the scenario it searched",
                scenarios.file.display(),
                given.id(),
                given.text().sha256()
            );
            Err(refusal(
                path,
                trace,
                (why, UNCHECKED),
                "give the scenario the trace searched with --searched FILE (the file `chio arena evolve` searched, byte for byte) to promote its escapes against its fixed twin",
            ))
        }
    }
}

/// Refuses `scenario` (read from `file`, to be searched again) unless it
/// is the one the trace searched: its id, file SHA-256 and seed.
fn same_search(
    path: &Path,
    trace: &TraceFile,
    file: &Path,
    scenario: &Scenario,
) -> Result<(), CliError> {
    let seed = scenario.file().rng_seed;
    let why = if scenario.id() != trace.scenario_id
        || scenario.text().sha256() != trace.scenario_sha256
    {
        format!(
            "{} is scenario {:?} (SHA-256 {}), not the scenario it searched",
            file.display(),
            scenario.id(),
            scenario.text().sha256()
        )
    } else if trace.rng_seed != seed {
        format!(
            "its rng_seed is {}, but the scenario it searched ({}) declares {seed}",
            trace.rng_seed,
            file.display()
        )
    } else {
        return Ok(());
    };
    Err(refusal(
        path,
        trace,
        (why, UNCHECKED),
        "pass as --searched the scenario file `chio arena evolve` searched to write the trace, byte for byte, and the trace as it wrote it",
    ))
}

/// Rebuilds every recorded action of `trace` in `scenario`.
fn rebuild(
    scenario: &Scenario,
    path: &Path,
    trace: &TraceFile,
    lineages: &[String],
) -> Result<Vec<TraceAction>, CliError> {
    let mut built: BTreeMap<(String, u32), Vec<AdversaryAction>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for record in &trace.generations {
        for sample in &record.samples {
            if !lineages.is_empty() && !lineages.contains(&sample.lineage) {
                continue;
            }
            for action in sample
                .records
                .iter()
                .filter(|r| seen.insert(r.action.clone()))
            {
                let Some(population) = record
                    .populations
                    .iter()
                    .find(|p| p.name == sample.population)
                else {
                    let why = format!(
                        "its action {:?} comes from population {:?}, which generation {} does not list",
                        action.action, sample.population, record.generation
                    );
                    return Err(refused(path, trace, scenario, why));
                };
                let round = action
                    .action
                    .rsplit_once("/r")
                    .and_then(|(_, r)| r.parse::<u32>().ok())
                    .unwrap_or(0);
                let made = made_by(scenario, population, round, &mut built)?;
                let Some(rebuilt) = made.iter().find(|a| a.id == action.action) else {
                    let why = format!(
                        "its action {:?} (population {:?}, step {:?}) cannot be rebuilt",
                        action.action, sample.population, action.base_step
                    );
                    return Err(refused(path, trace, scenario, why));
                };
                out.push(TraceAction {
                    action: rebuilt.clone(),
                    recorded_escape: action.result == ActionResult::Survived,
                });
            }
        }
    }
    Ok(out)
}

/// The actions `population` takes in `round` of `scenario`, made once.
fn made_by<'a>(
    scenario: &Scenario,
    population: &AdversaryPopulation,
    round: u32,
    built: &'a mut BTreeMap<(String, u32), Vec<AdversaryAction>>,
) -> Result<&'a Vec<AdversaryAction>, CliError> {
    let key = (population.name.clone(), round);
    if !built.contains_key(&key) {
        let actions = actions_for(scenario, population, round).map_err(|e| arena_error(&e))?;
        built.insert(key.clone(), actions);
    }
    Ok(&built[&key])
}

/// The first place where the recorded generations are not the ones the
/// search gives again: a generation, a sample, an action's record, the
/// populations bred, or a generation's figures.
fn first_disagreement(recorded: &[GenerationRecord], again: &[GenerationRecord]) -> Option<String> {
    if recorded.len() != again.len() {
        return Some(format!(
            "it lists {} generation(s), the search gives {}",
            recorded.len(),
            again.len()
        ));
    }
    recorded
        .iter()
        .zip(again)
        .enumerate()
        .find_map(|(g, (a, b))| generation_disagreement(g, a, b))
}

fn generation_disagreement(g: usize, a: &GenerationRecord, b: &GenerationRecord) -> Option<String> {
    let at = format!("generations[{g}]");
    if a.populations != b.populations {
        return Some(format!(
            "{at}.populations are not the populations the search breeds"
        ));
    }
    if a.samples.len() != b.samples.len() {
        return Some(format!(
            "{at} records {} sample(s), the search gives {}",
            a.samples.len(),
            b.samples.len()
        ));
    }
    for (i, (x, y)) in a.samples.iter().zip(&b.samples).enumerate() {
        let at = format!("{at}.samples[{i}]");
        if x.population != y.population {
            return Some(format!(
                "{at} is population {:?}, the search ranks {:?} there",
                x.population, y.population
            ));
        }
        for (k, (r, q)) in x.records.iter().zip(&y.records).enumerate() {
            if r == q {
                continue;
            }
            let word = |v: serde_json::Result<serde_json::Value>| match v {
                Ok(serde_json::Value::String(word)) => word,
                _ => "?".to_string(),
            };
            let said = |r: &chio_adversary::ActionRecord| {
                format!(
                    "{} ({})",
                    word(serde_json::to_value(r.result)),
                    word(serde_json::to_value(r.actual))
                )
            };
            if r.action != q.action || (r.result, r.actual) == (q.result, q.actual) {
                return Some(format!(
                    "{at}.records[{k}] records action {:?} with another record (action, reason, guard, stage or receipt) than re-evaluating the search gives (action {:?})",
                    r.action, q.action
                ));
            }
            return Some(format!(
                "{at}.records[{k}] (action {:?}) records {}, re-evaluating it gives {}",
                r.action,
                said(r),
                said(q)
            ));
        }
        if x != y {
            return Some(format!(
                "{at} (population {:?}) records {} action(s) and {} survival(s), the search gives {} and {}",
                x.population,
                x.records.len(),
                x.survivals,
                y.records.len(),
                y.survivals
            ));
        }
    }
    (a != b).then(|| {
        format!(
            "{at} records other figures (its index, best population, fitness, escapes, new actions or novel outcomes) than the search gives"
        )
    })
}
