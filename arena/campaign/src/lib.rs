//! Chio Arena's pinned campaigns: a declaration that fixes tasks,
//! repetitions, limits and the exact bytes each task reads, an attempt
//! ledger with one row per scheduled attempt, and the portfolio over it.
//! Built on matrices (`chio-experiment`); the only arena crate that runs
//! the `git` command ([`git`]).
//!
//! A declaration (`chio.arena.campaign/v2`, TOML) names tasks (scenario
//! runs, replays of recorded bundles, evolutions, matrices), how many
//! repetitions each gets, the limits each attempt must stay within (wall
//! seconds, steps, kernel evaluations, generations: finite numbers of zero
//! or more, all four required), and each task's definition hash
//! (`chio_experiment::definition`). With a `revision`, the declaration is
//! **pinned**: every definition hash is computed from the repository's
//! objects at that commit ([`git`]), so later edits of the working tree
//! cannot rewrite it. Without one it is in **working-tree** mode and hashes
//! the files as they are on disk. Either way loading recomputes every
//! definition hash and refuses one that no longer matches, so nothing runs
//! against inputs other than the pinned ones. An optional `[runtime]` names
//! the runtime every attempt must run on, and an optional `[cost]` the
//! rates an attempt's estimated cost is computed with. Schedule ids are
//! `<task>/<repetition>` with the repetition written on two digits from
//! `01`. The ledger ([`ledger`]) and the report ([`portfolio`]) only read
//! files: they never rescore a native outcome, and the report checks each
//! row against the evidence it names ([`evidence`]). Module map:
//! - [`evidence`]: what a row's evidence and source revision say of it;
//! - [`git`]: pinned revisions and the commit an attempt ran from;
//! - [`ledger`]: the ledger, its template, its checks and the import;
//! - [`portfolio`]: the report, and [`report`] its HTML page;
//! - [`task`]: a task's files, its definition and its validation.

#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod evidence;
pub mod git;
pub mod ledger;
pub mod portfolio;
pub mod report;
pub mod task;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use chio_experiment::definition::{sha256_hex, Definition};
use chio_experiment::error::ExperimentError;
use git::PinnedTree;
use task::{declared_task, private_copy};
pub use task::{
    pinned_task_definition, task_definition, task_definition_at, task_files, task_inputs, TaskFiles,
};

/// Schema id of a campaign declaration.
pub const CAMPAIGN_SCHEMA_VERSION: &str = "chio.arena.campaign/v2";
/// The previous schema id, refused with a migration note.
pub const CAMPAIGN_SCHEMA_V1: &str = "chio.arena.campaign/v1";
/// The limits every task declares, in report order.
pub const LIMIT_NAMES: &[&str] = &["wall_seconds", "steps", "kernel_evaluations", "generations"];

/// The largest number of repetitions a task may declare.
pub const MAX_REPETITIONS: u32 = 99;

/// The declaration as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    /// The commit whose objects the definitions are read from; absent for
    /// working-tree mode.
    pub revision: Option<String>,
    /// The runtime every attempt must run on.
    pub runtime: Option<RuntimeDecl>,
    /// The rates an attempt's estimated cost is computed with.
    pub cost: Option<CostDecl>,
    /// The pinned tasks.
    pub tasks: Vec<TaskDecl>,
}

/// `[runtime]`: what an attempt's runtime identity must match; every key
/// given must match, a key left out is not compared.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeDecl {
    /// The `chio` version.
    pub chio_version: String,
    /// SHA-256 of the `chio` binary.
    pub binary_sha256: Option<String>,
    /// `<os>-<arch>`, such as `linux-x86_64`.
    pub platform: Option<String>,
}

/// `[cost]`: the rates of an estimated cost.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostDecl {
    /// The unit costs are stated in, such as `USD`.
    pub currency: String,
    /// Cost of one kernel evaluation.
    pub per_kernel_evaluation: f64,
    /// Cost of one second of wall time.
    pub per_wall_second: f64,
}

