//! The embedded topology's simulated faults give the answers real ones do:
//! a call to a kernel on a crashed node or across a partition is denied by
//! the agent's node, which cannot reach the kernel; a kernel cut from
//! trust-control, or any kernel while trust-control stalls, denies from its
//! own pipeline naming its store and the kind of outage (with its trace and
//! receipt, recorded nowhere); a delegation or revocation that cannot be
//! recorded or handed over is refused by the node; a node restarted without
//! its state no longer holds what it was handed; and a heal, a restart or
//! the stall's end brings each back. No answer carries a transport's text.

use std::path::Path;

use chio_arena::load_scenario;
use chio_arena::scenario::{FaultAction, FaultLink};
use chio_kernel::token::Attenuation;
use chio_kernel::verdict::Verdict;
use chio_node::actors::CallOutcome;
use chio_node::executor::{Dispatcher, FaultEvent, PreparedFault};
use chio_node::{CallCommand, DelegateCommand, EmbeddedTopology, FixtureSet, World};

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

fn cut(a: &str, b: &str) -> FaultAction {
    FaultAction::Partition {
        link: FaultLink::new(a, b),
    }
}

fn heal(a: &str, b: &str) -> FaultAction {
    FaultAction::Heal {
        link: FaultLink::new(a, b),
    }
}

/// A read of the shared plan by `agent` presenting `capability` (captured
/// from `holder` when that is not `agent`), with request id `id`.
fn read(world: &World, agent: &str, capability: &str, id: &str) -> CallCommand {
    let captured = world
        .grants
        .get(capability)
        .filter(|(holder, _)| holder != agent)
        .map(|(_, token)| token.clone());
    CallCommand {
        request_id: id.to_string(),
        agent: agent.to_string(),
        capability_id: capability.to_string(),
        captured,
        server: "workspace-a".to_string(),
        tool: "read_file".to_string(),
        arguments: serde_json::json!({"path": "/workspace/shared/plan.md"}),
        sources: Vec::new(),
        now_ms: world.start_ms + 1,
        sealed: Vec::new(),
        issued_at_ms: world.start_ms + 1,
    }
}

/// Alice's delegation of a read-only share of her grant to `to`.
fn share(world: &World, to: &str, id: &str) -> DelegateCommand {
    DelegateCommand {
        agent: "alice".to_string(),
        capability_id: "alice-files".to_string(),
        to: to.to_string(),
        delegation_id: id.to_string(),
        attenuation: Attenuation {
            tools: Some(vec!["read_file".to_string()]),
            ..Attenuation::default()
        },
        now_ms: world.start_ms,
    }
}

/// One embedded run of the partition scenario's world.
struct Run {
    world: World,
    rt: tokio::runtime::Runtime,
    topology: EmbeddedTopology,
}

impl Run {
    fn start() -> Self {
        let world = world();
        let rt = runtime();
        let topology = rt
            .block_on(EmbeddedTopology::start(&world))
            .expect("starts");
        Self {
            world,
            rt,
            topology,
        }
    }

    fn fault(&self, fault: FaultAction) {
        self.rt
            .block_on(self.topology.fault(event(fault)))
            .expect("simulated");
    }

    /// `agent`'s read through node `node`: the kernel's outcome, or the
    /// node's own deny.
    fn read(
        &self,
        node: &str,
        agent: &str,
        capability: &str,
        id: &str,
    ) -> Result<CallOutcome, String> {
        let command = read(&self.world, agent, capability, id);
        self.rt
            .block_on(self.topology.call(node, command))
            .expect("the node answers")
            .decided()
            .map_err(|refusal| refusal.message)
    }

    /// The kernel's outcome of a read the node must carry.
    fn decided(&self, node: &str, agent: &str, capability: &str, id: &str) -> CallOutcome {
        self.read(node, agent, capability, id)
            .unwrap_or_else(|refusal| panic!("{id}: the node refused: {refusal}"))
    }
}

// Proves a kernel on a crashed node or across a partition is denied by the agent's node with one reason for both, never reached, and reached again after the restart and the heal.
#[test]
fn an_unreachable_kernel_is_denied_by_the_agents_node() {
    let run = Run::start();
    // Carol's captured read reaches kernel-a, which refuses the stolen token.
    let reached = run.decided("node-c", "carol", "alice-files", "c1");
    assert_eq!(reached.verdict, Verdict::Deny);
    let unreachable =
        "kernel kernel-a on node node-a is unreachable from node node-c: the link is unavailable";
    run.fault(FaultAction::Crash {
        node: "node-a".to_string(),
    });
    assert_eq!(
        run.read("node-c", "carol", "alice-files", "c2"),
        Err(unreachable.to_string())
    );
    run.fault(FaultAction::Restart {
        node: "node-a".to_string(),
        keep_state: true,
    });
    let back = run.decided("node-a", "alice", "alice-files", "a2");
    assert_eq!(back.verdict, Verdict::Allow);
    run.fault(cut("node-c", "node-a"));
    assert_eq!(
        run.read("node-c", "carol", "alice-files", "c3"),
        Err(unreachable.to_string())
    );
    let local = run.decided("node-a", "alice", "alice-files", "a3");
    assert_eq!(
        local.verdict,
        Verdict::Allow,
        "the partition cut node-a off"
    );
    run.fault(heal("node-a", "node-c"));
    let healed = run.decided("node-c", "carol", "alice-files", "c4");
    assert_eq!(healed.kernel_id, "kernel-a");
}

