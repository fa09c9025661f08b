//! One step executor: every reference scenario's schedule, performed by the
//! step executor over the embedded topology (actors, the in-memory
//! trust-control store) and over the direct dispatcher the adversary search
//! drives (kernels called synchronously), gives the same outcome at every
//! step: the same verdict, reason and guard for a call, the same child and
//! labels for a delegation, the same refusal for a delegate or revoke step,
//! the same labels for a message. So an action means the same thing in a
//! run and in an evolution.

use std::path::{Path, PathBuf};

use chio_arena::{load_scenario, Scenario};
use chio_node::executor::direct::DirectDispatcher;
use chio_node::executor::{complete_now, Performed, PreparedStep, RunStep, StepExecutor};
use chio_node::CallAnswer;
use chio_node::{EmbeddedTopology, FixtureSet, NodeError, World};

fn scenarios() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut found: Vec<PathBuf> = [root.clone(), root.join("agentdojo")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).expect("scenarios folder"))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    found.sort();
    found
}

/// What one step did, in a form both dispatchers produce alike.
fn summary(performed: &Result<Performed, NodeError>) -> String {
    match performed {
        Err(e) => format!("infrastructure: {e}"),
        Ok(RunStep::Call(_, CallAnswer::Decided(outcome))) => format!(
            "call {} {:?} {:?} output {:?} receipt {}",
            outcome.verdict.as_str(),
            outcome.reason,
            outcome.guard,
            outcome.output,
            outcome.receipt.id
        ),
        Ok(RunStep::Delegate(_, Ok(made))) => {
            format!("delegated {} {:?}", made.child.token_sha256, made.labels)
        }
        Ok(RunStep::Delegate(_, Err(refusal))) => format!("delegation refused: {refusal}"),
        Ok(RunStep::Revoke(_, refusal)) => format!("revoke {refusal:?}"),
        Ok(RunStep::Message(_, outcome)) => {
            format!("message {:?} {:?}", outcome.labels, outcome.refusal)
        }
        Ok(RunStep::Advance { .. }) => "advance".to_string(),
        Ok(RunStep::Call(_, CallAnswer::Refused(reason))) => {
            format!("refused without a kernel: {reason}")
        }
        Ok(RunStep::Fault(_)) => "fault".to_string(),
        Ok(RunStep::Redefine) => "redefine".to_string(),
    }
}

/// Every step's summary, each step prepared by a fresh executor's run and
/// performed by `perform` (one dispatcher or the other), after `settle`
/// ends a stall that is over by the step's instant, as the run driver does.
fn through(
    scenario: &Scenario,
    world: &World,
    mut settle: impl FnMut(&mut StepExecutor, u64) -> Result<(), NodeError>,
    mut perform: impl FnMut(&mut StepExecutor, &str, &str, PreparedStep) -> Result<Performed, NodeError>,
) -> Vec<String> {
    let mut executor = StepExecutor::new(world).expect("the grants fingerprint");
    let mut out = Vec::new();
    for scheduled in scenario.schedule() {
        let step = scenario.step(scheduled.step_index).expect("the step reads");
        let now_ms = world.start_ms + scheduled.evaluation_ms;
        let node = world.agent_node(&step.head.agent).expect("placed");
        settle(&mut executor, now_ms).expect("settled");
        let prepared = executor
            .prepare(world, &step.head.id, &step.action, &step.head.agent, now_ms)
            .expect("prepared");
        let performed = perform(&mut executor, node, &step.head.id, prepared);
        out.push(format!("{}: {}", step.head.id, summary(&performed)));
    }
    out
}

// Proves the run and the search share one meaning of every scheduled action:
// the two dispatchers agree step by step on every reference scenario.
#[test]
fn embedded_and_direct_agree_on_every_reference_scenario() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut compared = 0;
    for path in scenarios() {
        let scenario = load_scenario(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let fixtures = FixtureSet::load(&scenario).expect("fixtures");
        // A seed scenario without a world has nothing to dispatch.
        let Ok(world) = World::resolve(&scenario, &fixtures) else {
            continue;
        };
        let topology = runtime
            .block_on(EmbeddedTopology::start(&world))
            .expect("embedded start");
        let embedded = through(
            &scenario,
            &world,
            |executor, now_ms| runtime.block_on(executor.settle_faults(&topology, now_ms)),
            |executor, node, id, prepared| {
                runtime.block_on(executor.perform(&topology, node, id, prepared))
            },
        );
        let direct_world = DirectDispatcher::new(&world).expect("direct world");
        let direct = through(
            &scenario,
            &world,
            |executor, now_ms| complete_now(executor.settle_faults(&direct_world, now_ms)),
            |executor, node, id, prepared| {
                complete_now(executor.perform(&direct_world, node, id, prepared))
            },
        );
        assert_eq!(embedded.len(), direct.len(), "{path:?}");
        for (a, b) in embedded.iter().zip(&direct) {
            assert_eq!(a, b, "{path:?}: the dispatchers disagree");
        }
        compared += embedded.len();
    }
    assert!(compared > 50, "only {compared} steps were compared");
}

