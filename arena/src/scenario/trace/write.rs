//! The scenario an imported trace becomes, written as TOML text.
//!
//! One node, one kernel, one agent (`recorded:agent`), one `recorded`
//! server declaring every tool the trace defines (and, for a tool called
//! but never defined, a schema derived from its calls, said so in a
//! comment), one answer per call naming its step, one grant covering the
//! tools, and one call step per call, in order, each expecting `allow`
//! until the user states otherwise. Step ids are `call-0001-<tool>`: the
//! position makes them unique, the tool name (already an id) readable.
//! Everything is written in the trace's order, never a map's, so the same
//! trace gives the same bytes. JSON values are written as inline TOML;
//! what TOML cannot hold as the scenario reads it (`null`, an integer past
//! 2^53) is refused naming its place. The text is validated as `chio arena
//! validate` would before it is given back.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::{ImportedTrace, Trace, TraceCall, TraceError, TraceFault, TraceFormat};
use crate::scenario::mcp::{tool_table, ImportedTool};
use crate::scenario::tools::{annotations_of, check_contract};
use crate::scenario::value::REFERENCE_KEYS;

/// The server id of a transcript's tools.
pub const SERVER: &str = "tools";
/// The server id of an MCP session's server.
pub const MCP_SERVER: &str = "mcp";
/// The one agent's id.
pub const AGENT: &str = "agent";
/// Where the agent's prompt is written, relative to the scenario.
pub const PROMPT_REF: &str = "prompts/agent.txt";
/// The largest integer a scenario writes exactly (2^53).
const MAX_EXACT: u64 = 1 << 53;

/// The server id `format`'s tools are declared under.
pub fn server_id(format: TraceFormat) -> &'static str {
    match format {
        TraceFormat::Mcp => MCP_SERVER,
        TraceFormat::OpenAi | TraceFormat::Anthropic => SERVER,
    }
}

/// The step id of the `index`-th call (from 0) to `tool`.
pub fn step_id(index: usize, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(crate::scenario::validate::MAX_ID_BYTES - 16)
        .collect();
    format!("call-{:04}-{tool}", index + 1)
}

/// The scenario `id` replaying `trace`, validated.
pub fn scenario(trace: &Trace, id: &str) -> Result<ImportedTrace, TraceError> {
    let server = server_id(trace.format);
    let derived = derived_tools(trace)?;
    let mut out = String::new();
    write_world(&mut out, trace, id, server);
    write_tools(&mut out, trace, &derived);
    write_answers(&mut out, trace)?;
    let names: Vec<String> = trace
        .tools
        .iter()
        .chain(derived.iter().map(|(tool, _)| tool))
        .map(|t| toml_string(&t.contract.name))
        .collect();
    let _ = writeln!(
        out,
        "\n[[grants]]\nid = \"{AGENT}-{server}\"\nagent = \"{AGENT}\"\nserver = \"{server}\"\ntools = [{}]",
        names.join(", ")
    );
    write_steps(&mut out, trace, server)?;
    crate::scenario::parse_scenario(&out, Path::new(".")).map_err(|e| {
        TraceError::new(
            TraceFault::Refused,
            "the written scenario",
            format!(
                "does not validate ({}: {e}); steps[k] is the trace's call k+1: fix that call in the trace or write the scenario by hand",
                e.code()
            ),
        )
    })?;
    let flagged = trace
        .tools
        .iter()
        .filter_map(|t| t.poisoning().map(|found| (t.contract.name.clone(), found)))
        .collect();
    Ok(ImportedTrace {
        scenario: out,
        prompt_ref: PROMPT_REF.to_string(),
        prompt: prompt_of(trace),
        flagged,
    })
}

/// The scenario's head and its world up to the server's table: where it
/// came from, its ids and determinism, the node, kernel and agent.
fn write_world(out: &mut String, trace: &Trace, id: &str, server: &str) {
    let what = trace.format.describe();
    let _ = writeln!(
        out,
        "# Imported from {what} (chio import trace --format {}).",
        trace.format.as_str()
    );
    out.push_str(
        "# One call step per recorded tool call, in order, each answered by the server as the\n",
    );
    out.push_str(
        "# trace recorded it. Every step expects \"allow\": state the verdict (and reason) you\n",
    );
    out.push_str("# expect of each call before relying on this scenario.\n");
    out.push_str("schema_version = \"chio.arena.scenario/v1\"\n");
    let _ = writeln!(out, "id = {}", toml_string(id));
    let _ = writeln!(
        out,
        "title = {}",
        toml_string(&format!("the tool calls of {what}, replayed"))
    );
    out.push_str("rng_seed = 1\nvirtual_clock_start = \"2026-01-01T00:00:00.000Z\"\n\n");
    out.push_str("[determinism]\nscheduler = \"single-agent-v1\"\nlocale = \"C\"\n\n");
    out.push_str(
        "[[nodes]]\nid = \"node-a\"\n\n[[kernels]]\nid = \"kernel-a\"\nnode = \"node-a\"\n\n",
    );
    let _ = writeln!(
        out,
        "[[agents]]\nid = \"{AGENT}\"\nrole = \"the agent whose tool calls the trace recorded\"\nmodel = \"recorded:{AGENT}\"\nseed_prompt_ref = \"{PROMPT_REF}\"\nkernel = \"kernel-a\"\n"
    );
    let _ = writeln!(
        out,
        "[[servers]]\nid = \"{server}\"\nkernel = \"kernel-a\"\nkind = \"recorded\""
    );
}

