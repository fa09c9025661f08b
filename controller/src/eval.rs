//! `chio eval [ENVELOPE.json | - | --from-bundle BUNDLE STEP [--sealed-from FOLDER]] [--json] [--now-unix-secs N] [--write-envelope PATH]`.
//!
//! Portable evaluation from the command line: reads one JSON envelope
//! (request, signed capability, `trusted_issuers_hex`, optional
//! `clock_override_unix_secs` or `clock_override_unix_ms`) from a file or standard input and prints the
//! kernel's capability-only answer (`chio_kernel::portable`). A passing check
//! answers `pending_approval` with `authorized: false`, because guards and
//! tools did not run; a failing one answers `deny` with its reason. Nothing
//! is dispatched or persisted. The command reads no clock: the envelope's
//! override or `--now-unix-secs` supplies it, and an envelope with neither is
//! refused. Every integer of the envelope (and the flag's clock) must be at
//! most 2^53 in magnitude, so the answer prints exactly; a larger one is a
//! named refusal. The envelope is read from a regular file (a link to one
//! is followed; a named pipe or a device is refused unopened) or standard
//! input, at most [`MAX_ENVELOPE_BYTES`]. Exit 0 for any answer, 2 for a
//! malformed envelope.
//! `--from-bundle` builds the envelope of a recorded call instead, once
//! the bundle holds up when re-decided (`crate::eval_bundle`); `--write-envelope` writes the envelope
//! evaluated, canonical, so one input can be changed and evaluated again:
//! whole or not at all (`crate::report`), and never over the envelope read
//! or inside the bundle read (`CHIO-REPORT-PATH`, refused before anything
//! is read).

use std::io::Write;

use chio_kernel::error::EnvelopeError;
use chio_kernel::portable::{evaluate_envelope_at, PortableAnswer};

use crate::cli::EvalArgs;
use crate::error::{codes, CliError};

const COMMAND: &str = "eval";

fn envelope_error(err: &EnvelopeError) -> CliError {
    let code = match err {
        EnvelopeError::NotJson { .. } => codes::EVAL_NOT_JSON,
        EnvelopeError::NotAnObject => codes::EVAL_NOT_AN_OBJECT,
        EnvelopeError::MissingField { .. } => codes::EVAL_MISSING_FIELD,
        EnvelopeError::UnknownField { .. } => codes::EVAL_UNKNOWN_FIELD,
        EnvelopeError::InvalidField { .. } => codes::EVAL_INVALID_FIELD,
        EnvelopeError::MissingClock => {
            return CliError::new(
                codes::EVAL_MISSING_CLOCK,
                COMMAND,
                "the envelope has no clock_override_unix_secs and no --now-unix-secs was given",
                "pass --now-unix-secs N (the evaluation time in Unix seconds), or add clock_override_unix_secs to the envelope",
            )
        }
        EnvelopeError::OutOfRange { .. } => codes::EVAL_OUT_OF_RANGE,
    };
    let text = err.to_string();
    let (message, help) = match text.split_once("; ") {
        Some((m, h)) => (m.to_string(), h.to_string()),
        None => (
            text.clone(),
            "fix the envelope field the message names; docs/portable-evaluation.md shows the format"
                .to_string(),
        ),
    };
    CliError::new(code, COMMAND, message, help)
}

/// The most bytes an envelope may hold (64 MiB), from a file or standard
/// input: far above any request and chain, and a bound on what reading one
/// costs.
pub const MAX_ENVELOPE_BYTES: u64 = 64 << 20;

fn read_input(args: &EvalArgs) -> Result<Vec<u8>, CliError> {
    use chio_arena::files::{read_bounded, read_named};
    let unreadable = |e: chio_arena::files::FileRefusal, what: String| {
        CliError::new(
            codes::EVAL_UNREADABLE,
            COMMAND,
            format!("cannot read {what}: {}", e.describe("an envelope")),
            "pass a readable envelope file (a regular file of at most 64 MiB), or - to read standard input",
        )
    };
    match args.envelope.as_deref() {
        None | Some("-") => read_bounded(std::io::stdin().lock(), MAX_ENVELOPE_BYTES)
            .map_err(|e| unreadable(e, "standard input".to_string())),
        Some(path) => read_named(std::path::Path::new(path), MAX_ENVELOPE_BYTES)
            .map_err(|e| unreadable(e, path.to_string())),
    }
}

/// The answer for a reader; ids and the reason come from the envelope, so
/// each is printed with its control characters escaped.
fn readable(answer: &PortableAnswer) -> String {
    use crate::term::printable;
    let mut text = format!(
        "verdict: {}\nauthorized: {}\n",
        answer.verdict, answer.authorized
    );
    if let Some(reason) = &answer.reason {
        text.push_str(&format!("reason: {}\n", printable(reason)));
    }
    if let Some(index) = answer.matched_grant_index {
        text.push_str(&format!("matched grant: {index}\n"));
    }
    let at = match answer.evaluated_at_unix_ms {
        Some(ms) => format!("{ms} (Unix milliseconds)"),
        None => format!("{} (Unix seconds)", answer.evaluated_at_unix_secs),
    };
    text.push_str(&format!(
        "capability: {}\nrequest: {}\nevaluated at: {at}\n",
        printable(&answer.capability_id),
        printable(&answer.request_id),
    ));
    text
}

