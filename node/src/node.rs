//! A node: the actors placed on one logical node and the operations the
//! controller (NodeControl) and other nodes (KernelLink) ask of it.
//!
//! Operations, each the handling of one scheduled action: a call (the
//! acting agent signs a request, the multiplexer routes it to the serving
//! kernel), a delegation (the delegator signs a link, what the delegator
//! holds is recorded for the child in the label store, and the child is
//! handed over to the delegatee's node), a message (the content's labels
//! are joined into the receiver's principal and session in the label store
//! the kernels read), and a revocation (sent to the authority state).
//! Ordering is the controller's: a node handles what it is sent. When what
//! a step needs cannot be reached (another node over the link,
//! trust-control) or is not held, the node answers its own fail-closed
//! refusal ([`crate::outage`]) rather than an error. Those decisions are
//! written once in [`crate::handling`]; a [`Node`] is its asynchronous port
//! (its actors, multiplexer and link), as the direct dispatcher is its
//! synchronous one.
//!
//! Labels move only through the authority state ([`AuthorityControl`]),
//! which is trust-control in a distributed run and its in-memory store in
//! the embedded one, so a label a node joins is the label every kernel on
//! every node reads next.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chio_kernel::label::LabelCarry;
use chio_kernel::provenance::ArgumentSource;
use chio_kernel::request::ToolCallRequest;
use chio_kernel::stores::KernelStores;
use chio_kernel::token::{Attenuation, CapabilityToken};
use serde_json::Value;

use crate::actors::agent::{CallIntent, ChildIntent};
use crate::actors::{AgentHandle, CallOutcome, IssuerSource, KernelHandle, ToolServerHandle};
use crate::error::NodeError;
use crate::handling::{self, NodePort, Roster};
use crate::link::{KernelLink, LinkFuture};
use crate::mux::KernelMultiplexer;
use crate::outage::Refusal;
use crate::tools::ToolServer;
use crate::world::{KernelPlan, World};

/// Authority state acted on outside a kernel decision: revocation, and the
/// label moves of messages and delegations. In-process shared state in the
/// embedded topology, trust-control otherwise; either way the same store
/// the kernels read.
pub trait AuthorityControl: Send + Sync {
    /// Revokes a capability or delegation id.
    fn revoke(&self, id: &str, at_ms: u64) -> LinkFuture<'_, ()>;

    /// Applies a label move and answers the labels joined.
    fn carry_labels(&self, carry: LabelCarry) -> LinkFuture<'_, BTreeSet<String>>;
}

/// A scheduled message, as the controller sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageCommand {
    /// The sending agent, hosted by the node that receives the command.
    pub agent: String,
    /// The receiving agent, on any node.
    pub to: String,
    /// What the message's content was built from, read as a call reads
    /// its arguments' sources: for a forwarded output, the labels the
    /// serving kernel recorded for it and what it carries from what its
    /// call sent (a computed or echoed part); for a hand-over, the same for
    /// every reference of the value, each at its place in the value, with
    /// the hand-over records they name. Empty for literal content.
    pub sources: Vec<ArgumentSource>,
    /// The value a hand-over passes, when the message is one.
    pub handover: Option<HandOverCommand>,
    /// Virtual time, Unix milliseconds.
    pub now_ms: u64,
}

/// A value handed over under a schema (`chio_kernel::handover`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandOverCommand {
    /// The message step, which names the value's record.
    pub step: String,
    /// The schema the value must satisfy.
    pub schema: Value,
    /// The value, every reference resolved.
    pub value: Value,
    /// Whether the whole value is one earlier output's part, taken by
    /// reference: then it carries that part's labels only. A value the
    /// sender writes itself, wholly or in part, also carries what the
    /// sender's principal holds, since a hijacked sender chose it.
    pub by_reference: bool,
}

/// Why a message step was refused: a reason and its stable code (a
/// kernel's, such as `hand-over-refused`, or a node's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRefusal {
    /// The reason's code.
    pub code: String,
    /// The reason's message.
    pub message: String,
}

/// What a message carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageOutcome {
    /// The labels joined into the receiver's principal and session (for
    /// a hand-over, into the value's record), in ascending order.
    pub labels: Vec<String>,
    /// Why a hand-over was refused (then nothing was carried).
    pub refusal: Option<StepRefusal>,
}

/// What a delegation produced.
#[derive(Debug, Clone, PartialEq)]
pub struct DelegateOutcome {
    /// The child capability, already held by the delegatee.
    pub token: CapabilityToken,
    /// The delegator's labels recorded for the child (`delegation/<child
    /// id>`), in ascending order, without the record's floor.
    pub labels: Vec<String>,
}

