//! Properties of the trace readers behind `chio import trace`, parsers of
//! untrusted input: any bytes in any format give a scenario or a typed
//! refusal, never a panic, and a refusal never echoes the input; traces
//! built from each format's grammar (with secrets, bad names, bad
//! arguments, missing and repeated ids mixed in) give a scenario with one
//! step per call, the same bytes every time, or a refusal that echoes
//! nothing.

use chio_arena::scenario::trace::{import_trace, TraceFormat};
use proptest::prelude::*;
use serde_json::{json, Value};

/// A marker no message may contain: it stands for a secret in the input.
const MARK: &str = "Zq9SECRETz";

/// Every refusal of `bytes` in every format is free of the marker; an
/// accepted one is the same twice.
fn answered_without_echo(bytes: &[u8]) -> Result<(), TestCaseError> {
    for format in TraceFormat::ALL {
        match import_trace(bytes, format, "s") {
            Err(e) => prop_assert!(!e.to_string().contains(MARK), "{format:?}: {e}"),
            Ok(first) => prop_assert_eq!(Some(first), import_trace(bytes, format, "s").ok()),
        }
    }
    Ok(())
}

/// A tool name: mostly valid, sometimes breaking the grammar around the
/// marker, sometimes not a string.
fn arb_name() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => "[a-c]{1,3}".prop_map(Value::String),
        1 => Just(json!(format!("{MARK} !"))),
        1 => Just(json!("..")),
        1 => Just(json!(3)),
    ]
}

/// Arguments: mostly an object of strings and numbers, sometimes holding
/// null, a reference-shaped object, a huge integer or not an object.
fn arb_arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => prop::collection::btree_map("[a-d]{1,2}", prop_oneof![
            Just(json!(MARK)),
            Just(json!(7)),
            Just(json!(2.5)),
            Just(json!([true, "x"])),
        ], 0..3).prop_map(|m| json!(m)),
        1 => Just(json!({"q": null, "k": MARK})),
        1 => Just(json!({"v": {"from_step": MARK}})),
        1 => Just(json!({"n": 18_446_744_073_709_551_615u64})),
        1 => Just(json!([MARK])),
    ]
}

/// An id: mostly one of a few (so ids repeat and go missing), sometimes
/// the marker or of the wrong type.
fn arb_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => (0u8..4).prop_map(|n| json!(format!("id{n}"))),
        1 => Just(json!(MARK)),
        1 => Just(json!(1.5)),
    ]
}

/// One event of a conversation: a call, a result, or noise.
#[derive(Debug, Clone)]
enum Event {
    Call(Value, Value, Value),
    Result(Value, bool),
    Noise,
}

fn arb_events() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec(
        prop_oneof![
            3 => (arb_id(), arb_name(), arb_arguments()).prop_map(|(i, n, a)| Event::Call(i, n, a)),
            3 => (arb_id(), any::<bool>()).prop_map(|(i, e)| Event::Result(i, e)),
            1 => Just(Event::Noise),
        ],
        0..8,
    )
}

/// The events as an MCP session log (ids as JSON-RPC ids).
fn mcp_log(events: &[Event], tools: bool) -> Vec<u8> {
    let mut lines = Vec::new();
    if tools {
        lines.push(json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}));
        lines.push(json!({"jsonrpc": "2.0", "id": "list", "result": {"tools": [
            {"name": "a", "description": MARK, "inputSchema": {"type": "object"}}
        ]}}));
    }
    for event in events {
        lines.push(match event {
            Event::Call(id, name, args) => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}}),
            Event::Result(id, error) => json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": MARK}], "isError": error}}),
            Event::Noise => json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"note": MARK}}),
        });
    }
    let mut out = Vec::new();
    for line in lines {
        out.extend(serde_json::to_vec(&line).unwrap());
        out.push(b'\n');
    }
    out
}

/// The events as an OpenAI Chat Completions body (arguments as JSON text).
fn openai_chat(events: &[Event]) -> Vec<u8> {
    let messages: Vec<Value> = events
        .iter()
        .map(|event| match event {
            Event::Call(id, name, args) => json!({"role": "assistant", "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}
            ]}),
            Event::Result(id, _) => json!({"role": "tool", "tool_call_id": id, "content": MARK}),
            Event::Noise => json!({"role": "user", "content": MARK}),
        })
        .collect();
    serde_json::to_vec(&json!({"messages": messages, "tools": [
        {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}}
    ]}))
    .unwrap()
}

/// The events as an Anthropic Messages body.
fn anthropic(events: &[Event]) -> Vec<u8> {
    let messages: Vec<Value> = events
        .iter()
        .map(|event| match event {
            Event::Call(id, name, args) => json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": id, "name": name, "input": args}
            ]}),
            Event::Result(id, error) => json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": MARK}], "is_error": error}
            ]}),
            Event::Noise => json!({"role": "user", "content": MARK}),
        })
        .collect();
    serde_json::to_vec(&json!({"messages": messages})).unwrap()
}

/// Checks one built trace: a refusal does not echo, an acceptance has one
/// step per call and is the same twice, and a truncated copy is refused.
fn check(bytes: &[u8], format: TraceFormat, calls: usize, cut: usize) -> Result<(), TestCaseError> {
    match import_trace(bytes, format, "s") {
        Err(e) => prop_assert!(!e.to_string().contains(MARK), "{e}"),
        Ok(imported) => {
            prop_assert_eq!(imported.scenario.matches("[[steps]]").count(), calls);
            let again = import_trace(bytes, format, "s").ok();
            prop_assert_eq!(Some(&imported), again.as_ref());
            let truncated = &bytes[..bytes.len().saturating_sub(cut.min(bytes.len() - 1))];
            if format != TraceFormat::Mcp {
                prop_assert!(import_trace(truncated, format, "s").is_err());
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    // Any bytes, with the marker spliced in, are answered in every format without a panic or an echo.
    #[test]
    fn any_bytes_are_answered_without_echo(mut bytes in prop::collection::vec(any::<u8>(), 0..200), at in 0usize..200) {
        let at = at.min(bytes.len());
        bytes.splice(at..at, MARK.bytes());
        answered_without_echo(&bytes)?;
    }

    // Any JSON value, one document or one per line, is answered without a panic or an echo.
    #[test]
    fn any_json_is_answered_without_echo(events in arb_events()) {
        for bytes in [mcp_log(&events, false), openai_chat(&events), anthropic(&events)] {
            answered_without_echo(&bytes)?;
            let text = String::from_utf8(bytes).unwrap().replace('\n', " ");
            answered_without_echo(text.as_bytes())?;
        }
    }

    // Traces built from each format's grammar give one step per call, the same bytes twice, or a refusal that echoes nothing.
    #[test]
    fn built_traces_import_or_are_refused_without_echo(events in arb_events(), tools in any::<bool>(), cut in 1usize..30) {
        let calls = events.iter().filter(|e| matches!(e, Event::Call(..))).count();
        check(&mcp_log(&events, tools), TraceFormat::Mcp, calls, cut)?;
        check(&openai_chat(&events), TraceFormat::OpenAi, calls, cut)?;
        check(&anthropic(&events), TraceFormat::Anthropic, calls, cut)?;
    }
}
