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
//! refusal ([`crate::outage`]) rather than an error.
//!
//! Labels move only through the authority state ([`AuthorityControl`]),
//! which is trust-control in a distributed run and its in-memory store in
//! the embedded one, so a label a node joins is the label every kernel on
//! every node reads next.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chio_kernel::handover::ValueSchema;
use chio_kernel::keys::public_key_hex;
use chio_kernel::label::LabelCarry;
use chio_kernel::provenance::{AgentRole, ArgumentSource};
use chio_kernel::reason::DenyReason;
use chio_kernel::stores::KernelStores;
use chio_kernel::token::{Attenuation, CapabilityToken};
use serde_json::Value;

use crate::actors::agent::CallIntent;
use crate::actors::{AgentHandle, CallOutcome, IssuerSource, KernelHandle, ToolServerHandle};
use crate::error::NodeError;
use crate::link::{KernelLink, LinkFuture};
use crate::mux::KernelMultiplexer;
use crate::outage::{self, Refusal};
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
    /// The label of the output the message forwards, as the serving
    /// kernel's decision trace recorded it; absent for literal content or
    /// an output that was not labelled (or not released).
    pub output_label: Option<String>,
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
    /// The labels of the outputs the value was built from (their label
    /// and integrity, as the releasing kernels recorded them), ascending.
    pub value_labels: Vec<String>,
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
    /// Virtual time, Unix milliseconds.
    pub now_ms: u64,
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
            now_ms: command.now_ms,
            sealed: command.sealed,
        }
    }
}

/// The label move a message makes, or why a hand-over is refused.
///
/// A message of content or of a forwarded output carries the sender's
/// labels to the receiver ([`LabelCarry::message`]). A hand-over's value is
/// checked against its schema by the kernel's rule
/// ([`chio_kernel::handover::ValueSchema`]) first: a value it refuses is
/// refused with `hand-over-refused` and carries nothing. A value it admits
/// is recorded with its labels ([`LabelCarry::handover`]); the receiver's
/// principal and session stay trusted only when a quarantined reader hands
/// over to a planner, and are tainted as by any message otherwise.
pub(crate) fn message_carry(
    command: &MessageCommand,
    sender: AgentRole,
    receiver: AgentRole,
) -> Result<LabelCarry, StepRefusal> {
    let Some(handover) = &command.handover else {
        return Ok(LabelCarry::message(
            &command.agent,
            &command.to,
            &command.to,
            command.output_label.as_deref(),
        ));
    };
    let refuse = |reason: DenyReason| StepRefusal {
        code: reason.code().as_str().to_string(),
        message: reason.to_string(),
    };
    let schema = ValueSchema::parse(&handover.schema).map_err(|refused| {
        refuse(DenyReason::HandOverRefused {
            pointer: refused.at,
            keyword: "schema".to_string(),
        })
    })?;
    schema.check(&handover.value).map_err(|refused| {
        refuse(DenyReason::HandOverRefused {
            pointer: refused.pointer,
            keyword: refused.keyword.to_string(),
        })
    })?;
    let endorsed = sender == AgentRole::Quarantined && receiver == AgentRole::Planner;
    Ok(LabelCarry::handover(
        &command.agent,
        &command.to,
        &handover.step,
        &handover.value_labels,
        endorsed,
        !handover.by_reference,
    ))
}

