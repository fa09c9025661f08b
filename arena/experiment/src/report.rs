//! The report of a matrix: its hypothesis and what the synthesis
//! concluded in words, a chart of each cell's criterion rate and each
//! gap's interval, the grid of a two-axis matrix with its intervals, the
//! cells, the gaps and the validators. `chio arena matrix` writes it as
//! `synthesis.html`; `chio report` renders it again from `synthesis.json`.
//! Both render a [`Synthesis`], the one just computed or the one [`parse`]
//! reads back from `chio.arena.matrix-synthesis/v2`, so one renderer makes
//! both and the same synthesis gives the same bytes.

use crate::error::ExperimentError;
use crate::synthesis::{GapSummary, Synthesis, SYNTHESIS_SCHEMA_VERSION};
use chio_arena::report::{escape, number, signed, Page};

/// Reads `synthesis.json`'s bytes, refusing another schema.
pub fn parse(bytes: &[u8]) -> Result<Synthesis, ExperimentError> {
    let synthesis: Synthesis =
        serde_json::from_slice(bytes).map_err(|e| ExperimentError::Canonical {
            reason: format!("not a matrix synthesis: {e}"),
        })?;
    if synthesis.schema_version != SYNTHESIS_SCHEMA_VERSION {
        return Err(ExperimentError::Canonical {
            reason: format!(
                "synthesis schema {:?} is not {SYNTHESIS_SCHEMA_VERSION}",
                synthesis.schema_version
            ),
        });
    }
    Ok(synthesis)
}

