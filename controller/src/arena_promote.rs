//! `chio arena promote FILE --to fixtures|adversarial-suite [--step ID]... [--population NAME]... [--cap N] [--out DIR] [--json] [--from-trace PATH [--searched FILE]]`.
//!
//! Order of work: load the scenario; refuse a `--step` that is not a call
//! step the adversaries act on, or a `--population` the scenario does not
//! declare (exit 2, nothing written); for `--to fixtures`, check the bless
//! gate (`CHIO_BLESS=1`, `BLESS_REASON=arena:<scenario-id>`, `CI` unset or
//! falsy) before evaluating anything; evaluate each declared population's
//! round-0 actions on the chosen steps, each action alone in a fresh world
//! (so a replay of the case reproduces it byte for byte); keep Deny
//! outcomes for fixtures (at most `--cap`, default 5, in population, member
//! and step order) or Deny and Rewrite outcomes for the adversarial suite;
//! write them as canonical JSON under the output root (default
//! `promoted/` next to the scenario): `fixtures/` holds
//! `chio.arena.fixture/v1` descriptors, `adversarial-suite/<class>/` holds
//! `chio.arena.adversarial-case/v1` cases. Each case names its scenario by
//! a path relative to its own folder.
//!
//! With `--from-trace PATH` (an `evolve-trace.json` written by
//! `chio arena evolve`) the actions promoted are instead the escapes the
//! search found, and the trace is not taken on its word (`trace`): its
//! search is run again against the scenario it searched (FILE when it is
//! that scenario byte for byte, else the file given as `--searched`) with
//! the configuration it records, and the trace is refused unless it is
//! what that search gives; then every action the trace records, whatever
//! its recorded result, is rebuilt from the trace's population (gene,
//! operator sequence, goal) in FILE and evaluated alone there. That is how
//! an escape becomes a regression case once the guard is fixed: run the
//! search against the weak pipeline, fix it, promote the trace against the
//! fixed one with `--searched` naming the weak one. Each action recorded
//! as an escape that the fixed pipeline now stops is written; every action
//! it still admits and whose goal counts as an escape (recorded as one or
//! not) is not written but counted as `still_escaping`, and the command
//! then fails (`CHIO-ARENA-PROMOTE-STILL-ESCAPING`, exit 1): the fix did
//! not hold. A trace that cannot be searched again (no configuration, no
//! generation, more generations than its configuration runs or fewer
//! without a recorded stop of its wall budget, another
//! scenario than FILE without `--searched`, or a `--searched` that is not
//! the scenario it names), one that is not what its search gives when run
//! again (a result edited), or one with an action FILE cannot rebuild is
//! refused before anything is evaluated (`CHIO-ARENA-PROMOTE-TRACE`, exit
//! 2), naming the trace's scenario and digest.
//!
//! FILE itself must meet its own steps (`own_steps`): a run of it where a
//! step does not get what it expects (a twin that refuses the very calls
//! the adversaries mutate) is refused before anything is evaluated
//! (`CHIO-ARENA-PROMOTE-SCENARIO-FAILS`, exit 2), naming the step, its
//! expected and its observed outcome.

use std::io::Write;
use std::path::{Component, Path};

use chio_adversary::action::base_steps;
use chio_adversary::fitness::ActionEvaluator;
use chio_adversary::{
    actions_for, populations_from_scenario, ActionResult, AdversaryPopulation, PromotedCase,
    PromotionGate, ARENA_PROMOTE_CAP_DEFAULT,
};
use chio_arena::{load_scenario, ArenaError, Scenario};
use chio_node::evaluator::KernelActionEvaluator;
use serde::Serialize;

use trace::{trace_actions, Scenarios, TraceAction};

use crate::cli::arena::{PromoteArgs, PromoteTarget};
use crate::error::{codes, CliError};

mod own_steps;
mod trace;

const COMMAND: &str = "arena promote";
/// The schema of the `--json` report.
pub const PROMOTE_SCHEMA_VERSION: &str = "chio.arena.promote/v1";
/// The largest `--cap` accepted.
pub const MAX_PROMOTE_CAP: usize = 50;

#[derive(Serialize)]
struct PromoteReport<'a> {
    schema_version: &'static str,
    scenario_id: &'a str,
    target: PromoteTarget,
    written: Vec<String>,
    skipped_by_cap: usize,
    not_eligible: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    still_escaping: Option<usize>,
    /// With `--from-trace`: the trace's actions evaluated again, whatever
    /// their recorded result.
    #[serde(skip_serializing_if = "Option::is_none")]
    re_evaluated: Option<usize>,
}

fn arena_error(err: &ArenaError) -> CliError {
    CliError::from_arena(COMMAND, err)
}

