//! One node implementation: the embedded topology's nodes and the direct
//! dispatcher the adversary search drives handle a step with the same
//! handlers, so they answer alike exactly where they once differed: a
//! message while its node cannot reach trust-control, an acting agent that
//! is not on the node the step is sent to, and a step sent to a crashed
//! node. Each script runs on both and must give the same transcript, which
//! is then held to the node's answer.

use std::path::Path;

use chio_arena::load_scenario;
use chio_arena::scenario::{FaultAction, FaultLink, TRUST_CONTROL};
use chio_kernel::token::Attenuation;
use chio_node::executor::direct::DirectDispatcher;
use chio_node::executor::{complete_now, Dispatcher, FaultEvent, PreparedFault};
use chio_node::link::LinkFuture;
use chio_node::{
    CallCommand, DelegateCommand, EmbeddedTopology, FixtureSet, MessageCommand, NodeError, World,
};

fn world() -> World {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/fault_revocation_during_partition.toml");
    let scenario = load_scenario(&path).expect("loads");
    let fixtures = FixtureSet::load(&scenario).expect("fixtures");
    World::resolve(&scenario, &fixtures).expect("world")
}

/// Where a script runs: the embedded topology on a runtime, or the direct
/// dispatcher, completed at once.
enum Place<'w> {
    Embedded(tokio::runtime::Runtime, Box<EmbeddedTopology>),
    Direct(DirectDispatcher<'w>),
}

impl Place<'_> {
    fn dispatcher(&self) -> &dyn Dispatcher {
        match self {
            Place::Embedded(_, topology) => topology.as_ref(),
            Place::Direct(direct) => direct,
        }
    }

    fn wait<T>(&self, future: LinkFuture<'_, T>) -> Result<T, NodeError> {
        match self {
            Place::Embedded(rt, _) => rt.block_on(future),
            Place::Direct(_) => complete_now(future),
        }
    }

    fn fault(&self, fault: FaultAction) {
        let event = FaultEvent::Begin(PreparedFault {
            fault,
            restore: Vec::new(),
            lost: Vec::new(),
            at_ms: 0,
        });
        self.wait(self.dispatcher().fault(event))
            .expect("simulated");
    }

    /// `agent`'s plain message to `to`, sent to `node`: the labels carried,
    /// or the error.
    fn message(&self, world: &World, node: &str, agent: &str, to: &str) -> String {
        let command = MessageCommand {
            agent: agent.to_string(),
            to: to.to_string(),
            sources: Vec::new(),
            handover: None,
            now_ms: world.start_ms,
        };
        match self.wait(self.dispatcher().message(node, command)) {
            Ok(outcome) => format!("carried {:?} {:?}", outcome.labels, outcome.refusal),
            Err(e) => format!("error: {e}"),
        }
    }

    /// `agent`'s read of alice's workspace with alice's grant, sent to
    /// `node`: the verdict, the node's deny, or the error.
    fn call(&self, world: &World, node: &str, agent: &str, id: &str) -> String {
        let command = CallCommand {
            request_id: id.to_string(),
            agent: agent.to_string(),
            capability_id: "alice-files".to_string(),
            captured: None,
            server: "workspace-a".to_string(),
            tool: "read_file".to_string(),
            arguments: serde_json::json!({"path": "/workspace/shared/plan.md"}),
            sources: Vec::new(),
            now_ms: world.start_ms + 1,
            sealed: Vec::new(),
            issued_at_ms: world.start_ms + 1,
        };
        match self.wait(self.dispatcher().call(node, command)) {
            Ok(answer) => match answer.decided() {
                Ok(outcome) => format!("decided {}", outcome.verdict.as_str()),
                Err(refusal) => format!("refused {}: {refusal}", refusal.code.as_str()),
            },
            Err(e) => format!("error: {e}"),
        }
    }

    /// `agent`'s delegation of a read-only share of alice's grant to bob,
    /// sent to `node`.
    fn delegate(&self, world: &World, node: &str, agent: &str, id: &str) -> String {
        let command = DelegateCommand {
            agent: agent.to_string(),
            capability_id: "alice-files".to_string(),
            to: "bob".to_string(),
            delegation_id: id.to_string(),
            attenuation: Attenuation {
                tools: Some(vec!["read_file".to_string()]),
                ..Attenuation::default()
            },
            now_ms: world.start_ms,
        };
        match self.wait(self.dispatcher().delegate(node, command)) {
            Ok(Ok(outcome)) => format!("delegated {} {:?}", outcome.token.id, outcome.labels),
            Ok(Err(refusal)) => format!("refused {}: {refusal}", refusal.code.as_str()),
            Err(e) => format!("error: {e}"),
        }
    }
}

/// The transcript `script` writes on the embedded topology, after checking
/// the direct dispatcher writes the same.
fn on_both(script: impl Fn(&World, &Place) -> Vec<String>) -> Vec<String> {
    let world = world();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let topology = rt
        .block_on(EmbeddedTopology::start(&world))
        .expect("starts");
    let embedded = script(&world, &Place::Embedded(rt, Box::new(topology)));
    let direct = DirectDispatcher::new(&world).expect("direct world");
    let synchronous = script(&world, &Place::Direct(direct));
    assert_eq!(embedded, synchronous, "the two ports answered differently");
    embedded
}

