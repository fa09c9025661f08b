//! `integrity`: consequential tools refused to a low-integrity context.
//!
//! Config: `{ "consequential": { "<server id>": ["<tool>", ...] },
//! "on_untrusted": "deny" }`, `on_untrusted` being `deny` or `approval`.
//! A call to a listed tool is judged by every label key the kernel read for
//! it (session, principal, lineage, and the delegation record of every link
//! of the presented chain, exactly as `information-flow` reads them): when
//! any holds `integrity:untrusted`, the context that chose this call has
//! seen content from an untrusted source, so the call is refused
//! (`deny`) or held for a human (`approval`, PendingApproval), whatever the
//! content said. The guard never looks at content: an injection the
//! detector misses is stopped by where it came from, not by what it says.
//! `"*"` in a server's list makes every tool of that server consequential.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::{
    config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardNeeds, GuardVerdict,
};
use crate::error::KernelError;
use crate::label::{is_integrity_label, Integrity};
use crate::reason::DenyReason;

/// Configuration of `integrity`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntegrityConfig {
    /// Tools whose effects matter, by server: a call to one of them from a
    /// low-integrity context is refused or held.
    pub consequential: BTreeMap<String, Vec<String>>,
    /// What a low-integrity context gets at a consequential tool: `deny`
    /// (the default) or `approval`.
    #[serde(default = "deny_by_default")]
    pub on_untrusted: String,
}

fn deny_by_default() -> String {
    "deny".to_string()
}

/// What a low-integrity context gets at a consequential tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnUntrusted {
    /// The call is refused.
    Deny,
    /// The call waits for a human (PendingApproval).
    Approval,
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct IntegrityGuard {
    meta: GuardMeta,
    consequential: BTreeMap<String, BTreeSet<String>>,
    on_untrusted: OnUntrusted,
}

impl IntegrityGuard {
    /// Validates the configuration.
    pub fn new(meta: GuardMeta, config: IntegrityConfig) -> Result<Self, KernelError> {
        if config.consequential.is_empty() {
            return Err(config_error(
                &meta,
                "consequential is empty; list at least one server's tools",
            ));
        }
        let mut consequential = BTreeMap::new();
        for (server, tools) in config.consequential {
            if tools.is_empty() || tools.iter().any(String::is_empty) {
                return Err(config_error(
                    &meta,
                    format!("consequential.{server} must list tool names (or \"*\")"),
                ));
            }
            consequential.insert(server, tools.into_iter().collect());
        }
        let on_untrusted = match config.on_untrusted.as_str() {
            "deny" => OnUntrusted::Deny,
            "approval" => OnUntrusted::Approval,
            other => {
                return Err(config_error(
                    &meta,
                    format!("on_untrusted is {other:?}; use deny or approval"),
                ))
            }
        };
        Ok(IntegrityGuard {
            meta,
            consequential,
            on_untrusted,
        })
    }
}

impl Guard for IntegrityGuard {
    fn meta(&self) -> &GuardMeta {
        &self.meta
    }
    fn kind(&self) -> GuardKind {
        GuardKind::Integrity
    }
    fn needs(&self) -> GuardNeeds {
        GuardNeeds {
            journal: false,
            labels: true,
            ..GuardNeeds::default()
        }
    }
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        let Some(tools) = self.consequential.get(ctx.server) else {
            return Ok(GuardVerdict::Allow);
        };
        if !tools.contains(ctx.tool) && !tools.contains("*") {
            return Ok(GuardVerdict::Allow);
        }
        // Name the narrowest scope of taint first, as information-flow does.
        let rank = |key: &str| {
            ["session/", "principal/", "lineage/", "delegation/"]
                .iter()
                .position(|p| key.starts_with(p))
                .unwrap_or(4)
        };
        let mut entries: Vec<_> = ctx.labels.iter().collect();
        entries.sort_by_key(|(key, _)| (rank(key), key.as_str()));
        for (key, labels) in entries {
            for name in labels.iter().filter(|n| is_integrity_label(n)) {
                let level = Integrity::from_label(name).ok_or_else(|| {
                    GuardError(format!(
                        "retained label {name:?} under {key} is not a known integrity level"
                    ))
                })?;
                if level > Integrity::Trusted {
                    let reason = DenyReason::UntrustedContext {
                        key: key.clone(),
                        level: level.to_string(),
                        tool: ctx.tool.to_string(),
                        server: ctx.server.to_string(),
                    };
                    return Ok(match self.on_untrusted {
                        OnUntrusted::Deny => GuardVerdict::Deny(reason),
                        OnUntrusted::Approval => GuardVerdict::PendingApproval(reason),
                    });
                }
            }
        }
        Ok(GuardVerdict::Allow)
    }
}
