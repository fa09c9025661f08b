//! The actions `--from-trace` promotes and re-evaluates, read from an
//! evolve trace that is not taken on its word.
//!
//! A trace is a file anyone can edit: its records' results (`survived`,
//! `defeated`) are signed by nothing the trace keeps. So promotion takes
//! from it only which actions were tried, and re-decides each one:
//!
//! - **Every recorded action is rebuilt**, not only those recorded as
//!   escapes: from the trace's population (gene, operator sequence, goal)
//!   in the scenario given to `promote`, each once, in trace order. A trace
//!   with an action that scenario cannot rebuild (its population not listed
//!   in its generation, or the scenario's populations and steps do not make
//!   it: a search of another scenario) is refused (`CHIO-ARENA-PROMOTE-TRACE`).
//! - **A trace of the scenario given is searched again.** When the scenario
//!   given is the one the trace searched (its id and file SHA-256), the
//!   search is deterministic in the scenario and the configuration the
//!   trace records, so it is run again (`arena evolve`'s path, embedded,
//!   every generation the trace lists) and every generation must be the
//!   recorded one: the populations bred, the samples ranked and each
//!   action's verdict and result. A trace whose recorded result for an
//!   action is not what re-evaluating it gives, escapes rewritten as
//!   defeats with the counts made consistent among them, is refused as not
//!   a genuine search, naming the first record that differs. Against
//!   another scenario (the fixed twin) the results may differ by design,
//!   and only the re-evaluation below judges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use chio_adversary::action::AdversaryAction;
use chio_adversary::{
    actions_for, ActionResult, AdversaryPopulation, EvolveConfig, GenerationRecord,
};
use chio_arena::{ArenaError, Scenario};
use serde::Deserialize;

use super::{arena_error, COMMAND};
use crate::error::{codes, CliError};

/// The part of an evolve trace promotion reads.
#[derive(Deserialize)]
pub(super) struct TraceFile {
    /// The scenario the search ran, named when an action cannot be rebuilt.
    pub(super) scenario_id: String,
    /// The SHA-256 of the scenario file it searched.
    pub(super) scenario_sha256: String,
    /// The configuration it ran with; absent in a trace written before the
    /// trace recorded it, which is then not searched again.
    #[serde(default)]
    pub(super) config: Option<EvolveConfig>,
    /// Its generation records.
    pub(super) generations: Vec<GenerationRecord>,
}

/// What refusing a trace with an action not rebuilt spares.
const UNSAID: &str = "no action of it is dropped unsaid";

/// One action of the trace, rebuilt in the scenario given.
pub(super) struct TraceAction {
    /// The action.
    pub(super) action: AdversaryAction,
    /// Whether the trace records it as an escape (`survived`): only those
    /// become regression cases.
    pub(super) recorded_escape: bool,
}

/// Reads `path` as an evolve trace.
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
    serde_json::from_str(&text).map_err(|e| {
        unreadable(format!(
            "not an evolve trace ({e}); pass the evolve-trace.json chio arena evolve wrote"
        ))
    })
}

/// The refusal of a trace: `why` it is not a search `scenario` can stand
/// behind, and what refusing it spares (`spared`).
fn refused(
    path: &Path,
    trace: &TraceFile,
    scenario: &Scenario,
    (why, spared): (String, &str),
) -> CliError {
    CliError::new(
        codes::PROMOTE_TRACE,
        COMMAND,
        format!(
            "{} is a search of scenario {:?} (scenario file SHA-256 {}), and {why} in {:?} ({}); {spared}, so nothing was written",
            path.display(),
            trace.scenario_id,
            trace.scenario_sha256,
            scenario.id(),
            scenario.text().sha256()
        ),
        "promote a trace as `chio arena evolve` wrote it, against the scenario it searched or its fixed twin that keeps its populations and steps",
    )
}

/// Every action the trace at `path` records, rebuilt in `scenario` (the
/// file `file`), in trace order, each once; `lineages` narrows them when
/// not empty. A trace of `scenario` itself is searched again first, and
/// refused unless it is what the search gives (see the module doc).
pub(super) fn trace_actions(
    scenario: &Scenario,
    file: &Path,
    path: &Path,
    lineages: &[String],
) -> Result<Vec<TraceAction>, CliError> {
    let trace = read_trace(path)?;
    let searched =
        trace.scenario_id == scenario.id() && trace.scenario_sha256 == scenario.text().sha256();
    if let (true, Some(config), false) = (searched, trace.config, trace.generations.is_empty()) {
        let config = EvolveConfig {
            generations: trace.generations.len() as u32,
            ..config
        };
        let again = crate::arena_evolve::search_again(COMMAND, file, &config)?;
        if let Some(why) = first_disagreement(&trace.generations, &again.trace) {
            let why = format!("it is not the search that scenario gives: {why}");
            let spared = "a trace whose results are not its search's is no search to promote";
            return Err(refused(path, &trace, scenario, (why, spared)));
        }
    }
    rebuild(scenario, path, &trace, lineages)
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
                    return Err(refused(path, trace, scenario, (why, UNSAID)));
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
                    return Err(refused(path, trace, scenario, (why, UNSAID)));
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
/// search gives again: a generation, a sample, an action's record, or the
/// populations bred.
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
    None
}
