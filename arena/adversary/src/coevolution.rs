//! Co-evolution of adversary populations against the kernel, with
//! composable operator genomes.
//!
//! Every declared population seeds a lineage; each lineage breeds its own
//! pool of `population_size` populations per generation (the block's
//! `population_size`, else [`EvolveConfig::population_size`]), so a scenario
//! that declares one population still evolves. Order of work for one
//! generation `g`:
//! 1. score every population over `fitness_rounds` rounds through the
//!    [`ActionEvaluator`] (a population already scored under the same name,
//!    such as an elite, keeps its sample: its actions do not depend on the
//!    generation, so re-evaluating it would give the same bytes). From
//!    generation 1 on, a newly scored population earns a novelty bonus of
//!    100,000 ppm per pipeline outcome (stage, guard, detector detail,
//!    result) its lineage had not met before in the run, at most five
//!    (generation 0 only fills the archive);
//! 2. rank the samples (survival rate descending, fitness descending, name
//!    ascending) and record the generation: its samples, populations, best,
//!    best and mean fitness, escapes and new actions;
//! 3. stop after the last generation, or when the [`BudgetControl`] says so;
//! 4. otherwise breed generation `g + 1` from the generation stream of
//!    `g + 1` ([`chio_arena::ArenaRng::generation_stream`]), lineage by lineage
//!    in name order: keep the lineage's top `elite_count` populations (at
//!    most the pool's size less one, so a generation always breeds); fill
//!    the pool with offspring, each from two parents drawn on a
//!    fitness-proportional wheel (weight: fitness in millionths plus
//!    100,000, so a population with no progress still reproduces): member
//!    genes crossed uniformly, operator sequences spliced at one point (the
//!    head of one parent's sequence, the tail of the other's, at most
//!    `max_operators` long); then every member whose gene and genome the
//!    lineage has already evaluated is mutated (insert, delete or replace an
//!    operator of the goal's families, or change one gene field unless the
//!    gene does not shape the goal's actions) until it is new, at most
//!    sixteen tries; name the child `<lineage>.g<g+1>-<k>`.
//!
//! Nothing here reads a clock: the wall budget is the caller's, behind
//! [`BudgetControl`].

use std::collections::{BTreeMap, BTreeSet};

use rand_core::RngCore;
use serde::{Deserialize, Serialize};

use crate::fitness::{
    evaluate_population, ActionEvaluator, FitnessReport, FitnessSample, SampleCache,
};
use crate::gene::mutate_field;
use crate::operators::{goal_operators, Operator};
use crate::population::{populations_from_scenario, AdversaryPopulation};
use chio_arena::adversaries::class::{ClassParams, Gene};
use chio_arena::error::ArenaError;
use chio_arena::Scenario;

/// Schema id of the generation trace.
pub const TRACE_SCHEMA: &str = "chio.arena.evolve-trace/v2";

/// How offspring are mutated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MutationConfig {
    /// Most mutation steps one member takes per try (0 turns mutation off).
    pub max_mutations: u32,
    /// Longest operator sequence a genome may grow to.
    #[serde(default = "default_max_operators")]
    pub max_operators: u32,
}

fn default_max_operators() -> u32 {
    DEFAULT_MAX_OPERATORS
}

/// Longest operator sequence by default.
pub const DEFAULT_MAX_OPERATORS: u32 = 4;
/// Populations per lineage per generation by default.
pub const DEFAULT_POPULATION_SIZE: u32 = 8;
/// Fitness bonus per new pipeline outcome, in millionths.
pub const NOVELTY_BONUS_PPM: u64 = 100_000;
/// New outcomes one population is rewarded for at most.
pub const NOVELTY_CAP: u64 = 5;

