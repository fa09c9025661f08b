//! Search power on the survivors' switches, measured over the enumerated
//! set: every reference scenario's base steps, each class's genes under
//! each goal the class may pursue, alone and with each one operator the
//! goal uses (for `widen-delegation`: each dimension alone, a gene with no
//! widening operator, and each pair, the gene's dimension and one widening
//! operator), evaluated by the real kernel with nothing planted and with
//! each switch made from a surviving mutant
//! (`kernel/tests/mutants/survivors.txt`; and the one attenuation switch
//! planted by hand). Nothing planted, nothing escapes. For each switch the
//! test counts the enumerated actions it turns from a deny into an admit
//! (it loosens a verdict) and the escapes the search's scoring finds, and
//! asserts the target, every switch that loosens the verdict of some
//! enumerated action is found, and which are found. The switches no
//! enumerated action loosens are listed, with why, in the survivors file. One test, so no other test
//! of this binary runs while a switch is selected.
//!
//! Run: `cargo test -p chio-node --features planted-weakness --test planted_enumeration -- --nocapture`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chio_adversary::action::{mutate_with, Actor};
use chio_adversary::operators::goal_operators;
use chio_adversary::{
    base_steps, declared_scopes, ActionEvaluator, ActionOutcome, ActionResult, AdversaryAction,
    Operator,
};
use chio_arena::adversaries::class::MONETARY_FORMS;
use chio_arena::adversaries::{AdversaryClass, ClassParams, Gene, Goal, WideningKind};
use chio_arena::{load_scenario, Scenario};
use chio_kernel::planted::{self, Weakness};
use chio_kernel::verdict::ProjectedVerdict;
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