/// The chart: each cell's criterion rate as a bar, and each gap's
/// interval as a whisker around its point on a shared zero line.
pub fn to_svg(s: &Synthesis) -> String {
    let row = 28.0;
    let left = 220.0;
    let width = 360.0;
    let bars = s.cells.len() as f64;
    let gaps = s.gaps.len() as f64;
    let gap_top = 40.0 + bars * row + 40.0;
    let height = gap_top + gaps * row + 30.0;
    let total = left + width + 120.0;
    let mut svg = format!(
        "<svg id=\"matrix-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{total:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {total:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n"
    );
    svg.push_str(&format!(
        "<text x=\"10\" y=\"20\" font-weight=\"bold\">{} per cell (0 to 1)</text>\n",
        escape(&s.verdict.criterion)
    ));
    for (i, c) in s.cells.iter().enumerate() {
        let y = 35.0 + i as f64 * row;
        let rate = c.criterion_rate.unwrap_or(0.0).clamp(0.0, 1.0);
        svg.push_str(&format!(
            "<text x=\"10\" y=\"{:.1}\">{}</text>\n<rect x=\"{left:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"18\" fill=\"#4a7ab5\"/>\n<text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            y + 13.0,
            escape(&c.cell),
            rate * width,
            left + rate * width + 6.0,
            y + 13.0,
            number(c.criterion_rate)
        ));
    }
    svg.push_str(&format!(
        "<text x=\"10\" y=\"{:.1}\" font-weight=\"bold\">gap to {} with 95% interval (-1 to +1)</text>\n",
        gap_top - 15.0,
        escape(&s.verdict.reference)
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
            escape(&g.cell)
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
            escape(&g.interval.verdict)
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

fn summary(page: &mut Page, s: &Synthesis) {
    let established: Vec<&GapSummary> = s
        .gaps
        .iter()
        .filter(|g| g.interval.verdict == "established")
        .collect();
    let invalid: Vec<&GapSummary> = s
        .gaps
        .iter()
        .filter(|g| g.interval.verdict == "invalid")
        .collect();
    page.raw(&format!(
        "<div id=\"summary\" class=\"summary{}\">\n<p><strong>Hypothesis.</strong> ",
        if invalid.is_empty() { "" } else { " bad" }
    ));
    page.text(&s.hypothesis);
    page.raw("</p>\n<p>");
    page.text(&format!(
        "Matrix {} ran {} cell(s), {} repetition(s) each with paired seeds ({} run(s), {} judged), and compared each cell's {} with the reference cell {} by a {} over {} draws (seed {}). \
         Load: {} run(s) planned, concurrency {} ({}), {} s per attempt, up to {} attempt(s) per run; {} run(s) needed more than one attempt ({} attempts in all).",
        s.matrix_id,
        s.cells.len(),
        s.protocol.repetitions,
        s.runs.scheduled,
        s.runs.judged,
        s.verdict.criterion,
        s.verdict.reference,
        s.verdict.interval,
        s.verdict.draws,
        s.verdict.seed,
        s.load.runs_planned,
        s.load.concurrency,
        s.load.concurrency_source,
        s.load.timeout_seconds,
        s.load.attempts,
        s.runs.retried,
        s.runs.attempts
    ));
    page.raw("</p>\n<p>");
    if established.is_empty() {
        page.text("No cell's gap to the reference is established: every interval includes zero or is undefined.");
    } else {
        let cells: Vec<String> = established
            .iter()
            .map(|g| format!("{} ({})", g.cell, signed(g.interval.gap)))
            .collect();
        page.text(&format!(
            "Established gaps to the reference (the 95% interval excludes zero): {}.",
            cells.join(", ")
        ));
    }
    for g in invalid {
        page.raw("</p>\n<p>");
        page.text(&format!(
            "{} is invalid: {}",
            g.cell,
            g.invalid_because.join("; ")
        ));
    }
    page.raw("</p>\n</div>\n");
}

/// The synthesis as a self-contained HTML page (`synthesis.html`).
pub fn render(s: &Synthesis) -> String {
    let mut page = Page::new();
    page.element("h1", Some("title"), &s.title);
    summary(&mut page, s);
    page.raw(&format!(
        "<p class=\"muted\">definition <code>{}</code></p>\n",
        escape(&s.definition_sha256)
    ));
    page.raw(&to_svg(s));
    grid_section(&mut page, s);
    cells_section(&mut page, s);
    page.raw("<h2>Gaps to the reference</h2>\n");
    let rows: Vec<Vec<String>> = s
        .gaps
        .iter()
        .map(|g| {
            vec![
                escape(&g.cell),
                signed(g.interval.gap),
                format!("[{}, {}]", signed(g.interval.low), signed(g.interval.high)),
                escape(&g.interval.verdict),
            ]
        })
        .collect();
    page.table(
        Some("gaps"),
        &["cell", "gap", "95% interval", "verdict"],
        &rows,
    );
    if !s.validators.is_empty() {
        page.raw("<h2>Validators</h2>\n");
        let rows: Vec<Vec<String>> = s
            .validators
            .iter()
            .flat_map(|v| {
                v.cells.iter().map(move |c| {
                    vec![
                        escape(&v.metric),
                        escape(&c.cell),
                        number(c.value),
                        if c.passed { "passed" } else { "FAILED" }.to_string(),
                    ]
                })
            })
            .collect();
        page.table(
            Some("validators"),
            &["metric", "cell", "value", "result"],
            &rows,
        );
    }
    page.finish("matrix", &s.title)
}

/// Writes the grid, when the matrix has a two-axis grid: each cell's
/// criterion rate, gap to the reference and verdict.
fn grid_section(page: &mut Page, s: &Synthesis) {
    if let Some(grid) = &s.grid {
        page.raw("<h2>");
        page.text(&format!(
            "Grid: {} (rows) by {} (columns)",
            grid.rows_axis, grid.columns_axis
        ));
        page.raw("</h2>\n<p>");
        page.text(&format!(
            "Each entry: the cell's {}; its gap to the reference [95% interval] and verdict.",
            s.verdict.criterion
        ));
        page.raw("</p>\n");
        let mut header = vec![format!("{} \\ {}", grid.rows_axis, grid.columns_axis)];
        header.extend(grid.columns.iter().cloned());
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let rows: Vec<Vec<String>> = grid
            .rows
            .iter()
            .zip(&grid.cells)
            .map(|(row, entries)| {
                let mut cells = vec![format!("<strong>{}</strong>", escape(row))];
                cells.extend(entries.iter().map(|e| escape(&e.entry())));
                cells
            })
            .collect();
        page.table(Some("grid"), &header, &rows);
    }
}

/// Writes the table of cells: runs judged, criterion rate and totals.
fn cells_section(page: &mut Page, s: &Synthesis) {
    page.raw("<h2>Cells</h2>\n");
    let rows: Vec<Vec<String>> = s
        .cells
        .iter()
        .map(|c| {
            vec![
                escape(&c.cell),
                format!("{}/{}", c.judged, c.runs),
                number(c.criterion_rate),
                format!("{}/{}", c.totals.escapes, c.totals.adversary_actions),
                format!("{}/{}", c.totals.over_denials, c.totals.benign_calls),
                c.totals.evaluations.to_string(),
                escape(&c.validation),
            ]
        })
        .collect();
    page.table(
        Some("cells"),
        &[
            "cell",
            "judged",
            "criterion rate",
            "escapes / actions",
            "over-denials / benign",
            "evaluations",
            "validation",
        ],
        &rows,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // Any bytes read as a synthesis are a view or a typed error, never a panic.
        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse(&bytes);
        }

        // An object of the right schema lacking the synthesis's fields is refused, whatever its title.
        #[test]
        fn parsing_arbitrary_objects_never_panics(title in ".*", cells in 0usize..4) {
            let text = serde_json::json!({
                "schema_version": SYNTHESIS_SCHEMA_VERSION,
                "title": title,
                "cells": vec![serde_json::json!({"cell": "x"}); cells],
            })
            .to_string();
            prop_assert!(parse(text.as_bytes()).is_err());
        }
    }

    // Another schema is refused by name.
    #[test]
    fn another_schema_is_refused() {
        let err = parse(b"{\"schema_version\":\"chio.arena.matrix-synthesis/v1\"}").unwrap_err();
        assert!(err.to_string().contains("not a matrix synthesis"), "{err}");
    }
}
