//! `chio import mcp TOOLS.json --id SERVER [--kernel K] [--out FILE]`,
//! `chio import mcp --command "CMD ARGS..." --id SERVER [--kernel K] [--out FILE]
//! [--timeout-ms N]` and
//! `chio import trace FILE --format mcp|openai|anthropic --out DIR [--id ID]`.
//!
//! `import mcp` reads an MCP `tools/list` result (the JSON-RPC response or its bare
//! result) and prints the `[[servers]]` declaration of a `recorded` server
//! with those tools, their schemas, annotations and digests; with
//! `--command` it starts the MCP server itself and lists its tools
//! (`crate::import_mcp_live`), then reads that result the same way
//! (`chio_arena::scenario::mcp`, which owns the parsing of the untrusted
//! input and the rules every definition must satisfy). A definition
//! carrying a credential is refused before anything is printed, by the
//! scenario loader's inline-secret scan `import trace` passes its scenario
//! through (exit 2, naming the field and the marker). `--out` writes the
//! declaration whole or not at all, through a temporary file beside it.
//! Exit 0 with the declaration, 2 for input it refuses, 3 for a file it
//! cannot write.
//!
//! Both commands read every tool definition with the kernel's
//! prompt-injection reader (tool poisoning): each flagged definition is a
//! warning on standard error naming the tool, the pattern, the rule and the
//! JSON pointer (never the text), and is still declared, with a comment
//! above it; `--deny-poisoned` refuses the input instead (exit 2).
//!
//! `import trace` reads a recorded session (an MCP JSON-RPC log, an OpenAI
//! or an Anthropic transcript) and writes `DIR/scenario.toml` and the
//! agent's prompt file (`chio_arena::scenario::trace`, which owns the
//! parsing, the scenario it becomes and its validation). It writes the
//! prompt first and the scenario last, each whole or not at all, so a
//! `scenario.toml` in DIR is always complete; the same exit codes apply.
//! Neither command writes over the file it reads: an `--out` that would is
//! refused before anything is read (`CHIO-REPORT-PATH`, exit 2).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use chio_arena::output::WriteRefusal;
use chio_arena::scenario::mcp::{checked_declaration, parse_tools_list, ImportProblem};
use chio_arena::scenario::trace::{import_trace, TraceFault, TraceFormat};
use chio_kernel::guards::prompt_injection::DefinitionFinding;

use crate::cli::import::{ImportArgs, ImportCommand, ImportMcpArgs, ImportTraceArgs};
use crate::error::{codes, CliError};
use crate::import_mcp_live::list_tools;

const COMMAND: &str = "import mcp";

/// How long, in milliseconds of wall time, `--command`'s server has to
/// answer the handshake and list its tools unless `--timeout-ms` says.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// Runs `chio import`.
pub fn run(args: &ImportArgs, out: &mut dyn Write) -> Result<(), CliError> {
    match &args.command {
        ImportCommand::Mcp(args) => mcp(args, out),
        ImportCommand::Trace(args) => trace(args),
    }
}