/// The world of the deny-reasons reference scenario.
fn deny_reasons_world() -> World {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/deny_reasons.toml");
    let scenario = load_scenario(&path).expect("loads");
    let fixtures = FixtureSet::load(&scenario).expect("fixtures");
    World::resolve(&scenario, &fixtures).expect("world")
}

// Proves the direct dispatcher refuses what a node refuses: a delegation by
// an agent that does not hold the capability never produces a child, so
// the search cannot act on a capability the run never granted.
#[test]
fn a_delegation_the_run_refuses_grants_nothing_to_the_search() {
    let world = deny_reasons_world();
    let direct = DirectDispatcher::new(&world).expect("direct world");
    let mut executor = StepExecutor::new(&world).expect("the grants fingerprint");
    let (grant, (holder, _)) = world.grants.iter().next().expect("a grant");
    let thief = world
        .agents
        .keys()
        .find(|a| *a != holder)
        .expect("a second agent")
        .clone();
    let action = chio_arena::Action::Delegate(chio_arena::scenario::DelegateAction {
        capability: grant.clone(),
        to: thief.clone(),
        delegation: "stolen".to_string(),
        tools: None,
        path_prefix: None,
        expires_after_ms: None,
        max_invocations: None,
        share_bps: None,
        monetary: None,
        expect: chio_arena::scenario::StepExpectation::Refused,
    });
    let prepared = executor
        .prepare(&world, "steal", &action, &thief, world.start_ms)
        .expect("prepared");
    let performed =
        complete_now(executor.perform(&direct, "direct", "steal", prepared)).expect("answered");
    match performed {
        RunStep::Delegate(_, Err(refusal)) => {
            assert!(refusal.message.contains("does not hold"), "{refusal}");
            assert_eq!(refusal.code.as_str(), "delegation-not-held");
        }
        other => panic!("a non-holder delegated: {}", summary(&Ok(other))),
    }
    assert!(executor.capability("stolen").is_none());
}

// Proves the direct dispatcher records a revocation's instant as the node does (trust-control keeps the first): a revoke step at an instant is stored at that instant, and a second revocation keeps the first.
#[test]
fn the_direct_dispatcher_keeps_a_revocation_instant() {
    let world = deny_reasons_world();
    let direct = DirectDispatcher::new(&world).expect("direct world");
    let mut executor = StepExecutor::new(&world).expect("the grants fingerprint");
    let grant = world.grants.keys().next().expect("a grant").clone();
    let action = chio_arena::Action::Revoke(chio_arena::scenario::RevokeAction {
        target: grant.clone(),
        by_authority: true,
        expect: chio_arena::scenario::StepExpectation::Done,
    });
    let agent = world.agents.keys().next().expect("an agent").clone();
    for (offset, id) in [(1234, "revoke"), (5678, "again")] {
        let now_ms = world.start_ms + offset;
        let prepared = executor
            .prepare(&world, id, &action, &agent, now_ms)
            .expect("prepared");
        complete_now(executor.perform(&direct, "direct", id, prepared)).expect("answered");
    }
    assert_eq!(
        direct.revoked_at(&grant).expect("readable"),
        Some(world.start_ms + 1234)
    );
}

// Proves a fingerprint of a value with no canonical form (an integer past 2^53) is an error naming what was fingerprinted, never the digest of something else.
#[test]
fn a_value_with_no_canonical_form_has_no_fingerprint() {
    let huge = serde_json::json!({"n": 1u64 << 60});
    let err = chio_node::executor::canonical_sha256("a call's released output", &huge)
        .expect_err("no canonical form");
    assert!(
        err.to_string()
            .contains("a call's released output has no canonical JSON form"),
        "{err}"
    );
    let fine = chio_node::executor::canonical_sha256("a value", &serde_json::json!({"n": 1}));
    assert_eq!(fine.expect("fingerprinted").len(), 64);
}
