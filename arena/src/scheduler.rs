//! The deterministic scheduler: the total order of a scenario's actions.
//!
//! Each action gets a scheduled offset from the clock start: its `at` when
//! given, else `declaration index * tick`. Actions are then ordered by
//! `(scheduled offset, agent id, intra-agent step)`, where the intra-agent
//! step is the action's index among its agent's actions in declaration
//! order. The key is unique per action, so the order is total and uses no
//! randomness. Advance actions take their place in that order like any
//! other; they shift the *evaluation* offset of every action ordered after
//! them by their `advance_ms`, without changing the order itself.
//! `single-agent-v1` refuses to schedule more than one agent. Every instant
//! (the clock start plus an evaluation offset) must stay at most
//! 9999-12-31T23:59:59.999Z, the last instant RFC 3339 prints; given
//! the start with [`DeterministicScheduler::with_start_ms`], the scheduler
//! refuses a schedule that would reach past it, naming the step.

use std::fmt;

use serde::Serialize;

use crate::error::ArenaError;

/// The largest offset the schedule may reach: integers above 2^53 have no
/// exact canonical JSON form.
pub const MAX_OFFSET_MS: u64 = 1 << 53;

/// The latest virtual instant a run may reach, in Unix milliseconds:
/// 9999-12-31T23:59:59.999Z. The clock start plus any offset must stay at
/// or below it, since a bundle prints every instant in RFC 3339, which
/// writes no later year, and receipts, requests and delegation links print
/// it as canonical JSON (it is below 2^53).
pub const MAX_INSTANT_MS: u64 = 253_402_300_799_999;

/// The scheduler named in `[determinism]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SchedulerKind {
    /// Exactly one agent, steps in time order.
    #[serde(rename = "single-agent-v1")]
    SingleAgentV1,
    /// Several agents interleaved by `(time, agent, step)`.
    #[serde(rename = "deterministic-multi-v1")]
    DeterministicMultiV1,
}

impl SchedulerKind {
    /// Parses the scheduler's name as written in the scenario.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "single-agent-v1" => Some(Self::SingleAgentV1),
            "deterministic-multi-v1" => Some(Self::DeterministicMultiV1),
            _ => None,
        }
    }

    /// The scheduler's name as written in the scenario.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::SingleAgentV1 => "single-agent-v1",
            Self::DeterministicMultiV1 => "deterministic-multi-v1",
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the scheduler needs to know about one declared action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleInput {
    /// The acting agent's rank among the scenario's agent ids in ascending
    /// order (so ranks order as the ids do); second key of the order.
    pub agent: u32,
    /// Explicit offset from the clock start, if the step gives one.
    pub at: Option<u64>,
    /// For advance actions: how far the clock moves for later actions.
    pub advance_ms: Option<u64>,
}

/// One action in execution order: which step, and when. A long schedule
/// keeps one of these per step, so it holds no string; the step's id and
/// agent are the step's own (`Scenario::step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ScheduledStep {
    /// Index of the step in declaration order.
    pub step_index: usize,
    /// Offset from the clock start the action is scheduled at; first sort key.
    pub scheduled_ms: u64,
    /// Offset the clock shows when the action is evaluated: the scheduled
    /// offset plus every advance ordered before it.
    pub evaluation_ms: u64,
}

/// Orders actions; see the module documentation for the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeterministicScheduler {
    /// Which scheduler the scenario asked for.
    kind: SchedulerKind,
    /// Milliseconds between default instants.
    tick_ms: u64,
    /// The largest offset an action may be evaluated at: [`MAX_INSTANT_MS`]
    /// less the clock start, so every instant prints.
    max_offset_ms: u64,
}

impl DeterministicScheduler {
    /// A scheduler of the given kind and tick (a zero tick is raised to 1 ms),
    /// bounding offsets by [`MAX_INSTANT_MS`] as if the clock started at
    /// the Unix epoch.
    pub fn new(kind: SchedulerKind, tick_ms: u64) -> Self {
        Self {
            kind,
            tick_ms: tick_ms.max(1),
            max_offset_ms: MAX_INSTANT_MS,
        }
    }

    /// The same scheduler for a clock starting at `start_ms` (Unix
    /// milliseconds): every offset is bounded so that `start_ms + offset`
    /// stays at most [`MAX_INSTANT_MS`].
    pub fn with_start_ms(mut self, start_ms: u64) -> Self {
        self.max_offset_ms = MAX_INSTANT_MS.saturating_sub(start_ms);
        self
    }

    /// The scheduler's kind.
    pub fn kind(&self) -> SchedulerKind {
        self.kind
    }

    /// Orders `inputs` (given in declaration order) into execution order.
    pub fn schedule(&self, inputs: &[ScheduleInput]) -> Result<Vec<ScheduledStep>, ArenaError> {
        self.schedule_with(inputs.len(), |i| inputs[i])
    }

