//! A trust-control file written by the version 1 build (`tests/fixtures`),
//! opened by this one: the migration to the current schema must carry over
//! every request the file's kernel admitted, so a replay of it is refused
//! through the operations a kernel's admission uses (`record_request`, and
//! `RecordRequest` leading a decision batch), on the first open and after a
//! restart, while every version 1 row stays as it was. A file holding an
//! admission the migration cannot attribute to a run is refused and left
//! unchanged.

use std::path::{Path, PathBuf};

use chio_kernel::batch::OpAnswer;
use chio_kernel::ledger::seen_request_key;
use chio_trust::model::BatchOp;
use chio_trust::store::sqlite::SCHEMA_VERSION;
use chio_trust::{SqliteTrustStore, TrustError, TrustStore};
use rusqlite::types::Value;
use rusqlite::Connection;

/// The run namespace every id of the fixtures lives in.
const RUN: &str = "run-v1fixture/";

/// The requests the version 1 kernel admitted: lineage, principal, request id.
const ADMITTED: [(&str, &str, &str); 4] = [
    ("alice-files", "alice", "req-read"),
    ("alice-files", "alice", "req-write"),
    ("alice-files", "alice", "req-failed"),
    ("alice-files", "bob", "req-bob"),
];

/// The tables of schema version 1.
const VERSION_ONE_TABLES: [&str; 7] = [
    "issuer_keys",
    "revocations",
    "budget_holds",
    "budget_usage",
    "shares",
    "receipts",
    "labels",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A copy of fixture `name` in a fresh directory.
fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::copy(fixture(name), &path).unwrap();
    (dir, path)
}

/// The key a current kernel records for a request, in the run namespace.
fn kernel_key(lineage: &str, principal: &str, request_id: &str) -> String {
    format!("{RUN}{}", seen_request_key(lineage, principal, request_id))
}

