//! The leaderboard: `chio.arena.leaderboard/v2`.
//!
//! A ranked [`FitnessReport`] becomes rows by survival rate descending,
//! then fitness descending, ties by population name ascending, ranked from
//! one. Escapes are listed grouped by cause ([`crate::causes`]:
//! goal, deciding stage, reference pattern, operator family), each with its
//! count, shortest example and every occurrence, so one hole in the
//! pipeline reads as one finding however many actions went through it.
//! Version 2 replaced version 1's flat `escapes` list with `causes`. The
//! JSON form is printed through the kernel's canonical writer (RFC 8785,
//! keys sorted) and is the contract other tools read; the Markdown form is
//! for people. A survival rate of zero is the healthy result: a population
//! that climbs the board names an attack the guard pipeline has to answer.

use chio_kernel::canonical::to_canonical_vec;
use serde::{Deserialize, Serialize};

use crate::causes::{causes_of_run, causes_of_samples, EscapeCause};
use crate::coevolution::{EvolutionResult, GenerationRecord};
use crate::fitness::FitnessReport;
use chio_arena::error::ArenaError;

/// Schema id of the leaderboard document.
pub const LEADERBOARD_SCHEMA: &str = "chio.arena.leaderboard/v2";

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
    /// The escapes, grouped by cause, largest first: those of the ranked
    /// generation ([`Leaderboard::from_report`]) or of every generation of
    /// a run, each action once ([`Leaderboard::from_evolution`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<EscapeCause>,
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
        let causes = causes_of_samples(report.generation, &report.samples);
        Self {
            schema_version: LEADERBOARD_SCHEMA.to_string(),
            scenario_id: scenario_id.to_string(),
            generation: report.generation,
            rows,
            causes,
        }
    }

    /// Ranks a run's last generation and groups the escapes of every
    /// generation by cause: what `chio arena evolve` writes.
    pub fn from_evolution(scenario_id: &str, result: &EvolutionResult) -> Self {
        Self::from_trace(scenario_id, &result.trace)
    }

    /// The leaderboard a run's generation records derive (the trace
    /// `evolve-trace.json` holds): its last generation ranked, the escapes
    /// of every generation grouped by cause. Pure, so a reader can tell a
    /// leaderboard from the one its trace gives.
    pub fn from_trace(scenario_id: &str, trace: &[GenerationRecord]) -> Self {
        let last = match trace.last() {
            Some(last) => FitnessReport {
                generation: last.generation,
                samples: last.samples.clone(),
            },
            None => FitnessReport::new(0, Vec::new()),
        };
        Self {
            causes: causes_of_run(trace),
            ..Self::from_report(scenario_id, &last)
        }
    }

    /// Escapes over every cause.
    pub fn escape_count(&self) -> u32 {
        self.causes.iter().map(|c| c.count).sum()
    }

    /// The canonical JSON bytes (`leaderboard.json`).
    pub fn to_json(&self) -> Result<Vec<u8>, ArenaError> {
        let mut bytes = to_canonical_vec(self)?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// The Markdown table (`leaderboard.md`); every text from the search
    /// (a population, a pattern, an example action and its description)
    /// as plain Markdown text (`chio_arena::report::markdown_text`).
    pub fn to_markdown(&self) -> String {
        use chio_arena::report::markdown_text as md;
        let mut out = format!(
            "# Leaderboard: {}\n\nSchema `{}`, generation {}. Rows by survival rate, descending, then fitness; ties by population name.\n\n| rank | population | class | survival rate | survivals | defeats | actions | fitness |\n|---:|---|---|---:|---:|---:|---:|---:|\n",
            self.scenario_id, self.schema_version, self.generation
        );
        for row in &self.rows {
            out.push_str(&format!(
                "| {} | {} | {} | {:.4} | {} | {} | {} | {:.4} |\n",
                row.rank,
                md(&row.population),
                row.class,
                row.survival_rate,
                row.survivals,
                row.defeats,
                row.total_actions,
                row.fitness
            ));
        }
        if !self.causes.is_empty() {
            out.push_str(&format!(
                "\n## Escapes by cause\n\n{} escapes, {} causes (goal, deciding stage, reference pattern, operator family), largest first.\n\n| count | goal | stage | pattern | family | shortest example |\n|---:|---|---|---|---|---|\n",
                self.escape_count(),
                self.causes.len()
            ));
            for cause in &self.causes {
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} ({}) |\n",
                    cause.count,
                    cause.goal,
                    cause.stage,
                    md(&cause.pattern),
                    cause.family,
                    md(&cause.example.action),
                    md(&cause.example_description)
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FitnessSample;
    use chio_arena::adversaries::AdversaryClass;

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
