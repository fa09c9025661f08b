//! `chio campaign template | run | import | annotate | report | hash`.
//!
//! - `template DECL [--out LEDGER]` prints (or writes, refusing to replace
//!   an existing file) a ledger with every scheduled attempt DEFERRED;
//! - `run DECL LEDGER SCHEDULE_ID... [--out DIR] [--bundle ID=DIR]` runs the
//!   named attempts with this binary (`arena run`, `arena replay`,
//!   `arena evolve` or `arena matrix`, as the task says) and fills their
//!   rows with the record and what was measured around it: wall time, the
//!   runtime identity (this binary's version, SHA-256 and platform), the
//!   commit of the tree that ran, and evidence references with Merkle roots;
//! - `import DECL LEDGER SCHEDULE_ID=RESULT...` fills DEFERRED rows from
//!   `chio arena run --json`, `chio arena replay --json`,
//!   `chio arena evolve --json` and `chio arena matrix --json` documents
//!   made elsewhere, copying native outcomes; such rows keep their runtime,
//!   wall time and source revision unknown, with a recorded deviation;
//! - `annotate DECL LEDGER SCHEDULE_ID --decision NOTE | --repair NOTE |
//!   --skip REASON` records a human intervention, or a deliberate skip;
//! - `report DECL LEDGER [--json]` prints the portfolio, each row checked
//!   against the evidence it names and the repository's commits, each run's
//!   and replay's bundle re-decided from its inputs (`crate::redecide`);
//! - `hash --kind scenario|evolve|matrix --root DIR [--revision REV] FILE`
//!   prints the definition hash a declaration pins for a task file, from the
//!   working tree or from the repository's objects at a revision.
//!
//! Every command reads the declaration first, which recomputes each task's
//! definition hash and refuses drifted files. Every refusal exits 2 and
//! leaves the ledger byte for byte as it was; `run`, `import` and
//! `annotate` rewrite it only when everything they add is admitted. The
//! logic is `chio_campaign`; this module runs tools, reads files and
//! prints, and `attempt` runs the attempts of `run`.

use std::io::Write;
use std::path::Path;

use chio_campaign::ledger::{
    annotate, check_ledger, import, ledger_bytes, read_ledger, template, Annotation, ImportRecord,
    Intervention, InterventionKind, Ledger, RuntimeIdentity,
};
use chio_campaign::portfolio::{portfolio_outcome, render_text, report};
use chio_campaign::{load_campaign, task_definition, task_definition_at, Campaign, TaskKind};
use chio_experiment::definition::sha256_hex;
use chio_experiment::execute::write_atomically;
use chio_experiment::ExperimentError;

use crate::arena_matrix::experiment_error;
use crate::cli::campaign::{
    AnnotateArgs, CampaignArgs, CampaignCommand, CampaignRunArgs, HashArgs, ImportArgs, ReportArgs,
    TemplateArgs,
};
use crate::error::{codes, CliError};
use crate::term::printable;

mod attempt;

fn refuse(command: &'static str) -> impl Fn(ExperimentError) -> CliError {
    move |e| experiment_error(command, &e)
}

/// The declaration and the ledger, each checked, the ledger against the declaration.
pub(crate) fn read_checked(
    command: &'static str,
    decl: &Path,
    ledger: &Path,
) -> Result<(Campaign, Ledger), CliError> {
    let campaign = load_campaign(decl).map_err(refuse(command))?;
    let bytes = ExperimentError::read(ledger).map_err(refuse(command))?;
    let ledger = read_ledger(&bytes, &ledger.display().to_string()).map_err(refuse(command))?;
    check_ledger(&campaign, &ledger).map_err(refuse(command))?;
    Ok((campaign, ledger))
}

/// Runs a campaign command.
pub fn run(args: &CampaignArgs, out: &mut dyn Write) -> Result<(), CliError> {
    match &args.command {
        CampaignCommand::Template(a) => run_template(a, out),
        CampaignCommand::Run(a) => attempt::run_attempts(a, out),
        CampaignCommand::Import(a) => run_import(a, out),
        CampaignCommand::Annotate(a) => run_annotate(a, out),
        CampaignCommand::Report(a) => run_report(a, out),
        CampaignCommand::Hash(a) => run_hash(a, out),
    }
}

fn run_template(args: &TemplateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "campaign template";
    let campaign = load_campaign(&args.declaration).map_err(refuse(COMMAND))?;
    let bytes = ledger_bytes(&template(&campaign)).map_err(refuse(COMMAND))?;
    match &args.out {
        None => CliError::print(COMMAND, out, &bytes),
        Some(path) if path.exists() => Err(CliError::new(
            codes::LEDGER_EXISTS,
            COMMAND,
            format!("{:?} already exists", path.display().to_string()),
            "an admitted ledger is never replaced; choose a new path",
        )),
        Some(path) => write_atomically(path, &bytes).map_err(refuse(COMMAND)),
    }
}

