//! The one-at-a-time run loop: each step is prepared, performed and
//! recorded before the next is sent, and a call over a delayed link is
//! decided at its arrival.

use chio_arena::bundle::StepRecord;
use chio_arena::{Scenario, ScheduledStep, Step};
use chio_node::executor::{DelayedCalls, PreparedStep, StepExecutor};
use chio_node::{NodeError, World};

use super::record::StepRecorder;
use super::{begin_record, Dispatcher};

/// A call in flight over a delayed link: its record, begun at its
/// scheduled place, and what its dispatch needs at its arrival.
struct InFlightStep {
    record: StepRecord,
    step: Step,
    prepared: PreparedStep,
    node: String,
}

/// Where a stopped run's virtual time ended. A call is decided at its
/// arrival only once every step whose instant is at or before that arrival
/// has been applied; after a stop, that holds only for a call arriving no
/// later than the stop's instant, and, when a step the stop skipped shares
/// that instant, before it.
struct Stop {
    /// The step that stopped the run.
    step: String,
    /// The instant it was decided at, as records print it.
    time: String,
    /// The first instant (Unix ms) a call still in flight can no longer be
    /// decided at.
    undecided_from_ms: u64,
}

/// The calls in flight over delayed links, and where the run stopped, once
/// it has.
#[derive(Default)]
struct Flight {
    calls: DelayedCalls<InFlightStep>,
    stop: Option<Stop>,
}

impl Flight {
    /// Notes the stop of the run at `step`, decided at `at_ms` (printed
    /// `time`), when it is the first; `skipped_same_instant` says whether a
    /// step the stop skipped shares that instant.
    fn stopped(&mut self, step: &str, time: &str, at_ms: u64, skipped_same_instant: bool) {
        if self.stop.is_none() {
            self.stop = Some(Stop {
                step: step.to_string(),
                time: time.to_string(),
                undecided_from_ms: if skipped_same_instant {
                    at_ms
                } else {
                    at_ms.saturating_add(1)
                },
            });
        }
    }
}

/// Decides every call in flight that arrives before `instant_ms` (all of
/// them when `None`), in arrival order, each once the stall its arrival
/// ends is over and with what it met when it was sent and on its way. After
/// the run stopped, a call arriving past the stop's instant is recorded as
/// the controller's deny and reaches no kernel (`Stop`). After an
/// infrastructure failure each remaining call is recorded with it, not
/// dispatched, so no record is lost; the failure is answered.
async fn land_in_flight(
    world: &World,
    dispatcher: &dyn Dispatcher,
    executor: &mut StepExecutor,
    recorder: &mut StepRecorder<'_>,
    flight: &mut Flight,
    instant_ms: Option<u64>,
) -> Option<NodeError> {
    let mut failure: Option<NodeError> = None;
    while let Some(mut call) = flight.calls.arriving_before(instant_ms) {
        if let Some(e) = &failure {
            recorder.infrastructure(call.record, e);
            continue;
        }
        let id = call.step.head.id.clone();
        if !recorder.owes(&id) {
            recorder.abandon(call.record);
            continue;
        }
        let arrival = call.prepared.arrival_ms().unwrap_or_default();
        let performed = match &flight.stop {
            Some(stop) if arrival >= stop.undecided_from_ms => {
                StepExecutor::stopped_before_arrival(&mut call.prepared, &stop.step);
                call.record.decided_time = Some(stop.time.clone());
                executor
                    .perform(dispatcher, &call.node, &id, call.prepared)
                    .await
            }
            _ => match executor.settle_faults(dispatcher, arrival).await {
                Ok(()) => {
                    executor.arrive(world, &mut call.prepared);
                    executor
                        .perform(dispatcher, &call.node, &id, call.prepared)
                        .await
                }
                Err(e) => Err(e),
            },
        };
        let decided = call.record.decided_time.clone().unwrap_or_default();
        match performed {
            Ok(performed) => {
                failure = recorder
                    .performed(call.record, &call.step.action, performed)
                    .err();
            }
            Err(e) => {
                recorder.infrastructure(call.record, &e);
                failure = Some(e);
            }
        }
        // A call that stops the run ends it at its arrival: every step
        // before it was applied, and none after.
        if recorder.stopped() {
            flight.stopped(&id, &decided, arrival, false);
        }
    }
    failure
}

