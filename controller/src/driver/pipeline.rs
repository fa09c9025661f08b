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

use std::borrow::Cow;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use chio_arena::{Scenario, ScheduledStep, Step};
use chio_node::executor::{Dispatched, PreparedStep, StepExecutor};
use chio_node::{NodeError, World};
use futures_util::stream::{FuturesUnordered, StreamExt};

use super::claims::{dispatchable, Busy, Numbered, Numbering, Scan};
use super::footprint::{Footprint, Footprints};
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

/// One step of the window: the step as read once when it entered (or why
/// it could not be read), its footprint as the window numbers it, its
/// slot, and whether its claims are counted in the pipeline's [`Busy`]
/// (from its dispatch on).
struct Entry<'a> {
    step: Result<Cow<'a, Step>, NodeError>,
    footprint: Numbered,
    slot: Slot,
    busy: bool,
}

/// The pipelined loop over one run's schedule. It holds a step, a
/// footprint and a slot only for the steps of its window (from the first
/// unrecorded step, at most [`LOOKAHEAD`] of them), so its memory does not
/// grow with the schedule, and each step is read from the scenario once.
struct Pipeline<'a, 'd> {
    scenario: &'a Scenario,
    world: &'a World,
    dispatcher: &'d dyn Dispatcher,
    footprints: Footprints<'a>,
    /// The window: entry `i` is the step at position `next_record + i`.
    window: VecDeque<Entry<'a>>,
    /// The steps in flight; each answer carries its position, so the
    /// order in which they arrive does not matter.
    in_flight: FuturesUnordered<InFlight<'d>>,
    next_record: usize,
    /// How many steps the schedule has.
    total: usize,
    /// The numbers of the resources the window's steps claim.
    numbering: Numbering,
    /// The claims of the window's dispatched steps.
    busy: Busy,
    /// The window scan's scratch.
    scan: Scan,
    /// Whether a step was recorded since the last [`Pipeline::launch`]:
    /// only a recorded step frees a claim or makes room in the window, so
    /// until one is, another launch would dispatch nothing.
    stale: bool,
}

impl<'a, 'd> Pipeline<'a, 'd> {
    /// Dispatches every waiting step in the window that overlaps no
    /// earlier unfolded step.
    fn launch(&mut self, executor: &StepExecutor) {
        if !self.stale {
            return;
        }
        self.stale = false;
        self.fill();
        let window = self
            .window
            .iter()
            .map(|entry| (&entry.footprint, matches!(entry.slot, Slot::Waiting)));
        for offset in dispatchable(window, &self.numbering, &self.busy, &mut self.scan) {
            let position = self.next_record + offset;
            let entry = &self.window[offset];
            let sent = match &entry.step {
                Ok(step) => self.dispatch(executor, position, step),
                Err(e) => Err(e.clone()),
            };
            if let Numbered::Claims(claims) = &entry.footprint {
                self.busy.add(claims);
            }
            let entry = &mut self.window[offset];
            entry.busy = true;
            entry.slot = match sent {
                Ok((prepared, future)) => {
                    self.in_flight.push(future);
                    Slot::InFlight(prepared)
                }
                Err(e) => Slot::Unprepared(e),
            };
        }
    }

    /// Reads the steps that enter the window, up to [`LOOKAHEAD`] past the
    /// first unrecorded one.
    fn fill(&mut self) {
        let end = self.total.min(self.next_record + LOOKAHEAD);
        while self.next_record + self.window.len() < end {
            let position = self.next_record + self.window.len();
            let step = self
                .scenario
                .step(self.scenario.schedule()[position].step_index);
            let footprint = match &step {
                Ok(step) => self.footprints.of(step),
                // A step that cannot be read waits for everything before it.
                Err(_) => Footprint::Barrier,
            };
            self.window.push_back(Entry {
                step: step.map_err(NodeError::from),
                footprint: self.numbering.enter(&footprint),
                slot: Slot::Waiting,
                busy: false,
            });
        }
    }

