//! The embedded topology: every node of a run in one process.
//!
//! The same actors as in a distributed run, linked by in-memory channels
//! instead of gRPC, with trust-control's state held in process
//! ([`SharedTrust`]). This is the default topology of `chio arena run`; a
//! scenario's outputs are the same bytes whichever topology runs it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::NodeError;
use crate::link::{InMemoryLink, LinkFuture};
use crate::node::{AuthorityControl, Node, NodeActors};
use crate::shared::SharedTrust;
use crate::world::World;

impl AuthorityControl for SharedTrust {
    fn revoke(&self, id: &str, _at_ms: u64) -> LinkFuture<'_, ()> {
        let result = SharedTrust::revoke(self, id).map_err(|e| NodeError::Authority(e.to_string()));
        Box::pin(async move { result })
    }
}

/// All nodes of a run, in one process.
#[derive(Debug)]
pub struct EmbeddedTopology {
    nodes: BTreeMap<String, Node>,
    trust: SharedTrust,
}

impl EmbeddedTopology {
    /// Spawns every node's actors on the current tokio runtime and links
    /// them.
    pub fn start(world: &World) -> Result<Self, NodeError> {
        let trust = SharedTrust::new();
        let mut actors = BTreeMap::new();
        for node in &world.nodes {
            let spawned = NodeActors::spawn(world, node, |_| Ok(trust.kernel_stores()))?;
            actors.insert(node.clone(), spawned);
        }
        let mut all_kernels = BTreeMap::new();
        let mut all_agents = BTreeMap::new();
        for spawned in actors.values() {
            all_kernels.extend(spawned.kernels.clone());
            all_agents.extend(spawned.agents.clone());
        }
        let link = Arc::new(InMemoryLink::new(all_kernels, all_agents));
        let authority: Arc<dyn AuthorityControl> = Arc::new(trust.clone());
        let nodes = actors
            .into_iter()
            .map(|(id, spawned)| {
                let node = Node::new(world, &id, spawned, link.clone(), authority.clone());
                (id, node)
            })
            .collect();
        Ok(Self { nodes, trust })
    }

    /// The node with logical name `id`.
    pub fn node(&self, id: &str) -> Result<&Node, NodeError> {
        self.nodes
            .get(id)
            .ok_or_else(|| NodeError::Unroutable(format!("node {id}")))
    }

    /// The in-process authority state (receipts appended, for accounting).
    pub fn trust(&self) -> &SharedTrust {
        &self.trust
    }
}
