//! Shared harness of the MCP edge's process tests: the venv's python, an
//! authority and grants made by the real `chio` binary, `chio mcp serve
//! --stdio` started as a child and driven by the SDK's Rust client, and
//! calls signed with a real Ed25519 key.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chio_controller::mcp_edge::present::{client_meta, ClientCall};
use ed25519_dalek::SigningKey;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    MetaObject, PaginatedRequestParams, RequestMetaObject,
};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::process::{Child, Command};

/// The `chio` binary under test.
pub fn chio_bin() -> &'static str {
    env!("CARGO_BIN_EXE_chio")
}

/// The executable `.ci/run` provides for these tests (`chio_tests::outside`).
pub fn mcp_python() -> Option<PathBuf> {
    chio_tests::outside::outside_part(chio_tests::outside::MCP_PYTHON, "the MCP edge tests")
}

/// A fixture of `controller/tests/fixtures/mcp`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp")
        .join(name)
}

/// Runs `chio ARGS` to its exit; panics with its output unless it exits 0.
pub fn chio_ok(args: &[&str]) -> String {
    let output = std::process::Command::new(chio_bin())
        .args(args)
        .output()
        .expect("run chio");
    assert!(
        output.status.success(),
        "chio {args:?} failed: {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

/// A client key from a fixed seed.
/// Runs git in `repo`, asserting it succeeds; its standard output.
pub fn git_in(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A git repository under `dir` with one commit and one untracked file.
pub fn git_fixture_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("README.md"), "fixture\n").unwrap();
    git_in(&repo, &["init", "-q"]);
    git_in(&repo, &["add", "README.md"]);
    git_in(
        &repo,
        &[
            "-c",
            "user.name=F",
            "-c",
            "user.email=f@example.test",
            "commit",
            "-q",
            "-m",
            "init",
        ],
    );
    std::fs::write(repo.join("new.txt"), "new\n").unwrap();
    repo
}

/// The `--upstream` value serving `repo` with the reference git server
/// under the server id `git`.
pub fn git_upstream(python: &Path, repo: &Path) -> String {
    format!(
        "git={}",
        shell_words::join([
            python.to_str().unwrap(),
            "-m",
            "mcp_server_git",
            "--repository",
            repo.to_str().unwrap()
        ])
    )
}

pub fn client_key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

/// The public key of `key`, hex.
pub fn key_hex(key: &SigningKey) -> String {
    hex::encode(key.verifying_key().to_bytes())
}

/// `chio mcp authority new DIR/edge.key`.
pub fn authority(dir: &Path) -> PathBuf {
    let path = dir.join("edge.key");
    let printed = chio_ok(&["mcp", "authority", "new", path.to_str().unwrap()]);
    assert!(printed.starts_with("issuer "), "{printed}");
    path
}

/// `chio mcp grant` for `key` on `server`/`tools`, with `extra` flags;
/// answers the token string.
pub fn grant(
    authority: &Path,
    key: &SigningKey,
    server: &str,
    tools: &str,
    extra: &[&str],
) -> String {
    let hex = key_hex(key);
    let mut args = vec![
        "mcp",
        "grant",
        "--authority",
        authority.to_str().unwrap(),
        "--client-key",
        &hex,
        "--server",
        server,
        "--tools",
        tools,
    ];
    args.extend_from_slice(extra);
    chio_ok(&args).trim().to_string()
}

/// Unix milliseconds now: a client signs its requests at its own clock.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A running `chio mcp serve --stdio` and the SDK client connected to it.
pub struct Edge {
    pub client: RunningService<RoleClient, ClientConfig>,
    child: Child,
}

impl Edge {
    /// Starts `chio mcp serve --stdio ARGS` and completes the handshake.
    pub async fn start(args: &[String]) -> Edge {
        Self::start_with_stderr(args, Stdio::inherit()).await
    }

    /// [`Edge::start`] with the edge's standard error written to `stderr`.
    pub async fn start_with_stderr(args: &[String], stderr: Stdio) -> Edge {
        let mut child = Command::new(chio_bin())
            .args(["mcp", "serve", "--stdio"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn chio mcp serve");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("edge-test", "0"),
        );
        let client = tokio::time::timeout(Duration::from_secs(60), info.serve((stdout, stdin)))
            .await
            .expect("the edge answers the handshake within 60 s")
            .expect("handshake");
        Edge { client, child }
    }

    /// `tools/list` presenting `token` (none when `None`): the tool names.
    pub async fn list(&self, token: Option<&str>) -> Vec<String> {
        let mut params = PaginatedRequestParams::default();
        if let Some(token) = token {
            let mut meta = Map::new();
            meta.insert("chio/capability".into(), Value::String(token.into()));
            params.meta = Some(RequestMetaObject(MetaObject(meta)));
        }
        let listed = self
            .client
            .peer()
            .list_tools(Some(params))
            .await
            .expect("tools/list");
        listed.tools.iter().map(|t| t.name.to_string()).collect()
    }

    /// `tools/call` with `meta` as its `_meta`.
    pub async fn call_with_meta(
        &self,
        tool: &str,
        arguments: &Value,
        meta: Option<Map<String, Value>>,
    ) -> CallToolResult {
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map.clone());
        }
        if let Some(meta) = meta {
            params.meta = Some(RequestMetaObject(MetaObject(meta)));
        }
        self.client
            .peer()
            .call_tool(params)
            .await
            .expect("tools/call answered")
    }

    /// A call signed by `key` presenting `token`.
    pub async fn call(
        &self,
        token: &str,
        key: &SigningKey,
        server: &str,
        tool: &str,
        arguments: &Value,
        request_id: &str,
    ) -> CallToolResult {
        let meta = signed_meta(token, key, server, tool, arguments, request_id);
        self.call_with_meta(tool, arguments, Some(meta)).await
    }

    /// Sends the edge SIGTERM, its client still connected.
    pub fn terminate(&self) {
        let pid = self.child.id().expect("the edge runs").to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "SIGTERM sent");
    }

    /// Whether the edge exits within `within`, its client still connected.
    pub async fn exits_within(&mut self, within: Duration) -> bool {
        tokio::time::timeout(within, self.child.wait())
            .await
            .is_ok()
    }

    /// Closes the client and waits for the edge to exit.
    pub async fn stop(mut self) {
        let _ = self.client.cancel().await;
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
    }
}

