//! Unit tests of the trace readers' shared JSON reading.

use super::*;

/// An MCP session log of one call with `arguments` and its answer.
fn mcp_log(arguments: &str) -> String {
    format!(
        "{}\n{}\n",
        format_args!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"read","arguments":{arguments}}}}}"#
        ),
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}"#
    )
}

/// An OpenAI transcript of one call whose `arguments` text is `text`.
fn openai_chat(text: &str) -> String {
    let text = serde_json::to_string(text).unwrap();
    format!(
        r#"{{"messages":[{{"role":"assistant","tool_calls":[{{"id":"c1","type":"function","function":{{"name":"read","arguments":{text}}}}}]}},{{"role":"tool","tool_call_id":"c1","content":"ok"}}]}}"#
    )
}

/// An Anthropic transcript of one call with `input`.
fn anthropic_messages(input: &str) -> String {
    format!(
        r#"{{"messages":[{{"role":"assistant","content":[{{"type":"tool_use","id":"u1","name":"read","input":{input}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"u1","content":"ok"}}]}}]}}"#
    )
}

// A key given twice in a call's arguments is refused in every format, as import mcp and eval refuse it, without quoting the key or either value; the same call with the key once reads.
#[test]
fn a_key_given_twice_is_refused_in_every_format() {
    let twice = r#"{"path":"/workspace/ok.txt","path":"/etc/shadow"}"#;
    let once = r#"{"path":"/workspace/ok.txt"}"#;
    let cases = [
        (
            TraceFormat::Mcp,
            mcp_log(twice),
            mcp_log(once),
            TraceFault::Syntax,
        ),
        (
            TraceFormat::OpenAi,
            openai_chat(twice),
            openai_chat(once),
            TraceFault::Arguments,
        ),
        (
            TraceFormat::Anthropic,
            anthropic_messages(twice),
            anthropic_messages(once),
            TraceFault::Syntax,
        ),
    ];
    for (format, bad, good, fault) in cases {
        let err = read_trace(bad.as_bytes(), format).unwrap_err();
        assert_eq!(err.fault, fault, "{format:?}: {err}");
        let text = err.to_string();
        assert!(text.contains("each key once per object"), "{text}");
        for quoted in ["path", "shadow", "ok.txt"] {
            assert!(!text.contains(quoted), "{format:?}: {text}");
        }
        let trace = read_trace(good.as_bytes(), format).unwrap();
        assert_eq!(trace.calls[0].arguments["path"], "/workspace/ok.txt");
    }
}
