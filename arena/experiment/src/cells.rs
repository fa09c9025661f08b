//! The cells of a matrix: its axes in declaration order and the deltas of
//! their values, the grid of axis values and the named variants, and
//! applying each cell's deltas to the base scenario. Parsing the file and
//! validating its other sections live in `load`.

use super::load::matrix_error;
use super::*;

/// The axes in declaration order, each with its values, after checking
/// that every non-baseline value has a delta, no baseline value has one, no
/// delta names an undeclared value, and no two axes set the same key (a
/// grid cell combines one value of each axis, so a key both set would hold
/// only the later axis's setting, whatever the cell's name says).
pub(super) fn declared_axes(
    file: &MatrixFile,
) -> Result<Vec<(String, Vec<String>)>, ExperimentError> {
    let mut axes: Vec<(usize, String, Vec<String>)> = file
        .axes
        .iter()
        .map(|(k, v)| (k.span().start, k.get_ref().clone(), v.clone()))
        .collect();
    axes.sort_by_key(|(start, _, _)| *start);
    let axes: Vec<(String, Vec<String>)> = axes.into_iter().map(|(_, k, v)| (k, v)).collect();
    for (axis, values) in &axes {
        check_axis_deltas(file, axis, values)?;
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
    refuse_overlaps(file, &axes)?;
    Ok(axes)
}

/// Refuses two axes whose deltas set one key, naming the first such pair
/// in declaration order and the key.
fn refuse_overlaps(
    file: &MatrixFile,
    axes: &[(String, Vec<String>)],
) -> Result<(), ExperimentError> {
    let mut owner: BTreeMap<String, &str> = BTreeMap::new();
    for (axis, _) in axes {
        let keys: BTreeSet<String> = file
            .values
            .get(axis)
            .into_iter()
            .flat_map(BTreeMap::values)
            .flat_map(Delta::keys)
            .collect();
        for key in keys {
            if let Some(first) = owner.insert(key.clone(), axis) {
                return Err(ExperimentError::OverlappingDeltas {
                    first: first.to_string(),
                    second: axis.clone(),
                    key,
                });
            }
        }
    }
    Ok(())
}

/// Checks one axis: at least one value, no delta on its baseline (the first
/// value), and a non-empty delta on every other value.
fn check_axis_deltas(
    file: &MatrixFile,
    axis: &str,
    values: &[String],
) -> Result<(), ExperimentError> {
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
            axis: axis.to_string(),
            value: baseline.clone(),
        });
    }
    for value in &values[1..] {
        let delta = deltas.and_then(|d| d.get(value));
        if let Some(delta) = delta.filter(|d| d.changes_nothing()) {
            return Err(empty_delta(&format!("values.{axis}.{value}"), delta));
        }
        if delta.is_none_or(Delta::is_empty) {
            return Err(ExperimentError::MissingDelta {
                axis: axis.to_string(),
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
    Ok(())
}

/// The refusal of a delta at `field` whose tables are all empty: it
/// changes no key, so its cell would be the baseline under another name.
fn empty_delta(field: &str, delta: &Delta) -> ExperimentError {
    let tables: Vec<&str> = [
        ("guards", delta.guards.is_some()),
        ("grants", delta.grants.is_some()),
        ("adversaries", delta.adversaries.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, given)| given.then_some(name))
    .collect();
    matrix_error(
        field,
        format!(
            "the delta changes nothing ({} {} empty, so no key is set): the cell would measure the baseline under another name; set a kernel's guards, a grant key, a population's params or the topology",
            tables.join(" and "),
            if tables.len() == 1 { "is" } else { "are" }
        ),
    )
}

/// Every cell in order: the grid of the axes (first axis slowest), then the
/// variants in declaration order; refuses a matrix with no cell.
pub(super) fn build_cells(
    file: &MatrixFile,
    axes: &[(String, Vec<String>)],
    base_text: &str,
    base_dir: &Path,
) -> Result<Vec<Cell>, ExperimentError> {
    let base_table: toml::Table = base_text
        .parse()
        .map_err(|e: toml::de::Error| matrix_error("scenario", e.message().to_string()))?;
    let mut builder = CellBuilder {
        base_table,
        base_dir,
        cells: Vec::new(),
    };
    push_grid_cells(&mut builder, file, axes)?;
    let mut variants: Vec<(usize, &String, &Delta)> = file
        .variants
        .iter()
        .map(|(k, v)| (k.span().start, k.get_ref(), v))
        .collect();
    variants.sort_by_key(|(start, _, _)| *start);
    for (_, name, delta) in variants {
        if delta.changes_nothing() {
            return Err(empty_delta(&format!("variants.{name}"), delta));
        }
        builder.push(
            name.clone(),
            Vec::new(),
            vec![(format!("variants.{name}"), delta)],
        )?;
    }
    if builder.cells.is_empty() {
        return Err(matrix_error(
            "axes",
            "declare at least one cell, from [axes] or [variants]",
        ));
    }
    Ok(builder.cells)
}

/// Pushes one cell per combination of axis values, advancing the last axis
/// fastest so the first axis is the slowest.
fn push_grid_cells(
    builder: &mut CellBuilder<'_>,
    file: &MatrixFile,
    axes: &[(String, Vec<String>)],
) -> Result<(), ExperimentError> {
    if axes.is_empty() {
        return Ok(());
    }
    let mut odometer = vec![0usize; axes.len()];
    loop {
        let coordinates: Vec<String> = odometer
            .iter()
            .zip(axes)
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
        builder.push(coordinates.join(" / "), coordinates.clone(), deltas)?;
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
            return Ok(());
        }
    }
}

/// Collects cells, applying each one's deltas to the base scenario's table.
struct CellBuilder<'a> {
    /// The base scenario's TOML table, cloned for every cell.
    base_table: toml::Table,
    /// The folder the base scenario's relative paths resolve against.
    base_dir: &'a Path,
    /// The cells so far, in order.
    cells: Vec<Cell>,
}

impl CellBuilder<'_> {
    /// Adds one cell after refusing a repeated name, applying its deltas,
    /// checking its topology and loading its scenario.
    fn push(
        &mut self,
        name: String,
        coordinates: Vec<String>,
        deltas: Vec<(String, &Delta)>,
    ) -> Result<(), ExperimentError> {
        if self.cells.iter().any(|c| c.name == name) {
            return Err(ExperimentError::DuplicateCell { cell: name });
        }
        let mut table = self.base_table.clone();
        let mut topology = TOPOLOGIES[0].to_string();
        let mut topology_declared = false;
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
                topology_declared = true;
            }
        }
        let scenario_text = table.to_string();
        parse_scenario(&scenario_text, self.base_dir).map_err(|source| {
            ExperimentError::Scenario {
                cell: name.clone(),
                source: Box::new(source),
            }
        })?;
        self.cells.push(Cell {
            name,
            coordinates,
            scenario_text,
            topology,
            topology_declared,
        });
        Ok(())
    }
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
