//! The recording of a live MCP server (`chio arena record`): the tools it
//! listed, each with its digest, and every call it answered, in the order it
//! answered them, keyed by the call's request id (a scripted step's id).
//!
//! One file per mcp server, `recording/<server>.json` below the recording's
//! folder. A run replays it (`chio arena run --replay-from`): the replayed
//! server answers each call with the recorded answer of its request id, as
//! a recorded server answers a step answer. The file is untrusted input:
//! [`parse_recording`] refuses anything but the shape [`Recording`] writes
//! (an unknown key, a tool or request id twice, a call of a tool it did not
//! list, a digest its definition does not give), with a [`RecordingError`],
//! never a panic, and never quoting a value it read.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scenario::mcp::parse_tools_list;

/// The schema of a recording file.
pub const RECORDING_SCHEMA_VERSION: &str = "chio.arena.mcp-recording/v1";

/// The folder of a recording's files, below the recording's folder (the
/// bundle `chio arena record --out` writes).
pub const RECORDING_FOLDER: &str = "recording";

/// The name of the file a replayed server's recording travels under in a
/// run's fixture set (keyed by the server's id), as fixture files do.
pub const RECORDING_FIXTURE: &str = "recording.json";

/// The largest recording file read (64 MiB).
pub const MAX_RECORDING_BYTES: u64 = 64 * 1024 * 1024;

/// The largest answer a recording holds, as canonical JSON (4 MiB): half
/// the largest message a link between node processes carries, so an answer
/// replays on every topology, not only in one process.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// The deepest nesting of an answer a recording holds (96 levels): a
/// recording file nests each answer a few levels down, and JSON readers
/// stop at 128.
pub const MAX_ANSWER_DEPTH: usize = 96;

/// The deepest nesting of a value a scenario file can hold (64 levels):
/// TOML is read no deeper than 80 levels, and a value sits a few tables
/// down (a step's `arguments`, an answer's `output`). A scenario written
/// from what happened (the MCP edge's session) holds no value nested
/// deeper, or it could not be read back.
pub const MAX_SCENARIO_VALUE_DEPTH: usize = 64;

/// How deeply `value` nests: 0 for a scalar, one more than its deepest
/// member for an array or object.
pub fn nesting(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(nesting).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(nesting).max().unwrap_or(0),
        _ => 0,
    }
}

/// What a recorded or live server's answer gives its caller: `{"ok": ok,
/// "output": output}`, the one shape the node releases and the loader
/// bounds, so an answer the loader reads is one every topology carries.
pub fn answer_content(ok: bool, output: Value) -> Value {
    serde_json::json!({"ok": ok, "output": output})
}

/// Why an answer cannot be recorded, if it cannot: larger than
/// [`MAX_ANSWER_BYTES`] or nested deeper than [`MAX_ANSWER_DEPTH`]. What
/// a server answered beyond these bounds is recorded as a call not
/// performed naming the bound, the same on every topology; a recording
/// holding such an answer is refused.
pub fn answer_out_of_bounds(output: &Value) -> Option<String> {
    if nesting(output) > MAX_ANSWER_DEPTH {
        return Some(format!(
            "the server's answer is nested deeper than the {MAX_ANSWER_DEPTH} levels a tool's answer may hold"
        ));
    }
    // An answer with no canonical form (an integer past 2^53) is the
    // kernel's to withhold (`output-uncanonical`), not a size.
    let size = chio_kernel::canonical::canonical_bytes(output).ok()?.len();
    (size > MAX_ANSWER_BYTES).then(|| {
        format!(
            "the server's answer is {size} bytes, over the {MAX_ANSWER_BYTES} a tool's answer may hold"
        )
    })
}

/// The recording of one mcp server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    /// [`RECORDING_SCHEMA_VERSION`].
    pub schema_version: String,
    /// The server's id in the scenario.
    pub server: String,
    /// The tools the server listed, in its order.
    pub tools: Vec<RecordedTool>,
    /// The calls it answered, in order.
    pub calls: Vec<RecordedCall>,
}

