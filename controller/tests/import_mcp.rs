//! `chio import mcp`: an MCP `tools/list` result becomes a recorded
//! server's declaration that validates, the reference scenario built from
//! the fixture keeps that declaration, hostile input is refused naming the
//! fix, and the scenario's refusals of an undeclared tool and of arguments
//! its schema refuses.

mod util;

use util::{chio, copy_tree, explain, repo_path};

const FIXTURE: &str = "scenarios/fixtures/recorded-git/tools_list.json";

/// The declaration `chio import mcp` prints for the fixture.
fn imported(dir: &std::path::Path) -> String {
    let fixture = repo_path(FIXTURE);
    let args = [
        "import",
        "mcp",
        fixture.to_str().unwrap(),
        "--id",
        "git",
        "--kernel",
        "kernel-a",
    ];
    let output = chio(dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// A scenario of one agent calling `git_status` on the declaration `block`.
fn frame(block: &str) -> String {
    format!(
        r#"schema_version = "chio.arena.scenario/v1"
id = "imported"
title = "an imported server"
rng_seed = 3
virtual_clock_start = "2026-07-01T10:00:00.000Z"

[determinism]
scheduler = "single-agent-v1"
locale = "C"

[[nodes]]
id = "node-a"

[[kernels]]
id = "kernel-a"
node = "node-a"

[[agents]]
id = "dev"
role = "developer"
model = "recorded:dev"
seed_prompt_ref = "prompt.txt"
kernel = "kernel-a"

{block}
[[servers.answers]]
step = "status"
output = {{ branch = "main", clean = true }}

[[grants]]
id = "dev-git"
agent = "dev"
server = "git"
tools = ["git_status"]

[[steps]]
id = "status"
agent = "dev"
server = "git"
tool = "git_status"
arguments = {{ repo_path = "/repo" }}
expect_verdict = "allow"
"#
    )
}

// The import of the fixture validates and runs as a scenario, is the declaration the reference scenario keeps verbatim, and --out writes the same bytes.
#[test]
fn the_import_of_the_fixture_validates_and_is_the_reference_declaration() {
    let tmp = tempfile::tempdir().unwrap();
    let block = imported(tmp.path());
    assert!(block.contains("kind = \"recorded\""), "{block}");
    for tool in [
        "git_status",
        "git_diff",
        "git_log",
        "git_commit",
        "git_push",
    ] {
        assert!(block.contains(&format!("name = \"{tool}\"")), "{tool}");
    }
    assert_eq!(block.matches("digest = ").count(), 5);
    let file = tmp.path().join("scenario.toml");
    std::fs::write(&file, frame(&block)).unwrap();
    std::fs::write(tmp.path().join("prompt.txt"), "x\n").unwrap();
    for command in ["validate", "run"] {
        let args = ["arena", command, file.to_str().unwrap(), "--out", "bundle"];
        let args = if command == "validate" {
            &args[..3]
        } else {
            &args[..]
        };
        let output = chio(tmp.path(), args);
        assert_eq!(output.status.code(), Some(0), "{}", explain(args, &output));
    }
    let reference = std::fs::read_to_string(repo_path("scenarios/recorded_git.toml")).unwrap();
    assert!(
        reference.contains(block.trim_end()),
        "scenarios/recorded_git.toml no longer holds the import of {FIXTURE}"
    );
    let fixture = repo_path(FIXTURE);
    let out = tmp.path().join("git.toml");
    let args = [
        "import",
        "mcp",
        fixture.to_str().unwrap(),
        "--id",
        "git",
        "--out",
        out.to_str().unwrap(),
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    assert!(output.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), block);
}

// Hostile input is refused with exit 2, its code and the fix, and never echoes what it read.
#[test]
fn hostile_tools_lists_are_refused_naming_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let full = std::fs::read_to_string(repo_path(FIXTURE)).unwrap();
    let secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    let cases = [
        ("truncated", full[..full.len() / 2].to_string(), "truncated"),
        (
            "nameless",
            format!(r#"{{"tools": [{{"description": "{secret}", "inputSchema": {{}}}}]}}"#),
            "tools[0] has no name",
        ),
        (
            "badname",
            format!(r#"{{"tools": [{{"name": "{secret}!", "inputSchema": {{}}}}]}}"#),
            "tools[0].name breaks MCP's tool-name grammar",
        ),
        (
            "schema",
            r#"{"tools": [{"name": "a", "inputSchema": ["object"]}]}"#.to_string(),
            "tools[0].inputSchema is not a JSON object",
        ),
        (
            "twice",
            r#"{"result": {"tools": [{"name": "a", "inputSchema": {}}, {"name": "a", "inputSchema": {}}]}}"#
                .to_string(),
            "result.tools[1] repeats the name a of result.tools[0]",
        ),
    ];
    for (name, text, wanted) in cases {
        let file = tmp.path().join(format!("{name}.json"));
        std::fs::write(&file, &text).unwrap();
        let args = ["import", "mcp", file.to_str().unwrap(), "--id", "git"];
        let output = chio(tmp.path(), &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
        assert!(stderr.contains("error[CHIO-IMPORT-TOOLS-LIST]"), "{stderr}");
        assert!(stderr.contains(wanted), "{name}: {stderr}");
        assert!(!stderr.contains(secret), "{name}: {stderr}");
        assert!(output.stdout.is_empty());
    }
    let args = ["import", "mcp", "missing.json", "--id", "git"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("CHIO-IMPORT-UNREADABLE"));
}

/// The reference scenario with `from` replaced by `to`, in `dir` with its
/// folders; the path of the file.
fn variant(dir: &std::path::Path, from: &str, to: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(repo_path("scenarios/recorded_git.toml")).unwrap();
    assert!(text.contains(from), "{from}");
    for folder in ["prompts", "fixtures/recorded-git"] {
        copy_tree(
            &repo_path(&format!("scenarios/{folder}")),
            &dir.join(folder),
        );
    }
    let file = dir.join("scenario.toml");
    std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
    file
}

// The reference scenario with a step naming an undeclared tool is refused at validate naming the closest declared one, and with arguments the tool's schema refuses naming the pointer and keyword, never the value.
#[test]
fn the_recorded_server_refuses_undeclared_tools_and_refused_arguments_at_validate() {
    let cases = [
        (
            "tool = \"git_diff\"\narguments = { repo_path = \"/repo\", target = \"main\" }",
            "tool = \"git_dif\"\narguments = { repo_path = \"/repo\", target = \"main\" }",
            "CHIO-SCENARIO-UNKNOWN-TOOL",
            "did you mean \"git_diff\"?",
            None,
        ),
        (
            "arguments = { repo_path = \"/repo\", target = \"feature\" }",
            "arguments = { repo_path = \"/repo\", target = 20260701 }",
            "CHIO-SCENARIO-ARGUMENTS-REFUSED",
            "fail the tool's input schema at /target: type",
            Some("20260701"),
        ),
    ];
    for (from, to, code, wanted, never) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let file = variant(tmp.path(), from, to);
        let args = ["arena", "validate", file.to_str().unwrap()];
        let output = chio(tmp.path(), &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
        assert!(stderr.contains(&format!("error[{code}]")), "{stderr}");
        assert!(stderr.contains(wanted), "{stderr}");
        if let Some(value) = never {
            assert!(!stderr.contains(value), "{stderr}");
        }
    }
}
