//! The step executor: what each kind of scheduled action means, written
//! once for every caller.
//!
//! A scenario step is handled in two halves. [`StepExecutor::prepare`] makes
//! the controller's decisions from what the run knows so far, before
//! anything is dispatched: which capability a call presents and whether the
//! agent holds it (or presents a captured token), whether a delegator holds
//! what it hands on, whether a revoker has authority over the target, what a
//! message forwards. [`StepExecutor::perform`] then sends the prepared
//! command through a [`Dispatcher`] and folds the answer into the run's
//! ledger of capabilities and released outputs. One handler module per
//! action kind holds both halves ([`call`], [`delegate`], [`revoke`],
//! [`message`], [`fault`]; `reference` resolves the references of a call's
//! arguments and a message's value, with their provenance). A fault step changes the infrastructure the
//! later steps are dispatched into; the nodes and kernels give the
//! fail-closed answers of the steps it reaches, and the controller answers
//! only a step whose acting agent's node is down (see [`fault`]).
//!
//! Every caller drives this one executor: the run driver (embedded and gRPC
//! topologies through their dispatchers, with its step recorder around it),
//! and the adversary evaluator, which walks the same schedule through
//! [`direct::DirectDispatcher`] (kernels called synchronously in process)
//! and adds its actions between the steps. So an action means the same thing
//! in a run, an evolution, a promotion check and a matrix cell.
//!
//! The executor never judges an outcome against an expectation; that is the
//! recorder's business.

pub mod call;
pub mod delegate;
pub mod direct;
pub mod fault;
pub mod message;
mod reference;
pub mod revoke;
pub mod step;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::task::{Context, Poll, Waker};

use chio_arena::scenario::value::Unresolved;
use chio_arena::Action;
use chio_kernel::provenance::ArgumentSource;
use chio_kernel::token::CapabilityToken;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::NodeError;
use crate::link::LinkFuture;
use crate::node::{
    CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, MessageCommand, MessageOutcome,
};
use crate::outage::{Arrival, Refusal};
use crate::world::World;
use crate::EmbeddedTopology;

pub use call::{DelayedCalls, PreparedCall};
pub use delegate::{DelegatedChild, DelegationAnswer, PreparedDelegate};
pub use fault::{Delay, FaultEvent, FaultState, PreparedFault, Sent};
pub use message::PreparedMessage;
pub use revoke::PreparedRevoke;
pub use step::{Answered, Dispatched, Done, Performed, Phase, Prepared, PreparedStep, RunStep};

/// How prepared commands reach the node hosting the acting agent.
pub trait Dispatcher: Send + Sync {
    /// Runs a call on `node`: the serving kernel's decision, or the node's
    /// own deny.
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallAnswer>;
    /// Runs a delegation on `node`, returning the child token and the
    /// labels recorded for it, or the node's refusal.
    fn delegate(
        &self,
        node: &str,
        command: DelegateCommand,
    ) -> LinkFuture<'_, Result<DelegateOutcome, Refusal>>;
    /// Runs a revocation on `node`; answers the node's refusal, if any.
    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, Option<Refusal>>;
    /// Sends a message from an agent hosted on `node`.
    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome>;
    /// Inflicts a fault on the run's infrastructure (or simulates it), and
    /// answers once it is in effect. A dispatcher that cannot inflict
    /// faults refuses, so a fault scenario never runs as if it had none.
    fn fault(&self, event: FaultEvent) -> LinkFuture<'_, ()> {
        let kind = match event {
            FaultEvent::Begin(prepared) => prepared.fault.kind(),
            FaultEvent::EndStall => "stall",
        };
        Box::pin(async move {
            Err(NodeError::Config {
                problem: format!("this topology cannot inflict a {kind} fault"),
                fix: "run fault scenarios embedded (the default) or with --topology local, where the controller owns the processes",
            })
        })
    }
}

impl Dispatcher for EmbeddedTopology {
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallAnswer> {
        let node = self.node(node);
        Box::pin(async move {
            let answer = node?.call(command).await?;
            self.healthy()?;
            Ok(answer)
        })
    }

