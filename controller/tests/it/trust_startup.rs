//! Process tests of how `chio trust serve` starts and stops: it refuses to
//! start without a usable token (exit code 2, a message naming the fix and
//! never the token), accepts the token from the environment, announces its
//! address, and exits 0 on SIGTERM.

use crate::trust_process;

use std::time::{Duration, Instant};

use chio_trust::TrustStore;

use trust_process::{command, describe, run_to_exit, token_file, TrustProcess, TOKEN};

fn serve_args(db: &str) -> Vec<&str> {
    vec![
        "serve",
        "--db",
        db,
        "--listen",
        "127.0.0.1:0",
        "--print-addr",
    ]
}

/// Runs `cmd` to its exit, asserts exit 2 with every one of `needles` in
/// standard error, and answers standard error.
fn refused(cmd: std::process::Command, needles: &[&str]) -> String {
    let (shown, output) = run_to_exit(cmd);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(2),
        "command: {shown}\n{}",
        describe(&output)
    );
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "missing {needle:?}; command: {shown}\n{}",
            describe(&output)
        );
    }
    assert!(output.stdout.is_empty(), "no address may be announced");
    stderr
}

// Proves a start without any token exits 2 with the fix named, before touching the database.
#[test]
fn refuses_to_start_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("trust.db");
    let needles = [
        "refuses to start without a bearer token",
        "--token-file",
        "CHIO_TRUST_TOKEN",
    ];
    refused(command(&serve_args(db.to_str().unwrap())), &needles);
    assert!(
        !db.exists(),
        "the database must not be created without a token"
    );
}

// Proves empty and short tokens (file or environment) are refused without echoing them.
#[test]
fn refuses_empty_and_short_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("trust.db");
    let db = db.to_str().unwrap();

    let empty = token_file(dir.path(), "");
    let mut args = serve_args(db);
    args.extend(["--token-file", empty.to_str().unwrap()]);
    refused(command(&args), &["without a bearer token"]);

    let secret = "open-sesame-15c";
    let short = token_file(dir.path(), secret);
    let mut args = serve_args(db);
    args.extend(["--token-file", short.to_str().unwrap()]);
    let stderr = refused(command(&args), &["minimum is 16"]);
    assert!(
        !stderr.contains(secret),
        "the token must never be echoed:\n{stderr}"
    );

    let mut from_env = command(&serve_args(db));
    from_env.env("CHIO_TRUST_TOKEN", secret);
    let stderr = refused(from_env, &[]);
    assert!(
        !stderr.contains(secret),
        "the token must never be echoed:\n{stderr}"
    );
}

// Proves a token given both by file and by environment is refused as ambiguous.
#[test]
fn refuses_two_token_sources() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("trust.db");
    let file = token_file(dir.path(), TOKEN);
    let mut args = serve_args(db.to_str().unwrap());
    args.extend(["--token-file", file.to_str().unwrap()]);
    let mut both = command(&args);
    both.env("CHIO_TRUST_TOKEN", TOKEN);
    refused(both, &["use exactly one"]);
}

// Proves a token file that is missing, a folder or longer than 4 KiB, a database file SQLite cannot open, and a database file other users may write, are configuration refusals (exit 2, CHIO-SERVE-CONFIG) naming the fix, never infrastructure failures.
#[test]
fn unusable_token_and_database_files_are_configuration_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("trust.db");
    let long = dir.path().join("long");
    std::fs::write(&long, "t".repeat(5000)).unwrap();
    for token in [dir.path().join("missing"), dir.path().to_path_buf(), long] {
        let mut args = serve_args(db.to_str().unwrap());
        args.extend(["--token-file", token.to_str().unwrap()]);
        refused(
            command(&args),
            &["CHIO-SERVE-CONFIG", "cannot use the token file given"],
        );
    }
    // A file SQLite cannot open as a database (a truncated or foreign
    // file) is the operator's to fix, named without SQLite's statements.
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, "hello world ".repeat(100)).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&garbage, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let file = token_file(dir.path(), TOKEN);
    let mut args = serve_args(garbage.to_str().unwrap());
    args.extend(["--token-file", file.to_str().unwrap()]);
    let stderr = refused(
        command(&args),
        &[
            "CHIO-SERVE-CONFIG",
            "cannot use database file",
            "restore it from a backup",
        ],
    );
    assert!(!stderr.contains("CREATE TABLE"), "{stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&db, b"").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).unwrap();
        let file = token_file(dir.path(), TOKEN);
        let mut args = serve_args(db.to_str().unwrap());
        args.extend(["--token-file", file.to_str().unwrap()]);
        refused(
            command(&args),
            &["CHIO-SERVE-CONFIG", "other users may write it", "chmod 600"],
        );
    }
}

