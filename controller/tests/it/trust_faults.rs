//! Fault tests of trust-control through the real `chio trust serve`, each
//! with the outcome documented in docs/faults.md:
//!
//! - restarted mid-stream (SIGTERM, then SIGKILL) on the same address while a
//!   client keeps appending: calls during the outage fail as typed
//!   unavailable or deadline errors naming trust-control, the same client
//!   carries on after the restart, and no acknowledged receipt is lost;
//! - an append that stalls past its deadline (the service is SIGSTOPped):
//!   the client gets a deadline error naming trust-control and the
//!   operation; after SIGCONT a retry is idempotent and the receipt is
//!   stored exactly once;
//! - disk full on the SQLite file (`RLIMIT_FSIZE` set by `ulimit -f` in a
//!   shell that then execs the service, with SIGXFSZ ignored so the write
//!   fails with EFBIG instead of killing the process): appends past the
//!   limit fail with a typed storage error, nothing unacknowledged appears,
//!   and after a restart without the limit every acknowledged receipt is
//!   there and appends succeed again.

use crate::trust_process;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use chio_trust::model::ReceiptRecord;
use chio_trust::{BearerToken, TrustClient, TrustClientConfig, TrustError, TrustStore};

use trust_process::{command, token_file, TrustProcess, TOKEN};

fn receipt(i: usize, body_bytes: usize) -> ReceiptRecord {
    let mut body = format!("{{\"receipt\":{i},\"pad\":\"");
    body.push_str(&"p".repeat(body_bytes));
    body.push_str("\"}");
    ReceiptRecord {
        receipt_id: format!("rcpt-{i:06}"),
        body: body.into_bytes(),
    }
}

fn fast_config() -> TrustClientConfig {
    TrustClientConfig {
        call_deadline: Duration::from_millis(500),
        append_deadline: Duration::from_millis(500),
        connect_timeout: Duration::from_millis(300),
    }
}

/// Starts the binary on a fixed address with the shared token.
fn start_on(dir: &std::path::Path, listen: &str) -> TrustProcess {
    let db = dir.join("trust.db");
    let token = token_file(dir, TOKEN);
    let mut serve = command(&[
        "serve",
        "--db",
        db.to_str().unwrap(),
        "--listen",
        listen,
        "--token-file",
        token.to_str().unwrap(),
        "--print-addr",
    ]);
    TrustProcess::spawn(&mut serve, dir)
}

fn signal(pid: u32, name: &str) {
    let sent = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill -{name} {pid} failed");
}

/// Checks the whole log holds exactly `acknowledged`, byte for byte.
async fn assert_log_is(client: &TrustClient, acknowledged: &BTreeMap<String, Vec<u8>>) {
    let mut listed = BTreeMap::new();
    let mut after = 0;
    loop {
        let page = client.list_receipts(after, 1_000).await.unwrap();
        if page.receipts.is_empty() {
            break;
        }
        for stored in page.receipts {
            after = stored.seq;
            assert!(
                listed.insert(stored.receipt_id, stored.body).is_none(),
                "a receipt is stored twice"
            );
        }
    }
    assert_eq!(
        listed.len(),
        acknowledged.len(),
        "receipts lost or invented"
    );
    assert!(&listed == acknowledged, "a stored body differs");
    assert_eq!(
        client.count_receipts().await.unwrap(),
        acknowledged.len() as u64
    );
}