/// What the acting agent's node answers for a call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallAnswer {
    /// The serving kernel decided: its verdict, signed receipt and trace.
    Decided(Box<CallOutcome>),
    /// The node denied the call itself, with its reason
    /// ([`crate::outage`]): the serving kernel could not be reached, or the
    /// agent does not hold what it presents. No kernel ran the call, so
    /// there is no receipt and no trace.
    Refused(Refusal),
}

impl CallAnswer {
    /// The kernel's outcome, or the node's refusal as the error.
    pub fn decided(self) -> Result<CallOutcome, Refusal> {
        match self {
            CallAnswer::Decided(outcome) => Ok(*outcome),
            CallAnswer::Refused(reason) => Err(reason),
        }
    }
}

/// A scheduled call, as the controller sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallCommand {
    /// Request id (the step id, or a reused one for a replay).
    pub request_id: String,
    /// Acting agent.
    pub agent: String,
    /// Capability presented.
    pub capability_id: String,
    /// A captured token presented by an agent that does not hold it.
    pub captured: Option<CapabilityToken>,
    /// Server called.
    pub server: String,
    /// Tool called.
    pub tool: String,
    /// Arguments.
    pub arguments: Value,
    /// The arguments built from earlier values, with their provenance.
    pub sources: Vec<ArgumentSource>,
    /// Virtual time of the decision, Unix milliseconds: the call's arrival
    /// at its kernel.
    pub now_ms: u64,
    /// When the agent issued the request, Unix milliseconds: its step's
    /// instant, before `now_ms` only over a delayed link.
    pub issued_at_ms: u64,
    /// JSON pointers of the sealed arguments (`chio_kernel::seal`).
    pub sealed: Vec<String>,
}

impl From<CallCommand> for CallIntent {
    fn from(command: CallCommand) -> Self {
        CallIntent {
            request_id: command.request_id,
            capability_id: command.capability_id,
            captured: command.captured,
            server: command.server,
            tool: command.tool,
            arguments: command.arguments,
            sources: command.sources,
            issued_at_ms: command.issued_at_ms,
            sealed: command.sealed,
        }
    }
}

/// A scheduled delegation, as the controller sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct DelegateCommand {
    /// The delegating agent.
    pub agent: String,
    /// The parent capability it holds.
    pub capability_id: String,
    /// The receiving agent.
    pub to: String,
    /// The new capability's id.
    pub delegation_id: String,
    /// What the child narrows (absolute values, already resolved).
    pub attenuation: Attenuation,
    /// Virtual time, Unix milliseconds.
    pub now_ms: u64,
}

/// The actors of one logical node before they are linked to the others.
#[derive(Debug, Clone, Default)]
pub struct NodeActors {
    /// Kernels by id.
    pub kernels: BTreeMap<String, KernelHandle>,
    /// Agents by id.
    pub agents: BTreeMap<String, AgentHandle>,
}

impl NodeActors {
    /// Spawns the kernels, servers and agents the world places on `node`;
    /// `stores` gives each kernel its stores.
    pub fn spawn(
        world: &World,
        node: &str,
        mut stores: impl FnMut(&KernelPlan) -> Result<KernelStores, NodeError>,
    ) -> Result<Self, NodeError> {
        Self::spawn_with_issuers(world, node, |plan| Ok((stores(plan)?, None)))
    }

    /// Like [`NodeActors::spawn`], where `setup` also gives each kernel the
    /// source it refreshes its trusted issuer keys from.
    pub fn spawn_with_issuers(
        world: &World,
        node: &str,
        mut setup: impl FnMut(
            &KernelPlan,
        )
            -> Result<(KernelStores, Option<Box<dyn IssuerSource>>), NodeError>,
    ) -> Result<Self, NodeError> {
        let mut kernels = BTreeMap::new();
        for plan in world.kernels.values().filter(|k| k.node == node) {
            let servers: BTreeMap<String, ToolServerHandle> = world
                .servers
                .values()
                .filter(|s| s.kernel == plan.id)
                .map(|s| {
                    (
                        s.id.clone(),
                        ToolServerHandle::spawn(
                            ToolServer::new(&s.id, s.config.clone())
                                .with_integrity(s.integrity.clone()),
                        ),
                    )
                })
                .collect();
            let (stores, issuers) = setup(plan)?;
            let handle =
                KernelHandle::spawn_with_issuers(plan.config.clone(), stores, servers, issuers)?;
            kernels.insert(plan.id.clone(), handle);
        }
        let mut agents = BTreeMap::new();
        for plan in world.agents.values().filter(|a| a.node == node) {
            let grants: Vec<CapabilityToken> = world
                .grants
                .values()
                .filter(|(holder, _)| *holder == plan.id)
                .map(|(_, token)| token.clone())
                .collect();
            agents.insert(
                plan.id.clone(),
                AgentHandle::spawn(&plan.id, plan.key.clone(), grants),
            );
        }
        Ok(Self { kernels, agents })
    }
}