/// `limits = { ... }` as written (numbers of either TOML kind).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsDecl {
    /// Wall seconds an attempt may take.
    pub wall_seconds: toml::Value,
    /// Scenario steps an attempt may run.
    pub steps: toml::Value,
    /// Kernel evaluations an attempt may spend.
    pub kernel_evaluations: toml::Value,
    /// Evolution generations an attempt may run.
    pub generations: toml::Value,
}

/// A task's validated limits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limits {
    /// Wall seconds.
    pub wall_seconds: f64,
    /// Scenario steps.
    pub steps: f64,
    /// Kernel evaluations.
    pub kernel_evaluations: f64,
    /// Generations.
    pub generations: f64,
}

impl Limits {
    /// The limit by name (one of [`LIMIT_NAMES`]).
    pub fn get(&self, name: &str) -> f64 {
        match name {
            "wall_seconds" => self.wall_seconds,
            "steps" => self.steps,
            "kernel_evaluations" => self.kernel_evaluations,
            _ => self.generations,
        }
    }
}

/// `[[tasks]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskDecl {
    /// The task's id; schedule ids start with it.
    pub id: String,
    /// `scenario`, `evolve` or `matrix`.
    pub kind: String,
    /// The scenario or matrix file, relative to the root.
    pub file: String,
    /// `live` (default) or `fixture`: what evidence fills the task's rows.
    pub evidence: Option<String>,
    /// How many attempts are scheduled.
    pub repetitions: u32,
    /// What each attempt may spend; required.
    pub limits: Option<LimitsDecl>,
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
    /// A run executed live for this attempt.
    Live,
    /// A replay of a recorded bundle (a fixture).
    Fixture,
}

impl Evidence {
    /// The word used in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Evidence::Live => "live",
            Evidence::Fixture => "fixture",
        }
    }
}

/// How the declaration's definition hashes are read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DefinitionMode {
    /// From the repository's objects at a commit.
    Pinned {
        /// The full commit id.
        commit: String,
    },
    /// From the files on disk, as they are now.
    WorkingTree,
}

