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
//! A raw substring match on marker words would refuse innocent text such as
//! `/workspace/task-1.txt`, a server named `secrets` or `tokenizer.json`;
//! the detector's shapes do not. The error names the field path and the
//! marker (a public prefix such as `AKIA` or `ghp_`), never the value.

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

/// Walks a parsed scenario and refuses the first inline secret found.
pub fn scan_document(table: &toml::Table) -> Result<(), ArenaError> {
    scan_table(table, "")
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
        match key_finding(key) {
            Some(SecretFinding::KeyName(marker)) => {
                return Err(ArenaError::SecretKeyName {
                    field: path,
                    marker,
                })
            }
            Some(SecretFinding::Credential(marker)) => {
                // The key itself is a credential: name the table, not the key.
                return Err(ArenaError::InlineSecret {
                    field: if prefix.is_empty() {
                        "(top-level key)".to_string()
                    } else {
                        format!("{prefix} (a key)")
                    },
                    marker,
                });
            }
            None => {}
        }
        scan_value(value, &path)?;
    }
    Ok(())
}

fn scan_value(value: &toml::Value, path: &str) -> Result<(), ArenaError> {
    match value {
        toml::Value::String(text) => match credential_marker(text) {
            Some(marker) => Err(ArenaError::InlineSecret {
                field: path.to_string(),
                marker,
            }),
            None => Ok(()),
        },
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
