//! The report's sections and attempt lines, and why a section's comparison
//! is blocked.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{
    evidence_gaps, outcome_of, NOT_ATTEMPTED, PASS_INCOMPLETE, PORTFOLIO_OUTCOMES,
    REPORT_SCHEMA_VERSION, STOP_UNJUDGED, UNGRADED, VERIFIED, VERIFIED_AFTER_REPAIR,
};
use crate::evidence::{check_ledger_evidence, Contradiction, Redecide, RowFindings};
use crate::ledger::{
    limit_statuses, spent_on, InterventionKind, Ledger, LedgerRow, LimitStatus, RuntimeIdentity,
    DEFERRED, SKIPPED,
};
use crate::{Campaign, DefinitionMode, Evidence};

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
    /// `live` or `fixture`.
    pub evidence: Evidence,
    /// Scheduled attempts in the section.
    pub attempts: u64,
    /// Attempts by portfolio outcome, every outcome listed.
    pub outcomes: Vec<OutcomeCount>,
    /// `decision` interventions over the section's attempts.
    pub decisions: u64,
    /// `repair` interventions over the section's attempts.
    pub repairs: u64,
    /// Kernel evaluations spent.
    pub kernel_evaluations: Amount<u64>,
    /// Wall time spent.
    pub elapsed_seconds: Amount<f64>,
    /// Estimated cost.
    pub estimated_cost: Amount<f64>,
    /// The estimated cost's unit, from `[cost]`; null without a cost model.
    pub currency: Option<String>,
    /// Total estimated cost over verified deliveries (with or without a
    /// repair); null while the total is unknown or nothing was delivered.
    pub cost_per_verified_delivery: Option<f64>,
    /// `complete`, or `blocked`.
    pub comparison: &'static str,
    /// Why the comparison is blocked, one line per reason.
    pub blocked_because: Vec<String>,
}

/// One limit's status for one attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LimitLine {
    /// The limit.
    pub limit: &'static str,
    /// What the task allows.
    pub declared: f64,
    /// What the attempt spent; null when unknown.
    pub spent: Option<f64>,
    /// `within`, `over` or `unknown`.
    pub status: LimitStatus,
}

impl LimitLine {
    /// The limit and how the attempt stands against it, as the text and
    /// HTML portfolios print it (`wall_seconds within`, `... OVER`).
    pub fn summary(&self) -> String {
        let status = match self.status {
            LimitStatus::Within => "within",
            LimitStatus::Over => "OVER",
            LimitStatus::Unknown => "unknown",
        };
        format!("{} {status}", self.limit)
    }
}

/// One attempt as the report lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttemptLine {
    /// The schedule id.
    pub schedule_id: String,
    /// `live` or `fixture`.
    pub evidence: Evidence,
    /// The native outcome as recorded.
    pub native_outcome: String,
    /// The portfolio outcome.
    pub outcome: &'static str,
    /// Why it did not pass, or went over a limit.
    pub reason: Option<String>,
    /// Each declared limit, within, over or unknown.
    pub limits: Vec<LimitLine>,
    /// What keeps a pass from being verified (a bundle that cannot be
    /// re-decided here among them); empty otherwise.
    pub evidence_gaps: Vec<String>,
    /// Each field of the row its evidence does not bear out; empty when
    /// the evidence bears the row out.
    pub contradictions: Vec<Contradiction>,
    /// The row's deviations.
    pub deviations: Vec<String>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `chio.arena.campaign-report/v3`.
    pub schema_version: &'static str,
    /// The campaign id.
    pub campaign_id: String,
    /// The campaign title.
    pub title: String,
    /// SHA-256 of the declaration.
    pub declaration_sha256: String,
    /// `pinned` with its commit, or `working-tree`.
    pub definitions: String,
    /// Live attempts, then fixture replays; never pooled.
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

fn runtime_matches(campaign: &Campaign, runtime: &RuntimeIdentity) -> bool {
    let Some(declared) = &campaign.file.runtime else {
        return true;
    };
    declared.chio_version == runtime.chio_version
        && declared
            .binary_sha256
            .as_ref()
            .is_none_or(|b| *b == runtime.binary_sha256)
        && declared
            .platform
            .as_ref()
            .is_none_or(|p| *p == runtime.platform)
}