fn mcp(args: &ImportMcpArgs, out: &mut dyn Write) -> Result<(), CliError> {
    use crate::report::paths::{check_reports, Guard, Report};
    let guards: Vec<Guard> = args
        .tools
        .iter()
        .map(|file| Guard::reads(file, "the tools/list result"))
        .collect();
    let written = Report {
        flag: "--out",
        path: args.out.as_deref(),
        example: "server.toml",
    };
    check_reports(COMMAND, &[written], &guards)?;
    let (bytes, source) = match (&args.tools, &args.command) {
        (Some(file), None) => (read_tools_file(file)?, file.display().to_string()),
        (None, Some(command)) => (
            list_tools(
                command,
                Duration::from_millis(args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)),
            )?,
            "the server's tools/list result".to_string(),
        ),
        _ => {
            return Err(CliError::new(
                codes::IMPORT_MCP_SOURCE,
                COMMAND,
                "the tools come from TOOLS.json or from --command, and exactly one is given",
                "pass a saved tools/list result or --command \"CMD ARGS...\", not both",
            ))
        }
    };
    let refused = |problem: ImportProblem| {
        CliError::new(
            codes::IMPORT_TOOLS_LIST,
            COMMAND,
            format!("{source} is refused: {problem}"),
            "docs/scenario-schema.md, \"Declared tools\", says what a definition must be",
        )
    };
    let tools = parse_tools_list(&bytes, &args.id).map_err(refused)?;
    let flagged: Vec<(String, DefinitionFinding)> = tools
        .iter()
        .filter_map(|t| t.poisoning().map(|found| (t.contract.name.clone(), found)))
        .collect();
    // Refused before anything is printed: a declaration carrying a
    // credential is what the scenario loader refuses, and import trace.
    let declaration = checked_declaration(&args.id, &args.kernel, &tools).map_err(refused)?;
    poisoned(COMMAND, &flagged, args.deny_poisoned)?;
    match &args.out {
        None => CliError::print(COMMAND, out, declaration.as_bytes()),
        Some(path) => write_whole(COMMAND, path, declaration.as_bytes()),
    }
}

/// The most bytes a saved `tools/list` result or a trace may hold (64 MiB,
/// as a recording): far above any server's tools or session, and a bound on
/// what reading one costs.
pub const MAX_IMPORT_BYTES: u64 = 64 << 20;

/// The bytes of the file `chio import` reads: a regular file (a link to
/// one is followed; a named pipe or a device is refused unopened) of at
/// most [`MAX_IMPORT_BYTES`].
fn read_import(
    command: &'static str,
    file: &Path,
    what: &str,
    help: &str,
) -> Result<Vec<u8>, CliError> {
    chio_arena::files::read_named(file, MAX_IMPORT_BYTES).map_err(|e| {
        CliError::new(
            codes::IMPORT_UNREADABLE,
            command,
            format!("cannot read {}: {}", file.display(), e.describe(what)),
            help,
        )
    })
}

/// The bytes of a saved `tools/list` result.
fn read_tools_file(file: &Path) -> Result<Vec<u8>, CliError> {
    read_import(
        COMMAND,
        file,
        "a tools/list result",
        "pass a readable regular file (at most 64 MiB) holding the server's tools/list response",
    )
}

fn trace(args: &ImportTraceArgs) -> Result<(), CliError> {
    const TRACE: &str = "import trace";
    let Some(format) = TraceFormat::parse(&args.format) else {
        let known: Vec<&str> = TraceFormat::ALL.iter().map(|f| f.as_str()).collect();
        return Err(CliError::new(
            codes::IMPORT_TRACE_FORMAT,
            TRACE,
            "--format names no trace format this command reads",
            format!("pass --format {}", known.join(", --format ")),
        ));
    };
    check_trace_outputs(TRACE, args)?;
    let bytes = read_import(
        TRACE,
        &args.trace,
        "a trace",
        "pass a readable regular file (at most 64 MiB) holding the recorded trace",
    )?;
    let imported = import_trace(&bytes, format, &args.id).map_err(|e| {
        let code = match e.fault {
            TraceFault::Syntax => codes::IMPORT_TRACE_SYNTAX,
            TraceFault::Shape => codes::IMPORT_TRACE_SHAPE,
            TraceFault::Unmatched => codes::IMPORT_TRACE_UNMATCHED,
            TraceFault::DuplicateId => codes::IMPORT_TRACE_DUPLICATE_ID,
            TraceFault::Arguments => codes::IMPORT_TRACE_ARGUMENTS,
            TraceFault::Tool => codes::IMPORT_TRACE_TOOL,
            TraceFault::Value => codes::IMPORT_TRACE_VALUE,
            TraceFault::Refused => codes::IMPORT_TRACE_REFUSED,
        };
        CliError::new(
            code,
            TRACE,
            format!("{}, {e}", args.trace.display()),
            "docs/scenario-schema.md, \"Imported traces\", says what each format must hold",
        )
    })?;
    poisoned(TRACE, &imported.flagged, args.deny_poisoned)?;
    let prompt = args.out.join(&imported.prompt_ref);
    std::fs::create_dir_all(&args.out).map_err(|e| {
        CliError::new(
            codes::IMPORT_WRITE,
            TRACE,
            format!("cannot make {}: {}", args.out.display(), e.kind()),
            "check that the folder can be made there, or pass another --out",
        )
    })?;
    chio_arena::output::make_folders(&args.out, &prompt)
        .map_err(|e| write_refusal(TRACE, &prompt, &e))?;
    write_whole(TRACE, &prompt, imported.prompt.as_bytes())?;
    write_whole(
        TRACE,
        &args.out.join("scenario.toml"),
        imported.scenario.as_bytes(),
    )
}

