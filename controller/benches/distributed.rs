//! Distributed benchmark (issue 5, acceptance 5): a 10,000-step scenario
//! across three local node processes and trust-control (`--topology local`
//! as `chio arena run` starts it), against a bare tonic unary echo between
//! two processes measured in the same invocation.
//!
//! The scenario has three agents on three nodes, each reading a workspace
//! served by the kernel of the next node, so every step is a controller to
//! node call, a node to node `KernelLink` evaluation and the serving
//! kernel's trust-control calls (revocation lookup, durable receipt append).
//! Steps are sent one at a time (`--one-at-a-time`), and each step's
//! latency is timed around the controller's dispatch. The echo
//! server is this benchmark binary re-executed as a child process
//! (`CHIO_BENCH_ROLE=echo-server`), so both round trips cross a process
//! boundary on loopback with `TCP_NODELAY` on both ends.
//!
//! A third measure in the same invocation is the floor the contracts set
//! under a cross-node step (`docs/topology.md`): four sequential echo
//! round trips (controller to node, node to node, the kernel's two
//! trust-control batches) and two durable SQLite commits (WAL,
//! `synchronous=FULL`: the seen request id and holds before dispatch, the
//! receipt before the allow is released), with no kernel at all. The step
//! is printed against both the echo and that floor.
//!
//! Run: `cargo bench -p chio-controller --bench distributed`
//! (`CHIO_BENCH_STEPS` changes the step count). Node scaling:
//! `CHIO_BENCH_NODES=1,2,4,8` runs the same scenario shape over each number
//! of node processes (one agent, kernel and workspace per node, each agent
//! reading the next node's workspace) and prints one row per count; the
//! default is 3.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chio_controller::arena_run::load_for_run;
use chio_controller::driver::{
    run_schedule, DispatchMode, Dispatcher, ReadBack, RunOptions, RunStatus,
};
use chio_controller::local_cluster::LocalCluster;
use chio_controller::topology::{fresh_run_id, GrpcTopology};
use chio_node::link::LinkFuture;
use chio_node::outage::Refusal;
use chio_node::{
    CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, MessageCommand, MessageOutcome,
    World,
};
use chio_proto::bench::v1::echo_client::EchoClient;
use chio_proto::bench::v1::echo_server::{Echo, EchoServer};
use chio_proto::bench::v1::EchoMessage;

const ROLE_ENV: &str = "CHIO_BENCH_ROLE";
/// A scenario of `nodes` logical nodes, one kernel, one workspace and one
/// agent each; agent `i` reads the workspace served by node `i + 1`, so every
/// call crosses to another node process when there is more than one.
fn scenario_text(steps: usize, nodes: usize) -> String {
    let mut s = String::from(
        "schema_version = \"chio.arena.scenario/v1\"\nid = \"distributed_bench\"\ntitle = \"cross-node reads for the distributed benchmark\"\nrng_seed = 5\nvirtual_clock_start = \"2026-01-01T00:00:00.000Z\"\n\n[determinism]\nrng_seed = 5\nvirtual_clock_start = \"2026-01-01T00:00:00.000Z\"\nscheduler = \"deterministic-multi-v1\"\nlocale = \"C\"\n\n",
    );
    for n in 0..nodes {
        writeln!(s, "[[nodes]]\nid = \"node-{n}\"\n\n[[kernels]]\nid = \"kernel-{n}\"\nnode = \"node-{n}\"\n\n[[servers]]\nid = \"workspace-{n}\"\nkernel = \"kernel-{n}\"\nkind = \"workspace\"\nfixtures = \"fixtures/ws\"\n").unwrap();
    }
    for n in 0..nodes {
        let server = (n + 1) % nodes;
        writeln!(s, "[[agents]]\nid = \"agent-{n}\"\nrole = \"reader\"\nmodel = \"recorded:agent\"\nseed_prompt_ref = \"prompts/agent.txt\"\nkernel = \"kernel-{n}\"\n\n[[grants]]\nid = \"agent-{n}-read\"\nagent = \"agent-{n}\"\nserver = \"workspace-{server}\"\ntools = [\"read_file\"]\npath_prefix = \"/workspace/\"\n").unwrap();
    }
    for i in 0..steps {
        let agent = i % nodes;
        let server = (agent + 1) % nodes;
        writeln!(s, "[[steps]]\nid = \"s{i:06}\"\nagent = \"agent-{agent}\"\nserver = \"workspace-{server}\"\ntool = \"read_file\"\narguments = {{ path = \"/workspace/notes.txt\" }}\nexpect_verdict = \"allow\"\n").unwrap();
    }
    s
}

