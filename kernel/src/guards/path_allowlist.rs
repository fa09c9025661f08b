//! `path-allowlist`: read and write path globs.
//!
//! Config: `{ "read": [globs], "write": [globs], "read_tools": [...],
//! "write_tools": [...] }`. Read tools default to `read_file` and `list_dir`,
//! write tools to `write_file` and `delete_file`. For a read (write) tool,
//! every path-like argument, normalised, must match a read (write) glob,
//! case-sensitively; a read or write tool with no path argument is denied,
//! since there is nothing to check. When the caller supplies session
//! filesystem roots, each path must also lie under one of them. Other tools
//! are not this guard's business.

use serde::Deserialize;

use super::{config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardVerdict};
use crate::error::KernelError;
use crate::glob::Glob;
use crate::path::{is_under, normalize_path, path_arguments};
use crate::planted::{inverted, Weakness};
use crate::reason::DenyReason;

/// Configuration of `path-allowlist`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathAllowlistConfig {
    /// Globs read tools may touch.
    #[serde(default)]
    pub read: Vec<String>,
    /// Globs write tools may touch.
    #[serde(default)]
    pub write: Vec<String>,
    /// Tools that read (default `read_file`, `list_dir`).
    #[serde(default)]
    pub read_tools: Option<Vec<String>>,
    /// Tools that write (default `write_file`, `delete_file`).
    #[serde(default)]
    pub write_tools: Option<Vec<String>>,
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct PathAllowlistGuard {
    meta: GuardMeta,
    read: Vec<Glob>,
    write: Vec<Glob>,
    read_tools: Vec<String>,
    write_tools: Vec<String>,
}

impl PathAllowlistGuard {
    /// Validates the configuration.
    pub fn new(meta: GuardMeta, config: PathAllowlistConfig) -> Result<Self, KernelError> {
        if config.read.is_empty() && config.write.is_empty() {
            return Err(config_error(
                &meta,
                "read and write are both empty; list the globs agents may touch",
            ));
        }
        let read_tools = config
            .read_tools
            .unwrap_or_else(|| vec!["read_file".into(), "list_dir".into()]);
        let write_tools = config
            .write_tools
            .unwrap_or_else(|| vec!["write_file".into(), "delete_file".into()]);
        if let Some(both) = read_tools.iter().find(|t| write_tools.contains(t)) {
            return Err(config_error(
                &meta,
                format!("tool {both} is both a read and a write tool; list it once"),
            ));
        }
        Ok(PathAllowlistGuard {
            read: config.read.iter().map(|g| Glob::new(g)).collect(),
            write: config.write.iter().map(|g| Glob::new(g)).collect(),
            read_tools,
            write_tools,
            meta,
        })
    }
}

impl Guard for PathAllowlistGuard {
    fn meta(&self) -> &GuardMeta {
        &self.meta
    }
    fn kind(&self) -> GuardKind {
        GuardKind::PathAllowlist
    }
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        let (globs, access) = if self
            .read_tools
            .iter()
            .any(|t| inverted(Weakness::WritesMeetReadGlobs, t == ctx.tool))
        {
            (&self.read, "read")
        } else if self.write_tools.iter().any(|t| t == ctx.tool) {
            (&self.write, "write")
        } else {
            return Ok(GuardVerdict::Allow);
        };
        let args = path_arguments(ctx.arguments);
        if args.is_empty() {
            return Ok(GuardVerdict::Deny(DenyReason::AllowlistPathMissing {
                tool: ctx.tool.to_string(),
                access,
            }));
        }
        for arg in args {
            let normal = match normalize_path(&arg.raw) {
                Ok(p) => p,
                Err(problem) => return Ok(GuardVerdict::Deny(problem.reason(&arg.raw))),
            };
            if let Some(roots) = ctx.session_filesystem_roots {
                let outside = !roots.iter().any(|r| is_under(&normal, r));
                if inverted(Weakness::SessionRootsInverted, outside) {
                    return Ok(GuardVerdict::Deny(DenyReason::OutsideSessionRoots {
                        path: arg.raw,
                    }));
                }
            }
            let unlisted = !globs.iter().any(|g| g.is_match(&normal));
            if inverted(Weakness::AllowlistInverted, unlisted) {
                return Ok(GuardVerdict::Deny(DenyReason::NotAllowlisted {
                    path: arg.raw,
                    access,
                }));
            }
        }
        Ok(GuardVerdict::Allow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guards::GuardMode;
    use crate::provenance::NO_PROVENANCE;
    use serde_json::json;
    use std::collections::BTreeMap;

    /// Reads anywhere under /workspace/, writes only under /workspace/out/.
    fn guard() -> PathAllowlistGuard {
        let meta = GuardMeta {
            id: "paths".into(),
            mode: GuardMode::Enforce,
        };
        let config = PathAllowlistConfig {
            read: vec!["/workspace/**".into()],
            write: vec!["/workspace/out/**".into()],
            read_tools: None,
            write_tools: None,
        };
        PathAllowlistGuard::new(meta, config).unwrap()
    }

    fn check(tool: &str, path: Option<&str>, roots: Option<&[String]>) -> GuardVerdict {
        let arguments = path.map_or_else(|| json!({}), |p| json!({ "path": p }));
        let labels = BTreeMap::new();
        let ctx = GuardContext {
            server: "files",
            tool,
            arguments: &arguments,
            agent_id: "alice",
            session_id: "alice",
            journal: &[],
            labels: &labels,
            money: &Default::default(),
            session_filesystem_roots: roots,
            provenance: &NO_PROVENANCE,
            definition: None,
        };
        guard().check_request(&ctx).unwrap()
    }

    fn denied(verdict: GuardVerdict) -> String {
        match verdict {
            GuardVerdict::Deny(reason) => reason.to_string(),
            other => panic!("expected a deny, got {other:?}"),
        }
    }

    // Proves a read tool is held to the read globs and a write tool to the narrower write globs, each naming its access.
    #[test]
    fn each_access_meets_its_own_globs() {
        assert_eq!(
            check("read_file", Some("/workspace/notes.txt"), None),
            GuardVerdict::Allow
        );
        assert_eq!(
            check("write_file", Some("/workspace/out/a.txt"), None),
            GuardVerdict::Allow
        );
        assert_eq!(
            denied(check("write_file", Some("/workspace/notes.txt"), None)),
            "path /workspace/notes.txt is not in the write allowlist"
        );
        assert_eq!(
            denied(check("delete_file", Some("/workspace/notes.txt"), None)),
            "path /workspace/notes.txt is not in the write allowlist"
        );
        assert_eq!(
            denied(check("read_file", Some("/etc/passwd"), None)),
            "path /etc/passwd is not in the read allowlist"
        );
    }

    // Proves a tool that neither reads nor writes is not this guard's business, with or without a path.
    #[test]
    fn other_tools_pass() {
        assert_eq!(check("send_email", None, None), GuardVerdict::Allow);
        assert_eq!(
            check("send_email", Some("/etc/passwd"), None),
            GuardVerdict::Allow
        );
    }

    // Proves the session's filesystem roots bound every path on top of the globs.
    #[test]
    fn session_roots_bound_the_globs() {
        let roots = ["/workspace/team/".to_string()];
        assert_eq!(
            check("read_file", Some("/workspace/team/plan.md"), Some(&roots)),
            GuardVerdict::Allow
        );
        assert_eq!(
            denied(check(
                "read_file",
                Some("/workspace/notes.txt"),
                Some(&roots)
            )),
            "path /workspace/notes.txt is outside the session filesystem roots"
        );
    }
}