/// The `_meta` of a call signed by `key` now.
pub fn signed_meta(
    token: &str,
    key: &SigningKey,
    server: &str,
    tool: &str,
    arguments: &Value,
    request_id: &str,
) -> Map<String, Value> {
    let call = ClientCall {
        server,
        tool,
        arguments,
        request_id,
        session_id: &format!("{}-1", key_hex(key)),
        issued_at_ms: now_ms(),
    };
    client_meta(token, key, &call).expect("sign the request")
}

/// The verdict and reason code of a result (`allow` for a plain result).
pub fn verdict(result: &CallToolResult) -> (String, String) {
    if result.is_error == Some(true) {
        let s = result.structured_content.clone().unwrap_or(Value::Null);
        (
            s["verdict"].as_str().unwrap_or("?").to_string(),
            s["reason_code"].as_str().unwrap_or("?").to_string(),
        )
    } else {
        ("allow".to_string(), String::new())
    }
}

/// The text of a result's first content block.
pub fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The lines of the counting upstream's log.
pub fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `chio arena replay DIR`: its exit success, and its standard output and
/// error together.
pub fn replay(dir: &Path) -> (bool, String) {
    let output = std::process::Command::new(chio_bin())
        .args(["arena", "replay", dir.to_str().unwrap()])
        .output()
        .unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

/// A copy of the folder `from` (files and folders) at `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The calls a session folder records (`calls.jsonl`), one JSON value per
/// line, in order.
pub fn session_calls(folder: &Path) -> Vec<Value> {
    std::fs::read_to_string(folder.join("calls.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The verdicts a session folder records, in order.
pub fn session_verdicts(folder: &Path) -> Vec<String> {
    session_calls(folder)
        .iter()
        .map(|call| call["verdict"].as_str().unwrap().to_string())
        .collect()
}

/// The `--upstream` value of the counting upstream `notes`, logging each
/// call it receives to `log`.
pub fn counting_upstream(python: &Path, log: &Path) -> String {
    format!(
        "notes={}",
        shell_words::join([
            python.to_str().unwrap(),
            fixture("counting_server.py").to_str().unwrap(),
            log.to_str().unwrap(),
        ])
    )
}

/// The edge's arguments for the counting upstream logging to `log`, under
/// the authority file `authority`.
pub fn counting_args(python: &Path, log: &Path, authority: &Path) -> Vec<String> {
    vec![
        "--upstream".into(),
        counting_upstream(python, log),
        "--authority".into(),
        authority.to_str().unwrap().into(),
    ]
}
