//! The embedded topology: every node of a run in one process.
//!
//! The same actors as in a distributed run, linked by in-memory channels
//! instead of gRPC, bound to trust state exactly as a node process is
//! ([`crate::trust_stores::bind_node`]) but over trust-control's in-memory
//! store instead of a remote service: the same adapter, the same rules, the
//! same namespacing. This is the default topology of `chio arena run`; a
//! scenario's outputs are the same bytes whichever topology runs it. Faults
//! are simulated here ([`crate::simulated_faults`]): each node reaches the
//! store and the other nodes through the run's [`FaultSwitch`], and a
//! restarted node is started afresh, as a node process is.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use chio_arena::scenario::FaultAction;
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
    world: World,
    nodes: RwLock<BTreeMap<String, Node>>,
    link: Arc<InMemoryLink>,
    trust: Arc<InMemoryTrustStore>,
    switch: FaultSwitch,
}

impl EmbeddedTopology {
    /// Spawns every node's actors on the current tokio runtime, binds their
    /// kernels to one in-memory trust store, and links them.
    pub async fn start(world: &World) -> Result<Self, NodeError> {
        let trust = Arc::new(InMemoryTrustStore::new());
        trust.ready()?;
        let switch = FaultSwitch::default();
        let (nodes, link) = start_linked(world, trust.clone(), &switch).await?;
        Ok(Self {
            world: world.clone(),
            nodes: RwLock::new(nodes),
            link,
            trust,
            switch,
        })
    }

    /// The node with logical name `id`; a crashed node answers nothing.
    pub fn node(&self, id: &str) -> Result<Node, NodeError> {
        self.healthy()?;
        self.switch.check_up(id)?;
        self.nodes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| NodeError::Unroutable(format!("node {id}")))
    }

    /// Simulates a fault event: from now on the nodes, links and store
    /// answer as the fault says. A restarted node is started afresh, as a
    /// node process is: new actors bound to the same store, its agents
    /// holding their grants and, with its state, what the run handed them.
    pub async fn simulate(&self, event: FaultEvent) -> Result<(), NodeError> {
        self.switch.apply(&event);
        let FaultEvent::Begin(prepared) = event else {
            return Ok(());
        };
        let FaultAction::Restart { node, .. } = &prepared.fault else {
            return Ok(());
        };
        let (actors, authority) = bind_node(
            Arc::new(node_store(node, &self.trust, &self.switch)),
            &self.world,
            node,
            EMBEDDED_RUN_ID,
            StoreDeadlines::default(),
            false,
        )
        .await?;
        self.link.replace(&actors.kernels, &actors.agents);
        let restarted = Node::new(
            &self.world,
            node,
            actors,
            self.node_link(node),
            Arc::new(authority),
        );
        for (agent, token) in &prepared.restore {
            restarted.hand_over(agent, token.clone()).await?;
        }
        self.nodes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(node.clone(), restarted);
        Ok(())
    }

    /// Node `id`'s view of the in-memory link.
    fn node_link(&self, id: &str) -> Arc<SimulatedLink> {
        Arc::new(simulated_link(
            &self.world,
            id,
            self.link.clone(),
            &self.switch,
        ))
    }

    /// Whether the in-process store still keeps receipts: its failing its
    /// receipt file is the arena's own failure, never a decision, so the
    /// run stops as an infrastructure failure rather than record a deny.
    pub fn healthy(&self) -> Result<(), NodeError> {
        self.trust
            .spill_failure()
            .map_or(Ok(()), |failure| Err(failure.into()))
    }

    /// The in-process trust state, to inspect.
    pub fn trust(&self) -> &InMemoryTrustStore {
        &self.trust
    }
}

/// Node `node`'s store: the shared one, through the fault switch.
fn node_store<S>(node: &str, store: &Arc<S>, switch: &FaultSwitch) -> SimulatedStore<S> {
    SimulatedStore {
        node: node.to_string(),
        inner: store.clone(),
        switch: switch.clone(),
    }
}

/// Node `id`'s view of the in-memory link `link`, through the fault switch.
fn simulated_link(
    world: &World,
    id: &str,
    link: Arc<InMemoryLink>,
    switch: &FaultSwitch,
) -> SimulatedLink {
    SimulatedLink {
        from: id.to_string(),
        inner: link,
        kernel_nodes: world.kernel_nodes(),
        agent_nodes: world.agent_nodes(),
        switch: switch.clone(),
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
    Ok(start_linked(world, store, switch).await?.0)
}

/// [`start_nodes_with_faults`], answering the in-memory link too.
async fn start_linked<S: TrustStore>(
    world: &World,
    store: Arc<S>,
    switch: &FaultSwitch,
) -> Result<(BTreeMap<String, Node>, Arc<InMemoryLink>), NodeError> {
    let mut actors = BTreeMap::new();
    let mut authorities = BTreeMap::new();
    for (index, node) in world.nodes.iter().enumerate() {
        // The first node registers the authority's key, as the
        // controller does for a trust-control service.
        let (spawned, authority) = bind_node(
            Arc::new(node_store(node, &store, switch)),
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
    let mut nodes = BTreeMap::new();
    for (id, spawned) in actors {
        let authority: Arc<dyn AuthorityControl> = match authorities.remove(&id) {
            Some(authority) => Arc::new(authority),
            None => return Err(NodeError::Unroutable(format!("node {id}"))),
        };
        let node_link = Arc::new(simulated_link(world, &id, link.clone(), switch));
        let node = Node::new(world, &id, spawned, node_link, authority);
        nodes.insert(id, node);
    }
    Ok((nodes, link))
}
