//! Hand-overs: the one way a quarantined reader passes a value to a
//! planner, and the schema that value must satisfy.
//!
//! A quarantined reader may read untrusted content but calls nothing
//! consequential; what it learns reaches a planner only as a value that a
//! [`ValueSchema`] admits. The schema language is a closed subset of JSON
//! Schema, small enough that a reviewer can see every value it lets
//! through: `enum`; `integer` with `minimum`/`maximum`; `number` with a
//! required exact-decimal `minimum` and `maximum` (a JSON number whose text
//! is an exact decimal within them, compared exactly); `string` with a
//! required `maxLength`, an optional `pattern` (the `regex` crate's syntax,
//! searched like JSON Schema's, so anchor it with `^...$`) and an optional
//! exact-decimal range (`minimum`/`maximum` on a string make it a decimal
//! string such as `"120.50"`, compared exactly); `array` with `items` and a
//! required `maxItems`; `object` with `properties`, `required` and no other
//! property (`additionalProperties` may only be `false`). Any other keyword
//! is refused, naming it, when the schema is parsed: a scenario's loader
//! and every kernel parse it with [`ValueSchema::parse`].
//!
//! [`ValueSchema::check`] answers where a value fails and the keyword that
//! refused it, never the value, so a refusal can be printed and recorded.
//! A value that passes is recorded under [`record_key`] with its labels in
//! the label store every kernel reads ([`crate::label::LabelCarry::handover`]),
//! so its provenance reaches the planner's kernel and survives a restart.

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;
use serde_json::Value;

/// The keywords the subset knows.
pub const KEYWORDS: [&str; 11] = [
    "type",
    "enum",
    "minimum",
    "maximum",
    "pattern",
    "maxLength",
    "items",
    "maxItems",
    "properties",
    "required",
    "additionalProperties",
];

/// How deep a schema may nest (objects and arrays).
pub const MAX_DEPTH: usize = 8;

/// The label key a hand-over's value is recorded under:
/// `handover/<receiver>/<message step id>`.
pub fn record_key(receiver: &str, step: &str) -> String {
    format!("handover/{receiver}/{step}")
}

/// A schema the hand-over subset refuses, with where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRefused {
    /// The JSON pointer of the offending part within the schema.
    pub at: String,
    /// What is wrong, naming the keyword and the fix.
    pub problem: String,
}

/// Where a value fails its schema and the keyword that refused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueRefused {
    /// The JSON pointer of the failing part within the value.
    pub pointer: String,
    /// The keyword that refused it (`type`, `enum`, `maxLength`, ...).
    pub keyword: &'static str,
}

/// A bound of an integer or decimal range.
type Bounds<T> = (Option<T>, Option<T>);

