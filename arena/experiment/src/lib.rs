//! Chio Arena's policy matrices: cells that differ from a base scenario by declared
//! deltas, run over paired repetitions under a declared protocol, judged by
//! paired bootstrap and checked by declared validators.
//!
//! A matrix file (`chio.arena.matrix/v2`, TOML) states its `hypothesis`,
//! names a base scenario and declares cells from `[axes]` (the cartesian
//! product, named by joining values with ` / `, axes in declaration order)
//! with `[values]` deltas, and from named `[variants]`. A delta may replace a
//! kernel's guard pipeline (`guards`), keys of a grant (`grants`), an
//! adversary population's parameters (`adversaries`), or the topology
//! (`topology`). `[protocol]` fixes the repetitions and the load: how many
//! runs go at once (`concurrency`), how long one attempt may take
//! (`timeout`) and how many attempts a run failing for an infrastructure
//! reason gets (`attempts`). `[[validation]]` blocks declare cell metrics and
//! their thresholds. Everything is refused at load with a message naming the
//! fix: a delta on a baseline value, a missing delta, a cell declared twice,
//! a reference that is no cell or a partial grid reference, a criterion no
//! metric provides, a validity metric that does not exist, a validator
//! metric that does not exist or is declared twice, a delta naming nothing
//! in the base scenario, or a cell whose scenario the loader refuses.
//!
//! Two hashes identify a matrix. The definition hash (the same rows a
//! campaign pins, over the matrix file and every file its base scenario
//! reads, relative to the matrix's `root`) pins its bytes. The design hash
//! covers only what decides a run: every cell's name, topology and scenario
//! after its deltas, and the rows of the files the base scenario reads. It
//! seeds the repetitions and keys the run records, so editing the title,
//! the hypothesis, the load, the verdict or the validators changes no run:
//! repetition `k` runs every cell with the same seed, so cells are paired.
//!
//! Module map:
//! - [`metrics`]: what a run measures, what a verdict may cite and what a
//!   validator may judge;
//! - [`draws`]: the adversary members each run draws from its seed;
//! - [`bootstrap`]: paired bootstrap intervals;
//! - [`execute`]: running cells with attempts, timeouts, a run ledger, a
//!   state file and `--resume`;
//! - [`synthesis`]: rates, gaps, the grid, validators and verdicts as JSON,
//!   Markdown and HTML;
//! - [`report`]: the HTML page of a synthesis (the grid with intervals);
//! - [`definition`]: definition hashes and the files a scenario run reads
//!   (the rows a campaign pins as well);
//! - [`error`]: [`ExperimentError`], the error table matrices and campaigns
//!   share.
//!
//! This crate depends on the scenario core (`chio-arena`) and the adversary
//! search (`chio-adversary`, only through the populations a cell's scenario
//! declares); campaigns (`chio-campaign`) are built on it, never the other
//! way round.

#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod bootstrap;
mod cells;
pub mod definition;
pub mod draws;
pub mod error;
pub mod execute;
mod load;
pub mod metrics;
pub mod report;
pub mod synthesis;
pub use error::{ExperimentError, EXPERIMENT_ERROR_CLASSES, EXPERIMENT_ERROR_CODES};
use load::set_seed;
pub use load::{design_hash, load_matrix, repetition_seed};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::definition::{
    definition_hash, relative_to, rows_json, scenario_input_paths, sha256_hex, Definition,
};
use chio_arena::{parse_scenario, Scenario};
use metrics::{
    metric_names, validator_metric_names, Metric, ValidatorMetric, CRITERION_METRICS,
    VALIDITY_METRICS,
};

