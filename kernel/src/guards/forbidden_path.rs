//! `forbidden-path`: a deny-list of path globs.
//!
//! Config: `{ "globs": ["**/.ssh/**", "**/.env"] }` (at least one glob).
//! Every path-like argument (see [`crate::path`]) is normalised lexically and
//! matched case-insensitively, so `/w/./.SSH/../.ssh/id_rsa` is caught by
//! `**/.ssh/**`. A path that escapes the root is denied as such.

use serde::Deserialize;

use super::{config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardVerdict};
use crate::error::KernelError;
use crate::glob::Glob;
use crate::path::{normalize_path, path_arguments, percent_decode, PathProblem};
use crate::planted::{weakened, GuardScope, Weakness};
use crate::reason::DenyReason;

/// The guard's normalisation with one step left out, when a path weakness
/// is planted (`planted-weakness` builds only); `None` otherwise.
fn planted_normal(raw: &str) -> Option<Result<String, PathProblem>> {
    if weakened(Weakness::NoDotSegmentCollapse) {
        // Decoded and separators unified, but every `.` and `..` segment kept.
        return Some(Ok(percent_decode(raw).replace('\\', "/")));
    }
    if weakened(Weakness::NoPercentDecoding) {
        // Escape every `%` so the shared normaliser decodes nothing.
        return Some(normalize_path(&raw.replace('%', "%25")));
    }
    if weakened(Weakness::NoBackslashSeparator) {
        // Park backslashes on a private character the normaliser leaves alone.
        return Some(
            normalize_path(&raw.replace('\\', "\u{f8ff}")).map(|p| p.replace('\u{f8ff}', "\\")),
        );
    }
    None
}

/// Configuration of `forbidden-path`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForbiddenPathConfig {
    /// Globs no path argument may match.
    pub globs: Vec<String>,
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct ForbiddenPathGuard {
    meta: GuardMeta,
    globs: Vec<Glob>,
}

impl ForbiddenPathGuard {
    /// Validates the configuration.
    pub fn new(meta: GuardMeta, config: ForbiddenPathConfig) -> Result<Self, KernelError> {
        if config.globs.is_empty() {
            return Err(config_error(
                &meta,
                "globs is empty; list at least one glob",
            ));
        }
        if let Some(empty) = config.globs.iter().position(|g| g.is_empty()) {
            return Err(config_error(
                &meta,
                format!("globs[{empty}] is empty; write a glob such as **/.env"),
            ));
        }
        Ok(ForbiddenPathGuard {
            globs: config
                .globs
                .iter()
                .map(|g| Glob::case_insensitive(g))
                .collect(),
            meta,
        })
    }
}

impl Guard for ForbiddenPathGuard {
    fn meta(&self) -> &GuardMeta {
        &self.meta
    }
    fn kind(&self) -> GuardKind {
        GuardKind::ForbiddenPath
    }
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        let _scope = GuardScope::enter();
        for arg in path_arguments(ctx.arguments) {
            let normal = match planted_normal(&arg.raw).unwrap_or_else(|| normalize_path(&arg.raw))
            {
                Ok(p) => p,
                Err(problem) => return Ok(GuardVerdict::Deny(problem.reason(&arg.raw))),
            };
            let case_sensitive = weakened(Weakness::CaseSensitiveGlobs);
            if let Some(glob) = self.globs.iter().find(|g| {
                if case_sensitive {
                    Glob::new(g.as_str()).is_match(&normal)
                } else {
                    g.is_match(&normal)
                }
            }) {
                return Ok(GuardVerdict::Deny(DenyReason::ForbiddenPath {
                    path: arg.raw,
                    glob: glob.as_str().to_string(),
                }));
            }
        }
        Ok(GuardVerdict::Allow)
    }
}
