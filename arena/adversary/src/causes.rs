//! Escapes grouped by cause.
//!
//! One hole in a guard pipeline lets hundreds of actions through: every
//! member of every bred population that reaches it escapes again. A report
//! that lists each escape buries the finding, so the leaderboard, the
//! summary and the SARIF report of `chio arena evolve` group escapes by
//! their **cause**, keyed by four parts, each read off the action's record:
//!
//! - the **goal** the action pursued (`smuggle-instruction`, ...);
//! - the **stage** that decided, as the kernel's decision trace names it
//!   (its last stage reached; the fitness stage when no kernel decided);
//! - the reference reader's **pattern** that matched (the first part of the
//!   reference detail, such as `tool-name-spoof`, for `smuggle-instruction`;
//!   `none` for the other goals, whose oracle reads no pattern);
//! - the operator **family** of the action's operator sequence: the
//!   families of its operators, distinct, in catalogue order, joined by `+`
//!   (`character+structural`), `none` for the base action alone.
//!
//! Every escape of the run counts once (a population keeps its name and
//! sample while it survives as an elite, so the first generation that
//! recorded an action is kept). A cause carries its count, every
//! occurrence in the order the run met them, and its shortest example: the
//! occurrence with the fewest operators, then the shortest action id, then
//! the first by action id. Causes are ordered by count descending, then by
//! key. Everything is built from the trace's order and ordered maps, so
//! the same run gives the same causes byte for byte.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::coevolution::GenerationRecord;
use crate::fitness::{ActionRecord, ActionResult, FitnessSample};
use crate::operators::{describe, Family, Operator};
use chio_arena::adversaries::class::AdversaryClass;
use chio_arena::adversaries::goal::Goal;

/// The word a key part takes when the record has nothing to say.
pub const NONE: &str = "none";

/// What makes two escapes the same finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CauseKey {
    /// The goal, kebab-case.
    pub goal: String,
    /// The stage that decided.
    pub stage: String,
    /// The reference reader's pattern, or `none`.
    pub pattern: String,
    /// The operator families, or `none`.
    pub family: String,
}

impl CauseKey {
    /// The key of one escaping record of a population of `class`.
    pub fn of(class: AdversaryClass, record: &ActionRecord) -> Self {
        let goal = record
            .goal
            .clone()
            .unwrap_or_else(|| Goal::default_for(class).as_str().to_string());
        let stage = record
            .decided_stage
            .clone()
            .or_else(|| record.stage.map(|s| s.as_str().to_string()))
            .unwrap_or_else(|| NONE.to_string());
        let pattern = if goal == Goal::SmuggleInstruction.as_str() {
            record
                .detail
                .as_deref()
                .and_then(|d| d.split('/').next())
                .filter(|p| !p.is_empty())
                .unwrap_or(NONE)
                .to_string()
        } else {
            NONE.to_string()
        };
        Self {
            goal,
            stage,
            pattern,
            family: family_of(&record.operators),
        }
    }

    /// The key in one line: `goal at stage, pattern P, family F`.
    pub fn label(&self) -> String {
        format!(
            "{} at {}, pattern {}, family {}",
            self.goal, self.stage, self.pattern, self.family
        )
    }
}

