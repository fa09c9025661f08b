//! Distributed runs: the topology file (`--topology FILE`), the gRPC
//! [`Dispatcher`] that drives node processes through `NodeControl`, and
//! [`run_distributed`], which prepares the cluster for one run and hands
//! the schedule to the same driver as the embedded topology.
//!
//! Order of work for one run: read the topology (or start a local cluster,
//! see `local_cluster`), trust the world's arena authority in trust-control,
//! send every node `LoadWorld` (the scenario bytes, the fixture files, the
//! peers' addresses and a fresh run id that namespaces the run's state in
//! trust-control), check every node loaded the same scenario bytes, then
//! run the schedule one action at a time. Nothing here reaches the bundle
//! but the nodes' answers, which is why a scenario's bundle is the same
//! bytes on every topology. The schema is documented in `docs/topology.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chio_arena::bundle::Bundle;
use chio_arena::Scenario;
use chio_kernel::keys::public_key_hex;
use chio_node::client::{witness_key, WorldOffer, DEFAULT_CONTROL_DEADLINE, WITNESS_LABEL};
use chio_node::link::LinkFuture;
use chio_node::outage::Refusal;
use chio_node::{
    CallAnswer, CallCommand, ClusterToken, DelegateCommand, DelegateOutcome, MessageCommand,
    MessageOutcome, NodeClient, NodeError, World,
};
use chio_trust::model::IssuerKey;
use chio_trust::{BearerToken, TrustClient, TrustClientConfig, TrustStore};
use rand_core::{OsRng, RngCore};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tracing::Instrument;

use crate::cli::RunTopology;
use crate::driver::{
    run_embedded, run_schedule, Dispatcher, ReadBack, RunInputs, RunOptions, RunResult, Written,
};
use crate::error::{codes, CliError};
use crate::local_cluster::{running_chio, LocalCluster};
use crate::local_faults::{audit_receipts, lock, start_cluster, LocalFaults};

/// The error code of a topology file that cannot be used.
pub const TOPOLOGY_INVALID: &str = codes::TOPOLOGY_INVALID.code;

/// A topology file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyFile {
    /// The file holding the cluster token every node was started with.
    pub cluster_token_file: PathBuf,
    /// The trust-control service the nodes share.
    pub trust_control: TrustControlEntry,
    /// Each logical node's `http://HOST:PORT`.
    pub nodes: BTreeMap<String, String>,
}

/// The `[trust_control]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustControlEntry {
    /// Its `http://HOST:PORT`.
    pub url: String,
    /// The file holding its bearer token.
    pub token_file: PathBuf,
}

/// A checked topology: tokens read, paths resolved.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Logical node to URL.
    pub nodes: BTreeMap<String, String>,
    /// The peers' URLs each node is given, when they differ from `nodes`
    /// (a local cluster whose links run through proxies); empty otherwise.
    pub peer_urls: BTreeMap<String, BTreeMap<String, String>>,
    /// The cluster token.
    pub cluster_token: ClusterToken,
    /// Trust-control's URL.
    pub trust_url: String,
    /// Trust-control's token.
    pub trust_token: BearerToken,
}

mod refusals;
pub(crate) use refusals::check_witness;

/// The most bytes a topology file may hold (1 MiB).
pub const MAX_TOPOLOGY_BYTES: u64 = 1 << 20;

/// A topology that cannot be used for `command`, with how to fix it.
pub(crate) fn topology_error(command: &'static str, message: String, help: &str) -> CliError {
    CliError::new(codes::TOPOLOGY_INVALID, command, message, help)
}

impl Topology {
    /// Reads and checks a topology file; relative token paths resolve next
    /// to it.
    pub fn load(command: &'static str, path: &Path) -> Result<Topology, CliError> {
        let text = chio_arena::files::read_named(path, MAX_TOPOLOGY_BYTES)
            .map_err(|e| e.describe("a topology file"))
            .and_then(|bytes| {
                String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())
            })
            .map_err(|cause| {
                topology_error(
                    command,
                    format!("cannot read topology file {}: {cause}", path.display()),
                    "pass --topology local or the path of a readable regular topology file of at most 1 MiB",
                )
            })?;
        let file: TopologyFile = toml::from_str(&text).map_err(|e| {
            topology_error(
                command,
                format!(
                    "topology file {} is invalid: {}",
                    path.display(),
                    e.message()
                ),
                "follow the schema in docs/topology.md",
            )
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let cluster_token =
            ClusterToken::from_file(&base.join(&file.cluster_token_file)).map_err(|e| {
                topology_error(
                    command,
                    format!("cluster_token_file: {e}"),
                    "point cluster_token_file at the token the nodes were started with",
                )
            })?;
        let trust_path = base.join(&file.trust_control.token_file);
        let trust_token = BearerToken::from_file(&trust_path)
            .map_err(|e| e.to_string())
            .map_err(|e| {
                topology_error(
                    command,
                    format!("trust_control.token_file {}: {e}", trust_path.display()),
                    "point trust_control.token_file at the token trust-control was started with",
                )
            })?;
        for (node, url) in &file.nodes {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(topology_error(
                    command,
                    format!("nodes.{node} = {url:?} is not an http:// URL"),
                    "give each node as http://HOST:PORT",
                ));
            }
        }
        Ok(Topology {
            nodes: file.nodes,
            peer_urls: BTreeMap::new(),
            cluster_token,
            trust_url: file.trust_control.url,
            trust_token,
        })
    }

