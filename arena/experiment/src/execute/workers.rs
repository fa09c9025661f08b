//! The worker pool of a matrix run: workers take pending runs in order,
//! record each one, rewrite the state file and stop at the first failure.
//! What a run is, how it is attempted and recorded, and the state file
//! live in the parent module.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::{counts, io_error, run_one, write_state, Load, MatrixRunner, PartialTable, PendingRun};
use super::{Matrix, WallClockMs};
use crate::error::ExperimentError;

/// What every worker runs against.
pub(super) struct Execution<'a> {
    /// The matrix being run.
    pub(super) matrix: &'a Matrix,
    /// The output folder.
    pub(super) out: &'a Path,
    /// What evaluates a run.
    pub(super) runner: Arc<dyn MatrixRunner>,
    /// The load the runs go under.
    pub(super) load: &'a Load,
    /// Told each finished run (done, total).
    pub(super) progress: &'a (dyn Fn(usize, usize) + Sync),
    /// The start and the wall clock, for the state file.
    pub(super) clock: (u64, WallClockMs<'a>),
}

/// The work the workers share: the pending runs, the next one to take, the
/// table so far and the failures, each tagged with its pending index.
pub(super) struct Queue<'p> {
    /// The runs still to go.
    pub(super) pending: &'p [PendingRun],
    /// The index of the next pending run to take.
    pub(super) next: AtomicUsize,
    /// Runs finished so far, ledger runs included.
    pub(super) done: AtomicUsize,
    /// Set by the first failure; every worker stops taking runs.
    pub(super) stop: AtomicBool,
    /// The table so far.
    pub(super) table: Mutex<PartialTable>,
    /// Every failure, tagged with its pending index (`usize::MAX` for a
    /// worker that could not start).
    pub(super) failures: Mutex<Vec<(usize, ExperimentError)>>,
    /// Runs in the whole matrix.
    pub(super) scheduled: usize,
}

impl Queue<'_> {
    /// Records a failure and stops every worker.
    fn fail(&self, i: usize, e: ExperimentError) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(mut list) = self.failures.lock() {
            list.push((i, e));
        }
    }
}

impl Execution<'_> {
    /// Runs the queue on `load.concurrency` workers (at least one) and
    /// returns when every worker has stopped.
    pub(super) fn run_workers(&self, queue: &Queue<'_>) {
        std::thread::scope(|scope| {
            for worker in 0..self.load.concurrency.max(1) {
                let spawned = std::thread::Builder::new()
                    .name(format!("matrix-worker-{worker}"))
                    .spawn_scoped(scope, move || self.work(queue));
                if let Err(e) = spawned {
                    queue.fail(usize::MAX, io_error(self.out, &e));
                }
            }
        });
    }

    /// One worker: takes pending runs in order until none is left or a run
    /// fails, recording each run and rewriting the state file.
    fn work(&self, queue: &Queue<'_>) {
        let (matrix, out, load) = (self.matrix, self.out, self.load);
        loop {
            if queue.stop.load(Ordering::SeqCst) {
                return;
            }
            let i = queue.next.fetch_add(1, Ordering::SeqCst);
            let Some((c, r, earlier)) = queue.pending.get(i) else {
                return;
            };
            match run_one(matrix, out, &self.runner, load, *c, *r, earlier.as_ref()) {
                Ok(record) => {
                    let failed = record.metrics.is_none();
                    let reason = record
                        .attempts
                        .last()
                        .and_then(|a| a.reason.clone())
                        .unwrap_or_default();
                    if let Ok(mut table) = queue.table.lock() {
                        table[*c][*r as usize] = Some(record);
                        let _ =
                            write_state(matrix, out, load, counts(&table), "running", self.clock);
                    }
                    if failed {
                        queue.fail(
                            i,
                            ExperimentError::RunFailed {
                                cell: matrix.cells()[*c].name.clone(),
                                repetition: *r,
                                reason,
                            },
                        );
                        return;
                    }
                    (self.progress)(
                        queue.done.fetch_add(1, Ordering::SeqCst) + 1,
                        queue.scheduled,
                    );
                }
                Err(e) => {
                    queue.fail(i, e);
                    return;
                }
            }
        }
    }
}
