//! `chio campaign template | import | report | hash`.
//!
//! - `template DECL [--out LEDGER]` prints (or writes, refusing to replace
//!   an existing file) a ledger with every scheduled attempt DEFERRED;
//! - `import DECL LEDGER SCHEDULE_ID=RESULT...` fills DEFERRED rows from
//!   `chio arena run --json`, `chio arena replay --json`,
//!   `chio arena evolve --json` and `chio arena matrix --json` documents, copying native outcomes, and
//!   rewrites the ledger only when the whole import is admitted;
//! - `report DECL LEDGER [--json]` prints the portfolio;
//! - `hash --kind scenario|matrix --root DIR FILE` prints the definition
//!   hash a declaration pins for a task file.
//!
//! Every command reads the declaration first, which recomputes each task's
//! definition hash and refuses drifted files. Every refusal exits 2 and
//! leaves the ledger byte for byte as it was. The logic is
//! `chio_arena::campaign`; this module reads files and prints.

use std::io::Write;
use std::path::{Path, PathBuf};

use chio_arena::campaign::ledger::{
    check_ledger, import, ledger_bytes, read_ledger, template, ImportRecord, Ledger,
};
use chio_arena::campaign::portfolio::{portfolio_outcome, render_text, report};
use chio_arena::campaign::{load_campaign, task_definition, Campaign, TaskKind};
use chio_arena::matrix::execute::write_atomically;
use chio_arena::ExperimentError;
use clap::{Args, Subcommand};

use crate::arena_matrix::experiment_error;
use crate::error::{CliError, Exit};

/// `chio campaign ...`.
#[derive(Debug, Args)]
pub struct CampaignArgs {
    /// The campaign command to run.
    #[command(subcommand)]
    pub command: CampaignCommand,
}

/// Commands under `chio campaign`.
#[derive(Debug, Subcommand)]
pub enum CampaignCommand {
    /// Print a ledger with every scheduled attempt DEFERRED.
    Template(TemplateArgs),
    /// Fill ledger rows from run, replay and matrix results.
    Import(ImportArgs),
    /// Print the portfolio of a ledger.
    Report(ReportArgs),
    /// Print the definition hash of a task file.
    Hash(HashArgs),
}

/// `chio campaign template DECL [--out LEDGER]`.
#[derive(Debug, Args)]
pub struct TemplateArgs {
    /// The campaign declaration (`chio.arena.campaign/v1`).
    pub declaration: PathBuf,
    /// Write the ledger to this new file instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `chio campaign import DECL LEDGER SCHEDULE_ID=RESULT...`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The campaign declaration.
    pub declaration: PathBuf,
    /// The ledger, updated in place.
    pub ledger: PathBuf,
    /// Each record as `SCHEDULE_ID=PATH`: the evaluator names the attempt.
    #[arg(required = true)]
    pub records: Vec<String>,
}

/// `chio campaign report DECL LEDGER [--json]`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The campaign declaration.
    pub declaration: PathBuf,
    /// The ledger.
    pub ledger: PathBuf,
    /// Print canonical JSON (`chio.arena.campaign-report/v1`).
    #[arg(long)]
    pub json: bool,
}

/// `chio campaign hash --kind KIND --root DIR FILE`.
#[derive(Debug, Args)]
pub struct HashArgs {
    /// The task file, relative to `--root`.
    pub file: String,
    /// `scenario`, `evolve` or `matrix`.
    #[arg(long, default_value = "scenario")]
    pub kind: String,
    /// The definition root.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Print every hashed row too.
    #[arg(long)]
    pub rows: bool,
}

fn refuse(command: &'static str) -> impl Fn(ExperimentError) -> CliError {
    move |e| experiment_error(command, &e)
}

fn write_out(command: &'static str, out: &mut dyn Write, text: &[u8]) -> Result<(), CliError> {
    out.write_all(text)
        .and_then(|()| out.flush())
        .map_err(|e| CliError::output(command, &e))
}

fn read_checked(
    command: &'static str,
    decl: &Path,
    ledger: &Path,
) -> Result<(Campaign, Ledger), CliError> {
    let campaign = load_campaign(decl).map_err(refuse(command))?;
    let bytes = std::fs::read(ledger).map_err(|e| {
        experiment_error(
            command,
            &ExperimentError::Unreadable {
                path: ledger.display().to_string(),
                reason: e.kind().to_string(),
            },
        )
    })?;
    let ledger = read_ledger(&bytes, &ledger.display().to_string()).map_err(refuse(command))?;
    check_ledger(&campaign, &ledger).map_err(refuse(command))?;
    Ok((campaign, ledger))
}

