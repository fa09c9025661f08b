//! The pipelined run loop: order first, execute later.
//!
//! The scheduler fixes the total order before anything runs, and each
//! step's footprint (`footprint`) is known from the scenario. The loop keeps
//! a window of the next [`LOOKAHEAD`] steps past the first step not yet
//! recorded. A step in the window is dispatched as soon as its footprint
//! overlaps none of the earlier steps not yet folded (whether waiting, in
//! flight or answered); a barrier goes only when every earlier step is
//! recorded, and nothing after it goes before it is. Answers are folded
//! into the executor's ledger and recorded strictly in the total order.
//!
//! Why `prepare` sees exactly what it would one step at a time: `prepare`
//! reads only the ledger entries of the capability's lineage and the
//! released output a message forwards, and `fold` is the ledger's only
//! writer (a delegation writes its lineage, a call its own output). A step
//! is prepared when it is dispatched, which is after every earlier step
//! whose footprint overlaps its own has been folded; every earlier step not
//! yet folded claims none of the entries it reads, and folding later does
//! not change them. Every other input of a step's outcome (labels, budgets,
//! shares, revocations, journal, server state) is likewise written only by
//! overlapping steps, which have finished, or by later steps, which have
//! not started. So each step's answer, and therefore every recorded byte,
//! is the one-at-a-time run's.
//!
//! A step whose preparation fails aborts the run when its turn to be
//! recorded comes, exactly where the one-at-a-time loop would abort. When a
//! step stops the run (a mismatch without `keep_going`, or an infrastructure
//! failure), the steps already in flight are awaited and dropped: nothing
//! after the stop is recorded, though their kernels have decided them.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use chio_arena::Scenario;
use chio_node::executor::{Dispatched, PreparedStep, StepExecutor};
use chio_node::{NodeError, World};

use super::footprint::{footprints, Claimed, Footprint};
use super::record::StepRecorder;
use super::{begin_record, Dispatcher};

/// How many steps past the first unrecorded one may be dispatched early.
pub const LOOKAHEAD: usize = 128;

/// A dispatched step's answer, tagged with its position in the schedule.
type InFlight<'d> =
    Pin<Box<dyn Future<Output = (usize, Result<Dispatched, NodeError>)> + Send + 'd>>;

/// Where one scheduled step is.
enum Slot {
    /// Not dispatched yet.
    Waiting,
    /// Prepared and dispatched; no answer yet.
    InFlight(PreparedStep),
    /// Answered (or failed), not yet recorded.
    Answered(PreparedStep, Result<Dispatched, NodeError>),
    /// Its preparation failed; the run aborts when its turn comes.
    Unprepared(NodeError),
    /// Recorded.
    Recorded,
}

/// The pipelined loop over one run's schedule.
struct Pipeline<'a, 'd> {
    scenario: &'a Scenario,
    world: &'a World,
    dispatcher: &'d dyn Dispatcher,
    footprints: Vec<Footprint>,
    slots: Vec<Slot>,
    in_flight: Vec<InFlight<'d>>,
    next_record: usize,
}

impl<'a, 'd> Pipeline<'a, 'd> {
    /// Dispatches every waiting step in the window that overlaps no
    /// earlier unfolded step.
    fn launch(&mut self, executor: &StepExecutor) {
        let end = self.slots.len().min(self.next_record + LOOKAHEAD);
        let mut claimed = Claimed::new();
        for position in self.next_record..end {
            if claimed.blocks_all() {
                break;
            }
            let admitted = claimed.admits(&self.footprints[position]);
            if admitted && matches!(self.slots[position], Slot::Waiting) {
                self.slots[position] = self.dispatch(executor, position);
            }
            claimed.add(&self.footprints[position]);
        }
    }

