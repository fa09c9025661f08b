//! Inline-secret detection for the scenario loader.
//!
//! A scenario must never carry a real credential: it is committed, shared
//! and printed. [`scan_document`] walks the whole parsed TOML tree (the
//! title, ids, agent, step, guard, grant and adversary fields, every key and
//! every string at any depth) before any other check, so no later message
//! can quote a credential. It refuses two things:
//!
//! - a **value that carries a credential**: any span the kernel's one
//!   credential detector ([`chio_kernel::credentials`]) finds: a PEM
//!   private-key block, an `authorization:` header with a value, `bearer`
//!   and a credential after any whitespace, an `sk-` key, an AWS access key
//!   id (`AKIA`/`ASIA`), a GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`,
//!   `ghr_`, `github_pat_`) or an assignment such as `password=...`; a key
//!   that is itself a credential counts too;
//! - a marker used as a **key name** ([`chio_kernel::credentials::credential_key_name`])
//!   of a key that holds a value: a key whose word segments include
//!   `password`, `secret`, `token`, `apikey`, `api` + `key`,
//!   `authorization` or `bearer`; keys that are paths or globs (they hold
//!   `/` or `*`) and JSON Schema property names (`properties/pageToken`:
//!   names of fields, holding no value) are checked as values instead.
//!
//! Every key and string is judged by the one reader of the kernel
//! ([`chio_kernel::credentials::reading`], the `secret-redaction` guard's):
//! as written (TOML's own escapes, `\u` and `\U`, are decoded by then), in
//! the normal form (JSON `\u` escapes and surrogate pairs, `%XX` escapes
//! and invisible characters undone) and decoded (base64 and hex runs); the
//! strings of each table or array inside a record (a step's `arguments`)
//! are read together, so a token split across two arguments is refused; a
//! string that is a JSON document (a tool's `input_schema`, an argument
//! holding JSON text) is decoded and every key and string in it judged the
//! same way, so `"\u0067hp_..."` or a `"\u0070assword"` key is refused as
//! the loader and the kernel will read it. [`scan_source`] then reads the
//! file's text as written, which also holds its comments: a credential only
//! a comment carries is refused naming its line, since the file is copied
//! into every bundle.
//!
//! A raw substring match on marker words would refuse innocent text such as
//! `/workspace/task-1.txt`, a server named `secrets` or `tokenizer.json`;
//! the detector's shapes do not. The error names the field path and the
//! marker (a public prefix such as `AKIA` or `ghp_`), never the value.

use chio_kernel::credentials::forms::normal_form;
use chio_kernel::credentials::reading::{credential_in, split_in};
use chio_kernel::credentials::{credential_key_name, first_credential, redact, CredentialKind};

use crate::error::ArenaError;

