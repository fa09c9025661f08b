//! `chio arena evolve FILE [--generations N] [--population-size N] [--wall-seconds S] [--json] [--out DIR] [--sarif PATH] [--html FILE] [--topology local|FILE]`.
//!
//! Order of work: check both budget flags against the bounded-budget gate
//! (`MAX_ARENA_EVOLVE_GENERATIONS` and `MAX_ARENA_EVOLVE_WALL_SECONDS`, both
//! ends closed: 0 and over-cap are refused as `CHIO-CLI-FLAG-OUT-OF-RANGE`
//! before the file is even read), load the scenario, resolve its world for
//! the kernel evaluator (in process, or with `--topology` on node processes
//! that every batch reuses, `crate::cluster_worlds`), co-evolve its populations
//! (`chio_adversary::coevolution`), then write under the output root
//! (default `target/arena`) `leaderboard.json` (canonical,
//! `chio.arena.leaderboard/v2`, escapes grouped by cause), `leaderboard.md`, `evolve-trace.json` (the
//! generation trace, canonical: per generation every action's operator
//! sequence, stage and progress) and `survival.svg` (best and mean fitness,
//! best survival rate, the first escape marked), and print the summary.
//! `--population-size` (1 to 64, default 8) is how many populations each
//! declared lineage breeds per generation, unless its block says otherwise.
//!
//! The wall clock is read here and only here, for one purpose: after each
//! generation the budget check asks whether `--wall-seconds` have passed
//! and, if so, ends the run cleanly with the generations done (the summary
//! says `stopped_by: "wall-budget"`). No clock value reaches any file: the
//! files hold the generations done, which are a deterministic function of
//! the scenario and the flags whenever the budget is not hit. An
//! `indicatif` progress bar is drawn on standard error only when it is a
//! terminal, never with `--quiet` (`crate::term::progress_bar`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chio_adversary::chart::render_chart;
use chio_adversary::coevolution::DEFAULT_POPULATION_SIZE;
use chio_adversary::coevolution::{evolve_with, BudgetControl, EvolutionResult, GenerationRecord};
use chio_adversary::{EvolveConfig, Leaderboard, TRACE_SCHEMA};
use chio_arena::adversaries::MAX_POPULATION_SIZE;
use chio_arena::{ArenaError, Scenario};
use indicatif::ProgressBar;
use serde::Serialize;

use crate::arena_run::load_for_run;
use crate::cli::arena::{EvolveArgs, MAX_ARENA_EVOLVE_WALL_SECONDS};
use crate::cluster_worlds::evaluate_with_topology;
use crate::driver::RunInputs;
use crate::error::{codes, CliError};
use crate::report::{write_report, ReportKind};
use crate::term::progress_bar;

const COMMAND: &str = "arena evolve";

/// Most generations one evolve may run.
pub const MAX_ARENA_EVOLVE_GENERATIONS: u32 = 200;
/// The gate's name, as the summary prints it.
pub const BUDGET_GATE: &str = "bounded:200_generations_or_30_minutes";
/// The schema of the `--json` summary.
pub const EVOLVE_SCHEMA_VERSION: &str = "chio.arena.evolve/v1";
/// File names written under the output root.
pub const LEADERBOARD_JSON: &str = "leaderboard.json";
/// The Markdown leaderboard.
pub const LEADERBOARD_MD: &str = "leaderboard.md";
/// The generation trace.
pub const TRACE_FILE: &str = "evolve-trace.json";
/// The survival chart.
pub const CHART_FILE: &str = "survival.svg";

fn out_of_range(message: String, help: String) -> CliError {
    CliError::new(codes::FLAG_OUT_OF_RANGE, COMMAND, message, help)
}

/// The bounded-budget gate: both ends closed.
pub fn check_budget(generations: u32, wall_seconds: u64) -> Result<(), CliError> {
    if generations == 0 {
        return Err(out_of_range(
            "--generations must be at least 1".into(),
            format!("pass --generations between 1 and {MAX_ARENA_EVOLVE_GENERATIONS}"),
        ));
    }
    if generations > MAX_ARENA_EVOLVE_GENERATIONS {
        return Err(out_of_range(
            format!("--generations must be at most {MAX_ARENA_EVOLVE_GENERATIONS}"),
            format!("pass --generations {MAX_ARENA_EVOLVE_GENERATIONS} or fewer"),
        ));
    }
    if wall_seconds == 0 {
        return Err(out_of_range(
            "--wall-seconds must be at least 1".into(),
            format!("pass --wall-seconds between 1 and {MAX_ARENA_EVOLVE_WALL_SECONDS}"),
        ));
    }
    if wall_seconds > MAX_ARENA_EVOLVE_WALL_SECONDS {
        return Err(out_of_range(
            format!("--wall-seconds must be at most {MAX_ARENA_EVOLVE_WALL_SECONDS}"),
            format!("pass --wall-seconds {MAX_ARENA_EVOLVE_WALL_SECONDS} or fewer"),
        ));
    }
    Ok(())
}

