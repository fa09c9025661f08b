//! `chio arena record FILE --out DIR`, `chio arena record FILE --check DIR`
//! and the replay side of `chio arena run FILE --replay-from DIR`.
//!
//! `record` is the only command that starts a scenario's mcp servers. It
//! prints each server's command line, starts each server in its `cwd` (below
//! the scenario's folder) with its `env` added, over stdio through the MCP
//! client `chio import mcp --command` uses (`crate::import_mcp_live`), and
//! refuses to run when a server's `tools/list` differs from the scenario's
//! declaration (`CHIO-ARENA-MCP-TOOLS-DRIFT`, naming the server and the
//! tool). It then runs the scenario embedded, one step at a time and every
//! step whatever its verdict, with each admitted call of an mcp server
//! forwarded to the live server (`live`); a denied call never reaches it.
//! `--out DIR` writes the run's bundle to DIR and the recording beside it,
//! `DIR/recording/<server>.json` (`chio_arena::recording`). `--check DIR`
//! writes the run's bundle to a temporary folder, compares every answer
//! with the recording in DIR by step (`check`), then the two runs' steps as
//! `arena diff` compares two bundles (`chio_arena::bundle::compare_runs`),
//! and exits 1 (`CHIO-ARENA-MCP-ANSWER-DRIFT`) when either drifted.
//!
//! A run replays a recording ([`attach_recordings`]): each server's
//! recording, its tools checked against the declaration, travels in the
//! run's fixture set under the server's id (to node processes too, as
//! fixture files do) and is kept in the bundle under
//! `inputs/recording/`; the node answers each call from it as a recorded
//! server answers a step answer.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chio_arena::bundle::{compare_runs, Bundle};
use chio_arena::model::ServerDecl;
use chio_arena::recording::{
    compare_tools, read_recording, RecordedTool, Recording, RecordingError, RECORDING_FIXTURE,
    RECORDING_FOLDER, RECORDING_SCHEMA_VERSION,
};
use chio_arena::scenario::mcp::parse_tools_list;
use chio_arena::scenario::tools::declared_contract;
use chio_arena::{Scenario, ServerKind};
use chio_node::tools::LiveServer;
use serde_json::json;

use crate::arena_run::{load_for_run, outcome_error, write_table};
use crate::cli::arena::RecordArgs;
use crate::driver::{DispatchMode, RunInputs, RunOptions, RunResult};
use crate::error::{codes, CliError};
use crate::import_mcp_live::{start, stop, Launch};
use crate::term::Palette;

mod check;
mod live;

const COMMAND: &str = "arena record";

/// How long, in milliseconds of wall time, an mcp server has to answer one
/// call unless its `timeout_ms` says.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// The least time, in milliseconds, a server has to start, answer the
/// handshake and list its tools (its `timeout_ms` when longer): starting an
/// interpreter on a busy machine may take seconds a call never should.
pub const MIN_START_TIMEOUT_MS: u64 = 60_000;

/// The scenario's mcp servers, in declaration order.
pub fn mcp_servers(scenario: &Scenario) -> Vec<&ServerDecl> {
    scenario
        .file()
        .servers
        .iter()
        .filter(|s| ServerKind::parse(&s.kind) == Some(ServerKind::Mcp))
        .collect()
}

/// The refusal of a run of a scenario with mcp servers and no recording.
pub fn not_recorded(command: &'static str, scenario: &Scenario) -> CliError {
    let ids: Vec<&str> = mcp_servers(scenario)
        .iter()
        .map(|s| s.id.as_str())
        .collect();
    CliError::new(
        codes::MCP_NOT_RECORDED,
        command,
        format!(
            "the scenario has mcp servers ({}), which a run replays from a recording and never starts",
            ids.join(", ")
        ),
        "record them with chio arena record FILE --out DIR, then run chio arena run FILE --replay-from DIR",
    )
}

/// The tools the scenario declares for `server`, as (name, digest).
fn declared_digests(server: &ServerDecl) -> Vec<(String, String)> {
    server
        .tools
        .iter()
        .flatten()
        .filter_map(|decl| declared_contract(&server.id, decl).ok())
        .map(|(contract, digest)| (contract.name, digest))
        .collect()
}