/// Why a piece of text was judged a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretFinding {
    /// The text is a key name built on a marker.
    KeyName(&'static str),
    /// The text carries a credential of the marker's shape.
    Credential(&'static str),
}

/// How deep JSON text inside JSON text is decoded: a schema's string that
/// is itself JSON is read too, to this many levels.
const JSON_TEXT_DEPTH: usize = 4;

/// Walks a parsed scenario and refuses the first inline secret found.
/// Every key and string is judged alone first, then the strings of each
/// table and array read together ([`read_together`]), as the guard reads a
/// call's arguments.
pub fn scan_document(table: &toml::Table) -> Result<(), ArenaError> {
    scan_table(table, "")?;
    read_together(Members::Table(table), "", true)
}

/// Refuses a credential only `strings` (pointer, text) read together carry
/// ([`split_in`]), naming each string it lies in.
fn refuse_split(strings: &[(String, &str)]) -> Result<(), ArenaError> {
    let texts: Vec<&str> = strings
        .iter()
        .map(|(_, text)| *text)
        .filter(|text| !text.is_empty())
        .collect();
    let paths: Vec<&String> = strings
        .iter()
        .filter(|(_, text)| !text.is_empty())
        .map(|(path, _)| path)
        .collect();
    match split_in(&texts) {
        Some(split) => {
            let named: Vec<&str> = split.parts.iter().map(|&p| paths[p].as_str()).collect();
            Err(ArenaError::InlineSecret {
                field: format!("{} (read together)", named.join(" and ")),
                marker: split.marker,
            })
        }
        None => Ok(()),
    }
}

/// The members of a TOML table or array.
#[derive(Clone, Copy)]
enum Members<'v> {
    Table(&'v toml::Table),
    Array(&'v [toml::Value]),
}

impl<'v> Members<'v> {
    fn of(value: &'v toml::Value) -> Option<Members<'v>> {
        match value {
            toml::Value::Table(table) => Some(Members::Table(table)),
            toml::Value::Array(items) => Some(Members::Array(items)),
            _ => None,
        }
    }

    /// Each member with its field path below `path`.
    fn each(self, path: &str) -> Vec<(String, &'v toml::Value)> {
        match self {
            Members::Table(table) => table.iter().map(|(k, v)| (join_key(path, k), v)).collect(),
            Members::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("{path}[{i}]"), v))
                .collect(),
        }
    }

    /// Whether they hold, at any depth, an array of tables: a list of
    /// records (steps, servers), whose strings are not read together.
    fn records(self) -> bool {
        let inner = |v: &toml::Value| Members::of(v).is_some_and(Members::records);
        match self {
            Members::Table(table) => table.values().any(inner),
            Members::Array(items) => items.iter().any(|v| v.is_table() || inner(v)),
        }
    }

    /// Their string values with field paths; with `deep`, at any depth.
    fn strings(self, path: &str, deep: bool, out: &mut Vec<(String, &'v str)>) {
        for (at, value) in self.each(path) {
            match (value, Members::of(value)) {
                (toml::Value::String(text), _) => out.push((at, text.as_str())),
                (_, Some(members)) if deep => members.strings(&at, deep, out),
                _ => {}
            }
        }
    }
}

/// Reads strings together as the guard reads a call's arguments. A record
/// (the document, each table of a list of tables: a step, a server) is a
/// set of separate fields, never read together; a table or an array inside
/// one (a step's `arguments`) has all its strings read together when it
/// holds no list of records, else its own members and each member the
/// same way.
fn read_together(members: Members<'_>, path: &str, record: bool) -> Result<(), ArenaError> {
    let deep = !record && !members.records();
    if !record {
        let mut strings = Vec::new();
        members.strings(path, deep, &mut strings);
        refuse_split(&strings)?;
    }
    if deep {
        return Ok(());
    }
    for (at, value) in members.each(path) {
        if let Some(inner) = Members::of(value) {
            let is_record = matches!(members, Members::Array(_)) && value.is_table();
            read_together(inner, &at, is_record)?;
        }
    }
    Ok(())
}

/// [`scan_document`] over `table`, then the text it was parsed from as
/// written: a credential the tree does not hold (one in a comment) is
/// refused naming its line, never its value.
pub fn scan_source(text: &str, table: &toml::Table) -> Result<(), ArenaError> {
    scan_document(table)?;
    match first_credential(text) {
        Some(span) => Err(ArenaError::InlineSecret {
            field: format!("line {} (a comment)", line_of(text, span.start)),
            marker: span.marker,
        }),
        None => Ok(()),
    }
}

/// The 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

fn join_key(prefix: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let key = if plain {
        key.to_string()
    } else {
        format!("{key:?}")
    };
    if prefix.is_empty() {
        key
    } else {
        format!("{prefix}.{key}")
    }
}

fn scan_table(table: &toml::Table, prefix: &str) -> Result<(), ArenaError> {
    for (key, value) in table {
        let path = join_key(prefix, key);
        judge_key(key, prefix, &path, true)?;
        scan_value(value, &path)?;
    }
    Ok(())
}

/// Refuses a key (at `path`, in the table at `parent`) that is a
/// credential, in any form it is read in, or, when it carries a value
/// (`holds_value`; not a JSON Schema property's name), a marker used as a
/// name.
fn judge_key(key: &str, parent: &str, path: &str, holds_value: bool) -> Result<(), ArenaError> {
    let finding = if holds_value {
        key_finding(key).or_else(|| key_finding(&normal_form(key)))
    } else {
        credential_marker(key).map(SecretFinding::Credential)
    };
    match finding {
        Some(SecretFinding::KeyName(marker)) => Err(ArenaError::SecretKeyName {
            field: path.to_string(),
            marker,
        }),
        // The key itself is a credential: name the table, not the key.
        Some(SecretFinding::Credential(marker)) => Err(ArenaError::InlineSecret {
            field: if parent.is_empty() {
                "(top-level key)".to_string()
            } else {
                format!("{parent} (a key)")
            },
            marker,
        }),
        None => Ok(()),
    }
}

fn scan_value(value: &toml::Value, path: &str) -> Result<(), ArenaError> {
    match value {
        toml::Value::String(text) => scan_text(text, path, 0),
        toml::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                scan_value(item, &format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        toml::Value::Table(table) => scan_table(table, path),
        _ => Ok(()),
    }
}

/// Judges a string in every form the one reader reads it in
/// ([`credential_in`]: as written, normal form, decoded), then, when it is
/// a JSON document, every key and string that decoding it gives.
fn scan_text(text: &str, path: &str, depth: usize) -> Result<(), ArenaError> {
    if let Some(marker) = credential_marker(text) {
        return Err(ArenaError::InlineSecret {
            field: path.to_string(),
            marker,
        });
    }
    match json_document(text) {
        Some(json) if depth < JSON_TEXT_DEPTH => scan_json(&json, &format!("{path}#"), depth + 1),
        _ => Ok(()),
    }
}

/// `text` decoded as JSON when it is an object, an array or a string.
fn json_document(text: &str) -> Option<serde_json::Value> {
    let first = text.trim_start().as_bytes().first()?;
    if !matches!(first, b'{' | b'[' | b'"') {
        return None;
    }
    serde_json::from_str(text).ok()
}

/// The JSON Schema keywords whose members are named by field names, not
/// keys holding values (`properties`, ...).
const SCHEMA_NAME_MAPS: [&str; 4] = ["properties", "patternProperties", "$defs", "definitions"];

/// Judges decoded JSON; `pointer` is the field path and the JSON Pointer
/// of `value` inside the field's text (`input_schema#/properties`). Each
/// key and string alone, then the string values of the whole document
/// read together.
fn scan_json(value: &serde_json::Value, pointer: &str, depth: usize) -> Result<(), ArenaError> {
    scan_json_members(value, pointer, depth, false)?;
    let mut strings = Vec::new();
    json_strings(value, pointer, &mut strings);
    refuse_split(&strings)
}

/// The string values of decoded JSON with their pointers, at any depth.
fn json_strings<'v>(value: &'v serde_json::Value, pointer: &str, out: &mut Vec<(String, &'v str)>) {
    match value {
        serde_json::Value::String(text) => out.push((pointer.to_string(), text)),
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                json_strings(item, &format!("{pointer}/{i}"), out);
            }
        }
        serde_json::Value::Object(map) => {
            for (key, item) in map {
                json_strings(item, &member_pointer(pointer, key), out);
            }
        }
        _ => {}
    }
}

fn member_pointer(pointer: &str, key: &str) -> String {
    let escaped = key.replace('~', "~0").replace('/', "~1");
    format!("{pointer}/{}", join_key("", &escaped))
}

/// [`scan_json`] of each key and string; with `names`, the keys of an
/// object are a schema's field names (a member of [`SCHEMA_NAME_MAPS`])
/// wherever they name a schema (an object or a boolean), judged as values.
fn scan_json_members(
    value: &serde_json::Value,
    pointer: &str,
    depth: usize,
    names: bool,
) -> Result<(), ArenaError> {
    match value {
        serde_json::Value::String(text) => scan_text(text, pointer, depth),
        serde_json::Value::Array(items) => items.iter().enumerate().try_for_each(|(i, item)| {
            scan_json_members(item, &format!("{pointer}/{i}"), depth, false)
        }),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(key, item)| {
            let path = member_pointer(pointer, key);
            let schema = names && (item.is_object() || item.is_boolean());
            judge_key(key, pointer, &path, !schema)?;
            let inner = !names && SCHEMA_NAME_MAPS.contains(&key.as_str()) && item.is_object();
            scan_json_members(item, &path, depth, inner)
        }),
        _ => Ok(()),
    }
}

/// Judges a key name: a marker used as a name, or a credential as a name.
pub fn key_finding(key: &str) -> Option<SecretFinding> {
    if let Some(marker) = credential_marker(key) {
        return Some(SecretFinding::Credential(marker));
    }
    credential_key_name(key).map(SecretFinding::KeyName)
}

/// The marker whose credential shape `text` carries, in any form the one
/// reader reads it in ([`credential_in`]: as written, its normal form,
/// decoded), if any.
pub fn credential_marker(text: &str) -> Option<&'static str> {
    credential_in(text).map(|found| found.marker)
}

/// `text` with every credential span replaced by `[REDACTED]`, for
/// messages that must quote text the secret scan has not seen yet.
pub fn redact_credentials(text: &str) -> String {
    redact(text, &CredentialKind::ALL).unwrap_or_else(|| text.to_string())
}
