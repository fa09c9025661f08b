//! Policy matrices: cells that differ from a base scenario by declared
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
//!   Markdown and HTML.

pub mod bootstrap;
pub mod draws;
pub mod execute;
pub mod metrics;
pub mod synthesis;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::campaign::definition::{
    definition_hash, relative_to, rows_json, scenario_input_paths, sha256_hex, Definition,
};
use crate::experiment_error::ExperimentError;
use crate::{parse_scenario, Scenario};
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
/// Topologies a matrix run can use in this build.
pub const TOPOLOGIES: &[&str] = &["embedded"];

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
    /// The topology the cell runs on.
    pub topology: String,
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
        let seed = self.repetition_seed(repetition);
        let mut table: toml::Table =
            cell.scenario_text
                .parse()
                .map_err(|e: toml::de::Error| ExperimentError::Delta {
                    field: cell.name.clone(),
                    reason: e.message().to_string(),
                })?;
        set_seed(&mut table, seed);
        parse_scenario(&table.to_string(), &self.base_dir).map_err(|source| {
            ExperimentError::Scenario {
                cell: cell.name.clone(),
                source,
            }
        })
    }
}

/// See [`Matrix::repetition_seed`].
pub fn repetition_seed(design_sha256: &str, repetition: u32) -> u64 {
    let digest = sha256_hex(format!("{design_sha256}:{repetition}").as_bytes());
    let head = u64::from_str_radix(&digest[..16], 16).unwrap_or(0);
    head & ((1u64 << 53) - 1)
}

fn set_seed(table: &mut toml::Table, seed: u64) {
    // Seeds are masked to 53 bits, so they fit an i64.
    let value = toml::Value::Integer(seed as i64);
    table.insert("rng_seed".into(), value.clone());
    if let Some(toml::Value::Table(det)) = table.get_mut("determinism") {
        if det.contains_key("rng_seed") {
            det.insert("rng_seed".into(), value);
        }
    }
}

fn matrix_error(field: impl Into<String>, reason: impl Into<String>) -> ExperimentError {
    ExperimentError::Matrix {
        field: field.into(),
        reason: reason.into(),
    }
}

/// Reads and validates a matrix file.
pub fn load_matrix(path: &Path) -> Result<Matrix, ExperimentError> {
    let bytes = std::fs::read(path).map_err(|e| ExperimentError::Unreadable {
        path: path.display().to_string(),
        reason: e.kind().to_string(),
    })?;
    let name = path.display().to_string();
    let text = std::str::from_utf8(&bytes).map_err(|_| ExperimentError::Syntax {
        path: name.clone(),
        reason: "not UTF-8 text".into(),
    })?;
    let file: MatrixFile = toml::from_str(text).map_err(|e| ExperimentError::Syntax {
        path: name.clone(),
        reason: e.message().to_string(),
    })?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    validate(file, path, &dir)
}

