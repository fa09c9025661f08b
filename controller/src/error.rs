//! The CLI's error type, its codes, its exit classes and its one rendering.
//!
//! Every `chio` command reports a failure as a [`CliError`] and the binary
//! prints it with [`CliError::render`] as the block documented in
//! `docs/errors.md`:
//!
//! ```text
//! error[CHIO-SCENARIO-DUPLICATE-ID]: arena validate: duplicate agent id "x" at agents[1].id
//!   help: give each agent a unique id
//!   code: urn:chio:error:scenario:duplicate-id
//!   docs: https://chio.computer/docs/reference/errors#error-scenario-duplicate-id
//! ```
//!
//! A `CliError` is made in one of two ways: from an error of the arena
//! library ([`CliError::from_diagnostic`]), whose code and class its own
//! table declares, or from one of the codes the controller raises itself,
//! each declared once in [`codes`] with its class ([`CliError::new`]). The
//! exit code follows from the class in one function, [`Exit::of`]. The URN
//! and the docs anchor are derived from the code
//! ([`chio_arena::diagnostic`]), so a new code needs only its row and its
//! heading in `docs/errors.md`; [`documented_codes`] is the list that
//! heading check reads.

pub use chio_arena::diagnostic::{docs_anchor, ErrorClass, ERRORS_DOC_URL};
use chio_arena::diagnostic::{docs_url, urn};
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use chio_arena::{ArenaError, Diagnostic};

/// A code the controller raises itself, with the class its exit follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CliCode {
    /// The stable code, such as `CHIO-CLI-FLAG-OUT-OF-RANGE`.
    pub code: &'static str,
    /// Whether the input, an expectation or something outside failed.
    pub class: ErrorClass,
}

