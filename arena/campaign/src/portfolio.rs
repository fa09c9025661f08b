//! The portfolio report over a checked ledger.
//!
//! Every attempt lands in exactly one portfolio outcome, derived from its
//! row (native outcome, oracle checks, evidence, limits, interventions) and
//! what the evidence the row names says of it ([`super::evidence`]), and
//! never rescored; [`outcome_of`] is the one place that decides, in this
//! order:
//!
//! 1. `DEFERRED` is **not attempted**; `SKIPPED` is **skipped**;
//! 2. an attempt whose evidence contradicts its row (or whose claimed source
//!    revision cannot be checked) is **contradicted by its evidence**,
//!    whatever the row claims;
//! 3. `infrastructure-failure` is an **error**;
//! 4. an attempt whose row holds no oracle check is **ungraded**;
//! 5. a pass (`passed`, `identical`, `complete`, `generations`) with a
//!    failed oracle check is a **false completion**; with incomplete
//!    evidence (no evidence reference with a Merkle root, an unknown source
//!    revision or runtime, a limit over or unknown, a bundle that cannot be
//!    re-decided here) a **pass without complete evidence**; with a `repair` intervention **verified after a human
//!    repair**; otherwise a **verified delivery**;
//! 6. a stop (`stopped`, `wall-budget`) with a `decision` intervention is an
//!    **appropriate stop**, without one **stopped with appropriateness not
//!    established**;
//! 7. `failed` and `drifted` **ended without completing**.
//!
//! Live attempts and fixture replays are reported in separate sections and
//! never pooled. Each section gives its outcome counts, the decisions and
//! repairs it received, its cost in kernel evaluations, wall time and
//! estimated cost as a known subtotal beside the number of attempts whose
//! amount is unknown, with the total left unknown while any attempted row
//! is unknown (an unknown amount is never counted as zero), and the cost per
//! verified delivery. Every attempt is marked within, over or unknown for
//! each declared limit. A section's comparison is blocked while any of its
//! attempts is unjudged (not attempted, ungraded, or a stop whose
//! appropriateness is not established), contradicted by its evidence, off
//! the declared revision or runtime, or over a limit; the report lists every
//! reason, and each contradicted attempt names the fields its evidence
//! does not bear out.

use super::evidence::{check_row_evidence, Redecide, RowFindings};
use super::ledger::{limit_statuses, InterventionKind, LedgerRow, LimitStatus, DEFERRED, SKIPPED};
use super::Campaign;

mod report;
pub(crate) mod text;

pub use report::{report, Amount, AttemptLine, LimitLine, OutcomeCount, Report, Section};
pub use text::render_text;

/// Schema id of `chio campaign report --json`.
pub const REPORT_SCHEMA_VERSION: &str = "chio.arena.campaign-report/v3";

/// A verified delivery.
pub const VERIFIED: &str = "verified delivery";
/// A verified delivery after a human repair.
pub const VERIFIED_AFTER_REPAIR: &str = "verified after a human repair";
/// An appropriate stop.
pub const APPROPRIATE_STOP: &str = "appropriate stop";
/// A pass whose evidence is incomplete.
pub const PASS_INCOMPLETE: &str = "pass without complete evidence";
/// A pass its own checks deny.
pub const FALSE_COMPLETION: &str = "false completion";
/// An attempt whose row the evidence it names does not bear out.
pub const CONTRADICTED: &str = "contradicted by its evidence";
/// A stop nobody judged.
pub const STOP_UNJUDGED: &str = "stopped with appropriateness not established";
/// An attempt that ended without completing.
pub const ENDED: &str = "ended without completing";
/// An infrastructure failure.
pub const ERROR: &str = "error";
/// A deliberately skipped attempt.
pub const SKIPPED_OUTCOME: &str = "skipped";
/// An attempt with nothing to grade it by.
pub const UNGRADED: &str = "ungraded";
/// An attempt never made.
pub const NOT_ATTEMPTED: &str = "not attempted";

/// The portfolio outcomes, in report order.
pub const PORTFOLIO_OUTCOMES: &[&str] = &[
    VERIFIED,
    VERIFIED_AFTER_REPAIR,
    APPROPRIATE_STOP,
    PASS_INCOMPLETE,
    FALSE_COMPLETION,
    CONTRADICTED,
    STOP_UNJUDGED,
    ENDED,
    ERROR,
    SKIPPED_OUTCOME,
    UNGRADED,
    NOT_ATTEMPTED,
];

/// Why a row's evidence is incomplete, if it is; empty when complete.
pub fn evidence_gaps(campaign: &Campaign, row: &LedgerRow) -> Vec<String> {
    let mut gaps = Vec::new();
    if !row.evidence_refs.iter().any(|r| r.merkle_root.is_some()) {
        gaps.push("no evidence reference with a Merkle root".to_string());
    }
    if row.source_revision.is_none() {
        gaps.push("source revision unknown".to_string());
    }
    if row.runtime_identity.is_none() {
        gaps.push("runtime unknown".to_string());
    }
    if let Some(attempt) = campaign.attempt(&row.schedule_id) {
        for (limit, status) in limit_statuses(&campaign.tasks[attempt.task], row) {
            match status {
                LimitStatus::Over => gaps.push(format!("over its {limit} limit")),
                LimitStatus::Unknown => gaps.push(format!("{limit} spend unknown")),
                LimitStatus::Within => {}
            }
        }
    }
    gaps
}

fn has(row: &LedgerRow, kind: InterventionKind) -> bool {
    row.interventions.iter().any(|i| i.kind == kind)
}

/// The portfolio outcome of a checked row, opening the evidence it names
/// and re-deciding its bundle with `redecide` (see the module doc). This
/// sees the row alone: the report also contradicts rows that name one
/// folder as their evidence
/// ([`check_ledger_evidence`](super::evidence::check_ledger_evidence)).
pub fn portfolio_outcome(
    campaign: &Campaign,
    row: &LedgerRow,
    redecide: &dyn Redecide,
) -> &'static str {
    outcome_of(campaign, row, &check_row_evidence(campaign, row, redecide))
}

/// The portfolio outcome of a checked row whose evidence was opened and
/// `found` what it says of the row (see the module doc).
pub fn outcome_of(campaign: &Campaign, row: &LedgerRow, found: &RowFindings) -> &'static str {
    match row.native_outcome.as_str() {
        DEFERRED => return NOT_ATTEMPTED,
        SKIPPED => return SKIPPED_OUTCOME,
        _ if !found.contradictions.is_empty() => return CONTRADICTED,
        "infrastructure-failure" => return ERROR,
        _ => {}
    }
    if row.oracle_checks.is_empty() {
        return UNGRADED;
    }
    match row.native_outcome.as_str() {
        "passed" | "identical" | "complete" | "generations" => {
            if row.oracle_checks.iter().any(|c| !c.ok) {
                FALSE_COMPLETION
            } else if !found.unverified.is_empty() || !evidence_gaps(campaign, row).is_empty() {
                PASS_INCOMPLETE
            } else if has(row, InterventionKind::Repair) {
                VERIFIED_AFTER_REPAIR
            } else {
                VERIFIED
            }
        }
        "stopped" | "wall-budget" => {
            if has(row, InterventionKind::Decision) {
                APPROPRIATE_STOP
            } else {
                STOP_UNJUDGED
            }
        }
        _ => ENDED,
    }
}