/// One tool the server listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedTool {
    /// The tool's name.
    pub name: String,
    /// The digest of its definition, as `chio import mcp` states it.
    pub digest: String,
    /// The part of the definition the server listed (MCP's JSON) that its
    /// digest covers (`ImportedTool::hashed_definition`): a key outside it
    /// is dropped when the recording is read.
    pub definition: Value,
}

/// One call the server answered (or did not, in time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedCall {
    /// The call's request id: its step's id.
    pub request_id: String,
    /// The calling agent.
    pub agent: String,
    /// The tool called.
    pub tool: String,
    /// The arguments sent.
    pub arguments: Value,
    /// Whether the server carried the call out: false for an MCP error
    /// result (`isError`), a JSON-RPC error or no answer in time.
    pub ok: bool,
    /// What the call answered (see `docs/mcp.md`, "Record and replay").
    pub output: Value,
}

/// Why a recording is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordingError {
    /// The file is missing or cannot be read.
    #[error("the recording of server {server} cannot be read ({reason})")]
    Unreadable {
        /// The server whose recording it is.
        server: String,
        /// The I/O error's kind.
        reason: String,
    },
    /// The file is larger than [`MAX_RECORDING_BYTES`].
    #[error("the recording of server {server} is larger than 64 MiB")]
    TooLarge {
        /// The server whose recording it is.
        server: String,
    },
    /// The file is not JSON of a recording's shape.
    #[error("the recording of server {server} is not a recording: {reason}")]
    Shape {
        /// The server whose recording it is.
        server: String,
        /// Where and what is wrong, never a value.
        reason: String,
    },
    /// The recording holds a call no step of the scenario makes.
    #[error("the recording of server {server} is not this scenario's: {reason}")]
    Calls {
        /// The server whose recording it is.
        server: String,
        /// Which call and why, never a value.
        reason: String,
    },
    /// The recording holds an answer released as carried out (`ok`) that
    /// breaks its tool's output schema: a recorder records such an answer
    /// as a call not performed, so this one was changed by hand.
    #[error(
        "the recording of server {server} holds an answer its tool's declaration refuses: {reason}"
    )]
    Answer {
        /// The server whose recording it is.
        server: String,
        /// Which call (its step) and why, never a value.
        reason: String,
    },
    /// The recording lists other tools than the scenario declares.
    #[error(
        "the recording of server {server} does not match the scenario's declaration: {reason}"
    )]
    Tools {
        /// The server whose recording it is.
        server: String,
        /// Which tool differs and how.
        reason: String,
    },
}

impl Recording {
    /// The recording's file name below [`RECORDING_FOLDER`].
    pub fn file_name(server: &str) -> String {
        format!("{server}.json")
    }

    /// The recording as the file holds it: pretty JSON with a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// The recording a run that forwarded the calls of the steps
    /// `forwarded` (in the order it forwarded them) keeps in its bundle:
    /// only those calls, in that order. An answer the run never used (its
    /// step denied, by a stricter policy or because it was added by hand)
    /// is not kept, and the calls' order is the run's, so a replay of the
    /// run, which keeps its own, names a recording that claims otherwise.
    pub fn forwarded(&self, forwarded: &[String]) -> Recording {
        let calls = forwarded
            .iter()
            .filter_map(|step| self.call(step).cloned())
            .collect();
        Recording {
            calls,
            ..self.clone()
        }
    }

    /// The recorded call of `request_id`, if any.
    pub fn call(&self, request_id: &str) -> Option<&RecordedCall> {
        self.calls.iter().find(|c| c.request_id == request_id)
    }

    /// Checks that the recorded tools are exactly `declared` (name to
    /// digest, as the scenario's declaration gives them), naming the first
    /// tool that differs.
    pub fn check_tools(&self, declared: &[(String, String)]) -> Result<(), RecordingError> {
        compare_tools(&self.server, &self.tool_digests(), declared).map_err(|reason| {
            RecordingError::Tools {
                server: self.server.clone(),
                reason,
            }
        })
    }

