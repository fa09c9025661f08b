//! The single writer thread of the SQLite store and its group commit.
//!
//! The writer takes every job waiting in its queue, runs them in order
//! inside one transaction (each in its own savepoint, so one failing job
//! leaves the others intact), commits once (one fsync for the whole batch)
//! and only then answers each job. No answer, and so no allow that depends
//! on it, is released before the batch is durable; when the commit fails,
//! every job of the batch gets the error.
//!
//! Jobs are boxed closures rather than a `Command` enum: each operation's
//! SQL lives in `rows`, and a closure carries any of them (or a whole
//! decision batch) to the writer without an enum variant, an execution arm
//! and a failure arm per operation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rusqlite::{Connection, Transaction, TransactionBehavior};
use tokio::sync::mpsc;

use crate::TrustError;

/// Jobs waiting for the writer before senders wait; bounds memory under load.
pub(super) const QUEUE_CAPACITY: usize = 4_096;
/// Most jobs one transaction takes; bounds the latency of the first job.
const MAX_BATCH: usize = 1_024;

/// What a job hands back once it ran: a function that answers the caller
/// with the job's result, or with the batch's commit error.
pub(super) type Settle = Box<dyn FnOnce(Option<&TrustError>) + Send>;
/// One operation for the writer; `None` when the batch could not begin.
pub(super) type Job = Box<dyn FnOnce(Option<&mut Transaction<'_>>) -> Settle + Send>;

/// Counters of the writer, so tests and benchmarks can see group commit.
#[derive(Debug, Default)]
pub(super) struct WriterCounters {
    pub(super) batches: AtomicU64,
    pub(super) jobs: AtomicU64,
}

/// A snapshot of the writer's work since the store was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterStats {
    /// Transactions committed (each one fsync when it wrote anything).
    pub batches: u64,
    /// Jobs answered; `jobs / batches` is the mean group size.
    pub jobs: u64,
}

/// Runs one job in a savepoint: released on success, rolled back on error.
pub(super) fn run_in_savepoint<T>(
    transaction: &mut Transaction<'_>,
    work: impl FnOnce(&Connection) -> Result<T, TrustError>,
) -> Result<T, TrustError> {
    let savepoint = transaction.savepoint()?;
    let result = work(&savepoint)?;
    savepoint.commit()?;
    Ok(result)
}

/// The single writer: owns the connection and the job queue.
pub(super) struct Writer {
    pub(super) conn: Connection,
    pub(super) jobs: mpsc::Receiver<Job>,
    pub(super) counters: Arc<WriterCounters>,
    /// The database file as opened, checked before every commit.
    pub(super) file: FileIdentity,
}

/// The database file a store opened: its path and, on Unix, its device and
/// inode. A commit into a file that was removed, replaced or emptied while
/// the service ran would be answered as durable and then lost at the next
/// start (which would find no file, or another one), forgetting request
/// ids, revocations and holds; such a batch is refused instead.
#[derive(Debug, Clone)]
pub(super) struct FileIdentity {
    path: std::path::PathBuf,
    id: Option<(u64, u64)>,
    /// Whether the database runs a write-ahead log, which then exists for
    /// as long as a connection holds the database open.
    wal: bool,
}

impl FileIdentity {
    /// The file at `path` as it is now, running a write-ahead log or not.
    pub(super) fn of(path: &std::path::Path, wal: bool) -> FileIdentity {
        FileIdentity {
            path: path.to_path_buf(),
            id: identity(path),
            wal,
        }
    }

    /// Why the file is no longer the one opened, if it is not: removed,
    /// replaced by another file, emptied, or its write-ahead log removed.
    fn changed(&self) -> Option<String> {
        let shown = self.path.display();
        let Ok(meta) = std::fs::metadata(&self.path) else {
            return Some(format!("the database file {shown} was removed"));
        };
        if identity(&self.path) != self.id {
            return Some(format!(
                "the database file {shown} was replaced by another file"
            ));
        }
        if meta.len() == 0 {
            return Some(format!("the database file {shown} was emptied"));
        }
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        if self.wal && !std::path::Path::new(&wal).exists() {
            return Some(format!("the write-ahead log of {shown} was removed"));
        }
        None
    }
}

#[cfg(unix)]
fn identity(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_: &std::path::Path) -> Option<(u64, u64)> {
    None
}

impl Writer {
    /// Serves batches until every handle is dropped.
    pub(super) fn run(mut self) {
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
                // Never answer durable what the next start would not find:
                // the batch rolls back (dropped uncommitted) and every job
                // is refused naming the cause.
                let failure = match self.file.changed() {
                    Some(why) => Some(TrustError::Io {
                        action: "commit to the database".to_owned(),
                        detail: why,
                        fix: "restore the database file and restart the service on it; nothing more is committed until then",
                    }),
                    None => transaction.commit().err().map(TrustError::from),
                };
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