/// The families of a sequence, distinct, in catalogue order, joined by `+`;
/// `none` for an empty sequence.
pub fn family_of(operators: &[Operator]) -> String {
    let families: BTreeSet<Family> = operators.iter().map(Operator::family).collect();
    if families.is_empty() {
        return NONE.to_string();
    }
    families
        .iter()
        .map(|f| match serde_json::to_value(f) {
            Ok(serde_json::Value::String(s)) => s,
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("+")
}

/// One escaping action, where the run met it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EscapeOccurrence {
    /// The action id.
    pub action: String,
    /// The population it belongs to.
    pub population: String,
    /// The declared population it descends from.
    pub lineage: String,
    /// The first generation that recorded it.
    pub generation: u32,
    /// The step it mutated.
    pub base_step: String,
    /// The member's gene, as a label.
    pub gene: String,
    /// The operator sequence, kebab-case, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<Operator>,
}

impl EscapeOccurrence {
    /// The operator sequence in words (`no operator` for the base action).
    pub fn description(&self) -> String {
        if self.operators.is_empty() {
            "no operator".to_string()
        } else {
            describe(&self.operators)
        }
    }
}

/// Escapes that share a [`CauseKey`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EscapeCause {
    /// The goal, kebab-case.
    pub goal: String,
    /// The stage that decided.
    pub stage: String,
    /// The reference reader's pattern, or `none`.
    pub pattern: String,
    /// The operator families, or `none`.
    pub family: String,
    /// The adversary class of the populations that escaped this way.
    pub class: AdversaryClass,
    /// How many escapes share the cause.
    pub count: u32,
    /// The shortest occurrence (see the module doc).
    pub example: EscapeOccurrence,
    /// The example's operator sequence in words.
    pub example_description: String,
    /// Every occurrence, in the order the run met them.
    pub occurrences: Vec<EscapeOccurrence>,
}

impl EscapeCause {
    /// The cause's key.
    pub fn key(&self) -> CauseKey {
        CauseKey {
            goal: self.goal.clone(),
            stage: self.stage.clone(),
            pattern: self.pattern.clone(),
            family: self.family.clone(),
        }
    }
}

/// Every escape of a run's generations, each action once (its first
/// generation), grouped by cause.
pub fn causes_of_run(trace: &[GenerationRecord]) -> Vec<EscapeCause> {
    let mut seen = BTreeSet::new();
    let mut escapes = Vec::new();
    for record in trace {
        for sample in &record.samples {
            for action in escaping(sample) {
                if seen.insert((sample.population.as_str(), action.action.as_str())) {
                    escapes.push((record.generation, sample, action));
                }
            }
        }
    }
    group(escapes)
}

/// The escapes of one generation's samples, grouped by cause.
pub fn causes_of_samples(generation: u32, samples: &[FitnessSample]) -> Vec<EscapeCause> {
    group(
        samples
            .iter()
            .flat_map(|s| escaping(s).map(move |r| (generation, s, r)))
            .collect(),
    )
}

fn escaping(sample: &FitnessSample) -> impl Iterator<Item = &ActionRecord> {
    sample
        .records
        .iter()
        .filter(|r| r.result == ActionResult::Survived)
}

fn group(escapes: Vec<(u32, &FitnessSample, &ActionRecord)>) -> Vec<EscapeCause> {
    let mut by_key: BTreeMap<CauseKey, (AdversaryClass, Vec<EscapeOccurrence>)> = BTreeMap::new();
    for (generation, sample, record) in escapes {
        let key = CauseKey::of(sample.class, record);
        by_key
            .entry(key)
            .or_insert_with(|| (sample.class, Vec::new()))
            .1
            .push(EscapeOccurrence {
                action: record.action.clone(),
                population: sample.population.clone(),
                lineage: sample.lineage.clone(),
                generation,
                base_step: record.base_step.clone(),
                gene: record.gene.clone(),
                operators: record.operators.clone(),
            });
    }
    let mut causes: Vec<EscapeCause> = by_key
        .into_iter()
        .filter_map(|(key, (class, occurrences))| {
            let example = occurrences
                .iter()
                .min_by(|a, b| {
                    (a.operators.len(), a.action.len(), &a.action).cmp(&(
                        b.operators.len(),
                        b.action.len(),
                        &b.action,
                    ))
                })?
                .clone();
            Some(EscapeCause {
                goal: key.goal,
                stage: key.stage,
                pattern: key.pattern,
                family: key.family,
                class,
                count: occurrences.len() as u32,
                example_description: example.description(),
                example,
                occurrences,
            })
        })
        .collect();
    causes.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key().cmp(&b.key())));
    causes
}

#[cfg(test)]
mod tests;
