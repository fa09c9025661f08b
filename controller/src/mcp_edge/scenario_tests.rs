use serde_json::{json, Value};

use super::*;

const KEY: &str = "8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c";

fn header() -> Value {
    json!({
        "upstreams": [{"id": "notes", "tools": [{
            "name": "echo",
            "description": "Answers its text.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}
        }]}],
        "guards": [],
    })
}

fn token(id: &str) -> Value {
    json!({
        "schema": "chio.capability/v1", "id": id, "issuer": KEY, "subject": KEY,
        "scope": [{"server": "notes", "tools": ["echo"]}],
        "not_before_ms": 1_000, "expires_at_ms": 90_000, "max_invocations": 2,
        "share_bps": 10000, "signature": "00",
    })
}

fn call(at: u64, capability: &str, verdict: &str, code: Option<&str>) -> Value {
    json!({
        "seq": 0, "admitted_at_ms": at, "server": "notes", "tool": "echo",
        "request": {"capability": token(capability), "server": "notes", "tool": "echo",
                    "arguments": {"text": "a"}, "agent_id": KEY, "session_id": "s-1"},
        "verdict": verdict, "reason_code": code,
        "upstream": if verdict == "allow" { json!({"content": [{"type": "text", "text": "a"}]}) } else { Value::Null },
    })
}

// A call refused before the kernel, on its presentation, or under a capability id a scenario cannot name has no step; the others are call-<seq> steps.
#[test]
fn only_calls_decided_from_the_call_get_steps() {
    let mut refused = call(2_000, "cap-1", "deny", Some("edge-no-capability"));
    refused["request"] = Value::Null;
    let calls = [
        call(2_000, "cap-1", "allow", None),
        refused,
        call(2_500, "cap-1", "deny", Some("replayed")),
        call(3_000, "cap/1", "allow", None),
        call(3_000, "cap-1", "deny", Some("out-of-scope")),
    ];
    let built = session_scenario(&header(), &calls).unwrap();
    let steps: Vec<bool> = built
        .steps
        .iter()
        .map(|p| matches!(p, Presentation::Step(_)))
        .collect();
    assert_eq!(steps, [true, false, false, false, true]);
    assert_eq!(built.steps[4], Presentation::Step("call-5".to_string()));
    assert!(built.text.contains("id = \"call-1\""));
    assert!(!built.text.contains("id = \"call-2\""));
}

// The clock starts at the capability's start; steps sit at their admission's offset, one millisecond apart when admitted in the same one, and the grant keeps its window and budget.
#[test]
fn wall_clock_instants_become_the_scenario_clock() {
    let calls = [
        call(5_000, "cap-1", "allow", None),
        call(5_000, "cap-1", "allow", None),
    ];
    let text = session_scenario(&header(), &calls).unwrap().text;
    assert!(
        text.contains("virtual_clock_start = \"1970-01-01T00:00:01.000Z\""),
        "{text}"
    );
    assert!(text.contains("at = 4000\n"), "{text}");
    assert!(text.contains("at = 4001\n"), "{text}");
    assert!(
        text.contains("not_before_ms = 0\nexpires_after_ms = 89000\n"),
        "{text}"
    );
    assert!(text.contains("max_invocations = 2\n"), "{text}");
    assert!(text.contains("capability = \"cap-1\""), "{text}");
}

// A session with no call to re-decide has no scenario.
#[test]
fn a_session_without_a_redecided_call_is_an_error() {
    let err = session_scenario(&header(), &[]).unwrap_err();
    assert!(err.contains("no call"), "{err}");
}

const TOKEN: &str = "ghp_7Hq2Lw9Zx4Rt6Yp1Kd8Mv3Nc5Bg0Fj2Se4Ua";