/// Times every dispatched action of the wrapped dispatcher.
struct Timed<'a> {
    inner: &'a GrpcTopology,
    samples: Mutex<Vec<Duration>>,
}

impl Timed<'_> {
    fn record(&self, took: Duration) {
        if let Ok(mut samples) = self.samples.lock() {
            samples.push(took);
        }
    }
}

impl Dispatcher for Timed<'_> {
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallAnswer> {
        let node = node.to_string();
        Box::pin(async move {
            let began = Instant::now();
            let outcome = self.inner.call(&node, command).await;
            self.record(began.elapsed());
            outcome
        })
    }

    fn delegate(
        &self,
        node: &str,
        command: DelegateCommand,
    ) -> LinkFuture<'_, Result<DelegateOutcome, Refusal>> {
        self.inner.delegate(node, command)
    }

    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, Option<Refusal>> {
        self.inner.revoke(node, target, at_ms)
    }

    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome> {
        self.inner.message(node, command)
    }
}

struct EchoService;

#[tonic::async_trait]
impl Echo for EchoService {
    async fn echo(
        &self,
        request: tonic::Request<EchoMessage>,
    ) -> Result<tonic::Response<EchoMessage>, tonic::Status> {
        Ok(tonic::Response::new(request.into_inner()))
    }
}

/// The child role: serve Echo on loopback, print the address, run until killed.
fn serve_echo() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("listening on {}", listener.local_addr().expect("addr"));
        let incoming = async_stream(listener);
        tonic::transport::Server::builder()
            .tcp_nodelay(true)
            .add_service(EchoServer::new(EchoService))
            .serve_with_incoming(incoming)
            .await
            .expect("serve");
    });
}

