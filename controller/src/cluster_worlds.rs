//! The adversary evaluator's world instances on node processes: what
//! `chio arena evolve --topology` and the adversary part of a matrix cell
//! on a topology evaluate in.
//!
//! [`ClusterWorlds`] owns nothing of the cluster: the nodes and
//! trust-control are a local cluster the command started once or the
//! processes a topology file names, and every batch reuses them, and their
//! connections: the processes are reached and the arena authority trusted
//! once (`GrpcTopology::connect`), and a fresh instance is one `LoadWorld`
//! on every node with a fresh run id (`GrpcTopology::load`, the second half
//! of a run's start), so the kernels, agents and tool servers are new and
//! trust-control's state for the batch is its own.
//! Scheduled steps go through `NodeControl` as in a run. An action's
//! signed call goes to the node hosting the kernel that must decide it over
//! `KernelLink`, the path a peer node's call takes, so an adversary reaches
//! the kernel exactly where a compromised node would. Calls made together
//! go as one `EvaluateTogether`, and a fixture edit and its restore as
//! `ChangeFixture` to the node hosting the server.
//!
//! A scenario with fault steps is evaluated on a local cluster started for
//! it ([`evaluate_on_local`]): the batch's dispatcher is the one a fault
//! run uses (`crate::local_faults`), so each batch's crashes, restarts,
//! partitions, delays and stalls are inflicted on the real processes, and
//! the next batch first brings the cluster back to health. The nodes of a
//! topology file are not this controller's to kill, so a fault scenario is
//! refused there.
//!
//! The evaluator's futures are waited for on the command's runtime, from
//! the command's own thread (never from inside the runtime).

use std::path::Path;
use std::sync::Mutex;

use chio_adversary::fitness::ActionEvaluator;
use chio_arena::Scenario;
use chio_kernel::kernel::Decision;
use chio_kernel::request::ToolCallRequest;
use chio_node::evaluator::{KernelActionEvaluator, WorldInstance, Worlds};
use chio_node::executor::Dispatcher;
use chio_node::grpc_link::DEFAULT_LINK_DEADLINE;
use chio_node::link::KernelLink;
use chio_node::tools::FileChange;
use chio_node::{GrpcLink, NodeError, World};
use tokio::runtime::Runtime;

use crate::cli::RunTopology;
use crate::driver::RunInputs;
use crate::error::CliError;
use crate::local_cluster::{running_chio, LocalCluster};
use crate::local_faults::{lock, start_cluster, LocalFaults};
use crate::topology::{fresh_run_id, topology_error, GrpcTopology, Topology};

/// Runs `evaluate` with an adversary evaluator whose worlds are on the
/// nodes of `topology`, waited for on `runtime`. A scenario with fault
/// steps is refused: its faults would have to be inflicted on processes
/// this controller did not start (see [`evaluate_on_local`]).
pub fn evaluate_on<T>(
    runtime: &Runtime,
    topology: &Topology,
    scenario: &Scenario,
    inputs: &RunInputs,
    evaluate: impl FnOnce(&mut dyn ActionEvaluator) -> T,
) -> Result<T, NodeError> {
    refuse_faults(scenario)?;
    evaluate_in(runtime, topology, None, scenario, inputs, evaluate)
}

/// Runs `evaluate` with an adversary evaluator whose worlds are on a local
/// cluster started for it with the `chio` binary at `chio` (and stopped
/// after it), shaped for the scenario's fault steps
/// (`local_faults::start_cluster`): each batch inflicts the faults its
/// schedule declares on the real processes, as `chio arena run --topology
/// local` does, and the next batch starts from a healthy cluster.
pub fn evaluate_on_local<T>(
    chio: &Path,
    scenario: &Scenario,
    inputs: &RunInputs,
    evaluate: impl FnOnce(&mut dyn ActionEvaluator) -> T,
) -> Result<T, NodeError> {
    // Inflicting a fault blocks on the cluster's processes, which needs a
    // runtime with workers (`tokio::task::block_in_place`).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("chio-cluster-worlds")
        .enable_all()
        .build()
        .map_err(|e| NodeError::Config {
            problem: format!("cannot start the async runtime: {e}"),
            fix: "raise the process's thread or file limits",
        })?;
    let cluster = start_cluster(chio, scenario)?;
    let topology = cluster.topology().clone();
    let cluster = Mutex::new(cluster);
    {
        let _entered = runtime.enter();
        lock(&cluster).serve_proxies()?;
    }
    let faults = scenario.fault_steps().next().is_some().then_some(&cluster);
    evaluate_in(&runtime, &topology, faults, scenario, inputs, evaluate)
}