fn validate(file: MatrixFile, path: &Path, dir: &Path) -> Result<Matrix, ExperimentError> {
    if file.schema_version == MATRIX_SCHEMA_V1 {
        return Err(matrix_error(
            "schema_version",
            format!(
                "{MATRIX_SCHEMA_V1} files state no hypothesis; set schema_version = \"{MATRIX_SCHEMA_VERSION}\" and add a top-level hypothesis (docs/matrices.md shows both)"
            ),
        ));
    }
    if file.schema_version != MATRIX_SCHEMA_VERSION {
        return Err(matrix_error(
            "schema_version",
            format!("expected \"{MATRIX_SCHEMA_VERSION}\""),
        ));
    }
    if !crate::scenario::is_valid_id(&file.id) {
        return Err(matrix_error("id", "use only [A-Za-z0-9_.-]"));
    }
    if file.hypothesis.trim().is_empty() {
        return Err(matrix_error(
            "hypothesis",
            "state what the matrix sets out to show; it opens the synthesis",
        ));
    }
    let repetitions = file.protocol.repetitions;
    if repetitions == 0 || repetitions > MAX_REPETITIONS {
        return Err(matrix_error(
            "protocol.repetitions",
            format!("must be between 1 and {MAX_REPETITIONS}"),
        ));
    }
    if let Some(concurrency) = file.protocol.concurrency {
        if concurrency == 0 || concurrency > MAX_CONCURRENCY {
            return Err(matrix_error(
                "protocol.concurrency",
                format!(
                    "must be between 1 and {MAX_CONCURRENCY}, or absent for the machine's cores"
                ),
            ));
        }
    }
    let timeout = match &file.protocol.timeout {
        None => DEFAULT_TIMEOUT_SECONDS,
        Some(value) => {
            let seconds = number(value, "protocol.timeout")?;
            if seconds <= 0.0 || seconds > MAX_TIMEOUT_SECONDS {
                return Err(matrix_error(
                    "protocol.timeout",
                    format!("must be more than 0 and at most {MAX_TIMEOUT_SECONDS} seconds"),
                ));
            }
            seconds
        }
    };
    let attempts = file.protocol.attempts.unwrap_or(DEFAULT_ATTEMPTS);
    if attempts == 0 || attempts > MAX_ATTEMPTS {
        return Err(matrix_error(
            "protocol.attempts",
            format!("must be between 1 and {MAX_ATTEMPTS}"),
        ));
    }

    // The base scenario and the files it reads.
    let scenario_path = dir.join(&file.scenario);
    let base =
        crate::load_scenario(&scenario_path).map_err(|source| ExperimentError::Scenario {
            cell: "base".into(),
            source,
        })?;
    base.require_world()
        .map_err(|source| ExperimentError::Scenario {
            cell: "base".into(),
            source,
        })?;
    let base_text =
        std::fs::read_to_string(&scenario_path).map_err(|e| ExperimentError::Unreadable {
            path: scenario_path.display().to_string(),
            reason: e.kind().to_string(),
        })?;
    let root = dir.join(file.root.as_deref().unwrap_or("."));
    let scenario_rel = relative_to(&root, &scenario_path)?;
    let mut rel_inputs = vec![relative_to(&root, path)?];
    rel_inputs.extend(scenario_input_paths(&base, &scenario_rel));
    let definition = definition_hash(&root, &rel_inputs)?;
    let base_definition = definition_hash(&root, &rel_inputs[1..])?;
    let input_files = rel_inputs.iter().map(|p| root.join(p)).collect();

    // Axes in declaration order, then the grid.
    let mut axes: Vec<(usize, String, Vec<String>)> = file
        .axes
        .iter()
        .map(|(k, v)| (k.span().start, k.get_ref().clone(), v.clone()))
        .collect();
    axes.sort_by_key(|(start, _, _)| *start);
    let axes: Vec<(String, Vec<String>)> = axes.into_iter().map(|(_, k, v)| (k, v)).collect();
    for (axis, values) in &axes {
        if values.is_empty() {
            return Err(matrix_error(
                format!("axes.{axis}"),
                "list at least one value",
            ));
        }
        let deltas = file.values.get(axis);
        let baseline = &values[0];
        if deltas.and_then(|d| d.get(baseline)).is_some() {
            return Err(ExperimentError::BaselineDelta {
                axis: axis.clone(),
                value: baseline.clone(),
            });
        }
        for value in &values[1..] {
            if deltas
                .and_then(|d| d.get(value))
                .is_none_or(Delta::is_empty)
            {
                return Err(ExperimentError::MissingDelta {
                    axis: axis.clone(),
                    value: value.clone(),
                    baseline: baseline.clone(),
                    declared: deltas
                        .map(|d| {
                            d.keys()
                                .map(|k| format!("{k:?}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        })
                        .unwrap_or_default(),
                });
            }
        }
    }
    for (axis, deltas) in &file.values {
        for value in deltas.keys() {
            let declared = axes
                .iter()
                .any(|(a, values)| a == axis && values.contains(value));
            if !declared {
                return Err(ExperimentError::StrayDelta {
                    field: format!("values.{axis}.{value}"),
                });
            }
        }
    }

    let base_table: toml::Table = base_text
        .parse()
        .map_err(|e: toml::de::Error| matrix_error("scenario", e.message().to_string()))?;
    let mut cells: Vec<Cell> = Vec::new();
    let mut push_cell = |name: String,
                         coordinates: Vec<String>,
                         deltas: Vec<(String, &Delta)>|
     -> Result<(), ExperimentError> {
        if cells.iter().any(|c| c.name == name) {
            return Err(ExperimentError::DuplicateCell { cell: name });
        }
        let mut table = base_table.clone();
        let mut topology = TOPOLOGIES[0].to_string();
        for (field, delta) in deltas {
            apply_delta(&mut table, &field, delta)?;
            if let Some(t) = &delta.topology {
                if !TOPOLOGIES.contains(&t.as_str()) {
                    return Err(ExperimentError::Delta {
                        field: format!("{field}.topology"),
                        reason: format!(
                            "topology {t:?} is not one a matrix run can use here ({})",
                            TOPOLOGIES.join(", ")
                        ),
                    });
                }
                topology = t.clone();
            }
        }
        let scenario_text = table.to_string();
        parse_scenario(&scenario_text, base.base_dir()).map_err(|source| {
            ExperimentError::Scenario {
                cell: name.clone(),
                source,
            }
        })?;
        cells.push(Cell {
            name,
            coordinates,
            scenario_text,
            topology,
        });
        Ok(())
    };
    if !axes.is_empty() {
        let mut odometer = vec![0usize; axes.len()];
        loop {
            let coordinates: Vec<String> = odometer
                .iter()
                .zip(&axes)
                .map(|(i, (_, values))| values[*i].clone())
                .collect();
            let deltas: Vec<(String, &Delta)> = axes
                .iter()
                .zip(&coordinates)
                .filter_map(|((axis, _), value)| {
                    file.values
                        .get(axis)
                        .and_then(|d| d.get(value))
                        .map(|d| (format!("values.{axis}.{value}"), d))
                })
                .collect();
            push_cell(coordinates.join(" / "), coordinates.clone(), deltas)?;
            // Advance the last axis fastest, so the first axis is the slowest.
            let mut position = axes.len();
            loop {
                if position == 0 {
                    break;
                }
                position -= 1;
                odometer[position] += 1;
                if odometer[position] < axes[position].1.len() {
                    break;
                }
                odometer[position] = 0;
                if position == 0 {
                    position = usize::MAX;
                    break;
                }
            }
            if position == usize::MAX {
                break;
            }
        }
    }
    let mut variants: Vec<(usize, &String, &Delta)> = file
        .variants
        .iter()
        .map(|(k, v)| (k.span().start, k.get_ref(), v))
        .collect();
    variants.sort_by_key(|(start, _, _)| *start);
    for (_, name, delta) in variants {
        push_cell(
            name.clone(),
            Vec::new(),
            vec![(format!("variants.{name}"), delta)],
        )?;
    }
    if cells.is_empty() {
        return Err(matrix_error(
            "axes",
            "declare at least one cell, from [axes] or [variants]",
        ));
    }

    let cell_list = || {
        cells
            .iter()
            .map(|c| format!("{:?}", c.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let reference = match &file.verdict.reference {
        Reference::Name(name) => cells.iter().position(|c| c.name == *name).ok_or_else(|| {
            ExperimentError::UnknownReference {
                reference: format!("{name:?}"),
                cells: cell_list(),
            }
        })?,
        Reference::Grid(map) => {
            let written = format!("{map:?}");
            if let Some(axis) = map.keys().find(|k| !axes.iter().any(|(a, _)| a == *k)) {
                return Err(ExperimentError::UnknownReference {
                    reference: format!("{written} (no axis {axis:?})"),
                    cells: cell_list(),
                });
            }
            let missing: Vec<String> = axes
                .iter()
                .filter(|(a, _)| !map.contains_key(a))
                .map(|(a, _)| format!("{a:?}"))
                .collect();
            if !missing.is_empty() {
                return Err(ExperimentError::PartialReference {
                    missing: missing.join(", "),
                });
            }
            let coordinates: Vec<String> = axes.iter().map(|(a, _)| map[a].clone()).collect();
            cells
                .iter()
                .position(|c| !c.coordinates.is_empty() && c.coordinates == coordinates)
                .ok_or_else(|| ExperimentError::UnknownReference {
                    reference: written,
                    cells: cell_list(),
                })?
        }
    };
    let criterion = Metric::parse(&file.verdict.criterion)
        .filter(|m| CRITERION_METRICS.contains(m))
        .ok_or_else(|| ExperimentError::UnknownCriterion {
            criterion: file.verdict.criterion.clone(),
            metrics: metric_names(CRITERION_METRICS),
        })?;
    let mut validity = Vec::new();
    for name in &file.verdict.validity {
        let metric = Metric::parse(name)
            .filter(|m| VALIDITY_METRICS.contains(m))
            .ok_or_else(|| ExperimentError::UnknownValidity {
                metric: name.clone(),
                metrics: metric_names(VALIDITY_METRICS),
            })?;
        validity.push(metric);
    }
    let draws = file.verdict.draws.unwrap_or(DEFAULT_DRAWS);
    if draws == 0 || draws > MAX_DRAWS {
        return Err(matrix_error(
            "verdict.draws",
            format!("must be between 1 and {MAX_DRAWS}"),
        ));
    }
    let seed = file.verdict.seed.unwrap_or(DEFAULT_BOOTSTRAP_SEED);
    let validators = validators(&file.validation, &cells)?;
    let design = design_hash(&cells, &base_definition);
    Ok(Matrix {
        base_dir: base.base_dir().to_path_buf(),
        input_files,
        definition,
        design,
        timeout,
        attempts,
        validators,
        axes,
        cells,
        reference,
        criterion,
        validity,
        draws,
        seed,
        file,
    })
}

/// A TOML number (integer or float) as a finite `f64`.
fn number(value: &toml::Value, field: &str) -> Result<f64, ExperimentError> {
    match value {
        toml::Value::Integer(i) => Ok(*i as f64),
        toml::Value::Float(f) if f.is_finite() => Ok(*f),
        toml::Value::Float(_) => Err(matrix_error(field, "must be a finite number")),
        _ => Err(matrix_error(field, "must be a number")),
    }
}

/// The design hash: SHA-256 of `chio.arena.matrix-design/v1`, a newline,
/// the compact JSON list of `[name, topology, scenario text]` of every cell
/// in cell order, a newline, and the definition rows' JSON of the files the
/// base scenario reads.
pub fn design_hash(cells: &[Cell], base: &Definition) -> String {
    let listed: Vec<(&str, &str, &str)> = cells
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.topology.as_str(),
                c.scenario_text.as_str(),
            )
        })
        .collect();
    let cells_json = serde_json::to_string(&listed).unwrap_or_default();
    sha256_hex(
        format!(
            "chio.arena.matrix-design/v1\n{cells_json}\n{}",
            rows_json(&base.rows)
        )
        .as_bytes(),
    )
}

/// Validates the `[[validation]]` blocks against the cells.
fn validators(decls: &[ValidationDecl], cells: &[Cell]) -> Result<Vec<Validator>, ExperimentError> {
    let mut out: Vec<Validator> = Vec::new();
    for (i, decl) in decls.iter().enumerate() {
        let at = |key: &str| format!("validation[{i}].{key}");
        let metric = ValidatorMetric::parse(&decl.metric).ok_or_else(|| {
            ExperimentError::UnknownValidator {
                metric: decl.metric.clone(),
                metrics: validator_metric_names(),
            }
        })?;
        if out.iter().any(|v| v.metric == metric) {
            return Err(ExperimentError::DuplicateValidator {
                metric: decl.metric.clone(),
            });
        }
        let min = decl
            .min
            .as_ref()
            .map(|v| number(v, &at("min")))
            .transpose()?;
        let max = decl
            .max
            .as_ref()
            .map(|v| number(v, &at("max")))
            .transpose()?;
        if min.is_none() && max.is_none() {
            return Err(matrix_error(at("min"), "declare min, max or both"));
        }
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                return Err(matrix_error(at("max"), format!("{hi} is below min {lo}")));
            }
        }
        let judged = match &decl.cells {
            None => (0..cells.len()).collect(),
            Some(names) => {
                let mut judged = Vec::new();
                for name in names {
                    let index = cells.iter().position(|c| c.name == *name).ok_or_else(|| {
                        matrix_error(at("cells"), format!("{name:?} is not a cell"))
                    })?;
                    if !judged.contains(&index) {
                        judged.push(index);
                    }
                }
                judged.sort_unstable();
                judged
            }
        };
        out.push(Validator {
            metric,
            min,
            max,
            cells: judged,
        });
    }
    Ok(out)
}

/// Applies one delta to a scenario's TOML table, refusing any name the
/// base scenario does not declare.
fn apply_delta(table: &mut toml::Table, field: &str, delta: &Delta) -> Result<(), ExperimentError> {
    let refuse = |key: String, reason: String| ExperimentError::Delta {
        field: format!("{field}.{key}"),
        reason,
    };
    let find = |table: &mut toml::Table, list: &str, key: &str, id: &str| -> Option<usize> {
        table
            .get(list)
            .and_then(toml::Value::as_array)
            .and_then(|items| {
                items
                    .iter()
                    .position(|i| i.get(key).and_then(toml::Value::as_str) == Some(id))
            })
    };
    let item = |table: &mut toml::Table, list: &str, index: usize| -> Option<toml::Table> {
        table
            .get(list)
            .and_then(toml::Value::as_array)
            .and_then(|items| items.get(index))
            .and_then(toml::Value::as_table)
            .cloned()
    };
    let store = |table: &mut toml::Table, list: &str, index: usize, value: toml::Table| {
        if let Some(toml::Value::Array(items)) = table.get_mut(list) {
            items[index] = toml::Value::Table(value);
        }
    };
    for (kernel, pipeline) in delta.guards.iter().flatten() {
        let index = find(table, "kernels", "id", kernel).ok_or_else(|| {
            refuse(
                format!("guards.{kernel}"),
                format!("the base scenario declares no kernel {kernel:?}"),
            )
        })?;
        let mut entry = item(table, "kernels", index).unwrap_or_default();
        entry.insert(
            "guards".into(),
            toml::Value::Array(pipeline.iter().map(|g| g.clone().into()).collect()),
        );
        store(table, "kernels", index, entry);
    }
    for (grant, keys) in delta.grants.iter().flatten() {
        let index = find(table, "grants", "id", grant).ok_or_else(|| {
            refuse(
                format!("grants.{grant}"),
                format!("the base scenario declares no grant {grant:?}"),
            )
        })?;
        let mut entry = item(table, "grants", index).unwrap_or_default();
        for (key, value) in keys {
            if matches!(key.as_str(), "id" | "agent") {
                return Err(refuse(
                    format!("grants.{grant}.{key}"),
                    "a delta may not change who holds a grant or its id".into(),
                ));
            }
            entry.insert(key.clone(), value.clone());
        }
        store(table, "grants", index, entry);
    }
    for (population, params) in delta.adversaries.iter().flatten() {
        let index = find(table, "adversaries", "population", population).ok_or_else(|| {
            refuse(
                format!("adversaries.{population}"),
                format!("the base scenario declares no adversary population {population:?}"),
            )
        })?;
        let mut entry = item(table, "adversaries", index).unwrap_or_default();
        entry.insert("params".into(), toml::Value::Table(params.clone()));
        store(table, "adversaries", index, entry);
    }
    Ok(())
}
