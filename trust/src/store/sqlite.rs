//! `SqliteTrustStore`: trust-control state in one SQLite file (bundled
//! SQLite, `journal_mode=WAL`, `synchronous=FULL`), written by a single
//! writer thread with group commit.
//!
//! The handle validates a request, sends a job to the writer over a bounded
//! channel and awaits its reply. The writer takes every job waiting in its
//! queue, runs them in order inside one transaction (each in its own
//! savepoint, so one failing job leaves the others intact), commits once (one
//! fsync for the whole batch) and only then answers each job. No answer, and
//! so no allow that depends on it, is released before the batch is durable;
//! when the commit fails, every job of the batch gets the error.
//!
//! Jobs are boxed closures rather than a `Command` enum: fourteen operations
//! would otherwise need an enum variant, an execution arm and a failure arm
//! each, and the closure keeps each operation's SQL next to its rule.
//!
//! The schema is created on open and versioned with `PRAGMA user_version`;
//! `PRAGMA application_id` marks the file as trust-control's, so a stray
//! database is refused instead of being written into.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use crate::model::{
    check_amount, check_bps, check_id, check_label_keys, check_receipts, commit_transition,
    decide_hold, decide_share, effective_parent_share, plan_append, receipt_page_size,
    release_transition, repeat_hold, AdmittedChild, AppendSummary, HoldOutcome, HoldRecord,
    HoldState, IssuerKey, LabelSets, ReceiptPage, ReceiptRecord, ReleaseOutcome, Revocation,
    ShareOutcome, StoredReceipt,
};
use crate::store::TrustStore;
use crate::TrustError;

/// The schema version this build creates and reads.
pub const SCHEMA_VERSION: i64 = 2;
/// `PRAGMA application_id` of a trust-control database ("CHIT").
pub const APPLICATION_ID: i64 = 0x4348_4954;
/// Jobs waiting for the writer before senders wait; bounds memory under load.
const QUEUE_CAPACITY: usize = 4_096;
/// Most jobs one transaction takes; bounds the latency of the first job.
const MAX_BATCH: usize = 1_024;

const SCHEMA_V1: &str = "
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
const SCHEMA_V2_ADDITIONS: &str = "
CREATE TABLE share_parents (
    parent_id  TEXT PRIMARY KEY,
    parent_bps INTEGER NOT NULL CHECK (parent_bps BETWEEN 0 AND 10000)
) WITHOUT ROWID;
CREATE TABLE seen_requests (
    request_key TEXT PRIMARY KEY
) WITHOUT ROWID;
";

/// What a job hands back once it ran: a function that answers the caller
/// with the job's result, or with the batch's commit error.
type Settle = Box<dyn FnOnce(Option<&TrustError>) + Send>;
/// One operation for the writer; `None` when the batch could not begin.
type Job = Box<dyn FnOnce(Option<&mut Transaction<'_>>) -> Settle + Send>;

/// Counters of the writer, so tests and benchmarks can see group commit.
#[derive(Debug, Default)]
struct WriterCounters {
    batches: AtomicU64,
    jobs: AtomicU64,
}

/// A snapshot of the writer's work since the store was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterStats {
    /// Transactions committed (each one fsync when it wrote anything).
    pub batches: u64,
    /// Jobs answered; `jobs / batches` is the mean group size.
    pub jobs: u64,
}

/// Handle to a SQLite trust-control store; clones share one writer thread,
/// which ends when the last handle is dropped.
#[derive(Debug, Clone)]
pub struct SqliteTrustStore {
    jobs: mpsc::Sender<Job>,
    counters: Arc<WriterCounters>,
}

