//! The embedded topology's simulated faults: a crashed node answers
//! nothing, a kernel across a partition is unreachable, a node cut from
//! trust-control (or any node while trust-control stalls) gets a store call
//! that fails at its deadline, so its kernel denies naming the store; and a
//! heal, a restart or the stall's end brings each back. The controller
//! never dispatches a step into a fault; this is what one that did would
//! meet.

use std::path::Path;

use chio_arena::load_scenario;
use chio_arena::scenario::{FaultAction, FaultLink};
use chio_kernel::verdict::Verdict;
use chio_node::executor::{Dispatcher, FaultEvent, PreparedFault};
use chio_node::{CallCommand, EmbeddedTopology, FixtureSet, World};

fn world() -> World {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/fault_revocation_during_partition.toml");
    let scenario = load_scenario(&path).expect("loads");
    let fixtures = FixtureSet::load(&scenario).expect("fixtures");
    World::resolve(&scenario, &fixtures).expect("world")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn event(fault: FaultAction) -> FaultEvent {
    FaultEvent::Begin(PreparedFault {
        fault,
        restore: Vec::new(),
        lost: Vec::new(),
        at_ms: 0,
    })
}

/// A read of the shared plan by `agent` presenting Alice's grant (captured
/// when `agent` is not Alice), with request id `id`.
fn read(world: &World, agent: &str, id: &str) -> CallCommand {
    let (holder, token) = world.grants.get("alice-files").expect("grant").clone();
    CallCommand {
        request_id: id.to_string(),
        agent: agent.to_string(),
        capability_id: "alice-files".to_string(),
        captured: (holder != agent).then_some(token),
        server: "workspace-a".to_string(),
        tool: "read_file".to_string(),
        arguments: serde_json::json!({"path": "/workspace/shared/plan.md"}),
        now_ms: world.start_ms + 1,
    }
}

// Proves a crashed node and a kernel across a partition answer nothing, and answer again after the restart and the heal.
#[test]
fn crashed_node_and_partitioned_kernel_answer_nothing_until_back() {
    let world = world();
    let rt = runtime();
    let topology = rt
        .block_on(EmbeddedTopology::start(&world))
        .expect("starts");
    let call = |agent: &str, node: &str, id: &str| {
        rt.block_on(topology.call(node, read(&world, agent, id)))
    };
    // Carol's captured read reaches kernel-a, which refuses the stolen token.
    let reached = call("carol", "node-c", "c1").expect("kernel-a answers");
    assert_eq!(reached.verdict, Verdict::Deny);
    let crash = FaultAction::Crash {
        node: "node-a".to_string(),
    };
    rt.block_on(topology.fault(event(crash)))
        .expect("simulated");
    assert!(
        call("alice", "node-a", "a1").is_err(),
        "a crashed node answered"
    );
    assert!(
        call("carol", "node-c", "c2").is_err(),
        "a crashed node's kernel answered"
    );
    let restart = FaultAction::Restart {
        node: "node-a".to_string(),
        keep_state: true,
    };
    rt.block_on(topology.fault(event(restart)))
        .expect("simulated");
    let back = call("alice", "node-a", "a2").expect("node-a answers again");
    assert_eq!(back.verdict, Verdict::Allow);
    let link = FaultLink::new("node-c", "node-a");
    let cut = FaultAction::Partition { link: link.clone() };
    rt.block_on(topology.fault(event(cut))).expect("simulated");
    let refused = call("carol", "node-c", "c3").expect_err("the partition refuses");
    assert!(refused.to_string().contains("partitioned"), "{refused}");
    assert!(
        call("alice", "node-a", "a3").is_ok(),
        "the partition cut node-a off"
    );
    rt.block_on(topology.fault(event(FaultAction::Heal { link })))
        .expect("simulated");
    assert!(
        call("carol", "node-c", "c4").is_ok(),
        "the heal did not carry"
    );
}

// Proves a stalled or cut-off trust-control makes the kernel deny naming its store, and that the stall's end and the heal restore allows.
#[test]
fn stalled_or_cut_off_trust_control_makes_the_kernel_deny() {
    let world = world();
    let rt = runtime();
    let topology = rt
        .block_on(EmbeddedTopology::start(&world))
        .expect("starts");
    let call = |id: &str| {
        rt.block_on(topology.call("node-a", read(&world, "alice", id)))
            .expect("node-a answers")
    };
    assert_eq!(call("r1").verdict, Verdict::Allow);
    let stall = FaultAction::Stall { duration_ms: 1000 };
    rt.block_on(topology.fault(event(stall)))
        .expect("simulated");
    let stalled = call("r2");
    assert_eq!(stalled.verdict, Verdict::Deny);
    let reason = stalled.reason.unwrap_or_default();
    assert!(reason.contains("store unavailable"), "{reason}");
    assert!(reason.contains("deadline"), "{reason}");
    rt.block_on(topology.fault(FaultEvent::EndStall))
        .expect("simulated");
    assert_eq!(call("r3").verdict, Verdict::Allow);
    let link = FaultLink::new("node-a", "trust-control");
    let cut = FaultAction::Partition { link: link.clone() };
    rt.block_on(topology.fault(event(cut))).expect("simulated");
    assert_eq!(call("r4").verdict, Verdict::Deny);
    rt.block_on(topology.fault(event(FaultAction::Heal { link })))
        .expect("simulated");
    assert_eq!(call("r5").verdict, Verdict::Allow);
}