/// The label move a delegation makes: what the delegator holds, recorded
/// for the child's link (`chio_kernel::label::LabelCarry`).
pub(crate) fn delegation_carry(
    delegator: &str,
    child: &CapabilityToken,
) -> Result<LabelCarry, NodeError> {
    let link = child.delegation_chain.last().ok_or(NodeError::Internal(
        "a delegated capability carries no link",
    ))?;
    LabelCarry::delegation(delegator, link).map_err(NodeError::LabelRecord)
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
    agent_keys: BTreeMap<String, String>,
    roles: BTreeMap<String, AgentRole>,
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
        let routes = world
            .servers
            .values()
            .map(|s| (s.id.clone(), s.kernel.clone()))
            .collect();
        Self {
            id: id.to_string(),
            mux: KernelMultiplexer::new(routes, actors.kernels, actors.agents, link),
            agent_keys: world
                .agents
                .values()
                .map(|a| (a.id.clone(), public_key_hex(&a.key)))
                .collect(),
            roles: world
                .agents
                .values()
                .map(|a| (a.id.clone(), a.role))
                .collect(),
            authority,
        }
    }

    /// The logical node id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Runs a scheduled call: the agent signs, the serving kernel decides.
    /// The node denies the call itself when the agent does not hold what it
    /// presents or the serving kernel cannot be reached
    /// ([`crate::outage`]); any other failure is an error.
    pub async fn call(&self, command: CallCommand) -> Result<CallAnswer, NodeError> {
        let agent = self.mux.agent(&command.agent)?;
        let now_ms = command.now_ms;
        let request = match agent.prepare(command.into()).await {
            Ok(request) => request,
            Err(e) => return outage::call_refusal(e).map(CallAnswer::Refused),
        };
        let kernel = self.mux.kernel_for(&request.server)?.to_string();
        match self.mux.evaluate_on(&kernel, request, now_ms).await {
            Ok(outcome) => Ok(CallAnswer::Decided(Box::new(outcome))),
            Err(NodeError::LinkDown { node, outage }) => Ok(CallAnswer::Refused(
                outage::kernel_unreachable(&kernel, &node, &self.id, outage),
            )),
            Err(e) => Err(e),
        }
    }

    /// Runs a scheduled delegation: the delegator signs the child, what
    /// the delegator holds now is recorded for the child, and only then is
    /// the child handed to the delegatee, so no call through it can precede
    /// its record. The node refuses the delegation itself (`Ok(Err(reason))`)
    /// when the delegator does not hold the parent, trust-control cannot be
    /// reached to record the child's labels, or the delegatee's node cannot
    /// be reached.
    pub async fn delegate(
        &self,
        command: DelegateCommand,
    ) -> Result<Result<DelegateOutcome, Refusal>, NodeError> {
        let agent = self.mux.agent(&command.agent)?;
        let delegatee = self
            .agent_keys
            .get(&command.to)
            .ok_or_else(|| NodeError::Unroutable(format!("agent {}", command.to)))?;
        let signed = agent
            .delegate(
                &command.capability_id,
                delegatee,
                command.attenuation,
                &command.delegation_id,
                command.now_ms,
            )
            .await;
        let child = match signed {
            Ok(child) => child,
            Err(e) => return outage::delegation_refusal(e).map(Err),
        };
        let carry = delegation_carry(&command.agent, &child)?;
        let carried = match self.authority.carry_labels(carry.clone()).await {
            Ok(carried) => carried,
            Err(NodeError::ControlDown { outage, .. }) => {
                return Ok(Err(outage::delegation_unrecorded(outage)))
            }
            Err(e) => return Err(e),
        };
        match self.mux.hand_over(&command.to, child.clone()).await {
            Ok(()) => {}
            Err(NodeError::LinkDown { node, outage }) => {
                return Ok(Err(outage::delegation_undelivered(
                    &command.to,
                    &node,
                    &self.id,
                    outage,
                )))
            }
            Err(e) => return Err(e),
        }
        Ok(Ok(DelegateOutcome {
            token: child,
            labels: carry.reported(&carried),
        }))
    }

    /// Runs a scheduled message from an agent of this node: the labels the
    /// sender's principal holds now, plus the forwarded output's label, are
    /// joined into the receiver's principal and session (an agent's session
    /// is its id). The receiver's actor keeps no conversation: what a
    /// message changes is what every kernel knows about the receiver.
    pub async fn message(&self, command: MessageCommand) -> Result<MessageOutcome, NodeError> {
        self.mux.agent(&command.agent)?;
        if !self.agent_keys.contains_key(&command.to) {
            return Err(NodeError::Unroutable(format!("agent {}", command.to)));
        }
        let role = |agent: &str| self.roles.get(agent).copied().unwrap_or_default();
        let carry = match message_carry(&command, role(&command.agent), role(&command.to)) {
            Ok(carry) => carry,
            Err(refusal) => {
                return Ok(MessageOutcome {
                    labels: Vec::new(),
                    refusal: Some(refusal),
                })
            }
        };
        let carried = self.authority.carry_labels(carry.clone()).await?;
        Ok(MessageOutcome {
            labels: carry.reported(&carried),
            refusal: None,
        })
    }

    /// Revokes a capability or delegation id through the authority state;
    /// answers the node's refusal when trust-control cannot be reached to
    /// record it.
    pub async fn revoke(&self, target: &str, at_ms: u64) -> Result<Option<Refusal>, NodeError> {
        match self.authority.revoke(target, at_ms).await {
            Ok(()) => Ok(None),
            Err(NodeError::ControlDown { outage, .. }) => {
                Ok(Some(outage::revocation_unrecorded(outage)))
            }
            Err(e) => Err(e),
        }
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

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
