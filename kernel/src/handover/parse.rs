//! Parsing a hand-over schema: the keywords of each kind read, bounded and
//! refused by name when they fall outside the subset.

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;
use serde_json::{Map, Value};

use super::{decimal, escape, refused, SchemaRefused, ValueSchema, KEYWORDS, MAX_DEPTH};

impl ValueSchema {
    /// Parses the schema found at `at`, `depth` levels below the root.
    pub(super) fn parse_at(
        schema: &Value,
        at: &str,
        depth: usize,
    ) -> Result<ValueSchema, SchemaRefused> {
        if depth > MAX_DEPTH {
            return Err(refused(
                at,
                format!("the schema nests more than {MAX_DEPTH} levels deep"),
            ));
        }
        let Value::Object(table) = schema else {
            return Err(refused(at, "a schema is a table of keywords"));
        };
        if let Some(unknown) = table.keys().find(|k| !KEYWORDS.contains(&k.as_str())) {
            return Err(refused(
                at,
                format!(
                    "keyword {unknown} is outside the hand-over schema subset; use {}",
                    KEYWORDS.join(", ")
                ),
            ));
        }
        if let Some(values) = table.get("enum") {
            return parse_enum(table, values, at);
        }
        let kind = match table.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(_) => return Err(refused(at, "keyword type is a string")),
            None => return Err(refused(at, "a schema names its type (or lists an enum)")),
        };
        match kind {
            "integer" => parse_integer(table, at),
            "number" => parse_number(table, at),
            "string" => parse_string(table, at),
            "array" => parse_array(table, at, depth),
            "object" => parse_object(table, at, depth),
            other => Err(refused(
                at,
                format!(
                    "type {other} is outside the hand-over schema subset; use integer, number, string, array or object (or an enum)"
                ),
            )),
        }
    }
}

/// Refuses any keyword of `table` besides `type` and those `allowed` for
/// `kind`.
fn only(
    table: &Map<String, Value>,
    at: &str,
    allowed: &[&str],
    kind: &str,
) -> Result<(), SchemaRefused> {
    match table
        .keys()
        .find(|k| k.as_str() != "type" && !allowed.contains(&k.as_str()))
    {
        Some(k) => Err(refused(
            at,
            format!("keyword {k} does not apply to {kind}; it takes {allowed:?}"),
        )),
        None => Ok(()),
    }
}

/// An `enum`: at least one scalar value, and no `type` beside it.
fn parse_enum(
    table: &Map<String, Value>,
    values: &Value,
    at: &str,
) -> Result<ValueSchema, SchemaRefused> {
    only(table, at, &["enum"], "an enum")?;
    let Value::Array(values) = values else {
        return Err(refused(at, "keyword enum lists the admitted values"));
    };
    if values.is_empty() || values.iter().any(|v| v.is_object() || v.is_array()) {
        return Err(refused(
            at,
            "keyword enum lists at least one string, number or boolean",
        ));
    }
    if table.contains_key("type") {
        return Err(refused(at, "keyword type does not apply to an enum"));
    }
    Ok(ValueSchema::Enum(values.clone()))
}

/// An `integer` with its optional whole-number bounds.
fn parse_integer(table: &Map<String, Value>, at: &str) -> Result<ValueSchema, SchemaRefused> {
    only(table, at, &["minimum", "maximum"], "an integer")?;
    let bound = |key: &str| match table.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| refused(at, format!("keyword {key} of an integer is an integer"))),
    };
    Ok(ValueSchema::Integer((bound("minimum")?, bound("maximum")?)))
}

/// A `number` with its required exact-decimal bounds.
fn parse_number(table: &Map<String, Value>, at: &str) -> Result<ValueSchema, SchemaRefused> {
    only(table, at, &["minimum", "maximum"], "a number")?;
    let bound = |key: &str| {
        decimal_bound(table, at, key, "a number")?.ok_or_else(|| {
            refused(
                at,
                format!("keyword {key} is required for a number; bound every number"),
            )
        })
    };
    Ok(ValueSchema::Number(bound("minimum")?, bound("maximum")?))
}

