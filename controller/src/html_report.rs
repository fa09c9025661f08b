//! `chio report PATH --out FILE.html [--declaration DECL]`: one
//! self-contained HTML page for a result, and the `--html FILE` of
//! `arena run` and `arena evolve`.
//!
//! What PATH holds decides the report: a folder with `arena.json` is a run
//! bundle (`chio arena run --out`), a folder with `leaderboard.json` and
//! `evolve-trace.json` an adversary search (`chio arena evolve --out`), a
//! folder with `synthesis.json` a matrix output (`chio arena matrix
//! --out`), and a JSON file whose `schema_version` is the campaign ledger's
//! a campaign ledger, whose portfolio also needs its declaration
//! (`--declaration`); a matrix output needs its matrix file the same way
//! (`--declaration`), since its synthesis is presented only once it is
//! re-derived from the run records beside it. A run bundle is re-decided
//! from its inputs before it is presented (`crate::redecide`). Anything
//! else is refused as `CHIO-REPORT-UNKNOWN-INPUT`, naming what was
//! expected. The pages are
//! rendered by the report module of the crate that owns the result
//! (`chio_arena::report`, `chio_adversary::report`, `chio_experiment::report`,
//! `chio_campaign::report`; pure: they read nothing and open no socket), on
//! the page frame of `chio_arena::report`, and written
//! whole or not at all (`crate::report`). Standard output gets one line
//! naming the kind and the file.

use std::io::Write;
use std::path::Path;

use chio_adversary::coevolution::GenerationRecord;
use chio_adversary::report::{leaderboard_disagreement, Search, TraceFile};
use chio_adversary::Leaderboard;
use chio_arena::bundle::MANIFEST_FILE;
use chio_arena::report::run;
use chio_campaign::ledger::LEDGER_SCHEMA_VERSION;
use chio_campaign::portfolio::report as portfolio;

use crate::arena_evolve::{LEADERBOARD_JSON, TRACE_FILE};
use crate::cli::report::ReportArgs;
use crate::error::{codes, CliError};
use crate::report::{write_report, ReportKind};

const COMMAND: &str = "report";

/// The matrix synthesis a matrix output folder holds.
pub const SYNTHESIS_JSON: &str = "synthesis.json";

/// What a path holds, as `chio report` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportInput {
    /// A run bundle.
    Run,
    /// An evolve output folder.
    Search,
    /// A matrix output folder.
    Matrix,
    /// A campaign ledger.
    Campaign,
}

impl ReportInput {
    /// The kind in words.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportInput::Run => "run",
            ReportInput::Search => "search",
            ReportInput::Matrix => "matrix",
            ReportInput::Campaign => "campaign",
        }
    }
}

const EXPECTED: &str = "a run bundle (a folder with arena.json), an evolve output (a folder with leaderboard.json and evolve-trace.json), a matrix output (a folder with synthesis.json) or a campaign ledger (a JSON file of schema chio.arena.campaign-ledger/v2)";

fn unknown(path: &Path, what: &str) -> CliError {
    CliError::new(
        codes::REPORT_UNKNOWN_INPUT,
        COMMAND,
        format!("{} {what}; expected {EXPECTED}", path.display()),
        "pass the folder `arena run --out`, `arena evolve --out` or `arena matrix --out` wrote, or a campaign ledger with --declaration",
    )
}

fn unreadable(path: &Path, cause: impl std::fmt::Display) -> CliError {
    CliError::new(
        codes::REPORT_INPUT_UNREADABLE,
        COMMAND,
        format!("cannot read {}: {cause}", path.display()),
        "check that the result was written whole by this version of chio, and write it again if not",
    )
}

