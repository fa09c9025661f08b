//! What a server declares of a tool's output: the integrity of its parts
//! (`[[servers.fields]]`) and whether it computes its answers from what
//! it is sent, so which parts of an answer are the server's record and
//! which are the caller's.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::label::Integrity;

/// The integrity a server's declaration gives part of a tool's output: a
/// transaction's `subject` is third-party text while its `recipient` is
/// the bank's own record. A rule covers the values its pattern matches and
/// everything inside them; where several rules cover a value, the one with
/// the longest pattern decides (rules of one length join), and a value no
/// rule covers keeps the whole output's integrity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldLabel {
    /// The pattern, as decoded RFC 6901 segments of the released value;
    /// `*` matches any one key or index.
    pub pattern: Vec<String>,
    /// The integrity of what it covers.
    pub integrity: Integrity,
}

/// What a server declares of one tool's output: the labels of its parts,
/// and whether it computes its answers from what it is sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputRules {
    /// The labels of parts of the output (`[[servers.fields]]`).
    pub fields: Vec<FieldLabel>,
    /// Whether the server computes its answers from what it is sent: a
    /// server whose behaviour the arena does not know (answers a scenario
    /// records, a live MCP server) may answer anything it can derive from
    /// its arguments, such as a value normalised, translated or assembled
    /// from pieces. A part of such an answer that no field rule declares
    /// is then the caller's as much as the server's ([`computed_part`]).
    pub computed: bool,
}

/// Whether the part at `pointer` of `output` is computed from what its
/// call sent: `computed` (the server computes its answers and the call
/// sent something) and some value in the part is covered by no rule of
/// `fields`. A field rule declares what it covers the server's own record,
/// chosen by the call but not made from it (a contact found by a name). A
/// pointer that finds nothing is computed, since nothing declares it.
pub fn computed_part(output: &Value, pointer: &str, fields: &[FieldLabel], computed: bool) -> bool {
    computed && undeclared_at(output, pointer, fields, false)
}

/// Whether the output holds text computed from what its call sent: as
/// [`computed_part`] of the whole output, counting only strings. Text can
/// carry an instruction to whoever reads it; a number, a boolean, `null`
/// or the answer's keys (its shape, such as `{"ok": true}`) cannot, so an
/// answer without computed text does not lower its reader (a value taken
/// from it still carries what the call sent, by [`computed_part`]).
pub fn computed_text(output: &Value, fields: &[FieldLabel], computed: bool) -> bool {
    computed && undeclared_at(output, "", fields, true)
}

/// Whether some value of the part of `output` at `pointer` is covered by
/// no rule of `fields` (only strings, with `text_only`).
fn undeclared_at(output: &Value, pointer: &str, fields: &[FieldLabel], text_only: bool) -> bool {
    fn undeclared(
        value: &Value,
        path: &mut Vec<String>,
        fields: &[FieldLabel],
        text: bool,
    ) -> bool {
        if fields.iter().any(|rule| covers(rule, path)) {
            return false;
        }
        let mut visit = |key: String, child: &Value| {
            path.push(key);
            let found = undeclared(child, path, fields, text);
            path.pop();
            found
        };
        match value {
            Value::Object(map) if !map.is_empty() => map.iter().any(|(k, v)| visit(k.clone(), v)),
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .enumerate()
                .any(|(i, v)| visit(i.to_string(), v)),
            Value::String(_) => true,
            _ => !text,
        }
    }
    let Some(start) = output.pointer(pointer) else {
        return !text_only;
    };
    let mut path: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
        .collect();
    undeclared(start, &mut path, fields, text_only)
}

/// Whether a call with `arguments` sent anything a server could compute
/// an answer from: a scalar, a key or an element.
pub fn sends_anything(arguments: &Value) -> bool {
    match arguments {
        Value::Null => false,
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => true,
    }
}

/// The integrity of the value at `pointer` in `root`: the lowest, over
/// that value and everything inside it, of what the rules of `fields` (or,
/// where none covers a part, `base`, the whole output's integrity) give
/// each part. A value is as untrusted as its least trusted part, so taking
/// a parent never launders a child.
pub fn integrity_at(
    root: &Value,
    pointer: &str,
    base: Integrity,
    fields: &[FieldLabel],
) -> Integrity {
    let Some(start) = root.pointer(pointer) else {
        return base;
    };
    let mut path: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut lowest = Integrity::Trusted;
    walk_integrity(start, &mut path, base, fields, &mut lowest);
    lowest
}

/// Lowers `lowest` to the integrity of `value` (at `path`) and of every
/// value inside it.
fn walk_integrity(
    value: &Value,
    path: &mut Vec<String>,
    base: Integrity,
    fields: &[FieldLabel],
    lowest: &mut Integrity,
) {
    *lowest = (*lowest).max(integrity_of_part(path, base, fields));
    let mut visit = |key: String, child: &Value| {
        path.push(key);
        walk_integrity(child, path, base, fields, lowest);
        path.pop();
    };
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| visit(k.clone(), v)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| visit(i.to_string(), v)),
        _ => {}
    }
}

/// Whether `rule` covers the value at `path`: its pattern matches `path`
/// or one of its ancestors.
fn covers(rule: &FieldLabel, path: &[String]) -> bool {
    rule.pattern.len() <= path.len()
        && rule
            .pattern
            .iter()
            .zip(path)
            .all(|(want, have)| want == "*" || want == have)
}

/// The integrity the rules give the one value at `path` (its own, not
/// that of what it holds).
fn integrity_of_part(path: &[String], base: Integrity, fields: &[FieldLabel]) -> Integrity {
    let mut decided: Option<(usize, Integrity)> = None;
    for rule in fields.iter().filter(|r| covers(r, path)) {
        let len = rule.pattern.len();
        decided = Some(match decided {
            Some((n, held)) if n > len => (n, held),
            Some((n, held)) if n == len => (n, held.max(rule.integrity)),
            _ => (len, rule.integrity),
        });
    }
    decided.map_or(base, |(_, integrity)| integrity)
}
