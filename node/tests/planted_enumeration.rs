//! Search power on the attenuation switches, measured over the enumerated
//! set: every reference scenario's base steps, each `widen-delegation`
//! dimension alone (a gene with no widening operator) and each pair (the
//! gene's dimension and one widening operator), evaluated by the real
//! kernel with nothing planted and with each attenuation switch (the one
//! planted by hand and those made from the kernel's surviving mutants,
//! `kernel/tests/mutants/survivors.txt`). Nothing planted, nothing
//! escapes; a switch some enumerated action reaches is named with its
//! first escape, and every one of the 11 is reached (the monetary-cover
//! switches through the monetary dimension, in the one reference world
//! whose grant carries a monetary constraint, `monetary_scope`). One test,
//! so no other test of this binary runs while a switch is selected.
//!
//! Run: `cargo test -p chio-node --features planted-weakness --test planted_enumeration -- --nocapture`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chio_adversary::action::{mutate_with, Actor};
use chio_adversary::{
    base_steps, declared_scopes, ActionEvaluator, ActionResult, AdversaryAction, Operator,
};
use chio_arena::adversaries::class::MONETARY_FORMS;
use chio_arena::adversaries::{AdversaryClass, ClassParams, Gene, Goal, WideningKind};
use chio_arena::{load_scenario, Scenario};
use chio_kernel::planted::{self, Weakness};
use chio_node::evaluator::KernelActionEvaluator;

const DIMENSIONS: [(WideningKind, Operator); 9] = [
    (WideningKind::Tool, Operator::WidenTool),
    (WideningKind::Path, Operator::WidenPath),
    (WideningKind::Server, Operator::WidenServer),
    (WideningKind::Expiry, Operator::WidenExpiry),
    (WideningKind::Share, Operator::WidenShare),
    (WideningKind::Start, Operator::WidenStart),
    (WideningKind::AnyTool, Operator::WidenAnyTool),
    (WideningKind::Budget, Operator::WidenBudget),
    (WideningKind::Monetary, Operator::WidenMonetary),
];

fn reference_scenarios() -> Vec<PathBuf> {
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

/// Every enumerated action over `scenario`: each base step, each
/// dimension alone and with each other one.
fn enumerated(scenario: &Scenario) -> Vec<AdversaryAction> {
    let scopes = declared_scopes(scenario).expect("scopes");
    let servers: Vec<String> = scenario
        .file()
        .servers
        .iter()
        .map(|s| s.id.clone())
        .collect();
    let params = ClassParams::from_table(AdversaryClass::ScopeEscape, None, "p", &servers)
        .expect("default params");
    let goal = Goal::WidenDelegation;
    let mut actions = Vec::new();
    let mut member = 0u32;
    for base in base_steps(scenario).expect("base steps") {
        // A budget gene's choice picks its form (even: the limit
        // dropped, odd: raised) and a monetary gene's one of its five
        // (another argument, another currency, a larger per-call limit, a
        // larger total, dropped), so each is enumerated with every form.
        let genes = DIMENSIONS.iter().flat_map(|(first, _)| {
            let choices = match first {
                WideningKind::Budget => 0..2,
                WideningKind::Monetary => 0..MONETARY_FORMS,
                _ => 0..1,
            };
            choices.map(move |choice| (*first, choice))
        });
        for (first, choice) in genes {
            let gene = Gene::ScopeEscape {
                widening: first,
                choice,
            };
            let pairs = DIMENSIONS
                .iter()
                .filter(|(d, _)| *d != first)
                .map(|(_, op)| vec![*op]);
            for operators in std::iter::once(Vec::new()).chain(pairs) {
                let actor = Actor {
                    population: "enumerated",
                    member,
                    gene: &gene,
                    operators: &operators,
                    goal: &goal,
                };
                member += 1;
                actions.extend(mutate_with(scenario, &scopes, &params, &actor, &base, 0));
            }
        }
    }
    actions
}

/// The first escape of `actions` with `weakness` planted, in words.
fn first_escape(
    evaluator: &mut KernelActionEvaluator,
    actions: &[AdversaryAction],
    weakness: Option<Weakness>,
) -> Option<String> {
    planted::select(weakness);
    let outcomes = evaluator.evaluate_batch(actions);
    planted::select(None);
    let outcomes = outcomes.expect("the batch evaluates");
    actions.iter().zip(&outcomes).find_map(|(action, outcome)| {
        (ActionResult::score(action, outcome) == ActionResult::Survived)
            .then(|| format!("{} {:?}", action.id, action.operators))
    })
}

// Nothing planted, no enumerated action escapes on any reference scenario; the hand-planted switch and every survivor's switch are found.
#[test]
fn the_enumerated_set_finds_the_reachable_switches() {
    let switches: Vec<Weakness> = Weakness::ALL
        .into_iter()
        .filter(|w| w.guard_kind() == "attenuation")
        .collect();
    let mut found: BTreeMap<Weakness, String> = BTreeMap::new();
    let mut evaluated = 0usize;
    for path in reference_scenarios() {
        let scenario = load_scenario(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        // A seed scenario without a world has nothing to evaluate.
        let Ok(mut evaluator) = KernelActionEvaluator::load(&scenario) else {
            continue;
        };
        let actions = enumerated(&scenario);
        evaluated += actions.len();
        assert_eq!(
            first_escape(&mut evaluator, &actions, None),
            None,
            "{path:?} escapes with nothing planted"
        );
        for w in &switches {
            if found.contains_key(w) {
                continue;
            }
            if let Some(escape) = first_escape(&mut evaluator, &actions, Some(*w)) {
                found.insert(*w, format!("{}: {escape}", scenario.id()));
            }
        }
    }
    for w in &switches {
        println!(
            "{}: {}",
            w.as_str(),
            found.get(w).map_or("not reached", String::as_str)
        );
    }
    println!("enumerated actions evaluated: {evaluated}");
    assert!(evaluated > 1000, "only {evaluated} actions");
    let reached: Vec<&str> = found.keys().map(|w| w.as_str()).collect();
    assert_eq!(
        reached,
        vec![
            "child-expiry-after-parent",
            "start-check-inverted",
            "unlimited-child-budget",
            "any-tool-under-named-tools",
            "monetary-either-match",
            "monetary-argument-inverted",
            "monetary-per-call-inverted",
            "monetary-total-suffices",
            "monetary-argument-suffices",
            "monetary-currency-inverted",
            "monetary-total-inverted",
        ]
    );
}