/// Decides what `path` holds, or refuses it.
pub fn detect(path: &Path) -> Result<ReportInput, CliError> {
    if path.is_dir() {
        // Any entry named arena.json makes a bundle, which its reader then
        // refuses unless it is a regular file.
        if path.join(MANIFEST_FILE).symlink_metadata().is_ok() {
            return Ok(ReportInput::Run);
        }
        if path.join(LEADERBOARD_JSON).is_file() && path.join(TRACE_FILE).is_file() {
            return Ok(ReportInput::Search);
        }
        if path.join(SYNTHESIS_JSON).is_file() {
            return Ok(ReportInput::Matrix);
        }
        return Err(unknown(
            path,
            "is a folder that holds none of these results",
        ));
    }
    if !path.is_file() {
        return Err(unknown(path, "does not exist"));
    }
    let bytes = std::fs::read(path).map_err(|e| unreadable(path, e.kind()))?;
    #[derive(serde::Deserialize)]
    struct Schema {
        schema_version: String,
    }
    match serde_json::from_slice::<Schema>(&bytes) {
        Ok(s) if s.schema_version == LEDGER_SCHEMA_VERSION => Ok(ReportInput::Campaign),
        Ok(s) => Err(unknown(
            path,
            &format!("is a JSON file of schema {:?}", s.schema_version),
        )),
        Err(_) => Err(unknown(
            path,
            "is a file that is not a JSON document with a schema_version",
        )),
    }
}

/// A file of a result folder: a regular file, bounded as a bundle's files
/// are, never a link, a named pipe or a device.
fn read(path: &Path) -> Result<Vec<u8>, CliError> {
    chio_arena::bundle::read_regular(path, chio_arena::bundle::MAX_FILE_BYTES).map_err(
        |e| match e {
            chio_arena::bundle::FileRefusal::Io(e) => unreadable(path, e.kind()),
            refusal => unreadable(path, refusal),
        },
    )
}

/// The run report of the bundle in `dir`.
pub fn run_page(command: &'static str, dir: &Path) -> Result<String, CliError> {
    let bundle = crate::arena_replay::read_bundle(command, dir)?;
    Ok(run::render(&bundle))
}

/// The run report `chio report` writes of the bundle in `dir`: the same
/// page, once the bundle agrees with its own signed receipts and files
/// (a bundle that does not is refused, never presented), framed in red
/// and naming each difference when re-deciding it from its inputs gives
/// another run, or saying its outcome is unverified when it cannot be
/// re-decided here (`crate::redecide`).
fn verified_run_page(dir: &Path) -> Result<String, CliError> {
    let bundle = crate::arena_replay::read_verified_bundle(COMMAND, dir)?;
    let verification = crate::redecide::verification(COMMAND, dir);
    Ok(run::render_verified(&bundle, &verification))
}

/// The search report of a leaderboard and its generation trace.
pub fn search_page(
    command: &'static str,
    leaderboard: &Leaderboard,
    rng_seed: u64,
    generations_completed: u32,
    generations: &[GenerationRecord],
) -> Result<String, CliError> {
    chio_adversary::report::render(&Search {
        leaderboard,
        rng_seed,
        generations_completed,
        generations,
    })
    .map_err(|e| CliError::from_arena(command, &e))
}

/// The search report of an evolve output folder, once its trace agrees
/// with itself (its records with its counts) and its leaderboard is the
/// one its trace derives (a leaderboard the trace contradicts, such as one
/// with escapes removed, is refused, never presented).
fn search_from(dir: &Path) -> Result<String, CliError> {
    let board_path = dir.join(LEADERBOARD_JSON);
    let board_bytes = read(&board_path)?;
    let board: Leaderboard =
        serde_json::from_slice(&board_bytes).map_err(|e| unreadable(&board_path, e))?;
    let trace_path = dir.join(TRACE_FILE);
    let trace = TraceFile::parse(&read(&trace_path)?, &trace_path.display().to_string())
        .map_err(|e| unreadable(&trace_path, e))?;
    if let Some(why) = trace.inconsistency() {
        return Err(CliError::new(
            codes::REPORT_INCONSISTENT_TRACE,
            COMMAND,
            format!("{} contradicts itself: {why}", trace_path.display()),
            "write the search again with `chio arena evolve --out`; a trace edited by hand is not a search's record",
        ));
    }
    if let Some(why) = leaderboard_disagreement(&board_bytes, &trace) {
        return Err(unreadable(
            &board_path,
            format!("it is not what {TRACE_FILE} beside it derives: {why}"),
        ));
    }
    search_page(
        COMMAND,
        &board,
        trace.rng_seed,
        trace.generations_completed,
        &trace.generations,
    )
}

