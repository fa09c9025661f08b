//! `chio arena matrix FILE [--json] [--out DIR] [--resume] [--workers N] [--junit PATH]`.
//!
//! Loads and validates the matrix (every refusal exits 2 before anything
//! runs or is written, including `--workers` contradicting a declared
//! `[protocol] concurrency`), runs every cell and repetition against the
//! real kernel in the cell's world under the declared protocol (concurrency,
//! per-attempt timeout, attempts), recording each run in the run ledger and
//! the load in `state.json` under `--out` (default
//! `target/arena/matrix/<matrix-id>-r<repetitions>`, so two protocols never
//! share a folder), and writes the synthesis there (`synthesis.json`,
//! `synthesis.md`, `synthesis.html`) only once every run is recorded. An
//! interrupted matrix resumes with `--resume`, running only what the ledger
//! lacks. Standard output gets the synthesis: canonical JSON with `--json`,
//! otherwise the Markdown followed by how many runs came from the ledger. An
//! `indicatif` progress bar goes to standard error on a terminal only, never
//! with `--quiet` (`crate::term::progress_bar`).
//!
//! A run ([`KernelMatrixRunner`]) is the cell's scenario run to the end in
//! the embedded topology (every step, whatever its verdict), then each
//! declared adversary population, its members drawn from the run's seed
//! (`chio_experiment::draws`), evaluated over [`ADVERSARY_ROUNDS`]
//! fitness rounds by the kernel evaluator, in a fresh instance of the same
//! world.
//!
//! With `--junit PATH` the runner also keeps each run's step records, and a
//! JUnit XML report (`junit`) is written atomically after the synthesis: one
//! test suite per cell, one test case per step over the cell's repetitions.
//! Runs taken from the run ledger by `--resume` recorded no steps, so their
//! scenario part is run again (it is deterministic) to fill the report. A
//! matrix with validators adds a suite of them, a failed one as a failure.
//!
//! A validator that fails a cell fails the command
//! (`CHIO-MATRIX-VALIDATION-FAILED`, exit 1) once everything is written and
//! printed, so CI sees it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chio_adversary::fitness::evaluate_populations;
use chio_adversary::population::populations_from_scenario;
use chio_arena::bundle::{BundleManifest, StepOutcome};
use chio_arena::Scenario;
use chio_experiment::draws::draw_members;
use chio_experiment::execute::{run_matrix, write_atomically, Load, MatrixRunner};
use chio_experiment::metrics::RunMetrics;
use chio_experiment::synthesis::{
    synthesize, to_json, to_markdown, to_printable_markdown, Synthesis,
};
use chio_experiment::ExperimentError;
use chio_experiment::Matrix;
use chio_experiment::{load_matrix, Cell};
use chio_kernel::verdict::ProjectedVerdict;

use crate::cli::arena::MatrixArgs;
use crate::cli::RunTopology;
use crate::driver::{RunInputs, RunResult, RunStatus};
use crate::error::{codes, CliError};
use crate::junit::{suite_from_cell, suite_from_validators, CellRun};
use crate::placement::RunPlaces;
use crate::report::{write_report, ReportKind};
use crate::term::progress_bar;

const COMMAND: &str = "arena matrix";

/// Fitness rounds each adversary population gets per run (the evolve default, `docs/adversaries.md`).
pub const ADVERSARY_ROUNDS: u32 = 2;

/// Converts an experiment refusal or failure into the CLI's error.
pub fn experiment_error(command: &'static str, err: &ExperimentError) -> CliError {
    CliError::from_diagnostic(command, err)
}

/// Runs a cell's scenario and its adversaries against the real kernel,
/// the scenario part where the cell's topology or `--topology` says.
#[derive(Debug, Clone)]
pub struct KernelMatrixRunner {
    places: Arc<RunPlaces>,
}

impl Default for KernelMatrixRunner {
    /// Every run in the embedded topology.
    fn default() -> Self {
        Self::new(Arc::new(RunPlaces::embedded(COMMAND)))
    }
}

impl KernelMatrixRunner {
    /// A runner whose runs go to `places`.
    pub fn new(places: Arc<RunPlaces>) -> Self {
        Self { places }
    }

