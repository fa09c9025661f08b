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
//!    revision or runtime, a limit over or unknown) a **pass without complete
//!    evidence**; with a `repair` intervention **verified after a human
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

use std::collections::BTreeMap;

use serde::Serialize;

use super::evidence::{check_ledger_evidence, check_row_evidence, Contradiction};
use super::ledger::{
    limit_statuses, InterventionKind, Ledger, LedgerRow, LimitStatus, RuntimeIdentity, DEFERRED,
    SKIPPED,
};
use super::{Campaign, Evidence};

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
/// (see the module doc). This sees the row alone: the report also
/// contradicts rows that name one folder as their evidence
/// ([`check_ledger_evidence`]).
pub fn portfolio_outcome(campaign: &Campaign, row: &LedgerRow) -> &'static str {
    outcome_of(campaign, row, !check_row_evidence(campaign, row).is_empty())
}

/// The portfolio outcome of a checked row whose evidence was opened:
/// `contradicted` says whether it contradicts the row (see the module doc).
pub fn outcome_of(campaign: &Campaign, row: &LedgerRow, contradicted: bool) -> &'static str {
    match row.native_outcome.as_str() {
        DEFERRED => return NOT_ATTEMPTED,
        SKIPPED => return SKIPPED_OUTCOME,
        _ if contradicted => return CONTRADICTED,
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
            } else if !evidence_gaps(campaign, row).is_empty() {
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
    /// What keeps a pass from being verified; empty otherwise.
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

/// Why the comparison of a section's rows is blocked.
fn blocked_because(
    campaign: &Campaign,
    rows: &[&LedgerRow],
    contradictions: &BTreeMap<String, Vec<Contradiction>>,
) -> Vec<String> {
    let mut reasons = Vec::new();
    let declared_revision = match &campaign.mode {
        super::DefinitionMode::Pinned { commit } => Some(commit.as_str()),
        super::DefinitionMode::WorkingTree => None,
    };
    let mut runtimes = std::collections::BTreeSet::new();
    for row in rows {
        let id = &row.schedule_id;
        let found = contradictions.get(id).map(Vec::as_slice).unwrap_or(&[]);
        let outcome = outcome_of(campaign, row, !found.is_empty());
        if matches!(outcome, NOT_ATTEMPTED | UNGRADED | STOP_UNJUDGED) {
            reasons.push(format!("{id} is unjudged ({outcome})"));
        }
        for c in found {
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

/// Builds the report of a ledger that passed [`super::ledger::check_ledger`],
/// opening the evidence every row names.
pub fn report(campaign: &Campaign, ledger: &Ledger) -> Report {
    let contradictions = check_ledger_evidence(campaign, ledger);
    let contradicted = |row: &LedgerRow| contradictions.contains_key(&row.schedule_id);
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
        let outcomes = PORTFOLIO_OUTCOMES
            .iter()
            .map(|o| OutcomeCount {
                outcome: o,
                count: rows
                    .iter()
                    .filter(|r| outcome_of(campaign, r, contradicted(r)) == *o)
                    .count() as u64,
            })
            .collect::<Vec<_>>();
        let ran: Vec<&&LedgerRow> = rows
            .iter()
            .filter(|r| !matches!(r.native_outcome.as_str(), DEFERRED | SKIPPED))
            .collect();
        let evaluations: Vec<Option<u64>> =
            ran.iter().map(|r| r.spent.kernel_evaluations).collect();
        let elapsed: Vec<Option<f64>> = ran.iter().map(|r| r.elapsed_seconds).collect();
        let costs: Vec<Option<f64>> = ran.iter().map(|r| r.estimated_cost).collect();
        let estimated_cost = amount(&costs, 0.0);
        let delivered = outcomes
            .iter()
            .filter(|c| matches!(c.outcome, VERIFIED | VERIFIED_AFTER_REPAIR))
            .map(|c| c.count)
            .sum::<u64>();
        let blocked_because = blocked_because(campaign, &rows, &contradictions);
        let count = |kind| {
            rows.iter()
                .flat_map(|r| &r.interventions)
                .filter(|i| i.kind == kind)
                .count() as u64
        };
        sections.push(Section {
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
        });
    }
    let attempts = campaign
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
            let outcome = outcome_of(campaign, r, contradicted(r));
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
                        spent: super::ledger::spent_on(r, limit),
                        status,
                    })
                    .collect(),
                evidence_gaps: if outcome == PASS_INCOMPLETE {
                    evidence_gaps(campaign, r)
                } else {
                    Vec::new()
                },
                deviations: r.deviations.clone(),
                contradictions: contradictions
                    .get(&r.schedule_id)
                    .cloned()
                    .unwrap_or_default(),
            }
        })
        .collect();
    Report {
        schema_version: REPORT_SCHEMA_VERSION,
        campaign_id: campaign.file.id.clone(),
        title: campaign.file.title.clone(),
        declaration_sha256: campaign.sha256.clone(),
        definitions: match &campaign.mode {
            super::DefinitionMode::Pinned { commit } => format!("pinned at {commit}"),
            super::DefinitionMode::WorkingTree => "working-tree".to_string(),
        },
        sections,
        attempts,
    }
}

