//! The agent actor: an agent's arena key and the capabilities it holds.
//!
//! An agent signs every request it makes with its own key (proof of
//! possession) and delegates only capabilities it holds. A call may present
//! a capability the agent does not hold when the scenario says so (a
//! captured token); the agent still signs with its own key, which is
//! exactly what the kernel must refuse. The actor never decides a verdict.

use std::collections::BTreeMap;

use chio_kernel::request::{RequestProof, ToolCallRequest};
use chio_kernel::token::{Attenuation, CapabilityToken};
use ed25519_dalek::SigningKey;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::error::NodeError;

/// What an agent is asked to call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallIntent {
    /// Unique request id (a replay reuses one on purpose).
    pub request_id: String,
    /// The capability presented, by id.
    pub capability_id: String,
    /// A token the agent does not hold but presents anyway (captured).
    pub captured: Option<CapabilityToken>,
    /// Server called.
    pub server: String,
    /// Tool called.
    pub tool: String,
    /// Arguments.
    pub arguments: Value,
    /// The arguments built from earlier values, with their provenance.
    pub sources: Vec<chio_kernel::provenance::ArgumentSource>,
    /// When the request is issued (virtual time, Unix milliseconds).
    pub issued_at_ms: u64,
    /// JSON pointers of the sealed arguments (`chio_kernel::seal`).
    pub sealed: Vec<String>,
}

/// What an agent is asked to delegate: a child of a capability it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildIntent {
    /// The parent capability, by id.
    pub capability_id: String,
    /// The delegatee's public key (hex), the child's subject.
    pub delegatee: String,
    /// What the child narrows.
    pub attenuation: Attenuation,
    /// The child's id.
    pub child_id: String,
    /// Virtual time of the delegation, Unix milliseconds.
    pub now_ms: u64,
}

enum AgentCommand {
    Hold(Box<CapabilityToken>),
    Prepare {
        intent: Box<CallIntent>,
        reply: oneshot::Sender<Result<ToolCallRequest, NodeError>>,
    },
    Delegate {
        intent: Box<ChildIntent>,
        reply: oneshot::Sender<Result<CapabilityToken, NodeError>>,
    },
}

/// A handle to a running agent actor.
#[derive(Debug, Clone)]
pub struct AgentHandle {
    id: String,
    tx: mpsc::Sender<AgentCommand>,
}

struct AgentActor {
    id: String,
    key: SigningKey,
    held: BTreeMap<String, CapabilityToken>,
    rx: mpsc::Receiver<AgentCommand>,
}

impl AgentActor {
    async fn run(mut self) {
        while let Some(command) = self.rx.recv().await {
            match command {
                AgentCommand::Hold(token) => {
                    self.held.insert(token.id.clone(), *token);
                }
                AgentCommand::Prepare { intent, reply } => {
                    let _ = reply.send(self.prepare(*intent));
                }
                AgentCommand::Delegate { intent, reply } => {
                    let _ = reply.send(delegate_held(&self.id, &self.key, &self.held, *intent));
                }
            }
        }
    }

    fn prepare(&self, intent: CallIntent) -> Result<ToolCallRequest, NodeError> {
        prepare_request(&self.id, &self.key, &self.held, intent)
    }
}

/// An agent's request for `intent`, signed with its key: the capability it
/// holds by that id, else the captured token the intent carries.
pub(crate) fn prepare_request(
    agent: &str,
    key: &SigningKey,
    held: &BTreeMap<String, CapabilityToken>,
    intent: CallIntent,
) -> Result<ToolCallRequest, NodeError> {
    let capability = match (held.get(&intent.capability_id), intent.captured) {
        (Some(token), _) => token.clone(),
        (None, Some(captured)) => captured,
        (None, None) => {
            return Err(NodeError::NotHeld {
                agent: agent.to_string(),
                capability: intent.capability_id,
            })
        }
    };
    ToolCallRequest {
        request_id: intent.request_id,
        capability,
        server: intent.server,
        tool: intent.tool,
        arguments: intent.arguments,
        agent_id: agent.to_string(),
        session_id: agent.to_string(),
        issued_at_ms: intent.issued_at_ms,
        proof: RequestProof::default(),
        sealed: intent.sealed,
        argument_sources: intent.sources,
    }
    .sign(key)
    .map_err(NodeError::Kernel)
}

/// The child `intent` asks for of a capability the agent holds, signed
/// with its key.
pub(crate) fn delegate_held(
    agent: &str,
    key: &SigningKey,
    held: &BTreeMap<String, CapabilityToken>,
    intent: ChildIntent,
) -> Result<CapabilityToken, NodeError> {
    match held.get(&intent.capability_id) {
        None => Err(NodeError::NotHeld {
            agent: agent.to_string(),
            capability: intent.capability_id,
        }),
        Some(parent) => parent
            .delegate(
                key,
                &intent.delegatee,
                &intent.attenuation,
                &intent.child_id,
                intent.now_ms,
            )
            .map_err(NodeError::Kernel),
    }
}

impl AgentHandle {
    /// Spawns an agent holding `grants`.
    pub fn spawn(id: &str, key: SigningKey, grants: Vec<CapabilityToken>) -> Self {
        let (tx, rx) = mpsc::channel(super::MAILBOX);
        let actor = AgentActor {
            id: id.to_string(),
            key,
            held: grants.into_iter().map(|t| (t.id.clone(), t)).collect(),
            rx,
        };
        tokio::spawn(actor.run());
        Self {
            id: id.to_string(),
            tx,
        }
    }

    /// The agent id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn gone(&self) -> NodeError {
        NodeError::ActorGone(format!("agent {}", self.id))
    }

    /// Gives the agent a capability (a delegation handed over to it).
    pub async fn hold(&self, token: CapabilityToken) -> Result<(), NodeError> {
        self.tx
            .send(AgentCommand::Hold(Box::new(token)))
            .await
            .map_err(|_| self.gone())
    }

    /// Has the agent build and sign a request.
    pub async fn prepare(&self, intent: CallIntent) -> Result<ToolCallRequest, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(AgentCommand::Prepare {
                intent: Box::new(intent),
                reply,
            })
            .await
            .map_err(|_| self.gone())?;
        answer.await.map_err(|_| self.gone())?
    }

    /// Has the agent delegate a capability it holds.
    pub async fn delegate(&self, intent: ChildIntent) -> Result<CapabilityToken, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(AgentCommand::Delegate {
                intent: Box::new(intent),
                reply,
            })
            .await
            .map_err(|_| self.gone())?;
        answer.await.map_err(|_| self.gone())?
    }
}
