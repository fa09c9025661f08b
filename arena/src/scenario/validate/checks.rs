//! The small rules every section of a scenario shares: ids and their
//! uniqueness, references to declared things, numeric ranges, and the
//! conversion of free-form TOML tables (tool arguments, guard
//! configurations, adversary parameters) into JSON canonical JSON can print.

use std::collections::BTreeSet;

use crate::error::ArenaError;
use crate::scheduler::{MAX_INSTANT_MS, MAX_OFFSET_MS};

/// The longest id, in bytes. The stores' keys join several ids (a hold id
/// names the lineage, the principal, the request, the budget and a
/// delegated capability), and each must fit the trust store's bound on
/// every topology, whatever run namespace prefixes it.
pub const MAX_ID_BYTES: usize = 128;

/// Whether `id` is non-empty, at most [`MAX_ID_BYTES`] long, uses only
/// `[A-Za-z0-9_.-]` and is not `.` or `..` (ids become file and folder
/// names, such as a bundle's default `target/arena/<scenario-id>/`).
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_BYTES
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

pub(super) fn check_id(id: &str, field: String) -> Result<(), ArenaError> {
    if is_valid_id(id) {
        Ok(())
    } else {
        Err(ArenaError::InvalidId {
            field,
            value: id.to_string(),
        })
    }
}

pub(super) fn check_offset(
    value: Option<u64>,
    field: impl FnOnce() -> String,
) -> Result<(), ArenaError> {
    match value {
        Some(v) if v > MAX_OFFSET_MS => Err(ArenaError::OutOfRange {
            field: field(),
            rule: "the value is at most 2^53",
        }),
        _ => Ok(()),
    }
}

/// Refuses an offset whose instant, `start_ms + offset` in Unix
/// milliseconds, is past [`MAX_INSTANT_MS`]: RFC 3339 could not print it.
pub(super) fn check_instant(
    start_ms: u64,
    offset: u64,
    field: impl FnOnce() -> String,
) -> Result<(), ArenaError> {
    if start_ms.saturating_add(offset) > MAX_INSTANT_MS {
        Err(ArenaError::OutOfRange {
            field: field(),
            rule:
                "the instant, the clock start plus this offset, is at most 9999-12-31T23:59:59.999Z",
        })
    } else {
        Ok(())
    }
}

pub(super) fn check_share(
    value: Option<u64>,
    field: impl FnOnce() -> String,
) -> Result<(), ArenaError> {
    match value {
        Some(v) if !(1..=10_000).contains(&v) => Err(ArenaError::OutOfRange {
            field: field(),
            rule: "share_bps is between 1 and 10000",
        }),
        _ => Ok(()),
    }
}

pub(super) fn check_invocations(
    value: Option<u64>,
    field: impl Fn() -> String,
) -> Result<(), ArenaError> {
    match value {
        Some(0) => Err(ArenaError::ZeroBudget { field: field() }),
        Some(v) if v > MAX_OFFSET_MS => Err(ArenaError::OutOfRange {
            field: field(),
            rule: "max_invocations is at most 2^53",
        }),
        _ => Ok(()),
    }
}

pub(super) fn check_tools(tools: &[String], field: &str) -> Result<(), ArenaError> {
    if tools.is_empty() {
        return Err(ArenaError::EmptyList {
            field: field.to_string(),
        });
    }
    for (index, tool) in tools.iter().enumerate() {
        check_id(tool, format!("{field}[{index}]"))?;
    }
    Ok(())
}

pub(super) fn check_path_prefix(
    prefix: Option<&str>,
    field: impl FnOnce() -> String,
) -> Result<(), ArenaError> {
    match prefix {
        Some(p) if !p.starts_with('/') => Err(ArenaError::OutOfRange {
            field: field(),
            rule: "path_prefix is an absolute path starting with '/'",
        }),
        _ => Ok(()),
    }
}

