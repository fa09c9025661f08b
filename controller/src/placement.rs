//! Where the runs of an experiment execute: the embedded topology, local
//! clusters the controller starts and reuses from run to run, or the
//! running nodes of a topology file.
//!
//! `chio arena matrix --topology local|FILE` and a cell's declared
//! `topology` both end here. A run on a local cluster takes an idle cluster
//! of the same node set from the pool (starting one when none is idle),
//! loads its world with a fresh run id, and gives the cluster back when the
//! run did not fail as infrastructure; so a matrix starts at most as many
//! clusters as it runs at once, not one per run. A scenario with fault
//! steps gets a cluster of its own, stopped after the run, because its
//! faults kill, pause and cut that cluster's processes. Runs on a topology
//! file share one set of nodes, which host one world at a time, so they go
//! one at a time, and a scenario with fault steps is refused there as
//! `chio arena run` refuses it.
//!
//! The adversary part of a run goes to the same place
//! ([`RunPlaces::evaluate`], `crate::cluster_worlds`): its batches load
//! their worlds on the same pooled cluster or topology file's nodes. A
//! scenario with fault steps is evaluated on a local cluster of its own,
//! whose processes each batch's faults are inflicted on, and is refused on
//! a topology file's nodes, as its run is.
//!
//! The place never reaches an output: by the determinism contract a run's
//! bundle, and so its measurements, are the same bytes on every topology.

use std::sync::Mutex;

use chio_adversary::fitness::ActionEvaluator;
use chio_arena::Scenario;
use chio_node::NodeError;

use crate::cli::RunTopology;
use crate::cluster_worlds::{evaluate_on, evaluate_on_local, evaluate_with_topology};
use crate::driver::{ReadBack, RunInputs, RunOptions, RunResult, RunStatus};
use crate::error::CliError;
use crate::local_cluster::{running_chio, LocalCluster};
use crate::topology::{run_distributed, run_with_topology, Topology};

/// An idle local cluster and the node set it was started for.
type Idle = (Vec<String>, LocalCluster);

/// Where runs go: the default place, and what it takes to reach it.
#[derive(Debug)]
pub struct RunPlaces {
    command: &'static str,
    default: RunTopology,
    /// The topology file's nodes, when the default is one, checked before
    /// the runs.
    file: Option<Topology>,
    /// One run at a time on the topology file's nodes.
    file_turn: Mutex<()>,
    /// Local clusters between runs.
    idle: Mutex<Vec<Idle>>,
}

/// An experiment run records every step, whatever its verdict, pipelined.
fn keep_going() -> RunOptions {
    RunOptions::keep_going(true)
}

impl RunPlaces {
    /// Runs of `command` go to `default` unless a cell declares its own
    /// topology; a topology file is read and checked now, so a bad one is
    /// refused before anything runs.
    pub fn new(command: &'static str, default: RunTopology) -> Result<Self, CliError> {
        let file = match &default {
            RunTopology::File(path) => Some(Topology::load(command, path)?),
            RunTopology::Embedded | RunTopology::Local => None,
        };
        Ok(Self {
            default,
            file,
            ..Self::embedded(command)
        })
    }