/// A validated task with its recomputed definition.
#[derive(Debug, Clone, PartialEq)]
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
    /// What each attempt may spend.
    pub limits: Limits,
    /// The definition as hashed now (equal to the pinned one).
    pub definition: Definition,
    /// The files the task reads, relative to the root.
    pub inputs: Vec<PathBuf>,
    /// A scenario's fixture files as its bundle records them (path below
    /// `inputs/` to SHA-256), read from the pinned definition; a bundle
    /// holding other fixture bytes ran another world.
    pub fixtures: BTreeMap<String, String>,
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
#[derive(Debug, Clone, PartialEq)]
pub struct Campaign {
    /// The declaration as written.
    pub file: CampaignFile,
    /// SHA-256 of the declaration's exact bytes; a ledger records it.
    pub sha256: String,
    /// The definition root on disk.
    pub root: PathBuf,
    /// Pinned to a commit, or the working tree.
    pub mode: DefinitionMode,
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

pub(crate) fn declaration_error(
    field: impl Into<String>,
    reason: impl Into<String>,
) -> ExperimentError {
    ExperimentError::Declaration {
        field: field.into(),
        reason: reason.into(),
    }
}

/// Reads and validates a declaration, recomputing every definition hash.
pub fn load_campaign(path: &Path) -> Result<Campaign, ExperimentError> {
    let bytes = ExperimentError::read(path)?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    parse_campaign(&bytes, &dir, &path.display().to_string())
}

/// A TOML number as a finite `f64` of zero or more.
fn limit_value(value: &toml::Value, field: &str) -> Result<f64, ExperimentError> {
    let number = match value {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        _ => return Err(declaration_error(field, "must be a number")),
    };
    if !number.is_finite() {
        return Err(declaration_error(field, "must be finite"));
    }
    if number < 0.0 {
        return Err(declaration_error(field, "must be zero or more"));
    }
    Ok(number)
}

pub(crate) fn limits(decl: Option<&LimitsDecl>, at: &str) -> Result<Limits, ExperimentError> {
    let decl = decl.ok_or_else(|| {
        declaration_error(
            at,
            "declare limits = { wall_seconds = N, steps = N, kernel_evaluations = N, generations = N }",
        )
    })?;
    Ok(Limits {
        wall_seconds: limit_value(&decl.wall_seconds, &format!("{at}.wall_seconds"))?,
        steps: limit_value(&decl.steps, &format!("{at}.steps"))?,
        kernel_evaluations: limit_value(
            &decl.kernel_evaluations,
            &format!("{at}.kernel_evaluations"),
        )?,
        generations: limit_value(&decl.generations, &format!("{at}.generations"))?,
    })
}

/// Validates declaration bytes; `dir` is the declaration's folder.
pub fn parse_campaign(bytes: &[u8], dir: &Path, name: &str) -> Result<Campaign, ExperimentError> {
    let syntax = |reason: String| ExperimentError::Syntax {
        path: name.to_string(),
        reason,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| syntax("not UTF-8 text".into()))?;
    let file: CampaignFile = toml::from_str(text).map_err(|e| syntax(e.message().to_string()))?;
    check_header(&file)?;
    let root = dir.join(file.root.as_deref().unwrap_or("."));
    let pinned = match &file.revision {
        None => None,
        Some(revision) => {
            if !git::is_full_commit_id(revision) {
                return Err(declaration_error(
                    "revision",
                    format!("{revision:?} is not a commit id: a pin names one commit by its full id (40 or 64 lowercase hex digits, as `git rev-parse HEAD` prints it), since a branch, a tag, HEAD or an abbreviation can move or become ambiguous"),
                ));
            }
            let tree = PinnedTree::read(&root, revision)?;
            let copy = private_copy(&tree)?;
            Some((tree, copy))
        }
    };
    let mut tasks: Vec<Task> = Vec::new();
    let mut schedule = Vec::new();
    for (i, decl) in file.tasks.iter().enumerate() {
        let task = declared_task(i, decl, &tasks, &root, pinned.as_ref())?;
        for repetition in 1..=decl.repetitions {
            schedule.push(ScheduledAttempt {
                schedule_id: schedule_id(&decl.id, repetition),
                task: tasks.len(),
                repetition,
            });
        }
        tasks.push(task);
    }
    Ok(Campaign {
        sha256: sha256_hex(bytes),
        mode: match &pinned {
            Some((tree, _)) => DefinitionMode::Pinned {
                commit: tree.commit.clone(),
            },
            None => DefinitionMode::WorkingTree,
        },
        file,
        root,
        tasks,
        schedule,
    })
}

/// Checks the schema id, the campaign id, that tasks exist and `[cost]`.
fn check_header(file: &CampaignFile) -> Result<(), ExperimentError> {
    if file.schema_version == CAMPAIGN_SCHEMA_V1 {
        return Err(declaration_error(
            "schema_version",
            format!(
                "{CAMPAIGN_SCHEMA_V1} declarations have no limits; set schema_version = \"{CAMPAIGN_SCHEMA_VERSION}\", give every task limits, and write evidence as live or fixture (docs/campaigns.md)"
            ),
        ));
    }
    if file.schema_version != CAMPAIGN_SCHEMA_VERSION {
        return Err(declaration_error(
            "schema_version",
            format!("expected \"{CAMPAIGN_SCHEMA_VERSION}\""),
        ));
    }
    if !chio_arena::scenario::is_valid_id(&file.id) {
        return Err(declaration_error("id", "use only [A-Za-z0-9_.-]"));
    }
    if file.tasks.is_empty() {
        return Err(declaration_error("tasks", "declare at least one task"));
    }
    if let Some(cost) = &file.cost {
        for (key, value) in [
            ("cost.per_kernel_evaluation", cost.per_kernel_evaluation),
            ("cost.per_wall_second", cost.per_wall_second),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(declaration_error(
                    key,
                    "must be a finite number of zero or more",
                ));
            }
        }
    }
    Ok(())
}
