//! Gene mutation: the search's field-aware change of one member's gene.
//!
//! A gene (`chio_arena::adversaries::Gene`) is part of the scenario format:
//! its class parameters bound the values it may take. Evolution changes one
//! field at a time to another value those parameters allow, so a mutation
//! never leaves what the scenario allowed.

use chio_arena::adversaries::class::variant_limit;
use chio_arena::adversaries::{ClassParams, Gene};
use rand_core::RngCore;

/// One field-aware mutation: changes one field of `gene` to another
/// value `params` allows, drawn from `rng`. A field with no alternative
/// is skipped; a gene with none at all comes back unchanged.
pub fn mutate_field(gene: &Gene, params: &ClassParams, rng: &mut dyn RngCore) -> Gene {
    let fields = field_count(gene);
    let start = (rng.next_u32() as usize) % fields;
    for offset in 0..fields {
        if let Some(next) = change_field(gene, (start + offset) % fields, params, rng) {
            return next;
        }
    }
    gene.clone()
}

fn field_count(gene: &Gene) -> usize {
    match gene {
        Gene::PromptInjection { .. } => 3,
        _ => 2,
    }
}

fn change_field(
    current: &Gene,
    field: usize,
    params: &ClassParams,
    rng: &mut dyn RngCore,
) -> Option<Gene> {
    let mut gene = current.clone();
    match (&mut gene, params) {
        (
            Gene::PromptInjection {
                pattern,
                variant,
                target,
            },
            ClassParams::PromptInjection {
                patterns,
                targets,
                evasive,
            },
        ) => match field {
            0 => {
                *pattern = pick_other(patterns, pattern, rng)?;
                let limit = variant_limit(pattern, *evasive);
                *variant = (*variant).min(limit);
            }
            1 => {
                let limit = variant_limit(pattern, *evasive);
                let options: Vec<u32> = (0..=limit).collect();
                *variant = pick_other(&options, variant, rng)?;
            }
            _ => *target = pick_other(targets, target, rng)?,
        },
        (
            Gene::CapabilityOverrequest { swap, choice },
            ClassParams::CapabilityOverrequest { swaps, .. },
        ) => match field {
            0 => *swap = pick_other(swaps, swap, rng)?,
            _ => *choice = choice.wrapping_add(1 + rng.next_u32() % 7),
        },
        (Gene::ReplayAttempt { mode, reuse }, ClassParams::ReplayAttempt { modes, reuses, .. }) => {
            match field {
                0 => *mode = pick_other(modes, mode, rng)?,
                _ => *reuse = pick_other(reuses, reuse, rng)?,
            }
        }
        (Gene::ScopeEscape { widening, choice }, ClassParams::ScopeEscape { widenings, .. }) => {
            match field {
                0 => *widening = pick_other(widenings, widening, rng)?,
                _ => *choice = choice.wrapping_add(1 + rng.next_u32() % 7),
            }
        }
        _ => return None,
    }
    Some(gene)
}

/// Picks a value of `options` other than `current`, uniformly.
fn pick_other<T: Clone + PartialEq>(
    options: &[T],
    current: &T,
    rng: &mut dyn RngCore,
) -> Option<T> {
    let others: Vec<&T> = options.iter().filter(|o| *o != current).collect();
    if others.is_empty() {
        return None;
    }
    Some(others[(rng.next_u32() as usize) % others.len()].clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chio_arena::adversaries::AdversaryClass;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    // A mutation changes exactly one field and stays within the parameters.
    #[test]
    fn mutation_changes_one_field_within_params() {
        let params =
            ClassParams::from_table(AdversaryClass::PromptInjection, None, "p", &[]).unwrap();
        let gene = params.initial_genes()[0].clone();
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        for _ in 0..50 {
            let next = mutate_field(&gene, &params, &mut rng);
            let (
                Gene::PromptInjection {
                    pattern: p0,
                    variant: v0,
                    target: t0,
                },
                Gene::PromptInjection {
                    pattern: p1,
                    variant: v1,
                    target: t1,
                },
            ) = (&gene, &next)
            else {
                panic!("class changed");
            };
            let changed = usize::from(p0 != p1) + usize::from(v0 != v1) + usize::from(t0 != t1);
            assert_eq!(changed, 1);
            assert_eq!(*v1, 0, "evasive variants are off by default");
        }
    }
}
