//! `KernelLink`: how one node reaches a kernel or an agent on another node.
//!
//! A cross-kernel call is evaluated by the kernel that serves the target
//! server, wherever it runs, and a delegated capability is handed over to
//! the delegatee's node. This module owns the trait and its in-memory
//! implementation (channels to actors in the same process, used by the
//! embedded topology); the gRPC implementation lives with the node's
//! servers and clients.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use chio_kernel::request::ToolCallRequest;
use chio_kernel::token::CapabilityToken;

use crate::actors::{AgentHandle, CallOutcome, KernelHandle};
use crate::error::NodeError;

/// A boxed future, so links can be trait objects.
pub type LinkFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, NodeError>> + Send + 'a>>;

/// Node-to-node operations.
pub trait KernelLink: Send + Sync {
    /// Evaluates `request` on the remote kernel `kernel_id` at `now_ms`.
    fn evaluate(
        &self,
        kernel_id: &str,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> LinkFuture<'_, CallOutcome>;

    /// Hands a delegated capability to the remote agent `agent_id`.
    fn hand_over(&self, agent_id: &str, token: CapabilityToken) -> LinkFuture<'_, ()>;
}

/// A link to actors of other nodes running in the same process.
#[derive(Debug, Clone, Default)]
pub struct InMemoryLink {
    kernels: BTreeMap<String, KernelHandle>,
    agents: BTreeMap<String, AgentHandle>,
}

impl InMemoryLink {
    /// A link reaching the given kernels and agents.
    pub fn new(
        kernels: BTreeMap<String, KernelHandle>,
        agents: BTreeMap<String, AgentHandle>,
    ) -> Self {
        Self { kernels, agents }
    }
}

impl KernelLink for InMemoryLink {
    fn evaluate(
        &self,
        kernel_id: &str,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> LinkFuture<'_, CallOutcome> {
        let kernel = self.kernels.get(kernel_id).cloned();
        let kernel_id = kernel_id.to_string();
        Box::pin(async move {
            match kernel {
                Some(k) => k.evaluate(request, now_ms).await,
                None => Err(NodeError::Unroutable(format!("kernel {kernel_id}"))),
            }
        })
    }

    fn hand_over(&self, agent_id: &str, token: CapabilityToken) -> LinkFuture<'_, ()> {
        let agent = self.agents.get(agent_id).cloned();
        let agent_id = agent_id.to_string();
        Box::pin(async move {
            match agent {
                Some(a) => a.hold(token).await,
                None => Err(NodeError::Unroutable(format!("agent {agent_id}"))),
            }
        })
    }
}
