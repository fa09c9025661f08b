//! The decision trace: what one kernel decision read and how each stage of
//! the pipeline answered.
//!
//! A verdict is evidence only if a reader can see what it rested on. The
//! kernel fills a [`DecisionTrace`] while it decides a call: the stages it
//! passed (capability, revocation, binding, scope, budgets, guards, shares,
//! output) with the one that decided, every label key it read and what each
//! held, every budget key it held, the session journal entries the guards
//! saw, each guard's answer, each share admission, and the output's label
//! with the keys it was joined into. Stages after the deciding one are
//! absent: they were not reached. Everything is built in pipeline order from
//! ordered maps, so the same inputs and state give the same trace bytes on
//! every topology; the run driver writes it into the bundle's step record
//! and `chio arena explain` prints it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::reason::ReasonCode;
use crate::stores::JournalEntry;

/// The pipeline stages in order, as a trace names them.
pub const STAGES: [&str; 9] = [
    "capability",
    "revocation",
    "binding",
    "scope",
    "budgets",
    "guards",
    "shares",
    "keep",
    "output",
];

/// Whether every decision records `stage` once it gets that far: all but
/// `keep`, which only a call whose server may keep what it is sent (a
/// recorded or live MCP server) records, when the call carries labels.
pub fn always_recorded(stage: &str) -> bool {
    stage != "keep"
}

/// What one decision read and how each stage answered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionTrace {
    /// The verified principal, once the proof was bound, so a reader sees
    /// whose labels and budgets were consulted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The presented chain's capability ids, root first, once it verified,
    /// so a reader sees which links were consulted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
    /// The stages reached, in pipeline order; the last one decided.
    pub stages: Vec<StageTrace>,
    /// The code of the decision's reason (see [`crate::reason`]), for
    /// every deny and pending approval; absent for an allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<ReasonCode>,
    /// Every label key read at admission and the labels it held (empty
    /// sets included, so a reader sees that a key was read and was clean).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub label_keys: BTreeMap<String, Vec<String>>,
    /// The labels of each argument built from an earlier value, by its
    /// JSON pointer (`public` left out), so a reader sees which argument
    /// carried what; absent for a call of literals only.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub argument_labels: BTreeMap<String, Vec<String>>,
    /// Every run-time allowlist record admission read for the call's
    /// protected arguments (`crate::allowlist`), with how many values it
    /// held (a record never written holds none); absent when no guard
    /// reads one for the tool.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allowlists_read: BTreeMap<String, u64>,
    /// Every budget key held at admission, in hold order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budget_keys: Vec<BudgetRead>,
    /// The session journal entries the guards saw, in journal order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal: Vec<JournalEntry>,
    /// Each guard's answer, request guards first, in pipeline order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<GuardAnswer>,
    /// Each sibling-share admission, root side first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shares: Vec<ShareRead>,
    /// The label of the released output, when the server classified it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_label: Option<String>,
    /// The integrity label of the released output, when the server marked
    /// it untrusted (absent otherwise, so untainted bundles are unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_integrity: Option<String>,
    /// What the called server kept from earlier calls, when the arena does
    /// not model its state (a recorded or live MCP server): the output
    /// carries it, whichever part a reader takes, and no field rule makes
    /// a part of it the server's record while it holds `integrity:untrusted`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_kept: Vec<String>,
    /// The keys the output's label was joined into.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub label_writes: Vec<String>,
    /// An allow whose server answered that it did not carry the call out
    /// (absent otherwise), so a value that step was to produce is known
    /// to be missing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub not_performed: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// How one stage answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageTrace {
    /// One of [`STAGES`].
    pub stage: String,
    /// `pass`, `deny`, `pending_approval` or `rewrite`.
    pub outcome: String,
    /// What the stage checked, or the reason it stopped the call.
    pub detail: String,
}

/// One budget hold at admission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetRead {
    /// The budget key, such as `invocations/<capability id>`.
    pub key: String,
    /// The amount asked for.
    pub amount: u64,
    /// The limit of the key.
    pub limit: u64,
    /// Units in use after the answer.
    pub used: u64,
    /// `held` or `refused`.
    pub outcome: String,
    /// What became of a hold: `committed` (the tool ran), `released` (the
    /// call was refused or its dispatch failed) or `commit-failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<String>,
}