/// Performs and records a step that is decided at its instant; the
/// infrastructure failure that ends the run, if one does.
async fn perform_now(
    dispatcher: &dyn Dispatcher,
    executor: &mut StepExecutor,
    recorder: &mut StepRecorder<'_>,
    (step, node): (&Step, &str),
    record: StepRecord,
    prepared: PreparedStep,
) -> Option<NodeError> {
    let performed = executor
        .perform(dispatcher, node, &step.head.id, prepared)
        .await;
    let performed = match performed {
        Ok(performed) => recorder.performed(record, &step.action, performed),
        Err(e) => {
            recorder.infrastructure(record, &e);
            Err(e)
        }
    };
    performed.err()
}

/// One step in flight at a time: each scheduled action is prepared,
/// performed and recorded before the next is sent, except a call over a
/// delayed link, which is decided at its arrival, after every step whose
/// evaluation instant is at or before it (`DelayedCalls`), and recorded at
/// its scheduled place. A run that stops still records every call it had
/// sent, deciding those that arrive by the stop's instant (`Stop`).
/// `Ok(Some(e))` is an infrastructure failure recorded in the bundle;
/// `Err` aborts the run.
pub(super) async fn run(
    scenario: &Scenario,
    world: &World,
    dispatcher: &dyn Dispatcher,
    executor: &mut StepExecutor,
    recorder: &mut StepRecorder<'_>,
) -> Result<Option<NodeError>, NodeError> {
    let mut flight = Flight::default();
    let mut failure = None;
    let schedule = scenario.schedule();
    for (position, scheduled) in schedule.iter().enumerate() {
        let now_ms = world.start_ms + scheduled.evaluation_ms;
        failure = land_in_flight(
            world,
            dispatcher,
            executor,
            recorder,
            &mut flight,
            Some(now_ms),
        )
        .await;
        if failure.is_some() || recorder.stopped() {
            break;
        }
        let step = scenario.step(scheduled.step_index)?;
        let agent = &step.head.agent;
        let node = world
            .agent_node(agent)
            .ok_or_else(|| NodeError::Unroutable(format!("agent {agent}")))?
            .to_string();
        // A stall over by this instant ends before the step is prepared.
        let settled = executor.settle_faults(dispatcher, now_ms).await;
        let prepared = executor.prepare(world, &step.head.id, &step.action, agent, now_ms)?;
        let record = match begin_record(scenario, world, recorder, scheduled, &step, &prepared) {
            Ok(record) => record,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        let time = record.virtual_time.clone();
        failure = match (settled, prepared.arrival_ms()) {
            (Ok(()), Some(arrival)) => {
                let step = step.into_owned();
                let call = InFlightStep {
                    record,
                    step,
                    prepared,
                    node,
                };
                flight.calls.send(arrival, call);
                continue;
            }
            (Ok(()), None) => {
                let step = (step.as_ref(), node.as_str());
                perform_now(dispatcher, executor, recorder, step, record, prepared).await
            }
            (Err(e), _) => {
                recorder.infrastructure(record, &e);
                Some(e)
            }
        };
        if failure.is_some() {
            break;
        }
        if recorder.stopped() {
            let same_instant = next_at(schedule, position) == Some(scheduled.evaluation_ms);
            flight.stopped(&step.head.id, &time, now_ms, same_instant);
            break;
        }
    }
    // Every call still in flight was sent, so it is recorded; after a
    // failure it is recorded with that failure.
    if let Some(e) = &failure {
        while let Some(call) = flight.calls.arriving_before(None) {
            recorder.infrastructure(call.record, e);
        }
        return Ok(failure);
    }
    Ok(land_in_flight(world, dispatcher, executor, recorder, &mut flight, None).await)
}

/// The evaluation instant of the step after `position` in `schedule`.
fn next_at(schedule: &[ScheduledStep], position: usize) -> Option<u64> {
    schedule.get(position + 1).map(|next| next.evaluation_ms)
}
