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
//! [`message`]).
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
pub mod message;
pub mod revoke;

use std::collections::BTreeMap;
use std::future::Future;
use std::task::{Context, Poll, Waker};

use chio_arena::Action;
use chio_kernel::canonical::to_canonical_string;
use chio_kernel::token::CapabilityToken;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::actors::CallOutcome;
use crate::error::NodeError;
use crate::link::LinkFuture;
use crate::node::{CallCommand, DelegateCommand, DelegateOutcome, MessageCommand, MessageOutcome};
use crate::world::World;
use crate::EmbeddedTopology;

pub use call::PreparedCall;
pub use delegate::{DelegatedChild, DelegationAnswer, PreparedDelegate};
pub use message::PreparedMessage;
pub use revoke::PreparedRevoke;

/// How prepared commands reach the node hosting the acting agent.
pub trait Dispatcher: Send + Sync {
    /// Runs a call on `node`.
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallOutcome>;
    /// Runs a delegation on `node`, returning the child token and the
    /// labels recorded for it.
    fn delegate(&self, node: &str, command: DelegateCommand) -> LinkFuture<'_, DelegateOutcome>;
    /// Runs a revocation on `node`.
    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, ()>;
    /// Sends a message from an agent hosted on `node`.
    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome>;
}

impl Dispatcher for EmbeddedTopology {
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallOutcome> {
        let node = self.node(node).cloned();
        Box::pin(async move { node?.call(command).await })
    }

    fn delegate(&self, node: &str, command: DelegateCommand) -> LinkFuture<'_, DelegateOutcome> {
        let node = self.node(node).cloned();
        Box::pin(async move { node?.delegate(command).await })
    }

    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, ()> {
        let node = self.node(node).cloned();
        let target = target.to_string();
        Box::pin(async move { node?.revoke(&target, at_ms).await })
    }

    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome> {
        let node = self.node(node).cloned();
        Box::pin(async move { node?.message(command).await })
    }
}

/// SHA-256 (hex) of a value's canonical JSON: the fingerprint every record
/// of a run uses.
pub fn canonical_sha256(value: &Value) -> String {
    // Every value fingerprinted here is built from validated scenario data
    // or signed kernel values (integers within 2^53), so canonicalisation
    // cannot fail; an empty input would only make two fingerprints compare
    // equal, never allow.
    hex::encode(Sha256::digest(
        to_canonical_string(value).unwrap_or_default().as_bytes(),
    ))
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
    /// Records `token` as held by `holder`.
    pub fn new(holder: &str, token: CapabilityToken) -> Self {
        let token_sha256 = canonical_sha256(&serde_json::to_value(&token).unwrap_or(Value::Null));
        Self {
            holder: holder.to_string(),
            token,
            token_sha256,
        }
    }
}

/// What a released call output is to a message that forwards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleasedOutput {
    /// The label the serving kernel recorded for it.
    pub label: Option<String>,
    /// [`canonical_sha256`] of the released output (`null` when withheld).
    pub content_sha256: String,
}

/// A scheduled action, decided by the controller and ready to dispatch.
#[derive(Debug, Clone)]
pub enum PreparedStep {
    /// A call.
    Call(Box<PreparedCall>),
    /// A delegation.
    Delegate(Box<PreparedDelegate>),
    /// A revocation.
    Revoke(PreparedRevoke),
    /// A message.
    Message(PreparedMessage),
    /// The virtual clock moves; nothing is dispatched.
    Advance {
        /// Milliseconds advanced.
        advance_ms: u64,
    },
}

impl PreparedStep {
    /// The action kind, as records name it.
    pub fn kind(&self) -> &'static str {
        match self {
            PreparedStep::Call(_) => "call",
            PreparedStep::Delegate(_) => "delegate",
            PreparedStep::Revoke(_) => "revoke",
            PreparedStep::Message(_) => "message",
            PreparedStep::Advance { .. } => "advance",
        }
    }
}

/// What dispatching a prepared step did.
#[derive(Debug, Clone)]
pub enum Performed {
    /// The serving kernel's answer to a call.
    Call(Box<CallOutcome>),
    /// The child a delegation produced, or why the controller refused it.
    Delegate(Result<Box<DelegatedChild>, String>),
    /// `None` when the revocation took effect, else why it was refused.
    Revoke(Option<String>),
    /// The labels a message carried.
    Message(MessageOutcome),
    /// The clock moved.
    Advance,
}