    /// Refuses a topology that does not place every node of the world.
    pub fn check_covers(&self, command: &'static str, nodes: &[String]) -> Result<(), CliError> {
        let missing: Vec<&str> = nodes
            .iter()
            .filter(|n| !self.nodes.contains_key(*n))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(topology_error(
                command,
                format!(
                    "the topology gives no address for node(s) {}",
                    missing.join(", ")
                ),
                "add each node the scenario declares under [nodes]",
            ))
        }
    }
}

/// A fresh run id: it namespaces the run's state in trust-control and
/// never reaches an output.
pub fn fresh_run_id() -> String {
    let mut bytes = [0u8; 16];
    OsRng.fill_bytes(&mut bytes);
    format!("run-{}", hex::encode(bytes))
}

/// The gRPC dispatcher: one `NodeControl` client per logical node, and a
/// client of the trust-control the topology names.
#[derive(Debug, Clone)]
pub struct GrpcTopology {
    clients: BTreeMap<String, NodeClient>,
    trust: TrustClient,
}

impl GrpcTopology {
    /// Trusts the world's authority in trust-control and loads the world on
    /// every node of the topology.
    pub async fn prepare(
        world: &World,
        inputs: &RunInputs,
        topology: &Topology,
        run_id: &str,
    ) -> Result<GrpcTopology, NodeError> {
        let cluster = Self::connect(world, topology).await?;
        cluster.load(inputs, topology, run_id).await?;
        Ok(cluster)
    }

    /// Waits for the topology's processes, trusts the world's authority in
    /// trust-control and makes one client per node; loads nothing, so the
    /// same clients serve every world loaded after (`load`).
    pub async fn connect(world: &World, topology: &Topology) -> Result<GrpcTopology, NodeError> {
        // Processes started together (docker compose) may still be binding.
        wait_for_listener("trust-control", &topology.trust_url).await?;
        for node in &world.nodes {
            if let Some(url) = topology.nodes.get(node) {
                wait_for_listener(&format!("node {node}"), url).await?;
            }
        }
        let trust = TrustClient::connect_lazy(
            &topology.trust_url,
            &topology.trust_token,
            TrustClientConfig::default(),
        )
        .map_err(NodeError::Authority)?;
        let authority =
            IssuerKey::parse_hex(&public_key_hex(&world.authority)).map_err(|source| {
                NodeError::AuthorityOperation {
                    operation: "reading the arena authority's key",
                    source,
                }
            })?;
        trust
            .add_issuer_key(authority)
            .await
            .map_err(|source| NodeError::AuthorityOperation {
                operation: "cannot trust the arena authority",
                source,
            })?;
        let mut clients = BTreeMap::new();
        for node in &world.nodes {
            let url = topology
                .nodes
                .get(node)
                .ok_or_else(|| NodeError::Unroutable(format!("node {node}")))?;
            let client =
                NodeClient::new(node, url, &topology.cluster_token, DEFAULT_CONTROL_DEADLINE)?;
            clients.insert(node.clone(), client);
        }
        Ok(GrpcTopology { clients, trust })
    }

    /// Loads the world of `inputs` on every node under `run_id`, replacing
    /// the one each hosted, and checks every node loaded the bytes sent and
    /// reads the authority state the topology names: the run's witness
    /// record, written into the topology's trust-control first, must be in
    /// every node's own store ([`NodeError::AuthorityNotShared`] otherwise).
    pub async fn load(
        &self,
        inputs: &RunInputs,
        topology: &Topology,
        run_id: &str,
    ) -> Result<(), NodeError> {
        let expected_sha = hex::encode(Sha256::digest(&inputs.world_bytes));
        let witness = witness_key(run_id);
        self.trust
            .join_labels(vec![witness.clone()], WITNESS_LABEL)
            .await
            .map_err(|source| NodeError::AuthorityOperation {
                operation: "cannot write the run's witness record",
                source,
            })?;
        for (node, client) in &self.clients {
            let loaded = client
                .load_world(WorldOffer {
                    scenario: &inputs.world_bytes,
                    fixtures: &inputs.fixtures,
                    peers: topology.peer_urls.get(node).unwrap_or(&topology.nodes),
                    run_id,
                    redefinitions: &inputs.redefinitions,
                    witness_key: &witness,
                })
                .await?;
            if loaded.scenario_sha256 != expected_sha {
                return Err(NodeError::Remote {
                    target: format!("node {node}"),
                    cause: "loaded other scenario bytes than the controller sent".to_string(),
                });
            }
            check_witness(node, topology, loaded.witness_found)?;
            tracing::info!(node = %node, kernels = ?loaded.kernels, agents = ?loaded.agents, "node loaded the world");
        }
        Ok(())
    }

