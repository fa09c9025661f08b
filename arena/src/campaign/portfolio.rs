//! The portfolio report over a checked ledger.
//!
//! Every attempt lands in exactly one portfolio outcome, derived from its
//! native outcome alone (never rescored). Fresh runs and replays of recorded
//! bundles are reported in separate sections and never pooled. Each section
//! gives its outcome counts, its cost in kernel evaluations and its wall
//! time as a known subtotal beside the number of attempts whose amount is
//! unknown, with the total left unknown while any attempted row is unknown;
//! an unknown amount is never counted as zero. Attempts never made (DEFERRED)
//! spent nothing and enter no cost. A section's comparison is blocked while
//! any of its attempts has not been made.

use serde::Serialize;

use super::ledger::{Ledger, DEFERRED};
use super::{Campaign, Evidence};

/// Schema id of `chio campaign report --json`.
pub const REPORT_SCHEMA_VERSION: &str = "chio.arena.campaign-report/v1";

/// The portfolio outcomes, in report order.
pub const PORTFOLIO_OUTCOMES: &[&str] = &[
    "passed",
    "expectation failed",
    "stopped at an unexpected verdict",
    "infrastructure failure",
    "replay identical",
    "replay drifted",
    "evolution complete",
    "evolution stopped by its wall budget",
    "matrix complete",
    "not attempted",
];

/// The portfolio outcome of a native outcome (one checked by the ledger).
pub fn portfolio_outcome(native: &str) -> &'static str {
    match native {
        "passed" => "passed",
        "failed" => "expectation failed",
        "stopped" => "stopped at an unexpected verdict",
        "infrastructure-failure" => "infrastructure failure",
        "identical" => "replay identical",
        "drifted" => "replay drifted",
        "generations" => "evolution complete",
        "wall-budget" => "evolution stopped by its wall budget",
        "complete" => "matrix complete",
        _ => {
            debug_assert_eq!(native, DEFERRED, "check_ledger admits no other outcome");
            "not attempted"
        }
    }
}

/// How many attempts ended in one outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutcomeCount {
    /// The portfolio outcome.
    pub outcome: &'static str,
    /// Attempts in it.
    pub count: u64,
}

/// An amount summed over attempted rows, unknown amounts kept apart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Amount<T> {
    /// Sum over the attempts whose amount is known.
    pub known_subtotal: T,
    /// Attempts whose amount is known.
    pub known_attempts: u64,
    /// Attempts that ran and whose amount is unknown.
    pub unknown_attempts: u64,
    /// The total, or null while any attempt's amount is unknown.
    pub total: Option<T>,
}

/// One evidence section of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Section {
    /// `fresh` or `replay`.
    pub evidence: Evidence,
    /// Scheduled attempts in the section.
    pub attempts: u64,
    /// Attempts by portfolio outcome, every outcome listed.
    pub outcomes: Vec<OutcomeCount>,
    /// Kernel evaluations spent.
    pub kernel_evaluations: Amount<u64>,
    /// Wall time spent.
    pub elapsed_seconds: Amount<f64>,
    /// `complete`, or `blocked` while an attempt has not been made.
    pub comparison: String,
}

/// One attempt as the report lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptLine {
    /// The schedule id.
    pub schedule_id: String,
    /// `fresh` or `replay`.
    pub evidence: Evidence,
    /// The native outcome as recorded.
    pub native_outcome: String,
    /// The portfolio outcome.
    pub outcome: &'static str,
    /// Why it did not pass.
    pub reason: Option<String>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `chio.arena.campaign-report/v1`.
    pub schema_version: &'static str,
    /// The campaign id.
    pub campaign_id: String,
    /// The campaign title.
    pub title: String,
    /// SHA-256 of the declaration.
    pub declaration_sha256: String,
    /// Fresh runs, then replays; never pooled.
    pub sections: Vec<Section>,
    /// Every attempt in schedule order.
    pub attempts: Vec<AttemptLine>,
}

fn amount<T: Copy + std::iter::Sum<T>>(values: &[Option<T>], zero: T) -> Amount<T> {
    let known: Vec<T> = values.iter().flatten().copied().collect();
    let unknown = values.len() - known.len();
    let subtotal = if known.is_empty() {
        zero
    } else {
        known.iter().copied().sum()
    };
    Amount {
        known_subtotal: subtotal,
        known_attempts: known.len() as u64,
        unknown_attempts: unknown as u64,
        total: (unknown == 0 && !values.is_empty()).then_some(subtotal),
    }
}

