//! `NodeHost`: the actor that owns what a node process currently hosts.
//!
//! A node process starts empty. The controller's `LoadWorld` gives it the
//! world part of the scenario's bytes (the file without its `[[steps]]`
//! tables, which a node never needs; the whole file when it cannot be cut),
//! the fixture files, the addresses of its peers and the run's id; the host
//! validates that world exactly as the controller did (against the fixture
//! files sent with it, so no filesystem is needed), answers the SHA-256 of
//! the bytes it loaded, so the controller confirms the node holds the world
//! it sent, resolves the same world, spawns the
//! kernels, agents and tool servers placed on its logical node, wires their
//! stores to trust-control (or the local SQLite state) and links them to the
//! other nodes over gRPC. A later `LoadWorld` replaces the previous world;
//! dropping it stops its actors.
//!
//! The host only hands out the current [`Node`]; the node's own actors do
//! the work, so a long call never blocks a `LoadWorld` or another call. The
//! actor publishes the node it hosts in one shared slot that every RPC reads
//! under a read lock, so finding the node costs no actor round trip.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use chio_arena::parse_world_with_fixtures;
use chio_kernel::contract::Redefinition;
use chio_trust::{InMemoryTrustStore, SqliteTrustStore, TrustClient, TrustStore};
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

use crate::cluster::ClusterToken;
use crate::error::NodeError;
use crate::grpc_link::GrpcLink;
use crate::node::Node;
use crate::trust_stores::{bind_node, StoreDeadlines};
use crate::world::{FixtureSet, World};

/// Where a node process keeps shared authority state.
#[derive(Debug, Clone)]
pub enum TrustBackend {
    /// A trust-control service shared by every node of the cluster.
    Remote(Arc<TrustClient>),
    /// SQLite files of this node alone (`--state-dir`): a single-node
    /// cluster, or nodes that share no authority state.
    Local(Arc<SqliteTrustStore>),
    /// Trust state in this process's memory alone, gone when it exits: for
    /// in-process harnesses (the fuzz targets) that serve a node's requests
    /// without files or sockets.
    Memory(Arc<InMemoryTrustStore>),
}

/// What a node process is, independent of the world it hosts.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The logical node name this process plays (`--name`).
    pub name: String,
    /// Where authority state lives.
    pub backend: TrustBackend,
    /// The cluster token its peers expect.
    pub cluster_token: ClusterToken,
    /// Deadlines of trust-control calls made by its kernels.
    pub deadlines: StoreDeadlines,
    /// Deadline of each call to another node.
    pub link_deadline: Duration,
}

/// A world to host, as `LoadWorld` carries it.
#[derive(Debug, Clone)]
pub struct WorldLoad {
    /// The logical node to play.
    pub node: String,
    /// The world part of the scenario file's bytes (`chio_arena::world_bytes`).
    pub scenario: Vec<u8>,
    /// The fixture files.
    pub fixtures: FixtureSet,
    /// KernelLink URL of every logical node.
    pub peers: BTreeMap<String, String>,
    /// The run's namespace in trust-control.
    pub run_id: String,
    /// The tool definitions servers change during the run.
    pub redefinitions: Vec<Redefinition>,
    /// The key of the run's witness record, to look up in this node's own
    /// authority store; empty for no look-up.
    pub witness_key: String,
}

/// What a node loaded, for the controller to cross-check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedWorld {
    /// The scenario id.
    pub scenario_id: String,
    /// SHA-256 of the scenario bytes the node loaded (the world part).
    pub scenario_sha256: String,
    /// Kernels hosted here.
    pub kernels: Vec<String>,
    /// Agents hosted here.
    pub agents: Vec<String>,
    /// Whether this node's authority store holds the run's witness record
    /// (false when no key was given).
    pub witness_found: bool,
}

enum HostCommand {
    Load {
        load: Box<WorldLoad>,
        reply: oneshot::Sender<Result<LoadedWorld, NodeError>>,
    },
}

/// The node currently hosted, with the run id of its world, published by
/// the host actor for every RPC.
type CurrentNode = Arc<RwLock<Option<(String, Node)>>>;

/// A handle to the host actor; dropping every handle stops it and the
/// world it hosts.
#[derive(Debug, Clone)]
pub struct NodeHost {
    name: String,
    tx: mpsc::Sender<HostCommand>,
    current: CurrentNode,
}

struct Hosted {
    node: Node,
}

struct HostActor {
    config: HostConfig,
    hosted: Option<Hosted>,
    current: CurrentNode,
    rx: mpsc::Receiver<HostCommand>,
}

impl NodeHost {
    /// Starts the host actor on the current runtime.
    pub fn spawn(config: HostConfig) -> Self {
        let (tx, rx) = mpsc::channel(crate::actors::MAILBOX);
        let name = config.name.clone();
        let span = tracing::info_span!("node", name = %name);
        let current = CurrentNode::default();
        let actor = HostActor {
            config,
            hosted: None,
            current: current.clone(),
            rx,
        };
        // Task names need tokio_unstable; the span names the task instead.
        tokio::spawn(actor.run().instrument(span));
        Self { name, tx, current }
    }

