//! Process tests of the trust-control operations through the real
//! `chio trust serve`: every operation end to end with the typed client,
//! concurrent share admission and budget holds that never exceed their
//! bound, and acknowledged receipts that survive `kill -9` and a restart.

use crate::trust_process;

use std::collections::BTreeMap;
use std::sync::Arc;

use chio_trust::model::{
    HoldOutcome, HoldState, IssuerKey, ReceiptRecord, ReleaseOutcome, ShareOutcome,
};
use chio_trust::{TrustClient, TrustStore};
use tokio::sync::Mutex;

use trust_process::{token_file, TrustProcess};

fn receipt(id: &str, body: &str) -> ReceiptRecord {
    ReceiptRecord {
        receipt_id: id.to_owned(),
        body: body.as_bytes().to_vec(),
    }
}

// Proves each operation works through the binary and its state survives a clean restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_end_to_end_and_across_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("trust.db");
    let token = token_file(dir.path(), trust_process::TOKEN);
    let mut process = TrustProcess::start(&db, &token);
    let client = process.client().await;

    let key =
        IssuerKey::parse_hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
            .unwrap();
    assert!(client.add_issuer_key(key).await.unwrap());
    assert!(!client.add_issuer_key(key).await.unwrap());
    assert_eq!(client.list_issuer_keys().await.unwrap(), vec![key]);

    assert!(!client.is_revoked("cap-9").await.unwrap());
    assert!(client.revoke("cap-9", 7).await.unwrap().newly_revoked);
    assert!(client.is_revoked("cap-9").await.unwrap());

    assert_eq!(
        client.hold_budget("h1", "inv:cap-1", 1, 1).await.unwrap(),
        HoldOutcome::Granted { used: 1, limit: 1 }
    );
    assert_eq!(
        client.hold_budget("h2", "inv:cap-1", 1, 1).await.unwrap(),
        HoldOutcome::Refused { used: 1, limit: 1 }
    );
    assert_eq!(
        client.commit_budget("h1").await.unwrap(),
        HoldState::Committed
    );
    assert_eq!(
        client.release_budget("h-unknown").await.unwrap(),
        ReleaseOutcome::UnknownHold
    );
    let conflict = client.release_budget("h1").await.unwrap_err();
    assert!(
        conflict.to_string().contains("already committed"),
        "{conflict}"
    );

    assert!(matches!(
        client.admit_share("p", "c1", 5_000, 10_000).await.unwrap(),
        ShareOutcome::Admitted { sum_bps: 5_000, .. }
    ));

    let summary = client
        .append_receipts(vec![receipt("r1", "{\"n\":1}"), receipt("r2", "{\"n\":2}")])
        .await
        .unwrap();
    assert_eq!(summary.appended, 2);
    let conflict = client
        .append_receipts(vec![receipt("r1", "{}")])
        .await
        .unwrap_err();
    assert!(
        conflict
            .to_string()
            .contains("already stored with other bytes"),
        "{conflict}"
    );

    client
        .join_labels(vec!["session-a".into()], "internal")
        .await
        .unwrap();

    assert_eq!(
        process.terminate().code(),
        Some(0),
        "stderr:\n{}",
        process.stderr()
    );
    let restarted = TrustProcess::start(&db, &token);
    let client = restarted.client().await;
    assert_eq!(client.list_issuer_keys().await.unwrap(), vec![key]);
    assert!(client.is_revoked("cap-9").await.unwrap());
    assert_eq!(
        client.hold_budget("h3", "inv:cap-1", 1, 1).await.unwrap(),
        HoldOutcome::Refused { used: 1, limit: 1 },
        "the committed hold still counts after a restart"
    );
    assert!(matches!(
        client.admit_share("p", "c2", 5_001, 10_000).await.unwrap(),
        ShareOutcome::Refused {
            sibling_sum_bps: 5_000,
            ..
        }
    ));
    let page = client.list_receipts(0, 10).await.unwrap();
    let ids: Vec<_> = page
        .receipts
        .iter()
        .map(|r| r.receipt_id.as_str())
        .collect();
    assert_eq!(ids, ["r1", "r2"]);
    let labels = client.read_labels(vec!["session-a".into()]).await.unwrap();
    assert!(labels["session-a"].contains("internal"));
}