    fn delegate(
        &self,
        node: &str,
        command: DelegateCommand,
    ) -> LinkFuture<'_, Result<DelegateOutcome, Refusal>> {
        let node = self.node(node);
        Box::pin(async move { node?.delegate(command).await })
    }

    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, Option<Refusal>> {
        let node = self.node(node);
        let target = target.to_string();
        Box::pin(async move { node?.revoke(&target, at_ms).await })
    }

    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome> {
        let node = self.node(node);
        Box::pin(async move { node?.message(command).await })
    }

    fn fault(&self, event: FaultEvent) -> LinkFuture<'_, ()> {
        Box::pin(self.simulate(event))
    }
}

/// SHA-256 (hex) of a value's canonical JSON: the fingerprint every record
/// of a run uses, the kernel's own (`chio_kernel::receipt::canonical_sha256`).
/// A value with no canonical form (an integer past 2^53) is an error naming
/// `what`, never the fingerprint of something else: two different values
/// must never share a fingerprint in the evidence.
pub fn canonical_sha256(what: &'static str, value: &Value) -> Result<String, NodeError> {
    let bytes =
        chio_kernel::canonical::canonical_bytes(value).map_err(NodeError::canonical(what))?;
    Ok(hex::encode(Sha256::digest(bytes)))
}

/// A capability the run knows of: who holds it, the token, and the token's
/// fingerprint, computed once when the token enters the run.
#[derive(Debug, Clone)]
pub struct HeldCapability {
    /// The agent holding it.
    pub holder: String,
    /// The signed token.
    pub token: CapabilityToken,
    /// [`canonical_sha256`] of the token.
    pub token_sha256: String,
}

impl HeldCapability {
    /// Records `token` as held by `holder`; fails when the token has no
    /// canonical form to fingerprint.
    pub fn new(holder: &str, token: CapabilityToken) -> Result<Self, NodeError> {
        let value = serde_json::to_value(&token)
            .map_err(|_| NodeError::Internal("a capability token did not encode as JSON"))?;
        let token_sha256 = canonical_sha256("a capability token", &value)?;
        Ok(Self {
            holder: holder.to_string(),
            token,
            token_sha256,
        })
    }
}

/// What a released call output is to a message that forwards it and to a
/// call whose argument takes a value from it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleasedOutput {
    /// The label the serving kernel recorded for it.
    pub label: Option<String>,
    /// The integrity label the serving kernel recorded for it, when the
    /// output was untrusted.
    pub integrity: Option<String>,
    /// For a handed-over value: the label record every kernel reads.
    pub record: Option<String>,
    /// [`canonical_sha256`] of the released output (`null` when withheld).
    pub content_sha256: String,
    /// The released output, or why the step released none.
    pub value: Result<Value, Unresolved>,
    /// What its server declares of it: the labels of its parts (a value
    /// taken from it by reference carries the labels of the part taken,
    /// `chio_kernel::provenance::integrity_at`) and which parts it computes
    /// from what the call sent.
    pub rules: chio_kernel::provenance::OutputRules,
    /// The provenance of every argument of its call, when the call sent
    /// anything: a part its server computed carries what every argument
    /// carried (`chio_kernel::provenance::OutputRules::computed_part`),
    /// whether or not the argument holds a scalar. Empty for a call that
    /// sent nothing, whose answer is computed from nothing.
    pub computed_from: Option<Vec<ArgumentSource>>,
    /// For a handed-over value: the agent that handed it over, whose
    /// run-time allowlists count for a protected argument built from it.
    pub sender: Option<String>,
    /// For a call's output: every scalar the call was sent (string,
    /// number or boolean), with the provenance of the argument it belongs
    /// to (none for the caller's own literal). A server may answer with
    /// what it was sent (a path, a query, an amount), so a part of the
    /// output that repeats one is not the server's word: it carries what
    /// the sent value carried.
    pub sent: Vec<(Value, Option<ArgumentSource>)>,
}