/// [`evaluate_on`], inflicting fault steps on `faults` when given.
fn evaluate_in<T>(
    runtime: &Runtime,
    topology: &Topology,
    faults: Option<&Mutex<LocalCluster>>,
    scenario: &Scenario,
    inputs: &RunInputs,
    evaluate: impl FnOnce(&mut dyn ActionEvaluator) -> T,
) -> Result<T, NodeError> {
    let world = World::resolve(scenario, &inputs.fixtures)?;
    let worlds = ClusterWorlds::new(runtime, &world, topology, inputs, faults)?;
    let mut evaluator = KernelActionEvaluator::with_worlds(scenario, world.clone(), worlds);
    Ok(evaluate(&mut evaluator))
}

/// How to evaluate a scenario with fault steps instead.
const FAULT_FIX: &str =
    "evaluate its adversaries embedded (no --topology) or with --topology local";

/// Why a scenario cannot be evaluated on the nodes of a topology file, if
/// it cannot: its fault steps (see [`evaluate_on`]).
fn fault_refusal(scenario: &Scenario) -> Option<String> {
    scenario.fault_steps().next().map(|fault| {
        format!(
            "scenario {} declares fault steps (the first: {}), which need processes the controller owns; a topology file names processes it did not start",
            scenario.id(),
            fault.describe()
        )
    })
}

/// Refuses a scenario with fault steps for evaluation on nodes this
/// controller did not start.
pub fn refuse_faults(scenario: &Scenario) -> Result<(), NodeError> {
    match fault_refusal(scenario) {
        Some(problem) => Err(NodeError::Config {
            problem,
            fix: FAULT_FIX,
        }),
        None => Ok(()),
    }
}

/// The same refusal as the command's input error, before anything starts.
fn refuse_faults_for(command: &'static str, scenario: &Scenario) -> Result<(), CliError> {
    match fault_refusal(scenario) {
        Some(problem) => Err(topology_error(command, problem, FAULT_FIX)),
        None => Ok(()),
    }
}

/// Runs `evaluate` with an adversary evaluator on `place`: in process, on
/// a local cluster started for it (and stopped after it), or on the
/// running nodes of a topology file. Every batch reuses the same processes.
pub fn evaluate_with_topology<T>(
    command: &'static str,
    place: &RunTopology,
    scenario: &Scenario,
    inputs: &RunInputs,
    evaluate: impl FnOnce(&mut dyn ActionEvaluator) -> T,
) -> Result<T, CliError> {
    let node_error = |e: NodeError| CliError::node(command, &e);
    match place {
        RunTopology::Embedded => {
            let mut evaluator =
                KernelActionEvaluator::new(scenario, &inputs.fixtures).map_err(node_error)?;
            Ok(evaluate(&mut evaluator))
        }
        RunTopology::Local => {
            let chio = running_chio().map_err(|e| CliError::infrastructure(command, e))?;
            evaluate_on_local(&chio, scenario, inputs, evaluate).map_err(node_error)
        }
        RunTopology::File(path) => {
            refuse_faults_for(command, scenario)?;
            let topology = Topology::load(command, path)?;
            topology.check_covers(command, &scenario.node_ids())?;
            let runtime = crate::arena_run::runtime(command)?;
            evaluate_on(&runtime, &topology, scenario, inputs, evaluate).map_err(node_error)
        }
    }
}

/// Fresh instances of a world on the nodes of one cluster.
#[derive(Debug)]
pub struct ClusterWorlds<'a> {
    runtime: &'a Runtime,
    topology: &'a Topology,
    inputs: &'a RunInputs,
    /// One client per node, connected (and the authority trusted) once.
    grpc: GrpcTopology,
    link: GrpcLink,
    /// The local cluster fault steps are inflicted on, when the scenario
    /// declares any (its processes are this controller's).
    faults: Option<&'a Mutex<LocalCluster>>,
    /// The current instance's namespace in trust-control.
    run_id: String,
}