    /// Prepares step `position` against the ledger as it is now and sends it.
    fn dispatch(&mut self, executor: &StepExecutor, position: usize) -> Slot {
        let scheduled = &self.scenario.schedule()[position];
        let step = &self.scenario.file().steps[scheduled.step_index];
        let action = &self.scenario.actions()[scheduled.step_index];
        let agent = &scheduled.agent_id;
        let now_ms = self.world.start_ms + scheduled.evaluation_ms;
        let node = match self.world.agent_node(agent) {
            Some(node) => node.to_string(),
            None => return Slot::Unprepared(NodeError::Unroutable(format!("agent {agent}"))),
        };
        let prepared = match executor.prepare(self.world, &step.id, action, agent, now_ms) {
            Ok(prepared) => prepared,
            Err(e) => return Slot::Unprepared(e),
        };
        let dispatcher = self.dispatcher;
        let sent = prepared.clone();
        self.in_flight.push(Box::pin(async move {
            let answer = StepExecutor::dispatch(dispatcher, &node, &sent).await;
            (position, answer)
        }));
        Slot::InFlight(prepared)
    }

    /// Waits for the next answer of any step in flight.
    async fn next_answer(&mut self) -> Option<(usize, Result<Dispatched, NodeError>)> {
        if self.in_flight.is_empty() {
            return None;
        }
        let in_flight = &mut self.in_flight;
        let (index, answer) = poll_fn(|cx| {
            for (index, future) in in_flight.iter_mut().enumerate() {
                if let Poll::Ready(answer) = future.as_mut().poll(cx) {
                    return Poll::Ready((index, answer));
                }
            }
            Poll::Pending
        })
        .await;
        drop(self.in_flight.swap_remove(index));
        Some(answer)
    }

    /// Takes an answer into its slot.
    fn answered(&mut self, position: usize, answer: Result<Dispatched, NodeError>) {
        let slot = std::mem::replace(&mut self.slots[position], Slot::Recorded);
        self.slots[position] = match slot {
            Slot::InFlight(prepared) => Slot::Answered(prepared, answer),
            other => other,
        };
    }

    /// Waits for every step still in flight and drops its answer.
    async fn drain(&mut self) {
        while self.next_answer().await.is_some() {}
    }
}

/// Runs the schedule with non-overlapping steps in flight together,
/// recording in the total order. `Ok(Some(e))` is an infrastructure
/// failure recorded in the bundle; `Err` aborts the run.
pub(super) async fn run(
    scenario: &Scenario,
    world: &World,
    dispatcher: &dyn Dispatcher,
    executor: &mut StepExecutor,
    recorder: &mut StepRecorder<'_>,
) -> Result<Option<NodeError>, NodeError> {
    let mut pipeline = Pipeline {
        scenario,
        world,
        dispatcher,
        footprints: footprints(scenario, world),
        slots: scenario.schedule().iter().map(|_| Slot::Waiting).collect(),
        in_flight: Vec::new(),
        next_record: 0,
    };
    let total = pipeline.slots.len();
    while pipeline.next_record < total {
        let position = pipeline.next_record;
        match std::mem::replace(&mut pipeline.slots[position], Slot::Recorded) {
            Slot::Answered(prepared, answer) => {
                let scheduled = &scenario.schedule()[position];
                let action = &scenario.actions()[scheduled.step_index];
                let record = begin_record(scenario, recorder, scheduled, action, &prepared);
                pipeline.next_record += 1;
                match answer {
                    Ok(dispatched) => {
                        let step_id = &scenario.file().steps[scheduled.step_index].id;
                        let performed = executor.fold(step_id, dispatched);
                        recorder.performed(record, action, &prepared, performed);
                    }
                    Err(e) => {
                        recorder.infrastructure(record, &e);
                        pipeline.drain().await;
                        return Ok(Some(e));
                    }
                }
                if recorder.stopped() {
                    pipeline.drain().await;
                    return Ok(None);
                }
            }
            Slot::Unprepared(e) => {
                pipeline.drain().await;
                return Err(e);
            }
            waiting => {
                pipeline.slots[position] = waiting;
                pipeline.launch(executor);
                match pipeline.next_answer().await {
                    Some((answered, answer)) => pipeline.answered(answered, answer),
                    // The first unrecorded step overlaps nothing unfolded,
                    // so `launch` always dispatches it; nothing in flight
                    // with it unanswered is a defect, reported, never a hang.
                    None if !matches!(pipeline.slots[position], Slot::Unprepared(_)) => {
                        return Err(NodeError::Internal(
                            "the run driver has no step in flight while an unrecorded step waits",
                        ));
                    }
                    None => {}
                }
            }
        }
    }
    Ok(None)
}
