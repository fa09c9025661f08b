//! The recorded server kind: which recorded answer a call takes, and the
//! failure naming the nearest recorded call when it takes none.

use chio_kernel::glob::Glob;
use std::collections::BTreeSet;

use chio_kernel::label::{Integrity, Label};
use serde_json::Value;

use super::ToolResult;

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
    /// The call of this step, and only if it is still the call recorded
    /// for it: this agent, this tool, these arguments (a replayed live
    /// server's answer, so a step changed since it was recorded, or a
    /// recording changed by hand, answers nothing).
    StepCall {
        /// The step (request id).
        step: String,
        /// The calling agent.
        agent: String,
        /// The tool called.
        tool: String,
        /// The arguments' canonical JSON.
        arguments: String,
    },
}

impl AnswerMatch {
    /// The agent, tool and canonical arguments an answer is recorded for,
    /// when it names them.
    fn call(&self) -> Option<(&str, &str, &str)> {
        match self {
            AnswerMatch::Step(_) => None,
            AnswerMatch::Call {
                agent,
                tool,
                arguments,
            }
            | AnswerMatch::StepCall {
                agent,
                tool,
                arguments,
                ..
            } => Some((agent, tool, arguments)),
        }
    }

    /// Whether the answer is the one of step `request_id`.
    fn is_step(&self, request_id: &str) -> bool {
        match self {
            AnswerMatch::Step(step) | AnswerMatch::StepCall { step, .. } => step == request_id,
            AnswerMatch::Call { .. } => false,
        }
    }
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

impl<'a> Caller<'a> {
    /// The caller of a signed request.
    pub fn of(request: &'a chio_kernel::request::ToolCallRequest) -> Self {
        Caller {
            request_id: &request.request_id,
            agent: &request.agent_id,
        }
    }
}

/// The answer of a recorded server to one call: the unused answer of the
/// call's step, else the first unused answer recorded for its agent, tool
/// and canonical arguments, else a failure naming the nearest recorded
/// call of the tool.
pub(super) fn recorded_call(
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
    let by_step = (0..answers.len()).filter(unused).find(|i| {
        let answer = &answers[*i].matches;
        answer.is_step(caller.request_id)
            && match answer {
                AnswerMatch::StepCall {
                    agent,
                    tool: t,
                    arguments: a,
                    ..
                } => agent == caller.agent && t == tool && *a == canonical,
                _ => true,
            }
    });
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
    answer_result(answer.ok, answer.output.clone(), labels, arguments)
}

/// The result of an answer, recorded or live: `{"ok": ok, "output":
/// output}`, performed when `ok`, and received whatever `ok` says (an
/// answer is what a server did with a call it received, so the call
/// spends its budget; `ok = false` says only that it was not carried
/// out), labelled by the highest of the `labels`
/// globs any path the call names matches ([`super::revealed_paths`]: a
/// `path`, `paths`, `file` or nested key, or any value that reads as a
/// path), whether or not the server
/// carried the call out (an error result is released to the agent too, and
/// may hold what the path holds). One rule, so a live server's answer and
/// its replay from the recording are the same result.
pub(crate) fn answer_result(
    ok: bool,
    output: Value,
    labels: &[(Glob, Label)],
    arguments: &Value,
) -> ToolResult {
    let label = super::revealed_paths(arguments)
        .iter()
        .filter_map(|path| super::glob_level(labels, path))
        .max();
    ToolResult {
        content: chio_arena::recording::answer_content(ok, output),
        label,
        integrity: Integrity::Trusted,
        performed: ok,
        received: true,
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
        let Some((agent, t, recorded)) = answer.matches.call() else {
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
    let step_of = answers.iter().any(|a| a.matches.is_step(caller.request_id));
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