/// Converts a TOML value to JSON, refusing what canonical JSON cannot print.
pub(super) fn toml_to_json(
    value: &toml::Value,
    field: &str,
) -> Result<serde_json::Value, ArenaError> {
    use serde_json::Value as J;
    Ok(match value {
        toml::Value::String(s) => J::String(s.clone()),
        toml::Value::Integer(i) => {
            if i.unsigned_abs() > MAX_OFFSET_MS {
                return Err(ArenaError::OutOfRange {
                    field: field.to_string(),
                    rule: "integers stay within -2^53..=2^53",
                });
            }
            J::from(*i)
        }
        // A whole float is the integer its canonical text reads back as
        // (`1.0` is `1`), as the kernel holds it on every topology.
        toml::Value::Float(f) if f.fract() == 0.0 && f.abs() <= (1u64 << 53) as f64 => {
            J::from(*f as i64)
        }
        // Past 2^53 a float holds no exact integer, and reads back from
        // the wire otherwise than it was signed.
        toml::Value::Float(f) if f.abs() > (1u64 << 53) as f64 => {
            return Err(ArenaError::OutOfRange {
                field: field.to_string(),
                rule: "numbers stay within -2^53..=2^53",
            })
        }
        toml::Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => J::Number(n),
            None => {
                return Err(ArenaError::OutOfRange {
                    field: field.to_string(),
                    rule: "numbers are finite (no nan or inf)",
                })
            }
        },
        toml::Value::Boolean(b) => J::Bool(*b),
        toml::Value::Datetime(d) => J::String(d.to_string()),
        toml::Value::Array(items) => J::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| toml_to_json(v, &format!("{field}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(table) => table_to_json(table, field)?,
    })
}

pub(super) fn table_to_json(
    table: &toml::Table,
    field: &str,
) -> Result<serde_json::Value, ArenaError> {
    // Sized to the table: a long schedule holds one map per call step, and
    // a map grown one key at a time keeps room for keys it never gets.
    let mut map = serde_json::Map::with_capacity(table.len());
    for (key, value) in table {
        map.insert(key.clone(), toml_to_json(value, &format!("{field}.{key}"))?);
    }
    Ok(serde_json::Value::Object(map))
}

/// Fails with a duplicate-id error at the second occurrence.
pub(super) fn check_unique<'a>(
    kind: &'static str,
    ids: impl Iterator<Item = (&'a str, String)>,
) -> Result<BTreeSet<&'a str>, ArenaError> {
    let mut seen = BTreeSet::new();
    for (id, field) in ids {
        if !seen.insert(id) {
            return Err(ArenaError::DuplicateId {
                kind,
                id: id.to_string(),
                field,
            });
        }
    }
    Ok(seen)
}

pub(super) fn resolve(
    declared: &BTreeSet<&str>,
    kind: &'static str,
    id: &str,
    field: impl FnOnce() -> String,
) -> Result<(), ArenaError> {
    if declared.contains(id) {
        Ok(())
    } else {
        Err(ArenaError::UndeclaredReference {
            kind,
            id: id.to_string(),
            field: field(),
        })
    }
}

/// Checks every id of one section (`{section}[i].id`), then that no two are
/// equal, and returns them.
pub(super) fn declared_ids<'a>(
    kind: &'static str,
    section: &str,
    ids: impl Iterator<Item = &'a str> + Clone,
) -> Result<BTreeSet<&'a str>, ArenaError> {
    for (i, id) in ids.clone().enumerate() {
        check_id(id, format!("{section}[{i}].id"))?;
    }
    check_unique(
        kind,
        ids.enumerate()
            .map(|(i, id)| (id, format!("{section}[{i}].id"))),
    )
}

#[cfg(test)]
mod tests {
    // A TOML date in a step's arguments reaches the kernel as its RFC 3339 text, and every reader that shows the arguments reads it through the same conversion, never as TOML's private date table.
    #[test]
    fn a_date_is_shown_as_it_is_sent() {
        let table: toml::Table = "arguments = { when = 1979-05-27T07:32:00Z, n = [1, 2.5] }"
            .parse()
            .unwrap();
        let shown = super::super::arguments_as_sent(&table["arguments"]).unwrap();
        assert_eq!(
            shown,
            serde_json::json!({"when": "1979-05-27T07:32:00Z", "n": [1, 2.5]})
        );
        let sent = super::table_to_json(table["arguments"].as_table().unwrap(), "arguments");
        assert_eq!(sent.unwrap(), shown);
    }
}