impl SqliteTrustStore {
    /// Opens (or creates) the database at `path`, checks or creates its
    /// schema, sets WAL and `synchronous=FULL`, and starts the writer thread.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TrustError> {
        let path = path.as_ref();
        let conn = Connection::open(path).map_err(|error| TrustError::Io {
            action: format!("open database {}", path.display()),
            detail: error.to_string(),
            fix: "pass a --db path in an existing, writable directory",
        })?;
        prepare_connection(&conn, path)?;
        let (jobs, receiver) = mpsc::channel(QUEUE_CAPACITY);
        let counters = Arc::new(WriterCounters::default());
        let writer = Writer {
            conn,
            jobs: receiver,
            counters: Arc::clone(&counters),
        };
        std::thread::Builder::new()
            .name("chio-trust-sqlite-writer".to_owned())
            .spawn(move || writer.run())
            .map_err(|error| TrustError::Io {
                action: "start the SQLite writer thread".to_owned(),
                detail: error.to_string(),
                fix: "free system resources and restart",
            })?;
        Ok(SqliteTrustStore { jobs, counters })
    }

    /// How many batches and jobs the writer has committed so far.
    pub fn writer_stats(&self) -> WriterStats {
        WriterStats {
            batches: self.counters.batches.load(Ordering::Relaxed),
            jobs: self.counters.jobs.load(Ordering::Relaxed),
        }
    }

    /// Runs `work` on the writer inside the next batch and returns its result
    /// once that batch is committed.
    async fn call<T, F>(&self, work: F) -> Result<T, TrustError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, TrustError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel::<Result<T, TrustError>>();
        let job: Job = Box::new(move |transaction| {
            let result = match transaction {
                Some(transaction) => run_in_savepoint(transaction, work),
                None => Err(TrustError::StoreClosed),
            };
            Box::new(move |commit_error| {
                let answer = match commit_error {
                    Some(error) => Err(error.clone()),
                    None => result,
                };
                // The caller may have given up (deadline); nothing to do then.
                let _ = reply.send(answer);
            })
        });
        self.jobs
            .send(job)
            .await
            .map_err(|_| TrustError::StoreClosed)?;
        answer.await.map_err(|_| TrustError::StoreClosed)?
    }
}

/// Runs one job in a savepoint: released on success, rolled back on error.
fn run_in_savepoint<T>(
    transaction: &mut Transaction<'_>,
    work: impl FnOnce(&Connection) -> Result<T, TrustError>,
) -> Result<T, TrustError> {
    let savepoint = transaction.savepoint()?;
    let result = work(&savepoint)?;
    savepoint.commit()?;
    Ok(result)
}

