//! `information-flow`: retained labels against destination clearances.
//!
//! Config: `{ "clearance": { "<server id>": "public" } }` with levels
//! `public < internal < confidential < restricted`. A call to a server that
//! has a clearance is refused when any label retained for the session or the
//! capability's lineage is above it. Labels are joined in by the kernel from
//! tool output before the output is released (see [`crate::label`]); an
//! unknown retained label denies rather than being guessed.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{
    config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardNeeds, GuardVerdict,
};
use crate::error::KernelError;
use crate::label::Label;

/// Configuration of `information-flow`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InformationFlowConfig {
    /// Highest label each destination server may receive.
    pub clearance: BTreeMap<String, String>,
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct InformationFlowGuard {
    meta: GuardMeta,
    clearance: BTreeMap<String, Label>,
}

impl InformationFlowGuard {
    /// Validates the configuration.
    pub fn new(meta: GuardMeta, config: InformationFlowConfig) -> Result<Self, KernelError> {
        if config.clearance.is_empty() {
            return Err(config_error(
                &meta,
                "clearance is empty; map at least one server to a level",
            ));
        }
        let mut clearance = BTreeMap::new();
        for (server, level) in config.clearance {
            let label = Label::parse(&level).ok_or_else(|| {
                config_error(
                    &meta,
                    format!("clearance.{server} is {level:?}; use public, internal, confidential or restricted"),
                )
            })?;
            clearance.insert(server, label);
        }
        Ok(InformationFlowGuard { meta, clearance })
    }
}

impl Guard for InformationFlowGuard {
    fn meta(&self) -> &GuardMeta {
        &self.meta
    }
    fn kind(&self) -> GuardKind {
        GuardKind::InformationFlow
    }
    fn needs(&self) -> GuardNeeds {
        GuardNeeds {
            journal: false,
            labels: true,
        }
    }
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        let Some(clearance) = self.clearance.get(ctx.server) else {
            return Ok(GuardVerdict::Allow);
        };
        // Name the narrowest scope of taint first: session, principal, lineage.
        let rank = |key: &str| {
            ["session/", "principal/", "lineage/"]
                .iter()
                .position(|p| key.starts_with(p))
                .unwrap_or(3)
        };
        let mut entries: Vec<_> = ctx.labels.iter().collect();
        entries.sort_by_key(|(key, _)| (rank(key), key.as_str()));
        for (key, labels) in entries {
            for name in labels {
                let label = Label::parse(name).ok_or_else(|| {
                    GuardError(format!(
                        "retained label {name:?} under {key} is not a known level"
                    ))
                })?;
                if label > *clearance {
                    return Ok(GuardVerdict::Deny(format!(
                        "information flow: retained label {label} ({key}) exceeds the clearance {clearance} of server {}",
                        ctx.server
                    )));
                }
            }
        }
        Ok(GuardVerdict::Allow)
    }
}
