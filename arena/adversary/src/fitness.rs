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
//! An action the kernel admitted counts as a survival only when its goal was
//! reached (the evaluator's oracle, [`Feedback::goal_reached`]): a payload
//! that an operator garbled past reading, or a path that names another
//! file, is **goal-missed** and counts as neither.
//!
//! Survival rate is survivals over survivals plus defeats, 0 when a
//! population produced no counted action. Fitness rewards progress before
//! the first escape: each action scores how far it got in thousandths
//! ([`progress`]: the pipeline stage that stopped it, how hard the kernel's
//! reference detector had to look to read the payload, whether it was
//! admitted), and a population's fitness is the mean of its actions'
//! progress in millionths, plus a novelty bonus the co-evolution adds for
//! pipeline outcomes not seen before in the run. [`FitnessReport`] ranks
//! samples by survival rate descending, then fitness descending, ties by
//! population name ascending.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use chio_kernel::receipt::SignedReceipt;
use chio_kernel::verdict::{ProjectedVerdict, Verdict};
use serde::{Deserialize, Serialize};

use crate::action::{base_steps, declared_scopes, mutate_with, Actor, AdversaryAction};
use crate::operators::Operator;
use crate::population::AdversaryPopulation;
use chio_arena::adversaries::class::AdversaryClass;
use chio_arena::adversaries::goal::Goal;
use chio_arena::error::ArenaError;
use chio_arena::Scenario;

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
    /// The signed receipt of the decisive request; `None` when no kernel
    /// decided it (the node hosting the kernel was down when the action
    /// was made, so the call never reached a kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<SignedReceipt>,
    /// Kernel evaluations the action took (a replay takes two).
    pub evaluations: u32,
    /// What the search learns beyond the verdict: stage, closeness, the goal oracle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<Feedback>,
}

/// The pipeline stage that stopped an action, read off the kernel's deny
/// reason (the table in the kernel crate's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Capability signature, validity or delegation chain.
    Signature,
    /// Revocation lookup.
    Revocation,
    /// Proof of possession, freshness or replay.
    Binding,
    /// Scope grant and constraints.
    Scope,
    /// Invocation, tool or monetary budget.
    Budget,
    /// A guard before dispatch.
    Guard,
    /// Sibling shares, dispatch or the receipt store.
    Dispatch,
    /// The output scan after dispatch.
    Output,
    /// Nothing stopped it: the kernel admitted it.
    Admitted,
}

impl Stage {
    /// Classifies a decision by its projected verdict, deny reason and deciding guard.
    pub fn classify(
        projected: ProjectedVerdict,
        reason: Option<&str>,
        guard: Option<&str>,
    ) -> Stage {
        if projected != ProjectedVerdict::Deny {
            return Stage::Admitted;
        }
        let reason = reason.unwrap_or("");
        if reason.contains("output withheld") {
            return Stage::Output;
        }
        if guard.is_some() || reason.starts_with("guard ") {
            return Stage::Guard;
        }
        let starts = |p: &[&str]| p.iter().any(|x| reason.starts_with(x));
        if reason.contains("revoked") || starts(&["revocation"]) {
            Stage::Revocation
        } else if starts(&["capability presented", "proof of possession", "request "])
            || reason.contains("nonce store")
        {
            Stage::Binding
        } else if starts(&["capability", "delegation"]) {
            Stage::Signature
        } else if reason.contains("budget") {
            Stage::Budget
        } else if starts(&[
            "tool ",
            "unknown constraint",
            "constraint",
            "path ",
            "amount",
        ]) {
            Stage::Scope
        } else {
            Stage::Dispatch
        }
    }

    /// The kebab-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Stage::Signature => "signature",
            Stage::Revocation => "revocation",
            Stage::Binding => "binding",
            Stage::Scope => "scope",
            Stage::Budget => "budget",
            Stage::Guard => "guard",
            Stage::Dispatch => "dispatch",
            Stage::Output => "output",
            Stage::Admitted => "admitted",
        }
    }
}

