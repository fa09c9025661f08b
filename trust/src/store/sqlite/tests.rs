//! Tests of the SQLite store that need its file: durability across a
//! reopen, WAL mode, schema checks and migration, and group commit. The
//! behaviour every store shares is the conformance suite's.

use super::schema::SCHEMA_V1;
use super::*;
use crate::model::{HoldOutcome, ShareOutcome};

// Proves a store whose file is removed, replaced or emptied while it runs, or whose write-ahead log is removed, refuses every later write naming the cause, instead of answering as durable a write the next start would not find; the writes before it stand.
#[tokio::test]
async fn a_lost_file_refuses_every_later_write() {
    type Lose = fn(&std::path::Path);
    let cases: [(&str, Lose, &str); 4] = [
        (
            "removed",
            |p| std::fs::remove_file(p).unwrap(),
            "was removed",
        ),
        (
            "replaced",
            |p| {
                std::fs::remove_file(p).unwrap();
                std::fs::write(p, b"another file").unwrap();
            },
            "was replaced",
        ),
        (
            "emptied",
            |p| {
                std::fs::File::create(p).unwrap();
            },
            "was emptied",
        ),
        (
            "log",
            |p| {
                let mut wal = p.as_os_str().to_owned();
                wal.push("-wal");
                std::fs::remove_file(wal).unwrap();
            },
            "write-ahead log",
        ),
    ];
    for (name, lose, cause) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.db");
        let store = SqliteTrustStore::open(&path).unwrap();
        store.revoke("cap-1", 42).await.unwrap();
        lose(&path);
        let err = store.revoke("cap-2", 43).await.unwrap_err().to_string();
        assert!(err.contains(cause), "{name}: {err}");
        assert!(
            store.hold_budget("h-1", "inv:cap-1", 1, 3).await.is_err(),
            "{name}: a hold was answered as durable"
        );
    }
}

// Proves a write survives dropping the store and reopening the file, in WAL mode.
#[tokio::test]
async fn state_survives_reopen_and_file_is_wal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.db");
    {
        let store = SqliteTrustStore::open(&path).unwrap();
        store
            .append_receipts(vec![ReceiptRecord {
                receipt_id: "r-1".into(),
                body: b"{\"a\":1}".to_vec(),
            }])
            .await
            .unwrap();
        store.revoke("cap-1", 42).await.unwrap();
        store.hold_budget("h-1", "inv:cap-1", 1, 3).await.unwrap();
        store
            .join_labels(vec!["s".into()], "internal")
            .await
            .unwrap();
    }
    let store = SqliteTrustStore::open(&path).unwrap();
    assert_eq!(store.count_receipts().await.unwrap(), 1);
    let page = store.list_receipts(0, 10).await.unwrap();
    assert_eq!(page.receipts[0].body, b"{\"a\":1}");
    assert_eq!(store.revoked_at("cap-1").await.unwrap(), Some(42));
    assert_eq!(
        store.hold_budget("h-2", "inv:cap-1", 3, 3).await.unwrap(),
        HoldOutcome::Refused { used: 1, limit: 3 },
        "the first hold must still count after reopening"
    );
    let labels = store.read_labels(vec!["s".into()]).await.unwrap();
    assert!(labels["s"].contains("internal"));

    let probe = Connection::open(&path).unwrap();
    let mode: String = probe
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = probe
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}

// Proves a share freed by a revocation before trust-control restarted is free after it: the shares and the revocation are both read back from the file.
#[tokio::test]
async fn a_revoked_share_stays_free_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.db");
    {
        let store = SqliteTrustStore::open(&path).unwrap();
        store.admit_share("p", "c1", 6_000, 10_000).await.unwrap();
        store.revoke("c1", 7).await.unwrap();
    }
    let store = SqliteTrustStore::open(&path).unwrap();
    assert_eq!(
        store.admit_share("p", "c2", 10_000, 10_000).await.unwrap(),
        ShareOutcome::Admitted {
            sum_bps: 10_000,
            parent_bps: 10_000
        }
    );
    assert_eq!(
        store.admit_share("p", "c3", 1, 10_000).await.unwrap(),
        ShareOutcome::Refused {
            sibling_sum_bps: 10_000,
            parent_bps: 10_000
        }
    );
}

// Proves a negative revocation instant edited into a file (budget columns have CHECK constraints) is refused as a storage error naming its column, on a read and on a repeated revocation, never read as a wrapped number.
#[tokio::test]
async fn a_negative_value_in_the_file_names_its_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.db");
    SqliteTrustStore::open(&path)
        .unwrap()
        .revoke("c1", 7)
        .await
        .unwrap();
    Connection::open(&path)
        .unwrap()
        .execute_batch("UPDATE revocations SET revoked_at_ms = -5;")
        .unwrap();
    let store = SqliteTrustStore::open(&path).unwrap();
    let revoked = store.revoked_at("c1").await.unwrap_err().to_string();
    assert!(
        revoked.contains("negative revocations.revoked_at_ms"),
        "{revoked}"
    );
    let again = store.revoke("c1", 9).await.unwrap_err().to_string();
    assert!(
        again.contains("negative revocations.revoked_at_ms"),
        "{again}"
    );
}

// Proves a database of another application is refused rather than written into.
#[test]
fn foreign_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER);")
        .unwrap();
    let err = SqliteTrustStore::open(&path).unwrap_err();
    assert!(matches!(err, TrustError::ForeignDatabase { .. }), "{err}");
}