// Proves a client appending through a SIGTERM and a SIGKILL restart sees only typed errors and loses no acknowledged receipt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_mid_stream_loses_no_acknowledged_receipt() {
    let dir = tempfile::tempdir().unwrap();
    let mut process = start_on(dir.path(), "127.0.0.1:0");
    let listen = process.url.trim_start_matches("http://").to_owned();
    let token = BearerToken::new(TOKEN).unwrap();
    let client = TrustClient::connect_lazy(&process.url, &token, fast_config()).unwrap();

    let stop_writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let client = client.clone();
        let stop_writing = stop_writing.clone();
        tokio::spawn(async move {
            let mut acknowledged = BTreeMap::new();
            let mut outage_errors = Vec::new();
            let started = Instant::now();
            let mut i = 0;
            // Each receipt is retried until acknowledged, as a node retries.
            while !stop_writing.load(std::sync::atomic::Ordering::SeqCst)
                && started.elapsed() < Duration::from_secs(60)
            {
                let record = receipt(i, 32);
                match client.append_receipts(vec![record.clone()]).await {
                    Ok(summary) => {
                        assert_eq!(summary.appended + summary.already_present, 1);
                        acknowledged.insert(record.receipt_id, record.body);
                        i += 1;
                    }
                    Err(error) => {
                        outage_errors.push(error);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
            (acknowledged, outage_errors)
        })
    };

    for stop in ["TERM", "KILL"] {
        tokio::time::sleep(Duration::from_millis(300)).await;
        if stop == "TERM" {
            assert_eq!(process.terminate().code(), Some(0), "{}", process.stderr());
        } else {
            process.kill9();
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        process = start_on(dir.path(), &listen);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop_writing.store(true, std::sync::atomic::Ordering::SeqCst);
    let (acknowledged, outage_errors) = writer.await.unwrap();
    eprintln!(
        "{} receipts acknowledged across two restarts; {} calls failed during the outages; first: {:?}",
        acknowledged.len(),
        outage_errors.len(),
        outage_errors.first().map(ToString::to_string)
    );
    assert!(
        outage_errors.len() >= 2,
        "both restarts must be observed by the client"
    );
    for error in &outage_errors {
        assert!(
            matches!(
                error,
                TrustError::Unavailable { .. } | TrustError::DeadlineExceeded { .. }
            ),
            "an outage must be a typed unavailable or deadline error: {error:?}"
        );
        assert!(error.to_string().starts_with("trust-control "), "{error}");
    }
    assert_log_is(&client, &acknowledged).await;
    drop(process);
}

// Proves an append to a stopped service fails by its deadline naming trust-control, and a retry after resume stores it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_append_past_its_deadline_is_a_typed_deadline_error() {
    let dir = tempfile::tempdir().unwrap();
    let process = TrustProcess::start(&dir.path().join("trust.db"), &token_file(dir.path(), TOKEN));
    let token = BearerToken::new(TOKEN).unwrap();
    let deadline = Duration::from_millis(300);
    let config = TrustClientConfig {
        call_deadline: deadline,
        append_deadline: deadline,
        connect_timeout: deadline,
    };
    let client = TrustClient::connect(&process.url, &token, config)
        .await
        .unwrap();
    let first = receipt(1, 16);
    client.append_receipts(vec![first.clone()]).await.unwrap();

    let pid = process.pid();
    signal(pid, "STOP");
    let stalled = receipt(2, 16);
    let started = Instant::now();
    let error = client
        .append_receipts(vec![stalled.clone()])
        .await
        .unwrap_err();
    let waited = started.elapsed();
    // The authorization path is refused the same way while the service is stopped.
    let revoked = client.is_revoked("cap-1").await.unwrap_err();
    signal(pid, "CONT");

    assert_eq!(
        error,
        TrustError::DeadlineExceeded {
            operation: "append_receipts",
            deadline
        }
    );
    assert_eq!(
        error.to_string(),
        "trust-control deadline exceeded: append_receipts got no answer within 300 ms; check \
         the service's health and load, or raise the deadline"
    );
    assert!(
        waited < deadline + Duration::from_millis(700),
        "the deadline was not enforced: {waited:?}"
    );
    assert!(
        matches!(revoked, TrustError::DeadlineExceeded { .. }),
        "{revoked:?}"
    );

    // The stalled append was never acknowledged; retrying it stores it exactly once.
    let retried = client.append_receipts(vec![stalled.clone()]).await.unwrap();
    assert_eq!(retried.appended + retried.already_present, 1);
    let acknowledged = BTreeMap::from([
        (first.receipt_id, first.body),
        (stalled.receipt_id, stalled.body),
    ]);
    assert_log_is(&client, &acknowledged).await;
}

// Proves disk full on the SQLite file is a typed storage error, invents nothing, and loses no acknowledged receipt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_full_is_a_typed_error_and_keeps_acknowledged_receipts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("trust.db");
    let token_path = token_file(dir.path(), TOKEN);
    // 512 blocks of 512 bytes (dash) or 1 KiB (bash): 256 to 512 KiB per file.
    let script = format!(
        "trap '' XFSZ; ulimit -f 512; exec '{}' trust serve --db '{}' --listen 127.0.0.1:0 \
         --token-file '{}' --print-addr",
        trust_process::binary(),
        db.display(),
        token_path.display()
    );
    let mut limited = Command::new("sh");
    limited.args(["-c", &script]).env_remove("CHIO_TRUST_TOKEN");
    let mut process = TrustProcess::spawn(&mut limited, dir.path());
    let token = BearerToken::new(TOKEN).unwrap();
    let client = TrustClient::connect(&process.url, &token, TrustClientConfig::default())
        .await
        .unwrap();

    let mut acknowledged = BTreeMap::new();
    let mut refusal = None;
    for i in 0..400 {
        let record = receipt(i, 4_000);
        match client.append_receipts(vec![record.clone()]).await {
            Ok(_) => {
                acknowledged.insert(record.receipt_id, record.body);
            }
            Err(error) => {
                refusal = Some(error);
                break;
            }
        }
    }
    let refusal = refusal.expect("400 receipts of 4 KB must exceed a 512 KiB file limit");
    assert!(
        !acknowledged.is_empty(),
        "appends before the limit must succeed"
    );
    let text = refusal.to_string();
    eprintln!(
        "{} receipts acknowledged before disk full; refusal: {text}",
        acknowledged.len()
    );
    assert!(
        matches!(refusal, TrustError::Rejected { .. }),
        "disk full must be a typed rejection: {refusal:?}"
    );
    assert!(
        text.starts_with("trust-control rejected append_receipts: trust-control store failed")
            && text.contains("check the database file and its disk"),
        "{text}"
    );
    // Nothing unacknowledged became visible while the disk is full.
    match client.count_receipts().await {
        Ok(count) => assert_eq!(count, acknowledged.len() as u64),
        Err(error) => assert!(error.to_string().starts_with("trust-control "), "{error}"),
    }
    assert!(
        !process.stderr().contains(TOKEN),
        "the log leaked the token"
    );

    // With the limit lifted, every acknowledged receipt is there and appends work again.
    process.kill9();
    let restarted = TrustProcess::start(&db, &token_path);
    let client = restarted.client().await;
    assert_log_is(&client, &acknowledged).await;
    let next = receipt(10_000, 16);
    client.append_receipts(vec![next.clone()]).await.unwrap();
    acknowledged.insert(next.receipt_id, next.body);
    assert_log_is(&client, &acknowledged).await;
}