/// Refuses, before the trace is read, an `--out` folder whose scenario or
/// prompt file would be the trace itself (`crate::report::paths`).
fn check_trace_outputs(command: &'static str, args: &ImportTraceArgs) -> Result<(), CliError> {
    use crate::report::paths::{check_reports, Guard, Report};
    let scenario = args.out.join("scenario.toml");
    let prompt = args
        .out
        .join(chio_arena::scenario::trace::write::PROMPT_REF);
    let written = [
        Report {
            flag: "--out",
            path: Some(&scenario),
            example: "imported/",
        },
        Report {
            flag: "--out",
            path: Some(&prompt),
            example: "imported/",
        },
    ];
    check_reports(command, &written, &[Guard::reads(&args.trace, "the trace")])?;
    // Both files' destinations and the folders on the way are checked
    // before anything is read or written: a refused one leaves nothing.
    for path in [&prompt, &scenario] {
        chio_arena::output::check_folders(&args.out, path)
            .and_then(|()| chio_arena::output::check_destination(path))
            .map_err(|e| write_refusal(command, path, &e))?;
    }
    Ok(())
}

/// Warns on standard error about each flagged definition (tool, pattern,
/// rule and JSON pointer, never the text), or with `deny` refuses the first
/// before anything is written.
fn poisoned(
    command: &'static str,
    flagged: &[(String, DefinitionFinding)],
    deny: bool,
) -> Result<(), CliError> {
    if let (true, Some((tool, found))) = (deny, flagged.first()) {
        return Err(CliError::new(
            codes::IMPORT_POISONED,
            command,
            format!(
                "tool {tool}: its definition carries a prompt injection: {found}{}",
                match flagged.len() {
                    1 => String::new(),
                    n => format!(" ({} more flagged)", n - 1),
                }
            ),
            "read the definition on the server and remove the hidden instruction, or import without --deny-poisoned and decide on each flagged tool",
        ));
    }
    for (tool, found) in flagged {
        let (tool, found) = (
            crate::term::printable(tool),
            crate::term::printable(&found.to_string()).into_owned(),
        );
        eprintln!("warning: tool {tool}: its definition carries a prompt injection: {found}");
    }
    Ok(())
}

/// Writes `bytes` to `path` whole ([`chio_arena::output::write_whole`]):
/// through a temporary file beside it, renamed over it once flushed, and
/// only over a regular file.
fn write_whole(command: &'static str, path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    chio_arena::output::write_whole(path, bytes, ".chio-import-")
        .map_err(|e| write_refusal(command, path, &e))
}

/// A refused or failed write of `path` as `CHIO-IMPORT-WRITE`.
fn write_refusal(command: &'static str, path: &Path, e: &WriteRefusal) -> CliError {
    let help = match e {
        WriteRefusal::NotRegular(_) => "pass a path that is new or a regular file as --out",
        WriteRefusal::NotFolder { .. } => {
            "replace the link with a real folder, or pass another --out; nothing was written"
        }
        _ => "check that the folder exists and is writable, or pass another --out",
    };
    CliError::new(
        codes::IMPORT_WRITE,
        command,
        format!("cannot write {}: {}", path.display(), e.describe()),
        help,
    )
}