// Proves a version 1 file is migrated in place: it gains the seen-request and parent-share tables and keeps its rows.
#[tokio::test]
async fn version_one_files_are_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "{SCHEMA_V1}\nPRAGMA application_id = {APPLICATION_ID};\nPRAGMA user_version = 1;"
        ))
        .unwrap();
        conn.execute(
            "INSERT INTO revocations (id, revoked_at_ms) VALUES ('cap', 7)",
            [],
        )
        .unwrap();
    }
    let store = SqliteTrustStore::open(&path).unwrap();
    assert_eq!(store.revoked_at("cap").await.unwrap(), Some(7));
    assert!(store.record_request("k").await.unwrap());
    assert!(!store.record_request("k").await.unwrap());
    drop(store);
    let reopened = SqliteTrustStore::open(&path).unwrap();
    assert!(
        !reopened.record_request("k").await.unwrap(),
        "seen request ids survive a restart"
    );
    drop(reopened);
    let conn = Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}

// Proves a newer schema version is refused with the version named.
#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.db");
    drop(SqliteTrustStore::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let err = SqliteTrustStore::open(&path).unwrap_err();
    assert_eq!(
        err,
        TrustError::UnsupportedSchema {
            found: SCHEMA_VERSION + 1,
            supported: SCHEMA_VERSION
        }
    );
}

// Proves concurrent appends share commits: fewer transactions than appends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_are_group_committed() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteTrustStore::open(dir.path().join("trust.db")).unwrap();
    let before = store.writer_stats();
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .append_receipts(vec![ReceiptRecord {
                        receipt_id: format!("r-{i}"),
                        body: vec![i as u8],
                    }])
                    .await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let after = store.writer_stats();
    let batches = after.batches - before.batches;
    assert_eq!(after.jobs - before.jobs, 200);
    assert!(
        batches < 100,
        "200 concurrent appends took {batches} transactions; group commit is not grouping"
    );
    assert_eq!(store.count_receipts().await.unwrap(), 200);
}

// Proves a failing job in a batch leaves the other jobs of the batch applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflict_does_not_undo_its_batch_neighbours() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteTrustStore::open(dir.path().join("trust.db")).unwrap();
    let first = ReceiptRecord {
        receipt_id: "r".into(),
        body: b"one".to_vec(),
    };
    store.append_receipts(vec![first]).await.unwrap();
    let conflicting = store.append_receipts(vec![
        ReceiptRecord {
            receipt_id: "fresh".into(),
            body: b"x".to_vec(),
        },
        ReceiptRecord {
            receipt_id: "r".into(),
            body: b"two".to_vec(),
        },
    ]);
    let neighbour = store.append_receipts(vec![ReceiptRecord {
        receipt_id: "n".into(),
        body: b"n".to_vec(),
    }]);
    let (conflicting, neighbour) = tokio::join!(conflicting, neighbour);
    assert!(matches!(
        conflicting,
        Err(TrustError::ReceiptConflict { .. })
    ));
    assert_eq!(neighbour.unwrap().appended, 1);
    let ids: Vec<String> = store
        .list_receipts(0, 10)
        .await
        .unwrap()
        .receipts
        .into_iter()
        .map(|r| r.receipt_id)
        .collect();
    assert_eq!(ids, vec!["r".to_owned(), "n".to_owned()]);
}

// Proves a new database is created readable and writable by its owner alone (its write-ahead files too), and that a database file, or a companion file, other users may write, or another user owns, is refused before it is opened, naming the fix: its owner could rewrite revocations, seen request ids and budgets while the service runs.
#[cfg(unix)]
#[tokio::test]
async fn a_database_others_may_write_or_own_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trust.db");
    let store = SqliteTrustStore::open(&path).unwrap();
    store.revoke("cap-1", 42).await.unwrap();
    drop(store);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    let wal = dir.path().join("trust.db-wal");
    if wal.exists() {
        assert_eq!(mode(&wal), 0o600);
    }
    let opened = SqliteTrustStore::open(&path);
    assert!(opened.is_ok(), "its own private file opens");
    drop(opened);
    // The writer thread closes its connection after the store is dropped,
    // and that close deletes the -shm file: wait for it, so it cannot
    // remove the file this test writes below.
    let shm = dir.path().join("trust.db-shm");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while shm.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!shm.exists(), "the writer never closed its connection");
    for (file, bits) in [(path.clone(), 0o666), (path.clone(), 0o620)] {
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(bits)).unwrap();
        let refused = SqliteTrustStore::open(&path).unwrap_err();
        assert!(
            matches!(refused, TrustError::UnusableFile { .. }),
            "{refused}"
        );
        assert!(
            refused.to_string().contains("other users may write it"),
            "{refused}"
        );
        assert!(refused.to_string().contains("chmod 600"), "{refused}");
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&shm, b"").unwrap();
    std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o666)).unwrap();
    let refused = SqliteTrustStore::open(&path).unwrap_err();
    assert!(refused.to_string().contains("trust.db-shm"), "{refused}");
    std::fs::remove_file(&shm).unwrap();
    // Another user's file: only a privileged test run can make one.
    if rustix::process::geteuid().is_root() {
        std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
        let refused = SqliteTrustStore::open(&path).unwrap_err();
        assert!(
            refused.to_string().contains("owned by user 65534"),
            "{refused}"
        );
    }
}
