//! One call's decision as HTML: what `chio arena explain` prints, from the
//! same recorded trace (`chio_kernel::trace::DecisionTrace`): the decision
//! inputs (principal, chain, every label key read, argument labels, budget
//! keys, journal entries) and the pipeline stage by stage, with each
//! guard's answer under its stage and the stages never reached marked.

use chio_kernel::trace::{always_recorded, DecisionTrace, STAGES};

use super::escape;

fn labels(labels: &[String]) -> String {
    if labels.is_empty() {
        "<span class=\"muted\">(none)</span>".to_string()
    } else {
        escape(&labels.join(", "))
    }
}

fn key_table(out: &mut String, title: &str, rows: &[(String, String)], empty: &str) {
    out.push_str(&format!("<p><strong>{title}</strong></p>\n"));
    if rows.is_empty() {
        out.push_str(&format!("<p class=\"muted\">{empty}</p>\n"));
        return;
    }
    out.push_str("<table>\n");
    for (key, value) in rows {
        out.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{value}</td></tr>\n",
            escape(key)
        ));
    }
    out.push_str("</table>\n");
}

/// The decision inputs and the pipeline of one call, as markup; `id` is
/// the step's element id, which the stage table extends.
pub fn trace_html(id: &str, trace: &DecisionTrace) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "<p>principal <code>{}</code>{}</p>\n",
        escape(trace.principal.as_deref().unwrap_or("(not bound)")),
        if trace.chain.is_empty() {
            String::new()
        } else {
            format!(
                "; delegation chain <code>{}</code>",
                escape(&trace.chain.join(" > "))
            )
        }
    ));
    let label_rows: Vec<(String, String)> = trace
        .label_keys
        .iter()
        .map(|(k, v)| (k.clone(), labels(v)))
        .collect();
    key_table(
        &mut out,
        "label keys read",
        &label_rows,
        "(none: no guard of the kernel reads labels, or the call stopped before the guards)",
    );
    if !trace.argument_labels.is_empty() {
        let rows: Vec<(String, String)> = trace
            .argument_labels
            .iter()
            .map(|(k, v)| (k.clone(), labels(v)))
            .collect();
        key_table(&mut out, "argument labels", &rows, "(none)");
    }
    if !trace.allowlists_read.is_empty() {
        let rows: Vec<(String, String)> = trace
            .allowlists_read
            .iter()
            .map(|(k, held)| (k.clone(), format!("{held} value(s)")))
            .collect();
        key_table(&mut out, "allowlist records read", &rows, "(none)");
    }
    let budget_rows = budget_rows(trace);
    key_table(&mut out, "budget keys held", &budget_rows, "(none)");
    let journal_rows = journal_rows(trace);
    key_table(&mut out, "journal entries read", &journal_rows, "(none)");
    out.push_str(&format!(
        "<table id=\"{id}-stages\" class=\"stages\">\n<tr><th>#</th><th>stage</th><th>outcome</th><th>detail</th></tr>\n"
    ));
    // A stage only some calls record is shown where it was recorded.
    let shown = STAGES
        .iter()
        .filter(|stage| always_recorded(stage) || trace.stages.iter().any(|s| s.stage == **stage));
    for (index, stage) in shown.enumerate() {
        let recorded = trace.stages.iter().find(|s| s.stage == *stage);
        match recorded {
            Some(s) => {
                let class = if s.outcome == "pass" { "pass" } else { "fail" };
                out.push_str(&format!(
                    "<tr><td>{}</td><td>{stage}</td><td class=\"{class}\">{}</td><td>{}</td></tr>\n",
                    index + 1,
                    escape(&s.outcome),
                    escape(&s.detail)
                ));
            }
            None => out.push_str(&format!(
                "<tr><td>{}</td><td>{stage}</td><td class=\"muted\">not reached</td><td></td></tr>\n",
                index + 1
            )),
        }
        let notes = stage_notes(trace, stage, recorded.is_some());
        for note in notes {
            out.push_str(&format!(
                "<tr><td></td><td></td><td colspan=\"2\">{}</td></tr>\n",
                escape(&note)
            ));
        }
    }
    out.push_str("</table>\n");
    out
}

/// One row per budget key the call held: how much was used, and what this
/// hold added or had refused.
fn budget_rows(trace: &DecisionTrace) -> Vec<(String, String)> {
    trace
        .budget_keys
        .iter()
        .map(|b| {
            let what = if b.outcome == "refused" {
                format!("{} of {} used; {} more refused", b.used, b.limit, b.amount)
            } else {
                format!(
                    "{} of {} used with this hold of {}{}",
                    b.used,
                    b.limit,
                    b.amount,
                    b.settled
                        .as_deref()
                        .map(|s| format!(", {s}"))
                        .unwrap_or_default()
                )
            };
            (b.key.clone(), escape(&what))
        })
        .collect()
}

/// One row per journal entry the call read: the tool, its verdict and
/// whether it was performed.
fn journal_rows(trace: &DecisionTrace) -> Vec<(String, String)> {
    trace
        .journal
        .iter()
        .map(|e| {
            (
                e.request_id.clone(),
                escape(&format!(
                    "{}/{} {}{}",
                    e.server,
                    e.tool,
                    e.verdict,
                    if e.performed {
                        ", performed"
                    } else {
                        ", not performed"
                    }
                )),
            )
        })
        .collect()
}

/// The notes under a stage: the guards' answers under the guard and output
/// stages, the share checks under shares, and the output label once the
/// output stage was reached.
fn stage_notes(trace: &DecisionTrace, stage: &str, reached: bool) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    let phase = match stage {
        "guards" => Some("request"),
        "output" => Some("output"),
        _ => None,
    };
    if let Some(phase) = phase {
        for answer in trace.guards.iter().filter(|g| g.phase == phase) {
            notes.push(answer.to_string());
        }
    }
    if stage == "shares" {
        for share in &trace.shares {
            notes.push(format!(
                "{} > {} at {} bps: {}",
                share.parent, share.child, share.child_bps, share.outcome
            ));
        }
    }
    if stage == "output" && reached {
        if let Some(label) = &trace.output_label {
            notes.push(format!(
                "label {label} joined into {}",
                trace.label_writes.join(", ")
            ));
        }
    }
    notes
}