/// A parsed hand-over schema.
#[derive(Debug, Clone)]
pub enum ValueSchema {
    /// One of these values exactly.
    Enum(Vec<Value>),
    /// A JSON integer within the bounds.
    Integer(Bounds<i64>),
    /// A JSON number whose text is an exact decimal within the bounds.
    Number(Decimal, Decimal),
    /// A string of at most `max_length` characters.
    String {
        /// The longest string admitted, in characters.
        max_length: usize,
        /// A pattern the string must match.
        pattern: Option<regex::Regex>,
        /// When set, the string is an exact decimal within these bounds.
        decimal: Option<Bounds<Decimal>>,
    },
    /// An array of at most `max_items` items, each admitted by `items`.
    Array {
        /// The schema of every item.
        items: Box<ValueSchema>,
        /// The most items admitted.
        max_items: usize,
    },
    /// An object with exactly the declared properties (none other).
    Object {
        /// The schema of each property.
        properties: BTreeMap<String, ValueSchema>,
        /// The properties that must be present.
        required: BTreeSet<String>,
    },
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn refused(at: &str, problem: impl Into<String>) -> SchemaRefused {
    SchemaRefused {
        at: at.to_string(),
        problem: problem.into(),
    }
}

/// Whether `text` is an exact decimal: an optional `-`, digits, and
/// optionally a `.` followed by digits.
fn is_decimal_text(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = match digits.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (digits, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    all_digits(whole) && fraction.is_none_or(all_digits)
}

/// An exact-decimal bound of `kind` (a decimal string or a whole number),
/// if the schema gives one.
fn decimal_bound(
    given: Option<&Value>,
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
    match given {
        None => Ok(None),
        Some(Value::String(text)) => decimal(text).map(Some).ok_or_else(wrong),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => {
            decimal(&n.to_string()).map(Some).ok_or_else(wrong)
        }
        Some(_) => Err(wrong()),
    }
}

fn decimal(text: &str) -> Option<Decimal> {
    if !is_decimal_text(text) {
        return None;
    }
    // Exact or nothing: a decimal the type cannot hold without rounding is
    // refused, never rounded into range.
    Decimal::from_str_exact(text).ok()
}

impl ValueSchema {
    /// Parses a schema, refusing any keyword outside the subset by name.
    pub fn parse(schema: &Value) -> Result<ValueSchema, SchemaRefused> {
        Self::parse_at(schema, "", 0)
    }

    fn parse_at(schema: &Value, at: &str, depth: usize) -> Result<ValueSchema, SchemaRefused> {
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
        let only = |allowed: &[&str], kind: &str| -> Result<(), SchemaRefused> {
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
        };
        if let Some(values) = table.get("enum") {
            only(&["enum"], "an enum")?;
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
            return Ok(ValueSchema::Enum(values.clone()));
        }
        let kind = match table.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(_) => return Err(refused(at, "keyword type is a string")),
            None => return Err(refused(at, "a schema names its type (or lists an enum)")),
        };
        match kind {
            "integer" => {
                only(&["minimum", "maximum"], "an integer")?;
                let bound = |key: &str| match table.get(key) {
                    None => Ok(None),
                    Some(v) => v
                        .as_i64()
                        .map(Some)
                        .ok_or_else(|| refused(at, format!("keyword {key} of an integer is an integer"))),
                };
                Ok(ValueSchema::Integer((bound("minimum")?, bound("maximum")?)))
            }
            "number" => {
                only(&["minimum", "maximum"], "a number")?;
                let bound = |key: &str| {
                    decimal_bound(table.get(key), at, key, "a number")?.ok_or_else(|| {
                        refused(at, format!("keyword {key} is required for a number; bound every number"))
                    })
                };
                Ok(ValueSchema::Number(bound("minimum")?, bound("maximum")?))
            }
            "string" => {
                only(&["maxLength", "pattern", "minimum", "maximum"], "a string")?;
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
                let bound = |key: &str| decimal_bound(table.get(key), at, key, "a string");
                let (minimum, maximum) = (bound("minimum")?, bound("maximum")?);
                let decimal = (minimum.is_some() || maximum.is_some()).then_some((minimum, maximum));
                Ok(ValueSchema::String {
                    max_length,
                    pattern,
                    decimal,
                })
            }
            "array" => {
                only(&["items", "maxItems"], "an array")?;
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
                    items: Box::new(Self::parse_at(items, &format!("{at}/items"), depth + 1)?),
                    max_items,
                })
            }
            "object" => {
                only(
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
                    properties.insert(name.clone(), Self::parse_at(schema, &inner, depth + 1)?);
                }
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
                    Some(_) => {
                        return Err(refused(at, "keyword required is a list of property names"))
                    }
                }
                Ok(ValueSchema::Object {
                    properties,
                    required,
                })
            }
            other => Err(refused(
                at,
                format!(
                    "type {other} is outside the hand-over schema subset; use integer, number, string, array or object (or an enum)"
                ),
            )),
        }
    }

    /// Checks `value`; the first failure names its place and keyword.
    pub fn check(&self, value: &Value) -> Result<(), ValueRefused> {
        self.check_at(value, String::new())
    }

    fn check_at(&self, value: &Value, at: String) -> Result<(), ValueRefused> {
        let fail = |keyword| {
            Err(ValueRefused {
                pointer: at.clone(),
                keyword,
            })
        };
        match self {
            ValueSchema::Enum(values) => {
                if values.contains(value) {
                    Ok(())
                } else {
                    fail("enum")
                }
            }
            ValueSchema::Integer((minimum, maximum)) => {
                let Some(n) = value.as_i64() else {
                    return fail("type");
                };
                if minimum.is_some_and(|m| n < m) {
                    return fail("minimum");
                }
                if maximum.is_some_and(|m| n > m) {
                    return fail("maximum");
                }
                Ok(())
            }
            ValueSchema::Number(minimum, maximum) => {
                let Some(amount) = value.as_number().and_then(|n| decimal(&n.to_string())) else {
                    return fail("type");
                };
                if amount < *minimum {
                    return fail("minimum");
                }
                if amount > *maximum {
                    return fail("maximum");
                }
                Ok(())
            }
            ValueSchema::String {
                max_length,
                pattern,
                decimal: range,
            } => {
                let Value::String(text) = value else {
                    return fail("type");
                };
                if text.chars().count() > *max_length {
                    return fail("maxLength");
                }
                if pattern.as_ref().is_some_and(|p| !p.is_match(text)) {
                    return fail("pattern");
                }
                if let Some((minimum, maximum)) = range {
                    let Some(amount) = decimal(text) else {
                        return fail("type");
                    };
                    if minimum.is_some_and(|m| amount < m) {
                        return fail("minimum");
                    }
                    if maximum.is_some_and(|m| amount > m) {
                        return fail("maximum");
                    }
                }
                Ok(())
            }
            ValueSchema::Array { items, max_items } => {
                let Value::Array(values) = value else {
                    return fail("type");
                };
                if values.len() > *max_items {
                    return fail("maxItems");
                }
                for (index, item) in values.iter().enumerate() {
                    items.check_at(item, format!("{at}/{index}"))?;
                }
                Ok(())
            }
            ValueSchema::Object {
                properties,
                required,
            } => {
                let Value::Object(members) = value else {
                    return fail("type");
                };
                if let Some(missing) = required.iter().find(|n| !members.contains_key(*n)) {
                    return Err(ValueRefused {
                        pointer: format!("{at}/{}", escape(missing)),
                        keyword: "required",
                    });
                }
                for (name, member) in members {
                    let inner = format!("{at}/{}", escape(name));
                    match properties.get(name) {
                        Some(schema) => schema.check_at(member, inner)?,
                        None => {
                            return Err(ValueRefused {
                                pointer: inner,
                                keyword: "additionalProperties",
                            })
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
#[path = "handover_tests.rs"]
mod tests;
