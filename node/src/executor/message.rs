//! Message steps: one agent tells another something, and what the sender
//! knows travels with it.
//!
//! The controller's half decides what travels: literal text, or the
//! released output of an earlier call step with its provenance, as a
//! reference to the whole output reads it (`super::reference`: the labels
//! the serving kernel recorded for it and what it carries from what its
//! call sent, hand-over records included; a withheld output travels as
//! nothing). The node's half joins the sender's labels and what the
//! forwarded output carries into the receiver's principal and session.
//!
//! A hand-over (a message with a schema) passes a value instead: the
//! controller resolves its references against the sender's released
//! outputs and sends the value with the provenance of each reference; the
//! sender's node checks it against the schema by the kernel's rule and
//! records its labels, reading every hand-over record a source names as a
//! kernel reads a call's (`crate::handling::message_carry`). A delivered
//! value is kept under the message step for the receiver's later calls,
//! with its record, so each argument built from it carries its labels.
//!
//! A hand-over crosses the link between the sender's node and the
//! receiver's as a call or a delegation's child does: the controller
//! refuses it over a cut link (`hand-over-undelivered`), and over a delayed
//! link the value reaches the receiver `delay_ms` later, so a call reading
//! it before then is denied (`reference-in-flight`). A message that is no
//! hand-over has no verdict to state a fault with: validation refuses one
//! across a cut or delayed link, as across a node that is down.

use chio_arena::scenario::value::{Reference, Resolution, Unresolved};
use chio_arena::scenario::{HandOverAction, MessageAction};
use chio_kernel::provenance::ArgumentSource;
use chio_kernel::seal::Seal;
use serde_json::{json, Value};

use super::reference::{computed, echoed, reference_sources, resolve_value, unresolved};
use super::{canonical_sha256, Dispatcher, ReleasedOutput, StepExecutor};
use crate::error::NodeError;
use crate::node::{HandOverCommand, MessageCommand, MessageOutcome, StepRefusal};
use crate::outage::{Arrival, NodeReason};
use crate::world::World;

/// A message ready to dispatch.
#[derive(Debug, Clone)]
pub struct PreparedMessage {
    /// The command for the sender's node.
    pub command: MessageCommand,
    /// [`canonical_sha256`] of what travels.
    pub content_sha256: String,
    /// The controller's refusal of a hand-over whose value cannot be
    /// resolved, or cannot cross the cut link to the receiver's node; the
    /// message is not dispatched then.
    pub blocked: Option<StepRefusal>,
    /// When a hand-over's value reaches the receiver, when it crosses a
    /// delayed link: a reference to it reads it from then on.
    pub arrival: Option<Arrival>,
}

/// The controller's decisions for a message step.
pub(super) fn prepare(
    executor: &StepExecutor,
    world: &World,
    step_id: &str,
    message: &MessageAction,
    agent: &str,
    now_ms: u64,
) -> Result<PreparedMessage, NodeError> {
    if let Some(handover) = &message.handover {
        let mut prepared = prepare_handover(executor, step_id, message, handover, agent, now_ms)?;
        cross_link(executor, world, step_id, &mut prepared);
        return Ok(prepared);
    }
    let released = match &message.from_step {
        Some(source) => match executor.outputs.get(source) {
            Some(released) => released.clone(),
            // A call still in flight (validation orders every source
            // before its reader, and a refused call leaves its nothing):
            // nothing of it is forwarded.
            None => ReleasedOutput::nothing(Unresolved::InFlight)?,
        },
        None => ReleasedOutput {
            label: None,
            integrity: None,
            record: None,
            content_sha256: canonical_sha256("a message's content", &json!(message.content))?,
            rules: Default::default(),
            computed_from: None,
            value: Ok(json!(message.content)),
            sender: None,
            sent: Vec::new(),
        },
    };
    Ok(PreparedMessage {
        command: MessageCommand {
            agent: agent.to_string(),
            to: message.to.clone(),
            sources: forwarded_sources(&released),
            handover: None,
            now_ms,
        },
        content_sha256: released.content_sha256,
        blocked: None,
        arrival: None,
    })
}

/// What the link between the sender's node and the receiver's meets a
/// hand-over's value with, as it meets a call or a delegation's child: a
/// cut link refuses it (nothing is sent, nothing recorded), a delayed one
/// holds it in flight until its arrival. A hand-over already refused is
/// not sent, so it crosses nothing.
fn cross_link(
    executor: &StepExecutor,
    world: &World,
    step_id: &str,
    prepared: &mut PreparedMessage,
) {
    if prepared.blocked.is_some() {
        return;
    }
    let command = &prepared.command;
    let from_node = world.agent_node(&command.agent).unwrap_or_default();
    let to_node = world.agent_node(&command.to).unwrap_or_default();
    if executor.faults.link_cut(from_node, to_node) {
        let refusal = NodeReason::HandOverUndelivered {
            to: command.to.clone(),
            to_node: to_node.to_string(),
            from_node: from_node.to_string(),
        }
        .refusal();
        prepared.blocked = Some(StepRefusal {
            code: refusal.code.as_str().to_string(),
            message: refusal.message,
        });
        return;
    }
    prepared.arrival = executor
        .faults
        .arrival(from_node, to_node, step_id, command.now_ms);
}