/// The wall budget and the progress bar; see the module doc.
struct WallBudget {
    started: Instant,
    budget: Duration,
    bar: ProgressBar,
    hit: bool,
}

impl BudgetControl for WallBudget {
    fn after_generation(&mut self, record: &GenerationRecord) -> bool {
        self.bar.inc(1);
        if let Some(best) = &record.best_population {
            self.bar.set_message(format!("best {best}"));
        }
        self.hit = self.started.elapsed() >= self.budget;
        !self.hit
    }
}

#[derive(Serialize)]
struct EvolveSummary<'a> {
    budget_gate: &'static str,
    generations: u32,
    leaderboard_dir: String,
    scenario_id: &'a str,
    schema_version: &'static str,
    wall_seconds: u64,
    generations_completed: u32,
    stopped_by: &'static str,
    actions_evaluated: u64,
    kernel_evaluations: u64,
    population_size: u32,
    first_escape_generation: Option<u32>,
    evaluations_to_first_escape: Option<u64>,
    files: Vec<String>,
    leaderboard: &'a Leaderboard,
}

#[derive(Serialize)]
struct TraceDocument<'a> {
    schema_version: &'static str,
    scenario_id: &'a str,
    rng_seed: u64,
    scenario_sha256: &'a str,
    config: &'a EvolveConfig,
    generations_completed: u32,
    /// `wall-budget` when the wall budget stopped the search before the
    /// generations its configuration runs; absent when it ran them all.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_by: Option<&'static str>,
    generations: &'a [GenerationRecord],
}

/// How a search its wall budget stopped says so (the trace's `stopped_by`,
/// the summary's).
pub const WALL_BUDGET: &str = "wall-budget";

fn arena_error(err: &ArenaError) -> CliError {
    CliError::from_arena(COMMAND, err)
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), CliError> {
    let path = dir.join(name);
    chio_arena::output::write_whole(&path, bytes, ".chio-evolve-")
        .map_err(|e| CliError::from_arena(COMMAND, &e.output_error(&path)))
}

/// Runs the command, printing to `out`: load and check, evolve, write the
/// leaderboard, trace, chart and SARIF files, then report; `quiet`
/// (`--quiet`) turns the progress bar off.
pub fn run(args: &EvolveArgs, out: &mut dyn Write, quiet: bool) -> Result<(), CliError> {
    let (scenario, inputs) = load_checked(args)?;
    check_report_paths(args, &scenario)?;
    let result = evolve(args, &scenario, &inputs, quiet)?;
    let (dir, board) = write_outputs(args, &scenario, &result)?;
    let text = summary_text(args, &scenario, &result, &dir, &board)?;
    CliError::print(COMMAND, out, text.as_bytes())
}

/// The output root: `--out`, by default `target/arena`.
fn out_root(args: &EvolveArgs) -> PathBuf {
    args.out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/arena"))
}

/// Refuses, before the search runs, a `--sarif` or `--html` path that is
/// the scenario or a file it reads, the topology file, or lies in the
/// output root, or is the other report's path (`crate::report::paths`),
/// and any output (a report, the leaderboards, the trace, the chart) whose
/// path holds something other than a regular file.
fn check_report_paths(args: &EvolveArgs, scenario: &Scenario) -> Result<(), CliError> {
    use crate::report::paths::{check_reports, scenario_guards, topology_guard, Guard, Report};
    let mut guards = scenario_guards(&args.file, scenario);
    guards.extend(topology_guard(args.topology.as_ref()));
    guards.push(Guard::writes(out_root(args), "the output root"));
    let reports = [
        Report {
            flag: "--sarif",
            path: args.sarif.as_deref(),
            example: "target/reports/escapes.sarif",
        },
        Report {
            flag: "--html",
            path: args.html.as_deref(),
            example: "target/reports/search.html",
        },
    ];
    check_reports(COMMAND, &reports, &guards)?;
    crate::report::paths::check_report_destinations(COMMAND, &reports)?;
    let root = out_root(args);
    let outputs: Vec<PathBuf> = [LEADERBOARD_JSON, LEADERBOARD_MD, TRACE_FILE, CHART_FILE]
        .iter()
        .map(|name| root.join(name))
        .collect();
    crate::report::paths::check_output_files(COMMAND, &outputs)
}

