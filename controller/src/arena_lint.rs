//! `chio arena lint FILE [--json] [--deny-warnings]`.
//!
//! Loads the scenario with the same loader `arena validate` uses (a file
//! that does not validate is refused with the validator's error and exit
//! 2), then prints the warnings of [`chio_arena::scenario::lint`]: one block
//! per warning, each naming its code, the field path, the file position,
//! why it is probably wrong and how to fix it, and a last line counting
//! them (`no warnings` when there are none). Warnings exit 0 unless
//! `--deny-warnings` is given, which makes them exit 1. With `--json` it
//! prints the canonical document `chio.arena.lint/v1` instead. It writes
//! nothing but standard output.

use std::io::Write;

use chio_arena::load_scenario;
use chio_arena::scenario::lint::{lint, lint_anchor, LintWarning};
use serde::Serialize;

use crate::cli::arena::LintArgs;
use crate::error::{codes, CliError, ERRORS_DOC_URL};

const COMMAND: &str = "arena lint";

/// The schema of the `--json` document.
pub const LINT_SCHEMA_VERSION: &str = "chio.arena.lint/v1";

/// One warning as the `--json` document gives it.
#[derive(Serialize)]
struct JsonWarning<'a> {
    code: &'a str,
    column: Option<usize>,
    docs: String,
    field: &'a str,
    help: &'a str,
    line: Option<usize>,
    message: &'a str,
}

#[derive(Serialize)]
struct LintReport<'a> {
    scenario_id: &'a str,
    schema_version: &'static str,
    warnings: Vec<JsonWarning<'a>>,
}

/// Runs the command, printing to `out`.
pub fn run(args: &LintArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let scenario = load_scenario(&args.file)
        .map_err(|e| CliError::from_scenario_file(COMMAND, &args.file, &e))?;
    let warnings = lint(&scenario).map_err(|e| CliError::from_arena(COMMAND, &e))?;
    // Read again only to point at lines, as a refusal does; unreadable means no positions.
    let text = std::fs::read_to_string(&args.file).unwrap_or_default();
    let place = |w: &LintWarning| chio_arena::scenario::locate(&text, &w.pointer());
    let printed = if args.json {
        let report = LintReport {
            scenario_id: scenario.id(),
            schema_version: LINT_SCHEMA_VERSION,
            warnings: warnings
                .iter()
                .map(|w| {
                    let at = place(w);
                    JsonWarning {
                        code: w.code,
                        column: at.map(|(_, c)| c),
                        docs: docs_url(w.code),
                        field: &w.field,
                        help: &w.help,
                        line: at.map(|(l, _)| l),
                        message: &w.message,
                    }
                })
                .collect(),
        };
        CliError::json_document(COMMAND, &report)?
    } else {
        let mut s = String::new();
        for w in &warnings {
            // A field and a message may quote the scenario's text.
            s.push_str(&format!(
                "warning[{}]: {}: {}\n",
                w.code,
                crate::term::printable(&w.field),
                crate::term::printable(&w.message)
            ));
            if let Some((line, column)) = place(w) {
                s.push_str(&format!("  --> {}:{line}:{column}\n", args.file.display()));
            }
            s.push_str(&format!("  help: {}\n", crate::term::printable(&w.help)));
            s.push_str(&format!("  docs: {}\n", docs_url(w.code)));
        }
        match warnings.len() {
            0 => s.push_str(&format!("scenario {}: no warnings\n", scenario.id())),
            1 => s.push_str(&format!("scenario {}: 1 warning\n", scenario.id())),
            n => s.push_str(&format!("scenario {}: {n} warnings\n", scenario.id())),
        }
        s
    };
    CliError::print(COMMAND, out, printed.as_bytes())?;
    if args.deny_warnings && !warnings.is_empty() {
        return Err(CliError::new(
            codes::LINT_WARNINGS,
            COMMAND,
            format!(
                "{} lint warning(s) in {} and --deny-warnings is set",
                warnings.len(),
                args.file.display()
            ),
            "fix each warning printed above, or drop --deny-warnings to let warnings pass",
        ));
    }
    Ok(())
}

/// The link to a lint code's heading in `docs/errors.md`.
fn docs_url(code: &str) -> String {
    format!("{ERRORS_DOC_URL}#{}", lint_anchor(code))
}
