//! Loading a matrix file: parsing, fail-closed validation of every key,
//! applying each cell's deltas to the base scenario, the design hash and the
//! per-repetition seeds derived from it. What a loaded matrix is lives in
//! the parent module; running and synthesising it live beside this one.

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

pub(super) fn validate(
    file: MatrixFile,
    path: &Path,
    dir: &Path,
) -> Result<Matrix, ExperimentError> {
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
pub(super) fn apply_delta(
    table: &mut toml::Table,
    field: &str,
    delta: &Delta,
) -> Result<(), ExperimentError> {
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