    /// Orders `count` actions, the `i`th described by `input(i)` in
    /// declaration order, into execution order. Besides its output the
    /// scheduler holds one 24-byte sort key per action.
    pub fn schedule_with(
        &self,
        count: usize,
        input: impl Fn(usize) -> ScheduleInput,
    ) -> Result<Vec<ScheduledStep>, ArenaError> {
        let mut per_agent: std::collections::BTreeMap<u32, u32> = Default::default();
        if self.kind == SchedulerKind::SingleAgentV1 {
            let agents: std::collections::BTreeSet<u32> =
                (0..count).map(|i| input(i).agent).collect();
            if agents.len() > 1 {
                return Err(ArenaError::SingleAgentScheduler {
                    count: agents.len(),
                });
            }
        }
        // (scheduled offset, agent rank, intra-agent step, step index)
        let mut keys: Vec<(u64, u32, u32, u32)> = Vec::with_capacity(count);
        for index in 0..count {
            let one = input(index);
            let counter = per_agent.entry(one.agent).or_insert(0);
            let intra = *counter;
            *counter += 1;
            let scheduled = match one.at {
                Some(at) => u128::from(at),
                None => index as u128 * u128::from(self.tick_ms),
            };
            let scheduled_ms = self.bounded(scheduled).ok_or_else(|| ArenaError::OutOfRange {
                field: match one.at {
                    Some(_) => format!("steps[{index}].at"),
                    None => format!("steps[{index}]"),
                },
                rule: "the step's instant, the clock start plus its offset, is at most 9999-12-31T23:59:59.999Z",
            })?;
            let step = u32::try_from(index).map_err(|_| ArenaError::OutOfRange {
                field: format!("steps[{index}]"),
                rule: "a scenario has at most 2^32 - 1 steps",
            })?;
            keys.push((scheduled_ms, one.agent, intra, step));
        }
        // The key is unique per action, so an unstable sort is the order.
        keys.sort_unstable();
        let mut actions: Vec<ScheduledStep> = keys
            .into_iter()
            .map(|(scheduled_ms, _, _, step)| ScheduledStep {
                step_index: step as usize,
                scheduled_ms,
                evaluation_ms: scheduled_ms,
            })
            .collect();
        let mut advanced: u128 = 0;
        // The advance ordered last so far: the one to blame for an instant
        // pushed past the bound, since scheduled offsets were bounded above.
        let mut last_advance = None;
        for action in &mut actions {
            let evaluation = u128::from(action.scheduled_ms) + advanced;
            action.evaluation_ms = self.bounded(evaluation).ok_or_else(|| {
                ArenaError::OutOfRange {
                    field: format!(
                        "steps[{}].advance_ms",
                        last_advance.unwrap_or(action.step_index)
                    ),
                    rule: "every later instant, the clock start plus its offset plus the advances before it, is at most 9999-12-31T23:59:59.999Z",
                }
            })?;
            if let Some(ms) = input(action.step_index).advance_ms {
                advanced += u128::from(ms);
                last_advance = Some(action.step_index);
            }
        }
        Ok(actions)
    }

    /// `value` as an offset, when it is within the bound.
    fn bounded(&self, value: u128) -> Option<u64> {
        u64::try_from(value)
            .ok()
            .filter(|v| *v <= self.max_offset_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(_id: &str, at: Option<u64>, advance_ms: Option<u64>) -> ScheduleInput {
        ScheduleInput {
            agent: 0,
            at,
            advance_ms,
        }
    }

    // With a clock start, an offset is accepted up to the last instant less the start and refused one past it, naming the step's at.
    #[test]
    fn offsets_are_bounded_by_the_start() {
        let start = 1_791_795_600_000;
        let scheduler =
            DeterministicScheduler::new(SchedulerKind::SingleAgentV1, 1).with_start_ms(start);
        let last = MAX_INSTANT_MS - start;
        assert!(scheduler.schedule(&[input("s", Some(last), None)]).is_ok());
        let err = scheduler
            .schedule(&[input("s", Some(last + 1), None)])
            .unwrap_err();
        assert_eq!(err.field(), Some("steps[0].at"));
    }

    // An instant pushed past the bound by an earlier advance names that advance.
    #[test]
    fn advances_are_blamed_for_later_instants() {
        let start = 1_000;
        let scheduler =
            DeterministicScheduler::new(SchedulerKind::SingleAgentV1, 1).with_start_ms(start);
        let inputs = [
            input("a", Some(1), None),
            input("jump", Some(2), Some(MAX_INSTANT_MS - start - 2)),
            input("b", Some(3), None),
        ];
        let err = scheduler.schedule(&inputs).unwrap_err();
        assert_eq!(err.field(), Some("steps[1].advance_ms"));
        // One millisecond less and the last instant is exactly the bound.
        let inputs = [
            input("a", Some(1), None),
            input("jump", Some(2), Some(MAX_INSTANT_MS - start - 3)),
            input("b", Some(3), None),
        ];
        let schedule = scheduler.schedule(&inputs).unwrap();
        assert_eq!(start + schedule[2].evaluation_ms, MAX_INSTANT_MS);
    }
}