// Proves the environment token starts the service, which answers and exits 0 on SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_token_starts_and_sigterm_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("trust.db");
    let mut serve = command(&serve_args(db.to_str().unwrap()));
    serve.env("CHIO_TRUST_TOKEN", TOKEN);
    let mut process = TrustProcess::spawn(&mut serve, dir.path());
    let client = process.client().await;
    assert_eq!(client.count_receipts().await.unwrap(), 0);
    let started = Instant::now();
    let status = process.terminate();
    assert_eq!(status.code(), Some(0), "stderr:\n{}", process.stderr());
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "a responsive client must not delay shutdown"
    );
    assert!(
        process.stderr().contains("SIGTERM received"),
        "stderr:\n{}",
        process.stderr()
    );
}

// Proves a connected client that stops responding cannot hold shutdown past the grace period.
#[tokio::test(flavor = "current_thread")]
async fn stalled_client_cannot_hold_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let mut process =
        TrustProcess::start(&dir.path().join("trust.db"), &token_file(dir.path(), TOKEN));
    let client = process.client().await;
    assert_eq!(client.count_receipts().await.unwrap(), 0);
    // `terminate` blocks this single-threaded runtime, so the client's
    // connection cannot answer the server's graceful-shutdown handshake.
    let started = Instant::now();
    let status = process.terminate();
    assert_eq!(status.code(), Some(0), "stderr:\n{}", process.stderr());
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "shutdown took {:?}",
        started.elapsed()
    );
    assert!(
        process.stderr().contains("shutdown grace period"),
        "stderr:\n{}",
        process.stderr()
    );
    drop(client);
}

// Proves a node given a control token trust-control refuses stops at its start, exit 2 naming the token file's flag and never the token, before it announces an address; with the right token it starts.
#[test]
fn a_node_refused_by_trust_control_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut trust =
        TrustProcess::start(&dir.path().join("trust.db"), &token_file(dir.path(), TOKEN));
    let cluster = dir.path().join("cluster.token");
    std::fs::write(&cluster, "a-cluster-token-of-thirty-two-bytes!").unwrap();
    let wrong_token = "another-token-0123456789abcdef";
    let wrong = dir.path().join("wrong.token");
    std::fs::write(&wrong, format!("{wrong_token}\n")).unwrap();
    let node = |control_token: &std::path::Path| {
        let mut node = std::process::Command::new(trust_process::binary());
        node.args([
            "node",
            "serve",
            "--name",
            "node-a",
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--cluster-token-file")
        .arg(&cluster)
        .args(["--control-url", &trust.url, "--print-addr"])
        .arg("--control-token-file")
        .arg(control_token);
        node
    };
    let stderr = refused(
        node(&wrong),
        &[
            "trust-control refused the bearer token",
            "--control-token-file",
        ],
    );
    assert!(!stderr.contains(wrong_token), "{stderr}");
    let mut started = node(&dir.path().join("token"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(started.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let _ = started.kill();
    let _ = started.wait();
    assert!(line.starts_with("listening on "), "{line:?}");
    trust.terminate();
}
