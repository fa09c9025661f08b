//! The direct dispatcher: a scenario's whole world in one value, answered
//! synchronously, for the adversary evaluator.
//!
//! It does what the nodes of an embedded run do, without actors: one
//! [`Kernel`] per declared kernel over one in-memory trust store, the one
//! the embedded topology and trust-control's memory mode use, bound inline
//! ([`TrustBinding::inline`]: its answers are ready at once, so nothing
//! waits on a runtime), one [`ToolServer`] per
//! declared server, and each agent's held capabilities. Each step is
//! handled by the node's own handlers ([`crate::handling`]) over a
//! synchronous port for the acting agent's node: an agent signs with the
//! same function the agent actor uses, and a kernel decides exactly as the
//! kernel actor does. Faults are simulated as in the embedded topology
//! (one [`FaultSwitch`]: a kernel's store calls and the node's label moves
//! and revocations fail while its node cannot reach trust-control, a kernel
//! or delegatee on a node it cannot reach fails as a link does, a crashed
//! node answers nothing, a restarted node starts afresh), so a fault
//! scenario means here what it means in a run. Every future it returns is
//! ready at once, so [`super::complete_now`] drives the step executor over
//! it without a runtime, which keeps an evolution's kernel evaluations
//! cheap.
//!
//! Beyond the [`Dispatcher`] operations it lends its kernels, servers and
//! trust state to the evaluator, which makes adversary calls that no
//! scheduled step makes (replays, widened links, edited fixtures).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use chio_kernel::kernel::{AdmissionTicket, Decision, Kernel};
use chio_kernel::label::LabelCarry;
use chio_kernel::request::ToolCallRequest;
use chio_kernel::token::CapabilityToken;
use ed25519_dalek::SigningKey;

use chio_arena::scenario::FaultAction;
use chio_trust::store::memory::InMemoryTrustStore;
use chio_trust::TrustStore;

use super::{Dispatcher, FaultEvent};
use crate::actors::agent::{delegate_held, prepare_request, CallIntent, ChildIntent};
use crate::actors::CallOutcome;
use crate::error::NodeError;
use crate::handling::{self, NodePort, Roster};
use crate::link::LinkFuture;
use crate::node::{
    AuthorityControl, CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, MessageCommand,
    MessageOutcome,
};
use crate::outage::Refusal;
use crate::simulated_faults::{FaultSwitch, SimulatedStore};
use crate::tools::ToolServer;
use crate::trust_stores::{TrustAuthority, TrustBinding};
use crate::world::{KernelPlan, ServerPlan, World};

/// The mutable half of the world: kernels, servers and what agents hold.
#[derive(Debug)]
pub struct DirectState {
    /// Kernels by id.
    pub kernels: BTreeMap<String, Kernel>,
    /// Simulated tool servers by id.
    pub servers: BTreeMap<String, ToolServer>,
    /// Capabilities each agent holds, by agent then capability id.
    pub held: BTreeMap<String, BTreeMap<String, CapabilityToken>>,
}

impl DirectState {
    /// Decides `request` on `kernel`, dispatching an admitted call to a
    /// server that kernel serves, as the kernel actor does.
    pub fn decide(
        &mut self,
        world: &World,
        kernel: &str,
        request: &ToolCallRequest,
        now_ms: u64,
    ) -> Result<Decision, NodeError> {
        let k = self
            .kernels
            .get_mut(kernel)
            .ok_or_else(|| NodeError::Unroutable(format!("kernel {kernel}")))?;
        Ok(k.evaluate(
            request,
            now_ms,
            &mut served_by(world, &mut self.servers, kernel),
        ))
    }

    /// Decides calls that arrive together on `kernel`: every one admitted
    /// before any is dispatched (`Kernel::evaluate_together`).
    pub fn decide_together(
        &mut self,
        world: &World,
        kernel: &str,
        requests: &[(ToolCallRequest, u64)],
    ) -> Result<Vec<Decision>, NodeError> {
        let k = self
            .kernels
            .get_mut(kernel)
            .ok_or_else(|| NodeError::Unroutable(format!("kernel {kernel}")))?;
        Ok(k.evaluate_together(requests, &mut served_by(world, &mut self.servers, kernel)))
    }
}