/// What the evaluator reports beyond the verdict, for fitness. The detail
/// comes from the kernel crate's public detector functions run by the
/// evaluator on what it sent and what came back; it never comes from the
/// kernel's decision, which names a pattern and a pointer only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    /// The stage that stopped the action (or `admitted`).
    pub stage: Stage,
    /// How the reference reading found the goal's payload (`rule/reading/depth`), if it did.
    pub detail: Option<String>,
    /// Thousandths: how disguised the payload was when caught, or how close
    /// an admitted but garbled one came to still reading as its goal.
    pub closeness: u16,
    /// The oracle: whether the goal was reached (meaningful for an admitted action).
    pub goal_reached: bool,
    /// The stage the kernel's decision trace names as deciding (its last
    /// stage reached: the one that stopped the call, or the last one it
    /// passed when admitted); absent when no kernel decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_stage: Option<String>,
}

/// How far one action got, in thousandths (1000: an escape).
pub fn progress(
    result: ActionResult,
    feedback: Option<&Feedback>,
    projected: ProjectedVerdict,
) -> u32 {
    let stage = feedback.map_or_else(|| Stage::classify(projected, None, None), |f| f.stage);
    let closeness = u32::from(feedback.map_or(0, |f| f.closeness.min(1000)));
    match result {
        ActionResult::Survived => 1000,
        ActionResult::InsideGrant => 0,
        ActionResult::GoalMissed => 200 + closeness / 10,
        ActionResult::Defeated => match stage {
            Stage::Signature | Stage::Revocation | Stage::Binding => 50,
            Stage::Scope => 150,
            Stage::Budget => 200,
            Stage::Dispatch => 250,
            Stage::Guard => 300 + closeness * 3 / 10,
            Stage::Output => 500 + closeness * 3 / 10,
            Stage::Admitted => 0,
        },
    }
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
    /// Admitted, but the goal was not reached (the payload no longer reads
    /// as its instruction, the path names another file): not counted.
    GoalMissed,
}