/// What a message forwarding `released` carries, as a reference to the
/// whole output would (`super::reference::reference_sources`): the labels
/// the serving kernel recorded for it, and what it carries from what its
/// call sent (a computed answer, an echo), hand-over records included. An
/// answer its server gave as not carried out (`ok = false`) is released
/// and forwarded too, though no reference may take a part of it: it
/// carries its labels and what every argument of its call carried, as a
/// computed answer does. An output that was not released forwards its
/// label alone.
fn forwarded_sources(released: &ReleasedOutput) -> Vec<ArgumentSource> {
    let labelled = |labels: Vec<String>| ArgumentSource {
        labels,
        ..ArgumentSource::default()
    };
    match &released.value {
        Ok(_) => reference_sources(released, "", ""),
        Err(Unresolved::NotPerformed) => {
            let own: Vec<String> = released
                .label
                .iter()
                .chain(released.integrity.iter())
                .filter(|label| label.as_str() != chio_kernel::label::Label::Public.as_str())
                .cloned()
                .collect();
            let every = released.computed_from.iter().flatten();
            (!own.is_empty())
                .then(|| labelled(own))
                .into_iter()
                .chain(every.map(|source| ArgumentSource {
                    pointer: String::new(),
                    ..source.clone()
                }))
                .collect()
        }
        Err(_) => released
            .label
            .iter()
            .map(|label| labelled(vec![label.clone()]))
            .collect(),
    }
}

/// A hand-over's command: its value resolved against the sender's outputs,
/// with their labels, or the refusal of a reference that finds no value.
fn prepare_handover(
    executor: &StepExecutor,
    step_id: &str,
    message: &MessageAction,
    handover: &HandOverAction,
    agent: &str,
    now_ms: u64,
) -> Result<PreparedMessage, NodeError> {
    // A sealed value is sent by call arguments only (the loader refuses it
    // here too): a hand-over never resolves one.
    let sealed = chio_arena::scenario::value::references(&handover.value)
        .unwrap_or_default()
        .into_iter()
        .find(|placed| matches!(placed.reference, Reference::Fixture { .. }));
    let resolved = match sealed {
        Some(placed) => Err(Resolution::Malformed(chio_arena::scenario::value::Malformed {
            at: placed.at,
            problem: "a hand-over's value may not read a sealed file; sealed values are sent by call arguments only",
        })),
        None => resolve_value(executor, &handover.value).and_then(|(value, sources)| {
            // Nor one that reached it by another way (an answer that held
            // it): a hand-over's value is recorded as it is.
            let run = Seal::of_texts(executor.sealed.values().map(|s| s.text()));
            match run.pointers_holding(&value).into_iter().next() {
                Some(at) => Err(Resolution::Malformed(chio_arena::scenario::value::Malformed {
                    at,
                    problem: "a hand-over's value may not hold a sealed value; sealed values are sent by call arguments only",
                })),
                None => Ok((value, sources)),
            }
        }),
    };
    // A value that is wholly one reference is the part it names, nothing
    // the sender wrote, unless that part repeats what the sender's call
    // sent, or its server computed it from what the call sent: then the
    // sender chose its text.
    let by_reference = match chio_arena::scenario::value::references(&handover.value).as_deref() {
        Ok([only]) if only.at.is_empty() => match &only.reference {
            Reference::Step { step, pointer } => {
                executor.outputs.get(step).is_none_or(|released| {
                    echoed(released, pointer).is_empty() && !computed(released, pointer)
                })
            }
            Reference::Fixture { .. } => false,
        },
        _ => false,
    };
    let (value, blocked, sources) = match resolved {
        // Every source travels with its record: the sender's node reads
        // the records as a kernel reads a call's.
        Ok((value, sources)) => (value, None, sources),
        Err(stopped) => {
            let reason = unresolved(stopped, |at, step, pointer, why| {
                NodeReason::HandOverUnresolved {
                    at,
                    step,
                    pointer,
                    why,
                }
            });
            let refusal = reason.refusal();
            let blocked = StepRefusal {
                code: refusal.code.as_str().to_string(),
                message: refusal.message,
            };
            (Value::Null, Some(blocked), Vec::new())
        }
    };
    Ok(PreparedMessage {
        content_sha256: canonical_sha256("a handed-over value", &value)?,
        command: MessageCommand {
            agent: agent.to_string(),
            to: message.to.clone(),
            sources,
            handover: Some(HandOverCommand {
                step: step_id.to_string(),
                schema: handover.schema.clone(),
                value,
                by_reference,
            }),
            now_ms,
        },
        blocked,
        arrival: None,
    })
}

/// What a hand-over delivered for the receiver's later references: the
/// value with its record, or why there is none. `None` for a message that
/// is no hand-over.
pub(super) fn delivered(
    prepared: &PreparedMessage,
    outcome: &MessageOutcome,
) -> Option<ReleasedOutput> {
    let handover = prepared.command.handover.as_ref()?;
    let value = match outcome.refusal {
        None => Ok(handover.value.clone()),
        Some(_) => Err(Unresolved::Refused),
    };
    Some(ReleasedOutput {
        label: None,
        integrity: None,
        record: Some(chio_kernel::handover::record_key(
            &prepared.command.to,
            &handover.step,
        )),
        content_sha256: prepared.content_sha256.clone(),
        value,
        rules: Default::default(),
        computed_from: None,
        sender: Some(prepared.command.agent.clone()),
        sent: Vec::new(),
    })
}

/// Dispatches the message; a blocked hand-over is answered with its
/// refusal and never sent.
pub(super) async fn dispatch(
    dispatcher: &dyn Dispatcher,
    node: &str,
    prepared: &PreparedMessage,
) -> Result<MessageOutcome, NodeError> {
    if let Some(refusal) = &prepared.blocked {
        return Ok(MessageOutcome {
            labels: Vec::new(),
            refusal: Some(refusal.clone()),
        });
    }
    dispatcher.message(node, prepared.command.clone()).await
}
