//! What the in-process run adds to a kernel decision: an embedded run of a
//! cross-kernel scenario (8 nodes with one kernel each, 32 agents, every
//! agent calling a workspace served by the next node's kernel) against a
//! bare `Kernel::evaluate` of the same calls, measured in the same process.
//!
//! After one untimed round, each round runs the scenario once through the
//! driver `chio arena run` uses (the bundle streamed into a temporary
//! folder), then decides the
//! same calls with bare kernels: one `Kernel` per declared kernel over the
//! kernel crate's in-memory authority, each call signed beforehand by its
//! agent and dispatched to a `ToolServer` seeded as the run seeds it, so
//! the bare side pays verification, the guards, the tool and the signed
//! receipt, and none of the run's hops (agent and kernel actors, links,
//! trust-control's store, the bundle). Rounds alternate so load that
//! changes during the run weighs on both sides. The figure is the cost of
//! a run's step over the cost of a bare decision, and, beside it, over a
//! bare decision plus the agent's signature.
//!
//! Run: `cargo bench -p chio-controller --bench hops` (`CHIO_HOPS_STEPS`,
//! default 4,000 steps a round; `CHIO_HOPS_ROUNDS`, default 5).

use std::collections::BTreeMap;

// The allocator the `chio` binary runs with, so the run measured here
// allocates as `chio arena run` does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fmt::Write as _;
use std::time::Instant;

use chio_arena::{load_scenario, Action};
use chio_kernel::kernel::Kernel;
use chio_kernel::request::{RequestProof, ToolCallRequest};
use chio_kernel::stores::KernelStores;
use chio_node::tools::ToolServer;
use chio_node::world::World;

const NODES: usize = 8;
const AGENTS: usize = 32;

fn scenario_text(steps: usize) -> String {
    let mut s = String::new();
    writeln!(
        s,
        "schema_version = \"chio.arena.scenario/v1\"\nid = \"hops\"\ntitle = \"hops benchmark\"\nrng_seed = 11\nvirtual_clock_start = \"2026-01-01T00:00:00.000Z\"\n\n[determinism]\nrng_seed = 11\nvirtual_clock_start = \"2026-01-01T00:00:00.000Z\"\nscheduler = \"deterministic-multi-v1\"\nlocale = \"C\"\n"
    )
    .unwrap();
    writeln!(s, "[[guards]]\nid = \"no-dotfiles\"\nkind = \"forbidden-path\"\n\n[guards.config]\nglobs = [\"**/.env\"]\n").unwrap();
    for k in 0..NODES {
        writeln!(
            s,
            "[[nodes]]\nid = \"node-{k}\"\n\n[[kernels]]\nid = \"kernel-{k}\"\nnode = \"node-{k}\"\nguards = [\"no-dotfiles\"]\n\n[[servers]]\nid = \"ws-{k}\"\nkernel = \"kernel-{k}\"\nkind = \"workspace\"\nfixtures = \"fixtures\"\n"
        )
        .unwrap();
    }
    for a in 0..AGENTS {
        let home = a % NODES;
        let served = (home + 1) % NODES;
        writeln!(
            s,
            "[[agents]]\nid = \"agent-{a:02}\"\nrole = \"worker\"\nmodel = \"recorded:worker\"\nseed_prompt_ref = \"prompts/worker.txt\"\nkernel = \"kernel-{home}\"\n\n[[grants]]\nid = \"grant-{a:02}\"\nagent = \"agent-{a:02}\"\nserver = \"ws-{served}\"\ntools = [\"read_file\"]\npath_prefix = \"/workspace/\"\n"
        )
        .unwrap();
    }
    for i in 0..steps {
        let a = i % AGENTS;
        let served = (a % NODES + 1) % NODES;
        writeln!(
            s,
            "[[steps]]\nid = \"s{i:06}\"\nagent = \"agent-{a:02}\"\nserver = \"ws-{served}\"\ntool = \"read_file\"\narguments = {{ path = \"/workspace/notes.txt\" }}\nexpect_verdict = \"allow\"\n"
        )
        .unwrap();
    }
    s
}

/// One call of the schedule as a bare kernel decides it.
struct BareCall {
    kernel: String,
    server: String,
    request: ToolCallRequest,
}