/// The dispatch of `kernel`'s admitted calls to the servers it serves, its
/// failure named as the kernel actor names it.
fn served_by<'a>(
    world: &'a World,
    servers: &'a mut BTreeMap<String, ToolServer>,
    kernel: &'a str,
) -> impl FnMut(&AdmissionTicket) -> Result<chio_kernel::kernel::ToolOutput, String> + 'a {
    move |admitted| {
        serve(world, servers, kernel, admitted)
            .map_err(|reason| format!("dispatch failed: {reason}"))
    }
}

/// Serves an admitted call on a simulated server `kernel` serves.
pub fn serve(
    world: &World,
    servers: &mut BTreeMap<String, ToolServer>,
    kernel: &str,
    admitted: &AdmissionTicket,
) -> Result<chio_kernel::kernel::ToolOutput, String> {
    let request = admitted.request();
    let served = world.server_kernel(&request.server) == Some(kernel);
    match servers.get_mut(&request.server) {
        Some(server) if served => Ok(server.answer(admitted)),
        _ => Err(format!(
            "server {} is not served by kernel {kernel}",
            request.server
        )),
    }
}

/// Tool server `id` as `plan` seeds it, nothing called yet.
fn fresh_server(id: &str, plan: &ServerPlan) -> ToolServer {
    ToolServer::new(id, plan.config.clone()).with_integrity(plan.integrity.clone())
}

/// A world answered synchronously (see the module doc).
#[derive(Debug)]
pub struct DirectDispatcher<'w> {
    world: &'w World,
    roster: Roster,
    trust: Arc<InMemoryTrustStore>,
    switch: FaultSwitch,
    state: Mutex<DirectState>,
}

/// The run namespace of a direct world's trust state; one store serves one
/// world, so any fixed name will do.
const DIRECT_RUN_ID: &str = "direct";

/// The trust store as node `node` reaches it: the shared in-memory store,
/// unless `switch` cuts the node from it, bound inline.
fn node_binding(
    trust: &Arc<InMemoryTrustStore>,
    switch: &FaultSwitch,
    node: &str,
) -> TrustBinding<SimulatedStore<InMemoryTrustStore>> {
    let store = SimulatedStore {
        node: node.to_string(),
        inner: trust.clone(),
        switch: switch.clone(),
    };
    TrustBinding::inline(Arc::new(store), DIRECT_RUN_ID)
}

/// A fresh kernel for plan `id`, its stores the shared state as its node
/// reaches it through `switch`. Its trusted issuers are its plan's: no
/// issuer-key cache refreshes them.
fn start_kernel(
    trust: &Arc<InMemoryTrustStore>,
    switch: &FaultSwitch,
    id: &str,
    plan: &KernelPlan,
) -> Result<Kernel, NodeError> {
    let (stores, _) = node_binding(trust, switch, &plan.node).kernel_stores();
    Kernel::new(plan.config.clone(), stores).map_err(|source| NodeError::KernelStart {
        kernel: id.to_string(),
        source,
    })
}

impl<'w> DirectDispatcher<'w> {
    /// A fresh instance of `world`: its grants held, nothing evaluated.
    pub fn new(world: &'w World) -> Result<Self, NodeError> {
        let trust = Arc::new(InMemoryTrustStore::new());
        trust.ready()?;
        let switch = FaultSwitch::default();
        let mut kernels = BTreeMap::new();
        for (id, plan) in &world.kernels {
            kernels.insert(id.clone(), start_kernel(&trust, &switch, id, plan)?);
        }
        let servers = world
            .servers
            .iter()
            .map(|(id, plan)| (id.clone(), fresh_server(id, plan)))
            .collect();
        let mut held: BTreeMap<String, BTreeMap<String, CapabilityToken>> = BTreeMap::new();
        for (id, (holder, token)) in &world.grants {
            held.entry(holder.clone())
                .or_default()
                .insert(id.clone(), token.clone());
        }
        Ok(Self {
            world,
            roster: Roster::of(world),
            trust,
            switch,
            state: Mutex::new(DirectState {
                kernels,
                servers,
                held,
            }),
        })
    }

