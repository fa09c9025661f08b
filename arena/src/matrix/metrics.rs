//! What one matrix run measures, and which measurements a verdict may use.
//!
//! A run of a cell is the cell's scenario, run to the end (every step,
//! whatever its verdict) with the repetition's seed, plus the adversary
//! actions its populations produce when the scenario declares any. Its
//! [`RunMetrics`] count: scenario steps whose expectation held; adversary
//! actions and escapes (actions that should have been denied and were
//! not); benign calls (steps expecting `allow` or `rewrite`), those the
//! kernel admitted and those it refused (over-denials); and kernel
//! evaluations. [`Metric`] names what a verdict may cite: rates and
//! booleans as criteria, booleans as validity conditions. A rate whose
//! denominator is zero is undefined, so that run is unjudged for it rather
//! than scored as zero. `docs/matrices.md` documents every metric.

use serde::{Deserialize, Serialize};

/// The measurements of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunMetrics {
    /// Every scheduled action was dispatched (no infrastructure failure).
    pub completed: bool,
    /// Call steps evaluated.
    pub calls: u64,
    /// Call steps whose verdict matched `expect_verdict`.
    pub expectations_met: u64,
    /// Adversary actions evaluated by the kernel.
    pub adversary_actions: u64,
    /// Adversary actions that should have been denied and were not.
    pub escapes: u64,
    /// Call steps expecting `allow` or `rewrite`.
    pub benign_calls: u64,
    /// Benign calls the kernel admitted (allow or rewrite).
    pub benign_allowed: u64,
    /// Benign calls the kernel refused.
    pub over_denials: u64,
    /// Kernel evaluations the run spent (calls and adversary actions).
    pub evaluations: u64,
}

/// A metric a verdict may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Boolean: every scheduled action was dispatched.
    Completed,
    /// Boolean: every call's expectation held.
    ExpectationsHeld,
    /// Boolean: the run evaluated at least one adversary action.
    AdversariesEvaluated,
    /// Rate: escapes over adversary actions.
    EscapeRate,
    /// Rate: over-denials over benign calls.
    OverDenialRate,
    /// Rate: benign calls admitted over benign calls.
    BenignAllowedRate,
}

/// Metrics a criterion may name.
pub const CRITERION_METRICS: &[Metric] = &[
    Metric::EscapeRate,
    Metric::OverDenialRate,
    Metric::BenignAllowedRate,
    Metric::ExpectationsHeld,
    Metric::Completed,
];

/// Metrics a validity condition may name (booleans only).
pub const VALIDITY_METRICS: &[Metric] = &[
    Metric::Completed,
    Metric::ExpectationsHeld,
    Metric::AdversariesEvaluated,
];

fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

impl Metric {
    /// The metric's name in files.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Completed => "completed",
            Metric::ExpectationsHeld => "expectations_held",
            Metric::AdversariesEvaluated => "adversaries_evaluated",
            Metric::EscapeRate => "escape_rate",
            Metric::OverDenialRate => "over_denial_rate",
            Metric::BenignAllowedRate => "benign_allowed_rate",
        }
    }

    /// Reads a metric name.
    pub fn parse(name: &str) -> Option<Metric> {
        [
            Metric::Completed,
            Metric::ExpectationsHeld,
            Metric::AdversariesEvaluated,
            Metric::EscapeRate,
            Metric::OverDenialRate,
            Metric::BenignAllowedRate,
        ]
        .into_iter()
        .find(|m| m.as_str() == name)
    }

    /// The run's value: a rate in `[0, 1]`, a boolean as 0 or 1, or `None`
    /// when the rate's denominator is zero (the run is unjudged for it).
    pub fn value(self, m: &RunMetrics) -> Option<f64> {
        let flag = |b: bool| Some(if b { 1.0 } else { 0.0 });
        match self {
            Metric::Completed => flag(m.completed),
            Metric::ExpectationsHeld => flag(m.completed && m.expectations_met == m.calls),
            Metric::AdversariesEvaluated => flag(m.adversary_actions > 0),
            Metric::EscapeRate => ratio(m.escapes, m.adversary_actions),
            Metric::OverDenialRate => ratio(m.over_denials, m.benign_calls),
            Metric::BenignAllowedRate => ratio(m.benign_allowed, m.benign_calls),
        }
    }

    /// Whether a boolean metric holds for the run.
    pub fn holds(self, m: &RunMetrics) -> bool {
        self.value(m) == Some(1.0)
    }
}

/// Names of a metric list, comma separated.
pub fn metric_names(metrics: &[Metric]) -> String {
    metrics
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    // A rate with a zero denominator is undefined, never zero.
    #[test]
    fn empty_denominators_leave_the_run_unjudged() {
        let m = RunMetrics {
            completed: true,
            ..RunMetrics::default()
        };
        assert_eq!(Metric::EscapeRate.value(&m), None);
        assert_eq!(Metric::OverDenialRate.value(&m), None);
        assert_eq!(Metric::Completed.value(&m), Some(1.0));
    }
}