// Proves a message whose sender's node cannot reach trust-control (cut off, or stalled) moves no label and fails naming the label read and the kind of outage, in a run and in the search alike; once reached again it carries.
#[test]
fn a_message_cut_from_trust_control_fails_alike() {
    let transcript = on_both(|world, place| {
        let mut out = vec![place.message(world, "node-a", "alice", "bob")];
        place.fault(FaultAction::Partition {
            link: FaultLink::new("node-a", TRUST_CONTROL),
        });
        out.push(place.message(world, "node-a", "alice", "bob"));
        out.push(place.message(world, "node-b", "bob", "carol"));
        place.fault(FaultAction::Heal {
            link: FaultLink::new("node-a", TRUST_CONTROL),
        });
        place.fault(FaultAction::Stall { duration_ms: 1000 });
        out.push(place.message(world, "node-b", "bob", "carol"));
        out
    });
    let cut = "error: trust-control store failed: label store read: trust-control unavailable";
    let stalled =
        "error: trust-control store failed: label store read: trust-control deadline exceeded";
    assert!(transcript[0].starts_with("carried "), "{transcript:?}");
    assert_eq!(transcript[1], cut);
    assert!(transcript[2].starts_with("carried "), "{transcript:?}");
    assert_eq!(transcript[3], stalled);
}

// Proves a call, a delegation or a message whose acting agent is not on the node it is sent to (or is no agent at all) is unroutable there, in a run and in the search alike, before anything is signed or carried.
#[test]
fn an_agent_not_on_the_node_is_unroutable_alike() {
    let transcript = on_both(|world, place| {
        vec![
            place.call(world, "node-b", "alice", "misplaced"),
            place.delegate(world, "node-b", "alice", "misplaced-child"),
            place.message(world, "node-b", "alice", "bob"),
            place.message(world, "node-a", "mallory", "bob"),
            place.call(world, "node-a", "alice", "placed"),
        ]
    });
    let misplaced =
        "error: no route to agent alice is not on this node; check the scenario's placement and the topology";
    assert_eq!(transcript[..3], [misplaced, misplaced, misplaced]);
    assert_eq!(
        transcript[3],
        "error: no route to agent mallory is not on this node; check the scenario's placement and the topology"
    );
    assert_eq!(transcript[4], "decided allow");
}

// Proves a step sent to a crashed node finds nothing there, in a run and in the search alike (the controller answers calls, delegations and revocations of a down node itself; a message reaches the node), and the restarted node answers again.
#[test]
fn a_step_sent_to_a_crashed_node_finds_nothing_alike() {
    let transcript = on_both(|world, place| {
        place.fault(FaultAction::Crash {
            node: "node-a".to_string(),
        });
        let mut out = vec![
            place.message(world, "node-a", "alice", "bob"),
            place.call(world, "node-a", "alice", "down"),
            place.delegate(world, "node-a", "alice", "down-child"),
        ];
        place.fault(FaultAction::Restart {
            node: "node-a".to_string(),
            keep_state: false,
        });
        out.push(place.message(world, "node-a", "alice", "bob"));
        out
    });
    let gone = transcript[0].clone();
    assert!(gone.starts_with("error: ") && gone.contains("node node-a (crashed)"));
    assert_eq!(transcript[1..3], [gone.clone(), gone]);
    assert!(transcript[3].starts_with("carried "), "{transcript:?}");
}

// Proves the delegator's node records a child's labels before it hands the child over: across a cut link it refuses the delegation as undelivered, and with trust-control cut off as well it refuses it as unrecorded (the hand-over is never tried), in a run and in the search alike.
#[test]
fn a_delegation_is_recorded_before_it_is_handed_over_alike() {
    let transcript = on_both(|world, place| {
        place.fault(FaultAction::Partition {
            link: FaultLink::new("node-a", "node-b"),
        });
        let mut out = vec![place.delegate(world, "node-a", "alice", "across-the-cut")];
        place.fault(FaultAction::Partition {
            link: FaultLink::new("node-a", TRUST_CONTROL),
        });
        out.push(place.delegate(world, "node-a", "alice", "unrecorded"));
        place.fault(FaultAction::Heal {
            link: FaultLink::new("node-a", TRUST_CONTROL),
        });
        place.fault(FaultAction::Heal {
            link: FaultLink::new("node-a", "node-b"),
        });
        out.push(place.delegate(world, "node-a", "alice", "delivered"));
        out
    });
    assert_eq!(
        transcript[0],
        "refused delegation-undelivered: delegation refused: the child cannot be handed to agent bob on node node-b from node node-a: the link is unavailable"
    );
    assert_eq!(
        transcript[1],
        "refused delegation-unrecorded: delegation refused: the child's labels cannot be recorded: trust-control unavailable"
    );
    assert!(
        transcript[2].starts_with("delegated delivered"),
        "{transcript:?}"
    );
}
