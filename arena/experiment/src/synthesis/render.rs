//! The synthesis of a matrix as Markdown. What the synthesis holds and how
//! it is computed live in the parent module; its HTML page
//! (`synthesis.html`) is the matrix report of [`crate::report`].

use std::borrow::Cow;

use serde_json::Value;

use super::{GridCell, Synthesis};
use chio_arena::report::{number, printable, signed};

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

impl GridCell {
    /// The entry of the grid, in the Markdown and the HTML page alike: the
    /// cell's criterion rate, then its gap [interval] and verdict.
    pub fn entry(&self) -> String {
        match self.verdict.as_str() {
            "reference" => format!("{} (reference)", number(self.criterion_rate)),
            verdict => format!(
                "{}; gap {} [{}, {}] {verdict}",
                number(self.criterion_rate),
                signed(self.gap),
                signed(self.low),
                signed(self.high)
            ),
        }
    }
}

/// The synthesis as Markdown, every text of it (title, hypothesis, axis
/// names and values, cell names, reasons) as plain Markdown text
/// (`chio_arena::report::markdown_text`): a matrix file cannot forge a
/// cell of a table or put a link, an image or HTML in the summary.
pub fn to_markdown(s: &Synthesis) -> String {
    match with_texts(s, chio_arena::report::markdown_text) {
        Some(plain) => markdown_of(&plain),
        None => markdown_of(s),
    }
}

/// The synthesis with `shown` applied to every string in it, when it
/// round-trips through JSON (it does).
fn with_texts(s: &Synthesis, shown: fn(&str) -> Cow<'_, str>) -> Option<Synthesis> {
    fn walk(value: &mut Value, shown: fn(&str) -> Cow<'_, str>) {
        match value {
            Value::String(text) => {
                if let Cow::Owned(changed) = shown(text) {
                    *text = changed;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, shown)),
            Value::Object(map) => map.values_mut().for_each(|v| walk(v, shown)),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(s).ok()?;
    walk(&mut value, shown);
    serde_json::from_value::<Synthesis>(value).ok()
}

/// The synthesis as Markdown, its texts as they are.
fn markdown_of(s: &Synthesis) -> String {
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
    grid_markdown(&mut md, s);
    cells_markdown(&mut md, s);
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
    validators_markdown(&mut md, s);
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

/// The Markdown a terminal is given: [`to_markdown`] of the synthesis with
/// every text in it (title, hypothesis, axis names and values, cell names,
/// reasons) made printable by `chio_arena::report::printable`, so an escape
/// sequence from a matrix file is shown, never acted on. `synthesis.md`
/// keeps the text as written; text without such characters reads the same.
pub fn to_printable_markdown(s: &Synthesis) -> String {
    /// Plain Markdown text, then printable.
    fn shown(text: &str) -> Cow<'_, str> {
        match chio_arena::report::markdown_text(text) {
            Cow::Borrowed(plain) => printable(plain),
            Cow::Owned(plain) => Cow::Owned(printable(&plain).into_owned()),
        }
    }
    match with_texts(s, shown) {
        Some(shown) => markdown_of(&shown),
        // A synthesis that does not round-trip is shown line by line.
        None => to_markdown(s)
            .lines()
            .map(|line| format!("{}\n", printable(line)))
            .collect(),
    }
}

/// The grid section, when the matrix has a two-axis grid: each cell's
/// criterion rate, gap to the reference and verdict.
fn grid_markdown(md: &mut String, s: &Synthesis) {
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
                md.push_str(&format!(" {} |", entry.entry()));
            }
            md.push('\n');
        }
        md.push('\n');
    }
}

/// The table of cells: runs judged, criterion rate and totals.
fn cells_markdown(md: &mut String, s: &Synthesis) {
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
}

/// The validators section: each declared metric's thresholds and result
/// per cell.
fn validators_markdown(md: &mut String, s: &Synthesis) {
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
}
