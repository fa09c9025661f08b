//! The trust-control database file: its schema, created on open and
//! versioned with `PRAGMA user_version`, the `PRAGMA application_id` that
//! marks it as trust-control's (a stray database is refused instead of
//! being written into), the migration from version 1 (which carries the
//! requests a version 1 file admitted over as seen, see `version_one`), and
//! the durability pragmas (`journal_mode=WAL`, `synchronous=FULL`).

use std::path::Path;

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::version_one;
use crate::TrustError;

/// The schema version this build creates and reads.
pub const SCHEMA_VERSION: i64 = 2;
/// `PRAGMA application_id` of a trust-control database ("CHIT").
pub const APPLICATION_ID: i64 = 0x4348_4954;
pub(super) const SCHEMA_V1: &str = "
CREATE TABLE issuer_keys (
    public_key_hex TEXT PRIMARY KEY
) WITHOUT ROWID;
CREATE TABLE revocations (
    id            TEXT PRIMARY KEY,
    revoked_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE budget_holds (
    hold_id    TEXT PRIMARY KEY,
    budget_key TEXT NOT NULL,
    amount     INTEGER NOT NULL CHECK (amount >= 0),
    state      TEXT NOT NULL CHECK (state IN ('held', 'committed', 'released'))
) WITHOUT ROWID;
CREATE TABLE budget_usage (
    budget_key TEXT PRIMARY KEY,
    used       INTEGER NOT NULL CHECK (used >= 0)
) WITHOUT ROWID;
CREATE TABLE shares (
    child_id  TEXT PRIMARY KEY,
    parent_id TEXT NOT NULL,
    child_bps INTEGER NOT NULL CHECK (child_bps BETWEEN 0 AND 10000)
) WITHOUT ROWID;
CREATE INDEX shares_by_parent ON shares (parent_id);
CREATE TABLE receipts (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    receipt_id TEXT NOT NULL UNIQUE,
    body       BLOB NOT NULL
);
CREATE TABLE labels (
    label_key TEXT NOT NULL,
    label     TEXT NOT NULL,
    PRIMARY KEY (label_key, label)
) WITHOUT ROWID;
";

/// What version 2 adds to version 1: the first share recorded for each
/// parent (later admissions check against the smaller of it and the share
/// presented) and the request ids seen per lineage and principal, kept
/// durably so a replay is refused after a restart and on any kernel.
pub(super) const SCHEMA_V2_ADDITIONS: &str = "
CREATE TABLE share_parents (
    parent_id  TEXT PRIMARY KEY,
    parent_bps INTEGER NOT NULL CHECK (parent_bps BETWEEN 0 AND 10000)
) WITHOUT ROWID;
CREATE TABLE seen_requests (
    request_key TEXT PRIMARY KEY
) WITHOUT ROWID;
";

/// Sets durability pragmas and creates or checks the schema.
pub(super) fn prepare_connection(conn: &Connection, path: &Path) -> Result<(), TrustError> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(TrustError::Storage {
            detail: format!("journal_mode is {mode}, WAL could not be enabled"),
        });
    }
    conn.pragma_update(None, "synchronous", "FULL")?;
    let application_id: i64 = conn.pragma_query_value(None, "application_id", |row| row.get(0))?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let foreign = || TrustError::ForeignDatabase {
        path: path.display().to_string(),
    };
    if application_id == 0 && version == 0 {
        let objects: i64 =
            conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |row| row.get(0))?;
        if objects != 0 {
            return Err(foreign());
        }
        let create = format!(
            "BEGIN IMMEDIATE;\n{SCHEMA_V1}\n{SCHEMA_V2_ADDITIONS}\n\
             PRAGMA application_id = {APPLICATION_ID};\n\
             PRAGMA user_version = {SCHEMA_VERSION};\nCOMMIT;"
        );
        conn.execute_batch(&create)?;
        // Said aloud: a service restarted on a path whose file was lost
        // would otherwise start empty without a word, forgetting every
        // request id, revocation and hold it held.
        tracing::warn!(
            path = %path.display(),
            "created a new, empty trust-control database; if this service held state at this path before, that state is gone"
        );
        return Ok(());
    }
    if application_id != APPLICATION_ID {
        return Err(foreign());
    }
    if version == 1 {
        return migrate_from_version_one(conn, path);
    }
    check_version(version)
}

fn check_version(version: i64) -> Result<(), TrustError> {
    if version != SCHEMA_VERSION {
        return Err(TrustError::UnsupportedSchema {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// Migrates a version 1 file in one transaction: it gains the two tables
/// of version 2, and every request its kernels admitted is recorded as seen
/// (`version_one`), or nothing changes and the migration is refused.
fn migrate_from_version_one(conn: &Connection, path: &Path) -> Result<(), TrustError> {
    let transaction = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    // Another process may have migrated the file since it was first read.
    let version: i64 = transaction.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version != 1 {
        return check_version(version);
    }
    transaction.execute_batch(SCHEMA_V2_ADDITIONS)?;
    let carried = version_one::carried_requests(&transaction, path)?;
    {
        let mut insert =
            transaction.prepare("INSERT INTO seen_requests (request_key) VALUES (?1)")?;
        for key in &carried {
            insert.execute([key])?;
        }
    }
    transaction.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    transaction.commit()?;
    tracing::info!(
        carried = carried.len(),
        "trust-control file migrated from schema version 1"
    );
    Ok(())
}