/// Sets durability pragmas and creates or checks the schema.
fn prepare_connection(conn: &Connection, path: &Path) -> Result<(), TrustError> {
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
        return Ok(());
    }
    if application_id != APPLICATION_ID {
        return Err(foreign());
    }
    if version == 1 {
        // Version 1 files gain the two tables; nothing else changed.
        let migrate = format!(
            "BEGIN IMMEDIATE;\n{SCHEMA_V2_ADDITIONS}\nPRAGMA user_version = {SCHEMA_VERSION};\nCOMMIT;"
        );
        conn.execute_batch(&migrate)?;
        return Ok(());
    }
    if version != SCHEMA_VERSION {
        return Err(TrustError::UnsupportedSchema {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// The single writer: owns the connection and the job queue.
struct Writer {
    conn: Connection,
    jobs: mpsc::Receiver<Job>,
    counters: Arc<WriterCounters>,
}

impl Writer {
    /// Serves batches until every handle is dropped.
    fn run(mut self) {
        let _span = tracing::info_span!("sqlite_writer").entered();
        while let Some(first) = self.jobs.blocking_recv() {
            let mut batch = Vec::with_capacity(16);
            batch.push(first);
            while batch.len() < MAX_BATCH {
                match self.jobs.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            self.apply(batch);
        }
        tracing::debug!("all store handles dropped; writer stops");
    }

    /// Runs a batch in one transaction and answers every job after the commit.
    fn apply(&mut self, batch: Vec<Job>) {
        let size = batch.len() as u64;
        let (settled, failure) = match self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
        {
            Ok(mut transaction) => {
                let settled: Vec<Settle> = batch
                    .into_iter()
                    .map(|job| job(Some(&mut transaction)))
                    .collect();
                let failure = transaction.commit().err().map(TrustError::from);
                (settled, failure)
            }
            Err(error) => {
                let settled = batch.into_iter().map(|job| job(None)).collect();
                (settled, Some(TrustError::from(error)))
            }
        };
        if let Some(error) = &failure {
            tracing::error!(%error, jobs = size, "batch not committed; every job answered with the error");
        }
        // Count before answering, so a caller that has its answer sees the
        // batch in the writer's statistics.
        self.counters.batches.fetch_add(1, Ordering::Relaxed);
        self.counters.jobs.fetch_add(size, Ordering::Relaxed);
        for settle in settled {
            settle(failure.as_ref());
        }
    }
}

/// Reads an amount column, refusing negative values a corrupt file could hold.
fn amount_from(value: i64) -> Result<u64, TrustError> {
    u64::try_from(value).map_err(|_| TrustError::Storage {
        detail: "negative budget amount in database".to_owned(),
    })
}

fn load_hold(conn: &Connection, hold_id: &str) -> Result<Option<HoldRecord>, TrustError> {
    let row = conn
        .prepare_cached("SELECT budget_key, amount, state FROM budget_holds WHERE hold_id = ?1")?
        .query_row([hold_id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
            ))
        })
        .optional()?;
    row.map(|(budget_key, amount, state)| {
        Ok(HoldRecord {
            budget_key,
            amount: amount_from(amount)?,
            state: HoldState::parse(&state).ok_or_else(|| TrustError::Storage {
                detail: "unknown hold state in database".to_owned(),
            })?,
        })
    })
    .transpose()
}

fn set_hold_state(conn: &Connection, hold_id: &str, state: HoldState) -> Result<(), TrustError> {
    conn.prepare_cached("UPDATE budget_holds SET state = ?2 WHERE hold_id = ?1")?
        .execute(params![hold_id, state.as_str()])?;
    Ok(())
}

fn budget_used(conn: &Connection, budget_key: &str) -> Result<u64, TrustError> {
    let used: Option<i64> = conn
        .prepare_cached("SELECT used FROM budget_usage WHERE budget_key = ?1")?
        .query_row([budget_key], |row| row.get(0))
        .optional()?;
    amount_from(used.unwrap_or(0))
}

fn set_budget_used(conn: &Connection, budget_key: &str, used: u64) -> Result<(), TrustError> {
    // `used` is checked against MAX_AMOUNT (i64::MAX) by the budget rule.
    let used = i64::try_from(used).map_err(|_| {
        TrustError::Refused(chio_kernel::ledger::LedgerRefusal::BudgetOverflow {
            budget_key: budget_key.to_owned(),
        })
    })?;
    conn.prepare_cached(
        "INSERT INTO budget_usage (budget_key, used) VALUES (?1, ?2)
         ON CONFLICT (budget_key) DO UPDATE SET used = excluded.used",
    )?
    .execute(params![budget_key, used])?;
    Ok(())
}

fn labels_of(conn: &Connection, keys: &[String]) -> Result<LabelSets, TrustError> {
    let mut statement =
        conn.prepare_cached("SELECT label FROM labels WHERE label_key = ?1 ORDER BY label")?;
    let mut sets = LabelSets::new();
    for key in keys {
        let labels = statement
            .query_map([key], |row| row.get::<_, String>(0))?
            .collect::<Result<_, _>>()?;
        sets.insert(key.clone(), labels);
    }
    Ok(sets)
}

impl TrustStore for SqliteTrustStore {
    async fn add_issuer_key(&self, key: IssuerKey) -> Result<bool, TrustError> {
        self.call(move |conn| {
            let inserted = conn
                .prepare_cached("INSERT OR IGNORE INTO issuer_keys (public_key_hex) VALUES (?1)")?
                .execute([key.to_hex()])?;
            Ok(inserted == 1)
        })
        .await
    }

    async fn list_issuer_keys(&self) -> Result<Vec<IssuerKey>, TrustError> {
        self.call(|conn| {
            let keys: Vec<String> = conn
                .prepare_cached("SELECT public_key_hex FROM issuer_keys ORDER BY public_key_hex")?
                .query_map([], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            keys.iter()
                .map(|hex| {
                    IssuerKey::parse_hex(hex).map_err(|_| TrustError::Storage {
                        detail: "malformed issuer key in database".to_owned(),
                    })
                })
                .collect()
        })
        .await
    }

    async fn revoke(&self, id: &str, at_ms: u64) -> Result<Revocation, TrustError> {
        check_id("id", id)?;
        check_amount("at_ms", at_ms)?;
        let id = id.to_owned();
        self.call(move |conn| {
            let first: Option<i64> = conn
                .prepare_cached("SELECT revoked_at_ms FROM revocations WHERE id = ?1")?
                .query_row([&id], |row| row.get(0))
                .optional()?;
            if let Some(first) = first {
                return Ok(Revocation {
                    newly_revoked: false,
                    revoked_at_ms: amount_from(first)?,
                });
            }
            conn.prepare_cached("INSERT INTO revocations (id, revoked_at_ms) VALUES (?1, ?2)")?
                .execute(params![id, at_ms as i64])?;
            Ok(Revocation {
                newly_revoked: true,
                revoked_at_ms: at_ms,
            })
        })
        .await
    }

    async fn revoked_at(&self, id: &str) -> Result<Option<u64>, TrustError> {
        check_id("id", id)?;
        let id = id.to_owned();
        self.call(move |conn| {
            let at: Option<i64> = conn
                .prepare_cached("SELECT revoked_at_ms FROM revocations WHERE id = ?1")?
                .query_row([&id], |row| row.get(0))
                .optional()?;
            at.map(amount_from).transpose()
        })
        .await
    }

    async fn hold_budget(
        &self,
        hold_id: &str,
        budget_key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, TrustError> {
        check_id("hold_id", hold_id)?;
        check_id("budget_key", budget_key)?;
        check_amount("amount", amount)?;
        check_amount("limit", limit)?;
        let (hold_id, budget_key) = (hold_id.to_owned(), budget_key.to_owned());
        self.call(move |conn| {
            let used = budget_used(conn, &budget_key)?;
            if let Some(existing) = load_hold(conn, &hold_id)? {
                return Ok(repeat_hold(
                    &hold_id,
                    &existing,
                    &budget_key,
                    amount,
                    used,
                    limit,
                )?);
            }
            let outcome = decide_hold(&budget_key, used, amount, limit)?;
            if let HoldOutcome::Granted { used: after, .. } = outcome {
                conn.prepare_cached(
                    "INSERT INTO budget_holds (hold_id, budget_key, amount, state)
                     VALUES (?1, ?2, ?3, 'held')",
                )?
                .execute(params![hold_id, budget_key, amount as i64])?;
                set_budget_used(conn, &budget_key, after)?;
            }
            Ok(outcome)
        })
        .await
    }

    async fn commit_budget(&self, hold_id: &str) -> Result<HoldState, TrustError> {
        check_id("hold_id", hold_id)?;
        let hold_id = hold_id.to_owned();
        self.call(move |conn| {
            let hold = load_hold(conn, &hold_id)?.ok_or_else(|| TrustError::UnknownHold {
                hold_id: hold_id.clone(),
            })?;
            let next = commit_transition(&hold_id, hold.state)?;
            if next != hold.state {
                set_hold_state(conn, &hold_id, next)?;
            }
            Ok(next)
        })
        .await
    }

    async fn release_budget(&self, hold_id: &str) -> Result<ReleaseOutcome, TrustError> {
        check_id("hold_id", hold_id)?;
        let hold_id = hold_id.to_owned();
        self.call(move |conn| {
            let Some(hold) = load_hold(conn, &hold_id)? else {
                return Ok(ReleaseOutcome::UnknownHold);
            };
            let next = release_transition(&hold_id, hold.state)?;
            if hold.state == HoldState::Held {
                let used = budget_used(conn, &hold.budget_key)?;
                let after = used
                    .checked_sub(hold.amount)
                    .ok_or_else(|| TrustError::Storage {
                        detail: "budget usage below a held amount in database".to_owned(),
                    })?;
                set_budget_used(conn, &hold.budget_key, after)?;
                set_hold_state(conn, &hold_id, next)?;
            }
            Ok(ReleaseOutcome::Released)
        })
        .await
    }

    async fn admit_share(
        &self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareOutcome, TrustError> {
        check_id("parent_id", parent_id)?;
        check_id("child_id", child_id)?;
        check_bps("child_bps", child_bps)?;
        check_bps("parent_bps", parent_bps)?;
        let (parent_id, child_id) = (parent_id.to_owned(), child_id.to_owned());
        self.call(move |conn| {
            let sibling_sum: i64 = conn
                .prepare_cached(
                    "SELECT COALESCE(SUM(child_bps), 0) FROM shares
                     WHERE parent_id = ?1 AND child_id <> ?2",
                )?
                .query_row([&parent_id, &child_id], |row| row.get(0))?;
            let sibling_sum = u32::try_from(sibling_sum).map_err(|_| TrustError::Storage {
                detail: "sibling share sum out of range in database".to_owned(),
            })?;
            let known: Option<(String, i64)> = conn
                .prepare_cached("SELECT parent_id, child_bps FROM shares WHERE child_id = ?1")?
                .query_row([&child_id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            let existing = match known {
                Some((parent_id, bps)) => Some(AdmittedChild {
                    parent_id,
                    child_bps: u32::try_from(bps).map_err(|_| TrustError::Storage {
                        detail: "child share out of range in database".to_owned(),
                    })?,
                }),
                None => None,
            };
            let known_parent: Option<i64> = conn
                .prepare_cached("SELECT parent_bps FROM share_parents WHERE parent_id = ?1")?
                .query_row([&parent_id], |row| row.get(0))
                .optional()?;
            let known_parent = known_parent
                .map(|bps| {
                    u32::try_from(bps).map_err(|_| TrustError::Storage {
                        detail: "parent share out of range in database".to_owned(),
                    })
                })
                .transpose()?;
            let parent_bps = effective_parent_share(known_parent, parent_bps);
            let outcome = decide_share(
                &parent_id,
                &child_id,
                existing.as_ref(),
                sibling_sum,
                child_bps,
                parent_bps,
            )?;
            if existing.is_none() {
                if let ShareOutcome::Admitted { .. } = outcome {
                    conn.prepare_cached(
                        "INSERT INTO shares (child_id, parent_id, child_bps) VALUES (?1, ?2, ?3)",
                    )?
                    .execute(params![child_id, parent_id, child_bps])?;
                    conn.prepare_cached(
                        "INSERT OR IGNORE INTO share_parents (parent_id, parent_bps) VALUES (?1, ?2)",
                    )?
                    .execute(params![parent_id, parent_bps])?;
                }
            }
            Ok(outcome)
        })
        .await
    }

    async fn record_request(&self, request_key: &str) -> Result<bool, TrustError> {
        check_id("request_key", request_key)?;
        let request_key = request_key.to_owned();
        self.call(move |conn| {
            let inserted = conn
                .prepare_cached("INSERT OR IGNORE INTO seen_requests (request_key) VALUES (?1)")?
                .execute([&request_key])?;
            Ok(inserted == 1)
        })
        .await
    }

    async fn append_receipts(
        &self,
        receipts: Vec<ReceiptRecord>,
    ) -> Result<AppendSummary, TrustError> {
        check_receipts(&receipts)?;
        self.call(move |conn| {
            let mut lookup =
                conn.prepare_cached("SELECT body FROM receipts WHERE receipt_id = ?1")?;
            let (to_insert, summary) = plan_append(&receipts, |id| {
                Ok(lookup.query_row([id], |row| row.get(0)).optional()?)
            })?;
            let mut insert =
                conn.prepare_cached("INSERT INTO receipts (receipt_id, body) VALUES (?1, ?2)")?;
            for receipt in to_insert {
                insert.execute(params![receipt.receipt_id, receipt.body])?;
            }
            Ok(summary)
        })
        .await
    }

    async fn list_receipts(&self, after_seq: u64, limit: u32) -> Result<ReceiptPage, TrustError> {
        let page = receipt_page_size(limit);
        let after = i64::try_from(after_seq).unwrap_or(i64::MAX);
        self.call(move |conn| {
            let receipts: Vec<StoredReceipt> = conn
                .prepare_cached(
                    "SELECT seq, receipt_id, body FROM receipts WHERE seq > ?1
                     ORDER BY seq LIMIT ?2",
                )?
                .query_map(params![after, page], |row| {
                    Ok(StoredReceipt {
                        seq: row.get::<_, i64>(0)? as u64,
                        receipt_id: row.get(1)?,
                        body: row.get(2)?,
                    })
                })?
                .collect::<Result<_, _>>()?;
            let next_after_seq = match receipts.last() {
                Some(last) => {
                    let more: bool = conn
                        .prepare_cached("SELECT EXISTS (SELECT 1 FROM receipts WHERE seq > ?1)")?
                        .query_row([last.seq as i64], |row| row.get(0))?;
                    more.then_some(last.seq)
                }
                None => None,
            };
            Ok(ReceiptPage {
                receipts,
                next_after_seq,
            })
        })
        .await
    }

    async fn count_receipts(&self) -> Result<u64, TrustError> {
        self.call(|conn| {
            let count: i64 = conn
                .prepare_cached("SELECT COUNT(*) FROM receipts")?
                .query_row([], |row| row.get(0))?;
            amount_from(count)
        })
        .await
    }

    async fn read_labels(&self, keys: Vec<String>) -> Result<LabelSets, TrustError> {
        check_label_keys(&keys)?;
        self.call(move |conn| labels_of(conn, &keys)).await
    }

    async fn join_labels(&self, keys: Vec<String>, label: &str) -> Result<LabelSets, TrustError> {
        check_label_keys(&keys)?;
        check_id("label", label)?;
        let label = label.to_owned();
        self.call(move |conn| {
            let mut insert = conn.prepare_cached(
                "INSERT OR IGNORE INTO labels (label_key, label) VALUES (?1, ?2)",
            )?;
            for key in &keys {
                insert.execute(params![key, label])?;
            }
            labels_of(conn, &keys)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
