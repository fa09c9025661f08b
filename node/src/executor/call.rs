//! Call steps: the acting agent presents a capability to the kernel that
//! serves the target server.
//!
//! The controller's half: the step must present a capability that exists at
//! this point of the run; when the agent does not hold it, the step presents
//! the token as captured (the kernel must refuse a token proven by another
//! key, so a captured token is the attack, not a shortcut). The call is
//! routed to the kernel serving the server, and its request id is the step
//! id. The node's half signs and evaluates, or denies the call itself when
//! the kernel cannot be reached or the agent does not hold what it presents
//! (`crate::outage`); a released output is kept for messages that forward
//! it. A fault in effect (`super::fault`) may make the call reach its
//! kernel later over a delayed link. The controller answers a call itself
//! only when nobody can make it (the agent's own node is down) or when it
//! holds the call in flight: a delayed call is lost when its kernel's node
//! was down as it was sent or either node crashes before it arrives
//! ([`arrive`]), and one still in flight when the run stops before its
//! arrival is never decided ([`stopped_before_arrival`]).

use std::collections::BTreeMap;

use chio_arena::scenario::value::{self, Reference, Unresolved};
use chio_arena::scenario::CallAction;
use chio_kernel::provenance::ArgumentSource;
use chio_kernel::seal::Seal;
use chio_kernel::token::CapabilityToken;
use chio_kernel::verdict::Verdict;
use serde_json::Value;

use super::fault::{Delay, Sent};
use super::reference::{resolve_value, unresolved};
use super::{canonical_sha256, Dispatcher, ReleasedOutput, StepExecutor};
use crate::actors::CallOutcome;
use crate::error::NodeError;
use crate::node::{CallAnswer, CallCommand};
use crate::outage::{NodeReason, Refusal};
use crate::world::World;

/// A call ready to dispatch.
#[derive(Debug, Clone)]
pub struct PreparedCall {
    /// The command for the acting agent's node.
    pub command: CallCommand,
    /// The kernel serving the server.
    pub kernel: String,
    /// The presented capability's fingerprint; none for a capability the
    /// run never issued.
    pub token_sha256: Option<String>,
    /// The controller's deny when the agent's node is down (nobody can
    /// make the call, `super::fault`); the call is not dispatched then.
    pub blocked: Option<Refusal>,
    /// The delayed link the call crosses, when it crosses one: it is
    /// decided at its arrival. A call that is not sent (`blocked`) crosses
    /// none.
    pub delayed: Option<Delay>,
    /// What the call met when it was sent: a call in flight is lost to its
    /// kernel's node being down then, or to a crash of either node before
    /// it arrives ([`super::FaultState::in_flight_lost`]).
    pub sent: Sent,
}

impl PreparedCall {
    /// Whether the agent presents a token it does not hold.
    pub fn captured(&self) -> bool {
        self.command.captured.is_some()
    }

    /// The instant (Unix ms) a call over a delayed link reaches its kernel,
    /// where it is decided; `None` for a call that is decided when sent.
    pub fn arrival_ms(&self) -> Option<u64> {
        self.delayed.as_ref().map(|_| self.command.now_ms)
    }
}

/// Calls in flight over delayed links, each with what its caller keeps for
/// it, in the order they reach their kernels: by arrival instant, then by
/// the order they were sent.
#[derive(Debug)]
pub struct DelayedCalls<T> {
    calls: BTreeMap<(u64, u64), T>,
    sent: u64,
}

impl<T> Default for DelayedCalls<T> {
    fn default() -> Self {
        Self {
            calls: BTreeMap::new(),
            sent: 0,
        }
    }
}

impl<T> DelayedCalls<T> {
    /// Puts a call sent now in flight until `arrival_ms`.
    pub fn send(&mut self, arrival_ms: u64, call: T) {
        self.calls.insert((arrival_ms, self.sent), call);
        self.sent += 1;
    }