impl ReleasedOutput {
    /// What a step that released nothing leaves for a reference to it:
    /// no value, and `why`.
    pub fn nothing(why: Unresolved) -> Result<ReleasedOutput, NodeError> {
        Ok(ReleasedOutput {
            label: None,
            integrity: None,
            record: None,
            content_sha256: canonical_sha256("a withheld output", &Value::Null)?,
            value: Err(why),
            rules: Default::default(),
            computed_from: None,
            sender: None,
            sent: Vec::new(),
        })
    }
}

/// The run's view of capabilities and outputs, and the per-kind handlers.
#[derive(Debug, Clone)]
pub struct StepExecutor {
    /// Every capability so far, with the agent holding it.
    ledger: BTreeMap<String, HeldCapability>,
    /// Each call step's released output, by step id.
    outputs: BTreeMap<String, ReleasedOutput>,
    /// When set, the only call steps whose outputs are kept: those a
    /// message of the schedule forwards, so the ledger does not grow with
    /// the number of calls.
    forwarded: Option<BTreeSet<String>>,
    /// The faults in effect.
    faults: FaultState,
    /// Capabilities delegated over a delayed link, by id, with their
    /// arrival: their holder may use them from then on.
    arriving_capabilities: BTreeMap<String, Arrival>,
    /// Values handed over a delayed link, by hand-over step, with their
    /// arrival: a reference to one reads it from then on.
    arriving_values: BTreeMap<String, Arrival>,
    /// The sealed files arguments read, by path.
    sealed: chio_arena::scenario::sealed::SealedSet,
    /// What each server declares of its tools' outputs, by server and tool.
    output_rules: BTreeMap<(String, String), chio_kernel::provenance::OutputRules>,
}

impl StepExecutor {
    /// The executor at the start of a run: the world's grants, nothing
    /// released; fails when a grant's token cannot be fingerprinted.
    pub fn new(world: &World) -> Result<Self, NodeError> {
        Ok(Self {
            ledger: world
                .grants
                .iter()
                .map(|(id, (holder, token))| {
                    Ok((id.clone(), HeldCapability::new(holder, token.clone())?))
                })
                .collect::<Result<_, NodeError>>()?,
            outputs: BTreeMap::new(),
            forwarded: None,
            faults: FaultState::default(),
            arriving_capabilities: BTreeMap::new(),
            arriving_values: BTreeMap::new(),
            sealed: world.sealed.clone(),
            output_rules: world
                .servers
                .values()
                .flat_map(|server| {
                    server
                        .outputs
                        .iter()
                        .map(|(tool, rules)| ((server.id.clone(), tool.clone()), rules.clone()))
                })
                .collect(),
        })
    }

    /// The executor for a run of a fixed schedule: as [`Self::new`], but it
    /// keeps the released output of only the call steps a message of
    /// the scenario forwards (`from_step`, see `Scenario::forwarded_steps`),
    /// the only outputs a later step reads.
    pub fn for_forwarded(world: &World, forwarded: &BTreeSet<String>) -> Result<Self, NodeError> {
        Ok(Self {
            forwarded: Some(forwarded.clone()),
            ..Self::new(world)?
        })
    }

    /// Whether the released output of call step `step_id` is kept.
    fn keeps_output(&self, step_id: &str) -> bool {
        self.forwarded
            .as_ref()
            .is_none_or(|forwarded| forwarded.contains(step_id))
    }

    /// The faults in effect at this point of the run.
    pub fn faults(&self) -> &FaultState {
        &self.faults
    }

    /// Ends, through `dispatcher`, a stall that is over by `now_ms`; the
    /// run calls this before preparing each step, so a stall holds until
    /// the first step whose instant reaches its end.
    pub async fn settle_faults(
        &mut self,
        dispatcher: &dyn Dispatcher,
        now_ms: u64,
    ) -> Result<(), NodeError> {
        if self.faults.stall_over(now_ms) {
            dispatcher.fault(FaultEvent::EndStall).await?;
            self.faults.end_stall();
        }
        Ok(())
    }