    /// The scenario part of a run: every step to the end, whatever its
    /// verdict, on the cell's declared topology or else the default one.
    pub fn run_steps(
        &self,
        cell: &Cell,
        scenario: &Scenario,
    ) -> Result<(RunInputs, RunResult), String> {
        // The bytes a run loads are the cell's text with the repetition's
        // seed: nodes of a distributed topology resolve the world from them.
        let text = cell
            .seeded_text(scenario.file().rng_seed)
            .map_err(|e| e.to_string())?;
        let inputs =
            RunInputs::load_with_text(scenario, text.into_bytes()).map_err(|e| e.to_string())?;
        let declared = cell.topology_declared.then_some(cell.topology.as_str());
        let result = self.places.run(declared, scenario, &inputs)?;
        Ok((inputs, result))
    }

    /// A whole run: its measurements and the scenario part's manifest.
    pub fn run_measured(
        &self,
        cell: &Cell,
        scenario: &Scenario,
    ) -> Result<(RunMetrics, BundleManifest), String> {
        let (inputs, result) = self.run_steps(cell, scenario)?;
        let mut m = RunMetrics {
            completed: result.status != RunStatus::InfrastructureFailure,
            ..RunMetrics::default()
        };
        for step in &result.bundle.manifest.steps {
            let Some(pass) = step.pass else { continue };
            m.calls += 1;
            m.decisions += 1;
            m.denied +=
                u64::from(step.actual == Some(StepOutcome::Verdict(ProjectedVerdict::Deny)));
            m.expectations_met += u64::from(pass);
            let admitted = matches!(
                step.actual,
                Some(StepOutcome::Verdict(
                    ProjectedVerdict::Allow | ProjectedVerdict::Rewrite
                ))
            );
            if matches!(
                step.expected,
                Some(StepOutcome::Verdict(
                    ProjectedVerdict::Allow | ProjectedVerdict::Rewrite
                ))
            ) {
                m.benign_calls += 1;
                if admitted {
                    m.benign_allowed += 1;
                } else {
                    m.over_denials += 1;
                }
            }
        }
        m.evaluations = m.calls;
        let declared = populations_from_scenario(scenario).map_err(|e| e.to_string())?;
        let populations =
            draw_members(&declared, scenario.file().rng_seed).map_err(|e| e.to_string())?;
        if !populations.is_empty() {
            let declared = cell.topology_declared.then_some(cell.topology.as_str());
            let report = self
                .places
                .evaluate(declared, scenario, &inputs, |evaluator| {
                    evaluate_populations(scenario, &populations, ADVERSARY_ROUNDS, evaluator)
                })?;
            let (survivals, defeats) = report.totals();
            m.adversary_actions = u64::from(survivals + defeats);
            m.escapes = u64::from(survivals);
            m.evaluations += report.kernel_evaluations();
            m.decisions += report.total_actions();
            m.denied += report
                .samples
                .iter()
                .flat_map(|s| &s.records)
                .filter(|r| r.actual == ProjectedVerdict::Deny)
                .count() as u64;
        }
        Ok((m, result.bundle.manifest))
    }
}

impl MatrixRunner for KernelMatrixRunner {
    fn run(&self, cell: &Cell, scenario: &Scenario) -> Result<RunMetrics, String> {
        self.run_measured(cell, scenario)
            .map(|(metrics, _)| metrics)
    }
}

/// The kernel runner that also keeps each run's manifest, by cell name and
/// seed, for the JUnit report.
#[derive(Debug)]
struct RecordingRunner {
    runner: KernelMatrixRunner,
    manifests: Mutex<BTreeMap<(String, u64), BundleManifest>>,
}

impl MatrixRunner for RecordingRunner {
    fn run(&self, cell: &Cell, scenario: &Scenario) -> Result<RunMetrics, String> {
        let (metrics, manifest) = self.runner.run_measured(cell, scenario)?;
        if let Ok(mut map) = self.manifests.lock() {
            map.insert((cell.name.clone(), scenario.file().rng_seed), manifest);
        }
        Ok(metrics)
    }
}

