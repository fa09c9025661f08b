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
use std::sync::{RwLock, RwLockReadGuard};

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

/// The actors a link reaches, by id.
#[derive(Debug, Default)]
struct Reachable {
    kernels: BTreeMap<String, KernelHandle>,
    agents: BTreeMap<String, AgentHandle>,
}

/// A link to actors of other nodes running in the same process. A node
/// restarted in process replaces its actors here ([`InMemoryLink::replace`]).
#[derive(Debug, Default)]
pub struct InMemoryLink {
    reachable: RwLock<Reachable>,
}

impl InMemoryLink {
    /// A link reaching the given kernels and agents.
    pub fn new(
        kernels: BTreeMap<String, KernelHandle>,
        agents: BTreeMap<String, AgentHandle>,
    ) -> Self {
        Self {
            reachable: RwLock::new(Reachable { kernels, agents }),
        }
    }

    /// Reaches `kernels` and `agents` from now on instead of the actors of
    /// the same ids (a restarted node's).
    pub fn replace(
        &self,
        kernels: &BTreeMap<String, KernelHandle>,
        agents: &BTreeMap<String, AgentHandle>,
    ) {
        // A poisoned lock only means a panic elsewhere; the maps are whole.
        let mut reachable = self.reachable.write().unwrap_or_else(|e| e.into_inner());
        reachable.kernels.extend(kernels.clone());
        reachable.agents.extend(agents.clone());
    }

    fn read(&self) -> RwLockReadGuard<'_, Reachable> {
        self.reachable.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl KernelLink for InMemoryLink {
    fn evaluate(
        &self,
        kernel_id: &str,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> LinkFuture<'_, CallOutcome> {
        let kernel = self.read().kernels.get(kernel_id).cloned();
        let kernel_id = kernel_id.to_string();
        Box::pin(async move {
            match kernel {
                Some(k) => k.evaluate(request, now_ms).await,
                None => Err(NodeError::Unroutable(format!("kernel {kernel_id}"))),
            }
        })
    }

    fn hand_over(&self, agent_id: &str, token: CapabilityToken) -> LinkFuture<'_, ()> {
        let agent = self.read().agents.get(agent_id).cloned();
        let agent_id = agent_id.to_string();
        Box::pin(async move {
            match agent {
                Some(a) => a.hold(token).await,
                None => Err(NodeError::Unroutable(format!("agent {agent_id}"))),
            }
        })
    }
}
