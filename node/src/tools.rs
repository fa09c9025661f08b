//! Deterministic simulated tool servers.
//!
//! A scenario's tool servers are simulated so a run replays without any live
//! system: a workspace filesystem seeded from fixture files beside the
//! scenario, a publish sink, a test runner and an HTTP sink. Each is a plain
//! state machine over `BTreeMap`s whose answers depend only on the calls it
//! has received, in order. Authorization is not their business: the kernel
//! has already admitted every call that reaches them. A call a server cannot
//! serve (unknown tool, missing file, a path outside its root) is answered
//! with an `{"ok": false, "error": ...}` result, since the authorization
//! verdict already stood; only a broken actor turns into a dispatch failure.
//! The actor that owns a server lives in `actors`.
//!
//! Each server also says how far what it returns can be trusted
//! ([`IntegrityPolicy`]): a performed call's result takes the integrity of
//! the workspace globs its path matches, or else the server's own, and an
//! untrusted result lowers the integrity of whoever reads it.
//!
//! Labels at rest: a server that keeps what a call writes keeps with it the
//! labels the call carried (everything its caller held when admitted,
//! `AdmissionTicket::carried_labels`), and a read of the stored item
//! answers the join of those labels and of what the server's declaration
//! gives the path, so data written by a tainted agent reads back tainted
//! whoever reads it. One rule for every writing tool, in [`Stored`]; a
//! server reseeded from its fixtures reseeds its data and labels together,
//! since the labels live in the same state.
//!
//! A recorded server answers from the answers its scenario records
//! ([`RecordedAnswer`]): a call whose request id is a step an answer names
//! takes that answer, once; any other call takes the first unused answer
//! recorded for its agent, tool and canonical arguments. Which answers are
//! used is the server's state, as a workspace's files are, so a server
//! started afresh (a restarted node) has used none. A call that matches
//! nothing is answered not performed, naming the nearest recorded call of
//! the same tool and the argument that differs, never a value.

use std::collections::{BTreeMap, BTreeSet};

use chio_kernel::glob::Glob;
use chio_kernel::kernel::ToolOutput;
use chio_kernel::label::{Integrity, Label};
use chio_kernel::path::normalize_path;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

mod live;
mod recorded;
mod workspace;

pub use live::{LiveAnswer, LiveServer, LiveTools};
use recorded::recorded_call;
pub use recorded::{AnswerMatch, Caller, RecordedAnswer};
use workspace::{workspace_call, Writer};

/// What a tool server returned for one call, with the information-flow label
/// of what it revealed.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The JSON the caller receives (after the kernel's post-invocation
    /// pipeline).
    pub content: Value,
    /// The classification of what the call revealed, when it revealed
    /// classified content.
    pub label: Option<Label>,
    /// How far what the call returned can be trusted; `Trusted` lowers
    /// nothing.
    pub integrity: Integrity,
    /// Whether the server carried the call out. A result that says it
    /// could not (unknown tool, missing file, a path outside its root) is
    /// not performed, so it never satisfies a session rule's predecessor.
    pub performed: bool,
    /// Whether a server received the call, whatever it answered: its
    /// budget is then spent (`chio_kernel::kernel::ToolOutput::received`).
    /// Every answer of a recorded or live server is one (an answer
    /// recorded `ok = false` too: the server received the call, and may
    /// have acted); the arena's own failure of a simulated server, which
    /// did nothing, and a call no recorded answer matches are not.
    pub received: bool,
}

impl ToolResult {
    fn plain(content: Value) -> Self {
        Self {
            content,
            label: None,
            integrity: Integrity::Trusted,
            performed: true,
            received: true,
        }
    }

    fn failed(message: impl Into<String>) -> Self {
        Self {
            content: json!({"ok": false, "error": message.into()}),
            label: None,
            integrity: Integrity::Trusted,
            performed: false,
            received: false,
        }
    }
}

/// The configuration of a simulated server, resolved from the scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolServerConfig {
    /// A filesystem under `root`, seeded with `files` (absolute path to
    /// UTF-8 content), classifying reads by `labels`.
    Workspace {
        /// The directory every path must stay under.
        root: String,
        /// Seed content, absolute normalised paths to text.
        files: BTreeMap<String, String>,
        /// Glob to label; a read takes the highest label of every glob
        /// its path matches, so declaration order cannot change a result.
        labels: Vec<(String, Label)>,
    },
    /// A sink that records what is published.
    Publish,
    /// A test runner whose listed tests fail.
    TestRunner {
        /// Names of tests that fail when run.
        failing: BTreeSet<String>,
    },
    /// A sink that records outgoing HTTP requests.
    Http,
    /// A server answering what the scenario records.
    Recorded {
        /// The answers, in declaration order.
        answers: Vec<RecordedAnswer>,
        /// Glob to label of an answer to a call whose `path` argument
        /// matches; the highest of every match.
        labels: Vec<(String, Label)>,
    },
    /// The user's bank: it records transfers.
    Bank,
    /// A live MCP server (`chio arena record`): every call is forwarded to
    /// it by the server's actor and answered as a recorded answer is.
    Live {
        /// The connection calls are forwarded through.
        live: LiveServer,
        /// Glob to label of an answer to a call whose `path` argument
        /// matches; the highest of every match.
        labels: Vec<(String, Label)>,
    },
}

