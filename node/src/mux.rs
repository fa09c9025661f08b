//! `KernelMultiplexer`: routes a call to the kernel that serves its server.
//!
//! A node knows, from the resolved world, which kernel serves each tool
//! server and which agents and kernels it hosts itself. A call to a local
//! kernel goes to its actor by channel; any other goes over the node's
//! `KernelLink`. The same holds for handing a capability to an agent. The
//! multiplexer only routes; it never evaluates.

use std::collections::BTreeMap;
use std::sync::Arc;

use chio_kernel::request::ToolCallRequest;
use chio_kernel::token::CapabilityToken;

use crate::actors::{AgentHandle, CallOutcome, KernelHandle};
use crate::error::NodeError;
use crate::link::KernelLink;
use crate::tools::FileChange;

/// The routing table of one node.
#[derive(Clone)]
pub struct KernelMultiplexer {
    routes: BTreeMap<String, String>,
    kernels: BTreeMap<String, KernelHandle>,
    agents: BTreeMap<String, AgentHandle>,
    link: Arc<dyn KernelLink>,
}

impl std::fmt::Debug for KernelMultiplexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelMultiplexer")
            .field("routes", &self.routes)
            .field("local_kernels", &self.kernels.keys().collect::<Vec<_>>())
            .field("local_agents", &self.agents.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl KernelMultiplexer {
    /// A multiplexer with `routes` (server id to kernel id), the node's own
    /// kernels and agents, and a link to everything else.
    pub fn new(
        routes: BTreeMap<String, String>,
        kernels: BTreeMap<String, KernelHandle>,
        agents: BTreeMap<String, AgentHandle>,
        link: Arc<dyn KernelLink>,
    ) -> Self {
        Self {
            routes,
            kernels,
            agents,
            link,
        }
    }

    /// The kernel serving `server`.
    pub fn kernel_for(&self, server: &str) -> Result<&str, NodeError> {
        self.routes
            .get(server)
            .map(String::as_str)
            .ok_or_else(|| NodeError::Unroutable(format!("server {server}")))
    }

    /// Evaluates a call on the kernel that serves its server.
    pub async fn evaluate(
        &self,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> Result<CallOutcome, NodeError> {
        let kernel_id = self.kernel_for(&request.server)?.to_string();
        self.evaluate_on(&kernel_id, request, now_ms).await
    }

    /// Evaluates a call on a named kernel, local or remote.
    pub async fn evaluate_on(
        &self,
        kernel_id: &str,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> Result<CallOutcome, NodeError> {
        match self.kernels.get(kernel_id) {
            Some(local) => local.evaluate(request, now_ms).await,
            None => self.link.evaluate(kernel_id, request, now_ms).await,
        }
    }

    /// Evaluates calls that arrive together on a kernel of this node (see
    /// `KernelHandle::evaluate_together`); they never travel further.
    pub async fn evaluate_together_on(
        &self,
        kernel_id: &str,
        requests: Vec<(ToolCallRequest, u64)>,
    ) -> Result<Vec<CallOutcome>, NodeError> {
        self.local_kernel(kernel_id)?
            .evaluate_together(requests)
            .await
    }

    /// Changes a file of a tool server a kernel of this node serves, outside
    /// any call; answers the content it had.
    pub async fn change_file(
        &self,
        server: &str,
        path: &str,
        change: FileChange,
    ) -> Result<Option<String>, NodeError> {
        let kernel = self.local_kernel(self.kernel_for(server)?)?;
        let handle = kernel.server(server).ok_or_else(|| {
            NodeError::Unroutable(format!("server {server} is not served by this node"))
        })?;
        handle.change_file(path, change).await
    }

    fn local_kernel(&self, kernel_id: &str) -> Result<&KernelHandle, NodeError> {
        self.kernels
            .get(kernel_id)
            .ok_or_else(|| NodeError::Unroutable(format!("kernel {kernel_id} is not on this node")))
    }

    /// Hands a capability to an agent, local or remote.
    pub async fn hand_over(&self, agent_id: &str, token: CapabilityToken) -> Result<(), NodeError> {
        match self.agents.get(agent_id) {
            Some(local) => local.hold(token).await,
            None => self.link.hand_over(agent_id, token).await,
        }
    }

    /// A local agent.
    pub fn agent(&self, agent_id: &str) -> Result<&AgentHandle, NodeError> {
        self.agents
            .get(agent_id)
            .ok_or_else(|| NodeError::Unroutable(format!("agent {agent_id} is not on this node")))
    }
}