/// Schema id of a matrix file.
pub const MATRIX_SCHEMA_VERSION: &str = "chio.arena.matrix/v2";
/// The schema id of the previous matrix files, refused with a migration note.
pub const MATRIX_SCHEMA_V1: &str = "chio.arena.matrix/v1";
/// Seconds one attempt of a run may take when `[protocol] timeout` is absent.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 300.0;
/// The longest timeout a protocol may declare, in seconds (one day).
pub const MAX_TIMEOUT_SECONDS: f64 = 86_400.0;
/// Attempts per run when `[protocol] attempts` is absent.
pub const DEFAULT_ATTEMPTS: u32 = 1;
/// The most attempts a protocol may declare per run.
pub const MAX_ATTEMPTS: u32 = 10;
/// The largest concurrency a protocol may declare.
pub const MAX_CONCURRENCY: u32 = 256;
/// Resampling draws when `[verdict] draws` is absent.
pub const DEFAULT_DRAWS: u32 = 10_000;
/// Resampling seed when `[verdict] seed` is absent.
pub const DEFAULT_BOOTSTRAP_SEED: u64 = 20_260_729;
/// The largest repetition count a matrix may declare.
pub const MAX_REPETITIONS: u32 = 1_000;
/// The largest number of draws a verdict may declare.
pub const MAX_DRAWS: u32 = 1_000_000;
/// Topologies a cell's delta may declare: `embedded` (every node in the
/// controller's process) and `local` (node processes and trust-control the
/// controller starts on loopback). A cell that declares none runs where
/// `chio arena matrix --topology` says, embedded by default.
pub const TOPOLOGIES: &[&str] = &["embedded", "local"];

/// The matrix file as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    /// Must be `chio.arena.matrix/v1`.
    pub schema_version: String,
    /// The matrix's id, named by its synthesis.
    pub id: String,
    /// The synthesis heading.
    pub title: String,
    /// What the matrix sets out to show, printed at the head of the synthesis.
    pub hypothesis: String,
    /// The base scenario, relative to the matrix file.
    pub scenario: String,
    /// The definition root, relative to the matrix file's folder (default `.`).
    pub root: Option<String>,
    /// `[protocol]`.
    pub protocol: ProtocolSection,
    /// `[axes]`: axis name to values, the first value the baseline.
    #[serde(default)]
    pub axes: BTreeMap<Spanned<String>, Vec<String>>,
    /// `[values.<axis>.<value>]`: the delta of each non-baseline value.
    #[serde(default)]
    pub values: BTreeMap<String, BTreeMap<String, Delta>>,
    /// `[variants.<name>]`: irregular cells and their deltas.
    #[serde(default)]
    pub variants: BTreeMap<Spanned<String>, Delta>,
    /// `[verdict]`.
    pub verdict: VerdictSection,
    /// `[[validation]]`: cell metrics and how they are judged.
    #[serde(default)]
    pub validation: Vec<ValidationDecl>,
}

/// `[protocol]`: the repetitions, declared in advance, and the load.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolSection {
    /// Runs per cell, declared in advance.
    pub repetitions: u32,
    /// Runs at once; absent means the machine's cores. Never changes an output.
    pub concurrency: Option<u32>,
    /// Seconds one attempt of a run may take before it counts as failed.
    pub timeout: Option<toml::Value>,
    /// Attempts a run gets when it fails for an infrastructure reason.
    pub attempts: Option<u32>,
}

/// `[[validation]]` as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationDecl {
    /// The validator metric judged.
    pub metric: String,
    /// The smallest value that passes (inclusive).
    pub min: Option<toml::Value>,
    /// The largest value that passes (inclusive).
    pub max: Option<toml::Value>,
    /// The cells judged; absent means every cell.
    pub cells: Option<Vec<String>>,
}

/// A validated `[[validation]]` block.
#[derive(Debug, Clone, PartialEq)]
pub struct Validator {
    /// The metric judged over each of its cells.
    pub metric: ValidatorMetric,
    /// The smallest passing value, inclusive.
    pub min: Option<f64>,
    /// The largest passing value, inclusive.
    pub max: Option<f64>,
    /// Indices of the cells it judges, in cell order.
    pub cells: Vec<usize>,
}