/// The matrix report of a matrix output folder, once its synthesis is,
/// byte for byte, what the matrix file `declaration` derives from the run
/// records beside it (`chio_experiment::synthesis::derived_again`, the
/// check `chio campaign report` applies to a matrix row): a synthesis with
/// a validator, a cell or a gap edited into it is refused, never
/// presented.
fn matrix_from(dir: &Path, declaration: Option<&Path>) -> Result<String, CliError> {
    let path = dir.join(SYNTHESIS_JSON);
    let bytes = read(&path)?;
    let synthesis = chio_experiment::report::parse(&bytes).map_err(|e| unreadable(&path, e))?;
    let Some(declaration) = declaration else {
        return Err(CliError::new(
            codes::REPORT_NEEDS_DECLARATION,
            COMMAND,
            format!(
                "{} is a matrix output, and its synthesis is presented only once it is re-derived from its run records under its matrix file",
                dir.display()
            ),
            "pass the matrix file the folder was run from with --declaration MATRIX",
        ));
    };
    let matrix = chio_experiment::load_matrix(declaration)
        .map_err(|e| crate::arena_matrix::experiment_error(COMMAND, &e))?;
    let name = declaration.display().to_string();
    chio_experiment::synthesis::derived_again(&matrix, &name, dir, &bytes).map_err(|why| {
        CliError {
            help: "report the folder as `chio arena matrix` wrote it, with the matrix file it was run from; a synthesis edited after its run is not what its run records derive".to_string(),
            ..unreadable(&path, why)
        }
    })?;
    Ok(chio_experiment::report::render(&synthesis))
}

fn campaign_from(ledger: &Path, declaration: Option<&Path>) -> Result<String, CliError> {
    let Some(declaration) = declaration else {
        return Err(CliError::new(
            codes::REPORT_NEEDS_DECLARATION,
            COMMAND,
            format!(
                "{} is a campaign ledger, and its portfolio is judged against its declaration",
                ledger.display()
            ),
            "pass the campaign declaration with --declaration DECL",
        ));
    };
    let (campaign, ledger) = crate::campaign::read_checked(COMMAND, declaration, ledger)?;
    let redecider = crate::redecide::CampaignRedecider { command: COMMAND };
    Ok(chio_campaign::report::render(&portfolio(
        &campaign, &ledger, &redecider,
    )))
}

/// Renders the report of what `path` holds.
pub fn render(path: &Path, declaration: Option<&Path>) -> Result<(ReportInput, String), CliError> {
    let kind = detect(path)?;
    let html = match kind {
        ReportInput::Run => verified_run_page(path)?,
        ReportInput::Search => search_from(path)?,
        ReportInput::Matrix => matrix_from(path, declaration)?,
        ReportInput::Campaign => campaign_from(path, declaration)?,
    };
    Ok((kind, html))
}

/// Writes a page whole or not at all.
pub fn write_page(command: &'static str, path: &Path, html: &str) -> Result<(), CliError> {
    write_report(ReportKind::Html, path, html.as_bytes()).map_err(|e| e.into_cli(command))
}

/// Refuses an `--out` that is, or lies inside, the result read or the
/// declaration (`crate::report::paths`): the page would replace evidence.
fn check_report_path(args: &ReportArgs) -> Result<(), CliError> {
    use crate::report::paths::{check_reports, Guard, Report};
    let mut guards = vec![Guard::reads(&args.path, "the result PATH")];
    if let Some(declaration) = &args.declaration {
        guards.push(Guard::reads(declaration, "the declaration"));
    }
    let report = Report {
        flag: "--out",
        path: Some(&args.out),
        example: "target/reports/report.html",
    };
    check_reports(COMMAND, &[report], &guards)
}

/// Runs the command, printing to `out`.
pub fn run(args: &ReportArgs, out: &mut dyn Write) -> Result<(), CliError> {
    check_report_path(args)?;
    let (kind, html) = render(&args.path, args.declaration.as_deref())?;
    write_page(COMMAND, &args.out, &html)?;
    writeln!(
        out,
        "wrote the {} report of {} to {}",
        kind.as_str(),
        args.path.display(),
        args.out.display()
    )
    .and_then(|()| out.flush())
    .map_err(|e| CliError::output(COMMAND, &e))
}
