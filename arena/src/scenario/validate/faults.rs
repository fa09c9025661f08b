//! Fault steps: the keys each fault kind takes, the nodes and links they
//! name, and what the schedule's order implies of them (a node crashes
//! before it restarts, a link is cut or slowed before it heals, trust-control
//! stalls once at a time, and no message crosses a fault in effect, since a
//! message has no verdict to state the fault's refusal), and a delay that
//! would carry a call past the last instant canonical JSON prints exactly.
//!
//! What a fault means for the steps after it is the step executor's
//! (`chio_node::executor::fault`); this module only refuses a sequence a run
//! could not suffer.

use std::collections::BTreeMap;

use super::schedule::Walk;
use super::steps::Names;
use super::Validator;
use crate::error::ArenaError;
use crate::model::StepDecl;
use crate::scenario::{Action, ActionKind, FaultAction, FaultLink, TRUST_CONTROL};
use crate::scheduler::{MAX_INSTANT_MS, MAX_OFFSET_MS};

/// The keys a fault step may carry besides `agent`, `action` and `at`.
pub(super) const FAULT_KEYS: &[&str] = &[
    "fault",
    "node",
    "keep_state",
    "between",
    "duration_ms",
    "delay_ms",
];

/// The fault kinds, as an error lists them.
const FAULT_KINDS: &str = "crash, restart, partition, heal, stall, delay";

/// Checks one fault step's keys against its kind and builds it; `nodes` are
/// the declared node ids.
pub(super) fn fault_action(
    step: &StepDecl,
    at: &dyn Fn(&str) -> String,
    nodes: Names<'_>,
) -> Result<Action, ArenaError> {
    let kind = step
        .fault
        .as_deref()
        .ok_or_else(|| ArenaError::MissingKey { field: at("fault") })?;
    let (takes, context): (&[&str], &'static str) = match kind {
        "crash" => (&["node"], "a crash fault takes node"),
        "restart" => (
            &["node", "keep_state"],
            "a restart fault takes node and keep_state",
        ),
        "partition" | "heal" => (&["between"], "a partition or heal fault takes between"),
        "stall" => (&["duration_ms"], "a stall fault takes duration_ms"),
        "delay" => (
            &["between", "delay_ms"],
            "a delay fault takes between and delay_ms",
        ),
        other => {
            return Err(ArenaError::UnsupportedValue {
                field: at("fault"),
                value: other.to_string(),
                allowed: FAULT_KINDS,
            })
        }
    };
    let present = [
        ("node", step.node.is_some()),
        ("keep_state", step.keep_state.is_some()),
        ("between", step.between.is_some()),
        ("duration_ms", step.duration_ms.is_some()),
        ("delay_ms", step.delay_ms.is_some()),
    ];
    for (key, is_present) in present {
        if is_present && !takes.contains(&key) {
            return Err(ArenaError::KeyNotAllowed {
                field: at(key),
                context,
            });
        }
        if !is_present && takes.contains(&key) {
            return Err(ArenaError::MissingKey { field: at(key) });
        }
    }
    let node = || -> Result<String, ArenaError> {
        let node = step.node.clone().unwrap_or_default();
        nodes.resolve("node", &node, || at("node"))?;
        Ok(node)
    };
    let link = || link(step.between.as_deref().unwrap_or_default(), at, nodes);
    let fault = match kind {
        "crash" => FaultAction::Crash { node: node()? },
        "restart" => FaultAction::Restart {
            node: node()?,
            keep_state: step.keep_state.unwrap_or_default(),
        },
        "partition" => FaultAction::Partition { link: link()? },
        "heal" => FaultAction::Heal { link: link()? },
        "stall" => FaultAction::Stall {
            duration_ms: virtual_ms(step.duration_ms, || at("duration_ms"), "duration_ms")?,
        },
        _ => {
            let link = link()?;
            if link.to_trust_control() {
                return Err(ArenaError::UnsupportedValue {
                    field: at("between"),
                    value: TRUST_CONTROL.to_string(),
                    allowed: "two nodes (a slow trust-control is a stall fault)",
                });
            }
            FaultAction::Delay {
                link,
                delay_ms: virtual_ms(step.delay_ms, || at("delay_ms"), "delay_ms")?,
            }
        }
    };
    Ok(Action::Fault(fault))
}