/// One guard's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardAnswer {
    /// The guard id.
    pub guard: String,
    /// The guard kind.
    pub kind: String,
    /// `enforce` or `observe` (an observed answer never stops a call).
    pub mode: String,
    /// `request` (before dispatch) or `output` (after).
    pub phase: String,
    /// `allow`, `deny`, `pending_approval`, `error`, `pass` or `rewrite`.
    pub answer: String,
    /// Why, when the guard objected or rewrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The untrusted protected arguments a run-time allowlist let through,
    /// each `POINTER on RECORD` (`crate::allowlist`), so a reader sees
    /// which record admitted which value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admitted: Vec<String>,
}

impl std::fmt::Display for GuardAnswer {
    /// One line for people: `guard (kind, mode): answer`, then `: reason`
    /// when there is one and ` (allowlisted: POINTER on RECORD, ...)` when
    /// a run-time allowlist let an argument through; `chio arena explain` and the HTML report both
    /// write a guard's answer this way.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, {}): {}",
            self.guard, self.kind, self.mode, self.answer
        )?;
        if let Some(reason) = &self.reason {
            write!(f, ": {reason}")?;
        }
        if !self.admitted.is_empty() {
            write!(f, " (allowlisted: {})", self.admitted.join(", "))?;
        }
        Ok(())
    }
}

/// One sibling-share admission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareRead {
    /// The parent capability.
    pub parent: String,
    /// The child capability.
    pub child: String,
    /// The child's share in basis points.
    pub child_bps: u32,
    /// `admitted`, `oversubscribed`, `unknown-parent` or `error`.
    pub outcome: String,
}

impl DecisionTrace {
    /// Hides every sealed argument value in the trace's texts: each
    /// stage's detail and each guard's reason (`crate::seal`).
    pub fn scrub(&mut self, seal: &crate::seal::Seal) {
        for stage in &mut self.stages {
            seal.scrub_in(&mut stage.detail);
        }
        for guard in &mut self.guards {
            seal.scrub_opt(&mut guard.reason);
        }
    }

    /// Records that the next stage passed.
    pub fn pass(&mut self, detail: impl Into<String>) {
        self.push("pass", detail.into());
    }

    /// Records that the next stage stopped the call with `outcome`
    /// (`deny` or `pending_approval`) for `reason`.
    pub fn stop(&mut self, outcome: &str, reason: &str) {
        self.push(outcome, reason.to_string());
    }

    /// The stage that would be recorded next.
    pub fn next_stage(&self) -> &'static str {
        STAGES
            .get(self.stages.len())
            .copied()
            .unwrap_or(STAGES[STAGES.len() - 1])
    }

    /// Records or replaces the output stage (the last one).
    pub fn output(&mut self, outcome: &str, detail: String) {
        if self.stages.last().is_some_and(|s| s.stage == "output") {
            self.stages.pop();
        }
        let stage = StageTrace {
            stage: "output".to_string(),
            outcome: outcome.to_string(),
            detail,
        };
        self.stages.push(stage);
    }

    /// Records what became of every granted hold.
    pub fn settle_holds(&mut self, settled: &str) {
        self.settle_holds_by(|_| settled);
    }

    /// Records what became of every granted hold, by its budget key.
    pub fn settle_holds_by<'s>(&mut self, settled: impl Fn(&str) -> &'s str) {
        for budget in self.budget_keys.iter_mut().filter(|b| b.outcome == "held") {
            budget.settled = Some(settled(&budget.key).to_string());
        }
    }

    fn push(&mut self, outcome: &str, detail: String) {
        let stage = self.next_stage().to_string();
        self.stages.push(StageTrace {
            stage,
            outcome: outcome.to_string(),
            detail,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Stages are named in pipeline order as they are recorded, and the output stage is replaced, never doubled.
    #[test]
    fn stages_follow_the_pipeline() {
        let mut trace = DecisionTrace::default();
        trace.pass("verified");
        trace.pass("clear");
        trace.stop("deny", "proof of possession is missing");
        let names: Vec<&str> = trace.stages.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(names, ["capability", "revocation", "binding"]);
        let mut allowed = DecisionTrace::default();
        for _ in 0..7 {
            allowed.pass("ok");
        }
        allowed.output("pass", "released".into());
        allowed.output("deny", "receipt store unavailable".into());
        assert_eq!(allowed.stages.len(), 8);
        assert_eq!(allowed.stages[7].outcome, "deny");
        // A call that keeps labels with its server records that stage
        // before its output, which replaces only itself.
        let mut kept = DecisionTrace::default();
        for _ in 0..8 {
            kept.pass("ok");
        }
        kept.output("pass", "released".into());
        let names: Vec<&str> = kept.stages.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(names[6..], ["shares", "keep", "output"]);
    }
}