    fn client(&self, node: &str) -> Result<NodeClient, NodeError> {
        self.clients
            .get(node)
            .cloned()
            .ok_or_else(|| NodeError::Unroutable(format!("node {node}")))
    }

    /// Reads, writes or deletes a fixture file of a tool server on `node`
    /// (the adversary evaluator's fixture edit); answers what it held.
    pub async fn change_fixture(
        &self,
        node: &str,
        server: &str,
        path: &str,
        change: chio_node::tools::FileChange,
    ) -> Result<Option<String>, NodeError> {
        self.client(node)?
            .change_fixture(server, path, change)
            .await
    }

    /// Asks every node to stop (for clusters the controller started).
    pub async fn shutdown(&self) {
        for client in self.clients.values() {
            if let Err(e) = client.shutdown().await {
                tracing::warn!(node = client.node(), error = %e, "node did not acknowledge shutdown");
            }
        }
    }
}

impl Dispatcher for GrpcTopology {
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallAnswer> {
        let client = self.client(node);
        Box::pin(async move { client?.call(&command).await })
    }

    fn delegate(
        &self,
        node: &str,
        command: DelegateCommand,
    ) -> LinkFuture<'_, Result<DelegateOutcome, Refusal>> {
        let client = self.client(node);
        Box::pin(async move { client?.delegate(&command).await })
    }

    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome> {
        let client = self.client(node);
        Box::pin(async move { client?.message(&command).await })
    }

    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, Option<Refusal>> {
        let client = self.client(node);
        let target = target.to_string();
        Box::pin(async move { client?.revoke(&target, at_ms).await })
    }
}

/// Installs a run's bundle, read back whole, in `out`; it is returned as
/// a run written there as it goes is ([`run_schedule`]): its manifest
/// without steps, no receipts and no inputs, which the written bundle holds.
fn install(run: RunResult, out: &Path) -> Written {
    run.bundle.write(out)?;
    let Bundle {
        mut manifest,
        policies,
        ..
    } = run.bundle;
    manifest.steps = Vec::new();
    Ok(RunResult {
        bundle: Bundle {
            manifest,
            receipts: Vec::new(),
            policies,
            inputs: BTreeMap::new(),
        },
        ..run
    })
}

/// Runs a scenario across the node processes of `topology`, writing its
/// bundle into `out` as it goes.
pub async fn run_distributed(
    scenario: &Scenario,
    inputs: &RunInputs,
    topology: &Topology,
    topology_name: &str,
    options: RunOptions,
    stop_nodes: bool,
    out: &Path,
) -> Result<Written, NodeError> {
    let cluster = ClusterRun {
        topology,
        topology_name,
        stop_nodes,
        faults: None,
    };
    cluster.run(scenario, inputs, options, out).await
}

/// Where a distributed run goes: the processes of `topology`, whether to
/// stop them afterwards, and (for a cluster this controller started) the
/// cluster its fault steps are inflicted on.
struct ClusterRun<'a> {
    topology: &'a Topology,
    topology_name: &'a str,
    stop_nodes: bool,
    faults: Option<&'a std::sync::Mutex<LocalCluster>>,
}

impl ClusterRun<'_> {
    /// Loads the world on every node and runs the schedule. A fault run
    /// writes its bundle into a temporary folder first, so every admitted
    /// call's receipt can be checked in trust-control before the bundle is
    /// installed in `out`.
    async fn run(
        &self,
        scenario: &Scenario,
        inputs: &RunInputs,
        options: RunOptions,
        out: &Path,
    ) -> Result<Written, NodeError> {
        let world = World::resolve(scenario, &inputs.fixtures)?;
        let run_id = fresh_run_id();
        let span = tracing::info_span!(
            "run",
            scenario_id = scenario.id(),
            rng_seed = scenario.file().rng_seed,
            topology = self.topology_name,
        );
        async {
            tracing::info!(run_id = %run_id, "starting distributed run");
            let topology = self.topology;
            let cluster = GrpcTopology::prepare(&world, inputs, topology, &run_id).await?;
            let result = match self.faults {
                None => run_schedule(scenario, &world, inputs, &cluster, options, out).await,
                Some(local) => {
                    let dispatcher = LocalFaults {
                        grpc: &cluster,
                        cluster: local,
                        topology,
                        world: &world,
                        inputs,
                        run_id: &run_id,
                        stalled: Default::default(),
                    };
                    audited(scenario, &dispatcher, options, out).await
                }
            };
            if self.stop_nodes {
                cluster.shutdown().await;
            }
            result
        }
        .instrument(span)
        .await
    }
}