/// How far a server's results can be trusted, resolved from the scenario.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IntegrityPolicy {
    /// The integrity of every result no glob decides (default trusted).
    pub default: Integrity,
    /// Workspace only: glob to integrity of a read of a matching path. When
    /// any glob matches, the read takes the lowest integrity among those
    /// that match, so declaration order cannot change a result.
    pub globs: Vec<(String, Integrity)>,
}

/// What [`ToolServer::change_file`] does to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// Leave it as it is (a read).
    Keep,
    /// Write this content.
    Write(String),
    /// Delete it.
    Delete,
}

/// An item a server keeps, with the labels of the call that wrote it
/// (none for a seeded fixture, whose labels come from the declaration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The content.
    pub content: String,
    /// Confidentiality levels and integrity labels (`integrity:untrusted`)
    /// of whoever wrote it.
    pub labels: BTreeSet<String>,
}

impl Stored {
    fn seeded(content: String) -> Self {
        Self {
            content,
            labels: BTreeSet::new(),
        }
    }

    /// The highest confidentiality level among the stored labels.
    fn level(&self) -> Option<Label> {
        self.labels.iter().filter_map(|l| Label::parse(l)).max()
    }

    /// The lowest integrity among the stored labels.
    fn integrity(&self) -> Integrity {
        self.labels
            .iter()
            .filter_map(|l| Integrity::from_label(l))
            .max()
            .unwrap_or_default()
    }
}

/// A simulated tool server's state.
#[derive(Debug, Clone)]
pub struct ToolServer {
    id: String,
    state: ServerState,
    integrity_default: Integrity,
    integrity_globs: Vec<(Glob, Integrity)>,
}

#[derive(Debug, Clone)]
enum ServerState {
    Workspace {
        root: String,
        files: BTreeMap<String, Stored>,
        labels: Vec<(Glob, Label)>,
    },
    Publish {
        posts: Vec<Value>,
    },
    TestRunner {
        failing: BTreeSet<String>,
        runs: u64,
    },
    Http {
        requests: Vec<Value>,
    },
    Recorded {
        answers: Vec<RecordedAnswer>,
        used: Vec<bool>,
        labels: Vec<(Glob, Label)>,
    },
    Bank {
        transfers: Vec<Value>,
    },
    Live {
        live: LiveServer,
        labels: Vec<(Glob, Label)>,
    },
}

impl ToolServer {
    /// Builds a server from its resolved configuration.
    pub fn new(id: impl Into<String>, config: ToolServerConfig) -> Self {
        let state = match config {
            ToolServerConfig::Workspace {
                root,
                files,
                labels,
            } => ServerState::Workspace {
                root,
                files: files
                    .into_iter()
                    .map(|(path, content)| (path, Stored::seeded(content)))
                    .collect(),
                labels: labels
                    .into_iter()
                    .map(|(pattern, label)| (Glob::new(&pattern), label))
                    .collect(),
            },
            ToolServerConfig::Publish => ServerState::Publish { posts: Vec::new() },
            ToolServerConfig::TestRunner { failing } => {
                ServerState::TestRunner { failing, runs: 0 }
            }
            ToolServerConfig::Http => ServerState::Http {
                requests: Vec::new(),
            },
            ToolServerConfig::Recorded { answers, labels } => ServerState::Recorded {
                used: vec![false; answers.len()],
                answers,
                labels: labels
                    .into_iter()
                    .map(|(pattern, label)| (Glob::new(&pattern), label))
                    .collect(),
            },
            ToolServerConfig::Bank => ServerState::Bank {
                transfers: Vec::new(),
            },
            ToolServerConfig::Live { live, labels } => ServerState::Live {
                live,
                labels: labels
                    .into_iter()
                    .map(|(pattern, label)| (Glob::new(&pattern), label))
                    .collect(),
            },
        };
        Self {
            id: id.into(),
            state,
            integrity_default: Integrity::Trusted,
            integrity_globs: Vec::new(),
        }
    }

    /// The same server, declaring the integrity of what it returns.
    pub fn with_integrity(mut self, policy: IntegrityPolicy) -> Self {
        self.integrity_default = policy.default;
        self.integrity_globs = policy
            .globs
            .into_iter()
            .map(|(pattern, level)| (Glob::new(&pattern), level))
            .collect();
        self
    }