/// A fault's virtual duration: between 1 ms and 2^53.
fn virtual_ms(
    value: Option<u64>,
    field: impl FnOnce() -> String,
    key: &'static str,
) -> Result<u64, ArenaError> {
    match value {
        Some(ms) if (1..=MAX_OFFSET_MS).contains(&ms) => Ok(ms),
        _ => Err(ArenaError::OutOfRange {
            field: field(),
            rule: match key {
                "duration_ms" => "duration_ms is between 1 and 2^53",
                _ => "delay_ms is between 1 and 2^53",
            },
        }),
    }
}

/// The link `between` names: two different ends, each a declared node or
/// `trust-control`, at most one of them trust-control.
fn link(
    between: &[String],
    at: &dyn Fn(&str) -> String,
    nodes: Names<'_>,
) -> Result<FaultLink, ArenaError> {
    let [a, b] = between else {
        return Err(ArenaError::OutOfRange {
            field: at("between"),
            rule: "between names exactly two ends, each a node or \"trust-control\"",
        });
    };
    for (index, end) in [a, b].into_iter().enumerate() {
        if end != TRUST_CONTROL {
            nodes.resolve("node", end, || format!("{}[{index}]", at("between")))?;
        }
    }
    if a == b {
        return Err(ArenaError::OutOfRange {
            field: at("between"),
            rule: "between names two different ends",
        });
    }
    if nodes.declares(TRUST_CONTROL) {
        return Err(ArenaError::FaultSequence {
            field: at("between"),
            reason: format!("a node is named {TRUST_CONTROL:?}, so the link is ambiguous"),
            fix: "rename the node; \"trust-control\" in between names the service",
        });
    }
    Ok(FaultLink::new(a, b))
}

/// The faults in effect at one point of the schedule, by the step that
/// began each.
#[derive(Default)]
struct InEffect {
    down: BTreeMap<String, usize>,
    cut: BTreeMap<FaultLink, usize>,
    /// Delayed links, each with its delay and the step that began it.
    slowed: BTreeMap<FaultLink, (u64, usize)>,
    stall_until: Option<(u64, usize)>,
}

