//! `SqliteTrustStore`: trust-control state in one SQLite file (bundled
//! SQLite, `journal_mode=WAL`, `synchronous=FULL`), written by a single
//! writer thread with group commit.
//!
//! The handle (this module) sends each operation, or a whole decision
//! batch, to the writer as one job over a bounded channel and awaits its
//! reply; the writer ([`writer`]) runs every waiting job in one transaction
//! and answers only after the commit. A decision batch is one job: its
//! operations run in order, each in its own savepoint, and stop where
//! `chio_kernel::batch::stops` says, so a decision costs one queue trip and
//! shares one fsync with everything else waiting.
//!
//! Module map: [`schema`] (the file, its version and pragmas), [`writer`]
//! (the writer thread and group commit), `rows` (the SQL of every
//! operation), `version_one` (what a version 1 file recorded of the
//! requests it admitted, carried over by the migration and honoured by
//! `record_request`).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::model::{
    apply_op, check_batch, receipt_page_size, run_ops, AppendSummary, BatchAnswers, BatchOp,
    HoldOutcome, HoldState, IssuerKey, LabelSets, ReceiptPage, ReceiptRecord, ReleaseOutcome,
    Revocation, Rows, ShareOutcome,
};
use crate::store::TrustStore;
use crate::TrustError;

mod file;
mod rows;
pub mod schema;
#[cfg(test)]
mod tests;
mod version_one;
pub mod writer;

use rows::SqlRows;
use schema::prepare_connection;
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use writer::WriterStats;
use writer::{run_in_savepoint, FileIdentity, Job, Writer, WriterCounters, QUEUE_CAPACITY};

/// Handle to a SQLite trust-control store; clones share one writer thread,
/// which ends when the last handle is dropped.
#[derive(Debug, Clone)]
pub struct SqliteTrustStore {
    jobs: mpsc::Sender<Job>,
    counters: Arc<WriterCounters>,
}

impl SqliteTrustStore {
    /// Opens (or creates, readable and writable by its owner alone) the
    /// database at `path`, refusing one another user owns or may write
    /// (`file`), checks or creates its schema, sets WAL and `synchronous=FULL`, and starts the writer thread.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TrustError> {
        let path = path.as_ref();
        file::claim(path)?;
        let conn = Connection::open(path).map_err(|error| TrustError::Io {
            action: format!("open database {}", path.display()),
            detail: error.to_string(),
            fix: "pass a --db path in an existing, writable directory",
        })?;
        prepare_connection(&conn, path)?;
        let wal = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get::<_, String>(0))
            .is_ok_and(|mode| mode.eq_ignore_ascii_case("wal"));
        let (jobs, receiver) = mpsc::channel(QUEUE_CAPACITY);
        let counters = Arc::new(WriterCounters::default());
        let writer = Writer {
            conn,
            jobs: receiver,
            counters: Arc::clone(&counters),
            file: FileIdentity::of(path, wal),
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

/// Runs one operation of a batch in a savepoint of its own, so an
/// operation that fails halfway leaves nothing behind while the operations
/// before it stand.
fn in_op_savepoint<T>(
    conn: &Connection,
    work: impl FnOnce(&Connection) -> Result<T, TrustError>,
) -> Result<T, TrustError> {
    conn.execute_batch("SAVEPOINT batch_op")?;
    match work(conn) {
        Ok(value) => {
            conn.execute_batch("RELEASE batch_op")?;
            Ok(value)
        }
        Err(error) => {
            conn.execute_batch("ROLLBACK TO batch_op; RELEASE batch_op")?;
            Err(error)
        }
    }
}

impl TrustStore for SqliteTrustStore {
    async fn add_issuer_key(&self, key: IssuerKey) -> Result<bool, TrustError> {
        self.call(move |conn| rows::add_issuer_key(conn, key)).await
    }

    async fn list_issuer_keys(&self) -> Result<Vec<IssuerKey>, TrustError> {
        self.call(rows::list_issuer_keys).await
    }

    async fn revoke(&self, id: &str, at_ms: u64) -> Result<Revocation, TrustError> {
        let id = id.to_owned();
        self.call(move |conn| rows::revoke(conn, &id, at_ms)).await
    }

    async fn revoked_at(&self, id: &str) -> Result<Option<u64>, TrustError> {
        let id = id.to_owned();
        self.call(move |conn| SqlRows(conn).revoked_at(&id)).await
    }

    async fn hold_budget(
        &self,
        hold_id: &str,
        budget_key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, TrustError> {
        let (hold_id, budget_key) = (hold_id.to_owned(), budget_key.to_owned());
        self.call(move |conn| SqlRows(conn).hold(&hold_id, &budget_key, amount, limit))
            .await
    }

    async fn commit_budget(&self, hold_id: &str) -> Result<HoldState, TrustError> {
        let hold_id = hold_id.to_owned();
        self.call(move |conn| SqlRows(conn).commit(&hold_id)).await
    }

    async fn release_budget(&self, hold_id: &str) -> Result<ReleaseOutcome, TrustError> {
        let hold_id = hold_id.to_owned();
        self.call(move |conn| SqlRows(conn).release(&hold_id)).await
    }

    async fn admit_share(
        &self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareOutcome, TrustError> {
        let (parent_id, child_id) = (parent_id.to_owned(), child_id.to_owned());
        self.call(move |conn| {
            SqlRows(conn).admit_share(&parent_id, &child_id, child_bps, parent_bps)
        })
        .await
    }

    async fn record_request(&self, request_key: &str) -> Result<bool, TrustError> {
        let request_key = request_key.to_owned();
        self.call(move |conn| SqlRows(conn).record_request(&request_key))
            .await
    }

    async fn append_receipts(
        &self,
        receipts: Vec<ReceiptRecord>,
    ) -> Result<AppendSummary, TrustError> {
        self.call(move |conn| SqlRows(conn).append(&receipts)).await
    }

    async fn list_receipts(&self, after_seq: u64, limit: u32) -> Result<ReceiptPage, TrustError> {
        let page = receipt_page_size(limit);
        let after = i64::try_from(after_seq).unwrap_or(i64::MAX);
        self.call(move |conn| rows::list_receipts(conn, after, page))
            .await
    }

    async fn count_receipts(&self) -> Result<u64, TrustError> {
        self.call(rows::count_receipts).await
    }

    async fn read_labels(&self, keys: Vec<String>) -> Result<LabelSets, TrustError> {
        self.call(move |conn| SqlRows(conn).read_labels(&keys))
            .await
    }

    async fn join_labels(&self, keys: Vec<String>, label: &str) -> Result<LabelSets, TrustError> {
        let label = label.to_owned();
        self.call(move |conn| SqlRows(conn).join_labels(&keys, &label))
            .await
    }

    async fn run_batch(&self, ops: Vec<BatchOp>) -> Result<BatchAnswers, TrustError> {
        check_batch(&ops)?;
        self.call(move |conn| {
            Ok(run_ops(&ops, |op| {
                in_op_savepoint(conn, |conn| apply_op(&mut SqlRows(conn), op))
            }))
        })
        .await
    }
}