    /// Prepares `step`, at `position`, against the ledger as it is now, and
    /// the sending of it.
    fn dispatch(
        &self,
        executor: &StepExecutor,
        position: usize,
        step: &Step,
    ) -> Result<(PreparedStep, InFlight<'d>), NodeError> {
        let scheduled = &self.scenario.schedule()[position];
        let action = &step.action;
        let agent = &step.head.agent;
        let now_ms = self.world.start_ms + scheduled.evaluation_ms;
        let node = self
            .world
            .agent_node(agent)
            .ok_or_else(|| NodeError::Unroutable(format!("agent {agent}")))?
            .to_string();
        let prepared = executor.prepare(self.world, &step.head.id, action, agent, now_ms)?;
        // Only a fault delays a link, and a fault scenario runs one step at
        // a time, where a delayed call is decided at its arrival.
        if prepared.arrival_ms().is_some() {
            return Err(NodeError::Internal(
                "a call over a delayed link reached the pipelined driver",
            ));
        }
        let dispatcher = self.dispatcher;
        let sent = prepared.clone();
        let future: InFlight<'d> = Box::pin(async move {
            let answer = StepExecutor::dispatch(dispatcher, &node, sent).await;
            (position, answer)
        });
        Ok((prepared, future))
    }

    /// Waits for the next answer of any step in flight; `None` when none is.
    async fn next_answer(&mut self) -> Option<(usize, Result<Dispatched, NodeError>)> {
        self.in_flight.next().await
    }

    /// Takes an answer into its slot.
    fn answered(&mut self, position: usize, answer: Result<Dispatched, NodeError>) {
        let Some(Entry { slot, .. }) = position
            .checked_sub(self.next_record)
            .and_then(|offset| self.window.get_mut(offset))
        else {
            return;
        };
        *slot = match std::mem::replace(slot, Slot::Recorded) {
            Slot::InFlight(prepared) => Slot::Answered(prepared, answer),
            other => other,
        };
    }

    /// Takes the first unrecorded step's slot out of the window, to be
    /// recorded; `Slot::Waiting` when the window was empty.
    fn take_first(&mut self) -> Slot {
        self.window
            .front_mut()
            .map(|entry| std::mem::replace(&mut entry.slot, Slot::Recorded))
            .unwrap_or(Slot::Waiting)
    }

    /// The first unrecorded step is recorded: the window moves on by one,
    /// handing back that step.
    fn advance(&mut self) -> Option<Result<Cow<'a, Step>, NodeError>> {
        self.next_record += 1;
        self.stale = true;
        let entry = self.window.pop_front()?;
        if let (true, Numbered::Claims(claims)) = (entry.busy, &entry.footprint) {
            self.busy.remove(claims);
        }
        self.numbering.leave(&entry.footprint);
        Some(entry.step)
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
        footprints: Footprints::new(scenario, world),
        window: VecDeque::with_capacity(LOOKAHEAD),
        in_flight: FuturesUnordered::new(),
        next_record: 0,
        total: scenario.schedule().len(),
        numbering: Numbering::default(),
        busy: Busy::default(),
        scan: Scan::default(),
        stale: true,
    };
    while pipeline.next_record < pipeline.total {
        let position = pipeline.next_record;
        match pipeline.take_first() {
            Slot::Answered(prepared, answer) => {
                let scheduled: &ScheduledStep = &scenario.schedule()[position];
                // An answered step was read when it entered the window.
                let Some(Ok(step)) = pipeline.advance() else {
                    pipeline.drain().await;
                    return Err(NodeError::Internal(
                        "the run driver lost an answered step from its window",
                    ));
                };
                let recorded =
                    match begin_record(scenario, world, recorder, scheduled, &step, &prepared) {
                        Err(e) => Err(e),
                        Ok(record) => match answer.and_then(|d| executor.fold(&step.head.id, d)) {
                            Ok(performed) => recorder.performed(record, &step.action, performed),
                            Err(e) => {
                                recorder.infrastructure(record, &e);
                                Err(e)
                            }
                        },
                    };
                if let Err(e) = recorded {
                    pipeline.drain().await;
                    return Ok(Some(e));
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
                if let Some(entry) = pipeline.window.front_mut() {
                    entry.slot = waiting;
                }
                pipeline.launch(executor);
                match pipeline.next_answer().await {
                    Some((answered, answer)) => pipeline.answered(answered, answer),
                    // The first unrecorded step overlaps nothing unfolded,
                    // so `launch` always dispatches it; nothing in flight
                    // with it unanswered is a defect, reported, never a hang.
                    None if !matches!(
                        pipeline.window.front(),
                        Some(Entry {
                            slot: Slot::Unprepared(_),
                            ..
                        })
                    ) =>
                    {
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
