//! The embedded topology: every node of a run in one process.
//!
//! The same actors as in a distributed run, linked by in-memory channels
//! instead of gRPC, bound to trust state exactly as a node process is
//! ([`crate::trust_stores::bind_node`]) but over trust-control's in-memory
//! store instead of a remote service: the same adapter, the same rules, the
//! same namespacing. This is the default topology of `chio arena run`; a
//! scenario's outputs are the same bytes whichever topology runs it. Faults
//! are simulated here ([`crate::simulated_faults`]): each node reaches the
//! store and the other nodes through the run's [`FaultSwitch`].

use std::collections::BTreeMap;
use std::sync::Arc;

use chio_trust::store::memory::InMemoryTrustStore;
use chio_trust::TrustStore;

use crate::error::NodeError;
use crate::executor::FaultEvent;
use crate::link::InMemoryLink;
use crate::node::{AuthorityControl, Node};
use crate::simulated_faults::{FaultSwitch, SimulatedLink, SimulatedStore};
use crate::trust_stores::{bind_node, StoreDeadlines};
use crate::world::World;

/// The run namespace of an embedded run's trust state; one store serves one
/// run, so any fixed name will do.
const EMBEDDED_RUN_ID: &str = "embedded";

/// All nodes of a run, in one process.
#[derive(Debug)]
pub struct EmbeddedTopology {
    nodes: BTreeMap<String, Node>,
    trust: InMemoryTrustStore,
    switch: FaultSwitch,
}

impl EmbeddedTopology {
    /// Spawns every node's actors on the current tokio runtime, binds their
    /// kernels to one in-memory trust store, and links them.
    pub async fn start(world: &World) -> Result<Self, NodeError> {
        let trust = InMemoryTrustStore::new();
        let switch = FaultSwitch::default();
        let nodes = start_nodes_with_faults(world, Arc::new(trust.clone()), &switch).await?;
        Ok(Self {
            nodes,
            trust,
            switch,
        })
    }

    /// The node with logical name `id`; a crashed node answers nothing.
    pub fn node(&self, id: &str) -> Result<&Node, NodeError> {
        self.switch.check_up(id)?;
        self.nodes
            .get(id)
            .ok_or_else(|| NodeError::Unroutable(format!("node {id}")))
    }

    /// Simulates a fault event: from now on the nodes, links and store
    /// answer as the fault says.
    pub fn simulate(&self, event: FaultEvent) {
        self.switch.apply(&event);
    }

    /// The in-process trust state, to inspect.
    pub fn trust(&self) -> &InMemoryTrustStore {
        &self.trust
    }
}

/// Every node of `world` on the current tokio runtime, bound to `store`
/// and linked in memory: the embedded topology over any trust store (a
/// test counts the calls a run makes through a wrapping store).
pub async fn start_nodes<S: TrustStore>(
    world: &World,
    store: Arc<S>,
) -> Result<BTreeMap<String, Node>, NodeError> {
    start_nodes_with_faults(world, store, &FaultSwitch::default()).await
}

/// [`start_nodes`], with every node reaching the store and the other nodes
/// through `switch`, which simulates the faults in effect.
pub async fn start_nodes_with_faults<S: TrustStore>(
    world: &World,
    store: Arc<S>,
    switch: &FaultSwitch,
) -> Result<BTreeMap<String, Node>, NodeError> {
    let mut actors = BTreeMap::new();
    let mut authorities = BTreeMap::new();
    for (index, node) in world.nodes.iter().enumerate() {
        // The first node registers the authority's key, as the
        // controller does for a trust-control service.
        let node_store = SimulatedStore {
            node: node.clone(),
            inner: store.clone(),
            switch: switch.clone(),
        };
        let (spawned, authority) = bind_node(
            Arc::new(node_store),
            world,
            node,
            EMBEDDED_RUN_ID,
            StoreDeadlines::default(),
            index == 0,
        )
        .await?;
        actors.insert(node.clone(), spawned);
        authorities.insert(node.clone(), authority);
    }
    let mut all_kernels = BTreeMap::new();
    let mut all_agents = BTreeMap::new();
    for spawned in actors.values() {
        all_kernels.extend(spawned.kernels.clone());
        all_agents.extend(spawned.agents.clone());
    }
    let link = Arc::new(InMemoryLink::new(all_kernels, all_agents));
    let kernel_nodes: BTreeMap<String, String> = world
        .kernels
        .values()
        .map(|k| (k.id.clone(), k.node.clone()))
        .collect();
    let agent_nodes: BTreeMap<String, String> = world
        .agents
        .values()
        .map(|a| (a.id.clone(), a.node.clone()))
        .collect();
    let mut nodes = BTreeMap::new();
    for (id, spawned) in actors {
        let authority: Arc<dyn AuthorityControl> = match authorities.remove(&id) {
            Some(authority) => Arc::new(authority),
            None => return Err(NodeError::Unroutable(format!("node {id}"))),
        };
        let node_link = Arc::new(SimulatedLink {
            from: id.clone(),
            inner: link.clone(),
            kernel_nodes: kernel_nodes.clone(),
            agent_nodes: agent_nodes.clone(),
            switch: switch.clone(),
        });
        let node = Node::new(world, &id, spawned, node_link, authority);
        nodes.insert(id, node);
    }
    Ok(nodes)
}