/// Every row of every version 1 table, read without this build's store.
fn version_one_rows(path: &Path) -> Vec<(String, Vec<Vec<Value>>)> {
    let conn = Connection::open(path).unwrap();
    VERSION_ONE_TABLES
        .iter()
        .map(|table| {
            let mut statement = conn
                .prepare(&format!("SELECT * FROM {table} ORDER BY 1"))
                .unwrap();
            let columns = statement.column_count();
            let rows = statement
                .query_map([], |row| {
                    (0..columns).map(|i| row.get::<_, Value>(i)).collect()
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            (table.to_string(), rows)
        })
        .collect()
}

fn user_version(path: &Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

/// The user version and application id in a SQLite file's header, read as
/// bytes so the file is not opened as a database.
fn header_version_and_application(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (word(60), word(68))
}

/// Asserts every admitted request of the fixture is refused as a replay by
/// a decision batch (which stops there, before its hold) and by
/// `record_request`.
async fn assert_admitted_are_refused(store: &SqliteTrustStore) {
    for (lineage, principal, request_id) in ADMITTED {
        let key = kernel_key(lineage, principal, request_id);
        let answers = store
            .run_batch(vec![
                BatchOp::RecordRequest { key: key.clone() },
                BatchOp::Hold {
                    hold_id: format!("{key}#invocations/{lineage}"),
                    key: format!("{RUN}invocations/{lineage}"),
                    amount: 1,
                    limit: 100,
                },
            ])
            .await
            .unwrap();
        assert_eq!(
            answers,
            vec![Ok(OpAnswer::Fresh(false))],
            "{request_id} by {principal} was admitted by version 1 and must be refused as a replay"
        );
        assert!(
            !store.record_request(&key).await.unwrap(),
            "{request_id} by {principal} must be refused by record_request"
        );
    }
}

// Proves the requests a version 1 file admitted are refused as replays once it is migrated, on the first open.
#[tokio::test]
async fn admitted_requests_are_refused_after_migration() {
    let (_dir, path) = copy_of("version-1.db");
    let before = version_one_rows(&path);
    let store = SqliteTrustStore::open(&path).unwrap();
    assert_admitted_are_refused(&store).await;

    // What version 1 did not admit, and what it admitted in no other run, is fresh.
    for key in [
        kernel_key("alice-files", "alice", "req-new"),
        kernel_key("alice-old", "alice", "req-revoked"),
        format!(
            "run-other/{}",
            seen_request_key("alice-files", "alice", "req-read")
        ),
    ] {
        assert!(store.record_request(&key).await.unwrap(), "{key} is fresh");
        assert!(
            !store.record_request(&key).await.unwrap(),
            "{key} is now seen"
        );
    }
    let fresh = kernel_key("alice-files", "alice", "req-batch");
    let answers = store
        .run_batch(vec![BatchOp::RecordRequest { key: fresh }])
        .await
        .unwrap();
    assert_eq!(answers, vec![Ok(OpAnswer::Fresh(true))]);

    // Version 1's rows are read as it wrote them.
    assert_eq!(
        store.revoked_at(&format!("{RUN}alice-old")).await.unwrap(),
        Some(0)
    );
    assert_eq!(store.count_receipts().await.unwrap(), 6);
    assert_eq!(store.list_issuer_keys().await.unwrap().len(), 1);
    drop(store);
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    assert_eq!(
        version_one_rows(&path),
        before,
        "the migration changes no version 1 row"
    );

    let reopened = SqliteTrustStore::open(&path).unwrap();
    assert_admitted_are_refused(&reopened).await;
}

// Proves the carried-over records survive a restart: a file migrated and closed still refuses the replays when reopened.
#[tokio::test]
async fn admitted_requests_are_refused_after_a_restart() {
    let (_dir, path) = copy_of("version-1.db");
    drop(SqliteTrustStore::open(&path).unwrap());
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    let store = SqliteTrustStore::open(&path).unwrap();
    assert_admitted_are_refused(&store).await;
    // Budgets count version 1's holds: alice-files has 3 of 5 used.
    let hold = store
        .hold_budget(
            &format!(
                "{}#invocations/alice-files",
                kernel_key("alice-files", "alice", "req-new")
            ),
            &format!("{RUN}invocations/alice-files"),
            3,
            5,
        )
        .await
        .unwrap();
    assert_eq!(
        hold,
        chio_trust::model::HoldOutcome::Refused { used: 3, limit: 5 }
    );
}

// Proves the committed fixture stays a version 1 file: the tests migrate copies, never the file itself.
#[tokio::test]
async fn the_fixture_itself_is_untouched() {
    let original = fixture("version-1.db");
    let bytes = std::fs::read(&original).unwrap();
    assert_eq!(
        header_version_and_application(&original),
        (
            1,
            u32::try_from(chio_trust::store::sqlite::APPLICATION_ID).unwrap()
        )
    );
    let (_dir, path) = copy_of("version-1.db");
    drop(SqliteTrustStore::open(&path).unwrap());
    assert_eq!(std::fs::read(&original).unwrap(), bytes);
    for suffix in ["-wal", "-shm"] {
        let beside = PathBuf::from(format!("{}{suffix}", original.display()));
        assert!(!beside.exists(), "{} was written", beside.display());
    }
}

/// Opens `path` and expects the migration to be refused, naming `needle`,
/// with the file left at version 1 and its rows unchanged.
fn assert_refused(path: &Path, needle: &str) {
    let before = version_one_rows(path);
    let err = SqliteTrustStore::open(path).unwrap_err();
    let TrustError::MigrationRefused { problem, .. } = &err else {
        panic!("expected a refused migration, got {err}");
    };
    assert!(problem.contains(needle), "{err}");
    assert!(err.to_string().contains("new --db file"), "{err}");
    assert_eq!(user_version(path), 1);
    assert_eq!(version_one_rows(path), before);
    let tables: i64 = Connection::open(path)
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('seen_requests', 'share_parents')",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(tables, 0, "a refused migration leaves no version 2 table");
}

// Proves a version 1 file whose kernel admitted a request without a budget hold is refused, not migrated with the request forgotten.
#[test]
fn an_admission_without_a_run_refuses_the_migration() {
    let (_dir, path) = copy_of("version-1-unbudgeted.db");
    assert_refused(&path, "req-unbudgeted");
    // And again: nothing of the first attempt stayed behind.
    assert_refused(&path, "req-unbudgeted");
}

// Proves a hold or receipt that no version 1 kernel wrote refuses the migration rather than being skipped.
#[test]
fn rows_no_kernel_wrote_refuse_the_migration() {
    let (_dir, path) = copy_of("version-1.db");
    Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO budget_holds (hold_id, budget_key, amount, state)
             VALUES ('h-1', 'inv:cap-1', 1, 'committed')",
            [],
        )
        .unwrap();
    assert_refused(&path, "h-1");

    let (_dir, path) = copy_of("version-1.db");
    Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO receipts (receipt_id, body) VALUES ('r-opaque', X'00')",
            [],
        )
        .unwrap();
    assert_refused(&path, "r-opaque");
}