/// The CLI error of a refused recording.
fn recording_error(command: &'static str, e: &RecordingError) -> CliError {
    match e {
        RecordingError::Tools { .. } => CliError::new(
            codes::MCP_TOOLS_DRIFT,
            command,
            e.to_string(),
            "record the server again with chio arena record FILE --out DIR, or declare its tools again (chio import mcp --command)",
        ),
        _ => CliError::new(
            codes::MCP_RECORDING,
            command,
            e.to_string(),
            "pass the folder chio arena record FILE --out DIR wrote, or record again",
        ),
    }
}

/// Reads the recording of every mcp server of `scenario` from `dir`, each
/// checked against the scenario's declaration.
fn read_all(
    command: &'static str,
    scenario: &Scenario,
    dir: &Path,
) -> Result<Vec<Recording>, CliError> {
    let mut recordings = Vec::new();
    for server in mcp_servers(scenario) {
        let recording =
            read_recording(dir, &server.id).map_err(|e| recording_error(command, &e))?;
        recording
            .check_tools(&declared_digests(server))
            .and_then(|()| recording.check_calls(scenario))
            .map_err(|e| recording_error(command, &e))?;
        recordings.push(recording);
    }
    Ok(recordings)
}

/// Makes a run replay the recordings in `dir` (`--replay-from`): each is
/// sent with the fixtures and kept in the bundle's inputs.
pub fn attach_recordings(
    command: &'static str,
    scenario: &Scenario,
    inputs: &mut RunInputs,
    dir: &Path,
) -> Result<(), CliError> {
    if mcp_servers(scenario).is_empty() {
        return Err(CliError::new(
            codes::MCP_RECORDING,
            command,
            "--replay-from is given, but the scenario has no mcp server to replay",
            "run the scenario without --replay-from",
        ));
    }
    for recording in read_all(command, scenario, dir)? {
        let bytes = recording.to_bytes();
        inputs.files.insert(
            format!(
                "{RECORDING_FOLDER}/{}",
                Recording::file_name(&recording.server)
            ),
            bytes,
        );
        seed(inputs, &recording);
    }
    Ok(())
}

/// Puts `recording` in the run's fixture set under its server's id.
fn seed(inputs: &mut RunInputs, recording: &Recording) {
    let text = String::from_utf8_lossy(&recording.to_bytes()).into_owned();
    inputs.fixtures.servers.insert(
        recording.server.clone(),
        BTreeMap::from([(RECORDING_FIXTURE.to_string(), text)]),
    );
}

/// Runs the command, printing to `out` in `palette`'s colours.
pub fn run(args: &RecordArgs, out: &mut dyn Write, palette: Palette) -> Result<(), CliError> {
    let (scenario, mut inputs) = load_for_run(COMMAND, &args.file)?;
    let servers = mcp_servers(&scenario);
    if servers.is_empty() {
        return Err(CliError::new(
            codes::MCP_NOT_RECORDED,
            COMMAND,
            "the scenario has no mcp server: there is nothing to record",
            "run it with chio arena run FILE",
        ));
    }
    let previous = match &args.check {
        Some(dir) => Some(read_all(COMMAND, &scenario, dir)?),
        None => None,
    };
    let base = args
        .file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let output = |e: std::io::Error| CliError::output(COMMAND, &e);
    for server in &servers {
        // What will run, escaped so a command cannot forge the line, with
        // the environment it sets (a PATH of its own picks another program).
        let command = shell_words::join(server.command.iter().flatten());
        let cwd = server.cwd.as_deref().unwrap_or(".");
        let env: Vec<String> = server
            .env
            .iter()
            .flatten()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        let env = match env.is_empty() {
            true => String::new(),
            false => format!(" with {}", shell_words::join(env)),
        };
        writeln!(
            out,
            "{COMMAND}: server {} runs {} (in {}){}",
            server.id,
            crate::term::printable(&command),
            crate::term::printable(cwd),
            crate::term::printable(&env)
        )
        .map_err(output)?;
    }
    out.flush().map_err(output)?;
    let scratch;
    let dir = match (&args.out, &args.check) {
        (Some(dir), _) => dir.clone(),
        _ => {
            scratch = tempfile::tempdir().map_err(|e| {
                CliError::infrastructure(COMMAND, format!("cannot make a temporary folder: {e}"))
            })?;
            scratch.path().join("bundle")
        }
    };
    let runtime = crate::arena_run::runtime(COMMAND)?;
    let (result, recordings) =
        runtime.block_on(record(&scenario, &mut inputs, &servers, &base, &dir))?;
    match (&args.out, previous) {
        (Some(out_dir), _) => {
            write_recordings(out_dir, &recordings)?;
            let tally = write_table(COMMAND, &scenario, &result, out_dir, palette, out)?;
            for recording in &recordings {
                writeln!(
                    out,
                    "recorded {} call(s) of server {} in {}",
                    recording.calls.len(),
                    recording.server,
                    out_dir
                        .join(RECORDING_FOLDER)
                        .join(Recording::file_name(&recording.server))
                        .display()
                )
                .map_err(output)?;
            }
            outcome_error(COMMAND, &result, &tally)
        }
        (None, Some(previous)) => report_drift(args, &previous, &recordings, &dir, out),
        (None, None) => Ok(()),
    }
}

