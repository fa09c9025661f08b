//! The report of a campaign: its portfolio (what `chio campaign report`
//! prints) as a page: what the campaign is and how its attempts came out
//! in words, each evidence section's outcomes, spending and comparison
//! (with why a comparison is blocked), and every attempt with its limits,
//! evidence gaps and contradictions.

use crate::portfolio::text::{describe, short, shorten};
use crate::portfolio::LimitLine;
use crate::portfolio::Report;
use crate::Evidence;
use chio_arena::report::{escape, Page};

fn section_name(evidence: Evidence) -> &'static str {
    match evidence {
        Evidence::Live => "Live attempts",
        Evidence::Fixture => {
            "Fixture replays of recorded bundles (never pooled with live attempts)"
        }
    }
}

/// The portfolio as a self-contained HTML page.
pub fn render(report: &Report) -> String {
    let mut page = Page::new();
    let title = format!("Campaign report: {}", report.title);
    page.element("h1", Some("title"), &title);
    summary(&mut page, report);
    page.raw(&format!(
        "<p class=\"muted\">declaration sha256 <code>{}</code></p>\n<div id=\"portfolio\">\n",
        escape(&report.declaration_sha256)
    ));
    evidence_sections(&mut page, report);
    page.raw("</div>\n<h2>Attempts</h2>\n");
    let rows = attempt_rows(report);
    page.table(
        Some("attempts"),
        &[
            "schedule id",
            "evidence",
            "native outcome",
            "outcome",
            "limits",
            "notes",
        ],
        &rows,
    );
    page.finish("campaign", &title)
}

/// Writes the summary box: the campaign in words, its outcomes summed over
/// the sections, and each section's comparison.
fn summary(page: &mut Page, report: &Report) {
    let blocked = report
        .sections
        .iter()
        .any(|s| !s.blocked_because.is_empty());
    page.raw(&format!(
        "<div id=\"summary\" class=\"summary{}\">\n<p>",
        if blocked { " bad" } else { "" }
    ));
    // Each outcome once, summed over the sections, in the order the
    // sections list them.
    let mut counts: Vec<(&str, u64)> = Vec::new();
    for count in report.sections.iter().flat_map(|s| &s.outcomes) {
        match counts.iter_mut().find(|(o, _)| *o == count.outcome) {
            Some((_, n)) => *n += count.count,
            None => counts.push((count.outcome, count.count)),
        }
    }
    let outcomes: Vec<String> = counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(o, n)| format!("{n} {o}"))
        .collect();
    page.text(&format!(
        "Campaign {} pins its tasks' inputs ({}) and records one ledger row per scheduled attempt; {} attempt(s) are recorded. Outcomes: {}.",
        report.campaign_id,
        report.definitions,
        report.attempts.len(),
        if outcomes.is_empty() {
            "none".to_string()
        } else {
            outcomes.join(", ")
        }
    ));
    page.raw("</p>\n<p>");
    for section in &report.sections {
        page.text(&format!(
            "{}: comparison {}{}. ",
            section_name(section.evidence),
            section.comparison,
            if section.blocked_because.is_empty() {
                String::new()
            } else {
                format!(" because {}", section.blocked_because.join("; "))
            }
        ));
    }
    page.raw("</p>\n</div>\n");
}

/// Writes each evidence section's outcomes, spending and comparison as a
/// table.
fn evidence_sections(page: &mut Page, report: &Report) {
    for section in &report.sections {
        page.raw("<h2>");
        page.text(&format!(
            "{} ({} attempts)",
            section_name(section.evidence),
            section.attempts
        ));
        page.raw("</h2>\n");
        let unit = section
            .currency
            .as_deref()
            .unwrap_or("(no [cost] declared)");
        let mut rows: Vec<Vec<String>> = section
            .outcomes
            .iter()
            .filter(|c| c.count > 0)
            .map(|c| vec![escape(c.outcome), c.count.to_string()])
            .collect();
        for (what, value) in [
            (
                "interventions",
                format!(
                    "{} decision(s), {} repair(s)",
                    section.decisions, section.repairs
                ),
            ),
            (
                "kernel evaluations",
                describe(&section.kernel_evaluations, "kernel evaluations"),
            ),
            (
                "time",
                describe(&shorten(&section.elapsed_seconds), "seconds"),
            ),
            (
                "estimated cost",
                describe(&shorten(&section.estimated_cost), unit),
            ),
            (
                "cost per verified delivery",
                section
                    .cost_per_verified_delivery
                    .map_or_else(|| "unknown".to_string(), |c| format!("{} {unit}", short(c))),
            ),
            ("comparison", section.comparison.to_string()),
        ] {
            rows.push(vec![what.to_string(), escape(&value)]);
        }
        for reason in &section.blocked_because {
            rows.push(vec!["blocked".to_string(), escape(reason)]);
        }
        page.table(None, &["measure", "value"], &rows);
    }
}

/// One table row per attempt: its schedule, evidence, outcomes, limits and
/// notes.
fn attempt_rows(report: &Report) -> Vec<Vec<String>> {
    report
        .attempts
        .iter()
        .map(|a| {
            let limits: Vec<String> = a.limits.iter().map(LimitLine::summary).collect();
            let mut notes: Vec<String> = Vec::new();
            if !a.evidence_gaps.is_empty() {
                notes.push(format!(
                    "evidence incomplete: {}",
                    a.evidence_gaps.join("; ")
                ));
            }
            for c in &a.contradictions {
                notes.push(format!("contradicted: {}: {}", c.field, c.reason));
            }
            notes.extend(a.deviations.iter().map(|d| format!("deviation: {d}")));
            vec![
                escape(&a.schedule_id),
                a.evidence.as_str().to_string(),
                escape(&a.native_outcome),
                format!(
                    "{}{}",
                    escape(a.outcome),
                    a.reason
                        .as_deref()
                        .map(|r| format!(": {}", escape(r)))
                        .unwrap_or_default()
                ),
                escape(&limits.join(", ")),
                escape(&notes.join("; ")),
            ]
        })
        .collect()
}