    /// The next call to arrive strictly before `instant_ms` (every call
    /// still in flight when `None`), taken out of flight: a step scheduled
    /// at an instant is applied before a call arriving at that instant.
    pub fn arriving_before(&mut self, instant_ms: Option<u64>) -> Option<T> {
        let first = *self.calls.keys().next()?;
        if instant_ms.is_some_and(|instant| first.0 >= instant) {
            return None;
        }
        self.calls.remove(&first)
    }

    /// Whether no call is in flight.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

/// The controller's decisions for a call step.
pub(super) fn prepare(
    executor: &StepExecutor,
    world: &World,
    step_id: &str,
    call: &CallAction,
    agent: &str,
    now_ms: u64,
) -> Result<PreparedCall, NodeError> {
    let capability_id = call
        .capability
        .clone()
        .ok_or_else(|| NodeError::Scenario(format!("step {step_id} presents no capability")))?;
    // A capability the schedule names but the run never issued (its
    // delegation was refused: the delegatee's node was down, trust-control
    // could not record it) is held by nobody: the call is the agent's
    // node's deny, as for a capability a restart took, never a stopped run.
    let entry = executor.capability(&capability_id);
    let captured: Option<CapabilityToken> =
        entry.filter(|e| e.holder != agent).map(|e| e.token.clone());
    let never_issued = entry.is_none().then(|| {
        NodeReason::NotHeld {
            agent: agent.to_string(),
            capability: capability_id.clone(),
        }
        .refusal()
    });
    let kernel = world
        .server_kernel(&call.server)
        .ok_or_else(|| NodeError::Unroutable(format!("server {}", call.server)))?
        .to_string();
    // A capability or a handed-over value still on its way to the agent
    // over a delayed link is not the agent's yet: the call is never sent.
    let in_flight = entry
        .filter(|e| e.holder == agent)
        .and_then(|_| executor.capability_in_flight(&capability_id, now_ms))
        .map(|arrival| {
            NodeReason::CapabilityInFlight {
                agent: agent.to_string(),
                capability: capability_id.clone(),
                arrival: arrival.clone(),
            }
            .refusal()
        })
        .or_else(|| value_in_flight(executor, &call.arguments, now_ms));
    let resolved = match in_flight {
        Some(refusal) => Err(refusal),
        None => resolved_arguments(executor, &call.arguments),
    };
    let (arguments, sources, unresolved) = match resolved {
        Ok((arguments, sources)) => (arguments, sources, None),
        Err(refusal) => (call.arguments.clone(), Vec::new(), Some(refusal)),
    };
    let sealed = sealed_pointers(executor, &call.arguments, &arguments);
    let mut command = CallCommand {
        request_id: step_id.to_string(),
        agent: agent.to_string(),
        capability_id,
        captured,
        server: call.server.clone(),
        tool: call.tool.clone(),
        arguments,
        sources,
        now_ms,
        issued_at_ms: now_ms,
        sealed,
    };
    let agent_node = world.agent_node(agent).unwrap_or_default();
    let kernel_node = world.kernel_node(&kernel).unwrap_or_default();
    let faults = &executor.faults;
    // A call missing a value is never sent; nor is one nobody can make.
    let blocked = never_issued
        .or(unresolved)
        .or_else(|| faults.call_blocked(agent, agent_node));
    // A call that is not sent crosses no link: it is answered at its
    // instant, whatever delays the link.
    let delay = blocked
        .is_none()
        .then(|| faults.delay(agent_node, kernel_node))
        .flatten();
    if let Some(delay) = &delay {
        // Issued when sent, decided when it arrives: a kernel's request-age
        // bound meets the delay.
        command.now_ms = now_ms.saturating_add(delay.ms);
    }
    let sent = faults.send(&kernel, kernel_node, agent_node);
    Ok(PreparedCall {
        command,
        kernel,
        token_sha256: entry.map(|e| e.token_sha256.clone()),
        blocked,
        delayed: delay,
        sent,
    })
}

/// What a call in flight meets when it reaches its kernel's node: the
/// controller's deny when that node was down when the call was sent (the
/// call found no process to take it, and is denied as unreachable, as a
/// call sent then without a delay is by the agent's node), or when that
/// node or the agent's own is down by now or crashed since the call was
/// sent (the process it was sent to is gone, or the agent's node that sent
/// it is); otherwise the call is dispatched as prepared, and meets every
/// other fault where it is (a cut link, a stall) as any call does.
pub(super) fn arrive(executor: &StepExecutor, world: &World, prepared: &mut PreparedCall) {
    if prepared.blocked.is_some() {
        return;
    }
    let faults = &executor.faults;
    let agent = prepared.command.agent.as_str();
    let agent_node = world.agent_node(agent).unwrap_or_default();
    let kernel_node = world.kernel_node(&prepared.kernel).unwrap_or_default();
    prepared.blocked = faults.in_flight_lost(
        (&prepared.kernel, kernel_node),
        (agent, agent_node),
        &prepared.sent,
    );
}

/// The controller's deny of a call still in flight when the run stopped at
/// step `stop`, before the call's arrival: it never reaches its kernel, so
/// it is never decided at an instant whose earlier steps the stop skipped.
pub(super) fn stopped_before_arrival(prepared: &mut PreparedCall, stop: &str) {
    prepared.blocked = Some(
        NodeReason::RunStopped {
            step: stop.to_string(),
        }
        .refusal(),
    );
}

/// Dispatches the call: the kernel's decision or the node's own deny;
/// nothing of the run's ledger is read or written.
pub(super) async fn dispatch(
    dispatcher: &dyn Dispatcher,
    node: &str,
    prepared: &PreparedCall,
) -> Result<CallAnswer, NodeError> {
    dispatcher.call(node, prepared.command.clone()).await
}

/// Keeps the call's released output for later messages.
pub(super) fn fold(
    executor: &mut StepExecutor,
    step_id: &str,
    command: &CallCommand,
    outcome: &CallOutcome,
) -> Result<(), NodeError> {
    if !executor.keeps_output(step_id) {
        return Ok(());
    }
    let content_sha256 = canonical_sha256(
        "a call's released output",
        outcome.output.as_ref().unwrap_or(&Value::Null),
    )?;
    let value = match (&outcome.output, outcome.verdict) {
        (_, Verdict::Deny | Verdict::PendingApproval) => Err(Unresolved::Denied),
        (None, Verdict::Allow) => Err(Unresolved::Withheld),
        (Some(_), Verdict::Allow) if outcome.trace.not_performed => Err(Unresolved::NotPerformed),
        (Some(output), Verdict::Allow) => Ok(output.clone()),
    };
    let rules = executor
        .output_rules
        .get(&(
            outcome.receipt.body.server.clone(),
            outcome.receipt.body.tool.clone(),
        ))
        .cloned()
        .unwrap_or_default()
        .with_server_kept(&outcome.trace.server_kept);
    executor.outputs.insert(
        step_id.to_string(),
        ReleasedOutput {
            label: outcome.trace.output_label.clone(),
            integrity: outcome.trace.output_integrity.clone(),
            record: None,
            sender: None,
            sent: sent_scalars(command),
            content_sha256,
            value,
            rules,
            computed_from: chio_kernel::provenance::sends_anything(&command.arguments)
                .then(|| command.sources.clone()),
        },
    );
    Ok(())
}

/// Every scalar `command` sent (string, number or boolean), in document
/// order, once with each provenance of the argument that covers it (every
/// source whose pointer is its own or an ancestor's: a value a server
/// computed from several arguments carries each of theirs), or once with
/// none for a literal the caller wrote.
fn sent_scalars(command: &CallCommand) -> Vec<(Value, Option<ArgumentSource>)> {
    let sources_of = |at: &str| -> Vec<Option<ArgumentSource>> {
        let found: Vec<Option<ArgumentSource>> = command
            .sources
            .iter()
            .filter(|source| chio_kernel::provenance::within(at, &source.pointer))
            .cloned()
            .map(Some)
            .collect();
        if found.is_empty() {
            vec![None]
        } else {
            found
        }
    };
    let mut sent: Vec<(Value, Option<ArgumentSource>)> =
        chio_kernel::provenance::scalar_leaves(&command.arguments)
            .into_iter()
            .flat_map(|(at, sent)| {
                sources_of(&at)
                    .into_iter()
                    .map(move |source| (sent.clone(), source))
            })
            .collect();
    // Pieces sent together, joined, as a server may answer with them:
    // each top-level argument's, with the provenance of that argument and
    // of every value built into it (pieces handed over one by one and
    // nested in one array count as the text they join to); and the pieces
    // of every argument joined, with every provenance of the call and as
    // the caller's own text.
    let within = |at: &str| -> Vec<Option<ArgumentSource>> {
        let mut found: Vec<Option<ArgumentSource>> =
            sources_of(at).into_iter().filter(Option::is_some).collect();
        for source in &command.sources {
            if chio_kernel::provenance::within(&source.pointer, at)
                && !found.contains(&Some(source.clone()))
            {
                found.push(Some(source.clone()));
            }
        }
        if found.is_empty() {
            found.push(None);
        }
        found
    };
    if let Value::Object(arguments) = &command.arguments {
        for (key, value) in arguments {
            let at = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
            let sources = within(&at);
            for joined in chio_kernel::provenance::joined_pieces(value) {
                for source in &sources {
                    sent.push((Value::String(joined.clone()), source.clone()));
                }
            }
        }
    }
    let every: Vec<Option<ArgumentSource>> = std::iter::once(None)
        .chain(command.sources.iter().cloned().map(Some))
        .collect();
    for joined in chio_kernel::provenance::joined_pieces(&command.arguments) {
        for source in &every {
            sent.push((Value::String(joined.clone()), source.clone()));
        }
    }
    sent
}

/// The JSON pointers of the arguments that take a sealed file's text
/// (`{ fixture = ... }`), then of every other string sent that holds a run
/// of a sealed value of the run: the kernel keeps their values out of
/// evidence.
fn sealed_pointers(executor: &StepExecutor, declared: &Value, sent: &Value) -> Vec<String> {
    let mut sealed: Vec<String> = value::references(declared)
        .unwrap_or_default()
        .into_iter()
        .filter(|placed| matches!(placed.reference, Reference::Fixture { .. }))
        .map(|placed| placed.at)
        .collect();
    // A sealed value keeps its seal wherever it travelled: an answer that
    // held it, taken by reference, or a literal that repeats it.
    let run = Seal::of_texts(executor.sealed.values().map(|s| s.text()));
    for at in run.pointers_holding(sent) {
        let covered = sealed
            .iter()
            .any(|p| chio_kernel::provenance::within(&at, p));
        if !covered {
            sealed.push(at);
        }
    }
    sealed
}

/// The deny of a call whose arguments take a value handed over a delayed
/// link that has not reached the agent by `now_ms`, naming its arrival.
fn value_in_flight(executor: &StepExecutor, arguments: &Value, now_ms: u64) -> Option<Refusal> {
    value::references(arguments)
        .unwrap_or_default()
        .into_iter()
        .find_map(|placed| match placed.reference {
            Reference::Step { step, pointer } => {
                let arrival = executor.value_in_flight(&step, now_ms)?.clone();
                Some(
                    NodeReason::ReferenceInFlight {
                        argument: placed.at,
                        step,
                        pointer,
                        arrival,
                    }
                    .refusal(),
                )
            }
            Reference::Fixture { .. } => None,
        })
}

/// The arguments a call step sends: its declared arguments with
/// every reference to an earlier step's output resolved (see
/// `chio_arena::scenario::value`), with the provenance of each argument a
/// reference built that carries labels or a hand-over record, or the deny
/// of a reference that finds no value. A step that was refused before any
/// kernel decided it (or was never recorded) has no output, so it was not
/// carried out.
fn resolved_arguments(
    executor: &StepExecutor,
    arguments: &Value,
) -> Result<(Value, Vec<ArgumentSource>), Refusal> {
    resolve_value(executor, arguments).map_err(|stopped| {
        unresolved(stopped, |argument, step, pointer, why| {
            NodeReason::ReferenceUnresolved {
                argument,
                step,
                pointer,
                why,
            }
        })
        .refusal()
    })
}