/// The JUnit report of a finished matrix: one suite per cell over its
/// repetitions, re-running the scenario part of runs the ledger supplied.
fn junit_report(
    runner: &KernelMatrixRunner,
    matrix: &Matrix,
    synthesis: &Synthesis,
    mut manifests: BTreeMap<(String, u64), BundleManifest>,
) -> Result<Vec<u8>, CliError> {
    let mut suites = Vec::with_capacity(matrix.cells().len());
    for cell in matrix.cells() {
        let mut runs = Vec::new();
        for r in 0..matrix.repetitions() {
            let seed = matrix.repetition_seed(r);
            let scenario = matrix
                .scenario_for(cell, r)
                .map_err(|e| experiment_error(COMMAND, &e))?;
            let manifest = match manifests.remove(&(cell.name.clone(), seed)) {
                Some(manifest) => manifest,
                None => {
                    runner
                        .run_steps(cell, &scenario)
                        .map_err(|reason| {
                            experiment_error(
                                COMMAND,
                                &ExperimentError::RunFailed {
                                    cell: cell.name.clone(),
                                    repetition: r,
                                    reason,
                                },
                            )
                        })?
                        .1
                        .bundle
                        .manifest
                }
            };
            runs.push((r, seed, scenario, manifest));
        }
        let cell_runs: Vec<CellRun<'_>> = runs
            .iter()
            .map(|(r, seed, scenario, manifest)| CellRun {
                repetition: *r,
                seed: *seed,
                scenario,
                manifest,
            })
            .collect();
        suites.push(suite_from_cell(matrix.id(), &cell.name, &cell_runs));
    }
    suites.extend(suite_from_validators(matrix.id(), &synthesis.validators));
    crate::junit::render("chio arena matrix", &suites).map_err(|e| e.into_cli(COMMAND))
}

/// The load a matrix runs under: the declared concurrency, else
/// `--workers`, else the machine's cores; refusing a `--workers` that
/// contradicts a declared concurrency.
pub fn load_for(matrix: &Matrix, workers: Option<usize>) -> Result<Load, CliError> {
    if workers == Some(0) {
        return Err(CliError::new(
            codes::FLAG_OUT_OF_RANGE,
            COMMAND,
            "--workers must be at least 1",
            "pass --workers 1 or more, or leave it out",
        ));
    }
    let flag = workers.map(|w| u32::try_from(w).unwrap_or(u32::MAX));
    let (concurrency, source) = match (matrix.concurrency(), flag) {
        (Some(declared), Some(given)) if declared != given => {
            return Err(experiment_error(
                COMMAND,
                &ExperimentError::AmbiguousLoad {
                    setting: "concurrency".into(),
                    declared: format!("[protocol] concurrency = {declared}"),
                    given: format!("--workers {given}"),
                },
            ))
        }
        (Some(declared), _) => (declared, "protocol"),
        (None, Some(given)) => (given, "--workers"),
        (None, None) => (
            std::thread::available_parallelism()
                .map(|n| u32::try_from(usize::from(n)).unwrap_or(u32::MAX))
                .unwrap_or(1),
            "machine cores",
        ),
    };
    Ok(Load {
        runs_planned: (matrix.cells().len() as u64) * u64::from(matrix.repetitions()),
        concurrency,
        concurrency_source: source.to_string(),
        timeout_seconds: matrix.timeout_seconds(),
        attempts: matrix.attempts(),
    })
}

/// Runs the command, printing to `out`; `quiet` (`--quiet`) turns the
/// progress bar off.
pub fn run(args: &MatrixArgs, out: &mut dyn Write, quiet: bool) -> Result<(), CliError> {
    let matrix = load_matrix(&args.file).map_err(|e| experiment_error(COMMAND, &e))?;
    let load = load_for(&matrix, args.workers)?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/arena/matrix").join(matrix.folder_name()));
    check_report_paths(args, &matrix, &dir)?;
    tracing::info!(
        matrix_id = matrix.id(),
        definition = %matrix.definition().sha256,
        cells = matrix.cells().len(),
        repetitions = matrix.repetitions(),
        concurrency = load.concurrency,
        "matrix loaded"
    );
    let bar = progress_bar(0, "matrix: {bar:40} {pos}/{len} runs", quiet);
    let progress = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    let places = checked_places(&matrix, args.topology.clone().unwrap_or_default())?;
    let kernel_runner = KernelMatrixRunner::new(places);
    let recording = Arc::new(RecordingRunner {
        runner: kernel_runner.clone(),
        manifests: Mutex::default(),
    });
    let runner: Arc<dyn MatrixRunner> = if args.junit.is_some() {
        recording.clone()
    } else {
        Arc::new(kernel_runner.clone())
    };
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0)
    };
    let (runs, summary) = run_matrix(
        &matrix,
        &dir,
        args.resume,
        runner,
        &load,
        &progress,
        &now_ms,
    )
    .map_err(|e| experiment_error(COMMAND, &e))?;
    bar.finish_and_clear();
    let synthesis = synthesize(&matrix, &runs, &load);
    let json = write_synthesis(&dir, &synthesis)?;
    if let Some(path) = &args.junit {
        let manifests = recording
            .manifests
            .lock()
            .map(|m| m.clone())
            .unwrap_or_default();
        let xml = junit_report(&kernel_runner, &matrix, &synthesis, manifests)?;
        write_report(ReportKind::Junit, path, &xml).map_err(|e| e.into_cli(COMMAND))?;
    }
    let text = if args.json {
        crate::term::printable_json(&json).into_owned()
    } else {
        format!(
            "{}\nruns: {} scheduled, {} from the run ledger, {} executed; synthesis in {}\n",
            to_printable_markdown(&synthesis),
            summary.scheduled,
            summary.from_ledger,
            summary.executed,
            crate::term::printable(&dir.display().to_string())
        )
    };
    CliError::print(COMMAND, out, text.as_bytes())?;
    validation_outcome(&synthesis)
}