    /// The world answered.
    pub fn world(&self) -> &'w World {
        self.world
    }

    /// When `id` was first revoked in the shared authority state every
    /// kernel reads, if it was.
    pub fn revoked_at(&self, id: &str) -> Result<Option<u64>, NodeError> {
        let scoped = TrustBinding::inline(self.trust.clone(), DIRECT_RUN_ID).scoped(id);
        super::complete_now(async {
            self.trust
                .revoked_at(&scoped)
                .await
                .map_err(|source| NodeError::AuthorityOperation {
                    operation: "reading a revocation",
                    source,
                })
        })
    }

    /// The kernels, servers and holdings, for calls no scheduled step makes.
    pub fn state(&self) -> Result<MutexGuard<'_, DirectState>, NodeError> {
        self.state
            .lock()
            .map_err(|_| NodeError::Internal("a direct world was poisoned by a panic"))
    }

    /// Restarts `node` as a node process restarts: fresh kernels (an empty
    /// session journal) over the same shared state, the tool servers its
    /// kernels serve seeded afresh from the world's fixtures (what a call
    /// wrote before the crash is gone, as it is from a restarted process
    /// and from the embedded topology's restarted node), and its agents
    /// holding their grants and `restore`.
    fn restart(&self, node: &str, restore: &[(String, CapabilityToken)]) -> Result<(), NodeError> {
        let mut state = self.state()?;
        for (id, plan) in self.world.kernels.iter().filter(|(_, k)| k.node == node) {
            let kernel = start_kernel(&self.trust, &self.switch, id, plan)?;
            state.kernels.insert(id.clone(), kernel);
        }
        for (id, plan) in &self.world.servers {
            if plan.node == node {
                state.servers.insert(id.clone(), fresh_server(id, plan));
            }
        }
        for agent in self.world.agents.values().filter(|a| a.node == node) {
            let grants = self
                .world
                .grants
                .iter()
                .filter(|(_, (holder, _))| *holder == agent.id)
                .map(|(id, (_, token))| (id.clone(), token.clone()))
                .collect();
            state.held.insert(agent.id.clone(), grants);
        }
        for (agent, token) in restore {
            state
                .held
                .entry(agent.clone())
                .or_default()
                .insert(token.id.clone(), token.clone());
        }
        Ok(())
    }

    /// Node `node` of this world, as the handlers reach it; a crashed node
    /// answers nothing, as in the embedded topology.
    fn port(&self, node: &str) -> Result<DirectNode<'_, 'w>, NodeError> {
        self.healthy()?;
        self.switch.check_up(node)?;
        Ok(DirectNode {
            direct: self,
            node: node.to_string(),
        })
    }

    /// Whether the in-process store still keeps receipts (see
    /// `EmbeddedTopology::healthy`).
    fn healthy(&self) -> Result<(), NodeError> {
        self.trust
            .spill_failure()
            .map_or(Ok(()), |failure| Err(failure.into()))
    }

    /// The key `agent` signs with.
    fn signing_key(&self, agent: &str) -> Result<&'w SigningKey, NodeError> {
        self.world
            .agents
            .get(agent)
            .map(|plan| &plan.key)
            .ok_or_else(|| NodeError::Unroutable(format!("agent {agent} is not on this node")))
    }
}

/// The direct port of one node: its agents' holdings and keys, the
/// kernels and agents of every node (across the fault switch, as the
/// embedded topology's links reach them), and the shared trust state as
/// the node reaches it.
struct DirectNode<'d, 'w> {
    direct: &'d DirectDispatcher<'w>,
    node: String,
}

