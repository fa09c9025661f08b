//! Co-evolution of adversary populations against the kernel (SPEC.md
//! section 8).
//!
//! Order of work for one generation `g`:
//! 1. score every population over `fitness_rounds` rounds through the
//!    [`ActionEvaluator`] (a population already scored under the same name,
//!    such as an elite, keeps its sample: its actions do not depend on the
//!    generation, so re-evaluating it would give the same bytes);
//! 2. rank the samples (survival rate descending, name ascending) and
//!    record the generation: its samples, its populations, its best;
//! 3. stop after the last generation, or when the [`BudgetControl`] says so;
//! 4. otherwise breed generation `g + 1` from the generation stream of
//!    `g + 1` ([`crate::ArenaRng::generation_stream`], the index folded into
//!    the seed with FNV-1a): keep the top `elite_count` populations
//!    unchanged; for each other slot spin a fitness-proportional wheel whose
//!    weights are the survival rate in millionths plus 1,000,000 (the +1
//!    bias, so a population nobody let through still reproduces), spin again
//!    among populations of the first parent's class, cross the two members
//!    uniformly over the first parent's length, then apply one field-aware
//!    mutation to one member that changes between 1 and `max_mutations`
//!    fields; name the child `<lineage>.g<g+1>-<k>`;
//! 5. if a class present at generation 0 has no population left, the best
//!    population of that class from generation `g` replaces the last
//!    offspring whose class still has another population, so no class dies
//!    out.
//!
//! Nothing here reads a clock: the wall budget is the caller's, behind
//! [`BudgetControl`].

use std::collections::BTreeSet;

use rand_core::RngCore;
use serde::{Deserialize, Serialize};

use crate::adversary::class::AdversaryClass;
use crate::adversary::fitness::{
    evaluate_population, ActionEvaluator, FitnessReport, FitnessSample, SampleCache,
};
use crate::adversary::population::{populations_from_scenario, AdversaryPopulation};
use crate::error::ArenaError;
use crate::Scenario;

/// Schema id of the generation trace.
pub const TRACE_SCHEMA: &str = "chio.arena.evolve-trace/v1";

/// How offspring are mutated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MutationConfig {
    /// Most gene fields one mutation changes (0 turns mutation off).
    pub max_mutations: u32,
}

impl Default for MutationConfig {
    fn default() -> Self {
        Self { max_mutations: 1 }
    }
}

/// How a co-evolution runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvolveConfig {
    /// Generations to evaluate (at least 1).
    pub generations: u32,
    /// Populations carried unchanged into the next generation.
    pub elite_count: u32,
    /// Rounds per fitness evaluation; each round draws other details.
    pub fitness_rounds: u32,
    /// Offspring mutation.
    pub mutation: MutationConfig,
}

impl Default for EvolveConfig {
    fn default() -> Self {
        Self {
            generations: 4,
            elite_count: 1,
            fitness_rounds: 2,
            mutation: MutationConfig::default(),
        }
    }
}

/// Decides after each generation whether another may start; the caller's
/// wall budget and progress display live behind it.
pub trait BudgetControl {
    /// Called after generation `record.generation` is recorded; `false`
    /// ends the run cleanly with the generations done.
    fn after_generation(&mut self, record: &GenerationRecord) -> bool;
}

/// A control that never stops early.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unbounded;

impl BudgetControl for Unbounded {
    fn after_generation(&mut self, _record: &GenerationRecord) -> bool {
        true
    }
}

/// One generation in the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationRecord {
    /// The generation index, from 0.
    pub generation: u32,
    /// The best population's name.
    pub best_population: Option<String>,
    /// The ranked samples.
    pub samples: Vec<FitnessSample>,
    /// The populations evaluated, in the order they were bred.
    pub populations: Vec<AdversaryPopulation>,
}

/// What a co-evolution produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvolutionResult {
    /// The configuration it ran with.
    pub config: EvolveConfig,
    /// Generations evaluated.
    pub generations_completed: u32,
    /// Whether the budget ended the run before `config.generations`.
    pub stopped_by_budget: bool,
    /// Every generation, in order.
    pub trace: Vec<GenerationRecord>,
    /// Actions evaluated (elites scored once).
    pub actions_evaluated: u64,
    /// Kernel evaluations those actions took.
    pub kernel_evaluations: u64,
}

impl EvolutionResult {
    /// The last generation's ranked report.
    pub fn final_report(&self) -> FitnessReport {
        match self.trace.last() {
            Some(last) => FitnessReport {
                generation: last.generation,
                samples: last.samples.clone(),
            },
            None => FitnessReport::new(0, Vec::new()),
        }
    }
}

/// Evolves the scenario's populations with no budget besides `config`.
pub fn evolve(
    scenario: &Scenario,
    config: &EvolveConfig,
    evaluator: &mut dyn ActionEvaluator,
) -> Result<EvolutionResult, ArenaError> {
    evolve_with(scenario, config, evaluator, &mut Unbounded)
}

