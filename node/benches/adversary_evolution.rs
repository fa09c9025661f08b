//! Evolution overhead: adversary actions evaluated per second during a
//! co-evolution run, against the kernel's bare evaluation rate measured in
//! the same run on the same world (issue 6, acceptance item 5).
//!
//! Bare rate: `Kernel::evaluate` on pre-signed copies of the scenario's
//! first allowed call (distinct request ids), one kernel built from the
//! scenario's world, dispatching to its simulated workspace. Evolution
//! rate: `evolve` over the reference adversary scenario (all four classes),
//! actions evaluated divided by wall time; this includes mutation, request
//! signing, the per-batch world instance and the scenario's own steps. The
//! ratio bare / evolution is the overhead; the goal is under 1.5. The cost
//! per kernel evaluation (evolution wall time over every kernel evaluation
//! it made, operators and the goal oracle's reference detector included)
//! against a bare `Kernel::evaluate` is printed too.
//!
//! Run: `cargo bench -p chio-node --bench adversary_evolution`
//! (`CHIO_BENCH_ROUNDS`, default 5, alternating bare batches and evolutions).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use chio_adversary::{evolve, EvolveConfig};
use chio_arena::{load_scenario, Action};
use chio_kernel::kernel::Kernel;
use chio_kernel::request::{RequestProof, ToolCallRequest};
use chio_node::evaluator::KernelActionEvaluator;
use chio_node::tools::ToolServer;
use chio_node::trust_stores::TrustBinding;
use chio_trust::store::memory::InMemoryTrustStore;

fn main() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/adversaries-reference.toml");
    let scenario = load_scenario(&path).expect("scenario loads");
    let mut evaluator = KernelActionEvaluator::load(&scenario).expect("world resolves");
    let world = evaluator.world().clone();

    // Bare kernel evaluations.
    let first = scenario.step(0).expect("the first step reads").into_owned();
    let Action::Call(call) = &first.action else {
        panic!("the first step is a call");
    };
    let capability = call.capability.clone().expect("resolved capability");
    let (_, token) = world.grants.get(&capability).expect("grant").clone();
    let agent = &first.head.agent;
    let key = world.agents.get(agent).expect("agent").key.clone();
    let kernel_id = world
        .server_kernel(&call.server)
        .expect("served")
        .to_string();
    let plan = world.kernels.get(&kernel_id).expect("kernel plan");
    // The kernel over the in-memory trust store the direct dispatcher uses,
    // bound the same way.
    let trust = TrustBinding::inline(Arc::new(InMemoryTrustStore::new()), "bare");
    let mut kernel = Kernel::new(plan.config.clone(), trust.kernel_stores().0).expect("kernel");
    let mut server = ToolServer::new(&call.server, world.servers[&call.server].config.clone());
    let now = world.start_ms;
    let bare_n = 4_000u64;
    let requests: Vec<ToolCallRequest> = (0..bare_n)
        .map(|i| {
            ToolCallRequest {
                request_id: format!("bare-{i}"),
                capability: token.clone(),
                server: call.server.clone(),
                tool: call.tool.clone(),
                arguments: call.arguments.clone(),
                agent_id: agent.clone(),
                session_id: agent.clone(),
                issued_at_ms: now,
                proof: RequestProof::default(),
                sealed: Vec::new(),
                argument_sources: Vec::new(),
            }
            .sign(&key)
            .expect("signs")
        })
        .collect();
    // Bare batches and evolutions alternate, so load on the machine that
    // changes during the run weighs on both sides of the ratio alike.
    let rounds: u64 = std::env::var("CHIO_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let config = EvolveConfig {
        generations: 40,
        ..EvolveConfig::default()
    };
    let per_round = (bare_n / rounds).max(1) as usize;
    let mut bare_secs = 0.0;
    let mut bare_done = 0u64;
    let mut evolve_secs = 0.0;
    let mut actions = 0u64;
    let mut action_evaluations = 0u64;
    let mut generations = 0u64;
    let evaluations_before = evaluator.kernel_evaluations();
    for round in requests.chunks(per_round) {
        let started = Instant::now();
        for request in round {
            let decision =
                kernel.evaluate(request, now, &mut |admitted| Ok(server.answer(admitted)));
            assert!(decision.receipt.id.len() == 64);
        }
        bare_secs += started.elapsed().as_secs_f64();
        bare_done += round.len() as u64;

        let started = Instant::now();
        let result = evolve(&scenario, &config, &mut evaluator).expect("evolution");
        evolve_secs += started.elapsed().as_secs_f64();
        actions += result.actions_evaluated as u64;
        action_evaluations += result.kernel_evaluations as u64;
        generations += result.generations_completed as u64;
    }
    let bare_n = bare_done;
    let bare_rate = bare_n as f64 / bare_secs;
    let action_rate = actions as f64 / evolve_secs;
    let all_evaluations = evaluator.kernel_evaluations() - evaluations_before;

    println!("bare kernel evaluations: {bare_n} in {bare_secs:.3} s = {bare_rate:.0}/s");
    println!(
        "evolution: {generations} generations in {rounds} runs, {actions} actions ({action_evaluations} action evaluations, {all_evaluations} kernel evaluations with the scenario's own steps) in {evolve_secs:.3} s"
    );
    println!("adversary actions evaluated: {action_rate:.0}/s");
    println!(
        "kernel evaluations during evolution: {:.0}/s",
        all_evaluations as f64 / evolve_secs
    );
    println!(
        "overhead (bare rate / action rate): {:.2}x (goal < 1.5x)",
        bare_rate / action_rate
    );
    let bare_us = 1e6 * bare_secs / bare_n as f64;
    let evolve_us = 1e6 * evolve_secs / all_evaluations.max(1) as f64;
    println!(
        "cost per kernel evaluation: bare {bare_us:.1} us, during evolution {evolve_us:.1} us (mutation, operators, signing, world instances and the goal oracle included) = {:.2}x (goal within 1.5x)",
        evolve_us / bare_us
    );
}
