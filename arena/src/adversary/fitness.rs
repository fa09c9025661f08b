//! Fitness: how many of a population's attacks the guard pool let through.
//!
//! The arena does not evaluate calls; an [`ActionEvaluator`] does, with the
//! real kernel in the scenario's world (the runtime provides one). This
//! module turns populations into actions, hands them to the evaluator one
//! batch per population and fitness round, and scores the answers:
//!
//! - an action expected `deny` that the kernel denied is a **defeat**;
//! - an action expected `deny` that the kernel admitted (allow or rewrite)
//!   is a **survival** (an escape);
//! - an action that stays inside its declared grant is **inside-grant**:
//!   it is reported but counts as neither.
//!
//! Survival rate is survivals over survivals plus defeats, 0 when a
//! population produced no counted action. [`FitnessReport`] ranks samples by
//! survival rate descending, ties by population name ascending.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use chio_kernel::receipt::SignedReceipt;
use chio_kernel::verdict::{ProjectedVerdict, Verdict};
use serde::{Deserialize, Serialize};

use crate::adversary::action::{base_steps, declared_scopes, mutate, AdversaryAction};
use crate::adversary::class::AdversaryClass;
use crate::adversary::population::AdversaryPopulation;
use crate::error::ArenaError;
use crate::Scenario;

/// Evaluates adversary actions against the real kernel in a scenario's world.
pub trait ActionEvaluator {
    /// Evaluates `actions` in order in one fresh instance of the scenario's
    /// world (fresh kernel state and tool servers), returning one outcome
    /// per action in the same order. An infrastructure failure is an error,
    /// never a verdict.
    fn evaluate_batch(
        &mut self,
        actions: &[AdversaryAction],
    ) -> Result<Vec<ActionOutcome>, ArenaError>;
}

/// The kernel's answer to one action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionOutcome {
    /// The kernel's verdict on the action's decisive request.
    pub verdict: Verdict,
    /// The verdict on the scenario alphabet.
    pub projected: ProjectedVerdict,
    /// Why, for every deny.
    pub reason: Option<String>,
    /// The guard that decided, if one did.
    pub guard: Option<String>,
    /// The kernel that decided.
    pub kernel: String,
    /// The signed receipt of the decisive request.
    pub receipt: SignedReceipt,
    /// Kernel evaluations the action took (a replay takes two).
    pub evaluations: u32,
}

/// How an action scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActionResult {
    /// Expected deny, admitted: an escape.
    Survived,
    /// Expected deny, denied.
    Defeated,
    /// Inside the declared grant: not counted.
    InsideGrant,
}

impl ActionResult {
    /// Scores an outcome against what the action expected.
    pub fn score(action: &AdversaryAction, outcome: &ActionOutcome) -> Self {
        if action.inside_grant {
            ActionResult::InsideGrant
        } else if outcome.projected == ProjectedVerdict::Deny {
            ActionResult::Defeated
        } else {
            ActionResult::Survived
        }
    }
}

/// One action's verdict tuple, as reports and traces carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// The action id.
    pub action: String,
    /// The base step.
    pub base_step: String,
    /// The member's gene, as a label.
    pub gene: String,
    /// What the guard pool should have answered.
    pub expected: ProjectedVerdict,
    /// What it answered.
    pub actual: ProjectedVerdict,
    /// The kernel's reason, for a deny.
    pub reason: Option<String>,
    /// The deciding guard, if any.
    pub guard: Option<String>,
    /// The receipt id, content-addressed.
    pub receipt_id: String,
    /// The score.
    pub result: ActionResult,
}

/// One population's fitness over its fitness rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitnessSample {
    /// Population name.
    pub population: String,
    /// Its class.
    pub class: AdversaryClass,
    /// The declared population it descends from.
    pub lineage: String,
    /// Escapes.
    pub survivals: u32,
    /// Denied as expected.
    pub defeats: u32,
    /// Actions inside their grant (not counted).
    pub inside_grant: u32,
    /// Every action evaluated.
    pub total_actions: u32,
    /// Kernel evaluations the actions took.
    pub kernel_evaluations: u64,
    /// Per-action verdict tuples, in evaluation order.
    pub records: Vec<ActionRecord>,
}

impl FitnessSample {
    /// Survivals over survivals plus defeats; 0 when nothing was counted.
    pub fn survival_rate(&self) -> f64 {
        let counted = self.survivals + self.defeats;
        if counted == 0 {
            0.0
        } else {
            f64::from(self.survivals) / f64::from(counted)
        }
    }

    /// The survival rate in millionths, for integer arithmetic (the wheel).
    pub fn survival_ppm(&self) -> u64 {
        let counted = u64::from(self.survivals + self.defeats);
        (u64::from(self.survivals) * 1_000_000)
            .checked_div(counted)
            .unwrap_or(0)
    }
}