/// Fails a matrix (exit 1) when a validator judged a cell outside its
/// bounds: the synthesis and reports are written and printed first, and the
/// error names each failed validator and cell.
fn validation_outcome(synthesis: &Synthesis) -> Result<(), CliError> {
    let failed: Vec<String> = synthesis
        .validators
        .iter()
        .flat_map(|v| {
            v.cells
                .iter()
                .filter(|c| !c.passed)
                .map(move |c| format!("{} of {}", v.metric, c.cell))
        })
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    Err(CliError::new(
        codes::MATRIX_VALIDATION_FAILED,
        COMMAND,
        format!(
            "{} validator judgement(s) failed: {}; the gaps these cells take part in are invalid",
            failed.len(),
            crate::term::printable(&failed.join(", "))
        ),
        "read the synthesis's validators, fix the cells (or the thresholds, if they were wrong) and run the matrix again",
    ))
}

/// Refuses, before any run, a `--junit` path that is the matrix file or a
/// file it reads, the topology file, or lies in the output folder `dir`
/// (`crate::report::paths`).
fn check_report_paths(args: &MatrixArgs, matrix: &Matrix, dir: &Path) -> Result<(), CliError> {
    use crate::report::paths::{check_reports, topology_guard, Guard, Report};
    let mut guards = vec![Guard::reads(&args.file, "the matrix file")];
    for path in matrix.input_files() {
        guards.push(Guard::reads(path, "a file or folder the matrix reads"));
    }
    guards.extend(topology_guard(args.topology.as_ref()));
    guards.push(Guard::writes(dir, "the output folder"));
    let report = Report {
        flag: "--junit",
        path: args.junit.as_deref(),
        example: "target/reports/matrix.xml",
    };
    check_reports(COMMAND, &[report], &guards)?;
    crate::report::paths::check_report_destinations(COMMAND, &[report])?;
    let outputs: Vec<std::path::PathBuf> = SYNTHESIS_FILES.iter().map(|n| dir.join(n)).collect();
    crate::report::paths::check_output_files(COMMAND, &outputs)
}

/// The places the runs go to, once every cell's scenario fits them.
fn checked_places(matrix: &Matrix, topology: RunTopology) -> Result<Arc<RunPlaces>, CliError> {
    let places = Arc::new(RunPlaces::new(COMMAND, topology)?);
    for cell in matrix.cells() {
        let scenario = matrix
            .scenario_for(cell, 0)
            .map_err(|e| experiment_error(COMMAND, &e))?;
        places.check(&scenario)?;
    }
    Ok(places)
}

/// The synthesis files written into the output folder, checked before any
/// run and written in this order.
const SYNTHESIS_FILES: [&str; 3] = [
    crate::html_report::SYNTHESIS_JSON,
    "synthesis.md",
    "synthesis.html",
];

/// Writes the synthesis as JSON, Markdown and HTML into `dir`; the JSON,
/// which `--json` prints (the Markdown printed is made printable first).
fn write_synthesis(dir: &Path, synthesis: &Synthesis) -> Result<String, CliError> {
    let json = to_json(synthesis).map_err(|e| experiment_error(COMMAND, &e))?;
    let markdown = to_markdown(synthesis);
    let html = chio_experiment::report::render(synthesis);
    let [json_file, markdown_file, html_file] = SYNTHESIS_FILES;
    for (name, bytes) in [
        (json_file, json.as_bytes()),
        (markdown_file, markdown.as_bytes()),
        (html_file, html.as_bytes()),
    ] {
        write_atomically(&dir.join(name), bytes).map_err(|e| experiment_error(COMMAND, &e))?;
    }
    Ok(json)
}