    /// The integrity of a call's result: for each path it reveals (the
    /// call's `path`, and every name a listing's `entries` give under it),
    /// the lowest of the globs the path matches, if any matches, or else
    /// the server's own; the lowest of those. A listing naming a file
    /// reveals its name, which whoever wrote the file chose.
    fn integrity_of(&self, arguments: &Value, content: &Value) -> Integrity {
        let paths = revealed_paths(arguments);
        let level = |path: &str| {
            self.integrity_globs
                .iter()
                .filter(|(glob, _)| glob.is_match(path))
                .map(|(_, level)| *level)
                .max()
                .unwrap_or(self.integrity_default)
        };
        // The least trusted of the paths named (each its globs' level, or
        // the server's own where none matches).
        let named = paths
            .iter()
            .map(|path| level(path))
            .max()
            .unwrap_or(self.integrity_default);
        // A listing's entries sit below the folder its `path` names.
        let listed = arguments
            .get("path")
            .and_then(Value::as_str)
            .and_then(|raw| normalize_path(raw).ok());
        let (Some(path), Some(entries)) =
            (listed, content.get("entries").and_then(Value::as_array))
        else {
            return named;
        };
        let folder = format!("{}/", path.trim_end_matches('/'));
        // A listing names its entries, and a folder among them was made by
        // writing the files below it, whose writers chose its name.
        let below: Vec<String> = match &self.state {
            ServerState::Workspace { files, .. } => files
                .keys()
                .filter(|name| name.starts_with(&folder))
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        entries
            .iter()
            .filter_map(Value::as_str)
            .map(|entry| format!("{folder}{entry}"))
            .chain(below)
            .map(|place| level(&place))
            .fold(named, Integrity::max)
    }

    /// The server id calls name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// How many calls a sink or test runner has kept (0 for a workspace).
    #[cfg(test)]
    fn received(&self) -> usize {
        match &self.state {
            ServerState::Publish { posts } => posts.len(),
            ServerState::Http { requests } => requests.len(),
            ServerState::Bank { transfers } => transfers.len(),
            ServerState::TestRunner { runs, .. } => *runs as usize,
            ServerState::Recorded { used, .. } => used.iter().filter(|u| **u).count(),
            ServerState::Workspace { .. } | ServerState::Live { .. } => 0,
        }
    }

    /// Serves one admitted call of `caller`, which carries `carried`: the
    /// labels its caller held, kept with whatever the call writes.
    pub fn call(
        &mut self,
        caller: Caller<'_>,
        tool: &str,
        arguments: &Value,
        carried: &BTreeSet<String>,
    ) -> ToolResult {
        let mut result = match &mut self.state {
            ServerState::Recorded {
                answers,
                used,
                labels,
            } => recorded_call(answers, used, labels, caller, tool, arguments),
            _ => self.serve(tool, arguments, Writer::Call(carried)),
        };
        // A recorded server's failure is the server's own text, released
        // to the agent like its output: it carries the server's integrity.
        // A simulated server's failure is the arena's own message.
        let servers_words = matches!(self.state, ServerState::Recorded { .. });
        // An answer past the bounds a link between node processes carries
        // is not given on any topology: the caller gets a failure naming
        // the bound instead. What the server did stands: a call it carried
        // out stays performed, so its call is spent and its money moved,
        // whatever can be released of its answer.
        if let Some(why) = chio_arena::recording::answer_out_of_bounds(&result.content) {
            let done = if result.performed {
                "the server carried the call out; "
            } else {
                ""
            };
            result = ToolResult {
                performed: result.performed,
                received: result.received,
                ..ToolResult::failed(format!("{done}its answer is withheld: {why}"))
            };
        }
        if result.performed || servers_words {
            result.integrity = result
                .integrity
                .max(self.integrity_of(arguments, &result.content));
        }
        result
    }

    /// Serves the call a kernel admitted, carrying what its caller held,
    /// and answers it as the kernel takes a tool's answer.
    pub fn answer(&mut self, admitted: &chio_kernel::kernel::AdmissionTicket) -> ToolOutput {
        let request = admitted.request();
        tool_output(self.call(
            Caller::of(request),
            &request.tool,
            &request.arguments,
            admitted.carried_labels(),
        ))
    }

    /// Changes the file at `path` outside any call, through the server's
    /// own read, write and delete (the adversary evaluator's fixture edit
    /// and its restore), and answers the content the file had before:
    /// `None` when there was none, or the server is no workspace, which
    /// keeps no files.
    /// An edited file keeps the labels of the file it replaces.
    pub fn change_file(&mut self, path: &str, change: FileChange) -> Option<String> {
        let before = self.serve("read_file", &json!({ "path": path }), Writer::Edit);
        let previous = before
            .content
            .get("content")
            .and_then(Value::as_str)
            .map(str::to_string);
        match change {
            FileChange::Keep => None,
            FileChange::Write(text) => Some(self.serve(
                "write_file",
                &json!({ "path": path, "content": text }),
                Writer::Edit,
            )),
            FileChange::Delete => {
                Some(self.serve("delete_file", &json!({ "path": path }), Writer::Edit))
            }
        };
        previous
    }

    fn serve(&mut self, tool: &str, arguments: &Value, writer: Writer<'_>) -> ToolResult {
        match &mut self.state {
            ServerState::Workspace {
                root,
                files,
                labels,
            } => workspace_call(root, files, labels, tool, arguments, writer),
            ServerState::Publish { posts } => match tool {
                "publish" => match digest(arguments) {
                    Ok(digest) => {
                        posts.push(arguments.clone());
                        ToolResult::plain(json!({"ok": true, "digest": digest}))
                    }
                    Err(refused) => refused,
                },
                other => unknown_tool(other),
            },
            ServerState::TestRunner { failing, runs } => match tool {
                "run_tests" => {
                    *runs += 1;
                    let requested: Vec<String> = match arguments.get("tests") {
                        Some(Value::Array(items)) => items
                            .iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect(),
                        _ => vec!["all".to_string()],
                    };
                    let failed: Vec<&String> = if requested == ["all"] {
                        failing.iter().collect()
                    } else {
                        requested.iter().filter(|t| failing.contains(*t)).collect()
                    };
                    ToolResult::plain(json!({
                        "ok": true,
                        "status": if failed.is_empty() { "pass" } else { "fail" },
                        "failed": failed,
                    }))
                }
                other => unknown_tool(other),
            },
            ServerState::Http { requests } => match tool {
                "http_post" => match digest(arguments) {
                    Ok(digest) => {
                        requests.push(arguments.clone());
                        ToolResult::plain(json!({"ok": true, "status": 200, "digest": digest}))
                    }
                    Err(refused) => refused,
                },
                other => unknown_tool(other),
            },
            // Answered by `recorded_call`, which needs the caller; an edit
            // outside any call finds no file.
            ServerState::Recorded { .. } => {
                ToolResult::failed("a recorded server keeps no files".to_string())
            }
            // Answered by the server's actor, which awaits the live server.
            ServerState::Live { .. } => ToolResult::failed(
                "a live MCP server answers only through its server's actor".to_string(),
            ),
            // Answered from the call alone, like the sinks.
            ServerState::Bank { transfers } => match tool {
                "send_money" => match digest(arguments) {
                    Ok(digest) => {
                        transfers.push(arguments.clone());
                        ToolResult::plain(json!({"ok": true, "status": "sent", "digest": digest}))
                    }
                    Err(refused) => refused,
                },
                other => unknown_tool(other),
            },
        }
    }
}

/// The highest label the `labels` globs give `path`, if any gives one.
/// Every path a call names, normalised: each string the kernel's path
/// guards read as a path (under a path key such as `path`, `paths`, `file`
/// or `source` at any depth, or a value that reads as a path under any
/// key). Labels and integrity globs are matched against all of them, so a
/// file is not read free of its labels by naming it in another field.
pub(crate) fn revealed_paths(arguments: &Value) -> Vec<String> {
    chio_kernel::path::path_arguments(arguments)
        .into_iter()
        .filter_map(|found| normalize_path(&found.raw).ok())
        .collect()
}

pub(crate) fn glob_level(labels: &[(Glob, Label)], path: &str) -> Option<Label> {
    labels
        .iter()
        .filter(|(glob, _)| glob.is_match(path))
        .map(|(_, label)| *label)
        .max()
}

pub(crate) fn unknown_tool(tool: &str) -> ToolResult {
    ToolResult::failed(format!("unknown tool {tool}"))
}

/// What a tool server's answer is to the kernel that dispatched to it.
pub fn tool_output(result: ToolResult) -> ToolOutput {
    ToolOutput {
        content: result.content,
        label: result.label,
        integrity: result.integrity.label(),
        performed: result.performed,
        received: result.received,
    }
}

/// SHA-256 (hex) of what a sink received, or the sink's refusal of
/// arguments with no canonical form (an integer past 2^53): the call is
/// not performed, rather than answered with the digest of something else.
fn digest(value: &Value) -> Result<String, ToolResult> {
    match chio_kernel::canonical::canonical_bytes(value) {
        Ok(bytes) => Ok(hex::encode(Sha256::digest(&bytes))),
        // The message names the rule, never the value.
        Err(_) => Err(ToolResult::failed(
            "the arguments have no canonical JSON form (an integer past 2^53)",
        )),
    }
}

#[cfg(test)]
mod tests;