impl Validator<'_> {
    /// Walks the schedule in execution order and refuses a fault a run could
    /// not suffer there, or a message across a fault in effect.
    pub(super) fn fault_sequence(
        &self,
        walk: &Walk<'_>,
        faults: &[(usize, FaultAction)],
        start_ms: u64,
    ) -> Result<(), ArenaError> {
        let f = self.file;
        // Without a fault nothing is out of sequence and no message is cut.
        if faults.is_empty() {
            return Ok(());
        }
        let kernel_node: BTreeMap<&str, &str> = f
            .kernels
            .iter()
            .map(|k| (k.id.as_str(), k.node.as_str()))
            .collect();
        let agent_node = |agent: &str| -> Option<String> {
            let kernel = f.agents.iter().find(|a| a.id == agent)?.kernel.as_deref()?;
            kernel_node.get(kernel).map(|n| n.to_string())
        };
        let server_node = |server: &str| -> Option<&str> {
            let kernel = f.servers.iter().find(|s| s.id == server)?.kernel.as_str();
            kernel_node.get(kernel).copied()
        };
        let fault_of: BTreeMap<usize, &FaultAction> = faults.iter().map(|(i, f)| (*i, f)).collect();
        let mut state = InEffect::default();
        for entry in walk.schedule {
            let i = entry.step_index;
            if state
                .stall_until
                .is_some_and(|(until, _)| entry.evaluation_ms >= until)
            {
                state.stall_until = None;
            }
            match walk.kinds.get(i) {
                Some(ActionKind::Fault) => {
                    if let Some(fault) = fault_of.get(&i) {
                        state.apply(fault, i, entry.evaluation_ms)?;
                        if let FaultAction::Delay { delay_ms, .. } = fault {
                            arrives_in_range(start_ms, entry.evaluation_ms, *delay_ms, i)?;
                        }
                    }
                }
                Some(ActionKind::Call) if !state.slowed.is_empty() => {
                    let action = self.action_at(walk, i)?;
                    let Action::Call(call) = action.as_ref() else {
                        continue;
                    };
                    let ends = (agent_node(walk.agent(i)), server_node(&call.server));
                    let (Some(from), Some(to)) = ends else {
                        continue;
                    };
                    if from == to {
                        continue;
                    }
                    if let Some((delay_ms, at)) = state.slowed.get(&FaultLink::new(&from, to)) {
                        arrives_in_range(start_ms, entry.evaluation_ms, *delay_ms, *at)?;
                    }
                }
                Some(ActionKind::Message) => {
                    let action = self.action_at(walk, i)?;
                    let Action::Message(message) = action.as_ref() else {
                        continue;
                    };
                    let ends = [agent_node(walk.agent(i)), agent_node(&message.to)];
                    // A hand-over states a cut or a delay between the two
                    // nodes itself (refused, or in flight until its arrival).
                    let crosses = message.handover.is_none();
                    if let Some(reason) = state.blocks_message(&ends, crosses) {
                        return Err(ArenaError::FaultSequence {
                            field: format!("steps[{i}].to"),
                            reason,
                            fix: "a message has no verdict to state a fault; place it after the restart, the heal or the stall's end",
                        });
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Refuses delay step `delay_step`'s `delay_ms` when a call sent at
/// `offset` would reach its kernel past [`MAX_INSTANT_MS`]: that decision's
/// instant could not be printed.
fn arrives_in_range(
    start_ms: u64,
    offset: u64,
    delay_ms: u64,
    delay_step: usize,
) -> Result<(), ArenaError> {
    if start_ms.saturating_add(offset).saturating_add(delay_ms) > MAX_INSTANT_MS {
        return Err(ArenaError::OutOfRange {
            field: format!("steps[{delay_step}].delay_ms"),
            rule: "a call crossing the delayed link, sent at the delay's instant or later, arrives at most at 9999-12-31T23:59:59.999Z",
        });
    }
    Ok(())
}

/// A fault step `i` out of sequence: its key, why, and the fix.
fn out_of_sequence(i: usize, key: &str, reason: String, fix: &'static str) -> ArenaError {
    ArenaError::FaultSequence {
        field: format!("steps[{i}].{key}"),
        reason,
        fix,
    }
}

impl InEffect {
    /// Applies fault step `i` at offset `now`, refusing one out of sequence.
    fn apply(&mut self, fault: &FaultAction, i: usize, now: u64) -> Result<(), ArenaError> {
        match fault {
            FaultAction::Crash { node } => self.crash(node, i),
            FaultAction::Restart { node, .. } => self.restart(node, i),
            FaultAction::Partition { link } => self.partition(link, i),
            FaultAction::Heal { link } => self.heal(link, i),
            FaultAction::Stall { duration_ms } => self.stall(*duration_ms, i, now),
            FaultAction::Delay { link, delay_ms } => self.delay(link, *delay_ms, i),
        }
    }

    /// Step `i` crashes `node`, which must be up.
    fn crash(&mut self, node: &str, i: usize) -> Result<(), ArenaError> {
        if let Some(at) = self.down.insert(node.to_string(), i) {
            return Err(out_of_sequence(
                i,
                "node",
                format!("node {node} is already down (crashed at steps[{at}])"),
                "restart the node before crashing it again",
            ));
        }
        Ok(())
    }

    /// Step `i` restarts `node`, which must be down and able to load its
    /// world from trust-control.
    fn restart(&mut self, node: &str, i: usize) -> Result<(), ArenaError> {
        if self.down.remove(node).is_none() {
            return Err(out_of_sequence(
                i,
                "node",
                format!("node {node} is not down at this point"),
                "crash the node in an earlier step, or remove the restart",
            ));
        }
        // A restarted node loads its world from trust-control.
        if let Some(why) = self.control_blocked(node) {
            return Err(out_of_sequence(
                i,
                "node",
                format!("node {node} cannot load its world on restart: {why}"),
                "restart the node after the heal of its trust-control link or the stall's end",
            ));
        }
        Ok(())
    }

    /// Step `i` partitions `link`, which must be neither delayed nor cut.
    fn partition(&mut self, link: &FaultLink, i: usize) -> Result<(), ArenaError> {
        if self.slowed.contains_key(link) {
            return Err(out_of_sequence(
                i,
                "between",
                format!("link {} is delayed", link.describe()),
                "heal the delay before partitioning the link",
            ));
        }
        if let Some(at) = self.cut.insert(link.clone(), i) {
            return Err(out_of_sequence(
                i,
                "between",
                format!(
                    "link {} is already partitioned (at steps[{at}])",
                    link.describe()
                ),
                "heal the link before partitioning it again",
            ));
        }
        Ok(())
    }

    /// Step `i` heals `link`, which must be cut or delayed.
    fn heal(&mut self, link: &FaultLink, i: usize) -> Result<(), ArenaError> {
        if self.cut.remove(link).is_none() && self.slowed.remove(link).is_none() {
            return Err(out_of_sequence(
                i,
                "between",
                format!(
                    "link {} is neither partitioned nor delayed",
                    link.describe()
                ),
                "partition or delay the link in an earlier step, or remove the heal",
            ));
        }
        Ok(())
    }

    /// Step `i` stalls trust-control from `now`, which must not be stalled.
    fn stall(&mut self, duration_ms: u64, i: usize, now: u64) -> Result<(), ArenaError> {
        if let Some((_, at)) = self.stall_until {
            return Err(out_of_sequence(
                i,
                "fault",
                format!("trust-control is still stalled by steps[{at}]"),
                "start the next stall at or after the end of the previous one",
            ));
        }
        self.stall_until = Some((now.saturating_add(duration_ms), i));
        Ok(())
    }

    /// Step `i` delays `link`, which must be neither cut nor delayed.
    fn delay(&mut self, link: &FaultLink, delay_ms: u64, i: usize) -> Result<(), ArenaError> {
        if self.cut.contains_key(link) || self.slowed.contains_key(link) {
            return Err(out_of_sequence(
                i,
                "between",
                format!("link {} is already partitioned or delayed", link.describe()),
                "heal the link before delaying it",
            ));
        }
        self.slowed.insert(link.clone(), (delay_ms, i));
        Ok(())
    }

    /// Why `node` cannot reach trust-control now, if it cannot.
    fn control_blocked(&self, node: &str) -> Option<String> {
        if let Some((_, at)) = self.stall_until {
            return Some(format!("trust-control is stalled by steps[{at}]"));
        }
        let to_control = FaultLink::new(node, TRUST_CONTROL);
        self.cut.get(&to_control).map(|at| {
            format!(
                "link {} is partitioned (at steps[{at}])",
                to_control.describe()
            )
        })
    }

    /// Why a message between nodes `ends` (sender's, receiver's) cannot be
    /// sent now, if it cannot: trust-control carries its labels, and, when
    /// `crosses` (a message that is no hand-over), the link between the
    /// two nodes carries it, so a cut or a delay there has nothing to
    /// state it with either.
    fn blocks_message(&self, ends: &[Option<String>; 2], crosses: bool) -> Option<String> {
        for node in ends.iter().flatten() {
            if let Some(at) = self.down.get(node) {
                return Some(format!("node {node} is down (crashed at steps[{at}])"));
            }
            if let Some(why) = self.control_blocked(node) {
                return Some(why);
            }
        }
        let [Some(from), Some(to)] = ends else {
            return None;
        };
        if !crosses || from == to {
            return None;
        }
        let link = FaultLink::new(from, to);
        if let Some(at) = self.cut.get(&link) {
            return Some(format!(
                "link {} is partitioned (at steps[{at}])",
                link.describe()
            ));
        }
        self.slowed.get(&link).map(|(delay_ms, at)| {
            format!(
                "link {} is delayed {delay_ms} ms (at steps[{at}])",
                link.describe()
            )
        })
    }
}