impl<'a> ClusterWorlds<'a> {
    /// Instances of `world` on the nodes of `topology`, loaded with
    /// `inputs` and waited for on `runtime`: the processes are reached and
    /// the arena authority trusted here, once; each instance only loads.
    /// With `faults`, fault steps are inflicted on that cluster, whose
    /// topology `topology` is.
    pub fn new(
        runtime: &'a Runtime,
        world: &World,
        topology: &'a Topology,
        inputs: &'a RunInputs,
        faults: Option<&'a Mutex<LocalCluster>>,
    ) -> Result<Self, NodeError> {
        // The clients' channels are made inside the runtime they will use.
        let _entered = runtime.enter();
        let grpc = runtime.block_on(GrpcTopology::connect(world, topology))?;
        let link = GrpcLink::new(
            world,
            &topology.nodes,
            &topology.cluster_token,
            DEFAULT_LINK_DEADLINE,
        )?;
        Ok(Self {
            runtime,
            topology,
            inputs,
            grpc,
            link,
            faults,
            run_id: String::new(),
        })
    }
}

impl Worlds for ClusterWorlds<'_> {
    type Instance<'w>
        = ClusterInstance<'w>
    where
        Self: 'w;

    /// A fresh instance: on a fault cluster, first brought back to health
    /// from whatever the previous batch's faults left (nodes crashed,
    /// links cut, trust-control stalled), then the world loaded on every
    /// node under a fresh run id.
    fn instance<'w>(&'w mut self, world: &'w World) -> Result<ClusterInstance<'w>, NodeError> {
        self.run_id = fresh_run_id();
        self.link = self.link.clone().for_run(&self.run_id);
        let this: &'w Self = self;
        let faults = this.faults.map(|cluster| LocalFaults {
            grpc: &this.grpc,
            cluster,
            topology: this.topology,
            world,
            inputs: this.inputs,
            run_id: &this.run_id,
            stalled: Default::default(),
        });
        if let Some(faults) = &faults {
            this.runtime.block_on(faults.recover())?;
        }
        this.runtime
            .block_on(this.grpc.load(this.inputs, this.topology, &this.run_id))?;
        Ok(ClusterInstance {
            runtime: this.runtime,
            world,
            grpc: &this.grpc,
            link: &this.link,
            faults,
        })
    }
}

/// One batch's instance of the world on the cluster's nodes.
pub struct ClusterInstance<'w> {
    runtime: &'w Runtime,
    world: &'w World,
    grpc: &'w GrpcTopology,
    link: &'w GrpcLink,
    /// The dispatcher that inflicts the batch's fault steps, on a fault
    /// cluster.
    faults: Option<LocalFaults<'w>>,
}

impl std::fmt::Debug for ClusterInstance<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterInstance")
            .field("faults", &self.faults.is_some())
            .finish_non_exhaustive()
    }
}

impl WorldInstance for ClusterInstance<'_> {
    fn dispatcher(&self) -> &dyn Dispatcher {
        match &self.faults {
            Some(faults) => faults,
            None => self.grpc,
        }
    }

    fn complete<T>(
        &self,
        future: impl std::future::Future<Output = Result<T, NodeError>>,
    ) -> Result<T, NodeError> {
        self.runtime.block_on(future)
    }

    fn decide(
        &mut self,
        kernel: &str,
        request: &ToolCallRequest,
        now_ms: u64,
    ) -> Result<Decision, NodeError> {
        let outcome = self
            .runtime
            .block_on(self.link.evaluate(kernel, request.clone(), now_ms))?;
        Ok(outcome.into_decision())
    }

    fn decide_together(
        &mut self,
        kernel: &str,
        requests: &[(ToolCallRequest, u64)],
    ) -> Result<Vec<Decision>, NodeError> {
        let outcomes = self
            .runtime
            .block_on(self.link.evaluate_together(kernel, requests))?;
        Ok(outcomes.into_iter().map(|o| o.into_decision()).collect())
    }

    fn change_file(
        &mut self,
        server: &str,
        path: &str,
        change: FileChange,
    ) -> Result<Option<String>, NodeError> {
        let node = self
            .world
            .server_kernel(server)
            .and_then(|kernel| self.world.kernel_node(kernel))
            .ok_or_else(|| NodeError::Unroutable(format!("server {server}")))?;
        self.runtime
            .block_on(self.grpc.change_fixture(node, server, path, change))
    }
}
