//! `information-flow`: retained labels against destination clearances.
//!
//! Config: `{ "clearance": { "<server id>": "public" },
//! "carry_delegator_labels": true }` with levels
//! `public < internal < confidential < restricted`. A call to a server that
//! has a clearance is refused when any label the kernel read for the call is
//! above it: the session's, the principal's, the lineage's, and the
//! delegation record of every link of the presented chain (what each
//! delegator held when it delegated). Labels are joined in by the kernel
//! from tool output before the output is released, and carried by messages
//! and delegations (see [`crate::label`]); an unknown retained label denies
//! rather than being guessed.
//!
//! `carry_delegator_labels` (default `true`) is the explicit relaxation:
//! `false` ignores the delegation records, so a delegatee is judged only by
//! its own session, principal and the lineage. A policy that sets it says in
//! writing that it trusts delegatees not to leak what their delegators held.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::{
    config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardNeeds, GuardVerdict,
};
use crate::error::KernelError;
use crate::label::{is_integrity_label, Label};
use crate::reason::DenyReason;

/// Configuration of `information-flow`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InformationFlowConfig {
    /// Highest label each destination server may receive.
    pub clearance: BTreeMap<String, String>,
    /// Whether what a delegator held when it delegated counts against the
    /// delegatee's calls through the delegation (default `true`); `false`
    /// is the explicit relaxation.
    #[serde(default = "carry_by_default")]
    pub carry_delegator_labels: bool,
}

fn carry_by_default() -> bool {
    true
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct InformationFlowGuard {
    meta: GuardMeta,
    clearance: BTreeMap<String, Label>,
    carry_delegator_labels: bool,
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
        Ok(InformationFlowGuard {
            meta,
            clearance,
            carry_delegator_labels: config.carry_delegator_labels,
        })
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
            ..GuardNeeds::default()
        }
    }
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        let Some(clearance) = self.clearance.get(ctx.server) else {
            return Ok(GuardVerdict::Allow);
        };
        // Name the narrowest scope of taint first: session, principal,
        // lineage, then the delegation records of the chain.
        let rank = |key: &str| {
            ["session/", "principal/", "lineage/", "delegation/"]
                .iter()
                .position(|p| key.starts_with(p))
                .unwrap_or(4)
        };
        let carry = self.carry_delegator_labels
            && !crate::planted::weakened_anywhere(crate::planted::Weakness::DelegatorLabelsDropped);
        let mut entries: Vec<(String, &BTreeSet<String>)> = ctx
            .labels
            .iter()
            .filter(|(key, _)| carry || !key.starts_with("delegation/"))
            .map(|(key, labels)| (key.clone(), labels))
            .collect();
        entries.sort_by_key(|(key, _)| (rank(key), key.clone()));
        // A value keeps its labels wherever it travels: an argument built
        // from a read or a hand-over carries them even to a caller that
        // never held them (a planner given a reader's value).
        entries.extend(
            ctx.provenance
                .arguments
                .iter()
                .map(|(pointer, labels)| (format!("argument {pointer}"), labels)),
        );
        for (key, labels) in entries {
            // Integrity labels share the sets; the integrity guard judges them.
            for name in labels.iter().filter(|n| !is_integrity_label(n)) {
                let label = Label::parse(name).ok_or_else(|| {
                    GuardError(format!(
                        "retained label {name:?} under {key} is not a known level"
                    ))
                })?;
                if label > *clearance {
                    return Ok(GuardVerdict::Deny(DenyReason::InformationFlow {
                        label: label.to_string(),
                        key,
                        clearance: clearance.to_string(),
                        server: ctx.server.to_string(),
                    }));
                }
            }
        }
        Ok(GuardVerdict::Allow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A configuration that does not name carry_delegator_labels carries them: the relaxation must be written out.
    #[test]
    fn delegator_labels_are_carried_unless_relaxed() {
        let read = |text: &str| -> InformationFlowConfig {
            serde_json::from_str(text).expect("configuration")
        };
        assert!(read(r#"{"clearance": {"publish": "public"}}"#).carry_delegator_labels);
        assert!(
            !read(r#"{"clearance": {"publish": "public"}, "carry_delegator_labels": false}"#)
                .carry_delegator_labels
        );
    }
}