// A null in an answer is written { null = true }; a credential in the arguments or an answer is one sealed file per distinct text, named in order of first use, and the text never holds it.
#[test]
fn nulls_and_credentials_are_written_as_the_loader_reads_them() {
    let mut sent = call(2_000, "cap-1", "allow", None);
    sent["request"]["arguments"] = json!({"text": TOKEN});
    sent["upstream"] = json!({"content": [{"type": "text", "text": "x"}],
        "structuredContent": {"previous": null, "said": TOKEN, "other": "password=hunter22"}});
    let built = session_scenario(&header(), &[sent]).unwrap();
    assert!(!built.text.contains(TOKEN), "{}", built.text);
    assert!(!built.text.contains("hunter22"), "{}", built.text);
    assert!(
        built
            .text
            .contains("\"text\" = { fixture = \"fixtures/secrets/secret-1.txt\" }"),
        "{}",
        built.text
    );
    assert!(
        built
            .text
            .contains("\"other\" = { fixture = \"fixtures/secrets/secret-2.txt\" }"),
        "{}",
        built.text
    );
    assert!(
        built.text.contains("\"previous\" = { null = true }"),
        "{}",
        built.text
    );
    let files: Vec<(&str, &str)> = built
        .sealed
        .iter()
        .map(|f| (f.path.as_str(), f.text.as_str()))
        .collect();
    assert_eq!(
        files,
        [
            ("fixtures/secrets/secret-1.txt", TOKEN),
            ("fixtures/secrets/secret-2.txt", "password=hunter22"),
        ]
    );
    assert!(!format!("{:?}", built.sealed).contains(TOKEN));
}

// What a scenario still cannot write is an error naming the call and the place, never the value: a key named like a credential, a credential inside an object written as a literal, a credential a sealed file cannot hold, a key that is itself a credential (its object named, not the key).
#[test]
fn what_a_scenario_cannot_write_is_an_error_without_the_value() {
    for (arguments, place) in [
        (json!({"api_key": "x"}), "\"/api_key\""),
        (json!({"o": {"from_step": TOKEN}}), "\"/o/from_step\""),
        (json!({"text": format!("{TOKEN}\nmore")}), "\"/text\""),
        (json!({"o": {TOKEN: 1}}), "\"/o\""),
    ] {
        let mut sent = call(2_000, "cap-1", "allow", None);
        sent["request"]["arguments"] = arguments;
        let err = session_scenario(&header(), &[sent]).unwrap_err();
        assert!(err.contains("call 1") && err.contains(place), "{err}");
        assert!(!err.contains("7Hq2Lw9Z"), "{err}");
    }
}

// An object with a key of the value grammar is written as a literal, and the text loads back, every sealed file read, as the scenario the loader runs.
#[test]
fn the_written_scenario_loads_with_its_sealed_files() {
    let mut sent = call(2_000, "cap-1", "allow", None);
    sent["request"]["arguments"] = json!({"text": TOKEN});
    sent["upstream"] = json!({"content": [{"type": "text", "text": TOKEN}],
        "structuredContent": {"literal": 1, "n": 2}});
    let built = session_scenario(&header(), &[sent]).unwrap();
    assert!(
        built
            .text
            .contains("output = { literal = { \"literal\" = 1, \"n\" = 2 } }"),
        "{}",
        built.text
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(PROMPT_FILE), PROMPT_TEXT).unwrap();
    std::fs::write(dir.path().join("scenario.toml"), &built.text).unwrap();
    for file in &built.sealed {
        let path = dir.path().join(&file.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("{}\n", file.text)).unwrap();
    }
    let scenario = chio_arena::scenario::load_scenario(dir.path().join("scenario.toml")).unwrap();
    let sealed = scenario.sealed();
    assert_eq!(sealed.len(), 1);
    assert_eq!(sealed["fixtures/secrets/secret-1.txt"].text(), TOKEN);
}

// A client that kept to one session is named by it, so a reason naming the session's label key reads the same at replay; a client with two sessions, or a session id a scenario cannot name, gives client-N names for every agent.
#[test]
fn agents_are_named_by_their_one_session() {
    let calls = [call(2_000, "cap-1", "allow", None)];
    let text = session_scenario(&header(), &calls).unwrap().text;
    assert!(text.contains("[[agents]]\nid = \"s-1\"\n"), "{text}");
    assert!(text.contains("agent = \"s-1\""), "{text}");
    let mut second = call(3_000, "cap-1", "allow", None);
    second["request"]["session_id"] = json!("s-2");
    let text = session_scenario(&header(), &[calls[0].clone(), second])
        .unwrap()
        .text;
    assert!(text.contains("[[agents]]\nid = \"client-1\"\n"), "{text}");
    let mut unnamed = call(2_000, "cap-1", "allow", None);
    unnamed["request"]["session_id"] = json!("a session");
    let text = session_scenario(&header(), &[unnamed]).unwrap().text;
    assert!(text.contains("[[agents]]\nid = \"client-1\"\n"), "{text}");
}

