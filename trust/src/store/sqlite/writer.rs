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
