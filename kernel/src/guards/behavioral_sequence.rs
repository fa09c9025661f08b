//! `behavioral-sequence`: session rules over the journal.
//!
//! Config: `{ "rules": [ { "tool": "publish", "requires": "run_tests" } ] }`.
//! A name is a tool on any server, or `server/tool` for that server's tool
//! alone; a scenario whose bare name two servers serve is refused at load,
//! so a look-alike `run_tests` on another server never satisfies a rule.
//! A call to `tool` is refused unless the session journal holds an earlier
//! *allowed* (plain or sanitized) call to `requires` that the server
//! *performed*; a denied attempt does not count, and neither does an
//! allowed call the server could not carry out (a tool it does not have,
//! a file it does not hold): that call happened in name only.

use serde::Deserialize;

use super::{
    config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardNeeds, GuardVerdict,
};
use crate::error::KernelError;
use crate::reason::DenyReason;

/// One session rule.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceRule {
    /// The gated tool.
    pub tool: String,
    /// The tool that must have been allowed earlier in the session.
    pub requires: String,
}

/// Configuration of `behavioral-sequence`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BehavioralSequenceConfig {
    /// The rules, all of which apply.
    pub rules: Vec<SequenceRule>,
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct BehavioralSequenceGuard {
    meta: GuardMeta,
    rules: Vec<SequenceRule>,
}

impl BehavioralSequenceGuard {
    /// Validates the configuration.
    pub fn new(meta: GuardMeta, config: BehavioralSequenceConfig) -> Result<Self, KernelError> {
        if config.rules.is_empty() {
            return Err(config_error(&meta, "rules is empty; add at least one rule"));
        }
        if let Some(i) = config.rules.iter().position(|r| r.tool == r.requires) {
            return Err(config_error(
                &meta,
                format!("rules[{i}] makes a tool require itself; name another tool in requires"),
            ));
        }
        Ok(BehavioralSequenceGuard {
            meta,
            rules: config.rules,
        })
    }
}

/// Whether a rule's name picks the call of `tool` on `server`: a
/// `server/tool` name that server's tool only, a bare name that tool on
/// any server (the loader refuses a bare name two servers serve).
fn names(name: &str, server: &str, tool: &str) -> bool {
    match name.split_once('/') {
        Some((s, t)) => s == server && t == tool,
        None => name == tool,
    }
}

impl Guard for BehavioralSequenceGuard {
    fn meta(&self) -> &GuardMeta {
        &self.meta
    }
    fn kind(&self) -> GuardKind {
        GuardKind::BehavioralSequence
    }
    fn needs(&self) -> GuardNeeds {
        GuardNeeds {
            journal: true,
            labels: false,
            ..GuardNeeds::default()
        }
    }
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        for rule in self
            .rules
            .iter()
            .filter(|r| names(&r.tool, ctx.server, ctx.tool))
        {
            let satisfied = ctx
                .journal
                .iter()
                .any(|e| names(&rule.requires, &e.server, &e.tool) && e.satisfies_predecessor());
            if !satisfied {
                return Ok(GuardVerdict::Deny(DenyReason::SequenceRequired {
                    tool: rule.tool.clone(),
                    requires: rule.requires.clone(),
                    session: ctx.session_id.to_string(),
                }));
            }
        }
        Ok(GuardVerdict::Allow)
    }
}
