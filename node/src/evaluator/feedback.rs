//! The search's feedback on one decided adversary action: the pipeline
//! stage that stopped it, how close a detector came, and the goal's oracle.
//! None of this detail comes from the kernel's decision, which names a
//! pattern and a pointer only; the reference readings here are the kernel
//! crate's own, run outside any guard.

use chio_adversary::action::{AdversaryAction, Mutation};
use chio_adversary::fitness::{Feedback, Stage};
use chio_arena::adversaries::goal::Goal;
use chio_kernel::guards::prompt_injection::{scan_value, Pattern, Reading, ValueFinding};
use chio_kernel::kernel::Decision;
use chio_kernel::path::normalize_path;
use serde_json::Value;

/// What the evaluator saw beyond the shown decision: for a burst, how many
/// copies it made, how many were admitted, and whether one was admitted
/// past its budget (the evaluator's own count, see `budget`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Observed {
    /// Copies made.
    pub copies: u32,
    /// Copies admitted.
    pub admitted: u32,
    /// Whether a copy was admitted past a budget.
    pub exceeded: bool,
}

/// The search's feedback on one decided action (see the module doc).
pub(super) fn feedback(
    action: &AdversaryAction,
    decision: &Decision,
    projected: chio_kernel::verdict::ProjectedVerdict,
    observed: &Observed,
) -> Feedback {
    let stage = Stage::classify(
        projected,
        decision.reason.as_deref(),
        decision.guard.as_deref(),
    );
    let admitted = stage == Stage::Admitted;
    // The stage the decision trace names as deciding: its last one reached.
    let decided_stage = decision.trace.stages.last().map(|s| s.stage.clone());
    let goal = action
        .goal
        .clone()
        .unwrap_or_else(|| Goal::default_for(action.gene.class()));
    match goal {
        Goal::SmuggleInstruction => {
            // What the kernel saw: the arguments, or the output it produced.
            let seen = match &action.mutation {
                Mutation::Fixture { .. } => match &decision.output {
                    Some(output) => Some(output.clone()),
                    None if !admitted => action_fixture_text(action),
                    None => None,
                },
                _ => Some(action.call.arguments.clone()),
            };
            let finding = seen.as_ref().and_then(|v| scan_value(v, &Pattern::ALL));
            let (detail, closeness) = match &finding {
                Some(f) => (Some(describe_finding(f)), disguise(f)),
                None => (None, 0),
            };
            Feedback {
                stage,
                detail,
                closeness,
                goal_reached: admitted && finding.is_some(),
                decided_stage,
            }
        }
        Goal::ReachForbiddenPath { path, .. } => {
            let spelled = action
                .call
                .arguments
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("");
            let reached = normalize_path(spelled)
                .ok()
                .zip(normalize_path(&path).ok())
                .is_some_and(|(a, b)| a.eq_ignore_ascii_case(&b));
            Feedback {
                stage,
                detail: reached.then(|| "names-the-goal-path".to_string()),
                closeness: if reached && spelled != path { 500 } else { 0 },
                goal_reached: admitted && reached,
                decided_stage,
            }
        }
        Goal::ExceedBudget => Feedback {
            stage,
            detail: Some(format!(
                "{}-of-{}-admitted",
                observed.admitted, observed.copies
            )),
            // How many of the copies got through: the curve climbs as a
            // burst gets closer to the limit's edge.
            closeness: (u64::from(observed.admitted) * 999 / u64::from(observed.copies.max(1)))
                as u16,
            goal_reached: observed.exceeded,
            decided_stage,
        },
        _ => Feedback {
            stage,
            detail: None,
            closeness: 0,
            goal_reached: admitted,
            decided_stage,
        },
    }
}

/// The fixture line an action injects, as a string value, for a denied fixture action.
fn action_fixture_text(action: &AdversaryAction) -> Option<Value> {
    match &action.mutation {
        Mutation::Fixture { edit, .. } => Some(Value::String(edit.payload.clone())),
        _ => None,
    }
}

/// `rule/reading/depth` of a reference finding, or `split/rule`.
fn describe_finding(finding: &ValueFinding) -> String {
    match finding {
        ValueFinding::At { found, .. } => format!(
            "{}/{}/{}/{}",
            found.pattern.as_str(),
            found.rule,
            found.reading.as_str(),
            found.embedding
        ),
        ValueFinding::Split { found } => {
            format!("{}/{}/split", found.pattern.as_str(), found.rule)
        }
        ValueFinding::Limit { limit, .. } => format!("limit/{limit}"),
    }
}

/// Thousandths: how hard the reference detector had to look to read the payload.
fn disguise(finding: &ValueFinding) -> u16 {
    match finding {
        ValueFinding::At { found, .. } => {
            let reading = if found.reading == Reading::Plain {
                0
            } else {
                500
            };
            let depth = 150 * found.embedding.min(3) as u16;
            (reading + depth).min(999)
        }
        ValueFinding::Split { .. } => 700,
        ValueFinding::Limit { .. } => 300,
    }
}
