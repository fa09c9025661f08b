//! The report as readable text. Every text from the declaration or the
//! ledger (the title, ids, outcomes, reasons, gaps, contradictions, the
//! currency) is printed through `chio_arena::report::printable`, and the
//! whole report once more through `printable_text`, so an escape sequence
//! in a file is shown, never acted on by the terminal, whatever field
//! carries it.

use super::LimitLine;
use super::{Amount, Report};
use crate::Evidence;
use chio_arena::report::printable;

/// A number as text with at most three decimals, trailing zeros dropped.
pub(crate) fn short(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// An amount of seconds or cost, with short numbers.
pub(crate) fn shorten(amount: &Amount<f64>) -> Amount<String> {
    Amount {
        known_subtotal: short(amount.known_subtotal),
        known_attempts: amount.known_attempts,
        unknown_attempts: amount.unknown_attempts,
        total: amount.total.map(short),
    }
}

pub(crate) fn describe<T: std::fmt::Display>(amount: &Amount<T>, unit: &str) -> String {
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
        printable(&report.campaign_id),
        printable(&report.title),
        report.declaration_sha256,
        report.definitions
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
            text.push_str(&format!("    blocked: {}\n", printable(reason)));
        }
    }
    text.push_str("\nattempts\n");
    for a in &report.attempts {
        let limits: Vec<String> = a.limits.iter().map(LimitLine::summary).collect();
        text.push_str(&format!(
            "  {:<28} {:<7} {:<24} {}{}\n    limits: {}\n",
            printable(&a.schedule_id),
            a.evidence.as_str(),
            printable(&a.native_outcome),
            a.outcome,
            a.reason
                .as_deref()
                .map(|r| format!(": {}", printable(r)))
                .unwrap_or_default(),
            limits.join(", ")
        ));
        if !a.evidence_gaps.is_empty() {
            text.push_str(&format!(
                "    evidence incomplete: {}\n",
                printable(&a.evidence_gaps.join("; "))
            ));
        }
        for c in &a.contradictions {
            text.push_str(&format!(
                "    contradicted: {}: {}\n",
                printable(&c.field),
                printable(&c.reason)
            ));
        }
    }
    chio_arena::report::printable_text(&text).into_owned()
}