fn run_import(args: &ImportArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "campaign import";
    let (campaign, ledger) = read_checked(COMMAND, &args.declaration, &args.ledger)?;
    let mut records = Vec::new();
    for spec in &args.records {
        let Some((schedule_id, path)) = spec.split_once('=') else {
            return Err(CliError::new(
                codes::RECORD_SPEC,
                COMMAND,
                format!("{spec:?} does not name its schedule id"),
                "write each record as SCHEDULE_ID=PATH, for example pr-421/01=run.json",
            ));
        };
        let bytes = ExperimentError::read(Path::new(path)).map_err(refuse(COMMAND))?;
        records.push(ImportRecord {
            schedule_id: schedule_id.to_string(),
            path: path.to_string(),
            bytes,
            measured: None,
        });
    }
    let next = import(&campaign, &ledger, &records).map_err(refuse(COMMAND))?;
    let bytes = ledger_bytes(&next).map_err(refuse(COMMAND))?;
    write_atomically(&args.ledger, &bytes).map_err(refuse(COMMAND))?;
    let ids: Vec<&str> = records.iter().map(|r| r.schedule_id.as_str()).collect();
    CliError::print(
        COMMAND,
        out,
        filled_lines(("imported", COMMAND), &campaign, &next, &ids).as_bytes(),
    )
}

/// One line per filled row of `command`: native outcome, portfolio
/// outcome (the row's evidence opened and its bundle re-decided) and reason.
fn filled_lines(
    (verb, command): (&str, &'static str),
    campaign: &Campaign,
    ledger: &Ledger,
    ids: &[&str],
) -> String {
    let redecider = crate::redecide::CampaignRedecider { command };
    let mut text = String::new();
    for id in ids {
        if let Some(row) = ledger.rows.iter().find(|r| r.schedule_id == *id) {
            text.push_str(&format!(
                "{verb} {}: native {}, portfolio {}{}\n",
                printable(&row.schedule_id),
                printable(&row.native_outcome),
                portfolio_outcome(campaign, row, &redecider),
                row.reason
                    .as_deref()
                    .map(|r| format!(" ({})", printable(r)))
                    .unwrap_or_default()
            ));
        }
    }
    text
}

/// The identity of the running `chio`: version, SHA-256 of the binary, platform.
pub fn runtime_identity() -> Result<RuntimeIdentity, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot locate the running binary: {e}"))?;
    let bytes = std::fs::read(&exe).map_err(|e| format!("cannot read the running binary: {e}"))?;
    Ok(RuntimeIdentity {
        chio_version: env!("CARGO_PKG_VERSION").to_string(),
        binary_sha256: sha256_hex(&bytes),
        platform: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

fn run_annotate(args: &AnnotateArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "campaign annotate";
    let (campaign, ledger) = read_checked(COMMAND, &args.declaration, &args.ledger)?;
    let annotation = match (&args.decision, &args.repair, &args.skip) {
        (Some(note), _, _) => Annotation::Intervention(Intervention {
            kind: InterventionKind::Decision,
            note: note.clone(),
        }),
        (_, Some(note), _) => Annotation::Intervention(Intervention {
            kind: InterventionKind::Repair,
            note: note.clone(),
        }),
        (_, _, Some(reason)) => Annotation::Skip(reason.clone()),
        _ => {
            return Err(CliError::new(
                codes::RECORD_SPEC,
                COMMAND,
                "no annotation given",
                "pass --decision NOTE, --repair NOTE or --skip REASON",
            ))
        }
    };
    let next =
        annotate(&campaign, &ledger, &args.schedule_id, &annotation).map_err(refuse(COMMAND))?;
    let bytes = ledger_bytes(&next).map_err(refuse(COMMAND))?;
    write_atomically(&args.ledger, &bytes).map_err(refuse(COMMAND))?;
    CliError::print(
        COMMAND,
        out,
        filled_lines(
            ("annotated", COMMAND),
            &campaign,
            &next,
            &[args.schedule_id.as_str()],
        )
        .as_bytes(),
    )
}

fn run_report(args: &ReportArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "campaign report";
    let (campaign, ledger) = read_checked(COMMAND, &args.declaration, &args.ledger)?;
    let redecider = crate::redecide::CampaignRedecider { command: COMMAND };
    let report = report(&campaign, &ledger, &redecider);
    let text = if args.json {
        crate::term::printable_json(
            &ExperimentError::canonical_line(&report).map_err(refuse(COMMAND))?,
        )
        .into_owned()
    } else {
        render_text(&report)
    };
    CliError::print(COMMAND, out, text.as_bytes())
}

fn run_hash(args: &HashArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "campaign hash";
    let kind = match args.kind.as_str() {
        "scenario" => TaskKind::Scenario,
        "matrix" => TaskKind::Matrix,
        "evolve" => TaskKind::Evolve,
        other => {
            return Err(CliError::new(
                codes::FLAG_OUT_OF_RANGE,
                COMMAND,
                format!("--kind {other:?} is not scenario, evolve or matrix"),
                "pass --kind scenario, --kind evolve or --kind matrix",
            ))
        }
    };
    let (subject, definition) = match &args.revision {
        Some(revision) => task_definition_at(&args.root, revision, kind, &args.file),
        None => task_definition(&args.root, kind, &args.file),
    }
    .map_err(refuse(COMMAND))?;
    let mut text = format!(
        "{} {}\ndefinition = {{ sha256 = \"{}\", files = {} }}\n",
        printable(&args.file),
        printable(&subject),
        definition.sha256,
        definition.files
    );
    if args.rows {
        for row in &definition.rows {
            text.push_str(&format!(
                "{} {} {}\n",
                row.mode,
                row.sha256,
                printable(&row.path)
            ));
        }
    }
    CliError::print(COMMAND, out, text.as_bytes())
}
