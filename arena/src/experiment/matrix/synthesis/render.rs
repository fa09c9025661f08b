//! The synthesis of a matrix as people read it: Markdown, and a
//! self-contained HTML page with an inline SVG chart of each cell's gap to
//! the reference. What the synthesis holds and how it is computed live in
//! the parent module.

use super::{GridCell, Synthesis};

fn number(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.4}"))
}

fn signed(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{v:+.4}"))
}

fn load_line(s: &Synthesis) -> String {
    format!(
        "Load: {} runs planned ({} cells x {} repetitions), concurrency {} ({}), timeout {} s per attempt, up to {} attempt(s) per run; {} run(s) needed more than one attempt ({} attempts in all).",
        s.load.runs_planned,
        s.cells.len(),
        s.protocol.repetitions,
        s.load.concurrency,
        s.load.concurrency_source,
        s.load.timeout_seconds,
        s.load.attempts,
        s.runs.retried,
        s.runs.attempts
    )
}

fn grid_entry(c: &GridCell) -> String {
    match c.verdict {
        "reference" => format!("{} (reference)", number(c.criterion_rate)),
        verdict => format!(
            "{}; gap {} [{}, {}] {verdict}",
            number(c.criterion_rate),
            signed(c.gap),
            signed(c.low),
            signed(c.high)
        ),
    }
}

