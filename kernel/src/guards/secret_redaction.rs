//! `secret-redaction`: the post-invocation guard that redacts credentials.
//!
//! Config: `{ "patterns": [...] }`, optional, default all of:
//! - `pem-private-key`: a `-----BEGIN ... PRIVATE KEY-----` block through its
//!   `-----END ... PRIVATE KEY-----` line (to the end of the text if unterminated);
//! - `sk-key`: `sk-` followed by at least 16 key characters (`[A-Za-z0-9_-]`),
//!   not preceded by a letter or digit;
//! - `aws-access-key`: `AKIA` or `ASIA` followed by 16 uppercase letters or digits;
//! - `bearer-token`: `Bearer ` (any case) followed by at least 8 token characters.
//!
//! Each match in any string of the output becomes `[REDACTED]`. An output the
//! guard changed is released as a sanitized allow (projected `rewrite`).

use serde::Deserialize;
use serde_json::Value;

use super::{
    config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardVerdict,
    OutputVerdict,
};
use crate::error::KernelError;

/// What replaces a credential.
pub const REDACTED: &str = "[REDACTED]";

/// A credential shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretPattern {
    /// PEM private-key block.
    PemPrivateKey,
    /// `sk-` API key.
    SkKey,
    /// AWS access key id.
    AwsAccessKey,
    /// HTTP bearer token.
    BearerToken,
}

impl SecretPattern {
    /// Every pattern.
    pub const ALL: [SecretPattern; 4] = [
        SecretPattern::PemPrivateKey,
        SecretPattern::SkKey,
        SecretPattern::AwsAccessKey,
        SecretPattern::BearerToken,
    ];

    /// The config name.
    pub fn as_str(&self) -> &'static str {
        match self {
            SecretPattern::PemPrivateKey => "pem-private-key",
            SecretPattern::SkKey => "sk-key",
            SecretPattern::AwsAccessKey => "aws-access-key",
            SecretPattern::BearerToken => "bearer-token",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        SecretPattern::ALL.into_iter().find(|p| p.as_str() == text)
    }

    /// Byte ranges of the matches of this pattern in `text`.
    fn find(&self, text: &str) -> Vec<(usize, usize)> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        match self {
            SecretPattern::PemPrivateKey => {
                let mut from = 0;
                while let Some(start) = text[from..].find("-----BEGIN ").map(|i| i + from) {
                    let header_end = text[start + 11..].find("-----").map(|i| i + start + 11);
                    let Some(header_end) = header_end else { break };
                    if !text[start..header_end].ends_with("PRIVATE KEY") {
                        from = header_end + 5;
                        continue;
                    }
                    let end = text[header_end + 5..]
                        .find("-----END ")
                        .map(|i| i + header_end + 5)
                        .and_then(|e| text[e + 9..].find("-----").map(|i| i + e + 9 + 5))
                        .unwrap_or(text.len());
                    out.push((start, end));
                    from = end;
                }
            }
            SecretPattern::SkKey => {
                for (i, _) in text.match_indices("sk-") {
                    if i > 0 && b[i - 1].is_ascii_alphanumeric() {
                        continue;
                    }
                    let run = b[i + 3..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_' || **c == b'-')
                        .count();
                    if run >= 16 {
                        out.push((i, i + 3 + run));
                    }
                }
            }
            SecretPattern::AwsAccessKey => {
                for prefix in ["AKIA", "ASIA"] {
                    for (i, _) in text.match_indices(prefix) {
                        if i > 0 && b[i - 1].is_ascii_alphanumeric() {
                            continue;
                        }
                        let run = b[i + 4..]
                            .iter()
                            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                            .count();
                        if run == 16 {
                            out.push((i, i + 20));
                        }
                    }
                }
            }
            SecretPattern::BearerToken => {
                let lower = text.to_ascii_lowercase();
                for (i, _) in lower.match_indices("bearer ") {
                    let start = i + 7;
                    let run = b[start..]
                        .iter()
                        .take_while(|c| c.is_ascii_alphanumeric() || b"._~+/=-".contains(c))
                        .count();
                    if run >= 8 {
                        out.push((start, start + run));
                    }
                }
            }
        }
        out
    }
}