/// The schedule's calls, as their agents would sign them.
fn bare_calls(scenario: &chio_arena::Scenario, world: &World, round: usize) -> Vec<BareCall> {
    (0..scenario.step_count())
        .map(|i| {
            let step = scenario.step(i).expect("the step reads").into_owned();
            let Action::Call(call) = &step.action else {
                panic!("every step is a call");
            };
            let grant = call.capability.clone().expect("resolved capability");
            let (_, token) = world.grants.get(&grant).expect("grant").clone();
            let agent = &step.head.agent;
            let key = &world.agents[agent].key;
            let request = ToolCallRequest {
                request_id: format!("bare-{round}-{i}"),
                capability: token,
                server: call.server.clone(),
                tool: call.tool.clone(),
                arguments: call.arguments.clone(),
                agent_id: agent.clone(),
                session_id: agent.clone(),
                issued_at_ms: world.start_ms,
                proof: RequestProof::default(),
                sealed: Vec::new(),
                argument_sources: Vec::new(),
            };
            BareCall {
                kernel: world
                    .server_kernel(&call.server)
                    .expect("served")
                    .to_string(),
                server: call.server.clone(),
                request: request.sign(key).expect("signs"),
            }
        })
        .collect()
}

/// Decides `calls` with fresh bare kernels and servers; the seconds taken.
fn decide_bare(world: &World, calls: &[BareCall]) -> f64 {
    let mut kernels: BTreeMap<&str, Kernel> = world
        .kernels
        .iter()
        .map(|(id, plan)| {
            let kernel = Kernel::new(plan.config.clone(), KernelStores::in_memory());
            (id.as_str(), kernel.expect("kernel"))
        })
        .collect();
    let mut servers: BTreeMap<&str, ToolServer> = world
        .servers
        .iter()
        .map(|(id, plan)| (id.as_str(), ToolServer::new(id, plan.config.clone())))
        .collect();
    let started = Instant::now();
    for call in calls {
        let kernel = kernels.get_mut(call.kernel.as_str()).expect("kernel");
        let server = servers.get_mut(call.server.as_str()).expect("server");
        let decision = kernel.evaluate(&call.request, world.start_ms, &mut |admitted| {
            Ok(server.answer(admitted))
        });
        assert!(
            decision.verdict == chio_kernel::Verdict::Allow,
            "{:?}",
            decision.reason
        );
    }
    started.elapsed().as_secs_f64()
}

/// Signs `calls` again as their agents; the seconds taken.
fn sign_again(world: &World, calls: &[BareCall]) -> f64 {
    let started = Instant::now();
    for call in calls {
        let key = &world.agents[&call.request.agent_id].key;
        let signed = call.request.clone().sign(key).expect("signs");
        assert_eq!(signed.proof, call.request.proof);
    }
    started.elapsed().as_secs_f64()
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let steps = env_usize("CHIO_HOPS_STEPS", 4_000);
    let rounds = env_usize("CHIO_HOPS_ROUNDS", 5);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("fixtures")).unwrap();
    std::fs::write(dir.path().join("fixtures/notes.txt"), "hops notes\n").unwrap();
    let file = dir.path().join("hops.toml");
    std::fs::write(&file, scenario_text(steps)).unwrap();
    let scenario = load_scenario(&file).expect("generated scenario validates");
    let inputs = chio_controller::driver::RunInputs::load(&scenario).unwrap();
    let world = World::resolve(&scenario, scenario.fixture_set()).expect("world resolves");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("hops: {NODES} nodes, {AGENTS} agents, every call served by the next node's kernel, {steps} steps a round, {rounds} rounds, embedded topology");
    let (mut run_s, mut bare_s, mut sign_s) = (0.0, 0.0, 0.0);
    // One untimed round first: what a process does once (the injection
    // reader's compiled rules, its reading of the tool definitions) is
    // paid there, by neither side of the timed rounds.
    for round in 0..=rounds {
        let out = dir.path().join(format!("bundle-{round}"));
        let started = Instant::now();
        let result = runtime
            .block_on(chio_controller::driver::run_embedded(
                &scenario,
                &inputs,
                chio_controller::driver::RunOptions::keep_going(false),
                &BTreeMap::new(),
                &out,
            ))
            .expect("run completes")
            .expect("bundle is written");
        let run = started.elapsed().as_secs_f64();
        assert_eq!(result.bundle.manifest.receipt_count as usize, steps);
        assert!(result.bundle.manifest.mismatches.is_empty());
        let calls = bare_calls(&scenario, &world, round);
        let (bare, sign) = (decide_bare(&world, &calls), sign_again(&world, &calls));
        if round > 0 {
            run_s += run;
            bare_s += bare;
            sign_s += sign;
        }
    }
    let n = (steps * rounds) as f64;
    let (step_us, bare_us, sign_us) = (run_s / n * 1e6, bare_s / n * 1e6, sign_s / n * 1e6);
    println!("run step:                     {step_us:>9.1} us");
    println!("bare kernel decision:         {bare_us:>9.1} us");
    println!("agent signature:              {sign_us:>9.1} us");
    println!("step / bare decision:         {:>9.2}x", step_us / bare_us);
    println!(
        "step / (bare decision + sign): {:>8.2}x",
        step_us / (bare_us + sign_us)
    );
}