/// Prints every drift between the `previous` recordings and the new ones,
/// and fails when there is one.
fn report_drift(
    args: &RecordArgs,
    previous: &[Recording],
    now: &[Recording],
    bundle: &Path,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let output = |e: std::io::Error| CliError::output(COMMAND, &e);
    let dir = args.check.as_deref().unwrap_or(Path::new("."));
    let mut found = Vec::new();
    for (before, after) in previous.iter().zip(now) {
        found.extend(check::drifts(before, after));
    }
    for drift in &found {
        writeln!(out, "drift: {drift}").map_err(output)?;
    }
    // What the answers changed downstream, step by step, as `arena diff`
    // compares two bundles: the recorded run's and this one's.
    let steps = match (Bundle::read(dir), Bundle::read(bundle)) {
        (Ok(recorded), Ok(live)) => compare_runs(&recorded.manifest, &live.manifest),
        _ => Vec::new(),
    };
    for step in &steps {
        writeln!(
            out,
            "bundle: step {}: the {} differs{}",
            step.step_id,
            step.what,
            match step.changed_inputs.first() {
                Some(input) => format!(" (first changed input: {input})"),
                None => String::new(),
            }
        )
        .map_err(output)?;
    }
    for step in steps {
        if !found.iter().any(|d| d.step == step.step_id) {
            found.push(check::Drift {
                step: step.step_id,
                server: "-".to_string(),
                what: format!("the run's {} differs", step.what),
            });
        }
    }
    if found.is_empty() {
        writeln!(
            out,
            "no answer drifted from the recording in {}",
            dir.display()
        )
        .map_err(output)?;
        return Ok(());
    }
    let steps: Vec<&str> = found.iter().map(|d| d.step.as_str()).collect();
    Err(CliError::new(
        codes::MCP_ANSWER_DRIFT,
        COMMAND,
        format!(
            "{} answer(s) drifted from the recording in {}: step {}",
            found.len(),
            dir.display(),
            steps.join(", step ")
        ),
        "check what changed in the server or its data; record again with chio arena record FILE --out DIR once the change is intended",
    ))
}

/// The server's working folder, `cwd` below the scenario's folder `base`,
/// refused when it is missing or when a symbolic link on the way leads
/// out of `base` (the loader checks only its text).
fn inside(base: &Path, cwd: &str) -> Result<std::path::PathBuf, CliError> {
    let refuse = |why: String| {
        CliError::new(
            codes::IMPORT_MCP_START,
            COMMAND,
            why,
            "make the server's cwd a folder below the scenario's folder, reached without a symbolic link that leaves it",
        )
    };
    let folder = base.join(cwd);
    let (Ok(real), Ok(root)) = (folder.canonicalize(), base.canonicalize()) else {
        return Err(refuse(format!("the working folder {cwd} does not exist")));
    };
    if !real.starts_with(&root) || !real.is_dir() {
        return Err(refuse(format!(
            "the working folder {cwd} is not a folder below the scenario's folder (a symbolic link leads out of it)"
        )));
    }
    Ok(real)
}

