//! The direct dispatcher: a scenario's whole world in one value, answered
//! synchronously, for the adversary evaluator.
//!
//! It does what the nodes of an embedded run do, without actors: one
//! [`Kernel`] per declared kernel over one [`SharedTrust`] (the rules are
//! `chio_kernel::ledger`'s, as in every store), one [`ToolServer`] per
//! declared server, and each agent's held capabilities. An agent signs with
//! the same function the agent actor uses, a delegation is signed, recorded
//! and handed over as a node does it, and a kernel decides exactly as the
//! kernel actor does. Faults are simulated as in the embedded topology
//! (one [`FaultSwitch`]: a kernel's store calls fail while its node cannot
//! reach trust-control, an unreachable kernel or delegatee is refused with
//! the node's reason, a restarted node starts afresh), so a fault scenario
//! means here what it means in a run. Every future it returns is ready at
//! once, so [`super::complete_now`] drives the step executor over it
//! without a runtime, which keeps an evolution's kernel evaluations cheap.
//!
//! Beyond the [`Dispatcher`] operations it lends its kernels, servers and
//! trust state to the evaluator, which makes adversary calls that no
//! scheduled step makes (replays, widened links, edited fixtures).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use chio_kernel::kernel::{AdmissionTicket, Decision, Kernel};
use chio_kernel::keys::public_key_hex;
use chio_kernel::label::LabelCarry;
use chio_kernel::request::ToolCallRequest;
use chio_kernel::token::CapabilityToken;

use chio_arena::scenario::FaultAction;

use super::{Dispatcher, FaultEvent};
use crate::actors::agent::{delegate_held, prepare_request};
use crate::actors::kernel::tool_output;
use crate::actors::CallOutcome;
use crate::error::NodeError;
use crate::link::LinkFuture;
use crate::node::{
    delegation_carry, CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, MessageCommand,
    MessageOutcome,
};
use crate::outage::{self, Refusal};
use crate::shared::SharedTrust;
use crate::simulated_faults::FaultSwitch;
use crate::tools::ToolServer;
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
        Some(server) if served => Ok(tool_output(server.call(
            crate::tools::Caller {
                request_id: &request.request_id,
                agent: &request.agent_id,
            },
            &request.tool,
            &request.arguments,
            admitted.carried_labels(),
        ))),
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
    trust: SharedTrust,
    switch: FaultSwitch,
    state: Mutex<DirectState>,
}

/// A fresh kernel for plan `id`, its stores the shared state as its node
/// reaches it through `switch`.
fn start_kernel(
    trust: &SharedTrust,
    switch: &FaultSwitch,
    id: &str,
    plan: &KernelPlan,
) -> Result<Kernel, NodeError> {
    let stores = trust.gated(&plan.node, switch).kernel_stores();
    Kernel::new(plan.config.clone(), stores).map_err(|source| NodeError::KernelStart {
        kernel: id.to_string(),
        source,
    })
}

impl<'w> DirectDispatcher<'w> {
    /// A fresh instance of `world`: its grants held, nothing evaluated.
    pub fn new(world: &'w World) -> Result<Self, NodeError> {
        let trust = SharedTrust::new();
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

    /// The shared authority state every kernel reads.
    pub fn trust(&self) -> &SharedTrust {
        &self.trust
    }

    /// The kernels, servers and holdings, for calls no scheduled step makes.
    pub fn state(&self) -> Result<MutexGuard<'_, DirectState>, NodeError> {
        self.state
            .lock()
            .map_err(|_| NodeError::Internal("a direct world was poisoned by a panic"))
    }

