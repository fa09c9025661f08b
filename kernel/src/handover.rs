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

mod parse;

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

/// Where a value fails its schema and the keyword that refused it. A
/// refusal never quotes the value: its place is a pointer built from the
/// schema's own names and item indexes only, so a member the schema does
/// not declare is named by its position, never by its key (a key is part
/// of the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueRefused {
    /// The JSON pointer of the failing part within the value (for an
    /// undeclared member, of the object that holds it).
    pub pointer: String,
    /// The keyword that refused it (`type`, `enum`, `maxLength`, ...).
    pub keyword: &'static str,
    /// For `additionalProperties`, the position of the undeclared member
    /// among its object's keys (from 1, keys sorted by their UTF-8 bytes,
    /// so the same whatever order the value's text gave them).
    pub member: Option<usize>,
}

impl ValueRefused {
    /// What refused the value, as a reason states it: the keyword, and for
    /// an undeclared member its position (`additionalProperties (member
    /// 2)`).
    pub fn refused_by(&self) -> String {
        match self.member {
            Some(position) => format!("{} (member {position})", self.keyword),
            None => self.keyword.to_string(),
        }
    }
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

pub(crate) fn decimal(text: &str) -> Option<Decimal> {
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

    /// Checks `value`; the first failure names its place and keyword.
    pub fn check(&self, value: &Value) -> Result<(), ValueRefused> {
        self.check_at(value, String::new())
    }

    fn check_at(&self, value: &Value, at: String) -> Result<(), ValueRefused> {
        let fail = |keyword| {
            Err(ValueRefused {
                pointer: at.clone(),
                keyword,
                member: None,
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
            } => check_string(value, *max_length, pattern.as_ref(), range.as_ref()).map_err(
                |keyword| ValueRefused {
                    pointer: at.clone(),
                    keyword,
                    member: None,
                },
            ),
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
            } => check_object(value, properties, required, &at),
        }
    }
}

/// A string's checks in order (type, length, pattern, decimal range),
/// answering the keyword of the first that refuses it.
fn check_string(
    value: &Value,
    max_length: usize,
    pattern: Option<&regex::Regex>,
    range: Option<&Bounds<Decimal>>,
) -> Result<(), &'static str> {
    let Value::String(text) = value else {
        return Err("type");
    };
    if text.chars().count() > max_length {
        return Err("maxLength");
    }
    if pattern.is_some_and(|p| !p.is_match(text)) {
        return Err("pattern");
    }
    if let Some((minimum, maximum)) = range {
        let Some(amount) = decimal(text) else {
            return Err("type");
        };
        if minimum.is_some_and(|m| amount < m) {
            return Err("minimum");
        }
        if maximum.is_some_and(|m| amount > m) {
            return Err("maximum");
        }
    }
    Ok(())
}

/// An object's checks: every required property present, every member
/// declared and admitted by its own schema.
fn check_object(
    value: &Value,
    properties: &BTreeMap<String, ValueSchema>,
    required: &BTreeSet<String>,
    at: &str,
) -> Result<(), ValueRefused> {
    let Value::Object(members) = value else {
        return Err(ValueRefused {
            pointer: at.to_string(),
            keyword: "type",
            member: None,
        });
    };
    if let Some(missing) = required.iter().find(|n| !members.contains_key(*n)) {
        // A required name is the schema's own, never the value's.
        return Err(ValueRefused {
            pointer: format!("{at}/{}", escape(missing)),
            keyword: "required",
            member: None,
        });
    }
    // By sorted key, so the first failure and a member's position are the
    // same whatever order the value's text gave its keys.
    let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    for (position, (name, member)) in sorted.into_iter().enumerate() {
        match properties.get(name) {
            // A declared name: the schema's own text.
            Some(schema) => schema.check_at(member, format!("{at}/{}", escape(name)))?,
            // An undeclared key is part of the value: named by position.
            None => {
                return Err(ValueRefused {
                    pointer: at.to_string(),
                    keyword: "additionalProperties",
                    member: Some(position + 1),
                })
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "handover_tests.rs"]
mod tests;