impl Validator {
    /// Whether `value` passes; an undefined value never does.
    pub fn passes(&self, value: Option<f64>) -> bool {
        value.is_some_and(|v| {
            self.min.is_none_or(|min| v >= min) && self.max.is_none_or(|max| v <= max)
        })
    }

    /// The thresholds as written, such as `min 1` or `min 0.2, max 0.8`.
    pub fn thresholds(&self) -> String {
        let mut parts = Vec::new();
        if let Some(min) = self.min {
            parts.push(format!("min {min}"));
        }
        if let Some(max) = self.max {
            parts.push(format!("max {max}"));
        }
        parts.join(", ")
    }
}

/// What a cell changes in the base scenario.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delta {
    /// Kernel id to its replacement guard pipeline (guard ids in order).
    pub guards: Option<BTreeMap<String, Vec<String>>>,
    /// Grant id to the grant keys it replaces.
    pub grants: Option<BTreeMap<String, toml::Table>>,
    /// Adversary population to its replacement `[adversaries.params]`.
    pub adversaries: Option<BTreeMap<String, toml::Table>>,
    /// The topology the cell runs on.
    pub topology: Option<String>,
}

impl Delta {
    /// Every key of the scenario this delta sets: a kernel's whole guard
    /// pipeline, one key of a grant, a population's whole parameters, the
    /// topology.
    fn keys(&self) -> BTreeSet<String> {
        let mut keys = BTreeSet::new();
        for kernel in self.guards.iter().flat_map(BTreeMap::keys) {
            keys.insert(format!("guards.{kernel}"));
        }
        for (grant, table) in self.grants.iter().flatten() {
            for key in table.keys() {
                keys.insert(format!("grants.{grant}.{key}"));
            }
        }
        for population in self.adversaries.iter().flat_map(BTreeMap::keys) {
            keys.insert(format!("adversaries.{population}"));
        }
        if self.topology.is_some() {
            keys.insert("topology".to_string());
        }
        keys
    }

    /// Whether the delta declares tables but sets no key through them
    /// (`guards = {}`, `grants = {}` or a grant with no key, `adversaries =
    /// {}`): written as a change, it is none.
    fn changes_nothing(&self) -> bool {
        !self.is_empty() && self.keys().is_empty()
    }

    fn is_empty(&self) -> bool {
        self.guards.is_none()
            && self.grants.is_none()
            && self.adversaries.is_none()
            && self.topology.is_none()
    }
}

/// `[verdict]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictSection {
    /// The metric the verdict rests on.
    pub criterion: String,
    /// The cell every gap is measured against: a name, or axis to value.
    pub reference: Reference,
    /// Boolean metrics a run must satisfy to enter an aggregate.
    #[serde(default)]
    pub validity: Vec<String>,
    /// Resampling draws.
    pub draws: Option<u32>,
    /// Resampling seed.
    pub seed: Option<u64>,
}

/// A reference cell.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Reference {
    /// A cell by name.
    Name(String),
    /// A grid cell by its value on every axis.
    Grid(BTreeMap<String, String>),
}

/// One cell: its name, its delta and its scenario after the delta.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The cell's name (` / `-joined axis values, or the variant's name).
    pub name: String,
    /// The axis values of a grid cell, in axis order; empty for a variant.
    pub coordinates: Vec<String>,
    /// The scenario text after the cell's deltas.
    pub scenario_text: String,
    /// The topology the cell runs on: the one its deltas declare, else
    /// `embedded` (the name the design hash records for an undeclared one).
    pub topology: String,
    /// Whether a delta of the cell declared its topology; a cell that
    /// declares none runs where the command's `--topology` says.
    pub topology_declared: bool,
}