impl Default for MutationConfig {
    fn default() -> Self {
        Self {
            max_mutations: 1,
            max_operators: DEFAULT_MAX_OPERATORS,
        }
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
    /// Populations each lineage breeds per generation, unless its block says.
    #[serde(default = "default_population_size")]
    pub population_size: u32,
}

fn default_population_size() -> u32 {
    DEFAULT_POPULATION_SIZE
}

impl Default for EvolveConfig {
    fn default() -> Self {
        Self {
            generations: 4,
            elite_count: 1,
            fitness_rounds: 2,
            mutation: MutationConfig::default(),
            population_size: DEFAULT_POPULATION_SIZE,
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
    /// The best population's fitness.
    #[serde(default)]
    pub best_fitness: f64,
    /// The mean fitness over the generation's populations.
    #[serde(default)]
    pub mean_fitness: f64,
    /// Escapes (survivals) over the generation's samples.
    #[serde(default)]
    pub escapes: u32,
    /// Actions evaluated for the first time in this generation.
    #[serde(default)]
    pub new_actions: u64,
    /// Pipeline outcomes met for the first time in this generation.
    #[serde(default)]
    pub novel_outcomes: u32,
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
    /// The first generation with an escape, if any.
    #[serde(default)]
    pub first_escape_generation: Option<u32>,
    /// Kernel evaluations spent up to and including that generation.
    #[serde(default)]
    pub evaluations_to_first_escape: Option<u64>,
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
    if config.generations == 0 || config.fitness_rounds == 0 || config.population_size == 0 {
        return Err(ArenaError::Evaluation {
            cause: "generations, fitness_rounds and population_size must be at least 1".to_string(),
        });
    }
    let mut cache = SampleCache::new();
    let mut seen_genomes = genome_keys(&populations);
    let mut seen_outcomes: BTreeSet<String> = BTreeSet::new();
    let mut result = EvolutionResult {
        config: *config,
        generations_completed: 0,
        stopped_by_budget: false,
        trace: Vec::new(),
        actions_evaluated: 0,
        kernel_evaluations: 0,
        first_escape_generation: None,
        evaluations_to_first_escape: None,
    };
    for generation in 0..config.generations {
        let mut samples = Vec::with_capacity(populations.len());
        let mut new_actions = 0u64;
        let mut novel_total = 0u32;
        for population in &populations {
            let sample = match cache.get(&population.name) {
                Some(sample) => sample.clone(),
                None => {
                    let sample = fresh_sample(
                        scenario,
                        population,
                        (config.fitness_rounds, generation),
                        evaluator,
                        &mut seen_outcomes,
                    )?;
                    novel_total += sample.novel_outcomes;
                    new_actions += u64::from(sample.total_actions);
                    result.actions_evaluated += u64::from(sample.total_actions);
                    result.kernel_evaluations += sample.kernel_evaluations;
                    cache.insert(population.name.clone(), sample.clone());
                    sample
                }
            };
            samples.push(sample);
        }
        let report = FitnessReport::new(generation, samples);
        let record = generation_record(
            generation,
            &report,
            &populations,
            (new_actions, novel_total),
        );
        if record.escapes > 0 && result.first_escape_generation.is_none() {
            result.first_escape_generation = Some(generation);
            result.evaluations_to_first_escape = Some(result.kernel_evaluations);
        }
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
            &mut seen_genomes,
        )?;
    }
    Ok(result)
}

/// What identifies every member's genome of the first populations.
fn genome_keys(populations: &[AdversaryPopulation]) -> BTreeSet<String> {
    let mut seen_genomes: BTreeSet<String> = BTreeSet::new();
    for population in populations {
        for (i, gene) in population.members.iter().enumerate() {
            seen_genomes.insert(genome_key(&population.lineage, gene, population.genome(i)));
        }
    }
    seen_genomes
}

/// Evaluates a population not seen before, counting the outcomes new to
/// its lineage; after generation 0 each adds a bounded novelty bonus.
fn fresh_sample(
    scenario: &Scenario,
    population: &AdversaryPopulation,
    (fitness_rounds, generation): (u32, u32),
    evaluator: &mut dyn ActionEvaluator,
    seen_outcomes: &mut BTreeSet<String>,
) -> Result<FitnessSample, ArenaError> {
    let mut sample = evaluate_population(scenario, population, fitness_rounds, evaluator)?;
    let mut novel = 0u32;
    for record in &sample.records {
        let key = format!("{}|{}", population.lineage, record.outcome_signature());
        if seen_outcomes.insert(key) {
            novel += 1;
        }
    }
    sample.novel_outcomes = novel;
    // Generation 0 fills the archive: nothing is new against nothing.
    if generation > 0 {
        sample.fitness_ppm += u64::from(novel).min(NOVELTY_CAP) * NOVELTY_BONUS_PPM;
    }
    Ok(sample)
}

/// The record of one generation: its samples, populations, fitness and
/// what it added.
fn generation_record(
    generation: u32,
    report: &FitnessReport,
    populations: &[AdversaryPopulation],
    (new_actions, novel_outcomes): (u64, u32),
) -> GenerationRecord {
    let escapes: u32 = report.samples.iter().map(|s| s.survivals).sum();
    let fitnesses: Vec<f64> = report.samples.iter().map(FitnessSample::fitness).collect();
    GenerationRecord {
        generation,
        best_population: report.best().map(|s| s.population.clone()),
        samples: report.samples.clone(),
        populations: populations.to_vec(),
        best_fitness: fitnesses.iter().copied().fold(0.0, f64::max),
        mean_fitness: if fitnesses.is_empty() {
            0.0
        } else {
            fitnesses.iter().sum::<f64>() / fitnesses.len() as f64
        },
        escapes,
        new_actions,
        novel_outcomes,
    }
}

/// What identifies a member's genome within its lineage.
fn genome_key(lineage: &str, gene: &Gene, operators: &[Operator]) -> String {
    let ops: Vec<String> = operators.iter().map(Operator::as_str).collect();
    format!("{lineage}|{}|{}", gene.label(), ops.join(","))
}

/// Spins the wheel over `candidates` (indices into `ranked`).
fn spin(ranked: &[&FitnessSample], candidates: &[usize], rng: &mut dyn RngCore) -> usize {
    let weights: Vec<u64> = candidates
        .iter()
        .map(|i| ranked[*i].fitness_ppm + 100_000)
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

/// One mutation step on a member: insert, delete or replace an operator of
/// the goal's families, or change one gene field.
fn mutate_member(
    gene: &mut Gene,
    genome: &mut Vec<Operator>,
    params: &ClassParams,
    operators: &[Operator],
    max_operators: usize,
    gene_mutable: bool,
    rng: &mut dyn RngCore,
) {
    let roll = rng.next_u32() % if gene_mutable { 8 } else { 6 };
    let pick = |rng: &mut dyn RngCore| operators[(rng.next_u32() as usize) % operators.len()];
    match roll {
        4 if !genome.is_empty() => {
            let at = (rng.next_u32() as usize) % genome.len();
            genome.remove(at);
        }
        5 if !genome.is_empty() && !operators.is_empty() => {
            let at = (rng.next_u32() as usize) % genome.len();
            genome[at] = pick(rng);
        }
        6 | 7 => *gene = mutate_field(gene, params, rng),
        _ if !operators.is_empty() && genome.len() < max_operators => {
            let at = (rng.next_u32() as usize) % (genome.len() + 1);
            let op = pick(rng);
            genome.insert(at, op);
        }
        _ if !operators.is_empty() && !genome.is_empty() => {
            let at = (rng.next_u32() as usize) % genome.len();
            genome[at] = pick(rng);
        }
        _ if gene_mutable => *gene = mutate_field(gene, params, rng),
        _ => {}
    }
}

/// Breeds generation `next` from the current populations and their report.
fn breed(
    scenario: &Scenario,
    config: &EvolveConfig,
    current: &[AdversaryPopulation],
    report: &FitnessReport,
    next: u32,
    seen: &mut BTreeSet<String>,
) -> Result<Vec<AdversaryPopulation>, ArenaError> {
    let mut rng = scenario.rng().generation_stream(next);
    let by_name = |name: &str| current.iter().find(|p| p.name == name);
    let lineages = lineages(report);
    let max_operators = config.mutation.max_operators as usize;
    let mut bred = Vec::new();
    for (lineage, ranked) in lineages {
        let seed = by_name(&ranked[0].population).ok_or_else(|| broken("a lineage's best"))?;
        let size = seed.pool_size.unwrap_or(config.population_size).max(1) as usize;
        // At least one offspring a generation, so every generation tries
        // something new even when the pool is no larger than the elites.
        let elites = (config.elite_count as usize)
            .min(ranked.len())
            .min(size.saturating_sub(1));
        for sample in &ranked[..elites] {
            bred.push(
                by_name(&sample.population)
                    .ok_or_else(|| broken("an elite"))?
                    .clone(),
            );
        }
        let all: Vec<usize> = (0..ranked.len()).collect();
        let operators = goal_operators(&seed.goal);
        // A path goal names its own path, an outlived revocation its own
        // moment: the class gene changes nothing there.
        let gene_mutable = seed.goal.uses_gene();
        for k in 0..size - elites {
            let a = by_name(&ranked[spin(&ranked, &all, &mut rng)].population)
                .ok_or_else(|| broken("a parent"))?;
            let b = by_name(&ranked[spin(&ranked, &all, &mut rng)].population)
                .ok_or_else(|| broken("a parent"))?;
            let (mut members, mut genomes) = crossover(a, b, max_operators, &mut rng);
            if config.mutation.max_mutations > 0 {
                for (gene, genome) in members.iter_mut().zip(genomes.iter_mut()) {
                    let mut tries = 0;
                    while seen.contains(&genome_key(lineage, gene, genome)) && tries < 16 {
                        let steps = 1 + rng.next_u32() % config.mutation.max_mutations;
                        for _ in 0..steps {
                            mutate_member(
                                gene,
                                genome,
                                &a.params,
                                &operators,
                                max_operators,
                                gene_mutable,
                                &mut rng,
                            );
                        }
                        tries += 1;
                    }
                    seen.insert(genome_key(lineage, gene, genome));
                }
            }
            let name = format!("{lineage}.g{next}-{k}");
            bred.push(
                AdversaryPopulation::new(
                    &name,
                    &a.lineage,
                    &a.seed_ref,
                    a.params.clone(),
                    members,
                )?
                .with_goal(a.goal.clone(), a.pool_size)
                .with_genomes(genomes),
            );
        }
    }
    Ok(bred)
}

/// The samples of each lineage, in the report's order (best first).
fn lineages(report: &FitnessReport) -> BTreeMap<&str, Vec<&FitnessSample>> {
    let mut lineages: BTreeMap<&str, Vec<&FitnessSample>> = BTreeMap::new();
    for sample in &report.samples {
        lineages
            .entry(sample.lineage.as_str())
            .or_default()
            .push(sample);
    }
    lineages
}

/// Crosses two parents member by member: each gene from either parent, and
/// each genome the head of `a`'s cut joined to the tail of `b`'s, at most
/// `max_operators` long.
fn crossover(
    a: &AdversaryPopulation,
    b: &AdversaryPopulation,
    max_operators: usize,
    rng: &mut dyn RngCore,
) -> (Vec<Gene>, Vec<Vec<Operator>>) {
    let mut members = Vec::with_capacity(a.members.len());
    let mut genomes = Vec::with_capacity(a.members.len());
    for (i, gene) in a.members.iter().enumerate() {
        let gene = match b.members.get(i) {
            Some(other) if rng.next_u32() % 2 == 1 => other.clone(),
            _ => gene.clone(),
        };
        let head = a.genome(i);
        let tail = b.genome(i);
        let cut_a = (rng.next_u32() as usize) % (head.len() + 1);
        let cut_b = (rng.next_u32() as usize) % (tail.len() + 1);
        let mut genome: Vec<Operator> = head[..cut_a]
            .iter()
            .chain(&tail[cut_b..])
            .copied()
            .collect();
        genome.truncate(max_operators);
        members.push(gene);
        genomes.push(genome);
    }
    (members, genomes)
}

fn broken(what: &str) -> ArenaError {
    ArenaError::Evaluation {
        cause: format!("co-evolution lost {what}; this is a bug, report it with the scenario"),
    }
}
