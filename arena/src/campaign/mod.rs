//! Pinned campaigns: a declaration that fixes tasks, repetitions and the
//! exact bytes each task reads, an attempt ledger with one row per
//! scheduled attempt, and the portfolio report over it.
//!
//! A declaration (`chio.arena.campaign/v1`, TOML) names tasks (scenario
//! runs, replays of recorded bundles, evolutions, matrices), how many repetitions each
//! gets, and each task's definition hash ([`definition`]). Loading it
//! recomputes every definition hash and refuses one that no longer matches
//! the files, so nothing runs against inputs other than the pinned ones.
//! Schedule ids are `<task>/<repetition>` with the repetition written on two
//! digits from `01`. The ledger ([`ledger`]) and the report ([`portfolio`])
//! only read files: they run nothing and never rescore a native outcome.
//!
//! Module map:
//! - [`definition`]: definition hashes and the files a scenario run reads;
//! - [`ledger`]: the ledger, its template, its checks and the import;
//! - [`portfolio`]: the report.

pub mod definition;
pub mod ledger;
pub mod portfolio;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::experiment_error::ExperimentError;
use definition::{
    definition_hash, normalise, relative_to, scenario_input_paths, sha256_hex, Definition,
};

/// Schema id of a campaign declaration.
pub const CAMPAIGN_SCHEMA_VERSION: &str = "chio.arena.campaign/v1";

/// The largest number of repetitions a task may declare.
pub const MAX_REPETITIONS: u32 = 99;

/// The declaration as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignFile {
    /// Must be `chio.arena.campaign/v1`.
    pub schema_version: String,
    /// The campaign's id; a ledger names it.
    pub id: String,
    /// A human title for the report.
    pub title: String,
    /// The definition root, relative to the declaration's folder (default `.`);
    /// task files and definition rows are relative to it.
    pub root: Option<String>,
    /// The pinned tasks.
    pub tasks: Vec<TaskDecl>,
}

/// `[[tasks]]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskDecl {
    /// The task's id; schedule ids start with it.
    pub id: String,
    /// `scenario`, `evolve` or `matrix`.
    pub kind: String,
    /// The scenario or matrix file, relative to the root.
    pub file: String,
    /// `fresh` (default) or `replay`: what evidence fills the task's rows.
    pub evidence: Option<String>,
    /// How many attempts are scheduled.
    pub repetitions: u32,
    /// The pinned definition hash.
    pub definition: PinnedDefinition,
}

/// A task's pinned definition.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedDefinition {
    /// The definition hash, lowercase hex.
    pub sha256: String,
    /// How many files it covers.
    pub files: usize,
}

/// What a task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// `chio arena run` or `chio arena replay` of one scenario.
    Scenario,
    /// `chio arena matrix` of one matrix file.
    Matrix,
    /// `chio arena evolve` of one scenario's adversary populations.
    Evolve,
}

/// Where an attempt's evidence comes from; the two are never pooled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Evidence {
    /// A run executed for this attempt.
    Fresh,
    /// A replay of a recorded bundle.
    Replay,
}

impl Evidence {
    /// The word used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Evidence::Fresh => "fresh",
            Evidence::Replay => "replay",
        }
    }
}

/// A validated task with its recomputed definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The task id.
    pub id: String,
    /// What it runs.
    pub kind: TaskKind,
    /// Its evidence.
    pub evidence: Evidence,
    /// The file, relative to the root.
    pub file: String,
    /// The scenario (run, replay, evolution) or matrix id its results name.
    pub subject: String,
    /// The repetitions scheduled.
    pub repetitions: u32,
    /// The definition as hashed now (equal to the pinned one).
    pub definition: Definition,
}

/// One scheduled attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledAttempt {
    /// `<task>/<repetition>`.
    pub schedule_id: String,
    /// Index into [`Campaign::tasks`].
    pub task: usize,
    /// 1-based repetition.
    pub repetition: u32,
}

/// A loaded, validated campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Campaign {
    /// The declaration as written.
    pub file: CampaignFile,
    /// SHA-256 of the declaration's exact bytes; a ledger records it.
    pub sha256: String,
    /// The definition root on disk.
    pub root: PathBuf,
    /// The tasks in declaration order.
    pub tasks: Vec<Task>,
    /// Every scheduled attempt, task by task, repetition by repetition.
    pub schedule: Vec<ScheduledAttempt>,
}

impl Campaign {
    /// The scheduled attempt with this id.
    pub fn attempt(&self, schedule_id: &str) -> Option<&ScheduledAttempt> {
        self.schedule.iter().find(|a| a.schedule_id == schedule_id)
    }
}

/// The schedule id of a task's repetition.
pub fn schedule_id(task: &str, repetition: u32) -> String {
    format!("{task}/{repetition:02}")
}

fn declaration_error(field: impl Into<String>, reason: impl Into<String>) -> ExperimentError {
    ExperimentError::Declaration {
        field: field.into(),
        reason: reason.into(),
    }
}