/// The synthesis as Markdown.
pub fn to_markdown(s: &Synthesis) -> String {
    let mut md = format!(
        "# {}\n\n**Hypothesis.** {}\n\n{}\n\nMatrix `{}`, definition `{}` ({} files), design `{}`. {} repetitions per cell, paired seeds. \
         Criterion `{}`, reference `{}`, validity [{}], {} draws, seed {} ({}).\n\n",
        s.title,
        s.hypothesis,
        load_line(s),
        s.matrix_id,
        s.definition_sha256,
        s.definition_files,
        s.design_sha256,
        s.protocol.repetitions,
        s.verdict.criterion,
        s.verdict.reference,
        s.verdict.validity.join(", "),
        s.verdict.draws,
        s.verdict.seed,
        s.verdict.interval
    );
    if let Some(grid) = &s.grid {
        md.push_str(&format!(
            "## Grid: {} (rows) by {} (columns)\n\nEach entry: the cell's {}; its gap to the reference [95% interval] and verdict.\n\n| {} \\ {} |",
            grid.rows_axis, grid.columns_axis, s.verdict.criterion, grid.rows_axis, grid.columns_axis
        ));
        for column in &grid.columns {
            md.push_str(&format!(" {column} |"));
        }
        md.push_str(&format!("\n|---|{}\n", "---|".repeat(grid.columns.len())));
        for (row, entries) in grid.rows.iter().zip(&grid.cells) {
            md.push_str(&format!("| {row} |"));
            for entry in entries {
                md.push_str(&format!(" {} |", grid_entry(entry)));
            }
            md.push('\n');
        }
        md.push('\n');
    }
    md.push_str("## Cells\n\n| cell | judged | criterion rate | adversary actions | escapes | benign allowed | over-denials | expectations held | evaluations | denied / decisions | validation |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for c in &s.cells {
        md.push_str(&format!(
            "| {} | {}/{} | {} | {} | {} | {}/{} | {} | {}/{} | {} | {}/{} | {} |\n",
            c.cell,
            c.judged,
            c.runs,
            number(c.criterion_rate),
            c.totals.adversary_actions,
            c.totals.escapes,
            c.totals.benign_allowed,
            c.totals.benign_calls,
            c.totals.over_denials,
            c.totals.expectations_held,
            c.runs,
            c.totals.evaluations,
            c.totals.denied,
            c.totals.decisions,
            c.validation
        ));
    }
    md.push_str("\n## Gaps to the reference\n\n| cell | gap | 95% interval | verdict |\n|---|---|---|---|\n");
    for g in &s.gaps {
        md.push_str(&format!(
            "| {} | {} | [{}, {}] | {} |\n",
            g.cell,
            signed(g.interval.gap),
            signed(g.interval.low),
            signed(g.interval.high),
            g.interval.verdict
        ));
    }
    md.push_str("\n## Validators\n\n");
    if s.validators.is_empty() {
        md.push_str("None declared.\n");
    } else {
        md.push_str("| metric | thresholds | cell | value | result |\n|---|---|---|---|---|\n");
        for v in &s.validators {
            let thresholds = [("min", v.min), ("max", v.max)]
                .iter()
                .filter_map(|(k, x)| x.map(|x| format!("{k} {x}")))
                .collect::<Vec<_>>()
                .join(", ");
            for c in &v.cells {
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    v.metric,
                    thresholds,
                    c.cell,
                    number(c.value),
                    if c.passed { "passed" } else { "FAILED" }
                ));
            }
        }
    }
    let removed: Vec<String> = s
        .cells
        .iter()
        .flat_map(|c| {
            c.unjudged.iter().filter(|e| e.runs > 0).map(move |e| {
                format!(
                    "- {}: {} run(s) unjudged by {}",
                    c.cell, e.runs, e.condition
                )
            })
        })
        .collect();
    md.push_str("\n## Unjudged runs\n\n");
    if removed.is_empty() {
        md.push_str("None: every run was judged.\n");
    } else {
        md.push_str(&removed.join("\n"));
        md.push('\n');
    }
    md
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An SVG chart: each cell's criterion rate as a bar, and each gap's
/// interval as a whisker around its point on a shared zero line.
pub fn to_svg(s: &Synthesis) -> String {
    let row = 28.0;
    let left = 220.0;
    let width = 360.0;
    let bars = s.cells.len() as f64;
    let gaps = s.gaps.len() as f64;
    let gap_top = 40.0 + bars * row + 40.0;
    let height = gap_top + gaps * row + 30.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n",
        left + width + 120.0,
        left + width + 120.0
    );
    svg.push_str(&format!(
        "<text x=\"10\" y=\"20\" font-weight=\"bold\">{} per cell (0 to 1)</text>\n",
        escape_html(s.verdict.criterion)
    ));
    for (i, c) in s.cells.iter().enumerate() {
        let y = 35.0 + i as f64 * row;
        let rate = c.criterion_rate.unwrap_or(0.0).clamp(0.0, 1.0);
        svg.push_str(&format!(
            "<text x=\"10\" y=\"{:.1}\">{}</text>\n<rect x=\"{left:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"18\" fill=\"#4a7ab5\"/>\n<text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            y + 13.0,
            escape_html(&c.cell),
            rate * width,
            left + rate * width + 6.0,
            y + 13.0,
            number(c.criterion_rate)
        ));
    }
    svg.push_str(&format!(
        "<text x=\"10\" y=\"{:.1}\" font-weight=\"bold\">gap to {} with 95% interval (-1 to +1)</text>\n",
        gap_top - 15.0,
        escape_html(&s.verdict.reference)
    ));
    let zero = left + width / 2.0;
    let x = |v: f64| zero + v.clamp(-1.0, 1.0) * width / 2.0;
    svg.push_str(&format!(
        "<line x1=\"{zero:.1}\" y1=\"{:.1}\" x2=\"{zero:.1}\" y2=\"{:.1}\" stroke=\"#888\"/>\n",
        gap_top - 5.0,
        gap_top + gaps * row
    ));
    for (i, g) in s.gaps.iter().enumerate() {
        let y = gap_top + i as f64 * row + 9.0;
        svg.push_str(&format!(
            "<text x=\"10\" y=\"{:.1}\">{}</text>\n",
            y + 4.0,
            escape_html(&g.cell)
        ));
        if let (Some(lo), Some(hi), Some(gap)) = (g.interval.low, g.interval.high, g.interval.gap) {
            let colour = if g.interval.verdict == "established" {
                "#b5402a"
            } else {
                "#777"
            };
            svg.push_str(&format!(
                "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>\n<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{colour}\"/>\n",
                x(lo),
                x(hi),
                x(gap)
            ));
        }
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            left + width + 10.0,
            y + 4.0,
            g.interval.verdict
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

/// The synthesis as a self-contained HTML page (no external resource).
pub fn to_html(s: &Synthesis) -> String {
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>body{{font-family:sans-serif;margin:2em;max-width:60em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p><strong>Hypothesis.</strong> {}</p>\n<p>{}</p>\n<p>Matrix <code>{}</code>, definition <code>{}</code>. {} repetitions per cell with paired seeds; criterion <code>{}</code>, reference <code>{}</code>, {} draws, seed {}.</p>\n",
        escape_html(&s.title),
        escape_html(&s.title),
        escape_html(&s.hypothesis),
        escape_html(&load_line(s)),
        escape_html(&s.matrix_id),
        s.definition_sha256,
        s.protocol.repetitions,
        s.verdict.criterion,
        escape_html(&s.verdict.reference),
        s.verdict.draws,
        s.verdict.seed
    );
    html.push_str(&to_svg(s));
    if let Some(grid) = &s.grid {
        html.push_str(&format!(
            "<h2>Grid: {} (rows) by {} (columns)</h2>\n<table>\n<tr><th>{} \\ {}</th>",
            escape_html(&grid.rows_axis),
            escape_html(&grid.columns_axis),
            escape_html(&grid.rows_axis),
            escape_html(&grid.columns_axis)
        ));
        for column in &grid.columns {
            html.push_str(&format!("<th>{}</th>", escape_html(column)));
        }
        html.push_str("</tr>\n");
        for (row, entries) in grid.rows.iter().zip(&grid.cells) {
            html.push_str(&format!("<tr><th>{}</th>", escape_html(row)));
            for entry in entries {
                html.push_str(&format!("<td>{}</td>", escape_html(&grid_entry(entry))));
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</table>\n");
    }
    html.push_str("<h2>Cells</h2>\n<table>\n<tr><th>cell</th><th>judged</th><th>criterion rate</th><th>escapes / actions</th><th>over-denials / benign</th><th>evaluations</th></tr>\n");
    for c in &s.cells {
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}/{}</td><td>{}</td><td>{}/{}</td><td>{}/{}</td><td>{}</td></tr>\n",
            escape_html(&c.cell),
            c.judged,
            c.runs,
            number(c.criterion_rate),
            c.totals.escapes,
            c.totals.adversary_actions,
            c.totals.over_denials,
            c.totals.benign_calls,
            c.totals.evaluations
        ));
    }
    html.push_str("</table>\n<h2>Gaps to the reference</h2>\n<table>\n<tr><th>cell</th><th>gap</th><th>95% interval</th><th>verdict</th></tr>\n");
    for g in &s.gaps {
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{}</td></tr>\n",
            escape_html(&g.cell),
            signed(g.interval.gap),
            signed(g.interval.low),
            signed(g.interval.high),
            g.interval.verdict
        ));
    }
    html.push_str("</table>\n");
    if !s.validators.is_empty() {
        html.push_str("<h2>Validators</h2>\n<table>\n<tr><th>metric</th><th>cell</th><th>value</th><th>result</th></tr>\n");
        for v in &s.validators {
            for c in &v.cells {
                html.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                    v.metric,
                    escape_html(&c.cell),
                    number(c.value),
                    if c.passed { "passed" } else { "FAILED" }
                ));
            }
        }
        html.push_str("</table>\n");
    }
    html.push_str("</body>\n</html>\n");
    html
}