impl DirectNode<'_, '_> {
    /// `Err` when node `to` cannot be reached from this node: a node's own
    /// kernels and agents are reached without a link.
    fn reach(&self, to: Option<&str>) -> Result<(), NodeError> {
        match to {
            Some(to) if to != self.node => match self.direct.switch.path_outage(&self.node, to) {
                Some(outage) => Err(NodeError::LinkDown {
                    node: to.to_string(),
                    outage,
                }),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// The authority moves of this node, over the shared state as the
    /// node reaches it.
    fn authority_state(&self) -> TrustAuthority<SimulatedStore<InMemoryTrustStore>> {
        TrustAuthority::new(node_binding(
            &self.direct.trust,
            &self.direct.switch,
            &self.node,
        ))
    }

    /// `sign` over `agent`'s key and what it holds now.
    fn signed<T>(
        &self,
        agent: &str,
        sign: impl FnOnce(&SigningKey, &BTreeMap<String, CapabilityToken>) -> Result<T, NodeError>,
    ) -> Result<T, NodeError> {
        let key = self.direct.signing_key(agent)?;
        let state = self.direct.state()?;
        sign(key, state.held.get(agent).unwrap_or(&BTreeMap::new()))
    }

    /// `kernel`'s decision of `request`, reached from this node.
    fn decided(
        &self,
        kernel: &str,
        request: &ToolCallRequest,
        now_ms: u64,
    ) -> Result<CallOutcome, NodeError> {
        let world = self.direct.world;
        self.reach(world.kernel_node(kernel))?;
        let decision = self
            .direct
            .state()?
            .decide(world, kernel, request, now_ms)?;
        Ok(CallOutcome::from_decision(kernel, decision))
    }

    /// `agent` holds `token` from now on, reached from this node.
    fn held_by(&self, agent: &str, token: CapabilityToken) -> Result<(), NodeError> {
        self.reach(self.direct.world.agent_node(agent))?;
        self.direct
            .state()?
            .held
            .entry(agent.to_string())
            .or_default()
            .insert(token.id.clone(), token);
        Ok(())
    }
}

impl NodePort for DirectNode<'_, '_> {
    fn node_id(&self) -> &str {
        &self.node
    }

    fn roster(&self) -> &Roster {
        &self.direct.roster
    }

    fn sign_call(&self, agent: &str, intent: CallIntent) -> LinkFuture<'_, ToolCallRequest> {
        let signed = self.signed(agent, |key, held| prepare_request(agent, key, held, intent));
        Box::pin(std::future::ready(signed))
    }

    fn sign_child(&self, agent: &str, intent: ChildIntent) -> LinkFuture<'_, CapabilityToken> {
        let signed = self.signed(agent, |key, held| delegate_held(agent, key, held, intent));
        Box::pin(std::future::ready(signed))
    }

    fn evaluate(
        &self,
        kernel: &str,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> LinkFuture<'_, CallOutcome> {
        Box::pin(std::future::ready(self.decided(kernel, &request, now_ms)))
    }

    fn hand_over(&self, agent: &str, token: CapabilityToken) -> LinkFuture<'_, ()> {
        Box::pin(std::future::ready(self.held_by(agent, token)))
    }

    fn authority(&self) -> &dyn AuthorityControl {
        self
    }
}

/// The shared trust state as the node reaches it, through the authority
/// moves every node makes ([`TrustAuthority`]): nothing is read or written
/// while it cannot reach trust-control.
impl AuthorityControl for DirectNode<'_, '_> {
    fn revoke(&self, id: &str, at_ms: u64) -> LinkFuture<'_, ()> {
        let authority = self.authority_state();
        let id = id.to_string();
        Box::pin(async move { authority.revoke(&id, at_ms).await })
    }

    fn carry_labels(&self, carry: LabelCarry) -> LinkFuture<'_, BTreeSet<String>> {
        let authority = self.authority_state();
        Box::pin(async move { authority.carry_labels(carry).await })
    }
}

/// Each step is handled by [`crate::handling`] over the acting agent's
/// node's [`DirectNode`].
impl Dispatcher for DirectDispatcher<'_> {
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallAnswer> {
        let port = self.port(node);
        Box::pin(async move {
            let answer = handling::call(&port?, command).await?;
            self.healthy()?;
            Ok(answer)
        })
    }

    fn delegate(
        &self,
        node: &str,
        command: DelegateCommand,
    ) -> LinkFuture<'_, Result<DelegateOutcome, Refusal>> {
        let port = self.port(node);
        Box::pin(async move { handling::delegate(&port?, command).await })
    }

    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, Option<Refusal>> {
        let port = self.port(node);
        let target = target.to_string();
        Box::pin(async move { handling::revoke(&port?, &target, at_ms).await })
    }

    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome> {
        let port = self.port(node);
        Box::pin(async move { handling::message(&port?, command).await })
    }

    /// Simulates the fault as the embedded topology does: the switch cuts
    /// what it reaches, and a restarted node starts afresh.
    fn fault(&self, event: FaultEvent) -> LinkFuture<'_, ()> {
        self.switch.apply(&event);
        let answer = match &event {
            FaultEvent::Begin(prepared) => match &prepared.fault {
                FaultAction::Restart { node, .. } => self.restart(node, &prepared.restore),
                _ => Ok(()),
            },
            FaultEvent::EndStall => Ok(()),
        };
        Box::pin(std::future::ready(answer))
    }
}