/// What the evidence said of each row, by schedule id (rows it bears out
/// and verifies are absent).
type Findings = BTreeMap<String, RowFindings>;

/// What the evidence said of `row`.
fn findings_of<'a>(findings: &'a Findings, row: &LedgerRow) -> &'a RowFindings {
    static NOTHING: RowFindings = RowFindings {
        contradictions: Vec::new(),
        unverified: Vec::new(),
    };
    findings.get(&row.schedule_id).unwrap_or(&NOTHING)
}

/// Why the comparison of a section's rows is blocked.
fn blocked_because(campaign: &Campaign, rows: &[&LedgerRow], findings: &Findings) -> Vec<String> {
    let mut reasons = Vec::new();
    let declared_revision = match &campaign.mode {
        DefinitionMode::Pinned { commit } => Some(commit.as_str()),
        DefinitionMode::WorkingTree => None,
    };
    let mut runtimes = std::collections::BTreeSet::new();
    for row in rows {
        let id = &row.schedule_id;
        let found = findings_of(findings, row);
        let outcome = outcome_of(campaign, row, found);
        if matches!(outcome, NOT_ATTEMPTED | UNGRADED | STOP_UNJUDGED) {
            reasons.push(format!("{id} is unjudged ({outcome})"));
        }
        for c in &found.contradictions {
            reasons.push(format!(
                "{id} is contradicted by its evidence: {}: {}",
                c.field, c.reason
            ));
        }
        if matches!(row.native_outcome.as_str(), DEFERRED | SKIPPED) {
            continue;
        }
        if let Some(revision) = declared_revision {
            if row.source_revision.as_deref() != Some(revision) {
                reasons.push(format!(
                    "{id} ran off the declared revision {revision} (it ran from {})",
                    row.source_revision
                        .as_deref()
                        .unwrap_or("an unknown revision")
                ));
            }
        }
        match &row.runtime_identity {
            Some(runtime) if !runtime_matches(campaign, runtime) => reasons.push(format!(
                "{id} ran off the declared runtime (chio {}, {})",
                runtime.chio_version, runtime.platform
            )),
            None if campaign.file.runtime.is_some() => {
                reasons.push(format!("{id} ran on an unknown runtime"))
            }
            Some(runtime) => {
                runtimes.insert(runtime.clone());
            }
            None => {}
        }
        if let Some(attempt) = campaign.attempt(id) {
            for (limit, status) in limit_statuses(&campaign.tasks[attempt.task], row) {
                if status == LimitStatus::Over {
                    reasons.push(format!("{id} went over its {limit} limit"));
                }
            }
        }
    }
    if campaign.file.runtime.is_none() && runtimes.len() > 1 {
        reasons.push(format!(
            "the attempts ran on {} different runtimes and the declaration names none",
            runtimes.len()
        ));
    }
    reasons
}

/// Builds the report of a ledger that passed
/// [`check_ledger`](crate::ledger::check_ledger),
/// opening the evidence every row names and re-deciding each run's and
/// replay's bundle with `redecide`.
pub fn report(campaign: &Campaign, ledger: &Ledger, redecide: &dyn Redecide) -> Report {
    let contradictions = check_ledger_evidence(campaign, ledger, redecide);
    let mut sections = Vec::new();
    for evidence in [Evidence::Live, Evidence::Fixture] {
        let rows: Vec<&LedgerRow> = ledger
            .rows
            .iter()
            .filter(|r| r.evidence == evidence)
            .collect();
        if rows.is_empty() {
            continue;
        }
        sections.push(section(campaign, evidence, &rows, &contradictions));
    }
    let attempts = attempt_lines(campaign, ledger, &contradictions);
    Report {
        schema_version: REPORT_SCHEMA_VERSION,
        campaign_id: campaign.file.id.clone(),
        title: campaign.file.title.clone(),
        declaration_sha256: campaign.sha256.clone(),
        definitions: match &campaign.mode {
            DefinitionMode::Pinned { commit } => format!("pinned at {commit}"),
            DefinitionMode::WorkingTree => "working-tree".to_string(),
        },
        sections,
        attempts,
    }
}

