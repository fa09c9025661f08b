//! Loading a matrix file: parsing, fail-closed validation of every key, the
//! design hash and the per-repetition seeds derived from it. What a loaded
//! matrix is lives in the parent module; building its cells from the axes,
//! variants and deltas lives in `cells`; running and synthesising it live
//! beside this one.

use super::*;

/// See [`Matrix::repetition_seed`].
pub fn repetition_seed(design_sha256: &str, repetition: u32) -> u64 {
    let digest = sha256_hex(format!("{design_sha256}:{repetition}").as_bytes());
    let head = u64::from_str_radix(&digest[..16], 16).unwrap_or(0);
    head & ((1u64 << 53) - 1)
}

pub(super) fn set_seed(table: &mut toml::Table, seed: u64) {
    // Seeds are masked to 53 bits, so they fit an i64.
    let value = toml::Value::Integer(seed as i64);
    table.insert("rng_seed".into(), value.clone());
    if let Some(toml::Value::Table(det)) = table.get_mut("determinism") {
        if det.contains_key("rng_seed") {
            det.insert("rng_seed".into(), value);
        }
    }
}

pub(super) fn matrix_error(field: impl Into<String>, reason: impl Into<String>) -> ExperimentError {
    ExperimentError::Matrix {
        field: field.into(),
        reason: reason.into(),
    }
}

/// Reads and validates a matrix file.
pub fn load_matrix(path: &Path) -> Result<Matrix, ExperimentError> {
    let bytes = ExperimentError::read(path)?;
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

/// Validates a parsed matrix file section by section, in the order its
/// errors are reported: header and protocol, base scenario, axes and deltas,
/// cells, reference, verdict, validators.
pub(super) fn validate(
    file: MatrixFile,
    path: &Path,
    dir: &Path,
) -> Result<Matrix, ExperimentError> {
    let protocol = validate_protocol(&file)?;
    let base = load_base(&file, path, dir)?;
    let axes = cells::declared_axes(&file)?;
    let cells = cells::build_cells(&file, &axes, &base.text, base.scenario.base_dir())?;
    let reference = resolve_reference(&file.verdict.reference, &axes, &cells)?;
    let verdict = validate_verdict(&file.verdict)?;
    let validators = validators(&file.validation, &cells)?;
    let design = design_hash(&cells, &base.base_definition);
    Ok(Matrix {
        base_dir: base.scenario.base_dir().to_path_buf(),
        input_files: base.input_files,
        definition: base.definition,
        design,
        timeout: protocol.timeout,
        attempts: protocol.attempts,
        validators,
        axes,
        cells,
        reference,
        criterion: verdict.criterion,
        validity: verdict.validity,
        draws: verdict.draws,
        seed: verdict.seed,
        file,
    })
}

/// The load a validated `[protocol]` fixes beyond what the file states.
struct Protocol {
    /// Seconds one attempt may take.
    timeout: f64,
    /// Attempts per run.
    attempts: u32,
}

/// Checks the schema id, the matrix id, the hypothesis and `[protocol]`.
fn validate_protocol(file: &MatrixFile) -> Result<Protocol, ExperimentError> {
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
    if !chio_arena::scenario::is_valid_id(&file.id) {
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
    Ok(Protocol { timeout, attempts })
}

/// The base scenario, its text and the definitions of the files it reads.
struct BaseScenario {
    /// The loaded base scenario, which must declare a world.
    scenario: Scenario,
    /// The base scenario's TOML text, the table every cell's deltas edit.
    text: String,
    /// The definition hash over the matrix file and the base's inputs.
    definition: Definition,
    /// The definition hash over the base's inputs alone, part of the design.
    base_definition: Definition,
    /// Every pinned input file, matrix file first.
    input_files: Vec<PathBuf>,
}

/// Loads the base scenario and hashes the matrix file and every file the
/// base reads, relative to the matrix's `root`.
fn load_base(file: &MatrixFile, path: &Path, dir: &Path) -> Result<BaseScenario, ExperimentError> {
    let scenario_path = dir.join(&file.scenario);
    let base =
        chio_arena::load_scenario(&scenario_path).map_err(|source| ExperimentError::Scenario {
            cell: "base".into(),
            source: Box::new(source),
        })?;
    base.require_world()
        .map_err(|source| ExperimentError::Scenario {
            cell: "base".into(),
            source: Box::new(source),
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
    Ok(BaseScenario {
        scenario: base,
        text: base_text,
        definition,
        base_definition,
        input_files,
    })
}

/// Finds the reference cell, by name or by its value on every axis.
fn resolve_reference(
    reference: &Reference,
    axes: &[(String, Vec<String>)],
    cells: &[Cell],
) -> Result<usize, ExperimentError> {
    let cell_list = || {
        cells
            .iter()
            .map(|c| format!("{:?}", c.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match reference {
        Reference::Name(name) => cells.iter().position(|c| c.name == *name).ok_or_else(|| {
            ExperimentError::UnknownReference {
                reference: format!("{name:?}"),
                cells: cell_list(),
            }
        }),
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
                })
        }
    }
}

/// What a validated `[verdict]` judges by, apart from its reference.
struct Verdict {
    /// The metric the verdict rests on.
    criterion: Metric,
    /// The metrics a run must satisfy to enter an aggregate.
    validity: Vec<Metric>,
    /// Resampling draws.
    draws: u32,
    /// Resampling seed.
    seed: u64,
}

/// Checks the criterion, the validity metrics and the draws of `[verdict]`.
fn validate_verdict(verdict: &VerdictSection) -> Result<Verdict, ExperimentError> {
    let criterion = Metric::parse(&verdict.criterion)
        .filter(|m| CRITERION_METRICS.contains(m))
        .ok_or_else(|| ExperimentError::UnknownCriterion {
            criterion: verdict.criterion.clone(),
            metrics: metric_names(CRITERION_METRICS),
        })?;
    let mut validity = Vec::new();
    for name in &verdict.validity {
        let metric = Metric::parse(name)
            .filter(|m| VALIDITY_METRICS.contains(m))
            .ok_or_else(|| ExperimentError::UnknownValidity {
                metric: name.clone(),
                metrics: metric_names(VALIDITY_METRICS),
            })?;
        validity.push(metric);
    }
    let draws = verdict.draws.unwrap_or(DEFAULT_DRAWS);
    if draws == 0 || draws > MAX_DRAWS {
        return Err(matrix_error(
            "verdict.draws",
            format!("must be between 1 and {MAX_DRAWS}"),
        ));
    }
    let seed = verdict.seed.unwrap_or(DEFAULT_BOOTSTRAP_SEED);
    // The seed is printed in the synthesis, as canonical JSON, which holds
    // integers up to 2^53 exactly: refused here, not after every run.
    if seed > 1 << 53 {
        return Err(matrix_error(
            "verdict.seed",
            "must be at most 2^53 (9007199254740992), which canonical JSON holds exactly"
                .to_string(),
        ));
    }
    Ok(Verdict {
        criterion,
        validity,
        draws,
        seed,
    })
}

/// A TOML number (integer or float) as a finite `f64`.
pub(super) fn number(value: &toml::Value, field: &str) -> Result<f64, ExperimentError> {
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
pub(super) fn validators(
    decls: &[ValidationDecl],
    cells: &[Cell],
) -> Result<Vec<Validator>, ExperimentError> {
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
            Some(names) if names.is_empty() => {
                return Err(matrix_error(
                    at("cells"),
                    "lists no cell, so the validator would judge nothing; name the cells it judges, or leave cells out to judge every cell",
                ))
            }
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