/// Redacts every match of `patterns` in `text`; `None` when nothing matched.
pub fn redact_text(text: &str, patterns: &[SecretPattern]) -> Option<String> {
    let mut ranges: Vec<(usize, usize)> = patterns.iter().flat_map(|p| p.find(text)).collect();
    if ranges.is_empty() {
        return None;
    }
    ranges.sort();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in ranges {
        if end <= at {
            continue;
        }
        out.push_str(&text[at..start.max(at)]);
        out.push_str(REDACTED);
        at = end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

fn redact_value(value: &Value, patterns: &[SecretPattern], count: &mut usize) -> Value {
    match value {
        Value::String(s) => match redact_text(s, patterns) {
            Some(r) => {
                *count += 1;
                Value::String(r)
            }
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| redact_value(v, patterns, count))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_value(v, patterns, count)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Configuration of `secret-redaction`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretRedactionConfig {
    /// Pattern names (default: all).
    #[serde(default)]
    pub patterns: Option<Vec<String>>,
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct SecretRedactionGuard {
    meta: GuardMeta,
    patterns: Vec<SecretPattern>,
}

impl SecretRedactionGuard {
    /// Validates the configuration.
    pub fn new(meta: GuardMeta, config: SecretRedactionConfig) -> Result<Self, KernelError> {
        let patterns = match config.patterns {
            None => SecretPattern::ALL.to_vec(),
            Some(names) if names.is_empty() => {
                return Err(config_error(&meta, "patterns is empty; omit it to redact every shape"))
            }
            Some(names) => names
                .iter()
                .map(|n| {
                    SecretPattern::parse(n).ok_or_else(|| {
                        config_error(&meta, format!("unknown pattern {n:?}; use pem-private-key, sk-key, aws-access-key or bearer-token"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        Ok(SecretRedactionGuard { meta, patterns })
    }
}

impl Guard for SecretRedactionGuard {
    fn meta(&self) -> &GuardMeta {
        &self.meta
    }
    fn kind(&self) -> GuardKind {
        GuardKind::SecretRedaction
    }
    fn inspects_output(&self) -> bool {
        true
    }
    fn check_request(&self, _ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        Ok(GuardVerdict::Allow)
    }
    fn check_output(
        &self,
        _ctx: &GuardContext<'_>,
        output: &Value,
    ) -> Result<OutputVerdict, GuardError> {
        let mut count = 0;
        let redacted = redact_value(output, &self.patterns, &mut count);
        Ok(if count == 0 {
            OutputVerdict::Pass
        } else {
            OutputVerdict::Rewrite(
                redacted,
                format!("redacted credentials in {count} output strings"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each credential shape is redacted and the surrounding text survives.
    #[test]
    fn redacts_each_shape() {
        let all = SecretPattern::ALL;
        let pem =
            "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\ndone";
        assert_eq!(redact_text(pem, &all).unwrap(), "key:\n[REDACTED]\ndone");
        assert_eq!(
            redact_text("use sk-abcdefghijklmnop1234 now", &all).unwrap(),
            "use [REDACTED] now"
        );
        assert_eq!(
            redact_text("id AKIAIOSFODNN7EXAMPLE.", &all).unwrap(),
            "id [REDACTED]."
        );
        assert_eq!(
            redact_text("Authorization: Bearer abc.def-123456", &all).unwrap(),
            "Authorization: Bearer [REDACTED]"
        );
    }

    // Look-alikes that are not credentials are left alone.
    #[test]
    fn innocent_text_untouched() {
        let all = SecretPattern::ALL;
        for text in [
            "task-1.txt",
            "risk-assessment",
            "the bearer of news",
            "-----BEGIN PUBLIC KEY-----",
            "AKIA",
        ] {
            assert_eq!(redact_text(text, &all), None, "{text}");
        }
    }
}
