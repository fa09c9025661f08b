//! The adversary search on node processes against the same search in
//! process, in the same run: `scenarios/adversaries-two-nodes.toml` evolved
//! with the embedded evaluator, then on a local cluster (trust-control and
//! two node processes of the real `chio` binary on loopback, started once
//! and reused by every batch), alternating for `CHIO_BENCH_ROUNDS` rounds so
//! a change of load weighs on both. It prints actions per second for each,
//! the cost of one batch's fresh world on the cluster (one `LoadWorld` per
//! node), their ratio, and whether the two searches' generation traces are
//! byte-identical (it fails when they are not).
//!
//! A second part does the same for `scenarios/adversaries-during-faults.toml`,
//! whose schedule crashes, restarts and cuts nodes: on a local cluster
//! started for it (`evaluate_on_local`, start included in its time), every
//! batch inflicts those faults on the real processes and the next batch
//! first brings the cluster back to health.
//!
//! Run: `cargo bench -p chio-controller --bench evolve_topology`.
//! `CHIO_BENCH_GENERATIONS` (default 4) sets the generations of each
//! search, `CHIO_BENCH_ROUNDS` (default 2) the rounds.

use std::path::Path;
use std::time::Instant;

use chio_adversary::coevolution::{evolve, EvolutionResult};
use chio_adversary::EvolveConfig;
use chio_arena::Scenario;
use chio_controller::arena_run::load_for_run;
use chio_controller::cluster_worlds::{evaluate_on, evaluate_on_local};
use chio_controller::local_cluster::LocalCluster;
use chio_controller::topology::{fresh_run_id, GrpcTopology};
use chio_kernel::canonical::to_canonical_vec;
use chio_node::evaluator::KernelActionEvaluator;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The canonical bytes of a search's generation trace.
fn trace_bytes(result: &EvolutionResult) -> Vec<u8> {
    to_canonical_vec(&result.trace).expect("the trace is canonical JSON")
}

/// What [`alternate`] measured, summed over its rounds.
struct Timed {
    embedded_secs: f64,
    cluster_secs: f64,
    actions: u64,
    batches: u64,
}

/// Runs `scenario`'s search embedded, then with `on_cluster`, for `rounds`
/// rounds, timing each side and failing when a round's two generation
/// traces differ.
fn alternate(
    scenario: &Scenario,
    config: &EvolveConfig,
    rounds: u32,
    mut on_cluster: impl FnMut(&EvolveConfig) -> EvolutionResult,
) -> Timed {
    let mut timed = Timed {
        embedded_secs: 0.0,
        cluster_secs: 0.0,
        actions: 0,
        batches: 0,
    };
    for round in 0..rounds {
        let mut evaluator = KernelActionEvaluator::load(scenario).expect("world resolves");
        let started = Instant::now();
        let embedded = evolve(scenario, config, &mut evaluator).expect("embedded search");
        timed.embedded_secs += started.elapsed().as_secs_f64();

        let started = Instant::now();
        let cluster = on_cluster(config);
        timed.cluster_secs += started.elapsed().as_secs_f64();

        assert!(
            trace_bytes(&embedded) == trace_bytes(&cluster),
            "round {round}: the search on node processes wrote another trace"
        );
        timed.actions += embedded.actions_evaluated as u64;
        timed.batches += embedded
            .trace
            .iter()
            .map(|generation| generation.samples.len() as u64)
            .sum::<u64>()
            * u64::from(config.fitness_rounds);
    }
    timed
}

fn main() {
    let generations: u32 = env_or("CHIO_BENCH_GENERATIONS", 4);
    let rounds: u32 = env_or("CHIO_BENCH_ROUNDS", 2);
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/adversaries-two-nodes.toml");
    let (scenario, inputs) = load_for_run("bench", &file).expect("the scenario loads");
    let config = EvolveConfig {
        generations,
        ..EvolveConfig::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let cluster = LocalCluster::start(
        Path::new(env!("CARGO_BIN_EXE_chio")),
        &scenario.node_ids(),
        false,
        None,
    )
    .expect("the local cluster starts");

    let timed = alternate(&scenario, &config, rounds, |config| {
        evaluate_on(&runtime, cluster.topology(), &scenario, &inputs, |e| {
            evolve(&scenario, config, e)
        })
        .expect("the cluster hosts the search")
        .expect("search on the cluster")
    });
    let Timed {
        embedded_secs,
        cluster_secs,
        actions,
        batches,
    } = timed;

    // One batch's fresh world alone: LoadWorld on every node, no step, over
    // clients connected once, as the search's batches load theirs.
    let world = chio_node::World::resolve(&scenario, &inputs.fixtures).expect("world");
    let grpc = runtime
        .block_on(GrpcTopology::connect(&world, cluster.topology()))
        .expect("the nodes answer");
    let loads = 20;
    let started = Instant::now();
    for _ in 0..loads {
        runtime
            .block_on(grpc.load(&inputs, cluster.topology(), &fresh_run_id()))
            .expect("the nodes load the world");
    }
    let load_ms = started.elapsed().as_secs_f64() * 1000.0 / f64::from(loads);

    let embedded_rate = actions as f64 / embedded_secs;
    let cluster_rate = actions as f64 / cluster_secs;
    println!(
        "search: {rounds} rounds of {generations} generations, {actions} adversary actions in {batches} batches each way"
    );
    println!("embedded: {embedded_secs:.2} s, {embedded_rate:.0} actions/s");
    println!("local cluster (2 node processes): {cluster_secs:.2} s, {cluster_rate:.0} actions/s");
    println!("fresh world on the cluster (LoadWorld on every node): {load_ms:.1} ms");
    println!(
        "cost of processes (embedded rate / cluster rate): {:.1}x; traces byte-identical",
        embedded_rate / cluster_rate
    );
    drop(cluster);
    faults(&config, rounds);
}

/// The search of the fault scenario in process and on a local cluster
/// whose processes each batch's faults are inflicted on.
fn faults(config: &EvolveConfig, rounds: u32) {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/adversaries-during-faults.toml");
    let (scenario, inputs) = load_for_run("bench", &file).expect("the scenario loads");
    let chio = Path::new(env!("CARGO_BIN_EXE_chio"));
    let Timed {
        embedded_secs,
        cluster_secs,
        actions,
        batches,
    } = alternate(&scenario, config, rounds, |config| {
        evaluate_on_local(chio, &scenario, &inputs, |e| evolve(&scenario, config, e))
            .expect("the cluster hosts the search")
            .expect("search on the cluster")
    });
    let embedded_rate = actions as f64 / embedded_secs;
    let cluster_rate = actions as f64 / cluster_secs;
    println!(
        "fault search: {rounds} rounds of {} generations, {actions} adversary actions in {batches} batches each way, each batch crashing and restarting a node and cutting one from trust-control",
        config.generations
    );
    println!("embedded (simulated faults): {embedded_secs:.2} s, {embedded_rate:.0} actions/s");
    println!(
        "local cluster (faults inflicted, cluster started per round): {cluster_secs:.2} s, {cluster_rate:.0} actions/s, {:.1} ms per batch",
        cluster_secs * 1000.0 / batches as f64
    );
    println!(
        "cost of real faults (embedded rate / cluster rate): {:.1}x; traces byte-identical",
        embedded_rate / cluster_rate
    );
}
