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
use chio_kernel::label::{Integrity, Label};
use chio_kernel::path::normalize_path;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

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
}

impl ToolResult {
    fn plain(content: Value) -> Self {
        Self {
            content,
            label: None,
            integrity: Integrity::Trusted,
            performed: true,
        }
    }

    fn failed(message: impl Into<String>) -> Self {
        Self {
            content: json!({"ok": false, "error": message.into()}),
            label: None,
            integrity: Integrity::Trusted,
            performed: false,
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
}

/// Which calls a recorded answer answers.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerMatch {
    /// The call of this step: its request id is the step id.
    Step(String),
    /// A call by this agent of this tool with these arguments, compared as
    /// canonical JSON.
    Call {
        /// The calling agent.
        agent: String,
        /// The tool called.
        tool: String,
        /// The arguments' canonical JSON.
        arguments: String,
    },
}

/// One answer a recorded server gives.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedAnswer {
    /// Which call it answers.
    pub matches: AnswerMatch,
    /// Whether the call is carried out (`ok`); an answer that is not is
    /// answered as a failure, not performed.
    pub ok: bool,
    /// What the server answers.
    pub output: Value,
}

/// Who makes a call, as the server sees it: the request id (a scripted
/// step's id, or an adversary's own) and the calling agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller<'a> {
    /// The request's id.
    pub request_id: &'a str,
    /// The calling agent's id.
    pub agent: &'a str,
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

    /// The integrity of a performed call's result: the lowest of the globs
    /// the call's path matches, if any matches, or else the server's own.
    fn integrity_of(&self, arguments: &Value) -> Integrity {
        let path = arguments
            .get("path")
            .and_then(Value::as_str)
            .and_then(|raw| normalize_path(raw).ok());
        let matched = path.and_then(|path| {
            self.integrity_globs
                .iter()
                .filter(|(glob, _)| glob.is_match(&path))
                .map(|(_, level)| *level)
                .max()
        });
        matched.unwrap_or(self.integrity_default)
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
            ServerState::Workspace { .. } => 0,
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
        if result.performed {
            result.integrity = result.integrity.max(self.integrity_of(arguments));
        }
        result
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

/// The answer of a recorded server to one call: the unused answer of the
/// call's step, else the first unused answer recorded for its agent, tool
/// and canonical arguments, else a failure naming the nearest recorded
/// call of the tool.
fn recorded_call(
    answers: &[RecordedAnswer],
    used: &mut [bool],
    labels: &[(Glob, Label)],
    caller: Caller<'_>,
    tool: &str,
    arguments: &Value,
) -> ToolResult {
    let canonical = match chio_kernel::canonical::canonical_bytes(arguments) {
        Ok(bytes) => String::from_utf8(bytes).unwrap_or_default(),
        Err(_) => {
            return ToolResult::failed(
                "the arguments have no canonical JSON form (an integer past 2^53)",
            )
        }
    };
    let unused = |i: &usize| !used.get(*i).copied().unwrap_or(true);
    let by_step = (0..answers.len()).filter(unused).find(
        |i| matches!(&answers[*i].matches, AnswerMatch::Step(step) if step == caller.request_id),
    );
    let by_call = || {
        (0..answers.len()).filter(unused).find(|i| {
            matches!(&answers[*i].matches, AnswerMatch::Call { agent, tool: t, arguments: a }
                if agent == caller.agent && t == tool && *a == canonical)
        })
    };
    let Some(index) = by_step.or_else(by_call) else {
        return ToolResult::failed(unmatched(answers, used, caller, tool, arguments));
    };
    if let Some(slot) = used.get_mut(index) {
        *slot = true;
    }
    let answer = &answers[index];
    let path = arguments
        .get("path")
        .and_then(Value::as_str)
        .and_then(|raw| normalize_path(raw).ok());
    let label = path.and_then(|path| {
        labels
            .iter()
            .filter(|(glob, _)| glob.is_match(&path))
            .map(|(_, label)| *label)
            .max()
    });
    ToolResult {
        content: json!({"ok": answer.ok, "output": answer.output}),
        label: label.filter(|_| answer.ok),
        integrity: Integrity::Trusted,
        performed: answer.ok,
    }
}

/// Why a call matches no recorded answer, naming the nearest recorded call
/// of the same tool by its step or its agent and the first argument key
/// that differs; never a value, which could be a secret.
fn unmatched(
    answers: &[RecordedAnswer],
    used: &[bool],
    caller: Caller<'_>,
    tool: &str,
    arguments: &Value,
) -> String {
    let head = format!(
        "no recorded answer matches this call of {tool} by {}",
        caller.agent
    );
    let mut nearest: Option<(usize, usize, String)> = None;
    for (i, answer) in answers.iter().enumerate() {
        let AnswerMatch::Call {
            agent,
            tool: t,
            arguments: recorded,
        } = &answer.matches
        else {
            continue;
        };
        if t != tool {
            continue;
        }
        let recorded: Value = serde_json::from_str(recorded).unwrap_or(Value::Null);
        let (count, first) = differing_keys(&recorded, arguments);
        let already = used.get(i).copied().unwrap_or(false);
        let why = match (agent == caller.agent, first, already) {
            (true, None, true) => "its one answer is used already".to_string(),
            (true, Some(key), _) => format!("argument {key} differs"),
            (true, None, false) => "the arguments differ".to_string(),
            (false, Some(key), _) => {
                format!("it is recorded for agent {agent}, and argument {key} differs")
            }
            (false, None, _) => format!("it is recorded for agent {agent}"),
        };
        let rank = count + usize::from(agent != caller.agent) * 1000 + usize::from(already);
        if nearest.as_ref().is_none_or(|(best, _, _)| rank < *best) {
            nearest = Some((rank, i, why));
        }
    }
    let step_of = answers
        .iter()
        .any(|a| matches!(&a.matches, AnswerMatch::Step(s) if s == caller.request_id));
    match nearest {
        Some((_, i, why)) => format!(
            "{head}: the nearest recorded call is answers[{i}] ({why}); record an answer for this call"
        ),
        None if step_of => format!(
            "{head}: the answer of step {} is used already; record an answer for this call",
            caller.request_id
        ),
        None => format!("{head}: no call of {tool} is recorded; record an answer for this call"),
    }
}

/// How many top-level argument keys differ between `recorded` and `sent`
/// (present in one only, or with other values), and the first of them in
/// key order.
fn differing_keys(recorded: &Value, sent: &Value) -> (usize, Option<String>) {
    let empty = serde_json::Map::new();
    let a = recorded.as_object().unwrap_or(&empty);
    let b = sent.as_object().unwrap_or(&empty);
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let differ: Vec<&String> = keys
        .into_iter()
        .filter(|k| {
            let (x, y) = (a.get(*k), b.get(*k));
            match (x, y) {
                (Some(x), Some(y)) => {
                    chio_kernel::canonical::canonical_bytes(x).ok()
                        != chio_kernel::canonical::canonical_bytes(y).ok()
                }
                _ => true,
            }
        })
        .collect();
    (differ.len(), differ.first().map(|k| (*k).clone()))
}

/// Who writes what a server keeps: an admitted call, with the labels it
/// carried, or a fixture edit outside any call, which keeps the labels of
/// the item it replaces.
#[derive(Debug, Clone, Copy)]
enum Writer<'a> {
    Call(&'a BTreeSet<String>),
    Edit,
}

impl Writer<'_> {
    /// The labels an item written over `previous` keeps.
    fn labels(self, previous: Option<&Stored>) -> BTreeSet<String> {
        match self {
            Writer::Call(carried) => carried.clone(),
            Writer::Edit => previous.map(|p| p.labels.clone()).unwrap_or_default(),
        }
    }
}

