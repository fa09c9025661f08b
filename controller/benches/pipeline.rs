//! Pipelined against one-at-a-time dispatch, in the same run: trust-control
//! and node processes of the real `chio` binary on loopback, a generated
//! scenario of 32 independent agents spread over the nodes (each agent
//! reads the next node's workspace, so every call crosses to another node
//! process), run once with steps whose footprints do not overlap in flight
//! together and once one step at a time, each on a fresh run id against the
//! same processes. It prints steps per second for both, their ratio, and
//! whether the two bundles are byte-identical (it fails when they are not).
//!
//! Injected delay: this machine's kernel has no `netem` queueing
//! discipline, so the delay is made here, in the benchmark, and nowhere in
//! the product. Every process address (trust-control and each node) is
//! fronted by a forwarding proxy in this process that holds each chunk of
//! bytes, in each direction, for the one-way delay before passing it on in
//! order. The topology names the proxies, and nodes are started with the
//! proxy as their trust-control URL, so every hop (controller to node, node
//! to node, node to trust-control) pays the delay each way. The timer
//! granularity of the runtime is 1 ms, so a held chunk waits at least the
//! delay and rarely up to 1 ms more.
//!
//! Run: `cargo bench -p chio-controller --bench pipeline`.
//! `CHIO_BENCH_NODES` (default `8`) lists node counts, `CHIO_BENCH_DELAY_US`
//! (default `2000`) sets the one-way delay (`0`: no proxy at all),
//! `CHIO_BENCH_AGENTS` (default 32) the agents in all, `CHIO_BENCH_STEPS`
//! (default 512) the steps per run.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use chio_controller::arena_run::load_for_run;
use chio_controller::driver::{
    run_schedule, DispatchMode, ReadBack, RunOptions, RunResult, RunStatus,
};
use chio_controller::topology::{fresh_run_id, GrpcTopology, Topology};
use chio_node::World;
use chio_tests::{many_agent_scenario, serve, write_scenario, Proc, CLUSTER_TOKEN, TRUST_TOKEN};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Copies `from` to `to`, each chunk held for `delay` after it was read.
async fn delayed_pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due.into()).await;
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buffer = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buffer).await {
        if n == 0
            || tx
                .send((Instant::now() + delay, buffer[..n].to_vec()))
                .is_err()
        {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// A proxy on loopback forwarding to `target` with `delay` each way; its address.
async fn delay_proxy(target: String, delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy binds");
    let addr = listener.local_addr().expect("proxy address").to_string();
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let target = target.clone();
            tokio::spawn(async move {
                let Ok(outbound) = TcpStream::connect(&target).await else {
                    return;
                };
                let _ = inbound.set_nodelay(true);
                let _ = outbound.set_nodelay(true);
                let (in_read, in_write) = inbound.into_split();
                let (out_read, out_write) = outbound.into_split();
                tokio::join!(
                    delayed_pump(in_read, out_write, delay),
                    delayed_pump(out_read, in_write, delay)
                );
            });
        }
    });
    addr
}

/// Trust-control, the nodes, and the addresses the run uses for them.
struct Cluster {
    dir: tempfile::TempDir,
    _procs: Vec<Proc>,
    topology: Topology,
}

