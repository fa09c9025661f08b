//! `secret-redaction`: the post-invocation guard that redacts credentials.
//!
//! Config: `{ "patterns": [...] }`, optional, default every shape of
//! [`crate::credentials`]: `pem-private-key`, `authorization-header`,
//! `bearer-token` (the word `bearer`, any whitespace, line breaks included,
//! then the token), `sk-key`, `aws-access-key`, `github-token`,
//! `credential-assignment` (`password=...`, `secret: ...`, `token=...`).
//! The shapes and their exact rules live in that one module, which the
//! arena's scenario loader uses too.
//!
//! Each credential span in any string of the output (object keys are left
//! as they are) becomes `[REDACTED]`; what identifies it (a header's scheme
//! word, `password=`) stays. An output the guard changed is released as a
//! sanitized allow (projected `rewrite`).
//!
//! `scan` (default `["output"]`) may add `"arguments"`: a call whose
//! arguments carry a credential in any string (object keys included) is
//! then denied before it runs, naming the shape and the JSON pointer of
//! the string, never the credential: a credential is not rewritten on its
//! way out, because a call sent with `[REDACTED]` is not the call the agent
//! made.

use serde::Deserialize;
use serde_json::Value;

use super::{
    config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardVerdict,
    OutputVerdict,
};
use crate::credentials::{redact, CredentialKind};
use crate::error::KernelError;
use crate::reason::DenyReason;

pub use crate::credentials::REDACTED;

/// Redacts every credential of `kinds` in `text`; `None` when nothing matched.
pub fn redact_text(text: &str, kinds: &[CredentialKind]) -> Option<String> {
    redact(text, kinds)
}