/// The server's tools: those the trace defines, then those only called,
/// each with a comment saying its schema was derived from its calls.
fn write_tools(out: &mut String, trace: &Trace, derived: &[(ImportedTool, usize)]) {
    for tool in &trace.tools {
        out.push_str(&tool_table(tool));
    }
    for (tool, calls) in derived {
        out.push_str(
            "\n# Called but never defined in the trace: this schema is derived from the tool's\n",
        );
        let _ = writeln!(
            out,
            "# {calls} recorded call(s) (the keys they used, each with the types it held; a key every call\n# used is required; no other key). Replace it with the tool's own definition."
        );
        out.push_str(tool_table(tool).trim_start_matches('\n'));
    }
}

/// The server's recorded answers, one per call naming its step.
fn write_answers(out: &mut String, trace: &Trace) -> Result<(), TraceError> {
    for (index, call) in trace.calls.iter().enumerate() {
        let _ = writeln!(
            out,
            "\n[[servers.answers]]\nstep = \"{}\"",
            step_id(index, &call.tool)
        );
        if !call.ok {
            out.push_str("ok = false\n");
        }
        out.push_str("output = ");
        toml_value(&call.output, false, out)
            .map_err(|pointer| unwritable(call, "output", &pointer))?;
        out.push('\n');
    }
    Ok(())
}

/// One call step per recorded call, in order, each expecting `allow`.
fn write_steps(out: &mut String, trace: &Trace, server: &str) -> Result<(), TraceError> {
    out.push_str(
        "\n# State the verdict you expect of each call: \"allow\" below is only the default the import writes.\n",
    );
    for (index, call) in trace.calls.iter().enumerate() {
        let _ = write!(
            out,
            "[[steps]]\nid = \"{}\"\nagent = \"{AGENT}\"\nserver = \"{server}\"\ntool = {}\narguments = ",
            step_id(index, &call.tool),
            toml_string(&call.tool)
        );
        toml_table(&call.arguments, false, out)
            .map_err(|pointer| unwritable(call, "arguments", &pointer))?;
        out.push_str("\nexpect_verdict = \"allow\"\n");
        if index + 1 < trace.calls.len() {
            out.push('\n');
        }
    }
    Ok(())
}

/// The agent's prompt: the trace's first user text, ending in a newline,
/// or a line saying what to replay when the trace has none.
fn prompt_of(trace: &Trace) -> String {
    match &trace.prompt {
        Some(text) if !text.trim().is_empty() => {
            let mut text = text.clone();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text
        }
        _ => format!(
            "Replay the {} tool calls of {}, in the order they were made.\n",
            trace.calls.len(),
            trace.format.describe()
        ),
    }
}

/// The refusal of a value of `call`'s `key` at `pointer`.
fn unwritable(call: &TraceCall, key: &str, pointer: &str) -> TraceError {
    TraceError::new(
        TraceFault::Value,
        format!("{} ({key} at \"{pointer}\")", call.place),
        "holds null or an integer past 2^53, which a scenario cannot write (TOML has no null): drop the key from the trace or write that step by hand",
    )
}

/// Each tool called but not defined, in the order of its first call, with
/// the schema derived from its calls and the number of those calls.
fn derived_tools(trace: &Trace) -> Result<Vec<(ImportedTool, usize)>, TraceError> {
    let defined: BTreeSet<&str> = trace
        .tools
        .iter()
        .map(|t| t.contract.name.as_str())
        .collect();
    let mut order: Vec<&str> = Vec::new();
    for call in &trace.calls {
        if !defined.contains(call.tool.as_str()) && !order.contains(&call.tool.as_str()) {
            order.push(&call.tool);
        }
    }
    let server = server_id(trace.format);
    order
        .into_iter()
        .map(|name| {
            let calls: Vec<&TraceCall> = trace.calls.iter().filter(|c| c.tool == name).collect();
            let contract = chio_kernel::contract::ToolContract {
                name: name.to_string(),
                description: String::new(),
                input_schema: derived_schema(&calls),
                output_schema: None,
                annotations: annotations_of(None),
            };
            let digest = check_contract(server, &contract).map_err(|problem| {
                TraceError::new(
                    TraceFault::Tool,
                    &calls[0].place,
                    format!("the derived schema is refused: {}", problem.reason),
                )
            })?;
            let tool = ImportedTool {
                contract,
                hints: Default::default(),
                digest,
            };
            Ok((tool, calls.len()))
        })
        .collect()
}