impl Cell {
    /// The cell's scenario text with `seed` written into its `rng_seed`
    /// (and `[determinism] rng_seed`): the bytes a run of the cell loads,
    /// which nodes of a distributed topology are sent.
    pub fn seeded_text(&self, seed: u64) -> Result<String, ExperimentError> {
        let mut table: toml::Table =
            self.scenario_text
                .parse()
                .map_err(|e: toml::de::Error| ExperimentError::Delta {
                    field: self.name.clone(),
                    reason: e.message().to_string(),
                })?;
        set_seed(&mut table, seed);
        Ok(table.to_string())
    }
}

/// A loaded, validated matrix.
#[derive(Debug, Clone)]
pub struct Matrix {
    file: MatrixFile,
    base_dir: PathBuf,
    input_files: Vec<PathBuf>,
    definition: Definition,
    design: String,
    timeout: f64,
    attempts: u32,
    validators: Vec<Validator>,
    axes: Vec<(String, Vec<String>)>,
    cells: Vec<Cell>,
    reference: usize,
    criterion: Metric,
    validity: Vec<Metric>,
    draws: u32,
    seed: u64,
}

impl Matrix {
    /// The matrix id.
    pub fn id(&self) -> &str {
        &self.file.id
    }
    /// The matrix title.
    pub fn title(&self) -> &str {
        &self.file.title
    }
    /// Every file the matrix reads, as paths on disk.
    pub fn input_files(&self) -> &[PathBuf] {
        &self.input_files
    }
    /// The definition hash and its rows.
    pub fn definition(&self) -> &Definition {
        &self.definition
    }
    /// The design hash: what decides a run (see the module doc).
    pub fn design_sha256(&self) -> &str {
        &self.design
    }
    /// The hypothesis the synthesis opens with.
    pub fn hypothesis(&self) -> &str {
        self.file.hypothesis.trim()
    }
    /// The declared concurrency, if any (absent: the machine's cores).
    pub fn concurrency(&self) -> Option<u32> {
        self.file.protocol.concurrency
    }
    /// Seconds one attempt may take.
    pub fn timeout_seconds(&self) -> f64 {
        self.timeout
    }
    /// Attempts a run gets.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
    /// The validators in declaration order.
    pub fn validators(&self) -> &[Validator] {
        &self.validators
    }
    /// The default output folder's name: the id and the repetitions, so two
    /// protocols of one matrix never share a folder.
    pub fn folder_name(&self) -> String {
        format!("{}-r{}", self.file.id, self.repetitions())
    }
    /// The axes in declaration order.
    pub fn axes(&self) -> &[(String, Vec<String>)] {
        &self.axes
    }
    /// The cells: grid cells first (first axis slowest), then variants.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }
    /// Index of the reference cell.
    pub fn reference(&self) -> usize {
        self.reference
    }
    /// The criterion metric.
    pub fn criterion(&self) -> Metric {
        self.criterion
    }
    /// The validity metrics.
    pub fn validity(&self) -> &[Metric] {
        &self.validity
    }
    /// Repetitions per cell.
    pub fn repetitions(&self) -> u32 {
        self.file.protocol.repetitions
    }
    /// Resampling draws.
    pub fn draws(&self) -> u32 {
        self.draws
    }
    /// Resampling seed.
    pub fn bootstrap_seed(&self) -> u64 {
        self.seed
    }

    /// The seed of repetition `k` (0-based), the same for every cell: the
    /// first 8 bytes (big-endian) of SHA-256 over the design hash's hex,
    /// `:`, and `k` in decimal, masked to 53 bits so it survives JSON.
    pub fn repetition_seed(&self, repetition: u32) -> u64 {
        repetition_seed(&self.design, repetition)
    }

    /// A cell's scenario for one repetition: its text with the seed set.
    pub fn scenario_for(&self, cell: &Cell, repetition: u32) -> Result<Scenario, ExperimentError> {
        let text = cell.seeded_text(self.repetition_seed(repetition))?;
        parse_scenario(&text, &self.base_dir).map_err(|source| ExperimentError::Scenario {
            cell: cell.name.clone(),
            source: Box::new(source),
        })
    }
}
