//! `chio campaign run`: running named attempts with this binary and filling
//! their rows with the record and what was measured around it. Which tool a
//! task runs and how its rows are admitted live in `chio_campaign`;
//! the other campaign commands live in the parent module.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use chio_campaign::evidence::folder_merkle_root;
use chio_campaign::git::source_revision;
use chio_campaign::ledger::{
    import, ledger_bytes, record_failure, EvidenceRef, ImportRecord, Ledger, Measured,
};
use chio_campaign::{Campaign, Evidence, Task, TaskKind};
use chio_experiment::execute::write_atomically;
use chio_experiment::ExperimentError;
use clap::Parser;

use super::CampaignRunArgs;
use super::{filled_lines, read_checked, refuse, runtime_identity};
use crate::arena_matrix::experiment_error;
use crate::error::{codes, CliError, Exit};
use crate::term::printable;

/// The command name every refusal of `campaign run` carries.
const COMMAND: &str = "campaign run";

/// What one attempt left: the record's bytes, or the infrastructure failure.
enum Ran {
    /// The attempt printed a record.
    Record(Vec<u8>),
    /// The attempt's infrastructure failed, with the failure.
    Failed(String),
}

/// Runs the named attempts in order, fills their rows, rewrites the ledger
/// once every row is admitted and prints one line per filled row.
pub(super) fn run_attempts(args: &CampaignRunArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let (campaign, mut ledger) = read_checked(COMMAND, &args.declaration, &args.ledger)?;
    let bundles = bundle_specs(&args.bundles)?;
    let base = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/campaign").join(&campaign.file.id));
    let runtime = runtime_identity().map_err(|e| CliError::infrastructure(COMMAND, e))?;
    let mut ids = Vec::new();
    for id in &args.schedule_ids {
        let task = pending_task(&campaign, &ledger, id)?;
        let dir = base.join(id.replace('/', "-"));
        let bundle = bundles.get(id).cloned();
        let argv = attempt_argv(&campaign, task, id, &dir, bundle.as_deref())?;
        // Every file the definition covers, what links lead to included.
        let covered: Vec<std::path::PathBuf> = task
            .definition
            .rows
            .iter()
            .map(|row| std::path::PathBuf::from(&row.path))
            .collect();
        let revision = source_revision(&campaign.root, &covered);
        let (ran, elapsed) = run_attempt(&argv)?;
        let (steps, evaluations, refs) = attempt_evidence(task.kind, bundle.as_deref(), &dir);
        let measured = Measured {
            elapsed_seconds: elapsed,
            runtime: runtime.clone(),
            source_revision: revision,
            evidence_refs: refs,
            steps,
            kernel_evaluations: evaluations,
        };
        ledger = record_attempt(&campaign, &ledger, id, &argv, ran, measured)?;
        ids.push(id.as_str());
    }
    let bytes = ledger_bytes(&ledger).map_err(refuse(COMMAND))?;
    write_atomically(&args.ledger, &bytes).map_err(refuse(COMMAND))?;
    let mut text = filled_lines(("ran", COMMAND), &campaign, &ledger, &ids);
    text.push_str(&written_lines(&base, &ids, &args.ledger));
    CliError::print(COMMAND, out, text.as_bytes())
}

/// Where a run wrote: each attempt's folder under `base` (by default
/// `target/campaign/<campaign-id>`, relative to the working folder) and
/// the ledger it updated.
fn written_lines(base: &std::path::Path, ids: &[&str], ledger: &std::path::Path) -> String {
    let shown = |path: &std::path::Path| printable(&path.display().to_string()).into_owned();
    let mut text = format!(
        "outputs written under {}:
",
        shown(base)
    );
    for id in ids {
        text.push_str(&format!(
            "  {}: {}
",
            printable(id),
            shown(&base.join(id.replace('/', "-")))
        ));
    }
    text.push_str(&format!(
        "ledger updated: {}
",
        shown(ledger)
    ));
    text
}

/// Parses every `--bundle SCHEDULE_ID=DIR`, the last one winning per id.
fn bundle_specs(specs: &[String]) -> Result<BTreeMap<String, PathBuf>, CliError> {
    let mut bundles = BTreeMap::new();
    for spec in specs {
        let Some((id, dir)) = spec.split_once('=') else {
            return Err(CliError::new(
                codes::RECORD_SPEC,
                COMMAND,
                format!("--bundle {spec:?} does not name its schedule id"),
                "write --bundle SCHEDULE_ID=DIR, for example pr-421-replay/01=target/arena/pr_421_review",
            ));
        };
        bundles.insert(id.to_string(), PathBuf::from(dir));
    }
    Ok(bundles)
}