impl ActionResult {
    /// Scores an outcome against what the action expected and its goal's oracle.
    pub fn score(action: &AdversaryAction, outcome: &ActionOutcome) -> Self {
        if action.inside_grant {
            ActionResult::InsideGrant
        } else if outcome.projected == ProjectedVerdict::Deny {
            ActionResult::Defeated
        } else if outcome.feedback.as_ref().is_none_or(|f| f.goal_reached) {
            ActionResult::Survived
        } else {
            ActionResult::GoalMissed
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
    /// The receipt id, content-addressed; absent when no kernel decided
    /// the action (its kernel's node was down).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_id: Option<String>,
    /// The score.
    pub result: ActionResult,
    /// The member's operator sequence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<Operator>,
    /// The stage that stopped the action (or `admitted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// The reference reading's detail, if the payload was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// How far the action got, in thousandths.
    #[serde(default)]
    pub progress: u32,
    /// The goal the action pursued, kebab-case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// The stage the kernel's decision trace names as deciding, when a
    /// kernel decided ([`Feedback::decided_stage`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_stage: Option<String>,
}

impl ActionRecord {
    /// The pipeline outcome, for novelty: stage, deciding guard and detail.
    pub fn outcome_signature(&self) -> String {
        format!(
            "{}|{}|{}|{:?}",
            self.stage.map_or("unknown", |s| s.as_str()),
            self.guard.as_deref().unwrap_or("-"),
            self.detail.as_deref().unwrap_or("-"),
            self.result
        )
    }
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
    /// Actions admitted without reaching their goal (not counted).
    #[serde(default)]
    pub goal_missed: u32,
    /// Mean progress in millionths plus the novelty bonus: what breeding selects on.
    #[serde(default)]
    pub fitness_ppm: u64,
    /// Pipeline outcomes this population met first in the run.
    #[serde(default)]
    pub novel_outcomes: u32,
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

    /// The survival rate in millionths, for integer arithmetic.
    pub fn survival_ppm(&self) -> u64 {
        let counted = u64::from(self.survivals + self.defeats);
        (u64::from(self.survivals) * 1_000_000)
            .checked_div(counted)
            .unwrap_or(0)
    }

    /// Fitness in `[0.0, 1.0]` (the novelty bonus can push it to 1.5).
    pub fn fitness(&self) -> f64 {
        self.fitness_ppm as f64 / 1_000_000.0
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

/// Survival rate descending, then fitness descending, then population name ascending.
pub fn rank_order(a: &FitnessSample, b: &FitnessSample) -> Ordering {
    b.survival_ppm()
        .cmp(&a.survival_ppm())
        .then_with(|| b.fitness_ppm.cmp(&a.fitness_ppm))
        .then_with(|| a.population.cmp(&b.population))
}

/// The actions one population takes in one fitness round, in member order
/// then base-step (execution) order.
pub fn actions_for(
    scenario: &Scenario,
    population: &AdversaryPopulation,
    round: u32,
) -> Result<Vec<AdversaryAction>, ArenaError> {
    let bases = base_steps(scenario)?;
    let scopes = declared_scopes(scenario)?;
    let mut actions = Vec::new();
    for (member, gene) in population.members.iter().enumerate() {
        let actor = Actor {
            population: &population.name,
            member: member as u32,
            gene,
            operators: population.genome(member),
            goal: &population.goal,
        };
        for base in &bases {
            if let Some(action) =
                mutate_with(scenario, &scopes, &population.params, &actor, base, round)
            {
                actions.push(action);
            }
        }
    }
    Ok(actions)
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
        goal_missed: 0,
        fitness_ppm: 0,
        novel_outcomes: 0,
        total_actions: 0,
        kernel_evaluations: 0,
        records: Vec::new(),
    };
    let mut progress_sum: u64 = 0;
    for round in 0..rounds {
        let actions = actions_for(scenario, population, round)?;
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
                ActionResult::GoalMissed => sample.goal_missed += 1,
            }
            let progress = progress(result, outcome.feedback.as_ref(), outcome.projected);
            progress_sum += u64::from(progress);
            sample.total_actions += 1;
            sample.kernel_evaluations += u64::from(outcome.evaluations);
            sample
                .records
                .push(action_record(action, outcome, result, progress));
        }
    }
    sample.fitness_ppm = (progress_sum * 1000)
        .checked_div(u64::from(sample.total_actions))
        .unwrap_or(0);
    Ok(sample)
}

/// What the trace keeps of one evaluated action: its outcome, the stage
/// that decided it and the goal it served.
fn action_record(
    action: &AdversaryAction,
    outcome: ActionOutcome,
    result: ActionResult,
    progress: u32,
) -> ActionRecord {
    let stage = Some(outcome.feedback.as_ref().map_or_else(
        || {
            Stage::classify(
                outcome.projected,
                outcome.reason.as_deref(),
                outcome.guard.as_deref(),
            )
        },
        |f| f.stage,
    ));
    let goal = action
        .goal
        .clone()
        .unwrap_or_else(|| Goal::default_for(action.gene.class()));
    let (detail, decided_stage) = match outcome.feedback {
        Some(f) => (f.detail, f.decided_stage),
        None => (None, None),
    };
    ActionRecord {
        action: action.id.clone(),
        base_step: action.base_step.clone(),
        gene: action.gene.label(),
        expected: action.expected,
        actual: outcome.projected,
        reason: outcome.reason,
        guard: outcome.guard,
        receipt_id: outcome.receipt.map(|r| r.id),
        result,
        operators: action.operators.clone(),
        stage,
        detail,
        progress,
        goal: Some(goal.as_str().to_string()),
        decided_stage,
    }
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
