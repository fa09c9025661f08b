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
//! What is read ([`crate::credentials::forms`]): each string in every
//! form a receiver recovers a credential from: as written; its normal form
//! (percent-decoded, JSON escapes such as `\u005f` decoded, zero-width and
//! other invisible characters and no-break spaces removed, NFKC, so a
//! fullwidth `ｇhp_` reads `ghp_`); and its base64 (standard or URL-safe)
//! and hex runs decoded. Then the string values of the call's arguments,
//! or of the output, read together in canonical document order and in
//! reverse, joined by a space and by nothing, so a token split as
//! `{"a": "ghp_", "b": "<rest>"}` or across an array's strings reads whole.
//! A digest, a UUID or the base64 of ordinary text is no credential: only
//! decoded text with a credential shape counts.
//!
//! Output: each credential span in a string read as written becomes
//! `[REDACTED]` where it sits; what identifies it (a header's scheme word,
//! `password=`) stays. A string that carries one only in another form is
//! redacted whole. A credential split across strings is redacted in each
//! of them: where its pieces sit when read as written, the whole string
//! otherwise. Object keys are left as they are. An output the guard changed
//! is released as a sanitized allow (projected `rewrite`) whose reason
//! counts the strings changed.
//!
//! `scan` (default `["output"]`) may add `"arguments"`: a call whose
//! arguments carry a credential in any string (object keys included), in
//! any of those forms, is then denied before it runs, naming the shape and
//! the JSON pointer of the string, never the credential
//! (`credential-in-arguments`); one split across string values names the
//! pointer of each part (`credential-in-arguments-split`). A credential is
//! not rewritten on its way out, because a call sent with `[REDACTED]` is
//! not the call the agent made.
//!
//! Limit: each call and each output is read on its own, so a credential
//! sent half in one call and half in the next is not joined.

use serde::Deserialize;
use serde_json::Value;

use super::{
    config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardVerdict,
    OutputVerdict,
};
use crate::credentials::CredentialKind;
use crate::error::KernelError;

mod read;

pub use crate::credentials::REDACTED;

/// Redacts every credential of `kinds` in `text` as the guard redacts one
/// output string: where it sits when read as written, the whole text when
/// it is read in another form; `None` when nothing matched.
pub fn redact_text(text: &str, kinds: &[CredentialKind]) -> Option<String> {
    let redacted = read::redact_one(text, kinds);
    (redacted != text).then_some(redacted)
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
        Ok(match read::refuse_arguments(ctx.arguments, &self.kinds) {
            Some(reason) => GuardVerdict::Deny(reason),
            None => GuardVerdict::Allow,
        })
    }
    fn check_output(
        &self,
        _ctx: &GuardContext<'_>,
        output: &Value,
    ) -> Result<OutputVerdict, GuardError> {
        let (redacted, count) = read::redact_output(output, &self.kinds);
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
mod tests;