/// Declares the controller's own codes, each once, and their list.
macro_rules! cli_codes {
    ($( $(#[$meta:meta])* $name:ident = $code:literal, $class:ident; )*) => {
        /// The codes the controller raises itself, one constant each.
        pub mod codes {
            use super::{CliCode, ErrorClass};
            $(
                $(#[$meta])*
                pub const $name: CliCode = CliCode { code: $code, class: ErrorClass::$class };
            )*
        }

        /// Codes the controller raises itself (the arena's are
        /// `chio_arena::ERROR_CODES` and `chio_arena::EXPERIMENT_ERROR_CODES`);
        /// each has a heading in `docs/errors.md`.
        pub const CLI_ERROR_CODES: &[&str] = &[$($code),*];

        /// The controller's codes with their classes.
        pub const CLI_ERROR_CLASSES: &[(&str, ErrorClass)] =
            &[$(($code, ErrorClass::$class)),*];
    };
}

cli_codes! {
    /// Writing to standard output failed.
    CLI_OUTPUT = "CHIO-CLI-OUTPUT", Infrastructure;
    /// The scenario's world cannot be resolved by a node.
    ARENA_WORLD = "CHIO-ARENA-WORLD", Input;
    /// A step answered another verdict or outcome than it expected.
    UNEXPECTED_VERDICT = "CHIO-ARENA-UNEXPECTED-VERDICT", Expectation;
    /// A step's reason does not contain its `expect_reason`.
    UNEXPECTED_REASON = "CHIO-ARENA-UNEXPECTED-REASON", Expectation;
    /// A node, a store or a peer failed during a run.
    INFRASTRUCTURE = "CHIO-ARENA-INFRASTRUCTURE", Infrastructure;
    /// `arena promote --from-trace` was given a trace it cannot search
    /// again, one its search run again does not give, or one with an
    /// action the scenario cannot rebuild.
    PROMOTE_TRACE = "CHIO-ARENA-PROMOTE-TRACE", Input;
    /// `arena promote`: the scenario does not meet its own steps, so no
    /// case of it shows a fix.
    PROMOTE_SCENARIO_FAILS = "CHIO-ARENA-PROMOTE-SCENARIO-FAILS", Input;
    /// `arena promote --from-trace`: the scenario still admits escapes of
    /// the trace.
    PROMOTE_STILL_ESCAPING = "CHIO-ARENA-PROMOTE-STILL-ESCAPING", Expectation;
    /// A replay decided or read otherwise than the recorded run.
    DRIFT = "CHIO-ARENA-DRIFT", Expectation;
    /// A step named to `arena explain` is not in the bundle (the same code
    /// the arena library gives an unknown step named to the adversaries).
    UNRECORDED_STEP = "CHIO-ARENA-UNKNOWN-STEP", Input;
    /// A topology file is refused.
    TOPOLOGY_INVALID = "CHIO-TOPOLOGY-INVALID", Input;
    /// A node of a topology keeps other authority state than the
    /// trust-control the topology names.
    TOPOLOGY_STATE_NOT_SHARED = "CHIO-TOPOLOGY-STATE-NOT-SHARED", Input;
    /// A serving process is refused at start-up.
    SERVE_CONFIG = "CHIO-SERVE-CONFIG", Input;
    /// A portable-evaluation envelope cannot be read.
    EVAL_UNREADABLE = "CHIO-EVAL-UNREADABLE", Input;
    /// A portable-evaluation envelope is not JSON.
    EVAL_NOT_JSON = "CHIO-EVAL-NOT-JSON", Input;
    /// A portable-evaluation envelope is not a JSON object.
    EVAL_NOT_AN_OBJECT = "CHIO-EVAL-NOT-AN-OBJECT", Input;
    /// A portable-evaluation envelope lacks a field.
    EVAL_MISSING_FIELD = "CHIO-EVAL-MISSING-FIELD", Input;
    /// A portable-evaluation envelope has a field it does not define.
    EVAL_UNKNOWN_FIELD = "CHIO-EVAL-UNKNOWN-FIELD", Input;
    /// A portable-evaluation envelope has a field of the wrong shape.
    EVAL_INVALID_FIELD = "CHIO-EVAL-INVALID-FIELD", Input;
    /// A portable evaluation has no clock.
    EVAL_MISSING_CLOCK = "CHIO-EVAL-MISSING-CLOCK", Input;
    /// A portable-evaluation number is out of range.
    EVAL_OUT_OF_RANGE = "CHIO-EVAL-OUT-OF-RANGE", Input;
    /// `chio eval --from-bundle` names a step it cannot build an envelope from.
    EVAL_FROM_BUNDLE = "CHIO-EVAL-FROM-BUNDLE", Input;
    /// A command-line flag is outside its range.
    FLAG_OUT_OF_RANGE = "CHIO-CLI-FLAG-OUT-OF-RANGE", Input;
    /// A report file (JUnit, SARIF) could not be written.
    REPORT_WRITE = "CHIO-REPORT-WRITE", Infrastructure;
    /// A report path names what its command reads or writes, or another
    /// report's path.
    REPORT_PATH = "CHIO-REPORT-PATH", Input;
    /// The bundle a run wrote could not be read back for its report.
    REPORT_BUNDLE_READ = "CHIO-REPORT-BUNDLE-READ", Infrastructure;
    /// `campaign template --out` names a ledger that already exists.
    LEDGER_EXISTS = "CHIO-CAMPAIGN-LEDGER-EXISTS", Input;
    /// A `SCHEDULE_ID=PATH` argument or an annotation is malformed.
    RECORD_SPEC = "CHIO-CLI-RECORD-SPEC", Input;
    /// The file `chio import mcp` reads cannot be read.
    IMPORT_UNREADABLE = "CHIO-IMPORT-UNREADABLE", Input;
    /// `chio import mcp` is given both TOOLS.json and `--command`, or neither.
    IMPORT_MCP_SOURCE = "CHIO-IMPORT-MCP-SOURCE", Input;
    /// The `--command` of `chio import mcp` cannot be split or started.
    IMPORT_MCP_START = "CHIO-IMPORT-MCP-START", Input;
    /// The MCP server did not answer the handshake and `tools/list` in time.
    IMPORT_MCP_TIMEOUT = "CHIO-IMPORT-MCP-TIMEOUT", Infrastructure;
    /// The MCP server exited before it listed its tools.
    IMPORT_MCP_EXITED = "CHIO-IMPORT-MCP-EXITED", Infrastructure;
    /// The MCP server answered the handshake or `tools/list` with an error
    /// or something the protocol does not allow.
    IMPORT_MCP_PROTOCOL = "CHIO-IMPORT-MCP-PROTOCOL", Input;
    /// `chio mcp`'s authority file cannot be created or read.
    MCP_AUTHORITY = "CHIO-MCP-AUTHORITY", Input;
    /// `chio mcp grant` is given a client key, server or tools it cannot grant.
    MCP_GRANT = "CHIO-MCP-GRANT", Input;
    /// `chio mcp serve` or `chio mcp revoke` is given flags it refuses.
    MCP_CONFIG = "CHIO-MCP-CONFIG", Input;
    /// `chio mcp serve --policy FILE` is refused: unreadable, not TOML of guards, or a guard the kernel refuses.
    MCP_POLICY = "CHIO-MCP-POLICY", Input;
    /// Trust-control refused or did not answer `chio mcp serve` or `chio mcp revoke`.
    MCP_CONTROL = "CHIO-MCP-CONTROL", Infrastructure;
    /// An upstream of `chio mcp serve` did not start or list its tools.
    MCP_UPSTREAM = "CHIO-MCP-UPSTREAM", Infrastructure;
    /// `chio mcp serve --session-out` cannot create its folder.
    MCP_SESSION_WRITE = "CHIO-MCP-SESSION-WRITE", Infrastructure;
    /// An MCP `tools/list` result is refused.
    IMPORT_TOOLS_LIST = "CHIO-IMPORT-TOOLS-LIST", Input;
    /// The declaration `chio import mcp --out` or the scenario `chio import
    /// trace --out` writes could not be written.
    IMPORT_WRITE = "CHIO-IMPORT-WRITE", Infrastructure;
    /// `chio import mcp|trace --deny-poisoned` read a tool definition the
    /// prompt-injection reader flags.
    IMPORT_POISONED = "CHIO-IMPORT-POISONED", Input;
    /// `chio import trace --format` names no format it reads.
    IMPORT_TRACE_FORMAT = "CHIO-IMPORT-TRACE-FORMAT", Input;
    /// A trace is not JSON (or JSON lines), or is truncated.
    IMPORT_TRACE_SYNTAX = "CHIO-IMPORT-TRACE-SYNTAX", Input;
    /// A trace is JSON of another shape than its format's.
    IMPORT_TRACE_SHAPE = "CHIO-IMPORT-TRACE-SHAPE", Input;
    /// A trace holds a result without its call or a call without its result.
    IMPORT_TRACE_UNMATCHED = "CHIO-IMPORT-TRACE-UNMATCHED", Input;
    /// A trace gives one id to two calls or requests, or answers one twice.
    IMPORT_TRACE_DUPLICATE_ID = "CHIO-IMPORT-TRACE-DUPLICATE-ID", Input;
    /// A trace's tool call has arguments that are not a JSON object.
    IMPORT_TRACE_ARGUMENTS = "CHIO-IMPORT-TRACE-ARGUMENTS", Input;
    /// A trace names a tool outside MCP's grammar or defines one the
    /// scenario refuses.
    IMPORT_TRACE_TOOL = "CHIO-IMPORT-TRACE-TOOL", Input;
    /// A trace holds a value a scenario cannot write.
    IMPORT_TRACE_VALUE = "CHIO-IMPORT-TRACE-VALUE", Input;
    /// The scenario written from a trace does not validate.
    IMPORT_TRACE_REFUSED = "CHIO-IMPORT-TRACE-REFUSED", Input;
    /// A replay of a bundle whose run read sealed files is not told where
    /// they are.
    SEALED_FROM = "CHIO-CLI-SEALED-FROM", Input;
    /// `arena init` would overwrite a file that exists.
    INIT_EXISTS = "CHIO-CLI-INIT-EXISTS", Input;
    /// `arena init` could not write its template.
    INIT_WRITE = "CHIO-CLI-INIT-WRITE", Infrastructure;
    /// `arena lint --deny-warnings` found warnings.
    LINT_WARNINGS = "CHIO-CLI-LINT-WARNINGS", Expectation;
    /// `arena matrix`: a validator judged a cell outside its bounds.
    MATRIX_VALIDATION_FAILED = "CHIO-MATRIX-VALIDATION-FAILED", Expectation;
    /// `chio man COMMAND` names no command of `chio`.
    MAN_UNKNOWN = "CHIO-CLI-MAN-UNKNOWN", Input;
    /// `chio report` is given a path that holds none of the results it
    /// renders.
    REPORT_UNKNOWN_INPUT = "CHIO-REPORT-UNKNOWN-INPUT", Input;
    /// A result `chio report` recognised cannot be read: a file missing,
    /// unreadable, not its JSON or of another schema.
    REPORT_INPUT_UNREADABLE = "CHIO-REPORT-INPUT-UNREADABLE", Input;
    /// A search's trace `chio report` reads contradicts itself: its records'
    /// results are not its counts.
    REPORT_INCONSISTENT_TRACE = "CHIO-REPORT-INCONSISTENT-TRACE", Input;
    /// `chio report` is given a campaign ledger without its declaration.
    REPORT_NEEDS_DECLARATION = "CHIO-REPORT-NEEDS-DECLARATION", Input;
    /// `arena run` of a scenario with an mcp server was not given its
    /// recording (`--replay-from`), or `arena record` of one without.
    MCP_NOT_RECORDED = "CHIO-ARENA-MCP-NOT-RECORDED", Input;
    /// A recording (`--replay-from DIR`, `arena record --check DIR`) is
    /// missing, unreadable or refused.
    MCP_RECORDING = "CHIO-ARENA-MCP-RECORDING", Input;
    /// A live server's tools, or a recording's, differ from the scenario's
    /// declaration.
    MCP_TOOLS_DRIFT = "CHIO-ARENA-MCP-TOOLS-DRIFT", Input;
    /// `arena record --check` found answers that drifted from the recording.
    MCP_ANSWER_DRIFT = "CHIO-ARENA-MCP-ANSWER-DRIFT", Expectation;
    /// `arena record --out` could not write the recording.
    MCP_RECORDING_WRITE = "CHIO-ARENA-MCP-RECORDING-WRITE", Infrastructure;
}

/// Every code a `chio` command can print with its class, from the three
/// declarations (scenario, experiment and CLI), sorted by code and without
/// repeats: the list `docs/errors.md` must give a heading and an exit code
/// each. A code two tables declare (the unknown step) keeps its first class;
/// a test checks that they agree.
pub fn documented_codes() -> Vec<(&'static str, ErrorClass)> {
    let mut all: Vec<(&'static str, ErrorClass)> = chio_arena::ERROR_CLASSES
        .iter()
        .chain(chio_experiment::EXPERIMENT_ERROR_CLASSES)
        .chain(CLI_ERROR_CLASSES)
        .copied()
        .collect();
    all.sort_by_key(|(code, _)| *code);
    all.dedup_by_key(|(code, _)| *code);
    all
}

/// The documented process exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the command did what was asked.
    Success,
    /// 1: the command ran but an expected verdict or check did not hold.
    ExpectationFailed,
    /// 2: the input (file, flag, scenario) was refused; nothing was written.
    InvalidInput,
    /// 3: something outside the input failed (output stream, disk, store, peer).
    Infrastructure,
}

impl Exit {
    /// The one classification of failures into exit codes.
    pub fn of(class: ErrorClass) -> Exit {
        match class {
            ErrorClass::Input => Exit::InvalidInput,
            ErrorClass::Expectation => Exit::ExpectationFailed,
            ErrorClass::Infrastructure => Exit::Infrastructure,
        }
    }

    /// The numeric process exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::ExpectationFailed => 1,
            Exit::InvalidInput => 2,
            Exit::Infrastructure => 3,
        }
    }
}

/// Text of an error that may quote input, as it is printed: each
/// credential-shaped part replaced by the mark of its shape
/// (`[REDACTED:github-token]`, by the kernel's one credential detector,
/// `chio_kernel::credentials::mark`), then its control characters and
/// bidirectional overrides escaped (`crate::term::printable`). Every error
/// block goes through here, whichever command raised it, so a key, a
/// pointer or a value quoted before any secret scan read it is never
/// printed.
pub fn shown(text: &str) -> String {
    let marked = chio_kernel::credentials::mark::mark_credentials(text);
    crate::term::printable(&marked).into_owned()
}

/// A typed CLI failure: what to print and how to exit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{command}: {}; {}", shown(.message), shown(.help))]
pub struct CliError {
    /// The stable code, such as `CHIO-CLI-FLAG-OUT-OF-RANGE`.
    pub code: &'static str,
    /// The command that failed, such as `arena validate`.
    pub command: &'static str,
    /// What went wrong, naming the field or flag.
    pub message: String,
    /// How to fix it.
    pub help: String,
    /// The exit code to leave with, which [`Exit::of`] derives from the code's class.
    pub exit: Exit,
    /// Where in the input the error points, as `FILE:LINE:COLUMN`, when it
    /// names a value written there.
    pub location: Option<String>,
}

impl CliError {
    /// A failure under one of the controller's own codes.
    pub fn new(
        code: CliCode,
        command: &'static str,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> Self {
        Self {
            code: code.code,
            command,
            message: message.into(),
            help: help.into(),
            exit: Exit::of(code.class),
            location: None,
        }
    }

    /// Wraps an error of the arena library (a scenario, bundle, campaign or
    /// matrix refusal); its own declaration gives the code and the class.
    pub fn from_diagnostic(command: &'static str, err: &dyn Diagnostic) -> Self {
        Self {
            code: err.code(),
            command,
            message: err.summary(),
            help: err.help(),
            exit: Exit::of(err.class()),
            location: None,
        }
    }

    /// Wraps an arena error (see [`CliError::from_diagnostic`]).
    pub fn from_arena(command: &'static str, err: &ArenaError) -> Self {
        Self::from_diagnostic(command, err)
    }

    /// Wraps a refusal of the scenario file `path`, pointing at the line
    /// and column of the value its field names when that value is written
    /// in the file (the file is read again only to find it; a file that
    /// cannot be read gives no location).
    pub fn from_scenario_file(command: &'static str, path: &Path, err: &ArenaError) -> Self {
        let location = match err {
            // A syntax error carries its own place.
            ArenaError::Syntax { line, column, .. } => {
                Some(format!("{}:{line}:{column}", path.display()))
            }
            _ => err.field().and_then(|field| {
                // Read as the loader reads it: a regular file, bounded.
                let bytes = chio_arena::scenario::load::read_scenario_bytes(path).ok()?;
                let text = String::from_utf8(bytes).ok()?;
                let (line, column) = chio_arena::scenario::locate(&text, field)?;
                Some(format!("{}:{line}:{column}", path.display()))
            }),
        };
        Self {
            location,
            ..Self::from_arena(command, err)
        }
    }

    /// Writing to standard output failed.
    pub fn output(command: &'static str, err: &std::io::Error) -> Self {
        Self::new(
            codes::CLI_OUTPUT,
            command,
            format!("cannot write to standard output: {}", err.kind()),
            "check that the output pipe or file is writable",
        )
    }

    /// A file or folder the command writes could not be written.
    pub fn write_failed(command: &'static str, path: &Path, err: &std::io::Error) -> Self {
        Self::from_arena(
            command,
            &ArenaError::Output {
                path: path.display().to_string(),
                cause: err.kind().to_string(),
            },
        )
    }

    /// Writes a command's output to `out` and flushes it; a failure to
    /// write is [`CliError::output`].
    pub fn print(command: &'static str, out: &mut dyn Write, text: &[u8]) -> Result<(), Self> {
        out.write_all(text)
            .and_then(|()| out.flush())
            .map_err(|e| Self::output(command, &e))
    }

    /// A `--json` document for standard output: [`CliError::canonical_line`]
    /// with every character that drives or reorders a terminal escaped
    /// (`crate::term::printable_json`); it parses to the same value.
    pub fn json_document(command: &'static str, value: &impl Serialize) -> Result<String, Self> {
        Self::canonical_line(command, value)
            .map(|json| crate::term::printable_json(&json).into_owned())
    }

    /// `value` as canonical JSON with a final newline, as files hold it.
    pub fn canonical_line(command: &'static str, value: &impl Serialize) -> Result<String, Self> {
        let mut json = chio_kernel::canonical::to_canonical_string(value)
            .map_err(|e| Self::from_arena(command, &ArenaError::from(e)))?;
        json.push('\n');
        Ok(json)
    }

    /// Wraps a node failure: a world that cannot be resolved is invalid
    /// input, anything else an infrastructure failure.
    pub fn node(command: &'static str, err: &chio_node::NodeError) -> Self {
        if let chio_node::NodeError::AuthorityNotShared { trust_url, .. } = err {
            return Self::new(
                codes::TOPOLOGY_STATE_NOT_SHARED,
                command,
                err.to_string(),
                format!("start every node of the topology with --control-url {trust_url} and that trust-control's token (--control-token-file), not --state-dir"),
            );
        }
        if err.is_world() {
            Self::new(
                codes::ARENA_WORLD,
                command,
                err.to_string(),
                "fix the scenario's world declarations or its fixture files",
            )
        } else {
            Self::infrastructure(command, err.to_string())
        }
    }

    /// Something outside the input failed.
    pub fn infrastructure(command: &'static str, message: String) -> Self {
        Self::new(
            codes::INFRASTRUCTURE,
            command,
            message,
            "check the named node or store and run again; the bundle keeps every receipt so far",
        )
    }

    /// The code's URN, such as `urn:chio:error:scenario:duplicate-id`.
    pub fn urn(&self) -> String {
        urn(self.code)
    }

    /// The code's documentation link.
    pub fn docs_url(&self) -> String {
        docs_url(self.code)
    }

    /// The block printed on standard error: four lines, and a `-->` line
    /// after the first when the error points at a place in the input. The
    /// message, the place and the help may quote input (an id, a file
    /// name, a JSON pointer built from argument keys), so each is printed
    /// as [`shown`]: no error can clear the screen, forge a line or print a
    /// credential.
    pub fn render(&self) -> String {
        let location = match &self.location {
            Some(at) => format!("  --> {}\n", shown(at)),
            None => String::new(),
        };
        format!(
            "error[{}]: {}: {}\n{location}  help: {}\n  code: {}\n  docs: {}\n",
            self.code,
            self.command,
            shown(&self.message),
            shown(&self.help),
            self.urn(),
            self.docs_url()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The rendering matches the documented block byte for byte.
    #[test]
    fn renders_the_documented_block() {
        let err = CliError::new(
            codes::FLAG_OUT_OF_RANGE,
            "arena evolve",
            "--generations must be at most 200",
            "pass --generations 200 or fewer",
        );
        assert_eq!(err.exit, Exit::InvalidInput);
        assert_eq!(
            err.render(),
            "error[CHIO-CLI-FLAG-OUT-OF-RANGE]: arena evolve: --generations must be at most 200\n  help: pass --generations 200 or fewer\n  code: urn:chio:error:cli:flag-out-of-range\n  docs: https://chio.computer/docs/reference/errors#error-cli-flag-out-of-range\n"
        );
    }

    // Input quoted by a message, a place or a help (a file name, a JSON pointer) is printed with its control characters and bidirectional overrides escaped, so it cannot forge a line.
    #[test]
    fn renders_input_printable() {
        let err = CliError {
            location: Some("s\u{1b}[2J.toml:1:1".to_string()),
            ..CliError::new(
                codes::DRIFT,
                "arena replay",
                "file x\nno drift\u{1b}]0;t\u{7}\u{202e}",
                "see \u{9b}",
            )
        };
        let block = err.render();
        assert!(block.starts_with(
            "error[CHIO-ARENA-DRIFT]: arena replay: file x\\u{a}no drift\\u{1b}]0;t\\u{7}\\u{202e}\n  --> s\\u{1b}[2J.toml:1:1\n  help: see \\u{9b}\n"
        ), "{block}");
    }

    // A credential quoted by a message, a place or a help (a key in a JSON pointer, a field path) is printed as the mark of its shape, whichever command raised the error; the rest is printed as it was.
    #[test]
    fn renders_credentials_as_the_mark_of_their_shape() {
        let token = format!("ghp_{}", "a".repeat(36));
        let err = CliError {
            location: Some(format!("trace/{token}.jsonl:1:1")),
            ..CliError::new(
                codes::IMPORT_TRACE_VALUE,
                "import trace",
                format!("t.jsonl, line 1: null (arguments at \"/{token}\")"),
                "field request.arguments.AKIAIOSFODNN7EXAMPLE",
            )
        };
        for text in [err.render(), err.to_string()] {
            assert!(
                !text.contains(&token) && !text.contains("AKIAIOSFODNN7EXAMPLE"),
                "{text}"
            );
        }
        let block = err.render();
        assert!(block.starts_with("error[CHIO-IMPORT-TRACE-VALUE]: import trace: t.jsonl, line 1: null (arguments at \"/[REDACTED:github-token]\")\n  --> trace/[REDACTED:github-token].jsonl:1:1\n  help: field request.arguments.[REDACTED:aws-access-key]\n"), "{block}");
    }

    // A code declared by two tables has one class in both, so its exit does not depend on who raised it.
    #[test]
    fn shared_codes_agree_on_their_class() {
        let all: Vec<(&str, ErrorClass)> = chio_arena::ERROR_CLASSES
            .iter()
            .chain(chio_experiment::EXPERIMENT_ERROR_CLASSES)
            .chain(CLI_ERROR_CLASSES)
            .copied()
            .collect();
        for (code, class) in &all {
            for (other, other_class) in &all {
                if code == other {
                    assert_eq!(class, other_class, "{code}");
                }
            }
        }
    }

    // A refusal of a written value points at its line and column, after the first line.
    #[test]
    fn renders_the_location_of_a_written_value() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let file = tmp.path().join("s.toml");
        std::fs::write(&file, "id = \"x\"\n\n[[agents]]\nid = \"rev/iewer\"\n").expect("write");
        let err = ArenaError::InvalidId {
            field: "agents[0].id".into(),
            value: "rev/iewer".into(),
        };
        let block = CliError::from_scenario_file("arena validate", &file, &err).render();
        let second = block.lines().nth(1).expect("a second line");
        assert_eq!(second, format!("  --> {}:4:6", file.display()));
        let unplaced =
            CliError::from_scenario_file("arena validate", &file, &ArenaError::EmptySteps);
        assert!(unplaced
            .render()
            .lines()
            .nth(1)
            .expect("help")
            .starts_with("  help: "));
    }

    // Each class leaves with its documented exit code, whichever declaration the error comes from.
    #[test]
    fn exit_follows_the_class() {
        let disk = ArenaError::BundleIo {
            path: "out".into(),
            cause: "no space left on device".into(),
        };
        assert_eq!(CliError::from_arena("arena run", &disk).exit.code(), 3);
        let input = ArenaError::EmptySteps;
        assert_eq!(CliError::from_arena("arena run", &input).exit.code(), 2);
        let drift = CliError::new(codes::DRIFT, "arena replay", "x", "y");
        assert_eq!(drift.exit.code(), 1);
    }
}