// Proves many tasks on several connections racing to admit siblings never exceed the parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_share_admission_never_exceeds_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let process = TrustProcess::start(
        &dir.path().join("trust.db"),
        &token_file(dir.path(), trust_process::TOKEN),
    );
    let clients: Vec<TrustClient> = futures_clients(&process, 4).await;
    let mut tasks = Vec::new();
    for i in 0..64u32 {
        let client = clients[i as usize % clients.len()].clone();
        // Shares of 300..=1,000 bps in a fixed pattern; their total is far above 10,000.
        let child_bps = 300 + (i * 137) % 701;
        tasks.push(tokio::spawn(async move {
            let outcome = client
                .admit_share("parent", &format!("child-{i}"), child_bps, 10_000)
                .await
                .unwrap();
            (child_bps, outcome)
        }));
    }
    let mut admitted_sum = 0u32;
    let mut refused = 0;
    for task in tasks {
        let (child_bps, outcome) = task.await.unwrap();
        match outcome {
            ShareOutcome::Admitted { sum_bps, .. } => {
                admitted_sum += child_bps;
                assert!(sum_bps <= 10_000, "an admission reported sum {sum_bps}");
            }
            ShareOutcome::Refused {
                sibling_sum_bps, ..
            } => {
                refused += 1;
                assert!(
                    sibling_sum_bps + child_bps > 10_000,
                    "refused although it fit"
                );
            }
        }
    }
    assert!(
        admitted_sum <= 10_000,
        "admitted children sum to {admitted_sum} bps"
    );
    assert!(refused > 0, "the race must have refused someone");
    // A probe that fills the remainder exactly is admitted, so the sum is exact.
    let remainder = 10_000 - admitted_sum;
    let probe = clients[0]
        .admit_share("parent", "probe", remainder, 10_000)
        .await
        .unwrap();
    assert_eq!(
        probe,
        ShareOutcome::Admitted {
            sum_bps: 10_000,
            parent_bps: 10_000
        }
    );
}

// Proves concurrent holds against one budget grant exactly the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_holds_grant_exactly_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let process = TrustProcess::start(
        &dir.path().join("trust.db"),
        &token_file(dir.path(), trust_process::TOKEN),
    );
    let clients = futures_clients(&process, 4).await;
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let client = clients[i % clients.len()].clone();
            tokio::spawn(async move {
                client
                    .hold_budget(&format!("h-{i}"), "inv:shared", 1, 10)
                    .await
            })
        })
        .collect();
    let mut granted = 0;
    for task in tasks {
        if let HoldOutcome::Granted { .. } = task.await.unwrap().unwrap() {
            granted += 1;
        }
    }
    assert_eq!(granted, 10);
}

// Proves every receipt acknowledged before a kill -9 is present, byte for byte, after restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_receipts_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("trust.db");
    let token = token_file(dir.path(), trust_process::TOKEN);
    let mut process = TrustProcess::start(&db, &token);
    let clients = futures_clients(&process, 4).await;
    let acknowledged: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
    let mut writers = Vec::new();
    for writer in 0..8 {
        let client = clients[writer % clients.len()].clone();
        let acknowledged = Arc::clone(&acknowledged);
        writers.push(tokio::spawn(async move {
            for n in 0.. {
                let record = receipt(
                    &format!("w{writer}-{n}"),
                    &format!("{{\"w\":{writer},\"n\":{n}}}"),
                );
                match client.append_receipts(vec![record.clone()]).await {
                    Ok(_) => {
                        acknowledged
                            .lock()
                            .await
                            .insert(record.receipt_id, record.body);
                    }
                    // The service was killed: stop writing.
                    Err(_) => return n,
                }
            }
            unreachable!("the loop only ends when the service dies")
        }));
    }
    // Let appends flow, then kill the service mid-stream.
    while acknowledged.lock().await.len() < 300 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let status = process.kill9();
    assert!(!status.success(), "kill -9 must not look like a clean exit");
    for writer in writers {
        writer.await.unwrap();
    }
    let acknowledged = acknowledged.lock().await.clone();

    let restarted = TrustProcess::start(&db, &token);
    let client = restarted.client().await;
    let mut stored = BTreeMap::new();
    let mut after = 0;
    loop {
        let page = client.list_receipts(after, 1_000).await.unwrap();
        for receipt in page.receipts {
            stored.insert(receipt.receipt_id, receipt.body);
        }
        match page.next_after_seq {
            Some(next) => after = next,
            None => break,
        }
    }
    assert_eq!(client.count_receipts().await.unwrap(), stored.len() as u64);
    for (id, body) in &acknowledged {
        assert_eq!(
            stored.get(id),
            Some(body),
            "acknowledged receipt {id} lost by kill -9"
        );
    }
    assert!(stored.len() >= acknowledged.len());
}

/// `count` clients on separate connections, so requests race across sockets.
async fn futures_clients(process: &TrustProcess, count: usize) -> Vec<TrustClient> {
    let mut clients = Vec::with_capacity(count);
    for _ in 0..count {
        clients.push(process.client().await);
    }
    clients
}
