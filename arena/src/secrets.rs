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
//! - a marker used as a **key name** ([`chio_kernel::credentials::credential_key_name`]):
//!   a key whose word segments include `password`, `secret`, `token`,
//!   `apikey`, `api` + `key`, `authorization` or `bearer`; keys that are
//!   paths or globs (they hold `/` or `*`) are checked as values instead.
//!
//! Every key and string is judged as written (TOML's own escapes, `\u` and
//! `\U`, are decoded by then) and in the kernel's normal form
//! ([`chio_kernel::credentials::forms::normal_form`]: JSON `\u` escapes and
//! surrogate pairs, `%XX` escapes and invisible characters undone), and a
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
pub fn scan_document(table: &toml::Table) -> Result<(), ArenaError> {
    scan_table(table, "")
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
        judge_key(key, prefix, &path)?;
        scan_value(value, &path)?;
    }
    Ok(())
}

/// Refuses a key (at `path`, in the table at `parent`) that is a marker
/// used as a name or a credential, in any form it is read in.
fn judge_key(key: &str, parent: &str, path: &str) -> Result<(), ArenaError> {
    let finding = key_finding(key).or_else(|| key_finding(&normal_form(key)));
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

/// Judges a string as written and in its normal form, then, when it is a
/// JSON document, every key and string that decoding it gives.
fn scan_text(text: &str, path: &str, depth: usize) -> Result<(), ArenaError> {
    let marker = credential_marker(text).or_else(|| credential_marker(&normal_form(text)));
    if let Some(marker) = marker {
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

/// Judges decoded JSON; `pointer` is the field path and the JSON Pointer
/// of `value` inside the field's text (`input_schema#/properties`).
fn scan_json(value: &serde_json::Value, pointer: &str, depth: usize) -> Result<(), ArenaError> {
    match value {
        serde_json::Value::String(text) => scan_text(text, pointer, depth),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| scan_json(item, &format!("{pointer}/{i}"), depth)),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(key, item)| {
            let escaped = key.replace('~', "~0").replace('/', "~1");
            let path = format!("{pointer}/{}", join_key("", &escaped));
            judge_key(key, pointer, &path)?;
            scan_json(item, &path, depth)
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

/// The marker whose credential shape `text` carries, if any.
pub fn credential_marker(text: &str) -> Option<&'static str> {
    first_credential(text).map(|span| span.marker)
}

/// `text` with every credential span replaced by `[REDACTED]`, for
/// messages that must quote text the secret scan has not seen yet.
pub fn redact_credentials(text: &str) -> String {
    redact(text, &CredentialKind::ALL).unwrap_or_else(|| text.to_string())
}