fn async_stream(
    listener: tokio::net::TcpListener,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    use tokio_stream::StreamExt;
    tokio_stream::wrappers::TcpListenerStream::new(listener).map(|accepted| {
        accepted.inspect(|stream| {
            let _ = stream.set_nodelay(true);
        })
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Latencies of one run of the scenario over `nodes` node processes.
struct ClusterRun {
    nodes: usize,
    elapsed: Duration,
    samples: Vec<Duration>,
}

fn run_cluster(runtime: &tokio::runtime::Runtime, steps: usize, nodes: usize) -> ClusterRun {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("prompts")).unwrap();
    std::fs::create_dir_all(dir.path().join("fixtures/ws")).unwrap();
    std::fs::write(dir.path().join("prompts/agent.txt"), "read notes\n").unwrap();
    std::fs::write(dir.path().join("fixtures/ws/notes.txt"), "notes\n").unwrap();
    let file = dir.path().join("bench.toml");
    std::fs::write(&file, scenario_text(steps, nodes)).unwrap();
    let (scenario, inputs) = load_for_run("bench", &file).expect("scenario loads");
    let world = World::resolve(&scenario, &inputs.fixtures).expect("world");
    let cluster = LocalCluster::start(
        std::path::Path::new(env!("CARGO_BIN_EXE_chio")),
        &world.nodes,
        false,
        None,
    )
    .expect("local cluster starts");
    let (elapsed, mut samples) = runtime.block_on(async {
        let grpc = GrpcTopology::prepare(&world, &inputs, cluster.topology(), &fresh_run_id())
            .await
            .expect("nodes load the world");
        let timed = Timed {
            inner: &grpc,
            samples: Mutex::new(Vec::with_capacity(steps)),
        };
        let began = Instant::now();
        // One step in flight at a time: a step's latency is what is compared
        // with one echo round trip (throughput with steps in flight together
        // is the pipeline benchmark's).
        let options = RunOptions {
            keep_going: false,
            dispatch: DispatchMode::OneAtATime,
        };
        let scratch = ReadBack::new().expect("a temporary folder");
        let run = run_schedule(&scenario, &world, &inputs, &timed, options, scratch.out()).await;
        let result = scratch.bundle(run).expect("run");
        let elapsed = began.elapsed();
        assert_eq!(
            result.status,
            RunStatus::Passed,
            "{:?}",
            result.bundle.manifest.stopped
        );
        grpc.shutdown().await;
        (elapsed, timed.samples.into_inner().unwrap())
    });
    drop(cluster);
    samples.sort();
    ClusterRun {
        nodes,
        elapsed,
        samples,
    }
}

/// Starts this benchmark binary as the echo server; the child and its address.
fn spawn_echo() -> (std::process::Child, String) {
    let mut child = Command::new(std::env::current_exe().expect("bench binary"))
        .env(ROLE_ENV, "echo-server")
        .stdout(Stdio::piped())
        .spawn()
        .expect("echo server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .expect("echo address")
        .to_string();
    (child, addr)
}

/// A client of the echo at `addr`, warmed up with 200 calls.
async fn echo_client(addr: &str) -> EchoClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .tcp_nodelay(true)
        .connect()
        .await
        .expect("echo connects");
    let mut client = EchoClient::new(channel);
    for _ in 0..200 {
        echo_once(&mut client).await;
    }
    client
}

/// One unary echo of a 512-byte payload.
async fn echo_once(client: &mut EchoClient<tonic::transport::Channel>) {
    client
        .echo(EchoMessage {
            payload: vec![7u8; 512],
        })
        .await
        .unwrap();
}

/// `steps` sequential tonic unary echo calls (512-byte payload, after 200
/// warm-up calls) to a child process serving the echo; each call's latency.
fn measure_echo(runtime: &tokio::runtime::Runtime, steps: usize) -> Vec<Duration> {
    let (mut child, addr) = spawn_echo();
    let echo = runtime.block_on(async {
        let mut client = echo_client(&addr).await;
        let mut echo = Vec::with_capacity(steps);
        for _ in 0..steps {
            let began = Instant::now();
            echo_once(&mut client).await;
            echo.push(began.elapsed());
        }
        echo
    });
    let _ = child.kill();
    let _ = child.wait();
    echo
}

/// Round trips a cross-node step must make one after another: controller
/// to the agent's node, that node to the kernel's node, and the kernel's
/// two trust-control batches (before dispatch, and the receipt before the
/// allow is released).
const FLOOR_HOPS: usize = 4;
/// Durable commits a cross-node step must wait for one after another: the
/// seen request id and holds before dispatch, the receipt after it.
const FLOOR_COMMITS: usize = 2;

/// The floor the contracts set under a cross-node step, measured: per
/// step, [`FLOOR_HOPS`] sequential echo round trips to a child process and
/// [`FLOOR_COMMITS`] one-row SQLite transactions (WAL,
/// `synchronous=FULL`, a file in a fresh temporary folder), with no
/// signing, no kernel and no scenario. Answers each step's latency.
fn measure_floor(runtime: &tokio::runtime::Runtime, steps: usize) -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("temporary folder");
    let db = rusqlite::Connection::open(dir.path().join("floor.db")).expect("database");
    db.pragma_update(None, "journal_mode", "WAL").expect("WAL");
    db.pragma_update(None, "synchronous", "FULL")
        .expect("synchronous=FULL");
    db.execute(
        "CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB NOT NULL)",
        [],
    )
    .expect("table");
    let body = vec![9u8; 512];
    let (mut child, addr) = spawn_echo();
    let floor = runtime.block_on(async {
        let mut client = echo_client(&addr).await;
        let mut floor = Vec::with_capacity(steps);
        for _ in 0..steps {
            let began = Instant::now();
            for _ in 0..FLOOR_HOPS {
                echo_once(&mut client).await;
            }
            for _ in 0..FLOOR_COMMITS {
                db.execute("INSERT INTO rows (body) VALUES (?1)", [&body])
                    .expect("durable insert");
            }
            floor.push(began.elapsed());
        }
        floor
    });
    let _ = child.kill();
    let _ = child.wait();
    floor
}

fn main() {
    if std::env::var(ROLE_ENV).as_deref() == Ok("echo-server") {
        serve_echo();
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let steps: usize = std::env::var("CHIO_BENCH_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let node_counts: Vec<usize> = std::env::var("CHIO_BENCH_NODES")
        .unwrap_or_else(|_| "3".to_string())
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("CHIO_BENCH_NODES lists node counts")
        })
        .collect();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    // 1. The scenario across each number of node processes and trust-control.
    let runs: Vec<ClusterRun> = node_counts
        .iter()
        .map(|&nodes| run_cluster(&runtime, steps, nodes))
        .collect();
    // 2. The bare echo between this process and a child process.
    let mut echo = measure_echo(&runtime, steps);
    echo.sort();
    // 3. The floor the contracts set: the step's hops and commits, bare.
    let mut floor = measure_floor(&runtime, steps);
    floor.sort();
    let floor_mean: Duration = floor.iter().sum::<Duration>() / steps as u32;

    let echo_mean: Duration = echo.iter().sum::<Duration>() / steps as u32;
    println!("distributed benchmark: {steps} steps per run, node processes + trust-control (SQLite WAL, synchronous=FULL), loopback");
    println!("| measure | steps/s or calls/s | mean µs | p50 µs | p90 µs | p99 µs | max µs | p50 vs echo |");
    println!("|---|---|---|---|---|---|---|---|");
    let row = |name: String, rate: f64, mean: Duration, sorted: &[Duration]| {
        println!(
            "| {name} | {rate:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1}x |",
            micros(mean),
            micros(percentile(sorted, 0.5)),
            micros(percentile(sorted, 0.9)),
            micros(percentile(sorted, 0.99)),
            micros(*sorted.last().unwrap()),
            percentile(sorted, 0.5).as_secs_f64() / percentile(&echo, 0.5).as_secs_f64(),
        );
    };
    for run in &runs {
        row(
            format!("scenario step, {} node(s)", run.nodes),
            steps as f64 / run.elapsed.as_secs_f64(),
            run.elapsed / steps as u32,
            &run.samples,
        );
    }
    row(
        "tonic echo".to_string(),
        1.0 / echo_mean.as_secs_f64(),
        echo_mean,
        &echo,
    );
    row(
        format!("contract floor: {FLOOR_HOPS} echoes + {FLOOR_COMMITS} durable commits"),
        1.0 / floor_mean.as_secs_f64(),
        floor_mean,
        &floor,
    );
    for run in &runs {
        let step_mean = run.elapsed / steps as u32;
        println!(
            "{} node(s): ratio step/echo mean {:.1}x, p50 {:.1}x, p99 {:.1}x (goal: within 4x)",
            run.nodes,
            step_mean.as_secs_f64() / echo_mean.as_secs_f64(),
            percentile(&run.samples, 0.5).as_secs_f64() / percentile(&echo, 0.5).as_secs_f64(),
            percentile(&run.samples, 0.99).as_secs_f64() / percentile(&echo, 0.99).as_secs_f64(),
        );
        println!(
            "{} node(s): ratio step/contract floor p50 {:.2}x (the floor itself is {:.1}x the echo)",
            run.nodes,
            percentile(&run.samples, 0.5).as_secs_f64() / percentile(&floor, 0.5).as_secs_f64(),
            percentile(&floor, 0.5).as_secs_f64() / percentile(&echo, 0.5).as_secs_f64(),
        );
    }
}