/// Runs a campaign command.
pub fn run(args: &CampaignArgs, out: &mut dyn Write) -> Result<(), CliError> {
    match &args.command {
        CampaignCommand::Template(a) => run_template(a, out),
        CampaignCommand::Import(a) => run_import(a, out),
        CampaignCommand::Report(a) => run_report(a, out),
        CampaignCommand::Hash(a) => run_hash(a, out),
    }
}

fn run_template(args: &TemplateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "campaign template";
    let campaign = load_campaign(&args.declaration).map_err(refuse(COMMAND))?;
    let bytes = ledger_bytes(&template(&campaign)).map_err(refuse(COMMAND))?;
    match &args.out {
        None => write_out(COMMAND, out, &bytes),
        Some(path) if path.exists() => Err(CliError {
            code: "CHIO-CAMPAIGN-LEDGER-EXISTS".into(),
            command: COMMAND,
            message: format!("{:?} already exists", path.display().to_string()),
            help: "an admitted ledger is never replaced; choose a new path".into(),
            exit: Exit::InvalidInput,
        }),
        Some(path) => write_atomically(path, &bytes).map_err(refuse(COMMAND)),
    }
}

fn run_import(args: &ImportArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "campaign import";
    let (campaign, ledger) = read_checked(COMMAND, &args.declaration, &args.ledger)?;
    let mut records = Vec::new();
    for spec in &args.records {
        let Some((schedule_id, path)) = spec.split_once('=') else {
            return Err(CliError {
                code: "CHIO-CLI-RECORD-SPEC".into(),
                command: COMMAND,
                message: format!("{spec:?} does not name its schedule id"),
                help: "write each record as SCHEDULE_ID=PATH, for example pr-421/01=run.json"
                    .into(),
                exit: Exit::InvalidInput,
            });
        };
        let bytes = std::fs::read(path).map_err(|e| {
            experiment_error(
                COMMAND,
                &ExperimentError::Unreadable {
                    path: path.to_string(),
                    reason: e.kind().to_string(),
                },
            )
        })?;
        records.push(ImportRecord {
            schedule_id: schedule_id.to_string(),
            path: path.to_string(),
            bytes,
        });
    }
    let next = import(&campaign, &ledger, &records).map_err(refuse(COMMAND))?;
    let bytes = ledger_bytes(&next).map_err(refuse(COMMAND))?;
    write_atomically(&args.ledger, &bytes).map_err(refuse(COMMAND))?;
    let mut text = String::new();
    for record in &records {
        if let Some(row) = next
            .rows
            .iter()
            .find(|r| r.schedule_id == record.schedule_id)
        {
            text.push_str(&format!(
                "imported {}: native {}, portfolio {}{}\n",
                row.schedule_id,
                row.native_outcome,
                portfolio_outcome(&row.native_outcome),
                row.reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ));
        }
    }
    write_out(COMMAND, out, text.as_bytes())
}

fn run_report(args: &ReportArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "campaign report";
    let (campaign, ledger) = read_checked(COMMAND, &args.declaration, &args.ledger)?;
    let report = report(&campaign, &ledger);
    let text = if args.json {
        let mut text = chio_kernel::canonical::to_canonical_string(&report).map_err(|e| {
            experiment_error(
                COMMAND,
                &ExperimentError::Canonical {
                    reason: e.to_string(),
                },
            )
        })?;
        text.push('\n');
        text
    } else {
        render_text(&report)
    };
    write_out(COMMAND, out, text.as_bytes())
}

fn run_hash(args: &HashArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "campaign hash";
    let kind = match args.kind.as_str() {
        "scenario" => TaskKind::Scenario,
        "matrix" => TaskKind::Matrix,
        "evolve" => TaskKind::Evolve,
        other => {
            return Err(CliError {
                code: "CHIO-CLI-FLAG-OUT-OF-RANGE".into(),
                command: COMMAND,
                message: format!("--kind {other:?} is not scenario, evolve or matrix"),
                help: "pass --kind scenario, --kind evolve or --kind matrix".into(),
                exit: Exit::InvalidInput,
            })
        }
    };
    let (subject, definition) =
        task_definition(&args.root, kind, &args.file).map_err(refuse(COMMAND))?;
    let mut text = format!(
        "{} {subject}\ndefinition = {{ sha256 = \"{}\", files = {} }}\n",
        args.file, definition.sha256, definition.files
    );
    if args.rows {
        for row in &definition.rows {
            text.push_str(&format!("{} {} {}\n", row.mode, row.sha256, row.path));
        }
    }
    write_out(COMMAND, out, text.as_bytes())
}
