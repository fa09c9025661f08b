//! One step type from preparation to record: [`RunStep`] holds, for each
//! kind, what the controller decided before dispatch and what the step's
//! phase adds to it (nothing once prepared, the node's answer once
//! dispatched, what the step did once the run's ledger took the answer in).
//! An answer is always carried by the step it answers, so a call answered
//! as a delegation, or any other mismatched pair, cannot be expressed.

use std::fmt::Debug;

use chio_arena::ActionKind;

use super::{
    DelegatedChild, DelegationAnswer, PreparedCall, PreparedDelegate, PreparedFault,
    PreparedMessage, PreparedRevoke, ReleasedOutput,
};
use crate::node::{CallAnswer, MessageOutcome};
use crate::outage::Refusal;

/// What a phase adds to each kind of step that is dispatched.
pub trait Phase: Debug + Clone {
    /// For a call.
    type Call: Debug + Clone + Send;
    /// For a delegation.
    type Delegate: Debug + Clone + Send;
    /// For a revocation.
    type Revoke: Debug + Clone + Send;
    /// For a message.
    type Message: Debug + Clone + Send;
}

/// Decided by the controller, not yet dispatched.
#[derive(Debug, Clone)]
pub struct Prepared;

impl Phase for Prepared {
    type Call = ();
    type Delegate = ();
    type Revoke = ();
    type Message = ();
}

/// Answered by a node, before the run's ledger takes the answer in
/// ([`StepExecutor::fold`](super::StepExecutor::fold)).
#[derive(Debug, Clone)]
pub struct Answered;

impl Phase for Answered {
    /// The serving kernel's decision, or a deny without one: by the
    /// controller (the agent's node is down) or by the agent's node (the
    /// kernel cannot be reached, or the agent does not hold what it
    /// presents).
    type Call = CallAnswer;
    /// The node's answer, or why the controller or the node refused it.
    type Delegate = Result<Box<DelegationAnswer>, Refusal>;
    /// `None` when the revocation took effect, else why it was refused.
    type Revoke = Option<Refusal>;
    /// The labels a message carried, and for a hand-over the value it
    /// delivered (or why it delivered none) for later references.
    type Message = (MessageOutcome, Option<Box<ReleasedOutput>>);
}

/// Folded into the run's ledger: what the step did, to be recorded.
#[derive(Debug, Clone)]
pub struct Done;

impl Phase for Done {
    /// As answered.
    type Call = CallAnswer;
    /// The child the delegation produced, or why it was refused.
    type Delegate = Result<Box<DelegatedChild>, Refusal>;
    /// As answered.
    type Revoke = Option<Refusal>;
    /// The labels the message carried.
    type Message = MessageOutcome;
}

/// A scheduled action in phase `P`: what the controller decided for it,
/// and what the phase adds.
#[derive(Debug, Clone)]
pub enum RunStep<P: Phase> {
    /// A call.
    Call(Box<PreparedCall>, P::Call),
    /// A delegation.
    Delegate(Box<PreparedDelegate>, P::Delegate),
    /// A revocation.
    Revoke(PreparedRevoke, P::Revoke),
    /// A message.
    Message(Box<PreparedMessage>, P::Message),
    /// The virtual clock moves; nothing is dispatched.
    Advance {
        /// Milliseconds advanced.
        advance_ms: u64,
    },
    /// A fault in the run's infrastructure; once dispatched, the
    /// dispatcher has inflicted it, and once folded it is in effect.
    Fault(Box<PreparedFault>),
    /// A server changes a tool's definition; nothing is dispatched, since
    /// every kernel serving the server holds the redefinition from the
    /// world and checks calls against the definition in force.
    Redefine,
}

/// A scheduled action, decided by the controller and ready to dispatch.
pub type PreparedStep = RunStep<Prepared>;

/// What a node answered for a dispatched step, before the run's ledger
/// takes it in.
pub type Dispatched = RunStep<Answered>;

/// What a dispatched step did, folded into the run's ledger.
pub type Performed = RunStep<Done>;

impl<P: Phase> RunStep<P> {
    /// The action kind, as records name it.
    pub fn kind(&self) -> ActionKind {
        match self {
            RunStep::Call(..) => ActionKind::Call,
            RunStep::Delegate(..) => ActionKind::Delegate,
            RunStep::Revoke(..) => ActionKind::Revoke,
            RunStep::Message(..) => ActionKind::Message,
            RunStep::Advance { .. } => ActionKind::Advance,
            RunStep::Fault(_) => ActionKind::Fault,
            RunStep::Redefine => ActionKind::Redefine,
        }
    }

    /// Whether nothing may run concurrently with this step or be reordered
    /// across it: a fault changes what every later step meets.
    pub fn is_barrier(&self) -> bool {
        matches!(self, RunStep::Fault(_))
    }

    /// When the step is decided later than its instant: a call sent over a
    /// delayed link, decided at its arrival (Unix ms).
    pub fn arrival_ms(&self) -> Option<u64> {
        match self {
            RunStep::Call(call, _) => call.arrival_ms(),
            RunStep::Delegate(..)
            | RunStep::Revoke(..)
            | RunStep::Message(..)
            | RunStep::Advance { .. }
            | RunStep::Fault(_)
            | RunStep::Redefine => None,
        }
    }
}