    /// Readies a call that was in flight over a delayed link for dispatch
    /// at its arrival: what its kernel's node being down when it was sent,
    /// or a crash since, leaves of it ([`call::arrive`]). Any other step is
    /// left as it is.
    pub fn arrive(&self, world: &World, prepared: &mut PreparedStep) {
        if let RunStep::Call(call, ()) = prepared {
            call::arrive(self, world, call);
        }
    }

    /// Readies a call still in flight when the run stopped at step `stop`,
    /// before the call's arrival, to be recorded as the controller's deny
    /// without reaching any kernel ([`call::stopped_before_arrival`]). Any
    /// other step is left as it is.
    pub fn stopped_before_arrival(prepared: &mut PreparedStep, stop: &str) {
        if let RunStep::Call(call, ()) = prepared {
            call::stopped_before_arrival(call, stop);
        }
    }

    /// The capability `id`, when it exists at this point of the run.
    pub fn capability(&self, id: &str) -> Option<&HeldCapability> {
        self.ledger.get(id)
    }

    /// The arrival of capability `id`, when it is still in flight to its
    /// holder over a delayed link at `now_ms`.
    pub fn capability_in_flight(&self, id: &str, now_ms: u64) -> Option<&Arrival> {
        self.arriving_capabilities
            .get(id)
            .filter(|arrival| arrival.pending_at(now_ms))
    }

    /// The arrival of the value hand-over step `step` delivered, when it is
    /// still in flight to its receiver over a delayed link at `now_ms`.
    pub fn value_in_flight(&self, step: &str, now_ms: u64) -> Option<&Arrival> {
        self.arriving_values
            .get(step)
            .filter(|arrival| arrival.pending_at(now_ms))
    }

    /// Makes the controller's decisions for one scheduled action of `agent`
    /// at `now_ms` (step `step_id`); nothing is dispatched.
    pub fn prepare(
        &self,
        world: &World,
        step_id: &str,
        action: &Action,
        agent: &str,
        now_ms: u64,
    ) -> Result<PreparedStep, NodeError> {
        Ok(match action {
            Action::Call(call) => RunStep::Call(
                Box::new(call::prepare(self, world, step_id, call, agent, now_ms)?),
                (),
            ),
            Action::Delegate(delegate) => RunStep::Delegate(
                Box::new(delegate::prepare(
                    self, world, step_id, delegate, agent, now_ms,
                )),
                (),
            ),
            Action::Revoke(revoke) => {
                RunStep::Revoke(revoke::prepare(self, world, revoke, agent, now_ms), ())
            }
            Action::Message(message) => RunStep::Message(
                Box::new(message::prepare(
                    self, world, step_id, message, agent, now_ms,
                )?),
                (),
            ),
            Action::Advance(advance) => RunStep::Advance {
                advance_ms: advance.advance_ms,
            },
            Action::Fault(action) => {
                RunStep::Fault(Box::new(fault::prepare(self, world, action, now_ms)))
            }
            Action::Redefine(_) => RunStep::Redefine,
        })
    }

    /// Dispatches a prepared step to `node` and folds the answer into the
    /// run's state. An `Err` is an infrastructure failure, never a verdict.
    pub async fn perform(
        &mut self,
        dispatcher: &dyn Dispatcher,
        node: &str,
        step_id: &str,
        prepared: PreparedStep,
    ) -> Result<Performed, NodeError> {
        let dispatched = Self::dispatch(dispatcher, node, prepared).await?;
        self.fold(step_id, dispatched)
    }