/// The subject id and the root-relative files a task reads.
pub fn task_inputs(
    root: &Path,
    kind: TaskKind,
    file: &str,
) -> Result<(String, Vec<PathBuf>), ExperimentError> {
    let rel = PathBuf::from(normalise(Path::new(file))?);
    match kind {
        TaskKind::Scenario | TaskKind::Evolve => {
            let scenario = crate::load_scenario(root.join(&rel)).map_err(|source| {
                ExperimentError::Scenario {
                    cell: file.to_string(),
                    source,
                }
            })?;
            let paths = scenario_input_paths(&scenario, &rel);
            Ok((scenario.id().to_string(), paths))
        }
        TaskKind::Matrix => {
            let matrix = crate::matrix::load_matrix(&root.join(&rel))?;
            let paths = matrix
                .input_files()
                .iter()
                .map(|p| relative_to(root, p))
                .collect::<Result<_, _>>()?;
            Ok((matrix.id().to_string(), paths))
        }
    }
}

/// Computes the definition of a task file, as `chio campaign hash` prints it.
pub fn task_definition(
    root: &Path,
    kind: TaskKind,
    file: &str,
) -> Result<(String, Definition), ExperimentError> {
    let (subject, paths) = task_inputs(root, kind, file)?;
    Ok((subject, definition_hash(root, &paths)?))
}

/// Reads and validates a declaration, recomputing every definition hash.
pub fn load_campaign(path: &Path) -> Result<Campaign, ExperimentError> {
    let bytes = std::fs::read(path).map_err(|e| ExperimentError::Unreadable {
        path: path.display().to_string(),
        reason: e.kind().to_string(),
    })?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    parse_campaign(&bytes, &dir, &path.display().to_string())
}

/// Validates declaration bytes; `dir` is the declaration's folder.
pub fn parse_campaign(bytes: &[u8], dir: &Path, name: &str) -> Result<Campaign, ExperimentError> {
    let syntax = |reason: String| ExperimentError::Syntax {
        path: name.to_string(),
        reason,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| syntax("not UTF-8 text".into()))?;
    let file: CampaignFile = toml::from_str(text).map_err(|e| syntax(e.message().to_string()))?;
    if file.schema_version != CAMPAIGN_SCHEMA_VERSION {
        return Err(declaration_error(
            "schema_version",
            format!("expected \"{CAMPAIGN_SCHEMA_VERSION}\""),
        ));
    }
    if !crate::scenario::is_valid_id(&file.id) {
        return Err(declaration_error("id", "use only [A-Za-z0-9_.-]"));
    }
    if file.tasks.is_empty() {
        return Err(declaration_error("tasks", "declare at least one task"));
    }
    let root = dir.join(file.root.as_deref().unwrap_or("."));
    let mut tasks: Vec<Task> = Vec::new();
    let mut schedule = Vec::new();
    for (i, decl) in file.tasks.iter().enumerate() {
        let at = |key: &str| format!("tasks[{i}].{key}");
        if !crate::scenario::is_valid_id(&decl.id) {
            return Err(declaration_error(at("id"), "use only [A-Za-z0-9_.-]"));
        }
        if tasks.iter().any(|t| t.id == decl.id) {
            return Err(declaration_error(
                at("id"),
                format!("task {:?} is declared twice", decl.id),
            ));
        }
        let kind = match decl.kind.as_str() {
            "scenario" => TaskKind::Scenario,
            "matrix" => TaskKind::Matrix,
            "evolve" => TaskKind::Evolve,
            other => {
                return Err(declaration_error(
                    at("kind"),
                    format!("{other:?} is not scenario, evolve or matrix"),
                ))
            }
        };
        let evidence = match decl.evidence.as_deref() {
            None | Some("fresh") => Evidence::Fresh,
            Some("replay") if kind == TaskKind::Scenario => Evidence::Replay,
            Some("replay") => {
                return Err(declaration_error(
                    at("evidence"),
                    "only scenario tasks replay recorded bundles",
                ))
            }
            Some(other) => {
                return Err(declaration_error(
                    at("evidence"),
                    format!("{other:?} is not fresh or replay"),
                ))
            }
        };
        if decl.repetitions == 0 || decl.repetitions > MAX_REPETITIONS {
            return Err(declaration_error(
                at("repetitions"),
                format!("must be between 1 and {MAX_REPETITIONS}"),
            ));
        }
        let (subject, definition) = task_definition(&root, kind, &decl.file)?;
        if definition.sha256 != decl.definition.sha256 || definition.files != decl.definition.files
        {
            return Err(ExperimentError::DefinitionDrift {
                task: decl.id.clone(),
                declared: format!(
                    "{} ({} files)",
                    decl.definition.sha256, decl.definition.files
                ),
                actual: format!("{} ({} files)", definition.sha256, definition.files),
            });
        }
        for repetition in 1..=decl.repetitions {
            schedule.push(ScheduledAttempt {
                schedule_id: schedule_id(&decl.id, repetition),
                task: tasks.len(),
                repetition,
            });
        }
        tasks.push(Task {
            id: decl.id.clone(),
            kind,
            evidence,
            file: decl.file.clone(),
            subject,
            repetitions: decl.repetitions,
            definition,
        });
    }
    Ok(Campaign {
        sha256: sha256_hex(bytes),
        file,
        root,
        tasks,
        schedule,
    })
}