    /// Every run of `command` in the embedded topology.
    pub fn embedded(command: &'static str) -> Self {
        Self {
            command,
            default: RunTopology::Embedded,
            file: None,
            file_turn: Mutex::new(()),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Refuses, before anything runs, a scenario the default place cannot
    /// host: a topology file without an address for one of its nodes.
    pub fn check(&self, scenario: &Scenario) -> Result<(), CliError> {
        match &self.file {
            Some(topology) => topology.check_covers(self.command, &scenario.node_ids()),
            None => Ok(()),
        }
    }

    /// The place of a run: `declared` (a cell's `embedded` or `local`)
    /// when given, else the default.
    fn place(&self, declared: Option<&str>) -> RunTopology {
        match declared {
            Some("local") => RunTopology::Local,
            Some("embedded") => RunTopology::Embedded,
            _ => self.default.clone(),
        }
    }

    /// Runs `scenario` to the end (`keep_going`) where `declared` or the
    /// default says; an `Err` is an infrastructure failure of the attempt.
    /// A local run without fault steps takes a pooled cluster; every other
    /// run goes the way `chio arena run` sends it ([`run_with_topology`]),
    /// one at a time on a topology file's nodes, which host one world at a
    /// time.
    pub fn run(
        &self,
        declared: Option<&str>,
        scenario: &Scenario,
        inputs: &RunInputs,
    ) -> Result<RunResult, String> {
        let place = self.place(declared);
        let pooled = place == RunTopology::Local && scenario.fault_steps().next().is_none();
        let result = if pooled {
            self.run_pooled(scenario, inputs)
        } else {
            let _turn = match place {
                RunTopology::File(_) => Some(
                    self.file_turn
                        .lock()
                        .map_err(|_| "a run on the topology file's nodes panicked".to_string())?,
                ),
                RunTopology::Embedded | RunTopology::Local => None,
            };
            let scratch = ReadBack::new().map_err(|e| e.to_string())?;
            let out = scratch.out();
            let run = run_with_topology(self.command, &place, scenario, inputs, keep_going(), out)
                .map_err(|e| e.to_string())?;
            scratch.bundle(run)
        };
        result.map_err(|e| e.to_string())
    }

    /// A run on an idle local cluster of the scenario's node set, started
    /// when none is idle and kept for the next run unless this one failed
    /// as infrastructure.
    fn run_pooled(&self, scenario: &Scenario, inputs: &RunInputs) -> Result<RunResult, NodeError> {
        let runtime = current_thread()?;
        let nodes = scenario.node_ids();
        let cluster = self.take_cluster(&nodes)?;
        let scratch = ReadBack::new()?;
        let run = runtime.block_on(run_distributed(
            scenario,
            inputs,
            cluster.topology(),
            "local",
            keep_going(),
            false,
            scratch.out(),
        ));
        let result = scratch.bundle(run);
        let healthy = matches!(&result, Ok(run) if run.status != RunStatus::InfrastructureFailure);
        if healthy {
            self.give_back(nodes, cluster)?;
        }
        result
    }

    /// Runs `evaluate` with an adversary evaluator whose worlds live where
    /// the runs of `declared` (or the default) go: in process, on a pooled
    /// local cluster (given back unless the evaluation failed), or on the
    /// topology file's nodes, one evaluation or run at a time.
    pub fn evaluate<T, E: std::fmt::Display>(
        &self,
        declared: Option<&str>,
        scenario: &Scenario,
        inputs: &RunInputs,
        evaluate: impl FnOnce(&mut dyn ActionEvaluator) -> Result<T, E>,
    ) -> Result<T, String> {
        let flatten = |evaluated: Result<Result<T, E>, NodeError>| match evaluated {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match self.place(declared) {
            RunTopology::Embedded => {
                let evaluated = evaluate_with_topology(
                    self.command,
                    &RunTopology::Embedded,
                    scenario,
                    inputs,
                    evaluate,
                )
                .map_err(|e| e.to_string())?;
                evaluated.map_err(|e| e.to_string())
            }
            RunTopology::Local if scenario.fault_steps().next().is_some() => {
                // Its faults kill, pause and cut processes: a cluster of
                // its own, stopped after the evaluation.
                let chio = running_chio().map_err(|problem| problem.to_string())?;
                flatten(evaluate_on_local(&chio, scenario, inputs, evaluate))
            }
            RunTopology::Local => {
                let runtime = current_thread().map_err(|e| e.to_string())?;
                let nodes = scenario.node_ids();
                let cluster = self.take_cluster(&nodes).map_err(|e| e.to_string())?;
                let evaluated =
                    evaluate_on(&runtime, cluster.topology(), scenario, inputs, evaluate);
                let healthy = matches!(&evaluated, Ok(Ok(_)));
                if healthy {
                    self.give_back(nodes, cluster).map_err(|e| e.to_string())?;
                }
                flatten(evaluated)
            }
            RunTopology::File(_) => {
                let topology = self
                    .file
                    .as_ref()
                    .ok_or_else(|| "the topology file was not read before the runs".to_string())?;
                let _turn = self
                    .file_turn
                    .lock()
                    .map_err(|_| "a run on the topology file's nodes panicked".to_string())?;
                let runtime = current_thread().map_err(|e| e.to_string())?;
                flatten(evaluate_on(&runtime, topology, scenario, inputs, evaluate))
            }
        }
    }

    /// An idle local cluster of node set `nodes` from the pool, or a new one.
    fn take_cluster(&self, nodes: &[String]) -> Result<LocalCluster, NodeError> {
        let taken = {
            let mut idle = self.idle.lock().map_err(|_| poisoned())?;
            idle.iter()
                .position(|(set, _)| set == nodes)
                .map(|i| idle.swap_remove(i).1)
        };
        match taken {
            Some(cluster) => Ok(cluster),
            None => {
                let chio = running_chio().map_err(|problem| NodeError::Config {
                    problem,
                    fix: "run chio from a readable path",
                })?;
                LocalCluster::start(&chio, nodes, false, None)
            }
        }
    }

    /// Puts a healthy cluster back in the pool for the next run.
    fn give_back(&self, nodes: Vec<String>, cluster: LocalCluster) -> Result<(), NodeError> {
        self.idle
            .lock()
            .map_err(|_| poisoned())?
            .push((nodes, cluster));
        Ok(())
    }
}

/// A runtime for one pooled run or evaluation, driven from its thread.
fn current_thread() -> Result<tokio::runtime::Runtime, NodeError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| NodeError::Config {
            problem: format!("cannot start the async runtime: {e}"),
            fix: "raise the process's thread or file limits",
        })
}

fn poisoned() -> NodeError {
    NodeError::Config {
        problem: "a run on a pooled local cluster panicked".to_string(),
        fix: "rerun the matrix; report the panic with its log",
    }
}
