//! The report of a run bundle: what was tested and what came of it in
//! words, the step table with expected and actual verdicts and reasons,
//! the picture of which data reached whom ([`super::flow`]), and each
//! call's decision stage by stage ([`super::explain`]). Everything comes
//! from the bundle (its manifest and its recorded scenario), in recorded
//! order. `chio report` first re-decides the bundle from its inputs (as
//! `chio arena replay` does) and says what that gave ([`Verification`]):
//! the page of a bundle that drifts, or that cannot be re-decided, is
//! framed in red and says so before anything the bundle claims.

use std::collections::BTreeMap;

use super::{escape, explain, flow, pass_cell, Page};
use crate::bundle::{Bundle, BundleStatus, StepRecord, SCENARIO_INPUT};
use crate::ActionKind;

/// Each step's table of the recorded scenario, by step id; empty when the
/// scenario cannot be read back (the manifest still says everything else).
pub fn step_tables(bundle: &Bundle) -> BTreeMap<String, toml::Table> {
    let Some(text) = bundle
        .inputs
        .get(SCENARIO_INPUT)
        .and_then(|b| std::str::from_utf8(b).ok())
    else {
        return BTreeMap::new();
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return BTreeMap::new();
    };
    let Some(steps) = table.get("steps").and_then(toml::Value::as_array) else {
        return BTreeMap::new();
    };
    steps
        .iter()
        .filter_map(|s| {
            let t = s.as_table()?;
            Some((t.get("id")?.as_str()?.to_string(), t.clone()))
        })
        .collect()
}

/// A step's `arguments` as canonical JSON, when its table declares them.
fn arguments_text(table: Option<&toml::Table>) -> Option<String> {
    let arguments = table?.get("arguments")?;
    let value = crate::scenario::validate::arguments_as_sent(arguments)?;
    chio_kernel::canonical::to_canonical_string(&value).ok()
}

fn outcome(o: Option<crate::bundle::StepOutcome>) -> String {
    o.map_or_else(|| "-".to_string(), |o| o.as_str().to_string())
}

/// The reason with its code, escaped, or empty.
fn reason_cell(step: &StepRecord) -> String {
    match (&step.reason, &step.reason_code) {
        (Some(reason), Some(code)) => {
            format!("{} <code>{}</code>", escape(reason), escape(code))
        }
        (Some(reason), None) => escape(reason),
        _ => String::new(),
    }
}

/// What re-deciding a bundle from its inputs gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// The run that wrote the page decided it, or re-deciding it gave the
    /// same run: the page shows the bundle as it is.
    Redecided,
    /// Re-deciding it gave another run: one line per difference.
    Drifted(Vec<String>),
    /// It could not be re-decided, and why.
    Unverified(String),
}

/// The summary's opening words on what re-deciding the bundle gave.
fn verification_note(page: &mut Page, verification: &Verification) {
    match verification {
        Verification::Redecided => {}
        Verification::Drifted(lines) => {
            page.raw("<p>");
            page.text(
                "This bundle is not what re-deciding it gives: re-decided from its own inputs (as chio arena replay re-decides it), \
                 the run comes out otherwise, so what the page shows below is not what the kernel decides \
                 (the bundle was changed after its run, or written by a chio that decides otherwise). What differs:",
            );
            page.raw("</p>\n<ul id=\"drift\">\n");
            for line in lines {
                page.element("li", None, line);
            }
            page.raw("</ul>\n");
        }
        Verification::Unverified(why) => {
            page.raw("<p id=\"unverified\">");
            page.text(&format!(
                "The outcome below is unverified: the bundle could not be re-decided from its inputs here ({why}). \
                 chio arena replay re-decides it once given what it needs."
            ));
            page.raw("</p>\n");
        }
    }
}

fn summary(page: &mut Page, bundle: &Bundle, verification: &Verification) {
    let m = &bundle.manifest;
    let judged: Vec<&StepRecord> = m.steps.iter().filter(|s| s.pass.is_some()).collect();
    let passed = judged.iter().filter(|s| s.pass == Some(true)).count();
    let failed: Vec<&&StepRecord> = judged.iter().filter(|s| s.pass == Some(false)).collect();
    let bad = !failed.is_empty()
        || m.status != BundleStatus::Completed
        || *verification != Verification::Redecided;
    page.raw(&format!(
        "<div id=\"summary\" class=\"summary{}\">\n",
        if bad { " bad" } else { "" }
    ));
    verification_note(page, verification);
    page.raw("<p>");
    page.text(&format!(
        "Scenario {} ({}) was run against the real capability kernel: {} step(s) were dispatched and the run {}. \
         {} step(s) carried an expected verdict or outcome; {} matched it and {} did not. \
         The kernel wrote {} signed receipt(s).",
        m.determinism.scenario_id,
        m.scenario_title,
        m.steps.len(),
        match m.status {
            BundleStatus::Completed => "completed",
            BundleStatus::Stopped => "stopped early",
            BundleStatus::Failed => "failed on infrastructure",
        },
        judged.len(),
        passed,
        failed.len(),
        m.receipt_count
    ));
    page.raw("</p>\n");
    if let Some(stop) = &m.stopped {
        page.raw("<p>");
        page.text(&format!(
            "The run stopped at step {} ({}): {}",
            stop.step_id, stop.cause, stop.message
        ));
        page.raw("</p>\n");
    }
    if !failed.is_empty() {
        page.raw("<p>What did not hold:</p>\n<ul id=\"failures\">\n");
        for step in failed {
            page.raw("<li>");
            page.text(&format!(
                "step {}: {} expected {}, {}{}",
                step.step_id,
                step.agent,
                outcome(step.expected),
                step.answer(),
                step.reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ));
            page.raw("</li>\n");
        }
        page.raw("</ul>\n");
    }
    page.raw("</div>\n");
}

