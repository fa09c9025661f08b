//! The one-at-a-time run loop: each step is prepared, performed and
//! recorded before the next is sent, and a call over a delayed link is
//! decided at its arrival.

use chio_arena::bundle::StepRecord;
use chio_arena::{Scenario, Step};
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

/// Decides every call in flight that arrives before `instant_ms` (all of
/// them when `None`), in arrival order, each once the stall its arrival
/// ends is over and with what a crash since its sending left of it. After
/// an infrastructure failure each remaining call is recorded with it, not
/// dispatched, so no record is lost; the failure is answered.
async fn land_in_flight(
    world: &World,
    dispatcher: &dyn Dispatcher,
    executor: &mut StepExecutor,
    recorder: &mut StepRecorder<'_>,
    in_flight: &mut DelayedCalls<InFlightStep>,
    instant_ms: Option<u64>,
) -> Option<NodeError> {
    let mut failure: Option<NodeError> = None;
    while let Some(mut call) = in_flight.arriving_before(instant_ms) {
        if let Some(e) = &failure {
            recorder.infrastructure(call.record, e);
            continue;
        }
        if !recorder.owes(&call.step.head.id) {
            recorder.abandon(call.record);
            continue;
        }
        let arrival = call.prepared.arrival_ms().unwrap_or_default();
        let performed = match executor.settle_faults(dispatcher, arrival).await {
            Ok(()) => {
                executor.arrive(world, &mut call.prepared);
                executor
                    .perform(dispatcher, &call.node, &call.step.head.id, call.prepared)
                    .await
            }
            Err(e) => Err(e),
        };
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
    }
    failure
}

/// One step in flight at a time: each scheduled action is prepared,
/// performed and recorded before the next is sent, except a call over a
/// delayed link, which is decided at its arrival, after every step whose
/// instant is at or before it (`DelayedCalls`), and recorded at its scheduled
/// place. A run that stops still decides every call it had sent.
/// `Ok(Some(e))` is an infrastructure failure recorded in the bundle;
/// `Err` aborts the run.
pub(super) async fn run(
    scenario: &Scenario,
    world: &World,
    dispatcher: &dyn Dispatcher,
    executor: &mut StepExecutor,
    recorder: &mut StepRecorder<'_>,
) -> Result<Option<NodeError>, NodeError> {
    let mut in_flight = DelayedCalls::default();
    let mut failure = None;
    for scheduled in scenario.schedule() {
        let now_ms = world.start_ms + scheduled.evaluation_ms;
        failure = land_in_flight(
            world,
            dispatcher,
            executor,
            recorder,
            &mut in_flight,
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
        if let (Ok(()), Some(arrival)) = (&settled, prepared.arrival_ms()) {
            let call = InFlightStep {
                record,
                step: step.into_owned(),
                prepared,
                node,
            };
            in_flight.send(arrival, call);
            continue;
        }
        let performed = match settled {
            Ok(()) => {
                executor
                    .perform(dispatcher, &node, &step.head.id, prepared)
                    .await
            }
            Err(e) => Err(e),
        };
        let performed = match performed {
            Ok(performed) => recorder.performed(record, &step.action, performed),
            Err(e) => {
                recorder.infrastructure(record, &e);
                Err(e)
            }
        };
        if let Err(e) = performed {
            failure = Some(e);
            break;
        }
        if recorder.stopped() {
            break;
        }
    }
    // Every call still in flight was sent, so it reaches its kernel; after
    // a failure it is recorded with that failure.
    if let Some(e) = &failure {
        while let Some(call) = in_flight.arriving_before(None) {
            recorder.infrastructure(call.record, e);
        }
        return Ok(failure);
    }
    Ok(land_in_flight(world, dispatcher, executor, recorder, &mut in_flight, None).await)
}