/// A fault run on a local cluster: its bundle is read back from a
/// temporary folder and installed in `out` once every admitted call's
/// receipt is found in trust-control.
async fn audited(
    scenario: &Scenario,
    dispatcher: &LocalFaults<'_>,
    options: RunOptions,
    out: &Path,
) -> Result<Written, NodeError> {
    let (world, inputs) = (dispatcher.world, dispatcher.inputs);
    let scratch = ReadBack::new()?;
    let run = run_schedule(scenario, world, inputs, dispatcher, options, scratch.out()).await;
    let run = scratch.bundle(run)?;
    audit_receipts(
        dispatcher.cluster,
        dispatcher.topology,
        &run.bundle.receipts,
    )
    .await?;
    Ok(install(run, out))
}

/// Runs a scenario on a local cluster started for it (links proxied when
/// the scenario partitions, heals or delays one, or stalls trust-control),
/// inflicting its fault steps on the real processes.
fn run_local(
    runtime: &tokio::runtime::Runtime,
    chio: &Path,
    scenario: &Scenario,
    inputs: &RunInputs,
    options: RunOptions,
    out: &Path,
) -> Result<Written, NodeError> {
    let cluster = start_cluster(chio, scenario)?;
    let topology = cluster.topology().clone();
    let cluster = std::sync::Mutex::new(cluster);
    let faulty = scenario.fault_steps().next().is_some();
    runtime.block_on(async {
        lock(&cluster).serve_proxies()?;
        let run = ClusterRun {
            topology: &topology,
            topology_name: "local",
            stop_nodes: true,
            faults: faulty.then_some(&cluster),
        };
        run.run(scenario, inputs, options, out).await
    })
}

/// Runs a scenario embedded, on `--topology local` or on `--topology
/// FILE`, writing its bundle into `out` (a caller that wants it in memory
/// passes a [`ReadBack`] folder): the outer error refuses the topology, the
/// middle one is the run's, the inner one the bundle's.
pub fn run_with_topology(
    command: &'static str,
    topology: &RunTopology,
    scenario: &Scenario,
    inputs: &RunInputs,
    options: RunOptions,
    out: &Path,
) -> Result<Result<Written, NodeError>, CliError> {
    let runtime = crate::arena_run::runtime(command)?;
    refusals::refuse_before_start(command, topology, scenario)?;
    let path = match topology {
        RunTopology::Embedded => {
            let live = BTreeMap::new();
            return Ok(runtime.block_on(run_embedded(scenario, inputs, options, &live, out)));
        }
        RunTopology::File(path) => path,
        RunTopology::Local => {
            let chio = running_chio().map_err(|e| CliError::infrastructure(command, e))?;
            return Ok(run_local(&runtime, &chio, scenario, inputs, options, out));
        }
    };
    let loaded = Topology::load(command, path)?;
    loaded.check_covers(command, &scenario.node_ids())?;
    Ok(runtime.block_on(run_distributed(
        scenario,
        inputs,
        &loaded,
        &path.display().to_string(),
        options,
        false,
        out,
    )))
}

/// How long the controller waits for a listed process to accept
/// connections before the run begins.
pub const LISTENER_WAIT: Duration = Duration::from_secs(15);

/// Waits until `url`'s address accepts a TCP connection, or fails naming
/// `what` after [`LISTENER_WAIT`].
async fn wait_for_listener(what: &str, url: &str) -> Result<(), NodeError> {
    let authority = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .trim_end_matches('/');
    let began = tokio::time::Instant::now();
    loop {
        let attempt = tokio::time::timeout(
            Duration::from_secs(1),
            tokio::net::TcpStream::connect(authority),
        )
        .await;
        match attempt {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) if began.elapsed() >= LISTENER_WAIT => {
                return Err(NodeError::Remote {
                    target: format!("{what} at {url}"),
                    cause: format!(
                        "not accepting connections after {} s: {e}",
                        LISTENER_WAIT.as_secs()
                    ),
                })
            }
            Err(_) if began.elapsed() >= LISTENER_WAIT => {
                return Err(NodeError::Remote {
                    target: format!("{what} at {url}"),
                    cause: format!(
                        "not accepting connections after {} s",
                        LISTENER_WAIT.as_secs()
                    ),
                })
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// How long the controller waits for a process it started to announce its
/// address.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);