/// Marks every credential-shaped part of what the answer echoes from the
/// envelope (the reason, which may quote an argument, the capability id and
/// the request id) by its shape, as an error block does
/// (`crate::error::shown`), in the readable answer and in `--json` alike:
/// never the value.
fn mark_echoed_credentials(answer: &mut PortableAnswer) {
    use chio_kernel::credentials::mark::mark_credentials;
    for text in [&mut answer.capability_id, &mut answer.request_id]
        .into_iter()
        .chain(answer.reason.as_mut())
    {
        *text = mark_credentials(text).into_owned();
    }
}

/// The largest clock `--now-unix-secs` takes: the answer prints it as
/// canonical JSON, which holds integers up to 2^53 exactly.
pub const MAX_NOW_UNIX_SECS: u64 = 1 << 53;

/// Refuses a `--now-unix-secs` the answer could not print, before anything is read.
fn check_now_flag(now_unix_secs: Option<u64>) -> Result<(), CliError> {
    match now_unix_secs {
        Some(now) if now > MAX_NOW_UNIX_SECS => Err(CliError::new(
            codes::FLAG_OUT_OF_RANGE,
            COMMAND,
            "--now-unix-secs must be at most 9007199254740992 (2^53)",
            "pass a clock of at most 2^53 Unix seconds",
        )),
        _ => Ok(()),
    }
}

/// Refuses `--sealed-from` without `--from-bundle`: an envelope is
/// evaluated as written, and only a bundle is re-decided from sealed files.
fn check_sealed_flag(args: &EvalArgs) -> Result<(), CliError> {
    if args.sealed_from.is_some() && args.from_bundle.is_none() {
        return Err(CliError::new(
            codes::SEALED_FROM,
            COMMAND,
            "--sealed-from is given without --from-bundle; an envelope is evaluated as written and reads no sealed file",
            "pass --from-bundle BUNDLE STEP with --sealed-from, or drop --sealed-from",
        ));
    }
    Ok(())
}

/// Refuses a `--write-envelope` path that is the envelope read or lies in
/// the bundle `--from-bundle` reads (`crate::report::paths`), before
/// anything is read.
fn check_envelope_path(args: &EvalArgs) -> Result<(), CliError> {
    use crate::report::paths::{check_reports, Guard, Report};
    let mut guards = Vec::new();
    match (args.envelope.as_deref(), args.from_bundle.as_deref()) {
        (_, Some([bundle, ..])) => {
            guards.push(Guard::reads(bundle, "the bundle --from-bundle reads"))
        }
        (Some(file), None) if file != "-" => guards.push(Guard::reads(file, "the envelope file")),
        _ => {}
    }
    let report = Report {
        flag: "--write-envelope",
        path: args.write_envelope.as_deref(),
        example: "target/envelope.json",
    };
    check_reports(COMMAND, &[report], &guards)
}

/// Runs the command, printing to `out`.
pub fn run(args: &EvalArgs, out: &mut dyn Write) -> Result<(), CliError> {
    check_now_flag(args.now_unix_secs)?;
    check_sealed_flag(args)?;
    check_envelope_path(args)?;
    let bytes = match &args.from_bundle {
        Some(words) => {
            // clap takes exactly two values; anything else is refused as a flag.
            let [dir, step] = words.as_slice() else {
                return Err(CliError::new(
                    codes::FLAG_OUT_OF_RANGE,
                    COMMAND,
                    "--from-bundle takes two values",
                    "pass --from-bundle BUNDLE STEP",
                ));
            };
            let envelope = crate::eval_bundle::envelope_from_bundle(
                std::path::Path::new(dir),
                step,
                args.now_unix_secs,
                args.sealed_from.as_deref(),
            )?;
            chio_kernel::canonical::to_canonical_vec(&envelope)
                .map_err(|e| CliError::from_arena(COMMAND, &chio_arena::ArenaError::from(e)))?
        }
        None => read_input(args)?,
    };
    let mut answer =
        evaluate_envelope_at(&bytes, args.now_unix_secs).map_err(|e| envelope_error(&e))?;
    mark_echoed_credentials(&mut answer);
    // Written once it was evaluated (a refused envelope is never written),
    // as canonical JSON, whatever spelling it was given in.
    if let Some(path) = &args.write_envelope {
        let mut text = chio_kernel::canonical::from_slice_unique(&bytes)
            .ok()
            .and_then(|value| chio_kernel::canonical::to_canonical_vec(&value).ok())
            .ok_or_else(|| {
                CliError::infrastructure(
                    COMMAND,
                    "the evaluated envelope has no canonical form".into(),
                )
            })?;
        text.push(b'\n');
        crate::report::write_report(crate::report::ReportKind::Envelope, path, &text)
            .map_err(|e| e.into_cli(COMMAND))?;
    }
    let text = if args.json {
        // The envelope's integers were range-checked, so this signals a bug.
        let json = answer
            .to_canonical_json()
            .map_err(|e| CliError::from_arena(COMMAND, &chio_arena::ArenaError::from(e)))?;
        crate::term::printable_json(&format!("{json}\n")).into_owned()
    } else {
        readable(&answer)
    };
    CliError::print(COMMAND, out, text.as_bytes())
}