    /// Checks that every recorded call is one the scenario makes: its
    /// request id names a call step of `scenario` on this server, by the
    /// recorded agent, of the recorded tool. A call no step makes would
    /// never be answered, so a recording holding one is not the recording
    /// of this scenario (a step removed or moved to another server since,
    /// or calls added by hand) and is refused naming the first such call.
    /// A step the recording holds no call of is no error: its call was
    /// denied when recorded, or is denied now by a stricter policy.
    pub fn check_calls(&self, scenario: &crate::Scenario) -> Result<(), RecordingError> {
        let mut made = std::collections::BTreeMap::new();
        for step in scenario.steps() {
            let step = step.map_err(|e| RecordingError::Shape {
                server: self.server.clone(),
                reason: format!("the scenario's steps cannot be read: {e}"),
            })?;
            if let crate::scenario::Action::Call(call) = &step.action {
                if call.server == self.server {
                    made.insert(
                        step.head.id.clone(),
                        (step.head.agent.clone(), call.tool.clone()),
                    );
                }
            }
        }
        let stray = |call: &RecordedCall, why: &str| RecordingError::Calls {
            server: self.server.clone(),
            reason: format!(
                "its call {} {why}",
                crate::report::printable(&call.request_id)
            ),
        };
        for call in &self.calls {
            match made.get(&call.request_id) {
                None => {
                    return Err(stray(
                        call,
                        "names no call step of the scenario on this server",
                    ))
                }
                Some((agent, _)) if *agent != call.agent => {
                    return Err(stray(call, "was made by another agent than the step's"))
                }
                Some((_, tool)) if *tool != call.tool => {
                    return Err(stray(call, "called another tool than the step calls"))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// The recorded tools as (name, digest), in listed order.
    pub fn tool_digests(&self) -> Vec<(String, String)> {
        self.tools
            .iter()
            .map(|t| (t.name.clone(), t.digest.clone()))
            .collect()
    }
}

/// Compares the tools a server lists (`listed`) with those the scenario
/// declares for it, each as (name, digest): the reason naming the first
/// tool, in name order, that one side has and the other has not, or whose
/// definition differs.
pub fn compare_tools(
    server: &str,
    listed: &[(String, String)],
    declared: &[(String, String)],
) -> Result<(), String> {
    let listed: std::collections::BTreeMap<&str, &str> = listed
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_str()))
        .collect();
    let declared: std::collections::BTreeMap<&str, &str> = declared
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_str()))
        .collect();
    let names: BTreeSet<&str> = listed.keys().chain(declared.keys()).copied().collect();
    for name in names {
        match (listed.get(name), declared.get(name)) {
            (Some(_), None) => {
                return Err(format!(
                    "server {server} lists tool {name}, which the scenario does not declare"
                ))
            }
            (None, Some(_)) => {
                return Err(format!(
                    "the scenario declares tool {name}, which server {server} does not list"
                ))
            }
            (Some(l), Some(d)) if !l.eq_ignore_ascii_case(d) => {
                return Err(format!(
                    "the definition of tool {name} differs: server {server} lists one digesting to {l}, the scenario declares one digesting to {d}"
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The recording's JSON, read with each key once per object; the error
/// names the place, never the text.
fn read_json(bytes: &[u8]) -> Result<Recording, String> {
    let recording: Recording = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "{} at line {}, column {}",
            match e.classify() {
                serde_json::error::Category::Data => "a key or value of the wrong shape",
                serde_json::error::Category::Eof => "the JSON ends early",
                _ => "not JSON",
            },
            e.line(),
            e.column()
        )
    })?;
    // Read again keeping each key once: a definition or an answer giving a
    // key twice would be read one way and digested or replayed another.
    chio_kernel::canonical::from_slice_unique(bytes).map_err(|e| {
        format!(
            "a key given twice in one object at line {}, column {}",
            e.line(),
            e.column()
        )
    })?;
    Ok(recording)
}

/// Reads a recording of server `server` from its bytes, refusing anything
/// a recording does not hold (see the module documentation).
pub fn parse_recording(bytes: &[u8], server: &str) -> Result<Recording, RecordingError> {
    let shape = |reason: String| RecordingError::Shape {
        server: server.to_string(),
        reason,
    };
    if bytes.len() as u64 > MAX_RECORDING_BYTES {
        return Err(RecordingError::TooLarge {
            server: server.to_string(),
        });
    }
    let mut recording = read_json(bytes).map_err(shape)?;
    if recording.schema_version != RECORDING_SCHEMA_VERSION {
        return Err(shape(format!(
            "schema_version is not {RECORDING_SCHEMA_VERSION}"
        )));
    }
    if recording.server != server {
        return Err(shape(
            "it records another server than the one it is read for".to_string(),
        ));
    }
    if let Some((i, why)) = recording
        .calls
        .iter()
        .enumerate()
        .find_map(|(i, call)| answer_out_of_bounds(&call.output).map(|why| (i, why)))
    {
        return Err(shape(format!("calls[{i}]: {why}")));
    }
    let definitions: Vec<Value> = recording
        .tools
        .iter()
        .map(|t| t.definition.clone())
        .collect();
    let listed = serde_json::to_vec(&serde_json::json!({ "tools": definitions }))
        .map_err(|_| shape("its tool definitions cannot be written as JSON".to_string()))?;
    let imported = parse_tools_list(&listed, server)
        .map_err(|problem| shape(format!("its tool definitions are refused: {problem}")))?;
    for (i, (tool, read)) in recording.tools.iter().zip(&imported).enumerate() {
        if tool.name != read.contract.name || !tool.digest.eq_ignore_ascii_case(&read.digest) {
            return Err(shape(format!(
                "tools[{i}] does not state its definition's name and digest"
            )));
        }
    }
    // Only what the digest covers is kept: a key added to a definition
    // (a `title`, `_meta`) is read as if absent, and a run keeps the
    // recording without it, so a replay of that run names the file.
    for (tool, read) in recording.tools.iter_mut().zip(&imported) {
        tool.definition = read.hashed_definition();
    }
    check_outputs(&recording, &imported)?;
    let names: BTreeSet<&str> = recording.tools.iter().map(|t| t.name.as_str()).collect();
    let mut ids = BTreeSet::new();
    for (i, call) in recording.calls.iter().enumerate() {
        if !ids.insert(call.request_id.as_str()) {
            return Err(shape(format!(
                "calls[{i}] repeats the request id of an earlier call"
            )));
        }
        if call.request_id.is_empty() || call.agent.is_empty() {
            return Err(shape(format!(
                "calls[{i}] has an empty request id or agent"
            )));
        }
        if !names.contains(call.tool.as_str()) {
            return Err(shape(format!(
                "calls[{i}] calls a tool the recording does not list"
            )));
        }
        if !call.arguments.is_object() {
            return Err(shape(format!("calls[{i}].arguments is not a JSON object")));
        }
    }
    Ok(recording)
}

/// Refuses a recording holding an `ok` answer that breaks its tool's output
/// schema ([`chio_kernel::contract::output_refusal`], the check a recorder
/// applies when it records), naming the call and its step.
fn check_outputs(
    recording: &Recording,
    tools: &[crate::scenario::mcp::ImportedTool],
) -> Result<(), RecordingError> {
    for (i, call) in recording.calls.iter().enumerate().filter(|(_, c)| c.ok) {
        let Some(tool) = tools.iter().find(|t| t.contract.name == call.tool) else {
            continue;
        };
        if let Some(why) =
            chio_kernel::contract::output_refusal(&recording.server, &tool.contract, &call.output)
        {
            return Err(RecordingError::Answer {
                server: recording.server.clone(),
                reason: format!(
                    "calls[{i}], the answer to step {}, is recorded ok but {why}",
                    crate::report::printable(&call.request_id)
                ),
            });
        }
    }
    Ok(())
}

/// Where the recordings among a bundle's input files `recorded` (below
/// `inputs/`) hold other calls than the ones a replay of its run keeps
/// (`replayed`, [`Recording::forwarded`]), each naming the file and the
/// first step whose call differs: an answer the run never forwarded (its
/// step denied, or no step of it), or calls in another order than the run
/// forwarded them.
pub fn call_differences(
    recorded: &std::collections::BTreeMap<String, Vec<u8>>,
    replayed: &std::collections::BTreeMap<String, Vec<u8>>,
) -> Vec<String> {
    let prefix = format!("{RECORDING_FOLDER}/");
    let mut out = Vec::new();
    for (path, bytes) in recorded {
        let Some(server) = path
            .strip_prefix(&prefix)
            .and_then(|name| name.strip_suffix(".json"))
        else {
            continue;
        };
        let read = |bytes: &[u8]| parse_recording(bytes, server).ok();
        let (Some(ours), Some(theirs)) = (read(bytes), replayed.get(path).and_then(|b| read(b)))
        else {
            continue;
        };
        let ids = |r: &Recording| -> Vec<String> {
            r.calls.iter().map(|c| c.request_id.clone()).collect()
        };
        let (ours, theirs) = (ids(&ours), ids(&theirs));
        let place = format!("{}/{path}", crate::bundle::INPUTS_DIR);
        if let Some(step) = ours.iter().find(|id| !theirs.contains(id)) {
            out.push(format!(
                "{place} call of step {} (the run never forwarded it)",
                crate::report::printable(step)
            ));
        } else if let Some((step, _)) = ours.iter().zip(&theirs).find(|(a, b)| a != b) {
            out.push(format!(
                "{place} call of step {} (the run forwarded the calls in another order)",
                crate::report::printable(step)
            ));
        }
    }
    out
}

/// Reads the recording of server `server` in the folder `dir` (one `chio
/// arena record --out` or a `--replay-from` run wrote), from either place
/// the one mapping of the two layouts names
/// ([`crate::bundle::recording_places`]): beside the inputs,
/// `dir/recording/<server>.json`, or among them,
/// `dir/inputs/recording/<server>.json`. A folder holding both with other
/// bytes is refused, naming both; a missing file names each path tried.
pub fn read_recording(dir: &std::path::Path, server: &str) -> Result<Recording, RecordingError> {
    let unreadable = |reason: String| RecordingError::Unreadable {
        server: server.to_string(),
        reason: crate::report::printable(&reason).into_owned(),
    };
    let (beside, among) = crate::bundle::recording_places(&Recording::file_name(server));
    let (beside, among) = (dir.join(beside), dir.join(among));
    let bytes = match (recording_bytes(&beside), recording_bytes(&among)) {
        (Ok(None), Ok(None)) => {
            return Err(unreadable(format!(
                "no such file: neither {} nor {} exists",
                beside.display(),
                among.display()
            )))
        }
        (Err(e), _) | (Ok(_), Err(e)) => return Err(unreadable(e)),
        (Ok(Some(a)), Ok(Some(b))) if a != b => {
            return Err(unreadable(format!(
                "{} and {} are two different copies of it; a folder keeps one, beside its inputs or among them",
                beside.display(),
                among.display()
            )))
        }
        (Ok(Some(bytes)), _) | (Ok(None), Ok(Some(bytes))) => bytes,
    };
    parse_recording(&bytes, server)
}

/// The bytes of the recording file `path`, up to one byte past
/// [`MAX_RECORDING_BYTES`]; `None` when there is no such file. The error
/// names the path.
fn recording_bytes(path: &std::path::Path) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    let named = |why: String| format!("{}: {why}", path.display());
    // A recording beside a bundle is untrusted too: a link, a named pipe or
    // a device is refused unopened, as every file of a bundle is.
    let file = match crate::bundle::open_regular(path) {
        Ok(file) => file,
        Err(crate::bundle::FileRefusal::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(crate::bundle::FileRefusal::Io(e)) => return Err(named(e.kind().to_string())),
        Err(refusal) => return Err(named(refusal.to_string())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_RECORDING_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| named(e.kind().to_string()))?;
    Ok(Some(bytes))
}

#[cfg(test)]
#[path = "recording_tests.rs"]
mod tests;
