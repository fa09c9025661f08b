//! `chio mcp serve --listen`: the edge over MCP's streamable HTTP transport,
//! in front of the counting upstream on the MCP Python SDK, driven by the
//! SDK's own streamable HTTP client. A covered call reaches the upstream, a
//! call outside the capability and malformed or oversized bodies do not,
//! the session folder written on SIGTERM replays, and a non-loopback address is refused without its flag. Needs the venv
//! `CHIO_MCP_PYTHON` names (see `import_mcp.rs`).

use crate::mcp_edge_util;

use std::process::Stdio;
use std::time::Duration;

use mcp_edge_util::*;
use serde_json::Value;

/// A loopback port free when asked.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until `port` accepts connections.
async fn wait_listening(port: u16) {
    for _ in 0..600 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the edge does not listen on {port} within 60 s");
}

// Over streamable HTTP, the SDK's client lists the covered tool; its signed covered call reaches the upstream, its call outside the capability is refused by the kernel and does not; a body that is not JSON, one over the bound and JSON-RPC of the wrong shape are refused with HTTP errors; the upstream saw exactly one call; on SIGTERM the session folder becomes a bundle chio arena replay re-decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_allowed_call_reaches_upstream_and_refused_traffic_does_not() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let token = grant(&authority, &client_key(3), "notes", "echo", &[]);
    let port = free_port();
    let upstream = counting_upstream(&python, &log);
    let bound = 4096;
    let mut edge = tokio::process::Command::new(chio_bin())
        .args(["mcp", "serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--upstream", &upstream, "--authority"])
        .arg(&authority)
        .args(["--max-message-bytes", &bound.to_string()])
        .arg("--session-out")
        .arg(dir.path().join("session"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_listening(port).await;
    let output = tokio::process::Command::new(&python)
        .env("EDGE_TOKEN", &token)
        .env("EDGE_SECRET_HEX", hex::encode([3u8; 32]))
        .arg(fixture("edge_http_client.py"))
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .arg(bound.to_string())
        .output()
        .await
        .unwrap();
    // SIGTERM: the edge stops serving and makes its session folder a bundle.
    let pid = edge.id().unwrap().to_string();
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(term.success());
    let exited = tokio::time::timeout(Duration::from_secs(60), edge.wait()).await;
    assert!(exited.is_ok(), "the edge did not exit on SIGTERM");
    assert!(
        output.status.success(),
        "edge_http_client.py failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let got: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(
        got["list_with_capability"],
        serde_json::json!(["echo"]),
        "{got}"
    );
    assert_eq!(got["allowed"]["is_error"], false, "{got}");
    assert_eq!(got["allowed"]["text"], "over http allowed", "{got}");
    assert_eq!(got["denied"]["is_error"], true, "{got}");
    assert_eq!(got["denied"]["reason_code"], "out-of-scope", "{got}");
    assert_eq!(got["oversized"], 413, "{got}");
    for step in ["not_json", "wrong_shape"] {
        let status = got[step].as_u64().unwrap();
        assert!((400..500).contains(&status), "{step}: {got}");
    }
    // What the stdio gate answers, the HTTP edge answers with 400 and the
    // same JSON-RPC error, before the SDK's server reads the body.
    assert_eq!(
        got["answers"],
        serde_json::json!({
            "not_json": [400, -32700, null],
            "bad_utf8": [400, -32700, null],
            "deep": [400, -32700, null],
            "huge_number": [400, -32700, null],
            "params_not_object": [400, -32602, 3],
            "arguments_not_object": [400, -32602, 4],
        }),
        "{got}"
    );
    let reached = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        reached, "echo over http allowed\n",
        "the upstream saw: {reached}"
    );
}

// A --listen address that is not loopback is refused before anything starts (CHIO-MCP-CONFIG, exit 2) unless --allow-non-loopback is given; --stdio and --listen together are refused by the flag parser.
#[test]
fn non_loopback_listen_is_refused_without_its_flag() {
    let dir = tempfile::tempdir().unwrap();
    let authority = authority(dir.path());
    let output = std::process::Command::new(chio_bin())
        .args([
            "mcp",
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--upstream",
            "x=true",
        ])
        .arg("--authority")
        .arg(&authority)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("CHIO-MCP-CONFIG"), "{stderr}");
    assert!(stderr.contains("not a loopback address"), "{stderr}");
    let both = std::process::Command::new(chio_bin())
        .args(["mcp", "serve", "--stdio", "--listen", "127.0.0.1:0"])
        .args(["--upstream", "x=true", "--authority"])
        .arg(&authority)
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&both.stderr).contains("cannot be used with"),
        "{}",
        String::from_utf8_lossy(&both.stderr)
    );
}

/// The status code of a raw `POST /mcp` carrying an initialize request with
/// `host` as its Host header.
async fn status_for_host(port: u16, host: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = vec![0u8; 12];
    stream.read_exact(&mut head).await.unwrap();
    let line = String::from_utf8_lossy(&head);
    line[9..12]
        .parse()
        .unwrap_or_else(|_| panic!("status line {line}"))
}

// The HTTP server accepts loopback Host headers and those --allowed-host names, and refuses any other (a DNS-rebinding page's) before anything reaches the MCP handler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_accepts_only_loopback_and_allowed_hosts() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let authority = authority(dir.path());
    let port = free_port();
    let upstream = counting_upstream(&python, &dir.path().join("calls.log"));
    let mut edge = tokio::process::Command::new(chio_bin())
        .args(["mcp", "serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--allowed-host", "edge.internal"])
        .args(["--upstream", &upstream, "--authority"])
        .arg(&authority)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_listening(port).await;
    let loopback = status_for_host(port, &format!("127.0.0.1:{port}")).await;
    let allowed = status_for_host(port, "edge.internal").await;
    let other = status_for_host(port, "rebind.example").await;
    let _ = edge.kill().await;
    assert_eq!(loopback, 200, "loopback Host");
    assert_eq!(allowed, 200, "--allowed-host");
    assert_eq!(other, 403, "another Host");
}