/// What a node answered for a dispatched step, before the run's ledger
/// takes it in ([`StepExecutor::fold`]).
#[derive(Debug, Clone)]
pub enum Dispatched {
    /// The serving kernel's answer to a call.
    Call(Box<CallOutcome>),
    /// The node's answer to a delegation, or why the controller refused it.
    Delegate(Result<Box<DelegationAnswer>, String>),
    /// `None` when the revocation took effect, else why it was refused.
    Revoke(Option<String>),
    /// The labels a message carried.
    Message(MessageOutcome),
    /// Nothing was dispatched.
    Advance,
}

/// The run's view of capabilities and outputs, and the per-kind handlers.
#[derive(Debug, Clone)]
pub struct StepExecutor {
    /// Every capability so far, with the agent holding it.
    ledger: BTreeMap<String, HeldCapability>,
    /// Each call step's released output, by step id.
    outputs: BTreeMap<String, ReleasedOutput>,
}

impl StepExecutor {
    /// The executor at the start of a run: the world's grants, nothing released.
    pub fn new(world: &World) -> Self {
        Self {
            ledger: world
                .grants
                .iter()
                .map(|(id, (holder, token))| {
                    (id.clone(), HeldCapability::new(holder, token.clone()))
                })
                .collect(),
            outputs: BTreeMap::new(),
        }
    }

    /// The capability `id`, when it exists at this point of the run.
    pub fn capability(&self, id: &str) -> Option<&HeldCapability> {
        self.ledger.get(id)
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
            Action::Call(call) => PreparedStep::Call(Box::new(call::prepare(
                self, world, step_id, call, agent, now_ms,
            )?)),
            Action::Delegate(delegate) => {
                PreparedStep::Delegate(Box::new(delegate::prepare(self, delegate, agent, now_ms)))
            }
            Action::Revoke(revoke) => {
                PreparedStep::Revoke(revoke::prepare(self, world, revoke, agent, now_ms))
            }
            Action::Message(message) => {
                PreparedStep::Message(message::prepare(self, message, agent, now_ms))
            }
            Action::Advance(advance) => PreparedStep::Advance {
                advance_ms: advance.advance_ms,
            },
        })
    }

    /// Dispatches a prepared step to `node` and folds the answer into the
    /// run's state. An `Err` is an infrastructure failure, never a verdict.
    pub async fn perform(
        &mut self,
        dispatcher: &dyn Dispatcher,
        node: &str,
        step_id: &str,
        prepared: &PreparedStep,
    ) -> Result<Performed, NodeError> {
        let dispatched = Self::dispatch(dispatcher, node, prepared).await?;
        Ok(self.fold(step_id, dispatched))
    }

    /// Dispatches a prepared step to `node` without touching the run's
    /// ledger, so steps whose footprints do not overlap can be in flight
    /// together; [`StepExecutor::fold`] takes the answer in. An `Err` is an
    /// infrastructure failure, never a verdict.
    pub async fn dispatch(
        dispatcher: &dyn Dispatcher,
        node: &str,
        prepared: &PreparedStep,
    ) -> Result<Dispatched, NodeError> {
        Ok(match prepared {
            PreparedStep::Call(prepared) => {
                Dispatched::Call(Box::new(call::dispatch(dispatcher, node, prepared).await?))
            }
            PreparedStep::Delegate(prepared) => {
                Dispatched::Delegate(delegate::dispatch(dispatcher, node, prepared).await?)
            }
            PreparedStep::Revoke(prepared) => {
                Dispatched::Revoke(revoke::dispatch(dispatcher, node, prepared).await?)
            }
            PreparedStep::Message(prepared) => {
                Dispatched::Message(message::dispatch(dispatcher, node, prepared).await?)
            }
            PreparedStep::Advance { .. } => Dispatched::Advance,
        })
    }

    /// Folds a dispatched step's answer into the run's ledger (a call's
    /// released output, a delegation's child and holder) and answers what
    /// the step did. Folding in the total order leaves the ledger exactly
    /// as one step at a time would.
    pub fn fold(&mut self, step_id: &str, dispatched: Dispatched) -> Performed {
        match dispatched {
            Dispatched::Call(outcome) => {
                call::fold(self, step_id, &outcome);
                Performed::Call(outcome)
            }
            Dispatched::Delegate(answer) => Performed::Delegate(delegate::fold(self, answer)),
            Dispatched::Revoke(refusal) => Performed::Revoke(refusal),
            Dispatched::Message(outcome) => Performed::Message(outcome),
            Dispatched::Advance => Performed::Advance,
        }
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
        Poll::Pending => Err(NodeError::Kernel(
            "a synchronous dispatcher answered later instead of at once".to_string(),
        )),
    }
}