/// The schema of an undefined tool's arguments: an object of the keys its
/// calls used, in the order first used, each with the JSON types it held;
/// the keys every call used are required, no other key is allowed.
fn derived_schema(calls: &[&TraceCall]) -> Value {
    let mut keys: Vec<(&str, BTreeSet<&'static str>)> = Vec::new();
    for call in calls {
        for (key, value) in &call.arguments {
            let kind = json_type(value);
            match keys.iter_mut().find(|(k, _)| k == key) {
                Some((_, kinds)) => {
                    kinds.insert(kind);
                }
                None => keys.push((key, BTreeSet::from([kind]))),
            }
        }
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (key, mut kinds) in keys {
        if kinds.contains("number") {
            kinds.remove("integer");
        }
        let kinds: Vec<&str> = kinds.into_iter().collect();
        let kind = if kinds.len() == 1 {
            json!(kinds[0])
        } else {
            json!(kinds)
        };
        properties.insert(key.to_string(), json!({ "type": kind }));
        if calls.iter().all(|c| c.arguments.contains_key(key)) {
            required.push(json!(key));
        }
    }
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// The JSON Schema type name of a value.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A TOML basic string holding `text` exactly, on one line.
pub fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            // A control or a character that reorders what an editor shows
            // is written as its escape, so the file reads as it parses.
            c if c.is_control() || crate::report::is_bidi_control(c) => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML key: bare when it can be, quoted otherwise.
fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
    {
        key.to_string()
    } else {
        toml_string(key)
    }
}

/// Writes `value` as an inline TOML value; `literal` when inside a
/// `{ literal = ... }`, where no object is read as a reference. The error
/// is the JSON pointer of a value TOML cannot hold.
fn toml_value(value: &Value, literal: bool, out: &mut String) -> Result<(), String> {
    match value {
        Value::Null => Err(String::new()),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
            Ok(())
        }
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                if i.unsigned_abs() > MAX_EXACT {
                    return Err(String::new());
                }
                let _ = write!(out, "{i}");
            } else if n.as_u64().is_some() {
                return Err(String::new());
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                out.push_str(&toml::Value::Float(f).to_string());
            }
            Ok(())
        }
        Value::String(text) => {
            out.push_str(&toml_string(text));
            Ok(())
        }
        Value::Array(items) => {
            out.push('[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                toml_value(item, literal, out).map_err(|at| format!("/{k}{at}"))?;
            }
            out.push(']');
            Ok(())
        }
        Value::Object(object) => toml_table(object, literal, out),
    }
}

/// Writes an object as an inline table, wrapped in `{ literal = ... }`
/// when outside a literal its keys would make it a reference.
fn toml_table(object: &Map<String, Value>, literal: bool, out: &mut String) -> Result<(), String> {
    let wrap = !literal && REFERENCE_KEYS.iter().any(|k| object.contains_key(*k));
    if wrap {
        out.push_str("{ literal = ");
    }
    if object.is_empty() {
        out.push_str("{}");
    } else {
        out.push_str("{ ");
        for (k, (key, member)) in object.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            out.push_str(&toml_key(key));
            out.push_str(" = ");
            let escaped = key.replace('~', "~0").replace('/', "~1");
            toml_value(member, literal || wrap, out).map_err(|at| format!("/{escaped}{at}"))?;
        }
        out.push_str(" }");
    }
    if wrap {
        out.push_str(" }");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Strings stay on one line whatever they hold, and objects that would read as references are written as literals.
    #[test]
    fn values_are_written_as_the_scenario_reads_them() {
        assert_eq!(toml_string("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\u0001""#);
        let value = json!({"fixture": "x", "n": [1, 2.5, {"from_step": "y"}], "a b": true});
        let mut out = String::new();
        toml_value(&value, false, &mut out).unwrap();
        assert_eq!(
            out,
            r#"{ literal = { fixture = "x", n = [1, 2.5, { from_step = "y" }], "a b" = true } }"#
        );
        let parsed: toml::Table = toml::from_str(&format!("v = {out}")).unwrap();
        assert!(parsed["v"]["literal"]["n"][2].is_table());
        let mut out = String::new();
        assert_eq!(
            toml_value(&json!({"a": [0, {"b/c": null}]}), false, &mut out),
            Err("/a/1/b~1c".to_string())
        );
    }

    // Step ids are unique by position and valid ids whatever the tool is called.
    #[test]
    fn step_ids_are_positional_and_valid() {
        assert_eq!(step_id(0, "git_status"), "call-0001-git_status");
        assert_eq!(step_id(9_999, "a.b"), "call-10000-a.b");
        assert!(crate::scenario::is_valid_id(&step_id(41, "x y")));
        assert!(crate::scenario::is_valid_id(&step_id(
            99_999_999,
            &"t".repeat(128)
        )));
    }
}