/// Evolves the scenario's populations; `control` may end the run after any
/// generation.
pub fn evolve_with(
    scenario: &Scenario,
    config: &EvolveConfig,
    evaluator: &mut dyn ActionEvaluator,
    control: &mut dyn BudgetControl,
) -> Result<EvolutionResult, ArenaError> {
    let mut populations = populations_from_scenario(scenario)?;
    if populations.is_empty() {
        return Err(ArenaError::NoAdversaries);
    }
    if config.generations == 0 || config.fitness_rounds == 0 {
        return Err(ArenaError::Evaluation {
            cause: "generations and fitness_rounds must be at least 1".to_string(),
        });
    }
    let classes: BTreeSet<AdversaryClass> = populations.iter().map(|p| p.class).collect();
    let mut cache = SampleCache::new();
    let mut result = EvolutionResult {
        config: *config,
        generations_completed: 0,
        stopped_by_budget: false,
        trace: Vec::new(),
        actions_evaluated: 0,
        kernel_evaluations: 0,
    };
    for generation in 0..config.generations {
        let mut samples = Vec::with_capacity(populations.len());
        for population in &populations {
            let sample = match cache.get(&population.name) {
                Some(sample) => sample.clone(),
                None => {
                    let sample = evaluate_population(
                        scenario,
                        population,
                        config.fitness_rounds,
                        evaluator,
                    )?;
                    result.actions_evaluated += u64::from(sample.total_actions);
                    result.kernel_evaluations += sample.kernel_evaluations;
                    cache.insert(population.name.clone(), sample.clone());
                    sample
                }
            };
            samples.push(sample);
        }
        let report = FitnessReport::new(generation, samples);
        let record = GenerationRecord {
            generation,
            best_population: report.best().map(|s| s.population.clone()),
            samples: report.samples.clone(),
            populations: populations.clone(),
        };
        result.generations_completed = generation + 1;
        let last = generation + 1 == config.generations;
        let go_on = control.after_generation(&record);
        result.trace.push(record);
        if last {
            break;
        }
        if !go_on {
            result.stopped_by_budget = true;
            break;
        }
        populations = breed(
            scenario,
            config,
            &populations,
            &report,
            generation + 1,
            &classes,
        )?;
    }
    Ok(result)
}

/// Spins the wheel over `candidates` (indices into `ranked`).
fn spin(ranked: &[&FitnessSample], candidates: &[usize], rng: &mut dyn RngCore) -> usize {
    let weights: Vec<u64> = candidates
        .iter()
        .map(|i| ranked[*i].survival_ppm() + 1_000_000)
        .collect();
    let total: u64 = weights.iter().sum();
    let mut ticket = rng.next_u64() % total.max(1);
    for (candidate, weight) in candidates.iter().zip(weights) {
        if ticket < weight {
            return *candidate;
        }
        ticket -= weight;
    }
    candidates[candidates.len() - 1]
}

/// Breeds generation `next` from the current populations and their report.
fn breed(
    scenario: &Scenario,
    config: &EvolveConfig,
    current: &[AdversaryPopulation],
    report: &FitnessReport,
    next: u32,
    classes: &BTreeSet<AdversaryClass>,
) -> Result<Vec<AdversaryPopulation>, ArenaError> {
    let mut rng = scenario.rng().generation_stream(next);
    let by_name = |name: &str| current.iter().find(|p| p.name == name);
    let ranked: Vec<&FitnessSample> = report.samples.iter().collect();
    let size = current.len();
    let elites = (config.elite_count as usize).min(size);
    let mut bred: Vec<AdversaryPopulation> = ranked[..elites]
        .iter()
        .filter_map(|s| by_name(&s.population).cloned())
        .collect();
    let all: Vec<usize> = (0..ranked.len()).collect();
    for k in 0..size - elites {
        let a_index = spin(&ranked, &all, &mut rng);
        let a = by_name(&ranked[a_index].population).ok_or_else(|| broken("a parent"))?;
        let same_class: Vec<usize> = all
            .iter()
            .copied()
            .filter(|i| ranked[*i].class == a.class)
            .collect();
        let b_index = spin(&ranked, &same_class, &mut rng);
        let b = by_name(&ranked[b_index].population).ok_or_else(|| broken("a parent"))?;
        let mut members: Vec<_> = a
            .members
            .iter()
            .enumerate()
            .map(|(i, gene)| match b.members.get(i) {
                Some(other) if rng.next_u32() % 2 == 1 => other.clone(),
                _ => gene.clone(),
            })
            .collect();
        if config.mutation.max_mutations > 0 && !members.is_empty() {
            let target = (rng.next_u32() as usize) % members.len();
            let fields = 1 + rng.next_u32() % config.mutation.max_mutations;
            for _ in 0..fields {
                members[target] = members[target].mutate_field(&a.params, &mut rng);
            }
        }
        let name = format!("{}.g{next}-{k}", a.lineage);
        bred.push(AdversaryPopulation::new(
            &name,
            &a.lineage,
            &a.seed_ref,
            a.params.clone(),
            members,
        )?);
    }
    for class in classes {
        if bred.iter().any(|p| p.class == *class) {
            continue;
        }
        let keeper = ranked
            .iter()
            .find(|s| s.class == *class)
            .and_then(|s| by_name(&s.population))
            .ok_or_else(|| broken("the class keeper"))?
            .clone();
        let slot = (elites..bred.len())
            .rev()
            .find(|i| bred.iter().filter(|p| p.class == bred[*i].class).count() > 1)
            .ok_or_else(|| broken("a slot for the class keeper"))?;
        bred[slot] = keeper;
    }
    Ok(bred)
}

fn broken(what: &str) -> ArenaError {
    ArenaError::Evaluation {
        cause: format!("co-evolution lost {what}; this is a bug, report it with the scenario"),
    }
}