    fn call_now(&self, command: CallCommand) -> Result<CallAnswer, NodeError> {
        let plan = self
            .world
            .agents
            .get(&command.agent)
            .ok_or_else(|| NodeError::Unroutable(format!("agent {}", command.agent)))?;
        let mut state = self.state()?;
        let empty = BTreeMap::new();
        let held = state.held.get(&command.agent).unwrap_or(&empty);
        let now_ms = command.now_ms;
        let agent = command.agent.clone();
        let request = match prepare_request(&agent, &plan.key, held, command.into()) {
            Ok(request) => request,
            Err(e) => return outage::call_refusal(e).map(CallAnswer::Refused),
        };
        let kernel = self
            .world
            .server_kernel(&request.server)
            .ok_or_else(|| NodeError::Unroutable(format!("server {}", request.server)))?
            .to_string();
        let from = self.world.agent_node(&agent).unwrap_or_default();
        let to = self.world.kernel_node(&kernel).unwrap_or_default();
        if let Some(outage) = self.switch.path_outage(from, to) {
            let reason = outage::kernel_unreachable(&kernel, to, from, outage);
            return Ok(CallAnswer::Refused(reason));
        }
        let decision = state.decide(self.world, &kernel, &request, now_ms)?;
        Ok(CallAnswer::Decided(Box::new(CallOutcome::from_decision(
            &kernel, decision,
        ))))
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

    fn delegate_now(
        &self,
        command: DelegateCommand,
    ) -> Result<Result<DelegateOutcome, Refusal>, NodeError> {
        let plan = self
            .world
            .agents
            .get(&command.agent)
            .ok_or_else(|| NodeError::Unroutable(format!("agent {}", command.agent)))?;
        let delegatee = self
            .world
            .agents
            .get(&command.to)
            .map(|to| public_key_hex(&to.key))
            .ok_or_else(|| NodeError::Unroutable(format!("agent {}", command.to)))?;
        let mut state = self.state()?;
        let empty = BTreeMap::new();
        let signed = delegate_held(
            &command.agent,
            &plan.key,
            state.held.get(&command.agent).unwrap_or(&empty),
            &command.capability_id,
            &delegatee,
            command.attenuation,
            &command.delegation_id,
            command.now_ms,
        );
        let child = match signed {
            Ok(child) => child,
            Err(e) => return outage::delegation_refusal(e).map(Err),
        };
        let from = self.world.agent_node(&command.agent).unwrap_or_default();
        if let Some(outage) = self.switch.control_outage(from) {
            return Ok(Err(outage::delegation_unrecorded(outage)));
        }
        let carry = delegation_carry(&command.agent, &child)?;
        let carried = self.carry(&carry)?;
        let to = self.world.agent_node(&command.to).unwrap_or_default();
        if let Some(outage) = self.switch.path_outage(from, to) {
            let reason = outage::delegation_undelivered(&command.to, to, from, outage);
            return Ok(Err(reason));
        }
        state
            .held
            .entry(command.to.clone())
            .or_default()
            .insert(child.id.clone(), child.clone());
        Ok(Ok(DelegateOutcome {
            token: child,
            labels: carry.reported(&carried),
        }))
    }

    fn message_now(&self, command: MessageCommand) -> Result<MessageOutcome, NodeError> {
        for agent in [&command.agent, &command.to] {
            if !self.world.agents.contains_key(agent) {
                return Err(NodeError::Unroutable(format!("agent {agent}")));
            }
        }
        let carry = match crate::node::message_carry(
            &command,
            self.world.role(&command.agent),
            self.world.role(&command.to),
        ) {
            Ok(carry) => carry,
            Err(refusal) => {
                return Ok(MessageOutcome {
                    labels: Vec::new(),
                    refusal: Some(refusal),
                })
            }
        };
        let carried = self.carry(&carry)?;
        Ok(MessageOutcome {
            labels: carry.reported(&carried),
            refusal: None,
        })
    }

    fn carry(&self, carry: &LabelCarry) -> Result<BTreeSet<String>, NodeError> {
        carry
            .apply(&mut self.trust.clone())
            .map_err(NodeError::AuthorityStore)
    }
}

impl Dispatcher for DirectDispatcher<'_> {
    fn call(&self, _node: &str, command: CallCommand) -> LinkFuture<'_, CallAnswer> {
        let answer = self.call_now(command);
        Box::pin(std::future::ready(answer))
    }

    fn delegate(
        &self,
        _node: &str,
        command: DelegateCommand,
    ) -> LinkFuture<'_, Result<DelegateOutcome, Refusal>> {
        let answer = self.delegate_now(command);
        Box::pin(std::future::ready(answer))
    }

    /// Revokes as node `node` would: refused while it cannot reach
    /// trust-control.
    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, Option<Refusal>> {
        let answer = match self.switch.control_outage(node) {
            Some(outage) => Ok(Some(outage::revocation_unrecorded(outage))),
            None => self
                .trust
                .revoke(target, at_ms)
                .map(|()| None)
                .map_err(NodeError::AuthorityStore),
        };
        Box::pin(std::future::ready(answer))
    }

    fn message(&self, _node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome> {
        let answer = self.message_now(command);
        Box::pin(std::future::ready(answer))
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
