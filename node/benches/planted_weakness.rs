//! The search benchmark: planted weaknesses.
//!
//! For the hardened guards and then for each guard mutant of the kernel's
//! `planted-weakness` feature (`chio_kernel::planted::Weakness`), runs
//! `evolve` with the default configuration and a budget of 200 generations
//! over `scenarios/planted-weakness-benchmark.toml` (guard mutants),
//! `scenarios/planted-budget-benchmark.toml` (budget mutants),
//! `scenarios/adversaries-rug-pull.toml` (the skipped pinned-digest
//! comparison), `scenarios/adversaries-tool-poisoning.toml` (the skipped
//! definition scan) or, for the attenuation switches (the one planted by
//! hand and those made from the kernel's surviving mutants), the delegation
//! worlds in turn until one yields an escape:
//! `scenarios/three_agent_triangular_delegation.toml` (no invocation limit),
//! `scenarios/deny_reasons.toml` (limited grants and a limited delegation)
//! and `scenarios/monetary_scope.toml` (a grant carrying a monetary
//! constraint), each with a `scope-escape` population after
//! `widen-delegation`, stopping a mutant's
//! run at the first generation with an escape. The switches made from the
//! later mutation runs' survivors (integrity, labels, shares, signature,
//! approval, path-allowlist and binding kinds) are measured over every
//! reference scenario by `tests/planted_enumeration.rs`, not here. Prints, per run, whether an
//! escape was found, the generation and the kernel evaluations it took, and
//! the first escape's operator sequence in words; then the detection rate
//! and the median generations and evaluations to the first escape. The
//! hardened run never stops early: it must finish all 200 generations with
//! zero escapes.
//!
//! Run: `cargo bench -p chio-node --bench planted_weakness --features planted-weakness`
//! (`CHIO_BENCH_GENERATIONS` overrides the 200-generation budget).

use std::path::Path;

use chio_adversary::coevolution::{evolve_with, BudgetControl, GenerationRecord};
use chio_adversary::{describe, ActionResult, EvolutionResult, EvolveConfig};
use chio_arena::{load_scenario, parse_scenario};
use chio_kernel::planted::{self, Weakness};
use chio_node::evaluator::KernelActionEvaluator;

/// Stops a run after the first generation with an escape, when told to.
struct StopAtEscape {
    stop: bool,
}

impl BudgetControl for StopAtEscape {
    fn after_generation(&mut self, record: &GenerationRecord) -> bool {
        !(self.stop && record.escapes > 0)
    }
}

/// The first escape of a run, in words.
fn first_escape(result: &EvolutionResult) -> String {
    for record in &result.trace {
        for sample in &record.samples {
            if let Some(r) = sample
                .records
                .iter()
                .find(|r| r.result == ActionResult::Survived)
            {
                return format!("{} ({}): {}", r.action, r.gene, describe(&r.operators));
            }
        }
    }
    "-".to_string()
}

fn median(mut values: Vec<u64>) -> Option<f64> {
    values.sort_unstable();
    let n = values.len();
    if n == 0 {
        return None;
    }
    Some(if n % 2 == 1 {
        values[n / 2] as f64
    } else {
        (values[n / 2 - 1] + values[n / 2]) as f64 / 2.0
    })
}

/// The benchmark world a run searches: the guards' world for guard
/// mutants (and the hardened guards), the budget world for budget mutants.
fn world_of(name: &str) -> chio_arena::Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name);
    load_scenario(&path).expect("scenario loads")
}

/// A reference world (`name`) with a `scope-escape` population after
/// `widen-delegation`: an attenuation switches' world.
fn delegation_world(name: &str) -> chio_arena::Scenario {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let text = std::fs::read_to_string(dir.join(name)).expect("the reference scenario reads");
    let population = "[[adversaries]]\nclass = \"scope-escape\"\npopulation = \"escape\"\nseed_ref = \"corpus/escape\"\ngoal = \"widen-delegation\"\n";
    parse_scenario(&format!("{text}\n{population}"), &dir).expect("scenario parses")
}

