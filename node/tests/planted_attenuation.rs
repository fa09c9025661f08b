//! The planted attenuation weakness: with the kernel's attenuation check
//! letting a delegation link expire after its parent, a scenario step shows
//! the weakened kernel admits a call through such a link while the intact
//! kernel refuses it, and the search over the triangular-delegation world
//! with goal `widen-delegation` finds the escape through it (and none on
//! the intact kernel); the search over the monetary-scope world finds each
//! of the seven monetary-cover switches the same way. Every test of this
//! binary holds one lock while it selects a weakness, since the selection
//! is process-wide.
//!
//! Run: `cargo test -p chio-node --features planted-weakness --test planted_attenuation`.

use std::path::Path;
use std::sync::Mutex;

use chio_adversary::{evolve, EvolveConfig};
use chio_arena::{parse_scenario, Scenario};
use chio_kernel::planted::{self, Weakness};
use chio_node::evaluator::KernelActionEvaluator;
use chio_node::executor::direct::DirectDispatcher;
use chio_node::executor::{complete_now, RunStep, StepExecutor};
use chio_node::CallAnswer;
use chio_node::{FixtureSet, World};

static SELECTION: Mutex<()> = Mutex::new(());

/// The triangular-delegation reference scenario with `extra` appended,
/// read from the reference scenarios' folder (so its fixtures resolve).
fn triangle_with(extra: &str) -> Scenario {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let text = std::fs::read_to_string(dir.join("three_agent_triangular_delegation.toml"))
        .expect("the reference scenario reads");
    parse_scenario(&format!("{text}\n{extra}"), &dir).expect("scenario parses")
}

/// Alice delegates to Bob a link that outlives her grant by a day (the
/// grant ends one virtual day after the clock start), and Bob calls with it.
const LONG_LINK: &str = r#"
[[steps]]
id = "alice-to-bob-long"
agent = "alice"
action = "delegate"
capability = "alice-files"
to = "bob"
delegation = "bob-long"
tools = ["read_file"]
path_prefix = "/workspace/shared/"
expires_after_ms = 172800000
share_bps = 4000

[[steps]]
id = "bob-reads-on-long-link"
agent = "bob"
server = "workspace-a"
tool = "read_file"
arguments = { path = "/workspace/shared/plan.md" }
capability = "bob-long"
expect_verdict = "deny"
"#;

/// The verdict and reason of the call step `wanted`, the scenario's
/// schedule performed by the direct dispatcher the search drives.
fn call_outcome(scenario: &Scenario, wanted: &str) -> (String, Option<String>) {
    let fixtures = FixtureSet::load(scenario).expect("fixtures");
    let world = World::resolve(scenario, &fixtures).expect("world");
    let direct = DirectDispatcher::new(&world).expect("direct world");
    let mut executor = StepExecutor::new(&world).expect("executor");
    for scheduled in scenario.schedule() {
        let step = scenario.step(scheduled.step_index).expect("step");
        let now_ms = world.start_ms + scheduled.evaluation_ms;
        let node = world.agent_node(&step.head.agent).expect("placed");
        complete_now(executor.settle_faults(&direct, now_ms)).expect("settled");
        let prepared = executor
            .prepare(
                &world,
                &step.head.id,
                &step.action,
                &step.head.agent,
                now_ms,
            )
            .expect("prepared");
        let performed = complete_now(executor.perform(&direct, node, &step.head.id, prepared))
            .expect("performed");
        if step.head.id == wanted {
            let RunStep::Call(_, CallAnswer::Decided(outcome)) = performed else {
                panic!("{wanted} is not a call: {performed:?}");
            };
            return (outcome.verdict.as_str().to_string(), outcome.reason);
        }
    }
    panic!("no step {wanted}");
}

// The weakened kernel admits a call through a link that expires after its parent; the intact kernel refuses it as an expiry widening.
#[test]
fn a_link_outliving_its_parent_is_admitted_only_when_planted() {
    let _held = SELECTION.lock().unwrap_or_else(|e| e.into_inner());
    let scenario = triangle_with(LONG_LINK);
    planted::select(None);
    let (verdict, reason) = call_outcome(&scenario, "bob-reads-on-long-link");
    assert_eq!(verdict, "deny");
    let reason = reason.expect("a deny names its reason");
    assert!(
        reason.contains("after its parent's expiry"),
        "intact reason: {reason}"
    );
    planted::select(Some(Weakness::ChildExpiryAfterParent));
    let weakened = call_outcome(&scenario, "bob-reads-on-long-link");
    planted::select(None);
    assert_eq!(weakened.0, "allow", "weakened: {weakened:?}");
}

/// A scope-escape population after the widen-delegation goal.
const ESCAPE_POPULATION: &str = r#"
[[adversaries]]
class = "scope-escape"
population = "escape"
seed_ref = "corpus/escape"
goal = "widen-delegation"
"#;

/// The generation of the first escape of a short search of the
/// triangular-delegation world with `weakness` planted.
fn first_escape(weakness: Option<Weakness>) -> Option<u32> {
    first_escape_in(&triangle_with(ESCAPE_POPULATION), weakness, 3)
}

/// The generation of the first escape of a search of `scenario` over
/// `generations` generations with `weakness` planted.
fn first_escape_in(
    scenario: &Scenario,
    weakness: Option<Weakness>,
    generations: u32,
) -> Option<u32> {
    let scenario = scenario.clone();
    planted::select(weakness);
    let mut evaluator = KernelActionEvaluator::load(&scenario).expect("world");
    let config = EvolveConfig {
        generations,
        ..EvolveConfig::default()
    };
    let result = evolve(&scenario, &config, &mut evaluator);
    planted::select(None);
    result.expect("evolution").first_escape_generation
}

// The search finds the link that outlives its parent within three generations, and nothing on the intact kernel.
#[test]
fn the_search_finds_a_link_outliving_its_parent() {
    let _held = SELECTION.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(first_escape(None), None, "intact kernel");
    let found = first_escape(Some(Weakness::ChildExpiryAfterParent));
    assert!(found.is_some_and(|g| g < 3), "not found: {found:?}");
}

/// The monetary-scope reference scenario with a scope-escape population,
/// read from the reference scenarios' folder.
fn monetary_scope_with_escapes() -> Scenario {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let text = std::fs::read_to_string(dir.join("monetary_scope.toml"))
        .expect("the reference scenario reads");
    parse_scenario(&format!("{text}\n{ESCAPE_POPULATION}"), &dir).expect("scenario parses")
}

/// Generations the search of the monetary-scope world runs.
const SEARCH_GENERATIONS: u32 = 3;

// The search over the monetary-scope world (a grant carrying a monetary constraint) finds each of the seven monetary-cover switches within three generations (the population starts with every form of the monetary widening), and nothing on the intact kernel.
#[test]
fn the_search_finds_each_monetary_cover_switch() {
    let _held = SELECTION.lock().unwrap_or_else(|e| e.into_inner());
    let scenario = monetary_scope_with_escapes();
    assert_eq!(
        first_escape_in(&scenario, None, SEARCH_GENERATIONS),
        None,
        "intact kernel"
    );
    let switches = Weakness::ALL
        .into_iter()
        .filter(|w| w.as_str().starts_with("monetary-"));
    let mut found = Vec::new();
    for weakness in switches {
        let generation = first_escape_in(&scenario, Some(weakness), SEARCH_GENERATIONS);
        println!("{}: {generation:?}", weakness.as_str());
        assert!(
            generation.is_some(),
            "{} not found: {generation:?}",
            weakness.as_str()
        );
        found.push(weakness);
    }
    assert_eq!(found.len(), 7);
}