/// Starts trust-control and `nodes` nodes, fronted by proxies when `delay`
/// is not zero (the proxies run on `proxies`).
fn start_cluster(proxies: &tokio::runtime::Runtime, nodes: usize, delay: Duration) -> Cluster {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path();
    std::fs::write(path.join("cluster.token"), CLUSTER_TOKEN).expect("token file");
    std::fs::write(path.join("trust.token"), format!("{TRUST_TOKEN}\n")).expect("token file");
    let front = |addr: &str| -> String {
        if delay.is_zero() {
            addr.to_string()
        } else {
            proxies.block_on(delay_proxy(addr.to_string(), delay))
        }
    };
    let arg = |p: &Path| p.display().to_string();
    let trust = serve(
        path,
        "trust-control",
        &[
            "trust".into(),
            "serve".into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--db".into(),
            arg(&path.join("trust.db")),
            "--token-file".into(),
            arg(&path.join("trust.token")),
        ],
    );
    let trust_url = format!("http://{}", front(&trust.addr));
    let mut text = format!(
        "cluster_token_file = \"cluster.token\"\n\n[trust_control]\nurl = \"{trust_url}\"\ntoken_file = \"trust.token\"\n\n[nodes]\n"
    );
    let mut procs = vec![trust];
    for n in 0..nodes {
        let name = format!("node-{n}");
        let node = serve(
            path,
            &name,
            &[
                "node".into(),
                "serve".into(),
                "--name".into(),
                name.clone(),
                "--listen".into(),
                "127.0.0.1:0".into(),
                "--cluster-token-file".into(),
                arg(&path.join("cluster.token")),
                "--control-url".into(),
                trust_url.clone(),
                "--control-token-file".into(),
                arg(&path.join("trust.token")),
            ],
        );
        text.push_str(&format!("{name} = \"http://{}\"\n", front(&node.addr)));
        procs.push(node);
    }
    let file = path.join("topology.toml");
    std::fs::write(&file, text).expect("topology file");
    let topology = Topology::load("bench", &file).expect("topology loads");
    Cluster {
        dir,
        _procs: procs,
        topology,
    }
}

/// One mode's run: its result and how long the schedule took.
fn run_mode(
    runtime: &tokio::runtime::Runtime,
    cluster: &Cluster,
    file: &Path,
    dispatch: DispatchMode,
) -> (RunResult, Duration) {
    let (scenario, inputs) = load_for_run("bench", file).expect("scenario loads");
    let world = World::resolve(&scenario, &inputs.fixtures).expect("world");
    runtime.block_on(async {
        let grpc = GrpcTopology::prepare(&world, &inputs, &cluster.topology, &fresh_run_id())
            .await
            .expect("nodes load the world");
        let options = RunOptions {
            keep_going: false,
            dispatch,
        };
        let began = Instant::now();
        let scratch = ReadBack::new().expect("a temporary folder");
        let run = run_schedule(&scenario, &world, &inputs, &grpc, options, scratch.out()).await;
        let result = scratch.bundle(run).expect("run");
        let took = began.elapsed();
        assert_eq!(
            result.status,
            RunStatus::Passed,
            "{:?}",
            result.bundle.manifest.stopped
        );
        (result, took)
    })
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let node_counts: Vec<usize> = std::env::var("CHIO_BENCH_NODES")
        .unwrap_or_else(|_| "8".to_string())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("CHIO_BENCH_NODES lists node counts")
        })
        .collect();
    let delay = Duration::from_micros(env_or("CHIO_BENCH_DELAY_US", 2000));
    let agents: usize = env_or("CHIO_BENCH_AGENTS", 32);
    let steps: usize = env_or("CHIO_BENCH_STEPS", 512);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let proxies = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("proxy runtime");
    println!(
        "pipeline benchmark: {steps} steps, {agents} agents, one-way delay {} µs on every hop, loopback",
        delay.as_micros()
    );
    println!("| nodes | one-at-a-time steps/s | pipelined steps/s | ratio | bundles |");
    println!("|---|---|---|---|---|");
    let mut rows = BTreeMap::new();
    for nodes in node_counts {
        let cluster = start_cluster(&proxies, nodes, delay);
        let per_node = agents.div_ceil(nodes).max(1);
        let file = write_scenario(
            &cluster.dir.path().join("scenario"),
            &many_agent_scenario(nodes, per_node, steps),
            &[("fixtures/ws/notes.txt", "notes\n")],
        );
        let (one, one_took) = run_mode(&runtime, &cluster, &file, DispatchMode::OneAtATime);
        let (piped, piped_took) = run_mode(&runtime, &cluster, &file, DispatchMode::Pipelined);
        let identical = one.bundle == piped.bundle;
        let one_rate = steps as f64 / one_took.as_secs_f64();
        let piped_rate = steps as f64 / piped_took.as_secs_f64();
        println!(
            "| {nodes} | {one_rate:.0} | {piped_rate:.0} | {:.1}x | {} |",
            piped_rate / one_rate,
            if identical {
                "byte-identical"
            } else {
                "DIFFER"
            }
        );
        rows.insert(nodes, identical);
    }
    assert!(
        rows.values().all(|same| *same),
        "a pipelined bundle differs from the one-at-a-time bundle"
    );
}
