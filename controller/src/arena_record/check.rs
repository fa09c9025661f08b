//! `chio arena record FILE --check DIR`: the answers of a live run compared
//! with the recording in DIR, by step. Each drift names the step (the
//! call's request id), the server and what changed: a call recorded and
//! not made again or the other way round, other arguments, another `ok`,
//! or another output with the JSON pointer of its first difference. Never
//! a value: a recorded output may hold anything the server answered.

use std::collections::BTreeSet;

use chio_arena::recording::{RecordedCall, Recording};
use serde_json::Value;

/// One answer that drifted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Drift {
    /// The step (request id) whose answer drifted.
    pub step: String,
    /// The server that answered it.
    pub server: String,
    /// What changed.
    pub what: String,
}

impl std::fmt::Display for Drift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "step {}: server {}: {}",
            self.step, self.server, self.what
        )
    }
}

/// Every drift between the `recorded` calls of a server and its `live`
/// ones, in the recording's order, then the live calls it lacks.
pub(super) fn drifts(recorded: &Recording, live: &Recording) -> Vec<Drift> {
    let mut out = Vec::new();
    let drift = |step: &str, what: String| Drift {
        step: step.to_string(),
        server: recorded.server.clone(),
        what,
    };
    for call in &recorded.calls {
        match live.call(&call.request_id) {
            None => out.push(drift(
                &call.request_id,
                "recorded, but not forwarded to the server this time".to_string(),
            )),
            Some(now) => {
                if let Some(what) = answer_drift(call, now) {
                    out.push(drift(&call.request_id, what));
                }
            }
        }
    }
    let recorded_ids: BTreeSet<&str> = recorded
        .calls
        .iter()
        .map(|c| c.request_id.as_str())
        .collect();
    for call in &live.calls {
        if !recorded_ids.contains(call.request_id.as_str()) {
            out.push(drift(
                &call.request_id,
                "forwarded to the server this time, but not recorded".to_string(),
            ));
        }
    }
    out
}

/// What changed between a recorded call and the same step's live one.
fn answer_drift(recorded: &RecordedCall, now: &RecordedCall) -> Option<String> {
    if recorded.tool != now.tool {
        return Some(format!(
            "it called {} when recorded, {} now",
            recorded.tool, now.tool
        ));
    }
    if let Some(at) = first_difference(&recorded.arguments, &now.arguments, String::new()) {
        return Some(format!("its arguments differ at {}", shown(&at)));
    }
    if recorded.ok != now.ok {
        return Some(format!(
            "it was {} when recorded and is {} now",
            performed(recorded.ok),
            performed(now.ok)
        ));
    }
    first_difference(&recorded.output, &now.output, String::new())
        .map(|at| format!("its output differs at {}", shown(&at)))
}

fn performed(ok: bool) -> &'static str {
    if ok {
        "performed"
    } else {
        "not performed"
    }
}

fn shown(pointer: &str) -> String {
    if pointer.is_empty() {
        "the whole value".to_string()
    } else {
        format!("the pointer {pointer}")
    }
}

/// The JSON pointer of the first place `a` and `b` differ (keys in order,
/// then indices), or `None` when they are equal.
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => first_difference(p, q, here),
                    _ => Some(here),
                }
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            let common = x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}/{i}")));
            common
                .or_else(|| (x.len() != y.len()).then(|| format!("{at}/{}", x.len().min(y.len()))))
        }
        _ => (a != b).then_some(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, ok: bool, output: Value) -> RecordedCall {
        RecordedCall {
            request_id: id.to_string(),
            agent: "dev".to_string(),
            tool: "git_log".to_string(),
            arguments: json!({"repo_path": "."}),
            ok,
            output,
        }
    }

    fn recording(calls: Vec<RecordedCall>) -> Recording {
        Recording {
            schema_version: chio_arena::recording::RECORDING_SCHEMA_VERSION.to_string(),
            server: "git".to_string(),
            tools: Vec::new(),
            calls,
        }
    }

    #[test]
    fn drifts_are_named_by_step_and_never_quote_a_value() {
        let before = recording(vec![
            call("same", true, json!("a")),
            call("changed", true, json!({"log": ["x", "y"]})),
            call("failed", true, json!("b")),
            call("gone", true, json!("c")),
        ]);
        let after = recording(vec![
            call("same", true, json!("a")),
            call("changed", true, json!({"log": ["x", "z"]})),
            call("failed", false, json!("b")),
            call("new", true, json!("d")),
        ]);
        let found: Vec<String> = drifts(&before, &after)
            .iter()
            .map(Drift::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "step changed: server git: its output differs at the pointer /log/1",
                "step failed: server git: it was performed when recorded and is not performed now",
                "step gone: server git: recorded, but not forwarded to the server this time",
                "step new: server git: forwarded to the server this time, but not recorded",
            ]
        );
        assert!(drifts(&before, &before).is_empty());
    }
}
