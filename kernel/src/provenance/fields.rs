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
/// and which parts it computes from what it is sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputRules {
    /// The labels of parts of the output (`[[servers.fields]]`).
    pub fields: Vec<FieldLabel>,
    /// Whether the server computes its answers from what it is sent: a
    /// server whose behaviour the arena does not know (answers a scenario
    /// records, a live MCP server) may answer anything it can derive from
    /// its arguments, such as a value normalised, translated or assembled
    /// from pieces. A part of such an answer that no `trusted` field rule
    /// declares is then the caller's as much as the server's.
    pub computed: bool,
    /// The parts a built-in server computes from what it is sent (a digest
    /// of the call, the length of what was written, a test run's status),
    /// as patterns like a field rule's; every other part of a built-in
    /// server's answer is its record or an echo. None of them is text that
    /// can carry an instruction (a digest, a number, a status of a fixed
    /// set).
    pub derived: Vec<Vec<String>>,
    /// For a server that shares another's store (`shares_state_with`): the
    /// id of that server, under whose `server/<id>` what either is sent is
    /// kept; `None` keeps it under the server's own id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_with: Option<String>,
}

impl OutputRules {
    /// The rules as a reader takes the answer in when its server kept
    /// `kept` from earlier calls (a server whose state the arena does not
    /// model): with no field rule when that holds `integrity:untrusted`,
    /// since then no part of the answer is the server's own record.
    pub fn with_server_kept<'a>(mut self, kept: impl IntoIterator<Item = &'a String>) -> Self {
        let lowered = kept
            .into_iter()
            .filter_map(|label| Integrity::from_label(label))
            .any(|level| level > Integrity::Trusted);
        if lowered {
            self.fields.clear();
        }
        self
    }

    /// Whether the part at `pointer` of `output` (an answer to a call that
    /// sent something) is computed from what the call sent: some value in
    /// it lies in a derived part, or, for a server that computes its
    /// answers, is not declared the server's record by a field rule that
    /// decides it `trusted` (an `untrusted` rule lowers a part, it does not
    /// make it a record). A pointer that finds nothing is computed.
    pub fn computed_part(&self, output: &Value, pointer: &str) -> bool {
        (self.computed || !self.derived.is_empty()) && self.computed_at(output, pointer, false)
    }

    /// Whether `output` holds text computed from what its call sent: as
    /// [`Self::computed_part`] of the whole output, counting only strings
    /// of a server that computes its answers. Text can carry an instruction
    /// to whoever reads it; a number, a boolean, `null`, the answer's keys
    /// (its shape, such as `{"ok": true}`) and a built-in server's derived
    /// parts cannot, so such an answer does not lower its reader (a value
    /// taken from it still carries what the call sent).
    pub fn computed_text(&self, output: &Value) -> bool {
        self.computed && self.computed_at(output, "", true)
    }

    fn computed_at(&self, output: &Value, pointer: &str, text_only: bool) -> bool {
        let Some(start) = output.pointer(pointer) else {
            return !text_only;
        };
        let mut path: Vec<String> = pointer
            .split('/')
            .skip(1)
            .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
            .collect();
        self.any_computed(start, &mut path, text_only)
    }

    fn any_computed(&self, value: &Value, path: &mut Vec<String>, text_only: bool) -> bool {
        let mut visit = |key: String, child: &Value| {
            path.push(key);
            let found = self.any_computed(child, path, text_only);
            path.pop();
            found
        };
        match value {
            Value::Object(map) if !map.is_empty() => map.iter().any(|(k, v)| visit(k.clone(), v)),
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .enumerate()
                .any(|(i, v)| visit(i.to_string(), v)),
            leaf => self.leaf_computed(leaf, path, text_only),
        }
    }

    /// Whether the one value at `path` (a scalar or an empty container) is
    /// computed.
    fn leaf_computed(&self, leaf: &Value, path: &[String], text_only: bool) -> bool {
        let record = || rule_at(path, &self.fields) == Some(Integrity::Trusted);
        if text_only {
            return matches!(leaf, Value::String(_)) && !record();
        }
        let derived = self
            .derived
            .iter()
            .any(|pattern| pattern_covers(pattern, path));
        derived || (self.computed && !record())
    }
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
    pattern_covers(&rule.pattern, path)
}

/// Whether `pattern` matches `path` or one of its ancestors.
fn pattern_covers(pattern: &[String], path: &[String]) -> bool {
    pattern.len() <= path.len()
        && pattern
            .iter()
            .zip(path)
            .all(|(want, have)| want == "*" || want == have)
}

/// The integrity the rules decide for the one value at `path` (its own,
/// not that of what it holds): the longest covering rule's, rules of one
/// length joining; `None` when no rule covers it.
fn rule_at(path: &[String], fields: &[FieldLabel]) -> Option<Integrity> {
    let mut decided: Option<(usize, Integrity)> = None;
    for rule in fields.iter().filter(|r| covers(r, path)) {
        let len = rule.pattern.len();
        decided = Some(match decided {
            Some((n, held)) if n > len => (n, held),
            Some((n, held)) if n == len => (n, held.max(rule.integrity)),
            _ => (len, rule.integrity),
        });
    }
    decided.map(|(_, integrity)| integrity)
}

/// The integrity the rules give the one value at `path`, or `base` where
/// none covers it.
fn integrity_of_part(path: &[String], base: Integrity, fields: &[FieldLabel]) -> Integrity {
    rule_at(path, fields).unwrap_or(base)
}

/// Whether `output` holds an object key that `schema` (a tool's declared
/// output schema) does not name: a key of an object where the schema
/// lists it under `properties`, at the same place, is the tool's shape;
/// any other key (one a schema admits by `additionalProperties` or
/// `patternProperties`, or any key where no schema is declared) may be
/// text a caller sent and the server kept, such as a note's title or a
/// set of tags. Array items are read against `items`; a schema built any
/// other way (`$ref`, `allOf`, ...) names no key.
pub fn holds_undeclared_key(output: &Value, schema: Option<&Value>) -> bool {
    match output {
        Value::Object(map) => map.iter().any(|(key, child)| {
            let declared = schema
                .and_then(|s| s.get("properties"))
                .and_then(|properties| properties.get(key));
            declared.is_none() || holds_undeclared_key(child, declared)
        }),
        Value::Array(items) => {
            let item = schema.and_then(|s| s.get("items"));
            items.iter().any(|child| holds_undeclared_key(child, item))
        }
        _ => false,
    }
}