/// `to` relative to the directory `from`; both must exist.
fn relative_to(from: &Path, to: &Path) -> Result<String, CliError> {
    let from = from
        .canonicalize()
        .map_err(|e| CliError::write_failed(COMMAND, from, &e))?;
    let to = to
        .canonicalize()
        .map_err(|e| CliError::write_failed(COMMAND, to, &e))?;
    let a: Vec<Component> = from.components().collect();
    let b: Vec<Component> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_string(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    Ok(parts.join("/"))
}

/// Runs the command, printing to `out`: load and check the arguments, pass
/// the bless gate, evaluate each action alone, write the cases, report.
pub fn run(args: &PromoteArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let scenario = load_scenario(&args.file)
        .map_err(|e| CliError::from_scenario_file(COMMAND, &args.file, &e))?;
    let populations = selected_populations(args, &scenario)?;
    if args.target == PromoteTarget::Fixtures {
        PromotionGate::from_env()
            .check(scenario.id())
            .map_err(|e| arena_error(&e))?;
    }
    own_steps::check(&args.file)?;
    let mut evaluator =
        KernelActionEvaluator::load(&scenario).map_err(|e| CliError::node(COMMAND, &e))?;
    let root = args
        .out
        .clone()
        .unwrap_or_else(|| scenario.base_dir().join("promoted"));
    let actions: Vec<TraceAction> = match &args.from_trace {
        Some(path) => {
            let scenarios = Scenarios {
                given: &scenario,
                file: &args.file,
                searched: args.searched.as_deref(),
            };
            trace_actions(&scenarios, path, &args.populations)?
        }
        None => {
            let mut all = Vec::new();
            for population in &populations {
                let made = actions_for(&scenario, population, 0).map_err(|e| arena_error(&e))?;
                all.extend(made.into_iter().map(|action| TraceAction {
                    action,
                    recorded_escape: true,
                }));
            }
            all
        }
    };
    let evaluated = evaluate_actions(args, &scenario, &mut evaluator, actions)?;
    let mut cases = evaluated.cases;
    let mut skipped_by_cap = 0;
    if args.target == PromoteTarget::Fixtures && cases.len() > args.cap {
        skipped_by_cap = cases.len() - args.cap;
        cases.truncate(args.cap);
    }
    let written = write_cases(args, &root, cases)?;
    let report = PromoteReport {
        schema_version: PROMOTE_SCHEMA_VERSION,
        scenario_id: scenario.id(),
        target: args.target,
        written,
        skipped_by_cap,
        not_eligible: evaluated.not_eligible,
        still_escaping: args.from_trace.as_ref().map(|_| evaluated.still_escaping),
        re_evaluated: args.from_trace.as_ref().map(|_| evaluated.evaluated),
    };
    print_report(args.json, &report, out)?;
    match report.still_escaping {
        Some(left) if left > 0 => Err(CliError::new(
            codes::PROMOTE_STILL_ESCAPING,
            COMMAND,
            format!(
                "{left} action(s) of the trace still escape {}: it admits them and their goals are reached, so the fix did not hold, and they were not written",
                args.file.display()
            ),
            "fix the pipeline (the escapes' causes are in the search's leaderboard) and promote the trace again",
        )),
        _ => Ok(()),
    }
}

/// Checks `--cap`, `--step` and `--population` against the scenario and
/// answers the populations to promote from.
fn selected_populations(
    args: &PromoteArgs,
    scenario: &Scenario,
) -> Result<Vec<AdversaryPopulation>, CliError> {
    if args.cap == 0 || args.cap > MAX_PROMOTE_CAP {
        return Err(CliError::new(
            codes::FLAG_OUT_OF_RANGE,
            COMMAND,
            format!("--cap must be between 1 and {MAX_PROMOTE_CAP}"),
            format!("pass --cap {ARENA_PROMOTE_CAP_DEFAULT} or another value from 1 to {MAX_PROMOTE_CAP}"),
        ));
    }
    let bases = base_steps(scenario).map_err(|e| arena_error(&e))?;
    if let Some(step) = args
        .steps
        .iter()
        .find(|s| !bases.iter().any(|b| &&b.step_id == s))
    {
        return Err(arena_error(&ArenaError::UnknownStep { step: step.clone() }));
    }
    let mut populations = populations_from_scenario(scenario).map_err(|e| arena_error(&e))?;
    if populations.is_empty() {
        return Err(arena_error(&ArenaError::NoAdversaries));
    }
    if let Some(name) = args
        .populations
        .iter()
        .find(|n| !populations.iter().any(|p| &&p.name == n))
    {
        return Err(arena_error(&ArenaError::UndeclaredReference {
            kind: "population",
            id: name.clone(),
            field: "--population".to_string(),
        }));
    }
    if !args.populations.is_empty() {
        populations.retain(|p| args.populations.contains(&p.name));
    }
    Ok(populations)
}

/// The cases the evaluated actions yield, and how many were not eligible.
struct Evaluated {
    /// Eligible cases, in action order.
    cases: Vec<PromotedCase>,
    /// Promotable actions whose outcome the target does not keep.
    not_eligible: usize,
    /// Actions the kernel still admits with their goal reached: escapes.
    still_escaping: usize,
    /// Actions evaluated.
    evaluated: usize,
}

/// Evaluates each action on the chosen steps alone, counts every one that
/// still escapes, and keeps the outcomes the target promotes of the
/// promotable ones (a trace's recorded escapes).
fn evaluate_actions(
    args: &PromoteArgs,
    scenario: &Scenario,
    evaluator: &mut KernelActionEvaluator,
    actions: Vec<TraceAction>,
) -> Result<Evaluated, CliError> {
    let mut cases: Vec<PromotedCase> = Vec::new();
    let mut not_eligible = 0;
    let mut still_escaping = 0;
    let mut evaluated = 0;
    for TraceAction {
        action,
        recorded_escape,
    } in actions
    {
        if !args.steps.is_empty() && !args.steps.contains(&action.base_step) {
            continue;
        }
        evaluated += 1;
        let outcome = evaluator
            .evaluate_batch(std::slice::from_ref(&action))
            .map_err(|e| arena_error(&e))?
            .into_iter()
            .next()
            .ok_or_else(|| {
                arena_error(&ArenaError::Evaluation {
                    cause: "the evaluator returned no outcome".to_string(),
                })
            })?;
        // An escape still admitted is never written, whatever the trace
        // recorded of it.
        let escapes = ActionResult::score(&action, &outcome) == ActionResult::Survived;
        if escapes {
            still_escaping += 1;
        }
        if !recorded_escape {
            continue;
        }
        let case = match args.target {
            _ if escapes && args.from_trace.is_some() => None,
            PromoteTarget::Fixtures => PromotedCase::fixture(scenario.id(), "", &action, &outcome),
            PromoteTarget::AdversarialSuite => {
                PromotedCase::adversarial(scenario.id(), "", &action, &outcome)
            }
        };
        match case {
            Some(case) => cases.push(case),
            None => not_eligible += 1,
        }
    }
    Ok(Evaluated {
        cases,
        not_eligible,
        still_escaping,
        evaluated,
    })
}

/// Writes each case as canonical JSON in its target folder, naming its
/// scenario relative to that folder; answers the paths written.
fn write_cases(
    args: &PromoteArgs,
    root: &Path,
    cases: Vec<PromotedCase>,
) -> Result<Vec<String>, CliError> {
    let scenario_file = args.file.clone();
    let mut written = Vec::new();
    for mut case in cases {
        let dir = match args.target {
            PromoteTarget::Fixtures => root.join("fixtures"),
            PromoteTarget::AdversarialSuite => {
                root.join("adversarial-suite").join(case.class.as_str())
            }
        };
        std::fs::create_dir_all(root).map_err(|e| CliError::write_failed(COMMAND, root, &e))?;
        let path = dir.join(case.file_name());
        // `fixtures/` and `adversarial-suite/<class>/` are real folders,
        // never a link followed out of the output root.
        chio_arena::output::make_folders(root, &path)
            .map_err(|e| CliError::from_arena(COMMAND, &e.output_error(&path)))?;
        case.scenario = relative_to(&dir, &scenario_file)?;
        let bytes = CliError::canonical_line(COMMAND, &case)?;
        chio_arena::output::write_whole(&path, bytes.as_bytes(), ".chio-promote-")
            .map_err(|e| CliError::from_arena(COMMAND, &e.output_error(&path)))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// Prints the report, as canonical JSON with `--json`.
fn print_report(
    json: bool,
    report: &PromoteReport<'_>,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let text = if json {
        CliError::json_document(COMMAND, report)?
    } else {
        let still = match (report.still_escaping, report.re_evaluated) {
            (Some(n), Some(all)) => {
                format!(", {all} action(s) of the trace evaluated again, {n} still escaping")
            }
            _ => String::new(),
        };
        let mut s = format!(
            "promoted {} case(s) of {} ({} over the cap, {} not eligible{still})\n",
            report.written.len(),
            report.scenario_id,
            report.skipped_by_cap,
            report.not_eligible
        );
        for path in &report.written {
            s.push_str(&format!("  {path}\n"));
        }
        s
    };
    CliError::print(COMMAND, out, text.as_bytes())
}
