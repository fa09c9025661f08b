//! Inline-secret detection.
//!
//! A scenario must never carry a real credential: it is committed, shared
//! and printed. A raw substring match on the nine markers (`BEGIN PRIVATE
//! KEY`, `api_key`, `apikey`, `authorization:`, `bearer `, `password`,
//! `secret`, `sk-`, `token`) would refuse innocent text such as
//! `/workspace/task-1.txt`, a server named `secrets` or `tokenizer.json`, so
//! this module looks for two sharper things:
//!
//! - a marker used as a **key name**: a key whose word segments (split on
//!   `_`, `-`, `.`, spaces and camelCase) include `password`, `secret`,
//!   `token`, `apikey`, `api` + `key`, `authorization` or `bearer`; keys that
//!   are paths or globs (they hold `/` or `*`) are checked as values instead;
//! - a **value that carries a credential**: a PEM private-key armour line,
//!   an `authorization:` header with a value, `bearer <credential>`, `sk-`
//!   followed by 16 or more key-shaped characters, or an assignment such as
//!   `password=...`, `secret: ...`, `token=...`, `api_key=...`.
//!
//! [`scan_document`] walks the whole parsed TOML tree, so the check covers
//! agent, step, guard, grant and adversary fields and everything else. The
//! error names the field path and the marker, never the value.

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
    if key.contains('/') || key.contains('*') {
        return None;
    }
    let segments = key_segments(key);
    for (index, segment) in segments.iter().enumerate() {
        let marker = match segment.as_str() {
            "password" => Some("password"),
            "secret" => Some("secret"),
            "token" => Some("token"),
            "apikey" => Some("apikey"),
            "authorization" => Some("authorization:"),
            "bearer" => Some("bearer "),
            "api" if segments.get(index + 1).map(String::as_str) == Some("key") => Some("api_key"),
            _ => None,
        };
        if let Some(marker) = marker {
            return Some(SecretFinding::KeyName(marker));
        }
    }
    None
}

/// Splits a key into lowercase word segments on separators and camelCase.
fn key_segments(key: &str) -> Vec<String> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for ch in key.chars() {
        if !ch.is_alphanumeric() {
            if !current.is_empty() {
                segments.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if ch.is_uppercase() && previous_lower && !current.is_empty() {
            segments.push(std::mem::take(&mut current));
        }
        previous_lower = ch.is_lowercase() || ch.is_ascii_digit();
        current.extend(ch.to_lowercase());
    }
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

/// The marker whose credential shape `text` carries, if any.
pub fn credential_marker(text: &str) -> Option<&'static str> {
    if has_private_key_block(text) {
        return Some("BEGIN PRIVATE KEY");
    }
    let lower = text.to_ascii_lowercase();
    if has_authorization_header(&lower) {
        return Some("authorization:");
    }
    if has_bearer_credential(text, &lower) {
        return Some("bearer ");
    }
    if has_sk_key(text) {
        return Some("sk-");
    }
    assignment_marker(&lower)
}

fn has_private_key_block(text: &str) -> bool {
    text.lines().any(|line| {
        let upper_armour = match (line.find("BEGIN"), line.find("PRIVATE KEY")) {
            (Some(begin), Some(key)) if begin < key => line[begin + 5..key]
                .bytes()
                .all(|b| b == b' ' || b.is_ascii_uppercase() || b.is_ascii_digit()),
            _ => false,
        };
        let lower = line.to_ascii_lowercase();
        let any_case_armour = match (lower.find("-----begin"), lower.find("private key")) {
            (Some(begin), Some(key)) => begin < key,
            _ => false,
        };
        upper_armour || any_case_armour
    })
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Positions of `needle` in `haystack` not preceded by a letter or digit.
fn word_starts<'a>(haystack: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    haystack
        .match_indices(needle)
        .map(|(at, _)| at)
        .filter(move |&at| at == 0 || !is_word_byte(haystack.as_bytes()[at - 1]))
}

fn has_authorization_header(lower: &str) -> bool {
    lower.match_indices("authorization:").any(|(at, m)| {
        lower[at + m.len()..]
            .trim_start_matches([' ', '\t'])
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace())
    })
}

fn is_credential_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
}

fn has_bearer_credential(text: &str, lower: &str) -> bool {
    word_starts(lower, "bearer").any(|at| {
        let after = &text.as_bytes()[at + 6..];
        let spaces = after
            .iter()
            .take_while(|b| **b == b' ' || **b == b'\t')
            .count();
        if spaces == 0 {
            return false;
        }
        let run: Vec<u8> = after[spaces..]
            .iter()
            .copied()
            .take_while(|b| is_credential_byte(*b))
            .collect();
        let has_mark = run.iter().any(|b| {
            b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
        });
        (run.len() >= 8 && has_mark) || run.len() >= 20
    })
}

fn has_sk_key(text: &str) -> bool {
    word_starts(text, "sk-").any(|at| {
        let run: Vec<u8> = text.as_bytes()[at + 3..]
            .iter()
            .copied()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
            .collect();
        let key_chars = run.iter().filter(|b| b.is_ascii_alphanumeric()).count();
        key_chars >= 16
            && run.iter().any(u8::is_ascii_digit)
            && run.iter().any(u8::is_ascii_alphabetic)
    })
}

fn assignment_marker(lower: &str) -> Option<&'static str> {
    const KEYWORDS: &[(&str, &str)] = &[
        ("password", "password"),
        ("passwd", "password"),
        ("secret", "secret"),
        ("token", "token"),
        ("api_key", "api_key"),
        ("api-key", "api_key"),
        ("apikey", "apikey"),
    ];
    for (keyword, marker) in KEYWORDS {
        let hit = lower.match_indices(keyword).any(|(at, _)| {
            let bytes = lower.as_bytes();
            // `_` counts as a boundary so `db_password=` and `client_secret=` match.
            if at > 0 && is_word_byte(bytes[at - 1]) {
                return false;
            }
            let mut rest = lower[at + keyword.len()..].trim_start_matches(['"', '\'']);
            rest = rest.trim_start_matches([' ', '\t']);
            let Some(rest) = rest.strip_prefix(['=', ':']) else {
                return false;
            };
            let rest = rest.trim_start_matches([' ', '\t', '"', '\'']);
            rest.chars()
                .next()
                .is_some_and(|c| !c.is_whitespace() && !matches!(c, '&' | ',' | ';' | '"' | '\''))
        });
        if hit {
            return Some(marker);
        }
    }
    None
}