/// The section of one kind of evidence: its outcomes, interventions,
/// spending and whether its comparison is blocked.
fn section(
    campaign: &Campaign,
    evidence: Evidence,
    rows: &[&LedgerRow],
    contradictions: &Findings,
) -> Section {
    let outcomes = PORTFOLIO_OUTCOMES
        .iter()
        .map(|o| OutcomeCount {
            outcome: o,
            count: rows
                .iter()
                .filter(|r| outcome_of(campaign, r, findings_of(contradictions, r)) == *o)
                .count() as u64,
        })
        .collect::<Vec<_>>();
    let ran: Vec<&&LedgerRow> = rows
        .iter()
        .filter(|r| !matches!(r.native_outcome.as_str(), DEFERRED | SKIPPED))
        .collect();
    let evaluations: Vec<Option<u64>> = ran.iter().map(|r| r.spent.kernel_evaluations).collect();
    let elapsed: Vec<Option<f64>> = ran.iter().map(|r| r.elapsed_seconds).collect();
    let costs: Vec<Option<f64>> = ran.iter().map(|r| r.estimated_cost).collect();
    let estimated_cost = amount(&costs, 0.0);
    let delivered = outcomes
        .iter()
        .filter(|c| matches!(c.outcome, VERIFIED | VERIFIED_AFTER_REPAIR))
        .map(|c| c.count)
        .sum::<u64>();
    let blocked_because = blocked_because(campaign, rows, contradictions);
    let count = |kind| {
        rows.iter()
            .flat_map(|r| &r.interventions)
            .filter(|i| i.kind == kind)
            .count() as u64
    };
    Section {
        evidence,
        attempts: rows.len() as u64,
        decisions: count(InterventionKind::Decision),
        repairs: count(InterventionKind::Repair),
        outcomes,
        kernel_evaluations: amount(&evaluations, 0),
        elapsed_seconds: amount(&elapsed, 0.0),
        cost_per_verified_delivery: estimated_cost
            .total
            .filter(|_| delivered > 0)
            .map(|total| total / delivered as f64),
        estimated_cost,
        currency: campaign.file.cost.as_ref().map(|c| c.currency.clone()),
        comparison: if blocked_because.is_empty() {
            "complete"
        } else {
            "blocked"
        },
        blocked_because,
    }
}

/// One line per scheduled attempt the ledger records, in schedule order:
/// its outcome, limits, evidence gaps, deviations and contradictions.
fn attempt_lines(campaign: &Campaign, ledger: &Ledger, findings: &Findings) -> Vec<AttemptLine> {
    campaign
        .schedule
        .iter()
        .filter_map(|a| {
            ledger
                .rows
                .iter()
                .find(|r| r.schedule_id == a.schedule_id)
                .map(|r| (a, r))
        })
        .map(|(a, r)| {
            let task = &campaign.tasks[a.task];
            let found = findings_of(findings, r);
            let outcome = outcome_of(campaign, r, found);
            AttemptLine {
                schedule_id: r.schedule_id.clone(),
                evidence: r.evidence,
                native_outcome: r.native_outcome.clone(),
                outcome,
                reason: r.reason.clone(),
                limits: limit_statuses(task, r)
                    .into_iter()
                    .map(|(limit, status)| LimitLine {
                        limit,
                        declared: task.limits.get(limit),
                        spent: spent_on(r, limit),
                        status,
                    })
                    .collect(),
                evidence_gaps: if outcome == PASS_INCOMPLETE {
                    let mut gaps = evidence_gaps(campaign, r);
                    gaps.extend(found.unverified.iter().cloned());
                    gaps
                } else {
                    Vec::new()
                },
                deviations: r.deviations.clone(),
                contradictions: found.contradictions.clone(),
            }
        })
        .collect()
}