    /// The logical node name this process plays.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Loads (or replaces) the hosted world.
    pub async fn load(&self, load: WorldLoad) -> Result<LoadedWorld, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(HostCommand::Load {
                load: Box::new(load),
                reply,
            })
            .await
            .map_err(|_| NodeError::ActorGone(format!("node host {}", self.name)))?;
        answer
            .await
            .map_err(|_| NodeError::ActorGone(format!("node host {}", self.name)))?
    }

    /// The hosted node, when the world it hosts is the run `run_id`'s: an
    /// error when no world is loaded, and [`NodeError::OtherRun`] when the
    /// loaded world is another run's (a later `LoadWorld` replaced it), so
    /// no command of one run is decided under another run's world.
    pub async fn node(&self, run_id: &str) -> Result<Node, NodeError> {
        let current = self
            .current
            .read()
            .map_err(|_| NodeError::ActorGone(format!("node host {}", self.name)))?;
        match current.as_ref() {
            Some((loaded, node)) if loaded == run_id => Ok(node.clone()),
            Some((loaded, _)) => Err(NodeError::OtherRun {
                node: self.name.clone(),
                loaded: loaded.clone(),
                asked: run_id.to_string(),
            }),
            None => Err(NodeError::Unroutable(format!(
                "node {} has no world loaded; the controller must send LoadWorld first",
                self.name
            ))),
        }
    }
}

impl HostActor {
    async fn run(mut self) {
        while let Some(command) = self.rx.recv().await {
            match command {
                HostCommand::Load { load, reply } => {
                    // Drop the previous world first, so its kernels stop
                    // before the new ones start.
                    self.publish(None);
                    self.hosted = None;
                    let run_id = load.run_id.clone();
                    let result = self.load(*load).await;
                    let _ = reply.send(result.map(|(hosted, loaded)| {
                        self.publish(Some((run_id, hosted.node.clone())));
                        self.hosted = Some(hosted);
                        loaded
                    }));
                }
            }
        }
    }

    /// Publishes the node every RPC finds (a poisoned slot is recovered:
    /// the value written here is whole, whatever a panicking reader did).
    fn publish(&self, node: Option<(String, Node)>) {
        let mut current = self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *current = node;
    }

    async fn load(&self, load: WorldLoad) -> Result<(Hosted, LoadedWorld), NodeError> {
        if load.node != self.config.name {
            return Err(NodeError::Config {
                problem: format!(
                    "this process serves node {} but was asked to play node {}",
                    self.config.name, load.node
                ),
                fix: "map each logical node to the address of the process started with that --name",
            });
        }
        check_run_id(&load.run_id)?;
        // Validation is pure: each fixture folder is checked against the
        // files sent with the bytes, so nothing is written or read here.
        let scenario = parse_world_with_fixtures(&load.scenario, Path::new("."), &load.fixtures)?;
        let world = World::resolve_with(&scenario, &load.fixtures, &load.redefinitions)?;
        if !world.nodes.contains(&load.node) {
            return Err(NodeError::Scenario(format!(
                "scenario {} declares no node {}",
                world.scenario_id, load.node
            )));
        }
        let (node, witness_found) = match &self.config.backend {
            TrustBackend::Remote(client) => self.link(client.clone(), &world, &load, false).await?,
            TrustBackend::Local(store) => self.link(store.clone(), &world, &load, true).await?,
            TrustBackend::Memory(store) => self.link(store.clone(), &world, &load, true).await?,
        };
        let (kernels, _, agents) = world.placed_on(&load.node);
        tracing::info!(
            scenario_id = %world.scenario_id,
            rng_seed = world.rng_seed,
            run_id = %load.run_id,
            "world loaded"
        );
        Ok((
            Hosted { node },
            LoadedWorld {
                scenario_id: world.scenario_id.clone(),
                scenario_sha256: hex::encode(Sha256::digest(&load.scenario)),
                kernels: kernels.into_iter().collect(),
                agents: agents.into_iter().collect(),
                witness_found,
            },
        ))
    }

    /// Looks the run's witness record up in `store`, then spawns the node's
    /// actors over it and links them to the peers; answers the node and
    /// whether the witness was found. A local store trusts the world's
    /// authority itself, since no operator registers issuers in a node's
    /// private state.
    async fn link<S: TrustStore>(
        &self,
        store: Arc<S>,
        world: &World,
        load: &WorldLoad,
        register_authority: bool,
    ) -> Result<(Node, bool), NodeError> {
        let witness_found = holds_witness(store.as_ref(), &load.witness_key).await?;
        let (actors, authority) = bind_node(
            store,
            world,
            &load.node,
            &load.run_id,
            self.config.deadlines,
            register_authority,
        )
        .await?;
        let link = GrpcLink::new(
            world,
            &load.peers,
            &self.config.cluster_token,
            self.config.link_deadline,
        )?
        .for_run(&load.run_id);
        let node = Node::new(
            world,
            &load.node,
            actors,
            Arc::new(link),
            Arc::new(authority),
        );
        Ok((node, witness_found))
    }
}

/// Whether `store` holds a label record under `key` (the run's witness
/// record, which the controller wrote into the trust-control its topology
/// names); false for an empty key, which asks for no look-up.
async fn holds_witness<S: TrustStore>(store: &S, key: &str) -> Result<bool, NodeError> {
    if key.is_empty() {
        return Ok(false);
    }
    let sets = store
        .read_labels(vec![key.to_string()])
        .await
        .map_err(|source| NodeError::AuthorityOperation {
            operation: "reading the run's witness record",
            source,
        })?;
    Ok(sets.get(key).is_some_and(|labels| !labels.is_empty()))
}

/// A run id becomes a prefix of every trust-control id: printable, short.
fn check_run_id(run_id: &str) -> Result<(), NodeError> {
    let ok = !run_id.is_empty()
        && run_id.len() <= 128
        && run_id.bytes().all(|b| b.is_ascii_graphic() && b != b'/');
    if ok {
        Ok(())
    } else {
        Err(NodeError::Config {
            problem: "the run id is empty, longer than 128 characters, or not printable ASCII without '/'".to_string(),
            fix: "let the controller generate the run id",
        })
    }
}