/// The task of a scheduled attempt whose row is still DEFERRED.
fn pending_task<'a>(
    campaign: &'a Campaign,
    ledger: &Ledger,
    id: &str,
) -> Result<&'a Task, CliError> {
    let Some(attempt) = campaign.attempt(id) else {
        return Err(experiment_error(
            COMMAND,
            &ExperimentError::UnscheduledAttempt {
                schedule_id: id.to_string(),
            },
        ));
    };
    if ledger
        .rows
        .iter()
        .any(|r| r.schedule_id == *id && r.native_outcome != chio_campaign::ledger::DEFERRED)
    {
        return Err(experiment_error(
            COMMAND,
            &ExperimentError::AlreadyAttempted {
                schedule_id: id.to_string(),
            },
        ));
    }
    Ok(&campaign.tasks[attempt.task])
}

/// The `chio` arguments an attempt runs: `arena run`, `arena replay` of its
/// recorded bundle, `arena evolve` or `arena matrix`, as the task says.
fn attempt_argv(
    campaign: &Campaign,
    task: &Task,
    id: &str,
    dir: &Path,
    bundle: Option<&Path>,
) -> Result<Vec<String>, CliError> {
    let file = campaign.root.join(&task.file);
    let file = file.to_string_lossy().into_owned();
    let dir_text = dir.to_string_lossy().into_owned();
    let tool = match (task.kind, task.evidence) {
        (TaskKind::Scenario, Evidence::Live) => "run",
        (TaskKind::Scenario, Evidence::Fixture) => {
            let Some(bundle) = bundle else {
                return Err(CliError::new(
                    codes::RECORD_SPEC,
                    COMMAND,
                    format!("fixture attempt {id:?} names no recorded bundle"),
                    format!("pass --bundle {id}=DIR with the bundle to replay"),
                ));
            };
            return Ok(vec![
                "arena".into(),
                "replay".into(),
                bundle.to_string_lossy().into_owned(),
                "--json".into(),
            ]);
        }
        (TaskKind::Evolve, _) => "evolve",
        (TaskKind::Matrix, _) => "matrix",
    };
    Ok(vec![
        "arena".into(),
        tool.into(),
        file,
        "--json".into(),
        "--out".into(),
        dir_text,
    ])
}

/// Runs one attempt in this process and times it: a printed record is kept
/// even when the command failed, unless its input was refused; an
/// infrastructure failure without a record is the attempt's outcome.
fn run_attempt(argv: &[String]) -> Result<(Ran, f64), CliError> {
    let cli = crate::cli::Cli::try_parse_from(
        std::iter::once("chio".to_string()).chain(argv.iter().cloned()),
    )
    .map_err(|e| {
        CliError::infrastructure(
            COMMAND,
            format!("cannot build the attempt's command line: {e}"),
        )
    })?;
    let started = Instant::now();
    let mut buffer = Vec::new();
    let result = crate::run(&cli, &mut buffer);
    // Milliseconds are as fine as a wall clock around a process call means anything.
    let elapsed = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
    let ran = match result {
        Ok(()) => Ran::Record(buffer),
        Err(e) if !buffer.is_empty() && e.exit != Exit::InvalidInput => Ran::Record(buffer),
        Err(e) if e.exit == Exit::Infrastructure => {
            Ran::Failed(format!("{}: {}", e.code, e.message))
        }
        Err(e) => return Err(e),
    };
    Ok((ran, elapsed))
}

/// What an attempt's evidence states: steps and kernel evaluations of a
/// replayed bundle with its receipt root, or the output folder with its
/// Merkle root for an evolve or matrix attempt.
fn attempt_evidence(
    kind: TaskKind,
    bundle: Option<&Path>,
    dir: &Path,
) -> (Option<u64>, Option<u64>, Vec<EvidenceRef>) {
    match (kind, bundle) {
        (TaskKind::Scenario, Some(bundle)) => match chio_arena::bundle::Bundle::read(bundle) {
            Ok(read) => (
                Some(read.manifest.steps.len() as u64),
                Some(
                    read.manifest
                        .steps
                        .iter()
                        .filter(|s| s.pass.is_some())
                        .count() as u64,
                ),
                vec![EvidenceRef {
                    path: bundle.display().to_string(),
                    merkle_root: Some(read.manifest.receipt_root.clone()),
                }],
            ),
            Err(_) => (None, None, Vec::new()),
        },
        (TaskKind::Scenario, None) => (None, None, Vec::new()),
        _ => (
            None,
            None,
            vec![EvidenceRef {
                path: dir.display().to_string(),
                merkle_root: folder_merkle_root(dir),
            }],
        ),
    }
}

/// Fills the attempt's row: imports its record, or records its
/// infrastructure failure.
fn record_attempt(
    campaign: &Campaign,
    ledger: &Ledger,
    id: &str,
    argv: &[String],
    ran: Ran,
    measured: Measured,
) -> Result<Ledger, CliError> {
    match ran {
        Ran::Record(bytes) => import(
            campaign,
            ledger,
            &[ImportRecord {
                schedule_id: id.to_string(),
                path: format!("{} output", argv[..2].join(" ")),
                bytes,
                measured: Some(measured),
            }],
        ),
        Ran::Failed(reason) => record_failure(campaign, ledger, id, &reason, &measured),
    }
    .map_err(refuse(COMMAND))
}