/// Checks the budget flags, loads the scenario and refuses one without
/// adversaries or a world.
fn load_checked(args: &EvolveArgs) -> Result<(Scenario, RunInputs), CliError> {
    check_budget(args.generations, args.wall_seconds)?;
    if args.population_size == 0 || args.population_size > MAX_POPULATION_SIZE {
        return Err(out_of_range(
            format!("--population-size must be between 1 and {MAX_POPULATION_SIZE}"),
            format!("pass --population-size {DEFAULT_POPULATION_SIZE} or another value from 1 to {MAX_POPULATION_SIZE}"),
        ));
    }
    let (scenario, inputs) = load_for_run(COMMAND, &args.file)?;
    if scenario.file().adversaries.is_empty() {
        return Err(arena_error(&ArenaError::NoAdversaries));
    }
    Ok((scenario, inputs))
}

/// Runs the search against the real kernels, showing progress on a
/// terminal and stopping at the wall budget.
fn evolve(
    args: &EvolveArgs,
    scenario: &Scenario,
    inputs: &RunInputs,
    quiet: bool,
) -> Result<EvolutionResult, CliError> {
    tracing::info!(
        scenario_id = scenario.id(),
        rng_seed = scenario.file().rng_seed,
        generations = args.generations,
        "evolving adversary populations"
    );
    let config = EvolveConfig {
        generations: args.generations,
        population_size: args.population_size,
        ..EvolveConfig::default()
    };
    let bar = progress_bar(
        u64::from(args.generations),
        "{bar:40} {pos}/{len} generations {msg}",
        quiet,
    );
    let mut budget = WallBudget {
        started: Instant::now(),
        budget: Duration::from_secs(args.wall_seconds),
        bar,
        hit: false,
    };
    let place = args.topology.clone().unwrap_or_default();
    let result = evaluate_with_topology(COMMAND, &place, scenario, inputs, |evaluator| {
        evolve_with(scenario, &config, evaluator, &mut budget)
    })?
    .map_err(|e| arena_error(&e))?;
    budget.bar.finish_and_clear();
    Ok(result)
}

/// Runs the search of `file` again with `config`, embedded and to its last
/// generation, once `admit` accepts the scenario read (so the bytes checked
/// are the bytes searched): the search a trace of it records, when the
/// trace is genuine (every file the search reads is the scenario's, and it
/// reads no clock), so `arena promote --from-trace` can tell an edited
/// trace from a search.
pub(crate) fn search_again(
    command: &'static str,
    file: &Path,
    config: &EvolveConfig,
    admit: &dyn Fn(&Scenario) -> Result<(), CliError>,
) -> Result<EvolutionResult, CliError> {
    let (scenario, inputs) = load_for_run(command, file)?;
    admit(&scenario)?;
    let place = crate::cli::RunTopology::default();
    evaluate_with_topology(command, &place, &scenario, &inputs, |evaluator| {
        chio_adversary::coevolution::evolve(&scenario, config, evaluator)
    })?
    .map_err(|e| CliError::from_arena(command, &e))
}

