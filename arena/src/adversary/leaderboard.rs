//! The leaderboard: `chio.arena.leaderboard/v1`.
//!
//! A ranked [`FitnessReport`] becomes rows by survival rate descending,
//! then fitness descending, ties by population name ascending, ranked from
//! one. Every escaping action of the ranked generation is listed with its
//! operator sequence in words, so a finding reads as what was done to the
//! base action. Fields are only ever added to this schema, never renamed. The JSON form is printed
//! through the kernel's canonical writer (RFC 8785, keys sorted) and is the
//! contract other tools read; the Markdown form is for people. A survival
//! rate of zero is the healthy result: a population that climbs the board
//! names an attack the guard pipeline has to answer.

use chio_kernel::canonical::to_canonical_vec;
use serde::{Deserialize, Serialize};

use crate::adversary::fitness::{ActionResult, FitnessReport};
use crate::adversary::operators::{describe, Operator};
use crate::error::ArenaError;

/// Schema id of the leaderboard document.
pub const LEADERBOARD_SCHEMA: &str = "chio.arena.leaderboard/v1";

/// One ranked population.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderboardRow {
    /// 1-indexed rank, ties broken on population name.
    pub rank: u32,
    /// Population name.
    pub population: String,
    /// Adversary class, kebab-case.
    pub class: String,
    /// Survival rate in `[0.0, 1.0]`.
    pub survival_rate: f64,
    /// Survivals (the guard pool failed to deny).
    pub survivals: u32,
    /// Defeats (the guard pool denied as expected).
    pub defeats: u32,
    /// Total actions evaluated, inside-grant ones included.
    pub total_actions: u32,
    /// Fitness: mean progress plus the novelty bonus (see the fitness module).
    #[serde(default)]
    pub fitness: f64,
}

/// One escaping action, named by what its operators did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderboardEscape {
    /// The action id.
    pub action: String,
    /// The population it belongs to.
    pub population: String,
    /// The member's gene, as a label.
    pub gene: String,
    /// The operator sequence, kebab-case, in order.
    pub operators: Vec<Operator>,
    /// The operator sequence in words.
    pub description: String,
}

/// The leaderboard document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Leaderboard {
    /// Always [`LEADERBOARD_SCHEMA`].
    pub schema_version: String,
    /// The scenario the populations attacked.
    pub scenario_id: String,
    /// The generation ranked (0 for a one-shot evaluation).
    pub generation: u32,
    /// The rows, ranked.
    pub rows: Vec<LeaderboardRow>,
    /// Every escaping action of the generation, in row then evaluation order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escapes: Vec<LeaderboardEscape>,
}

impl Leaderboard {
    /// Ranks a report (already ordered by [`FitnessReport::new`]).
    pub fn from_report(scenario_id: &str, report: &FitnessReport) -> Self {
        let rows = report
            .samples
            .iter()
            .enumerate()
            .map(|(i, s)| LeaderboardRow {
                rank: i as u32 + 1,
                population: s.population.clone(),
                class: s.class.as_str().to_string(),
                survival_rate: s.survival_rate(),
                survivals: s.survivals,
                defeats: s.defeats,
                total_actions: s.total_actions,
                fitness: s.fitness(),
            })
            .collect();
        let escapes = report
            .samples
            .iter()
            .flat_map(|s| {
                s.records
                    .iter()
                    .filter(|r| r.result == ActionResult::Survived)
                    .map(|r| LeaderboardEscape {
                        action: r.action.clone(),
                        population: s.population.clone(),
                        gene: r.gene.clone(),
                        operators: r.operators.clone(),
                        description: describe(&r.operators),
                    })
            })
            .collect();
        Self {
            schema_version: LEADERBOARD_SCHEMA.to_string(),
            scenario_id: scenario_id.to_string(),
            generation: report.generation,
            rows,
            escapes,
        }
    }

    /// The canonical JSON bytes (`leaderboard.json`).
    pub fn to_json(&self) -> Result<Vec<u8>, ArenaError> {
        let mut bytes = to_canonical_vec(self)?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// The Markdown table (`leaderboard.md`).
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "# Leaderboard: {}\n\nSchema `{}`, generation {}. Rows by survival rate, descending, then fitness; ties by population name.\n\n| rank | population | class | survival rate | survivals | defeats | actions | fitness |\n|---:|---|---|---:|---:|---:|---:|---:|\n",
            self.scenario_id, self.schema_version, self.generation
        );
        for row in &self.rows {
            out.push_str(&format!(
                "| {} | {} | {} | {:.4} | {} | {} | {} | {:.4} |\n",
                row.rank,
                row.population,
                row.class,
                row.survival_rate,
                row.survivals,
                row.defeats,
                row.total_actions,
                row.fitness
            ));
        }
        if !self.escapes.is_empty() {
            out.push_str("\n## Escapes\n\n| action | gene | operators |\n|---|---|---|\n");
            for escape in &self.escapes {
                out.push_str(&format!(
                    "| {} | {} | {} |\n",
                    escape.action, escape.gene, escape.description
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adversary::{AdversaryClass, FitnessSample};

    fn sample(name: &str, survivals: u32, defeats: u32) -> FitnessSample {
        FitnessSample {
            population: name.into(),
            class: AdversaryClass::ReplayAttempt,
            lineage: name.into(),
            survivals,
            defeats,
            inside_grant: 0,
            goal_missed: 0,
            fitness_ppm: 0,
            novel_outcomes: 0,
            total_actions: survivals + defeats,
            kernel_evaluations: 0,
            records: Vec::new(),
        }
    }

    // Rows rank by survival rate descending, ties by name, from rank 1, and the JSON keys come out sorted.
    #[test]
    fn ranks_and_prints_canonically() {
        let report = FitnessReport::new(
            3,
            vec![
                sample("b", 1, 1),
                sample("a", 1, 1),
                sample("c", 2, 0),
                sample("d", 0, 4),
            ],
        );
        let board = Leaderboard::from_report("s", &report);
        let order: Vec<(&str, u32)> = board
            .rows
            .iter()
            .map(|r| (r.population.as_str(), r.rank))
            .collect();
        assert_eq!(order, vec![("c", 1), ("a", 2), ("b", 3), ("d", 4)]);
        let json = String::from_utf8(board.to_json().unwrap()).unwrap();
        assert!(json.starts_with("{\"generation\":3,\"rows\":[{\"class\":\"replay-attempt\",\"defeats\":0,\"fitness\":0,\"population\":\"c\",\"rank\":1,\"survival_rate\":1,"));
        assert!(board
            .to_markdown()
            .contains("| 2 | a | replay-attempt | 0.5000 | 1 | 1 | 2 | 0.0000 |"));
    }
}