/// Starts every server, checks its tools, runs the scenario live into
/// `dir` and stops the servers; answers the run and each server's
/// recording.
async fn record(
    scenario: &Scenario,
    inputs: &mut RunInputs,
    servers: &[&ServerDecl],
    base: &Path,
    dir: &Path,
) -> Result<(RunResult, Vec<Recording>), CliError> {
    let mut started = Vec::new();
    let mut recordings = Vec::new();
    let mut live = BTreeMap::new();
    let mut logs = Vec::new();
    for server in servers {
        let argv: Vec<String> = server.command.iter().flatten().cloned().collect();
        let Some((program, args)) = argv.split_first() else {
            continue;
        };
        let cwd = match inside(base, server.cwd.as_deref().unwrap_or(".")) {
            Ok(cwd) => cwd,
            Err(e) => {
                stop_all(started).await;
                return Err(e);
            }
        };
        let launch = Launch {
            env: server.env.clone().unwrap_or_default(),
            cwd: Some(cwd),
        };
        let timeout = Duration::from_millis(server.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
        let start_timeout = timeout.max(Duration::from_millis(MIN_START_TIMEOUT_MS));
        let server_live = match start(COMMAND, program, args, &launch, start_timeout).await {
            Ok(server_live) => server_live,
            Err(e) => {
                stop_all(started).await;
                return Err(e);
            }
        };
        let tools = match listed_tools(server, &server_live.tools) {
            Ok(tools) => tools,
            Err(e) => {
                started.push(server_live);
                stop_all(started).await;
                return Err(e);
            }
        };
        let recording = Recording {
            schema_version: RECORDING_SCHEMA_VERSION.to_string(),
            server: server.id.clone(),
            tools,
            calls: Vec::new(),
        };
        seed(inputs, &recording);
        let log = Arc::new(Mutex::new(Vec::new()));
        let calls = live::McpCalls {
            peer: server_live.client.peer().clone(),
            timeout,
            log: Arc::clone(&log),
            server: server.id.clone(),
            contracts: chio_arena::scenario::tools::server_tools(server)
                .unwrap_or_default()
                .into_iter()
                .map(|c| (c.name.clone(), c))
                .collect(),
        };
        live.insert(server.id.clone(), LiveServer(Arc::new(calls)));
        logs.push(log);
        recordings.push(recording);
        started.push(server_live);
    }
    let options = RunOptions {
        keep_going: true,
        dispatch: DispatchMode::OneAtATime,
    };
    let result = crate::driver::run_embedded(scenario, inputs, options, &live, dir).await;
    drop(live);
    stop_all(started).await;
    let result = result
        .map_err(|e| CliError::node(COMMAND, &e))?
        .map_err(|e| CliError::from_arena(COMMAND, &e))?;
    for (recording, log) in recordings.iter_mut().zip(logs) {
        recording.calls = log.lock().map(|calls| calls.clone()).unwrap_or_default();
    }
    Ok((result, recordings))
}

/// The tools a live server listed, each with its digest, once they match
/// the scenario's declaration of `server`.
fn listed_tools(
    server: &ServerDecl,
    tools: &[serde_json::Value],
) -> Result<Vec<RecordedTool>, CliError> {
    let drift = |message: String| {
        CliError::new(
            codes::MCP_TOOLS_DRIFT,
            COMMAND,
            message,
            "declare the server's tools again (chio import mcp --command \"...\" --id SERVER) and check what changed, or pin the server's version",
        )
    };
    let bytes = serde_json::to_vec(&json!({ "tools": tools })).map_err(|e| {
        CliError::infrastructure(COMMAND, format!("cannot write the tools as JSON: {e}"))
    })?;
    let imported = parse_tools_list(&bytes, &server.id).map_err(|problem| {
        drift(format!(
            "server {} lists tools the scenario cannot declare: {problem}",
            server.id
        ))
    })?;
    let listed: Vec<(String, String)> = imported
        .iter()
        .map(|t| (t.contract.name.clone(), t.digest.clone()))
        .collect();
    compare_tools(&server.id, &listed, &declared_digests(server)).map_err(drift)?;
    Ok(imported
        .iter()
        .map(|tool| RecordedTool {
            name: tool.contract.name.clone(),
            digest: tool.digest.clone(),
            definition: tool.hashed_definition(),
        })
        .collect())
}

/// Stops every started server.
async fn stop_all(started: Vec<crate::import_mcp_live::LiveServer>) {
    for server in started {
        let mut child = server.child;
        stop(server.client, &mut child).await;
    }
}

/// Writes each recording into `dir/recording/`, each file whole or not at
/// all (through a temporary file beside it).
fn write_recordings(dir: &Path, recordings: &[Recording]) -> Result<(), CliError> {
    let folder = dir.join(RECORDING_FOLDER);
    let failed = |e: std::io::Error| {
        CliError::new(
            codes::MCP_RECORDING_WRITE,
            COMMAND,
            format!(
                "cannot write the recording in {}: {}",
                folder.display(),
                e.kind()
            ),
            "check that the folder is writable and the disk has room, then record again",
        )
    };
    // A recording no replay could read is refused before any is written.
    for recording in recordings {
        let size = recording.to_bytes().len() as u64;
        if size > chio_arena::recording::MAX_RECORDING_BYTES {
            return Err(CliError::new(
                codes::MCP_RECORDING,
                COMMAND,
                format!(
                    "the recording of server {} would be {size} bytes, over the 64 MiB a replay reads",
                    recording.server
                ),
                "record a scenario whose calls answer less, or split it into several scenarios",
            ));
        }
    }
    for recording in recordings {
        let path = folder.join(Recording::file_name(&recording.server));
        // `recording/` is a real folder of the bundle, never a link.
        chio_arena::output::make_folders(dir, &path).map_err(|e| match e {
            chio_arena::output::WriteRefusal::Write(e) => failed(e),
            other => CliError::new(
                codes::MCP_RECORDING_WRITE,
                COMMAND,
                format!(
                    "cannot write the recording {}: {}",
                    path.display(),
                    other.describe()
                ),
                "replace the link with a real folder, or record into a new --out folder",
            ),
        })?;
        chio_arena::output::write_whole(&path, &recording.to_bytes(), ".chio-recording-").map_err(
            |e| {
                CliError::new(
                    codes::MCP_RECORDING_WRITE,
                    COMMAND,
                    format!("cannot write the recording {}: {}", path.display(), e.describe()),
                    "check that the folder is writable and the disk has room, and that the recording's path is new or a regular file, then record again",
                )
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chio_arena::recording::{RecordedCall, MAX_ANSWER_BYTES};

    // A recording larger than a replay reads (64 MiB) is refused before anything of it is written, naming the server and the size; one under it is written.
    #[test]
    fn a_recording_no_replay_could_read_is_refused() {
        let call = |i: usize| RecordedCall {
            request_id: format!("c{i}"),
            agent: "dev".into(),
            tool: "echo".into(),
            arguments: serde_json::json!({}),
            ok: true,
            output: serde_json::Value::String("a".repeat(MAX_ANSWER_BYTES - 16)),
        };
        let recording = |n: usize| Recording {
            schema_version: chio_arena::recording::RECORDING_SCHEMA_VERSION.into(),
            server: "big".into(),
            tools: Vec::new(),
            calls: (0..n).map(call).collect(),
        };
        let tmp = tempfile::tempdir().unwrap();
        let err = write_recordings(tmp.path(), &[recording(17)]).unwrap_err();
        assert!(
            err.to_string()
                .contains("the recording of server big would be"),
            "{err}"
        );
        assert!(!tmp.path().join(RECORDING_FOLDER).exists());
        write_recordings(tmp.path(), &[recording(2)]).unwrap();
        assert!(tmp.path().join(RECORDING_FOLDER).join("big.json").exists());
    }
}
