//! Paired bootstrap intervals for a cell's gap to the reference.
//!
//! Every cell runs the same repetition seeds, so repetition `i` of a cell
//! and repetition `i` of the reference are a pair. A draw resamples `n`
//! repetition indices with replacement and computes, on that resample, the
//! mean of the cell's judged values minus the mean of the reference's
//! judged values; a repetition unjudged in one cell simply leaves that
//! cell's denominator (it is never scored as a failure), and a draw where
//! either side has no judged repetition is left out. The interval is the
//! 2.5th and 97.5th percentile of the draws (nearest rank on the sorted
//! draws: index `floor(q * (m - 1))`). Indices come from one ChaCha20 stream
//! seeded with the verdict seed, restarted for every gap, so every gap is
//! computed on the same resamples; an index is drawn uniformly by rejection
//! from 32-bit words. The gap is established when the interval excludes 0
//! and at least [`MIN_PAIRS_TO_ESTABLISH`] repetitions are judged on both
//! sides: with fewer pairs the resamples can only repeat the few values
//! there are, so a single run's difference would give a zero-width
//! interval that "excludes 0" while saying nothing.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// The fewest repetitions judged in both cells for a gap to be
/// established: six pairs that all differ the same way are the fewest the
/// exact sign test finds significant at the 5% level (2 x 2^-6, about
/// 0.031); five are not (0.0625). Below it a gap is inconclusive, whatever
/// its interval.
pub const MIN_PAIRS_TO_ESTABLISH: usize = 6;

/// A gap's interval and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GapInterval {
    /// Cell mean minus reference mean over judged repetitions; `None` when a
    /// side has no judged repetition.
    pub gap: Option<f64>,
    /// Lower bound of the 95% interval.
    pub low: Option<f64>,
    /// Upper bound of the 95% interval.
    pub high: Option<f64>,
    /// Draws that had judged repetitions on both sides.
    pub defined_draws: u32,
    /// `established` when the interval excludes 0 over at least
    /// [`MIN_PAIRS_TO_ESTABLISH`] judged pairs, else `inconclusive`.
    pub verdict: String,
}

/// The mean of the judged values, or `None` when none is judged.
pub fn judged_mean(values: &[Option<f64>]) -> Option<f64> {
    let judged: Vec<f64> = values.iter().flatten().copied().collect();
    (!judged.is_empty()).then(|| judged.iter().sum::<f64>() / judged.len() as f64)
}

/// A uniform index in `0..n` by rejection sampling (`n >= 1`).
pub(crate) fn uniform_index(rng: &mut ChaCha20Rng, n: u32) -> usize {
    let zone = u32::MAX - (u32::MAX % n);
    loop {
        let word = rng.next_u32();
        if word < zone {
            return (word % n) as usize;
        }
    }
}

fn mean_over(values: &[Option<f64>], indices: &[usize]) -> Option<f64> {
    let mut sum = 0.0;
    let mut count = 0u32;
    for &i in indices {
        if let Some(v) = values[i] {
            sum += v;
            count += 1;
        }
    }
    (count > 0).then(|| sum / f64::from(count))
}

/// The paired bootstrap of `cell - reference`; both slices are indexed by repetition.
pub fn paired_gap(
    cell: &[Option<f64>],
    reference: &[Option<f64>],
    draws: u32,
    seed: u64,
) -> GapInterval {
    assert_eq!(cell.len(), reference.len(), "cells share the repetitions");
    let gap = match (judged_mean(cell), judged_mean(reference)) {
        (Some(c), Some(r)) => Some(c - r),
        _ => None,
    };
    let n = cell.len();
    let mut samples = Vec::with_capacity(draws as usize);
    if n > 0 && gap.is_some() {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut indices = vec![0usize; n];
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        for _ in 0..draws {
            for slot in indices.iter_mut() {
                *slot = uniform_index(&mut rng, n32);
            }
            if let (Some(c), Some(r)) = (mean_over(cell, &indices), mean_over(reference, &indices))
            {
                samples.push(c - r);
            }
        }
    }
    samples.sort_by(f64::total_cmp);
    let pick = |q: f64| -> Option<f64> {
        (!samples.is_empty()).then(|| samples[(q * (samples.len() - 1) as f64).floor() as usize])
    };
    let (low, high) = (pick(0.025), pick(0.975));
    let pairs = cell
        .iter()
        .zip(reference)
        .filter(|(c, r)| c.is_some() && r.is_some())
        .count();
    let established = pairs >= MIN_PAIRS_TO_ESTABLISH
        && matches!((low, high), (Some(l), Some(h)) if l > 0.0 || h < 0.0);
    GapInterval {
        gap,
        low,
        high,
        defined_draws: samples.len() as u32,
        verdict: if established {
            "established"
        } else {
            "inconclusive"
        }
        .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A cell that is always worse than its pair gives an interval above 0; equal cells do not.
    #[test]
    fn separated_cells_are_established_and_equal_ones_are_not() {
        let reference: Vec<Option<f64>> = (0..12).map(|i| Some(f64::from(i % 3) / 10.0)).collect();
        let worse: Vec<Option<f64>> = reference.iter().map(|v| v.map(|x| x + 0.5)).collect();
        let same = reference.clone();
        assert_eq!(
            paired_gap(&worse, &reference, 2000, 7).verdict,
            "established"
        );
        let equal = paired_gap(&same, &reference, 2000, 7);
        assert_eq!(equal.verdict, "inconclusive");
        assert_eq!(equal.gap, Some(0.0));
    }

    // A difference seen in fewer than six judged pairs is never established, however narrow its interval; six pairs that all differ are.
    #[test]
    fn too_few_pairs_never_establish_a_gap() {
        for n in 1..MIN_PAIRS_TO_ESTABLISH {
            let reference = vec![Some(0.0); n];
            let worse = vec![Some(0.75); n];
            let gap = paired_gap(&worse, &reference, 1000, 7);
            assert_eq!((gap.low, gap.high), (Some(0.75), Some(0.75)), "{n}");
            assert_eq!(gap.verdict, "inconclusive", "{n} pair(s)");
        }
        let mut reference = vec![Some(0.0); MIN_PAIRS_TO_ESTABLISH];
        let worse = vec![Some(0.75); MIN_PAIRS_TO_ESTABLISH];
        assert_eq!(
            paired_gap(&worse, &reference, 1000, 7).verdict,
            "established"
        );
        // A pair unjudged on one side is no pair.
        reference[0] = None;
        assert_eq!(
            paired_gap(&worse, &reference, 1000, 7).verdict,
            "inconclusive"
        );
    }

    // Unjudged repetitions leave the denominator instead of counting as failures.
    #[test]
    fn unjudged_runs_leave_the_denominator() {
        let cell = vec![Some(1.0), None, Some(1.0)];
        assert_eq!(judged_mean(&cell), Some(1.0));
        let reference = vec![None, None, None];
        let gap = paired_gap(&cell, &reference, 100, 1);
        assert_eq!(gap.gap, None);
        assert_eq!(gap.verdict, "inconclusive");
    }

    // The same seed gives the same interval; another seed may move it.
    #[test]
    fn intervals_are_reproducible_from_the_seed() {
        let a: Vec<Option<f64>> = (0..10).map(|i| Some(f64::from(i) / 10.0)).collect();
        let b: Vec<Option<f64>> = (0..10).map(|i| Some(f64::from(9 - i) / 20.0)).collect();
        assert_eq!(paired_gap(&a, &b, 500, 3), paired_gap(&a, &b, 500, 3));
    }
}