/// A number as text with at most three decimals, trailing zeros dropped.
fn short(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// An amount of seconds or cost, with short numbers.
fn shorten(amount: &Amount<f64>) -> Amount<String> {
    Amount {
        known_subtotal: short(amount.known_subtotal),
        known_attempts: amount.known_attempts,
        unknown_attempts: amount.unknown_attempts,
        total: amount.total.map(short),
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
        "campaign {}: {}\ndeclaration sha256 {}\ndefinitions: {}\n",
        report.campaign_id, report.title, report.declaration_sha256, report.definitions
    );
    for section in &report.sections {
        text.push_str(&format!(
            "\n{} ({} attempts)\n",
            match section.evidence {
                Evidence::Live => "live attempts",
                Evidence::Fixture =>
                    "fixture replays of recorded bundles (never pooled with live attempts)",
            },
            section.attempts
        ));
        for count in section.outcomes.iter().filter(|c| c.count > 0) {
            text.push_str(&format!("  {:<46} {}\n", count.outcome, count.count));
        }
        let unit = section
            .currency
            .as_deref()
            .unwrap_or("(no [cost] declared)");
        text.push_str(&format!(
            "  interventions: {} decision(s), {} repair(s)\n  kernel evaluations: {}\n  time: {}\n  estimated cost: {}\n  cost per verified delivery: {}\n  comparison: {}\n",
            section.decisions,
            section.repairs,
            describe(&section.kernel_evaluations, "kernel evaluations"),
            describe(&shorten(&section.elapsed_seconds), "seconds"),
            describe(&shorten(&section.estimated_cost), unit),
            section
                .cost_per_verified_delivery
                .map_or_else(|| "unknown".to_string(), |c| format!("{} {unit}", short(c))),
            section.comparison
        ));
        for reason in &section.blocked_because {
            text.push_str(&format!("    blocked: {reason}\n"));
        }
    }
    text.push_str("\nattempts\n");
    for a in &report.attempts {
        let limits: Vec<String> = a
            .limits
            .iter()
            .map(|l| {
                format!(
                    "{} {}",
                    l.limit,
                    match l.status {
                        LimitStatus::Within => "within",
                        LimitStatus::Over => "OVER",
                        LimitStatus::Unknown => "unknown",
                    }
                )
            })
            .collect();
        text.push_str(&format!(
            "  {:<28} {:<7} {:<24} {}{}\n    limits: {}\n",
            a.schedule_id,
            a.evidence.as_str(),
            a.native_outcome,
            a.outcome,
            a.reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default(),
            limits.join(", ")
        ));
        if !a.evidence_gaps.is_empty() {
            text.push_str(&format!(
                "    evidence incomplete: {}\n",
                a.evidence_gaps.join("; ")
            ));
        }
        for c in &a.contradictions {
            text.push_str(&format!("    contradicted: {}: {}\n", c.field, c.reason));
        }
    }
    text
}
