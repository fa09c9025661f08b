//! The recorded values of a session (a call's arguments, an upstream's
//! answer) as the equivalent scenario writes them, so the scenario loader
//! reads back exactly what the edge saw.
//!
//! - A JSON null is `{ null = true }` (TOML has no null).
//! - A string the loader's own credential rule refuses inline
//!   ([`chio_arena::secrets::credential_marker`], in any form, or a piece
//!   of a credential split across the value's strings) is a sealed value,
//!   `{ fixture = "fixtures/secrets/secret-<n>.txt" }`: the text goes into
//!   that file of the scenario's folder (one file per distinct text,
//!   numbered in order of first use), the guards see it, and the bundle
//!   records only its SHA-256.
//! - An object with a key of the value grammar (`from_step`, `literal`,
//!   `fixture`, `null`) is written `{ literal = { ... } }`, so it is sent as
//!   it was, never read as a reference.
//!
//! What a scenario still cannot write is an error naming where it lies,
//! never the value: a key the loader refuses as a credential name, a
//! credential or a null inside such a literal, a credential a sealed file
//! cannot hold (a line break, fewer than 8 characters), and an integer
//! past TOML's.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use chio_arena::scenario::sealed::seal_bytes;
use chio_arena::scenario::value::REFERENCE_KEYS;
use chio_arena::secrets::{credential_marker, key_finding, SecretFinding};
use chio_kernel::credentials::reading::splits;
use chio_kernel::credentials::CredentialKind;
use serde_json::Value;

/// Where, below the scenario's folder, the sealed files are written.
pub const SECRETS_DIR: &str = "fixtures/secrets";

/// One sealed file of the scenario. Its `Debug` shows the path only.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedFile {
    /// The path below the scenario's folder, as the scenario names it.
    pub path: String,
    /// The value it holds, as the file's one line.
    pub text: String,
}

impl fmt::Debug for SealedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SealedFile({})", self.path)
    }
}

/// The sealed files a scenario's values read, in order of first use.
#[derive(Debug, Default)]
pub struct Secrets {
    by_text: BTreeMap<String, usize>,
    files: Vec<SealedFile>,
    /// The strings of the value being written that carry a piece of a
    /// credential split across its strings.
    pieces: BTreeSet<String>,
}

impl Secrets {
    /// The file holding `text`, written once.
    fn path_of(&mut self, text: &str) -> Result<String, String> {
        if let Some(&i) = self.by_text.get(text) {
            return Ok(self.files[i].path.clone());
        }
        seal_bytes(text.as_bytes().to_vec())
            .map_err(|why| format!("holds a credential a sealed file cannot hold ({why})"))?;
        let path = format!("{SECRETS_DIR}/secret-{}.txt", self.files.len() + 1);
        self.by_text.insert(text.to_string(), self.files.len());
        self.files.push(SealedFile {
            path: path.clone(),
            text: text.to_string(),
        });
        Ok(path)
    }

    /// The files, in order of first use.
    pub fn into_files(self) -> Vec<SealedFile> {
        self.files
    }
}

/// A TOML string.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// `value` as an inline TOML value the loader reads back as `value`, each
/// credential sealed into `secrets`. The error says what cannot be
/// written and where (a JSON pointer), never the value.
pub fn sealed_inline(value: &Value, secrets: &mut Secrets) -> Result<String, String> {
    // The string values read together, as the guard and the loader read
    // them: each piece of a split credential is sealed as well.
    let mut texts = Vec::new();
    strings_of(value, &mut texts);
    let texts: Vec<&str> = texts.into_iter().filter(|t| !t.is_empty()).collect();
    secrets.pieces = splits(&texts, &CredentialKind::ALL)
        .into_iter()
        .flat_map(|split| split.parts)
        .map(|p| texts[p].to_string())
        .collect();
    write(value, false, secrets).map_err(|(at, why)| format!("{why} at \"{at}\""))
}

/// The string values of `value`, in document order.
fn strings_of<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| strings_of(item, out)),
        Value::Object(map) => map.values().for_each(|item| strings_of(item, out)),
        _ => {}
    }
}

type Refusal = (String, String);

fn write(value: &Value, literal: bool, secrets: &mut Secrets) -> Result<String, Refusal> {
    let here = |why: &str| (String::new(), why.to_string());
    Ok(match value {
        Value::Null if literal => {
            return Err(here(
                "holds a null inside an object a scenario writes as a literal",
            ))
        }
        Value::Null => "{ null = true }".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_u64() && n.as_i64().is_none() => {
            return Err(here("holds an integer past what TOML writes"))
        }
        Value::Number(n) => n.to_string(),
        Value::String(text)
            if credential_marker(text).is_none() && !secrets.pieces.contains(text) =>
        {
            toml_string(text)
        }
        Value::String(_) if literal => {
            return Err(here(
                "holds a credential inside an object a scenario writes as a literal",
            ))
        }
        Value::String(text) => format!(
            "{{ fixture = {} }}",
            toml_string(&secrets.path_of(text).map_err(|why| (String::new(), why))?)
        ),
        Value::Array(items) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                out.push(
                    write(item, literal, secrets)
                        .map_err(|(at, why)| (format!("/{i}{at}"), why))?,
                );
            }
            format!("[{}]", out.join(", "))
        }
        Value::Object(map) => {
            let wrap = !literal && REFERENCE_KEYS.iter().any(|k| map.contains_key(*k));
            let mut out = Vec::new();
            for (key, member) in map {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                match key_finding(key) {
                    // The key is itself a credential: name its object only.
                    Some(SecretFinding::Credential(_)) => {
                        return Err(here("has a key that carries a credential"))
                    }
                    Some(SecretFinding::KeyName(_)) => {
                        return Err((
                            format!("/{escaped}"),
                            "has a key the scenario loader refuses as a credential's name"
                                .to_string(),
                        ))
                    }
                    None => {}
                }
                let member = write(member, literal || wrap, secrets)
                    .map_err(|(at, why)| (format!("/{escaped}{at}"), why))?;
                out.push(format!("{} = {member}", toml_string(key)));
            }
            let table = if out.is_empty() {
                "{}".to_string()
            } else {
                format!("{{ {} }}", out.join(", "))
            };
            if wrap {
                format!("{{ literal = {table} }}")
            } else {
                table
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // A credential encoded or split across two arguments is written as
    // sealed files, as the guard and the loader read it; plain text stays.
    #[test]
    fn encoded_and_split_credentials_are_sealed() {
        let mut secrets = Secrets::default();
        let encoded = "Z2hwXzE2QzdlNDJGMjkyYzY5MTJFNzcxMGM4MzgzNDdBZTE3OEI0YQ==";
        let written = sealed_inline(&json!({"a": encoded, "n": "notes"}), &mut secrets).unwrap();
        assert!(
            !written.contains(encoded) && written.contains("\"notes\""),
            "{written}"
        );
        let split = json!({"t": "ghp_16C7e42F292c6912", "b": "E7710c838347Ae178B4a"});
        let written = sealed_inline(&split, &mut secrets).unwrap();
        assert!(
            !written.contains("ghp_") && !written.contains("E7710c"),
            "{written}"
        );
        assert_eq!(secrets.into_files().len(), 3);
    }
}