/// Writes the leaderboard (JSON and Markdown), the trace, the chart and,
/// with `--sarif`, the SARIF report; answers the folder and the leaderboard.
fn write_outputs(
    args: &EvolveArgs,
    scenario: &Scenario,
    result: &EvolutionResult,
) -> Result<(PathBuf, Leaderboard), CliError> {
    let dir = out_root(args);
    std::fs::create_dir_all(&dir).map_err(|e| CliError::write_failed(COMMAND, &dir, &e))?;
    let board = Leaderboard::from_evolution(scenario.id(), result);
    let trace = TraceDocument {
        schema_version: TRACE_SCHEMA,
        scenario_id: scenario.id(),
        rng_seed: scenario.file().rng_seed,
        scenario_sha256: scenario.text().sha256(),
        config: &result.config,
        generations_completed: result.generations_completed,
        stopped_by: result.stopped_by_budget.then_some(WALL_BUDGET),
        generations: &result.trace,
    };
    let trace_bytes = CliError::canonical_line(COMMAND, &trace)?.into_bytes();
    let chart = render_chart(scenario.id(), &result.trace).map_err(|e| arena_error(&e))?;
    write_file(
        &dir,
        LEADERBOARD_JSON,
        &board.to_json().map_err(|e| arena_error(&e))?,
    )?;
    write_file(&dir, LEADERBOARD_MD, board.to_markdown().as_bytes())?;
    write_file(&dir, TRACE_FILE, &trace_bytes)?;
    write_file(&dir, CHART_FILE, chart.as_bytes())?;
    if let Some(path) = &args.sarif {
        // The bytes the search validated, not the file read again.
        let text = scenario
            .text()
            .to_vec()
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| {
                arena_error(&ArenaError::Unreadable {
                    path: args.file.display().to_string(),
                    reason: "the scenario's bytes cannot be read back".to_string(),
                })
            })?;
        let log = crate::sarif::render(scenario, &args.file, &text, result);
        write_report(ReportKind::Sarif, path, log.as_bytes()).map_err(|e| e.into_cli(COMMAND))?;
    }
    if let Some(path) = &args.html {
        let html = crate::html_report::search_page(
            COMMAND,
            &board,
            scenario.file().rng_seed,
            result.generations_completed,
            &result.trace,
        )?;
        crate::html_report::write_page(COMMAND, path, &html)?;
    }
    Ok((dir, board))
}

/// The report: canonical JSON with `--json`, else a summary and the
/// leaderboard in Markdown.
fn summary_text(
    args: &EvolveArgs,
    scenario: &Scenario,
    result: &EvolutionResult,
    dir: &Path,
    board: &Leaderboard,
) -> Result<String, CliError> {
    let stopped_by = if result.stopped_by_budget {
        WALL_BUDGET
    } else {
        "generations"
    };
    Ok(if args.json {
        let summary = EvolveSummary {
            budget_gate: BUDGET_GATE,
            generations: args.generations,
            leaderboard_dir: dir.display().to_string(),
            scenario_id: scenario.id(),
            schema_version: EVOLVE_SCHEMA_VERSION,
            wall_seconds: args.wall_seconds,
            generations_completed: result.generations_completed,
            stopped_by,
            actions_evaluated: result.actions_evaluated,
            kernel_evaluations: result.kernel_evaluations,
            population_size: args.population_size,
            first_escape_generation: result.first_escape_generation,
            evaluations_to_first_escape: result.evaluations_to_first_escape,
            files: [LEADERBOARD_JSON, LEADERBOARD_MD, TRACE_FILE, CHART_FILE]
                .iter()
                .map(|f| f.to_string())
                .collect(),
            leaderboard: board,
        };
        CliError::json_document(COMMAND, &summary)?
    } else {
        let mut s = format!(
            "evolved {} ({} of {} generations, stopped by {stopped_by}); {} actions, {} kernel evaluations\n",
            scenario.id(),
            result.generations_completed,
            args.generations,
            result.actions_evaluated,
            result.kernel_evaluations
        );
        match result.first_escape_generation {
            Some(g) => s.push_str(&format!(
                "first escape in generation {g}, after {} kernel evaluations; {} escapes in {} causes\n",
                result.evaluations_to_first_escape.unwrap_or(0),
                board.escape_count(),
                board.causes.len()
            )),
            None => s.push_str("no escape found\n"),
        }
        s.push_str(&board.to_markdown());
        s.push_str(&format!("\nwritten to {}\n", dir.display()));
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Exit;

    // Both ends of both budget flags are closed; the over-cap generations block is the seed's.
    #[test]
    fn budget_gate_is_closed_at_both_ends() {
        assert!(check_budget(1, 1).is_ok());
        assert!(check_budget(200, 1800).is_ok());
        for (g, w) in [(0, 10), (201, 10), (4, 0), (4, 1801)] {
            let err = check_budget(g, w).unwrap_err();
            assert_eq!(err.code, "CHIO-CLI-FLAG-OUT-OF-RANGE");
            assert_eq!(err.exit, Exit::InvalidInput);
        }
        assert_eq!(
            check_budget(201, 300).unwrap_err().render(),
            "error[CHIO-CLI-FLAG-OUT-OF-RANGE]: arena evolve: --generations must be at most 200\n  help: pass --generations 200 or fewer\n  code: urn:chio:error:cli:flag-out-of-range\n  docs: https://chio.computer/docs/reference/errors#error-cli-flag-out-of-range\n"
        );
    }
}
