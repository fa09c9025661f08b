//! What one matrix run measures, and which measurements a verdict may use.
//!
//! A run of a cell is the cell's scenario, run to the end (every step,
//! whatever its verdict) with the repetition's seed, plus the adversary
//! actions its populations produce when the scenario declares any. Its
//! [`RunMetrics`] count: scenario steps whose expectation held; adversary
//! actions and escapes (actions that should have been denied and were
//! not); benign calls (steps expecting `allow` or `rewrite`), those the
//! kernel admitted and those it refused (over-denials); and kernel
//! evaluations, and every kernel decision the run took with those that were
//! denials. [`Metric`] names what a verdict may cite: rates and booleans as
//! criteria, booleans as validity conditions. [`ValidatorMetric`] names what
//! a `[[validation]]` block may judge over a whole cell. A rate whose
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
    /// Kernel decisions the run took: call steps and every adversary action,
    /// inside-grant ones included; the denominator of the denied share.
    pub decisions: u64,
    /// Of those decisions, the ones the kernel answered `deny`.
    pub denied: u64,
}

impl RunMetrics {
    /// The first count a run cannot have measured, as `metrics.<field>`
    /// and why; `None` when the counts agree with one another. Every part
    /// is at most its whole (escapes of the counted adversary actions,
    /// expectations met and benign calls of the calls, denials of the
    /// decisions), a benign call is admitted or over-denied, and every call
    /// and counted adversary action is a decision, every call an
    /// evaluation; so every rate a run yields lies in `[0, 1]`.
    pub fn inconsistency(&self) -> Option<String> {
        let m = self;
        let at_most = [
            (
                "escapes",
                m.escapes,
                "adversary_actions",
                m.adversary_actions,
            ),
            ("expectations_met", m.expectations_met, "calls", m.calls),
            ("benign_calls", m.benign_calls, "calls", m.calls),
            (
                "benign_allowed",
                m.benign_allowed,
                "benign_calls",
                m.benign_calls,
            ),
            (
                "over_denials",
                m.over_denials,
                "benign_calls",
                m.benign_calls,
            ),
            ("denied", m.denied, "decisions", m.decisions),
            ("calls", m.calls, "evaluations", m.evaluations),
        ];
        if let Some((part, n, whole, total)) = at_most.iter().find(|(_, n, _, t)| n > t) {
            return Some(format!(
                "metrics.{part} is {n}, more than metrics.{whole} ({total})"
            ));
        }
        if m.benign_allowed + m.over_denials != m.benign_calls {
            return Some(format!(
                "metrics.benign_calls is {}, but {} were admitted and {} over-denied",
                m.benign_calls, m.benign_allowed, m.over_denials
            ));
        }
        let counted = m.calls.saturating_add(m.adversary_actions);
        (counted > m.decisions).then(|| {
            format!(
                "metrics.decisions is {}, fewer than its {} call(s) and {} adversary action(s)",
                m.decisions, m.calls, m.adversary_actions
            )
        })
    }
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

/// A metric a `[[validation]]` block may judge, computed over every run of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ValidatorMetric {
    /// Call steps whose expectation held over call steps, across the cell's runs.
    ExpectationPassRate,
    /// Adversary actions that escaped, summed over the cell's runs.
    Escapes,
    /// Denied decisions over every kernel decision, across the cell's runs.
    DeniedShare,
    /// Kernel evaluations per run: the cell's total over its run count.
    EvaluationsPerRun,
}

/// Every validator metric, in documentation order.
pub const VALIDATOR_METRICS: &[ValidatorMetric] = &[
    ValidatorMetric::ExpectationPassRate,
    ValidatorMetric::Escapes,
    ValidatorMetric::DeniedShare,
    ValidatorMetric::EvaluationsPerRun,
];

impl ValidatorMetric {
    /// The metric's name in files.
    pub fn as_str(self) -> &'static str {
        match self {
            ValidatorMetric::ExpectationPassRate => "expectation_pass_rate",
            ValidatorMetric::Escapes => "escapes",
            ValidatorMetric::DeniedShare => "denied_share",
            ValidatorMetric::EvaluationsPerRun => "evaluations_per_run",
        }
    }

    /// Reads a validator metric name.
    pub fn parse(name: &str) -> Option<ValidatorMetric> {
        VALIDATOR_METRICS
            .iter()
            .copied()
            .find(|m| m.as_str() == name)
    }

    /// The cell's value over `runs`, or `None` when its denominator is zero
    /// (a cell without calls has no expectation pass rate).
    pub fn value(self, runs: &[RunMetrics]) -> Option<f64> {
        let sum = |f: fn(&RunMetrics) -> u64| runs.iter().map(f).sum::<u64>();
        match self {
            ValidatorMetric::ExpectationPassRate => {
                ratio(sum(|r| r.expectations_met), sum(|r| r.calls))
            }
            ValidatorMetric::Escapes => Some(sum(|r| r.escapes) as f64),
            ValidatorMetric::DeniedShare => ratio(sum(|r| r.denied), sum(|r| r.decisions)),
            ValidatorMetric::EvaluationsPerRun => ratio(sum(|r| r.evaluations), runs.len() as u64),
        }
    }
}

/// Names of the validator metrics, comma separated.
pub fn validator_metric_names() -> String {
    VALIDATOR_METRICS
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(", ")
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

    // Counts a run cannot have measured are named by field; a measured run's are not.
    #[test]
    fn impossible_counts_are_named() {
        let measured = RunMetrics {
            completed: true,
            calls: 3,
            expectations_met: 3,
            adversary_actions: 8,
            escapes: 2,
            benign_calls: 2,
            benign_allowed: 1,
            over_denials: 1,
            evaluations: 12,
            decisions: 11,
            denied: 7,
        };
        assert_eq!(measured.inconsistency(), None);
        type Edit = fn(&mut RunMetrics);
        let edits: [(Edit, &str); 5] = [
            (
                |m| m.escapes = 1000,
                "metrics.escapes is 1000, more than metrics.adversary_actions (8)",
            ),
            (|m| m.expectations_met = 4, "metrics.expectations_met is 4"),
            (|m| m.denied = 12, "metrics.denied is 12"),
            (|m| m.over_denials = 0, "1 were admitted and 0 over-denied"),
            (|m| m.decisions = 10, "metrics.decisions is 10"),
        ];
        for (edit, said) in edits {
            let mut m = measured.clone();
            edit(&mut m);
            let why = m.inconsistency().unwrap();
            assert!(why.contains(said), "{why}");
        }
    }

    // Validator metrics sum over a cell's runs; a zero denominator stays undefined.
    #[test]
    fn validator_metrics_aggregate_a_cell() {
        let run = |calls, met, escapes, decisions, denied, evaluations| RunMetrics {
            completed: true,
            calls,
            expectations_met: met,
            escapes,
            decisions,
            denied,
            evaluations,
            ..RunMetrics::default()
        };
        let runs = [run(2, 2, 1, 10, 5, 10), run(2, 1, 0, 10, 7, 14)];
        assert_eq!(
            ValidatorMetric::ExpectationPassRate.value(&runs),
            Some(0.75)
        );
        assert_eq!(ValidatorMetric::Escapes.value(&runs), Some(1.0));
        assert_eq!(ValidatorMetric::DeniedShare.value(&runs), Some(0.6));
        assert_eq!(ValidatorMetric::EvaluationsPerRun.value(&runs), Some(12.0));
        assert_eq!(ValidatorMetric::DeniedShare.value(&[]), None);
        assert_eq!(
            ValidatorMetric::parse("escapes"),
            Some(ValidatorMetric::Escapes)
        );
    }
}