/// The `reach-forbidden-path` goals tried: every one a reference
/// scenario's adversary block declares (its `goal_path`, and its
/// `goal_tools` when it names them).
fn path_goals(paths: &[PathBuf]) -> BTreeSet<Goal> {
    paths
        .iter()
        .filter_map(|p| load_scenario(p).ok())
        .flat_map(|s| {
            s.file()
                .adversaries
                .iter()
                .filter_map(|a| {
                    let path = a.goal_path.clone()?;
                    Some(Goal::ReachForbiddenPath {
                        path,
                        tools: a.goal_tools.clone().unwrap_or_default(),
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Each class, with the genes it enumerates and the goals it may pursue.
fn classes(servers: &[String], paths: &BTreeSet<Goal>) -> Vec<(Vec<Gene>, Vec<Goal>)> {
    let params = |class| ClassParams::from_table(class, None, "p", servers).expect("defaults");
    // An over-request's choice picks its candidate tool or server (modulo
    // the list), so a few choices cover the swaps.
    let overrequest = params(AdversaryClass::CapabilityOverrequest)
        .initial_genes()
        .into_iter()
        .flat_map(|gene| {
            (0..4).map(move |choice| match &gene {
                Gene::CapabilityOverrequest { swap, .. } => Gene::CapabilityOverrequest {
                    swap: *swap,
                    choice,
                },
                other => other.clone(),
            })
        })
        .collect();
    let mut overrequest_goals = vec![
        Goal::UseBeyondScope,
        Goal::LeakLabel,
        Goal::UseChangedDefinition,
        Goal::CallPoisonedTool,
        Goal::ActOnUntrusted,
    ];
    overrequest_goals.extend(paths.iter().cloned());
    // The injection samples (variant 0), in both targets.
    let injection = params(AdversaryClass::PromptInjection)
        .initial_genes()
        .into_iter()
        .filter(|g| matches!(g, Gene::PromptInjection { variant: 0, .. }))
        .collect();
    // A budget gene's choice picks its form (even: the limit dropped, odd:
    // raised) and a monetary gene's one of its five (another argument,
    // another currency, a larger per-call limit, a larger total, dropped),
    // so each is enumerated with every form.
    let escape = DIMENSIONS
        .iter()
        .flat_map(|(widening, _)| {
            let choices = match widening {
                WideningKind::Budget => 0..2,
                WideningKind::Monetary => 0..MONETARY_FORMS,
                _ => 0..1,
            };
            choices.map(move |choice| Gene::ScopeEscape {
                widening: *widening,
                choice,
            })
        })
        .collect();
    // The scope escapes first, so their action ids (which seed each
    // action's choices) are those of the first enumeration.
    vec![
        (escape, vec![Goal::WidenDelegation]),
        (injection, vec![Goal::SmuggleInstruction]),
        (overrequest, overrequest_goals),
        (
            params(AdversaryClass::ReplayAttempt).initial_genes(),
            vec![
                Goal::ReplayRequest,
                Goal::OutliveRevocation,
                Goal::ExceedBudget,
            ],
        ),
    ]
}

/// The operator sequences tried with `gene` under `goal`: none, then each
/// one the goal uses (for a scope escape, each widening of another
/// dimension).
fn sequences(gene: &Gene, goal: &Goal) -> Vec<Vec<Operator>> {
    let singles: Vec<Vec<Operator>> = match gene {
        Gene::ScopeEscape { widening, .. } => DIMENSIONS
            .iter()
            .filter(|(d, _)| d != widening)
            .map(|(_, op)| vec![*op])
            .collect(),
        Gene::PromptInjection { .. } => Vec::new(),
        _ => goal_operators(goal)
            .into_iter()
            .map(|op| vec![op])
            .collect(),
    };
    std::iter::once(Vec::new()).chain(singles).collect()
}

/// Every enumerated action over `scenario`.
fn enumerated(scenario: &Scenario, paths: &BTreeSet<Goal>) -> Vec<AdversaryAction> {
    let scopes = declared_scopes(scenario).expect("scopes");
    let servers: Vec<String> = scenario
        .file()
        .servers
        .iter()
        .map(|s| s.id.clone())
        .collect();
    let mut actions = Vec::new();
    let mut member = 0u32;
    let bases = base_steps(scenario).expect("base steps");
    for (genes, goals) in classes(&servers, paths) {
        let Some(first) = genes.first() else { continue };
        let params =
            ClassParams::from_table(first.class(), None, "p", &servers).expect("default params");
        for goal in &goals {
            for gene in &genes {
                for operators in sequences(gene, goal) {
                    let actor = Actor {
                        population: "enumerated",
                        member,
                        gene,
                        operators: &operators,
                        goal,
                    };
                    member += 1;
                    actions.extend(bases.iter().filter_map(|base| {
                        mutate_with(scenario, &scopes, &params, &actor, base, 0)
                    }));
                }
            }
        }
    }
    actions
}

/// What a switch does to the enumerated set of one scenario.
#[derive(Default)]
struct Reach {
    /// Actions the intact kernel denies and the switch admits.
    loosened: usize,
    /// The first of them, in words.
    first_loosened: Option<String>,
    /// Escapes the search's scoring counts.
    escapes: usize,
    /// The first escape, in words.
    first_escape: Option<String>,
}

/// Evaluates `actions` with `weakness` planted.
fn evaluate(
    evaluator: &mut KernelActionEvaluator,
    actions: &[AdversaryAction],
    weakness: Option<Weakness>,
) -> Vec<ActionOutcome> {
    planted::select(weakness);
    let outcomes = evaluator.evaluate_batch(actions);
    planted::select(None);
    outcomes.expect("the batch evaluates")
}

fn words(action: &AdversaryAction) -> String {
    let goal = action.goal.as_ref().map_or("-", Goal::as_str);
    format!("{} {goal} {:?}", action.id, action.operators)
}

/// The switches made from surviving mutants (and the attenuation switch
/// planted by hand): every switch outside the guards' normalisations, the
/// budget stage and the pinned definitions, which the search benchmark
/// measures on their own worlds.
fn survivor_switches() -> Vec<Weakness> {
    Weakness::ALL
        .into_iter()
        .filter(|w| {
            !matches!(
                w.guard_kind(),
                "prompt-injection" | "forbidden-path" | "budget" | "scope"
            )
        })
        .collect()
}

// Nothing planted, no enumerated action escapes on any reference scenario; every survivor's switch that loosens some enumerated action's verdict is found.
#[test]
fn the_enumerated_set_finds_every_switch_that_loosens_a_verdict() {
    let switches = survivor_switches();
    let scenarios = reference_scenarios();
    let paths = path_goals(&scenarios);
    let mut reach: BTreeMap<Weakness, Reach> = BTreeMap::new();
    let mut evaluated = 0usize;
    let mut undefended: BTreeMap<&str, usize> = BTreeMap::new();
    for path in &scenarios {
        let scenario = load_scenario(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        // A seed scenario without a world has nothing to evaluate.
        let Ok(mut evaluator) = KernelActionEvaluator::load(&scenario) else {
            continue;
        };
        let actions = enumerated(&scenario, &paths);
        evaluated += actions.len();
        let intact = evaluate(&mut evaluator, &actions, None);
        // A goal whose guard the world does not declare (an injection or
        // a forbidden path in a world without that guard) escapes with
        // nothing planted; those actions measure no switch. The kernel's
        // own checks hold in every world.
        let mut defended = vec![true; actions.len()];
        for (i, (action, outcome)) in actions.iter().zip(&intact).enumerate() {
            if ActionResult::score(action, outcome) != ActionResult::Survived {
                continue;
            }
            defended[i] = false;
            let goal = action.goal.as_ref().map_or("-", Goal::as_str);
            *undefended.entry(goal).or_default() += 1;
            assert!(
                matches!(goal, "smuggle-instruction" | "reach-forbidden-path"),
                "{path:?} escapes with nothing planted: {}",
                words(action)
            );
        }
        for w in &switches {
            let planted = evaluate(&mut evaluator, &actions, Some(*w));
            let entry = reach.entry(*w).or_default();
            let counted = actions.iter().zip(&intact).zip(&planted).zip(&defended);
            for (((action, before), after), _) in counted.filter(|(_, d)| **d) {
                if before.projected == ProjectedVerdict::Deny
                    && after.projected != ProjectedVerdict::Deny
                {
                    entry.loosened += 1;
                    entry
                        .first_loosened
                        .get_or_insert_with(|| format!("{}: {}", scenario.id(), words(action)));
                }
                if ActionResult::score(action, after) == ActionResult::Survived {
                    entry.escapes += 1;
                    entry
                        .first_escape
                        .get_or_insert_with(|| format!("{}: {}", scenario.id(), words(action)));
                }
            }
        }
    }
    println!("| switch | loosened | escapes | first escape | first loosened |");
    println!("|---|---:|---:|---|---|");
    for w in &switches {
        let r = &reach[w];
        println!(
            "| {} | {} | {} | {} | {} |",
            w.as_str(),
            r.loosened,
            r.escapes,
            r.first_escape.as_deref().unwrap_or("-"),
            r.first_loosened.as_deref().unwrap_or("-")
        );
    }
    println!("enumerated actions evaluated: {evaluated}");
    println!("escapes with nothing planted, in worlds without the goal's guard: {undefended:?}");
    assert!(evaluated > 1000, "only {evaluated} actions");
    let missed: Vec<&str> = switches
        .iter()
        .filter(|w| reach[w].loosened > 0 && reach[w].escapes == 0)
        .map(|w| w.as_str())
        .collect();
    assert!(
        missed.is_empty(),
        "loosened a verdict but never found: {missed:?}"
    );
    let found: Vec<&str> = switches
        .iter()
        .filter(|w| reach[w].escapes > 0)
        .map(|w| w.as_str())
        .collect();
    assert_eq!(
        found,
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
            "integrity-reads-no-labels",
            "labels-only-for-handovers",
            "writes-meet-read-globs",
            "allowlist-inverted",
            "tool-budget-agent-inverted",
            "tool-budget-server-inverted",
            "tool-budget-tool-inverted",
        ],
        "the switches found"
    );
}