/// Builds the report of a ledger that passed [`super::ledger::check_ledger`].
pub fn report(campaign: &Campaign, ledger: &Ledger) -> Report {
    let mut sections = Vec::new();
    for evidence in [Evidence::Fresh, Evidence::Replay] {
        let rows: Vec<_> = ledger
            .rows
            .iter()
            .filter(|r| r.evidence == evidence)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let outcomes = PORTFOLIO_OUTCOMES
            .iter()
            .map(|o| OutcomeCount {
                outcome: o,
                count: rows
                    .iter()
                    .filter(|r| portfolio_outcome(&r.native_outcome) == *o)
                    .count() as u64,
            })
            .collect();
        let ran: Vec<_> = rows
            .iter()
            .filter(|r| r.native_outcome != DEFERRED)
            .collect();
        let deferred = rows.len() - ran.len();
        let evaluations: Vec<Option<u64>> = ran.iter().map(|r| r.kernel_evaluations).collect();
        let elapsed: Vec<Option<f64>> = ran.iter().map(|r| r.elapsed_seconds).collect();
        sections.push(Section {
            evidence,
            attempts: rows.len() as u64,
            outcomes,
            kernel_evaluations: amount(&evaluations, 0),
            elapsed_seconds: amount(&elapsed, 0.0),
            comparison: if deferred == 0 {
                "complete".to_string()
            } else {
                format!("blocked: {deferred} attempt(s) not attempted")
            },
        });
    }
    let attempts = campaign
        .schedule
        .iter()
        .filter_map(|a| ledger.rows.iter().find(|r| r.schedule_id == a.schedule_id))
        .map(|r| AttemptLine {
            schedule_id: r.schedule_id.clone(),
            evidence: r.evidence,
            native_outcome: r.native_outcome.clone(),
            outcome: portfolio_outcome(&r.native_outcome),
            reason: r.reason.clone(),
        })
        .collect();
    Report {
        schema_version: REPORT_SCHEMA_VERSION,
        campaign_id: campaign.file.id.clone(),
        title: campaign.file.title.clone(),
        declaration_sha256: campaign.sha256.clone(),
        sections,
        attempts,
    }
}

fn describe<T: std::fmt::Display>(amount: &Amount<T>, unit: &str) -> String {
    match &amount.total {
        Some(total) => format!("{total} {unit} over {} attempt(s)", amount.known_attempts),
        None if amount.known_attempts == 0 && amount.unknown_attempts == 0 => {
            "none spent: no attempt ran".to_string()
        }
        None if amount.known_attempts == 0 => {
            format!("unknown for all {} attempt(s)", amount.unknown_attempts)
        }
        None => format!(
            "total unknown: {} {unit} known over {} attempt(s), unknown for {} attempt(s)",
            amount.known_subtotal, amount.known_attempts, amount.unknown_attempts
        ),
    }
}

/// The report as readable text.
pub fn render_text(report: &Report) -> String {
    let mut text = format!(
        "campaign {}: {}\ndeclaration sha256 {}\n",
        report.campaign_id, report.title, report.declaration_sha256
    );
    for section in &report.sections {
        text.push_str(&format!(
            "\n{} ({} attempts)\n",
            match section.evidence {
                Evidence::Fresh => "fresh runs",
                Evidence::Replay => "replays of recorded bundles (never pooled with fresh runs)",
            },
            section.attempts
        ));
        for count in section.outcomes.iter().filter(|c| c.count > 0) {
            text.push_str(&format!("  {:<34} {}\n", count.outcome, count.count));
        }
        text.push_str(&format!(
            "  cost: {}\n  time: {}\n  comparison: {}\n",
            describe(&section.kernel_evaluations, "kernel evaluations"),
            describe(&section.elapsed_seconds, "seconds"),
            section.comparison
        ));
    }
    text.push_str("\nattempts\n");
    for a in &report.attempts {
        text.push_str(&format!(
            "  {:<28} {:<7} {:<24} {}{}\n",
            a.schedule_id,
            a.evidence.as_str(),
            a.native_outcome,
            a.outcome,
            a.reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ));
    }
    text
}