// Proves a stalled or cut-off trust-control makes the kernel deny from its own pipeline, naming its store and the kind of outage, with its trace and an unrecorded receipt, and that the stall's end and the heal restore allows.
#[test]
fn stalled_or_cut_off_trust_control_makes_the_kernel_deny() {
    let run = Run::start();
    let call = |id: &str| run.decided("node-a", "alice", "alice-files", id);
    assert_eq!(call("r1").verdict, Verdict::Allow);
    run.fault(FaultAction::Stall { duration_ms: 1000 });
    let stalled = call("r2");
    assert_eq!(stalled.verdict, Verdict::Deny);
    assert_eq!(
        stalled.reason.as_deref(),
        Some("revocation store unavailable: trust-control deadline exceeded")
    );
    assert!(!stalled.recorded, "a receipt was recorded during a stall");
    let last = stalled.trace.stages.last().expect("a stage decided");
    assert_eq!(last.outcome, "deny");
    run.rt
        .block_on(run.topology.fault(FaultEvent::EndStall))
        .expect("simulated");
    assert_eq!(call("r3").verdict, Verdict::Allow);
    run.fault(cut("node-a", "trust-control"));
    let cut_off = call("r4");
    assert_eq!(cut_off.verdict, Verdict::Deny);
    assert_eq!(
        cut_off.reason.as_deref(),
        Some("revocation store unavailable: trust-control unavailable")
    );
    // Only node-a is cut: kernel-a denies whoever calls it, node-b's own
    // store calls still reach trust-control.
    run.fault(heal("trust-control", "node-a"));
    assert_eq!(call("r5").verdict, Verdict::Allow);
}

// Proves a delegation or revocation that cannot be recorded or handed over is refused by the delegator's node with its reason, and is done once the fault heals.
#[test]
fn delegations_and_revocations_reached_by_a_fault_are_refused_by_the_node() {
    let run = Run::start();
    let delegate = |to: &str, id: &str| {
        run.rt
            .block_on(run.topology.delegate("node-a", share(&run.world, to, id)))
            .expect("node-a answers")
            .map_err(|refusal| refusal.message)
    };
    let revoke = |target: &str| {
        run.rt
            .block_on(run.topology.revoke("node-a", target, run.world.start_ms))
            .expect("node-a answers")
            .map(|refusal| refusal.message)
    };
    run.fault(cut("node-a", "trust-control"));
    assert_eq!(
        delegate("bob", "bob-1").err().as_deref(),
        Some(
            "delegation refused: the child's labels cannot be recorded: trust-control unavailable"
        )
    );
    assert_eq!(
        revoke("alice-files").as_deref(),
        Some("revocation refused: the revocation cannot be recorded: trust-control unavailable")
    );
    run.fault(heal("node-a", "trust-control"));
    run.fault(FaultAction::Stall { duration_ms: 1000 });
    assert_eq!(
        delegate("bob", "bob-2").err().as_deref(),
        Some("delegation refused: the child's labels cannot be recorded: trust-control deadline exceeded")
    );
    run.rt
        .block_on(run.topology.fault(FaultEvent::EndStall))
        .expect("simulated");
    run.fault(FaultAction::Crash {
        node: "node-b".to_string(),
    });
    assert_eq!(
        delegate("bob", "bob-3").err().as_deref(),
        Some("delegation refused: the child cannot be handed to agent bob on node node-b from node node-a: the link is unavailable")
    );
    run.fault(FaultAction::Restart {
        node: "node-b".to_string(),
        keep_state: true,
    });
    assert!(
        delegate("bob", "bob-4").is_ok(),
        "the restart did not carry"
    );
}

// Proves a node restarted without its state no longer holds a capability it was handed, so it denies presenting it, and one restarted with its state holds it again.
#[test]
fn a_node_restarted_without_its_state_refuses_what_it_lost() {
    let run = Run::start();
    let child = run
        .rt
        .block_on(
            run.topology
                .delegate("node-a", share(&run.world, "bob", "bob-files")),
        )
        .expect("node-a answers")
        .expect("delegated");
    let bobs = |id: &str| {
        let mut command = read(&run.world, "bob", "bob-files", id);
        command.captured = None;
        run.rt
            .block_on(run.topology.call("node-b", command))
            .expect("node-b answers")
            .decided()
            .map_err(|refusal| refusal.message)
    };
    assert_eq!(bobs("b1").map(|o| o.verdict), Ok(Verdict::Allow));
    run.fault(FaultAction::Crash {
        node: "node-b".to_string(),
    });
    run.fault(FaultAction::Restart {
        node: "node-b".to_string(),
        keep_state: false,
    });
    assert_eq!(
        bobs("b2").map(|o| o.verdict),
        Err("agent bob does not hold capability bob-files".to_string())
    );
    run.fault(FaultAction::Crash {
        node: "node-b".to_string(),
    });
    let restore = FaultEvent::Begin(PreparedFault {
        fault: FaultAction::Restart {
            node: "node-b".to_string(),
            keep_state: true,
        },
        restore: vec![("bob".to_string(), child.token)],
        lost: Vec::new(),
        at_ms: 0,
    });
    run.rt
        .block_on(run.topology.fault(restore))
        .expect("simulated");
    assert_eq!(bobs("b3").map(|o| o.verdict), Ok(Verdict::Allow));
}