/// One logical node, linked to the rest of the run.
#[derive(Clone)]
pub struct Node {
    id: String,
    mux: KernelMultiplexer,
    roster: Arc<Roster>,
    authority: Arc<dyn AuthorityControl>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.id)
            .field("mux", &self.mux)
            .finish_non_exhaustive()
    }
}

impl Node {
    /// Links a node's actors to the rest of the run.
    pub fn new(
        world: &World,
        id: &str,
        actors: NodeActors,
        link: Arc<dyn KernelLink>,
        authority: Arc<dyn AuthorityControl>,
    ) -> Self {
        let roster = Roster::of(world);
        let routes = roster.routes().clone();
        Self {
            id: id.to_string(),
            mux: KernelMultiplexer::new(routes, actors.kernels, actors.agents, link),
            roster: Arc::new(roster),
            authority,
        }
    }

    /// The logical node id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Runs a scheduled call ([`handling::call`]).
    pub async fn call(&self, command: CallCommand) -> Result<CallAnswer, NodeError> {
        handling::call(self, command).await
    }

    /// Runs a scheduled delegation ([`handling::delegate`]); a refusal of
    /// the node's is `Ok(Err(reason))`.
    pub async fn delegate(
        &self,
        command: DelegateCommand,
    ) -> Result<Result<DelegateOutcome, Refusal>, NodeError> {
        handling::delegate(self, command).await
    }

    /// Runs a scheduled message from an agent of this node
    /// ([`handling::message`]).
    pub async fn message(&self, command: MessageCommand) -> Result<MessageOutcome, NodeError> {
        handling::message(self, command).await
    }

    /// Revokes a capability or delegation id through the authority state
    /// ([`handling::revoke`]).
    pub async fn revoke(&self, target: &str, at_ms: u64) -> Result<Option<Refusal>, NodeError> {
        handling::revoke(self, target, at_ms).await
    }

    /// Hands a capability to an agent on this node (KernelLink).
    pub async fn hand_over(&self, agent: &str, token: CapabilityToken) -> Result<(), NodeError> {
        self.mux.hand_over(agent, token).await
    }

    /// Evaluates a call forwarded by another node on a kernel of this node
    /// (KernelLink).
    pub async fn evaluate_forwarded(
        &self,
        kernel_id: &str,
        request: chio_kernel::request::ToolCallRequest,
        now_ms: u64,
    ) -> Result<CallOutcome, NodeError> {
        self.mux.evaluate_on(kernel_id, request, now_ms).await
    }

    /// Evaluates calls that arrive together on a kernel this node hosts:
    /// all admitted, in order, before any is dispatched.
    pub async fn evaluate_together(
        &self,
        kernel_id: &str,
        requests: Vec<(chio_kernel::request::ToolCallRequest, u64)>,
    ) -> Result<Vec<CallOutcome>, NodeError> {
        self.mux.evaluate_together_on(kernel_id, requests).await
    }

    /// Changes a fixture file of a tool server this node hosts, outside
    /// any call; answers the content it had.
    pub async fn change_fixture(
        &self,
        server: &str,
        path: &str,
        change: crate::tools::FileChange,
    ) -> Result<Option<String>, NodeError> {
        self.mux.change_file(server, path, change).await
    }
}

/// The node's port: its agent actors, its multiplexer (local kernels by
/// channel, others over its link) and its authority state.
impl NodePort for Node {
    fn node_id(&self) -> &str {
        &self.id
    }

    fn roster(&self) -> &Roster {
        &self.roster
    }

    fn sign_call(&self, agent: &str, intent: CallIntent) -> LinkFuture<'_, ToolCallRequest> {
        let agent = self.mux.agent(agent);
        Box::pin(async move { agent?.prepare(intent).await })
    }

    fn sign_child(&self, agent: &str, intent: ChildIntent) -> LinkFuture<'_, CapabilityToken> {
        let agent = self.mux.agent(agent);
        Box::pin(async move { agent?.delegate(intent).await })
    }

    fn evaluate(
        &self,
        kernel: &str,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> LinkFuture<'_, CallOutcome> {
        let kernel = kernel.to_string();
        Box::pin(async move { self.mux.evaluate_on(&kernel, request, now_ms).await })
    }

    fn hand_over(&self, agent: &str, token: CapabilityToken) -> LinkFuture<'_, ()> {
        let agent = agent.to_string();
        Box::pin(async move { self.mux.hand_over(&agent, token).await })
    }

    fn authority(&self) -> &dyn AuthorityControl {
        self.authority.as_ref()
    }
}