fn redact_value(value: &Value, kinds: &[CredentialKind], count: &mut usize) -> Value {
    match value {
        Value::String(s) => match redact_text(s, kinds) {
            Some(r) => {
                *count += 1;
                Value::String(r)
            }
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| redact_value(v, kinds, count))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), redact_value(v, kinds, count)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Configuration of `secret-redaction`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretRedactionConfig {
    /// Shape names (default: all).
    #[serde(default)]
    pub patterns: Option<Vec<String>>,
    /// What is scanned: `output` (the default) and `arguments`.
    #[serde(default)]
    pub scan: Option<Vec<String>>,
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct SecretRedactionGuard {
    /// Identity and mode.
    meta: GuardMeta,
    /// The credential shapes to redact.
    kinds: Vec<CredentialKind>,
    /// Whether a call's arguments are scanned (and refused).
    arguments: bool,
    /// Whether the output is scanned (and redacted).
    output: bool,
}

impl SecretRedactionGuard {
    /// Validates the configuration.
    pub fn new(meta: GuardMeta, config: SecretRedactionConfig) -> Result<Self, KernelError> {
        let kinds = match config.patterns {
            None => CredentialKind::ALL.to_vec(),
            Some(names) if names.is_empty() => {
                return Err(config_error(&meta, "patterns is empty; omit it to redact every shape"))
            }
            Some(names) => names
                .iter()
                .map(|n| {
                    CredentialKind::parse(n).ok_or_else(|| {
                        config_error(&meta, format!("unknown pattern {n:?}; use pem-private-key, authorization-header, bearer-token, sk-key, aws-access-key, github-token or credential-assignment"))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        let (arguments, output) = match config.scan {
            None => (false, true),
            Some(places) if places.is_empty() => {
                return Err(config_error(
                    &meta,
                    "scan is empty; omit it to scan the output",
                ))
            }
            Some(places) => {
                let mut arguments = false;
                let mut output = false;
                for place in &places {
                    match place.as_str() {
                        "arguments" => arguments = true,
                        "output" => output = true,
                        other => {
                            return Err(config_error(
                                &meta,
                                format!("unknown scan place {other:?}; use arguments or output"),
                            ))
                        }
                    }
                }
                (arguments, output)
            }
        };
        Ok(SecretRedactionGuard {
            meta,
            kinds,
            arguments,
            output,
        })
    }
}

/// The first credential of `kinds` in `value` in document order (object
/// keys before their values), with the JSON pointer of the string.
fn first_in(value: &Value, kinds: &[CredentialKind], at: &str) -> Option<(CredentialKind, String)> {
    let found = |text: &str| {
        crate::credentials::find_credentials(text)
            .into_iter()
            .find(|span| kinds.contains(&span.kind))
            .map(|span| span.kind)
    };
    match value {
        Value::String(text) => found(text).map(|kind| (kind, at.to_string())),
        Value::Array(items)
            if !crate::planted::weakened_anywhere(crate::planted::Weakness::SecretArraysUnread) =>
        {
            items
                .iter()
                .enumerate()
                .find_map(|(i, item)| first_in(item, kinds, &format!("{at}/{i}")))
        }
        Value::Object(members) => members.iter().find_map(|(key, member)| {
            let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
            match found(key) {
                Some(kind) => Some((kind, here)),
                None => first_in(member, kinds, &here),
            }
        }),
        _ => None,
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
        self.output
    }
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        if !self.arguments {
            return Ok(GuardVerdict::Allow);
        }
        Ok(match first_in(ctx.arguments, &self.kinds, "") {
            Some((kind, pointer)) => GuardVerdict::Deny(DenyReason::CredentialInArguments {
                shape: kind.as_str(),
                pointer,
            }),
            None => GuardVerdict::Allow,
        })
    }
    fn check_output(
        &self,
        _ctx: &GuardContext<'_>,
        output: &Value,
    ) -> Result<OutputVerdict, GuardError> {
        let mut count = 0;
        let redacted = redact_value(output, &self.kinds, &mut count);
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
    use crate::guards::GuardMode;
    use serde_json::json;

    // Each credential shape is redacted and the surrounding text survives.
    #[test]
    fn redacts_each_shape() {
        let all = CredentialKind::ALL;
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

    // Bearer followed by a line break or other whitespace, and GitHub tokens, are redacted.
    #[test]
    fn redacts_what_the_old_patterns_missed() {
        let all = CredentialKind::ALL;
        for (text, want) in [
            (
                "curl -H 'Bearer\n  eyJhbGciOi.e30.c2ln'",
                "curl -H 'Bearer\n  [REDACTED]'",
            ),
            ("bearer\t\tabc.def-123456", "bearer\t\t[REDACTED]"),
            ("Bearer\u{00a0}abc.def-123456", "Bearer\u{00a0}[REDACTED]"),
            (
                "GH=ghp_16C7e42F292c6912E7710c838347Ae178B4a",
                "GH=[REDACTED]",
            ),
            (
                "pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz end",
                "pat [REDACTED] end",
            ),
            (
                "Authorization: Basic YWxpY2U6czNjcjN0",
                "Authorization: Basic [REDACTED]",
            ),
            (
                "DATABASE_PASSWORD=hunter2 next",
                "DATABASE_PASSWORD=[REDACTED] next",
            ),
        ] {
            assert_eq!(redact_text(text, &all).as_deref(), Some(want), "{text:?}");
        }
    }

    /// A context for a call with `arguments`.
    fn context(arguments: &Value) -> GuardContext<'_> {
        use std::collections::{BTreeMap, BTreeSet};
        static LABELS: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        static MONEY: BTreeMap<String, crate::guards::MoneyTotal> = BTreeMap::new();
        GuardContext {
            server: "http",
            tool: "post",
            arguments,
            agent_id: "a",
            session_id: "s",
            journal: &[],
            labels: &LABELS,
            money: &MONEY,
            session_filesystem_roots: None,
            provenance: &crate::provenance::NO_PROVENANCE,
            definition: None,
        }
    }

    fn guard_scanning(scan: &[&str]) -> SecretRedactionGuard {
        SecretRedactionGuard::new(
            GuardMeta {
                id: "redact".into(),
                mode: GuardMode::Enforce,
            },
            SecretRedactionConfig {
                patterns: None,
                scan: Some(scan.iter().map(|s| s.to_string()).collect()),
            },
        )
        .unwrap()
    }

    // An argument scan finds a credential inside an array, naming its pointer; an argument-only guard leaves outputs alone.
    #[test]
    fn arrays_are_scanned_and_each_scan_place_is_its_own() {
        let guard = guard_scanning(&["arguments"]);
        let arguments = json!({"headers": ["Accept: */*", "Authorization: Bearer abc.def-123456"]});
        let GuardVerdict::Deny(reason) = guard.check_request(&context(&arguments)).unwrap() else {
            panic!("a credential in an array passed");
        };
        assert!(reason.to_string().contains("/headers/1"), "{reason}");
        assert!(!guard.inspects_output());
        assert!(guard_scanning(&["output"]).inspects_output());
    }

    // Look-alikes that are not credentials are left alone.
    #[test]
    fn innocent_text_untouched() {
        let all = CredentialKind::ALL;
        for text in [
            "task-1.txt",
            "risk-assessment",
            "the bearer of news",
            "bearer\nof news",
            "-----BEGIN PUBLIC KEY-----",
            "AKIA",
            "ghp_short",
            "build 1841 passed in 42s",
        ] {
            assert_eq!(redact_text(text, &all), None, "{text}");
        }
    }

    // The guard counts the strings it changed, keeps keys, and honours a narrowed pattern list.
    #[test]
    fn guard_rewrites_output() {
        let meta = GuardMeta {
            id: "redact".into(),
            mode: GuardMode::Enforce,
        };
        let guard = SecretRedactionGuard::new(
            meta.clone(),
            SecretRedactionConfig {
                patterns: None,
                scan: None,
            },
        )
        .unwrap();
        let labels = Default::default();
        let arguments = json!({});
        let ctx = GuardContext {
            server: "ci-logs",
            tool: "read_file",
            arguments: &arguments,
            agent_id: "operator",
            session_id: "operator",
            journal: &[],
            labels: &labels,
            money: &Default::default(),
            session_filesystem_roots: None,
            provenance: &crate::provenance::NO_PROVENANCE,
            definition: None,
        };
        let output = json!({"log": ["Bearer\nabc.def-123456", "ok"], "ghp_x": "ghp_16C7e42F292c6912E7710c838347Ae178B4a"});
        let OutputVerdict::Rewrite(value, reason) = guard.check_output(&ctx, &output).unwrap()
        else {
            panic!("not rewritten");
        };
        assert_eq!(reason, "redacted credentials in 2 output strings");
        assert_eq!(
            value,
            json!({"log": ["Bearer\n[REDACTED]", "ok"], "ghp_x": "[REDACTED]"})
        );
        let narrow = SecretRedactionGuard::new(
            meta.clone(),
            SecretRedactionConfig {
                patterns: Some(vec!["github-token".into()]),
                scan: None,
            },
        )
        .unwrap();
        let only_bearer = json!({"log": "Bearer abc.def-123456"});
        assert_eq!(
            narrow.check_output(&ctx, &only_bearer).unwrap(),
            OutputVerdict::Pass
        );
        let err = SecretRedactionGuard::new(
            meta,
            SecretRedactionConfig {
                patterns: Some(vec!["gh-token".into()]),
                scan: None,
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("github-token"), "{err}");
    }
}