fn unknown_tool(tool: &str) -> ToolResult {
    ToolResult::failed(format!("unknown tool {tool}"))
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

fn workspace_call(
    root: &str,
    files: &mut BTreeMap<String, Stored>,
    labels: &[(Glob, Label)],
    tool: &str,
    arguments: &Value,
    writer: Writer<'_>,
) -> ToolResult {
    let raw = match arguments.get("path").and_then(Value::as_str) {
        Some(p) => p,
        None => return ToolResult::failed(format!("{tool} needs a string argument path")),
    };
    let path = match normalize_path(raw) {
        Ok(p) => p,
        Err(problem) => return ToolResult::failed(problem.reason(raw).to_string()),
    };
    if !chio_kernel::path::is_under(&path, root) {
        return ToolResult::failed(format!("path {path} is outside the workspace root {root}"));
    }
    match tool {
        "read_file" => match files.get(&path) {
            Some(stored) => ToolResult {
                content: json!({"ok": true, "path": path, "content": stored.content}),
                performed: true,
                integrity: stored.integrity(),
                label: labels
                    .iter()
                    .filter(|(glob, _)| glob.is_match(&path))
                    .map(|(_, label)| *label)
                    .chain(stored.level())
                    .max(),
            },
            None => ToolResult::failed(format!("no such file {path}")),
        },
        "write_file" => {
            let content = match arguments.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let bytes = content.len();
            let labels = writer.labels(files.get(&path));
            files.insert(path.clone(), Stored { content, labels });
            ToolResult::plain(json!({"ok": true, "path": path, "bytes": bytes}))
        }
        // The answer tells that the file was there, which its labels cover.
        "delete_file" => match files.remove(&path) {
            Some(removed) => ToolResult {
                content: json!({"ok": true, "path": path}),
                label: removed.level(),
                integrity: removed.integrity(),
                performed: true,
            },
            None => ToolResult::failed(format!("no such file {path}")),
        },
        "list_dir" => {
            let prefix = if path.ends_with('/') {
                path.clone()
            } else {
                format!("{path}/")
            };
            let mut entries: BTreeSet<String> = BTreeSet::new();
            // A name is what a listing reveals, and whoever wrote a file
            // chose its name: the listing carries the labels of every file
            // it names, as a read of each would.
            let mut named = Stored::seeded(String::new());
            for (name, stored) in files.iter() {
                if let Some(rest) = name.strip_prefix(&prefix) {
                    named.labels.extend(stored.labels.iter().cloned());
                    let first = rest.split('/').next().unwrap_or(rest);
                    if rest.contains('/') {
                        entries.insert(format!("{first}/"));
                    } else {
                        entries.insert(first.to_string());
                    }
                }
            }
            let label = labels
                .iter()
                .filter(|(glob, _)| {
                    entries
                        .iter()
                        .any(|e| glob.is_match(&format!("{prefix}{e}")))
                })
                .map(|(_, label)| *label)
                .chain(named.level())
                .max();
            ToolResult {
                content: json!({"ok": true, "path": path, "entries": entries}),
                label,
                integrity: named.integrity(),
                performed: true,
            }
        }
        other => unknown_tool(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a call from an agent that read nothing classified carries.
    fn clean() -> BTreeSet<String> {
        BTreeSet::new()
    }

    /// A caller whose request id names no step.
    fn anon() -> Caller<'static> {
        Caller {
            request_id: "req",
            agent: "alice",
        }
    }

    fn workspace() -> ToolServer {
        let mut files = BTreeMap::new();
        files.insert("/workspace/notes.txt".to_string(), "hello".to_string());
        files.insert(
            "/workspace/internal/plan.md".to_string(),
            "q3 plan".to_string(),
        );
        ToolServer::new(
            "workspace",
            ToolServerConfig::Workspace {
                root: "/workspace".to_string(),
                files,
                labels: vec![("/workspace/internal/**".to_string(), Label::Internal)],
            },
        )
    }

    // A read takes the lowest integrity of the globs it matches, else the server's; a failed call lowers nothing.
    #[test]
    fn reads_carry_integrity() {
        let mut ws = workspace().with_integrity(IntegrityPolicy {
            default: Integrity::Trusted,
            globs: vec![("/workspace/internal/**".to_string(), Integrity::Untrusted)],
        });
        let notes = ws.call(
            anon(),
            "read_file",
            &json!({"path": "/workspace/notes.txt"}),
            &clean(),
        );
        assert_eq!(notes.integrity, Integrity::Trusted);
        let plan = ws.call(
            anon(),
            "read_file",
            &json!({"path": "/workspace/internal/plan.md"}),
            &clean(),
        );
        assert_eq!(plan.integrity, Integrity::Untrusted);
        let missing = ws.call(
            anon(),
            "read_file",
            &json!({"path": "/workspace/internal/none"}),
            &clean(),
        );
        assert_eq!(missing.integrity, Integrity::Trusted);
        let mut web =
            ToolServer::new("web", ToolServerConfig::Http).with_integrity(IntegrityPolicy {
                default: Integrity::Untrusted,
                globs: Vec::new(),
            });
        let answer = web.call(
            anon(),
            "http_post",
            &json!({"url": "https://example.test"}),
            &clean(),
        );
        assert_eq!(answer.integrity, Integrity::Untrusted);
    }

    // A sink refuses arguments with no canonical form (not performed, nothing kept, the value never echoed) instead of answering the digest of something else; the same arguments within range are published.
    #[test]
    fn sinks_refuse_arguments_with_no_canonical_form() {
        let huge = json!({"url": "https://example.test", "n": 1u64 << 60});
        for (config, tool) in [
            (ToolServerConfig::Http, "http_post"),
            (ToolServerConfig::Publish, "publish"),
        ] {
            let mut server = ToolServer::new("sink", config);
            let refused = server.call(anon(), tool, &huge, &clean());
            assert!(!refused.performed, "{tool}: {:?}", refused.content);
            assert_eq!(refused.content["ok"], false);
            let error = refused.content["error"].as_str().unwrap_or_default();
            assert!(error.contains("no canonical JSON form"), "{error}");
            assert!(!error.contains(&(1u64 << 60).to_string()), "{error}");
            let kept = server.call(
                anon(),
                tool,
                &json!({"url": "https://example.test", "n": 1}),
                &clean(),
            );
            assert!(kept.performed, "{tool}");
            assert_eq!(server.received(), 1, "{tool}: the refused call was kept");
        }
    }

    // What a call writes keeps the labels the call carried: a read of it, or a listing naming it, answers them joined with the declaration's; an overwrite takes its writer's labels; a fixture edit keeps the labels of the file it replaces.
    #[test]
    fn stored_items_keep_their_writers_labels() {
        let mut ws = workspace();
        let tainted: BTreeSet<String> = ["internal", "integrity:untrusted"]
            .into_iter()
            .map(str::to_string)
            .collect();
        let path = "/workspace/copy.txt";
        let written = ws.call(
            anon(),
            "write_file",
            &json!({"path": path, "content": "q3 plan"}),
            &tainted,
        );
        assert!(written.performed);
        assert_eq!(written.label, None, "a write reveals nothing");
        let read = ws.call(anon(), "read_file", &json!({"path": path}), &clean());
        assert_eq!(read.label, Some(Label::Internal));
        assert_eq!(read.integrity, Integrity::Untrusted);
        let listing = ws.call(anon(), "list_dir", &json!({"path": "/workspace"}), &clean());
        assert_eq!(listing.integrity, Integrity::Untrusted);
        // The declaration still counts: a clean write under a labelled glob reads labelled.
        let confidential: BTreeSet<String> = ["confidential".to_string()].into();
        ws.call(
            anon(),
            "write_file",
            &json!({"path": "/workspace/internal/plan.md", "content": "x"}),
            &confidential,
        );
        let plan = ws.call(
            anon(),
            "read_file",
            &json!({"path": "/workspace/internal/plan.md"}),
            &clean(),
        );
        assert_eq!(plan.label, Some(Label::Confidential));
        // An edit outside any call keeps the stored labels; a clean overwrite replaces them.
        ws.change_file(path, FileChange::Write("edited".to_string()));
        let edited = ws.call(anon(), "read_file", &json!({"path": path}), &clean());
        assert_eq!(edited.content["content"], "edited");
        assert_eq!(edited.integrity, Integrity::Untrusted);
        ws.call(
            anon(),
            "write_file",
            &json!({"path": path, "content": "mine"}),
            &clean(),
        );
        let mine = ws.call(anon(), "read_file", &json!({"path": path}), &clean());
        assert_eq!((mine.label, mine.integrity), (None, Integrity::Trusted));
        // A delete tells that the file was there: its answer carries the file's labels.
        ws.call(
            anon(),
            "write_file",
            &json!({"path": path, "content": "x"}),
            &tainted,
        );
        let deleted = ws.call(anon(), "delete_file", &json!({"path": path}), &clean());
        assert_eq!(
            (deleted.label, deleted.integrity),
            (Some(Label::Internal), Integrity::Untrusted)
        );
        // A fixture edit of a seeded file stays unlabelled, as the fixture was.
        ws.change_file(
            "/workspace/notes.txt",
            FileChange::Write("edit".to_string()),
        );
        let notes = ws.call(
            anon(),
            "read_file",
            &json!({"path": "/workspace/notes.txt"}),
            &clean(),
        );
        assert_eq!((notes.label, notes.integrity), (None, Integrity::Trusted));
    }

    // A read returns the seeded content and the label of the glob it matches.
    #[test]
    fn reads_carry_labels() {
        let mut ws = workspace();
        let plain = ws.call(
            anon(),
            "read_file",
            &json!({"path": "/workspace/notes.txt"}),
            &clean(),
        );
        assert_eq!(plain.content["content"], "hello");
        assert_eq!(plain.label, None);
        let internal = ws.call(
            anon(),
            "read_file",
            &json!({"path": "/workspace/internal/plan.md"}),
            &clean(),
        );
        assert_eq!(internal.content["content"], "q3 plan");
        assert_eq!(internal.label, Some(Label::Internal));
    }

    // A fixture edit answers what was there, and its restore puts it back.
    #[test]
    fn change_file_answers_the_previous_content_and_restores() {
        let mut server = workspace();
        let path = "/workspace/notes.txt";
        let original = server.change_file(path, FileChange::Keep);
        assert_eq!(original.as_deref(), Some("hello"));
        let edited = FileChange::Write("edited".to_string());
        assert_eq!(server.change_file(path, edited), original);
        assert_eq!(
            server.change_file(path, FileChange::Keep).as_deref(),
            Some("edited")
        );
        let restore = FileChange::Write("hello".to_string());
        assert_eq!(server.change_file(path, restore).as_deref(), Some("edited"));
        assert_eq!(server.change_file(path, FileChange::Keep), original);
        let fresh = "/workspace/new.txt";
        let written = FileChange::Write("x".to_string());
        assert_eq!(server.change_file(fresh, written), None);
        assert_eq!(
            server.change_file(fresh, FileChange::Delete).as_deref(),
            Some("x")
        );
        assert_eq!(server.change_file(fresh, FileChange::Keep), None);
    }

    // Writes are visible to later reads and listings, in sorted order.
    #[test]
    fn writes_then_reads_and_lists() {
        let mut ws = workspace();
        let w = ws.call(
            anon(),
            "write_file",
            &json!({"path": "/workspace/b.txt", "content": "x"}),
            &clean(),
        );
        assert_eq!(w.content["ok"], true);
        assert_eq!(
            ws.call(
                anon(),
                "read_file",
                &json!({"path": "/workspace/b.txt"}),
                &clean()
            )
            .content["content"],
            "x"
        );
        let listing = ws.call(anon(), "list_dir", &json!({"path": "/workspace"}), &clean());
        assert_eq!(
            listing.content["entries"],
            json!(["b.txt", "internal/", "notes.txt"])
        );
        assert_eq!(listing.label, Some(Label::Internal));
    }

    // Paths outside the root or climbing above it are answered as failures.
    #[test]
    fn paths_outside_root_fail() {
        let mut ws = workspace();
        let out = ws.call(
            anon(),
            "read_file",
            &json!({"path": "/etc/passwd"}),
            &clean(),
        );
        assert_eq!(out.content["ok"], false);
        let climb = ws.call(
            anon(),
            "read_file",
            &json!({"path": "/workspace/../../etc"}),
            &clean(),
        );
        assert_eq!(climb.content["ok"], false);
        assert!(climb.content["error"]
            .as_str()
            .unwrap()
            .contains("escapes the root"));
    }

    // The test runner fails exactly when a failing test is run.
    #[test]
    fn test_runner_is_deterministic() {
        let mut failing = BTreeSet::new();
        failing.insert("test_pricing".to_string());
        let mut tr = ToolServer::new("tests", ToolServerConfig::TestRunner { failing });
        assert_eq!(
            tr.call(
                anon(),
                "run_tests",
                &json!({"tests": ["test_ok"]}),
                &clean()
            )
            .content["status"],
            "pass"
        );
        assert_eq!(
            tr.call(anon(), "run_tests", &json!({}), &clean()).content["status"],
            "fail"
        );
    }

    // Sinks keep what they receive and digest it canonically; an answer depends only on its own call, never on what other callers sent before (a count would carry one caller's data to the next), so it carries no one else's labels.
    #[test]
    fn sinks_record_and_answer_only_their_call() {
        let mut p = ToolServer::new("pub", ToolServerConfig::Publish);
        let a = p.call(anon(), "publish", &json!({"b": 1, "a": 2}), &clean());
        let b = p.call(anon(), "publish", &json!({"a": 2, "b": 1}), &clean());
        assert_eq!(p.received(), 2);
        assert_eq!(
            a.content, b.content,
            "the second answer reveals the first call"
        );
        let mut t = ToolServer::new(
            "tests",
            ToolServerConfig::TestRunner {
                failing: BTreeSet::new(),
            },
        );
        let first = t.call(anon(), "run_tests", &json!({}), &clean());
        assert_eq!(
            first.content,
            t.call(anon(), "run_tests", &json!({}), &clean()).content
        );
        let mut h = ToolServer::new("web", ToolServerConfig::Http);
        assert_eq!(
            h.call(anon(), "http_post", &json!({"url": "https://x"}), &clean())
                .content["status"],
            200
        );
        assert_eq!(
            h.call(anon(), "nope", &json!({}), &clean()).content["ok"],
            false
        );
    }

    fn recorded() -> ToolServer {
        let call = |agent: &str, tool: &str, arguments: Value, output: Value| RecordedAnswer {
            matches: AnswerMatch::Call {
                agent: agent.to_string(),
                tool: tool.to_string(),
                arguments: String::from_utf8(
                    chio_kernel::canonical::canonical_bytes(&arguments).unwrap(),
                )
                .unwrap(),
            },
            ok: true,
            output,
        };
        ToolServer::new(
            "git",
            ToolServerConfig::Recorded {
                answers: vec![
                    RecordedAnswer {
                        matches: AnswerMatch::Step("status".to_string()),
                        ok: true,
                        output: json!({"branch": "main"}),
                    },
                    call(
                        "alice",
                        "git_log",
                        json!({"max_count": 1, "repo_path": "/repo"}),
                        json!("first"),
                    ),
                    call(
                        "alice",
                        "git_log",
                        json!({"repo_path": "/repo", "max_count": 1}),
                        json!("second"),
                    ),
                    RecordedAnswer {
                        matches: AnswerMatch::Step("push".to_string()),
                        ok: false,
                        output: json!("rejected"),
                    },
                    call(
                        "alice",
                        "read",
                        json!({"path": "/repo/internal/plan"}),
                        json!("plan"),
                    ),
                ],
                labels: vec![("/repo/internal/**".to_string(), Label::Internal)],
            },
        )
    }

    fn caller<'a>(request_id: &'a str, agent: &'a str) -> Caller<'a> {
        Caller { request_id, agent }
    }

    // A step's answer is matched by its request id once, whatever the arguments; other calls take the first unused answer of their agent, tool and canonical arguments, in order; an answer that is not ok is not performed.
    #[test]
    fn recorded_answers_match_by_step_then_by_call() {
        let mut git = recorded();
        let status = git.call(
            caller("status", "alice"),
            "git_status",
            &json!({"x": 1}),
            &clean(),
        );
        assert!(status.performed);
        assert_eq!(
            status.content,
            json!({"ok": true, "output": {"branch": "main"}})
        );
        let again = git.call(
            caller("status", "alice"),
            "git_status",
            &json!({}),
            &clean(),
        );
        assert!(!again.performed, "a step's answer is given once");
        let args = json!({"repo_path": "/repo", "max_count": 1});
        let first = git.call(caller("adv#1", "alice"), "git_log", &args, &clean());
        let second = git.call(caller("adv#2", "alice"), "git_log", &args, &clean());
        assert_eq!(first.content["output"], "first");
        assert_eq!(second.content["output"], "second");
        let third = git.call(caller("adv#3", "alice"), "git_log", &args, &clean());
        assert!(!third.performed);
        let error = third.content["error"].as_str().unwrap();
        assert!(
            error.contains("answers[1]") && error.contains("used already"),
            "{error}"
        );
        let push = git.call(caller("push", "alice"), "git_push", &json!({}), &clean());
        assert_eq!(
            (push.performed, push.content["ok"].clone()),
            (false, json!(false))
        );
        assert_eq!(push.content["output"], "rejected");
    }

    // A call that matches nothing is not performed, naming the nearest recorded call and the argument key that differs, never a value.
    #[test]
    fn unmatched_calls_name_the_nearest_answer_without_values() {
        let mut git = recorded();
        let secret = "sk-very-secret-value-0123456789";
        let miss = git.call(
            caller("s", "alice"),
            "git_log",
            &json!({"repo_path": "/repo", "max_count": secret}),
            &clean(),
        );
        assert!(!miss.performed);
        let error = miss.content["error"].as_str().unwrap();
        assert!(
            error.contains("answers[1]") && error.contains("argument max_count differs"),
            "{error}"
        );
        assert!(
            !error.contains(secret) && !error.contains("/repo"),
            "{error}"
        );
        let other = git.call(
            caller("s", "bob"),
            "git_log",
            &json!({"repo_path": "/repo", "max_count": 1}),
            &clean(),
        );
        let error = other.content["error"].as_str().unwrap();
        assert!(error.contains("recorded for agent alice"), "{error}");
        let none = git.call(caller("s", "alice"), "git_blame", &json!({}), &clean());
        let error = none.content["error"].as_str().unwrap();
        assert!(
            error.contains("no call of git_blame is recorded"),
            "{error}"
        );
        assert_eq!(git.received(), 0, "a miss uses no answer");
    }

    // An answer takes the labels of the globs its path argument matches; a server started afresh (a restart) has used no answer.
    #[test]
    fn recorded_answers_carry_labels_and_restart_fresh() {
        let mut git = recorded();
        let plan = git.call(
            caller("r", "alice"),
            "read",
            &json!({"path": "/repo/internal/plan"}),
            &clean(),
        );
        assert_eq!(plan.label, Some(Label::Internal));
        git.call(
            caller("status", "alice"),
            "git_status",
            &json!({}),
            &clean(),
        );
        assert_eq!(git.received(), 2);
        let mut restarted = recorded();
        assert_eq!(restarted.received(), 0);
        assert!(
            restarted
                .call(
                    caller("status", "alice"),
                    "git_status",
                    &json!({}),
                    &clean()
                )
                .performed
        );
    }
}