/// A `string`: its required length bound, its optional pattern and its
/// optional exact-decimal range.
fn parse_string(table: &Map<String, Value>, at: &str) -> Result<ValueSchema, SchemaRefused> {
    only(
        table,
        at,
        &["maxLength", "pattern", "minimum", "maximum"],
        "a string",
    )?;
    let max_length = match table.get("maxLength") {
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| refused(at, "keyword maxLength is a whole number"))?,
        None => {
            return Err(refused(
                at,
                "keyword maxLength is required for a string; bound every string",
            ))
        }
    };
    let pattern = match table.get("pattern") {
        None => None,
        Some(Value::String(p)) => Some(
            regex::RegexBuilder::new(p)
                .size_limit(1 << 20)
                .build()
                .map_err(|_| refused(at, "keyword pattern is not a valid regular expression"))?,
        ),
        Some(_) => return Err(refused(at, "keyword pattern is a string")),
    };
    let (minimum, maximum) = (
        decimal_bound(table, at, "minimum", "a string")?,
        decimal_bound(table, at, "maximum", "a string")?,
    );
    let decimal = (minimum.is_some() || maximum.is_some()).then_some((minimum, maximum));
    Ok(ValueSchema::String {
        max_length,
        pattern,
        decimal,
    })
}

/// A `minimum` or `maximum` of `kind` (a string or a number): an exact
/// decimal, written as a whole number or a decimal string.
fn decimal_bound(
    table: &Map<String, Value>,
    at: &str,
    key: &str,
    kind: &str,
) -> Result<Option<Decimal>, SchemaRefused> {
    let wrong = || {
        refused(
            at,
            format!(
                "keyword {key} of {kind} is an exact decimal: write a whole number or a decimal string such as \"120.50\""
            ),
        )
    };
    match table.get(key) {
        None => Ok(None),
        Some(Value::String(text)) => decimal(text).map(Some).ok_or_else(wrong),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {
            decimal(&n.to_string()).map(Some).ok_or_else(wrong)
        }
        Some(_) => Err(wrong()),
    }
}

/// An `array`: its required item bound and the schema of every item.
fn parse_array(
    table: &Map<String, Value>,
    at: &str,
    depth: usize,
) -> Result<ValueSchema, SchemaRefused> {
    only(table, at, &["items", "maxItems"], "an array")?;
    let max_items = match table.get("maxItems") {
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| refused(at, "keyword maxItems is a whole number"))?,
        None => {
            return Err(refused(
                at,
                "keyword maxItems is required for an array; bound every array",
            ))
        }
    };
    let items = table
        .get("items")
        .ok_or_else(|| refused(at, "keyword items is required for an array"))?;
    Ok(ValueSchema::Array {
        items: Box::new(ValueSchema::parse_at(
            items,
            &format!("{at}/items"),
            depth + 1,
        )?),
        max_items,
    })
}

/// An `object`: exactly its declared properties, each parsed, and which of
/// them are required.
fn parse_object(
    table: &Map<String, Value>,
    at: &str,
    depth: usize,
) -> Result<ValueSchema, SchemaRefused> {
    only(
        table,
        at,
        &["properties", "required", "additionalProperties"],
        "an object",
    )?;
    match table.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        Some(_) => {
            return Err(refused(
                at,
                "keyword additionalProperties may only be false: a hand-over object has exactly its declared properties",
            ))
        }
    }
    let Some(Value::Object(declared)) = table.get("properties") else {
        return Err(refused(
            at,
            "keyword properties is required for an object (a table of schemas)",
        ));
    };
    let mut properties = BTreeMap::new();
    for (name, schema) in declared {
        let inner = format!("{at}/properties/{}", escape(name));
        properties.insert(
            name.clone(),
            ValueSchema::parse_at(schema, &inner, depth + 1)?,
        );
    }
    let required = required_names(table, at, &properties)?;
    Ok(ValueSchema::Object {
        properties,
        required,
    })
}

/// An object's `required` list: names of declared properties only.
fn required_names(
    table: &Map<String, Value>,
    at: &str,
    properties: &BTreeMap<String, ValueSchema>,
) -> Result<BTreeSet<String>, SchemaRefused> {
    let mut required = BTreeSet::new();
    match table.get("required") {
        None => {}
        Some(Value::Array(names)) => {
            for name in names {
                match name.as_str() {
                    Some(n) if properties.contains_key(n) => {
                        required.insert(n.to_string());
                    }
                    _ => {
                        return Err(refused(
                            at,
                            "keyword required lists names of declared properties",
                        ))
                    }
                }
            }
        }
        Some(_) => return Err(refused(at, "keyword required is a list of property names")),
    }
    Ok(required)
}