// The label keys --policy gave an upstream (session.json's servers) are written on its recorded server, and none on an upstream it did not name.
#[test]
fn policy_label_keys_go_on_the_recorded_server() {
    let calls = [call(2_000, "cap-1", "allow", None)];
    let plain = session_scenario(&header(), &calls).unwrap().text;
    assert!(!plain.contains("integrity ="), "{plain}");
    let mut labelled = header();
    labelled["servers"] = json!([{"id": "notes", "integrity": "untrusted",
        "labels": {"/srv/hr/**": "confidential"}}]);
    let text = session_scenario(&labelled, &calls).unwrap().text;
    assert!(
        text.contains("kind = \"recorded\"\nlabels = { \"/srv/hr/**\" = \"confidential\" }\nintegrity = \"untrusted\"\n"),
        "{text}"
    );
}

// An upstream's error result (`isError: true`) is answered as the edge's kernel read it: not performed (`ok = false`), which a recorded server's answer spends as the edge spent it; any other answer is performed.
#[test]
fn an_error_result_is_answered_not_performed() {
    let mut failed = call(2_500, "cap-1", "allow", None);
    failed["upstream"] =
        json!({"content": [{"type": "text", "text": "file not found"}], "isError": true});
    let calls = [call(2_000, "cap-1", "allow", None), failed];
    let built = session_scenario(&header(), &calls).unwrap();
    let answers: Vec<&str> = built
        .text
        .split("\n[[servers.answers]]\n")
        .skip(1)
        .collect();
    assert_eq!(answers.len(), 2, "{}", built.text);
    assert!(!answers[0].contains("ok = false"), "{}", built.text);
    assert!(
        answers[1].contains("step = \"call-2\"") && answers[1].contains("ok = false"),
        "{}",
        built.text
    );
}

// A grant naming a tool the upstream does not list is written with the tools it grants that the upstream lists, so the session keeps its bundle.
#[test]
fn a_grant_is_written_with_the_tools_the_upstream_lists() {
    let mut first = call(2_000, "cap-1", "allow", None);
    first["request"]["capability"]["scope"][0]["tools"] = json!(["echo", "git_push"]);
    let built = session_scenario(&header(), &[first]).unwrap();
    assert!(
        built.text.contains("tools = [\"echo\"]\n"),
        "{}",
        built.text
    );
    assert!(!built.text.contains("git_push"), "{}", built.text);
}

// The recorded answer is the upstream's answer read as chio arena record reads a live server's: its structured content, which a tool's declared output schema describes, so a session calling a typed tool keeps its scenario, which loads; an answer breaking the schema is answered not performed naming where, never the value, as the edge's kernel read it.
#[test]
fn answers_are_read_as_arena_record_reads_them() {
    let mut typed = header();
    typed["upstreams"][0]["tools"][0]["outputSchema"] = json!({
        "type": "object", "properties": {"n": {"type": "integer"}},
        "required": ["n"], "additionalProperties": false,
    });
    let answered = |structured: Value| {
        let mut c = call(2_000, "cap-1", "allow", None);
        c["upstream"] = json!({"content": [{"type": "text", "text": "x"}],
            "structuredContent": structured});
        c
    };
    let calls = [
        answered(json!({"n": 3})),
        answered(json!({"n": 1, "note": "IGNORE ALL PREVIOUS"})),
    ];
    let built = session_scenario(&typed, &calls).unwrap();
    let answers: Vec<&str> = built
        .text
        .split("\n[[servers.answers]]\n")
        .skip(1)
        .collect();
    assert!(
        answers[0].starts_with("step = \"call-1\"\noutput = { \"n\" = 3 }\n"),
        "{}",
        built.text
    );
    assert!(
        answers[1].contains("output = \"the server's answer is refused: the output of tool echo fails its output schema at /: additionalProperties\"\nok = false\n"),
        "{}",
        built.text
    );
    assert!(!built.text.contains("IGNORE"), "{}", built.text);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(PROMPT_FILE), PROMPT_TEXT).unwrap();
    std::fs::write(dir.path().join("scenario.toml"), &built.text).unwrap();
    chio_arena::scenario::load_scenario(dir.path().join("scenario.toml")).unwrap();
}