fn step_table(page: &mut Page, steps: &[StepRecord]) {
    page.raw("<h2>Steps</h2>\n");
    let rows: Vec<Vec<String>> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let id = if s.action == ActionKind::Call {
                format!("<a href=\"#step-{}\">{}</a>", i + 1, escape(&s.step_id))
            } else {
                escape(&s.step_id)
            };
            vec![
                (i + 1).to_string(),
                id,
                s.action.as_str().to_string(),
                escape(&s.agent),
                escape(s.target.as_deref().unwrap_or("")),
                escape(&s.virtual_time),
                escape(&outcome(s.expected)),
                escape(&outcome(s.actual)),
                pass_cell(s.pass),
                reason_cell(s),
                escape(s.guard.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    page.table(
        Some("steps"),
        &[
            "#",
            "step",
            "action",
            "agent",
            "target",
            "virtual time",
            "expected",
            "actual",
            "result",
            "reason",
            "guard",
        ],
        &rows,
    );
}

fn flow_section(page: &mut Page, steps: &[StepRecord], tables: &BTreeMap<String, toml::Table>) {
    let edges = flow::edges(steps, tables);
    page.raw("<h2>Where data went</h2>\n<div id=\"flow\">\n<p>");
    page.text(
        "Each row is data moving from an agent or a tool's output to another agent or a tool call: \
         messages and hand-overs between agents, delegations, calls, and values one step took from an earlier call's output, \
         with the labels the kernel recorded or read.",
    );
    page.raw("</p>\n");
    page.raw(&flow::to_svg(&edges));
    let rows: Vec<Vec<String>> = edges
        .iter()
        .map(|e| {
            vec![
                escape(&e.from),
                e.kind.as_str().to_string(),
                escape(&e.to),
                escape(&e.steps.join(", ")),
                escape(&flow::labels_text(&e.labels)),
            ]
        })
        .collect();
    page.table(
        Some("flow-table"),
        &["from", "carried by", "to", "steps", "labels"],
        &rows,
    );
    page.raw("</div>\n");
}

fn decisions(page: &mut Page, steps: &[StepRecord], tables: &BTreeMap<String, toml::Table>) {
    page.raw("<h2>Decisions stage by stage</h2>\n<div id=\"decisions\">\n");
    for (i, step) in steps.iter().enumerate() {
        if step.action != ActionKind::Call {
            continue;
        }
        let id = format!("step-{}", i + 1);
        page.raw(&format!(
            "<details id=\"{id}\"{}>\n<summary>",
            if step.pass == Some(false) {
                " open"
            } else {
                ""
            }
        ));
        page.text(&format!(
            "{}: {} calls {}: {}",
            step.step_id,
            step.agent,
            step.target.as_deref().unwrap_or("?"),
            outcome(step.actual)
        ));
        page.raw(&format!(" {}</summary>\n", pass_cell(step.pass)));
        if let Some(arguments) = arguments_text(tables.get(&step.step_id)) {
            page.raw("<p>arguments <code>");
            page.text(&arguments);
            page.raw("</code></p>\n");
        }
        if let Some(reason) = &step.reason {
            page.raw("<p>reason: ");
            page.text(reason);
            page.raw("</p>\n");
        }
        if let Some(expected) = &step.expected_reason {
            page.raw("<p>expected the reason to contain: ");
            page.text(expected);
            page.raw("</p>\n");
        }
        match &step.trace {
            Some(trace) => page.raw(&explain::trace_html(&id, trace)),
            None if step.receipt_id.is_none() => page.raw(
                "<p class=\"muted\">A fault in effect decided this call before dispatch: no kernel evaluated it, so there is no receipt and no trace.</p>\n",
            ),
            None => page.raw(
                "<p class=\"muted\">This bundle records no decision trace for the step; run the scenario again to record one.</p>\n",
            ),
        }
        page.raw("</details>\n");
    }
    page.raw("</div>\n");
}

/// The report of a run bundle as a self-contained HTML page, as the run
/// that wrote it decided it (`arena run --html`).
pub fn render(bundle: &Bundle) -> String {
    render_verified(bundle, &Verification::Redecided)
}

/// The report of a run bundle, saying first what re-deciding it gave
/// (`chio report`): the same bytes as [`render`] when it gave the same run.
pub fn render_verified(bundle: &Bundle, verification: &Verification) -> String {
    let m = &bundle.manifest;
    let tables = step_tables(bundle);
    let mut page = Page::new();
    page.element(
        "h1",
        Some("title"),
        &format!("Run report: {}", m.scenario_title),
    );
    summary(&mut page, bundle, verification);
    step_table(&mut page, &m.steps);
    flow_section(&mut page, &m.steps, &tables);
    decisions(&mut page, &m.steps, &tables);
    page.raw("<h2>Evidence</h2>\n<div id=\"evidence\">\n");
    let mut rows = vec![
        vec!["scenario".to_string(), escape(&m.determinism.scenario_id)],
        vec!["scenario sha256".to_string(), escape(&m.scenario_sha256)],
        vec!["receipts".to_string(), m.receipt_count.to_string()],
        vec!["receipt Merkle root".to_string(), escape(&m.receipt_root)],
    ];
    for (kernel, sha) in &m.policies {
        rows.push(vec![format!("policy of {}", escape(kernel)), escape(sha)]);
    }
    page.table(Some("evidence-table"), &["what", "value"], &rows);
    page.raw("</div>\n");
    page.finish("run", &format!("Run report: {}", m.scenario_title))
}