/// One search run: `weakness` planted (none: the hardened kernel, which
/// must finish every generation with zero escapes) over `scenario`; prints
/// its row and returns the generation and kernel evaluations to its first
/// escape, when it found one.
fn search(
    weakness: Option<Weakness>,
    scenario: &chio_arena::Scenario,
    config: &EvolveConfig,
) -> Option<(u64, u64)> {
    planted::select(weakness);
    let mut evaluator = KernelActionEvaluator::load(scenario).expect("world resolves");
    let mut control = StopAtEscape {
        stop: weakness.is_some(),
    };
    let result =
        evolve_with(scenario, config, &mut evaluator, &mut control).expect("evolution runs");
    planted::select(None);
    let name = match weakness {
        Some(w) => format!("{}, {}", w.as_str(), scenario.id()),
        None => format!("hardened (none planted), {}", scenario.id()),
    };
    let escaped = result.first_escape_generation.is_some();
    println!(
        "| {name} | {} | {} | {} | {} | {} |",
        if escaped { "yes" } else { "no" },
        result
            .first_escape_generation
            .map_or("-".to_string(), |g| g.to_string()),
        result
            .evaluations_to_first_escape
            .map_or("-".to_string(), |e| e.to_string()),
        result.kernel_evaluations,
        first_escape(&result)
    );
    if weakness.is_none() {
        assert!(
            !escaped,
            "the hardened guards must survive the search with zero escapes"
        );
        assert_eq!(result.generations_completed, config.generations);
        return None;
    }
    result
        .first_escape_generation
        .zip(result.evaluations_to_first_escape)
        .map(|(g, e)| (u64::from(g), e))
}

fn main() {
    let guards_world = world_of("planted-weakness-benchmark.toml");
    let delegation_worlds = [
        delegation_world("three_agent_triangular_delegation.toml"),
        delegation_world("deny_reasons.toml"),
        delegation_world("monetary_scope.toml"),
    ];
    let budget_world = world_of("planted-budget-benchmark.toml");
    let pins_world = world_of("adversaries-rug-pull.toml");
    let poisoning_world = world_of("adversaries-tool-poisoning.toml");
    let generations: u32 = std::env::var("CHIO_BENCH_GENERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let config = EvolveConfig {
        generations,
        ..EvolveConfig::default()
    };
    println!(
        "| guards | found | first escape generation | kernel evaluations to it | run evaluations | first escape |"
    );
    println!("|---|---|---:|---:|---:|---|");
    // The hardened kernel against each world, then each mutant against its
    // own worlds in turn, until one yields an escape.
    for world in [&guards_world, &budget_world, &pins_world, &poisoning_world]
        .into_iter()
        .chain(&delegation_worlds)
    {
        search(None, world, &config);
    }
    let mut found_generations = Vec::new();
    let mut found_evaluations = Vec::new();
    let mut mutants = 0usize;
    for w in Weakness::ALL {
        let worlds: Vec<&chio_arena::Scenario> = match w {
            Weakness::NoDefinitionPins => vec![&pins_world],
            Weakness::NoDefinitionScan => vec![&poisoning_world],
            _ => match w.guard_kind() {
                "budget" => vec![&budget_world],
                "attenuation" => delegation_worlds.iter().collect(),
                "prompt-injection" | "forbidden-path" => vec![&guards_world],
                // The other survivors' switches have no world of their
                // own here: `tests/planted_enumeration.rs` measures them
                // over every reference scenario.
                _ => continue,
            },
        };
        mutants += 1;
        if let Some((g, e)) = worlds
            .into_iter()
            .find_map(|world| search(Some(w), world, &config))
        {
            found_generations.push(g);
            found_evaluations.push(e);
        }
    }
    let found = found_generations.len();
    println!();
    println!(
        "detection rate: {found}/{mutants} ({:.0}%)",
        100.0 * found as f64 / mutants as f64
    );
    if let (Some(g), Some(e)) = (median(found_generations), median(found_evaluations)) {
        println!("median generations to first escape: {g}");
        println!("median kernel evaluations to first escape: {e}");
    }
}