    /// Dispatches a prepared step to `node` without touching the run's
    /// ledger, so steps whose footprints do not overlap can be in flight
    /// together; [`StepExecutor::fold`] takes the answer in. An `Err` is an
    /// infrastructure failure, never a verdict.
    pub async fn dispatch(
        dispatcher: &dyn Dispatcher,
        node: &str,
        prepared: PreparedStep,
    ) -> Result<Dispatched, NodeError> {
        Ok(match prepared {
            RunStep::Call(call, ()) => {
                let answer = match &call.blocked {
                    Some(refusal) => CallAnswer::Refused(refusal.clone()),
                    None => call::dispatch(dispatcher, node, &call).await?,
                };
                RunStep::Call(call, answer)
            }
            RunStep::Delegate(prepared, ()) => {
                let answer = delegate::dispatch(dispatcher, node, &prepared).await?;
                RunStep::Delegate(prepared, answer)
            }
            RunStep::Revoke(prepared, ()) => {
                let answer = revoke::dispatch(dispatcher, node, &prepared).await?;
                RunStep::Revoke(prepared, answer)
            }
            RunStep::Message(prepared, ()) => {
                let outcome = message::dispatch(dispatcher, node, &prepared).await?;
                let delivered = message::delivered(&prepared, &outcome).map(Box::new);
                RunStep::Message(prepared, (outcome, delivered))
            }
            RunStep::Advance { advance_ms } => RunStep::Advance { advance_ms },
            RunStep::Redefine => RunStep::Redefine,
            RunStep::Fault(prepared) => {
                dispatcher
                    .fault(FaultEvent::Begin((*prepared).clone()))
                    .await?;
                RunStep::Fault(prepared)
            }
        })
    }

    /// Folds a dispatched step's answer into the run's ledger (a call's
    /// released output, a delegation's child and holder, a hand-over's
    /// value, a fault put in effect) and answers what the step did. Folding
    /// in the total order leaves the ledger exactly as one step at a time
    /// would. Fails, and changes nothing, when a value the ledger
    /// fingerprints has no canonical form.
    pub fn fold(&mut self, step_id: &str, dispatched: Dispatched) -> Result<Performed, NodeError> {
        Ok(match dispatched {
            RunStep::Call(prepared, answer) => {
                match &answer {
                    CallAnswer::Decided(outcome) => {
                        call::fold(self, step_id, &prepared.command, outcome)?;
                    }
                    // Refused before any kernel decided it: a reference to
                    // it finds that, not a call still in flight.
                    CallAnswer::Refused(_) if self.keeps_output(step_id) => {
                        let nothing = ReleasedOutput::nothing(Unresolved::NotPerformed)?;
                        self.outputs.insert(step_id.to_string(), nothing);
                    }
                    CallAnswer::Refused(_) => {}
                }
                RunStep::Call(prepared, answer)
            }
            RunStep::Delegate(prepared, answer) => {
                let done = delegate::fold(self, &prepared, answer)?;
                RunStep::Delegate(prepared, done)
            }
            RunStep::Revoke(prepared, refusal) => RunStep::Revoke(prepared, refusal),
            RunStep::Message(prepared, (outcome, delivered)) => {
                if let Some(delivered) = delivered {
                    if let (Ok(_), Some(arrival)) = (&delivered.value, &prepared.arrival) {
                        self.arriving_values
                            .insert(step_id.to_string(), arrival.clone());
                    }
                    if self.keeps_output(step_id) {
                        self.outputs.insert(step_id.to_string(), *delivered);
                    }
                }
                RunStep::Message(prepared, outcome)
            }
            RunStep::Advance { advance_ms } => RunStep::Advance { advance_ms },
            RunStep::Redefine => RunStep::Redefine,
            RunStep::Fault(prepared) => {
                self.faults.apply(&prepared, step_id);
                RunStep::Fault(prepared)
            }
        })
    }
}

/// Drives a future whose every await is already ready (a dispatcher that
/// answers synchronously, such as [`direct::DirectDispatcher`]) to its
/// result without a runtime. A future that would wait is an error, never a
/// hang.
pub fn complete_now<T>(future: impl Future<Output = Result<T, NodeError>>) -> Result<T, NodeError> {
    let mut future = std::pin::pin!(future);
    let mut context = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut context) {
        Poll::Ready(result) => result,
        Poll::Pending => Err(NodeError::Internal(
            "a synchronous dispatcher answered later instead of at once",
        )),
    }
}
