//! The adversary members a matrix run draws: what makes repetitions differ.
//!
//! A population's members are fixed by its parameters, and the kernel is
//! deterministic, so a run that evaluates every member once scores the same
//! in every repetition and every interval collapses to a point. A matrix run
//! instead draws its attackers: for each population, as many members as it
//! declares, uniformly with replacement, from a ChaCha20 stream seeded with
//! FNV-1a 64 over the run's seed (8 big-endian bytes), `:` and the
//! population's name. The run's seed is the repetition's seed, shared by
//! every cell, so repetition `k` of every cell faces the same draw (as long
//! as the cell leaves the population's parameters alone): the pairing the
//! bootstrap relies on holds. A drawn member keeps its position as its
//! member index, so two draws of one gene are two distinct actions with
//! their own action streams.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use super::bootstrap::uniform_index;
use chio_adversary::population::AdversaryPopulation;
use chio_arena::rng::fnv1a64;
use chio_arena::ArenaError;

/// The stream a population's draw comes from (see the module doc).
pub fn draw_stream(run_seed: u64, population: &str) -> ChaCha20Rng {
    let mut bytes = run_seed.to_be_bytes().to_vec();
    bytes.push(b':');
    bytes.extend_from_slice(population.as_bytes());
    ChaCha20Rng::seed_from_u64(fnv1a64(&bytes))
}

/// Each population with its members redrawn for the run seeded `run_seed`.
pub fn draw_members(
    populations: &[AdversaryPopulation],
    run_seed: u64,
) -> Result<Vec<AdversaryPopulation>, ArenaError> {
    populations
        .iter()
        .map(|population| {
            let n = u32::try_from(population.members.len()).unwrap_or(u32::MAX);
            if n == 0 {
                // Populations refuse to be empty; there is nothing to draw from.
                return Ok(population.clone());
            }
            let mut rng = draw_stream(run_seed, &population.name);
            let members = (0..n)
                .map(|_| population.members[uniform_index(&mut rng, n)].clone())
                .collect();
            AdversaryPopulation::new(
                &population.name,
                &population.lineage,
                &population.seed_ref,
                population.params.clone(),
                members,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chio_arena::adversaries::class::{AdversaryClass, ClassParams};

    fn population() -> AdversaryPopulation {
        let mut table = toml::Table::new();
        table.insert(
            "patterns".into(),
            toml::Value::Array(vec![
                "ignore-previous-instructions".into(),
                "tool-name-spoof".into(),
            ]),
        );
        table.insert("evasive".into(), true.into());
        let params =
            ClassParams::from_table(AdversaryClass::PromptInjection, Some(&table), "p", &[])
                .unwrap();
        let genes = params.initial_genes();
        AdversaryPopulation::new("p", "p", "corpus/p", params, genes).unwrap()
    }

    // A draw keeps the population's size and class, is a function of the seed, and differs between seeds.
    #[test]
    fn draws_are_reproducible_and_vary_with_the_seed() {
        let base = population();
        let a = draw_members(std::slice::from_ref(&base), 1).unwrap();
        let again = draw_members(std::slice::from_ref(&base), 1).unwrap();
        assert_eq!(a, again);
        assert_eq!(a[0].members.len(), base.members.len());
        assert_eq!(a[0].class, base.class);
        let differs = (2..20u64).any(|seed| {
            draw_members(std::slice::from_ref(&base), seed).unwrap()[0].members != a[0].members
        });
        assert!(differs, "every seed drew the same members");
        assert!(a[0].members.iter().all(|m| base.members.contains(m)));
    }
}