/// One generation's samples, ranked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitnessReport {
    /// The generation the samples belong to (0 for a one-shot evaluation).
    pub generation: u32,
    /// Samples by survival rate descending, ties by population name.
    pub samples: Vec<FitnessSample>,
}

impl FitnessReport {
    /// Ranks `samples` into a report.
    pub fn new(generation: u32, mut samples: Vec<FitnessSample>) -> Self {
        samples.sort_by(rank_order);
        Self {
            generation,
            samples,
        }
    }

    /// Total survivals and defeats over every population.
    pub fn totals(&self) -> (u32, u32) {
        self.samples
            .iter()
            .fold((0, 0), |(s, d), x| (s + x.survivals, d + x.defeats))
    }

    /// Survivals over counted actions of every population: the escape rate.
    pub fn escape_rate(&self) -> f64 {
        let (s, d) = self.totals();
        if s + d == 0 {
            0.0
        } else {
            f64::from(s) / f64::from(s + d)
        }
    }

    /// Every action evaluated.
    pub fn total_actions(&self) -> u64 {
        self.samples
            .iter()
            .map(|s| u64::from(s.total_actions))
            .sum()
    }

    /// Kernel evaluations taken.
    pub fn kernel_evaluations(&self) -> u64 {
        self.samples.iter().map(|s| s.kernel_evaluations).sum()
    }

    /// The best population, if any.
    pub fn best(&self) -> Option<&FitnessSample> {
        self.samples.first()
    }
}

/// Survival rate descending, then population name ascending.
pub fn rank_order(a: &FitnessSample, b: &FitnessSample) -> Ordering {
    b.survival_ppm()
        .cmp(&a.survival_ppm())
        .then_with(|| a.population.cmp(&b.population))
}

/// The actions one population takes in one fitness round, in member order
/// then base-step (execution) order.
pub fn actions_for(
    scenario: &Scenario,
    population: &AdversaryPopulation,
    round: u32,
) -> Vec<AdversaryAction> {
    let bases = base_steps(scenario);
    let scopes = declared_scopes(scenario);
    let mut actions = Vec::new();
    for (member, gene) in population.members.iter().enumerate() {
        for base in &bases {
            if let Some(action) = mutate(
                scenario,
                &scopes,
                &population.params,
                &population.name,
                member as u32,
                gene,
                base,
                round,
            ) {
                actions.push(action);
            }
        }
    }
    actions
}

/// Evaluates one population over `rounds` fitness rounds.
pub fn evaluate_population(
    scenario: &Scenario,
    population: &AdversaryPopulation,
    rounds: u32,
    evaluator: &mut dyn ActionEvaluator,
) -> Result<FitnessSample, ArenaError> {
    let mut sample = FitnessSample {
        population: population.name.clone(),
        class: population.class,
        lineage: population.lineage.clone(),
        survivals: 0,
        defeats: 0,
        inside_grant: 0,
        total_actions: 0,
        kernel_evaluations: 0,
        records: Vec::new(),
    };
    for round in 0..rounds {
        let actions = actions_for(scenario, population, round);
        if actions.is_empty() {
            continue;
        }
        let outcomes = evaluator.evaluate_batch(&actions)?;
        if outcomes.len() != actions.len() {
            return Err(ArenaError::Evaluation {
                cause: format!(
                    "the evaluator answered {} outcomes for {} actions",
                    outcomes.len(),
                    actions.len()
                ),
            });
        }
        for (action, outcome) in actions.iter().zip(outcomes) {
            let result = ActionResult::score(action, &outcome);
            match result {
                ActionResult::Survived => sample.survivals += 1,
                ActionResult::Defeated => sample.defeats += 1,
                ActionResult::InsideGrant => sample.inside_grant += 1,
            }
            sample.total_actions += 1;
            sample.kernel_evaluations += u64::from(outcome.evaluations);
            sample.records.push(ActionRecord {
                action: action.id.clone(),
                base_step: action.base_step.clone(),
                gene: action.gene.label(),
                expected: action.expected,
                actual: outcome.projected,
                reason: outcome.reason,
                guard: outcome.guard,
                receipt_id: outcome.receipt.id,
                result,
            });
        }
    }
    Ok(sample)
}

/// Evaluates every population once (generation 0): the one-shot entry for
/// callers that want escape rates without evolving, such as a matrix cell.
pub fn evaluate_populations(
    scenario: &Scenario,
    populations: &[AdversaryPopulation],
    rounds: u32,
    evaluator: &mut dyn ActionEvaluator,
) -> Result<FitnessReport, ArenaError> {
    let mut samples = Vec::with_capacity(populations.len());
    for population in populations {
        samples.push(evaluate_population(
            scenario, population, rounds, evaluator,
        )?);
    }
    Ok(FitnessReport::new(0, samples))
}

/// Samples by population name, for a generation that re-meets a population
/// it already scored (elites are evaluated once).
pub type SampleCache = BTreeMap<String, FitnessSample>;
