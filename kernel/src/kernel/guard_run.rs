//! Running the guard pipeline: the pre-dispatch guards over the request
//! and the post-invocation guards over the output, in pipeline order.
//!
//! Each guard's answer is recorded for the decision trace; an observe-mode
//! answer becomes an observed finding instead of the verdict. What the
//! guards are and how each decides lives in [`crate::guards`]; when they
//! run and with which context is the admission and completion code's.

use serde_json::Value;

use super::Outcome;
use crate::guards::{Guard, GuardContext, GuardError, GuardMode, GuardVerdict, OutputVerdict};
use crate::reason::DenyReason;
use crate::receipt::{ObservedFinding, WouldAnswer};
use crate::trace::GuardAnswer;
use crate::verdict::Verdict;

/// Runs the pre-dispatch guards; observe-mode answers go to `observed`.
pub(super) fn run_request_guards(
    guards: &[Box<dyn Guard>],
    ctx: &GuardContext<'_>,
    observed: &mut Vec<ObservedFinding>,
    answers: &mut Vec<GuardAnswer>,
) -> Result<(), Box<Outcome>> {
    for guard in guards {
        let meta = guard.meta();
        let mut admitted = Vec::new();
        let answer = guard.check_request_noting(ctx, &mut admitted);
        answers.push(GuardAnswer {
            admitted,
            guard: meta.id.clone(),
            kind: guard.kind().as_str().to_string(),
            mode: meta.mode.as_str().to_string(),
            phase: "request".to_string(),
            answer: match &answer {
                Ok(GuardVerdict::Allow) => "allow",
                Ok(GuardVerdict::Deny(_)) => "deny",
                Ok(GuardVerdict::PendingApproval(_)) => "pending_approval",
                Err(_) => "error",
            }
            .to_string(),
            reason: match &answer {
                Ok(GuardVerdict::Allow) => None,
                Ok(GuardVerdict::Deny(r)) | Ok(GuardVerdict::PendingApproval(r)) => {
                    Some(r.to_string())
                }
                Err(e) => Some(failed(&meta.id, e).to_string()),
            },
        });
        let (would, reason) = match answer {
            Ok(GuardVerdict::Allow) => continue,
            Ok(GuardVerdict::Deny(reason)) => (WouldAnswer::Deny, reason),
            Ok(GuardVerdict::PendingApproval(reason)) => (WouldAnswer::PendingApproval, reason),
            Err(e) => (WouldAnswer::Error, failed(&meta.id, &e)),
        };
        if meta.mode == GuardMode::Observe {
            observed.push(ObservedFinding {
                guard: meta.id.clone(),
                would,
                reason: reason.to_string(),
            });
            continue;
        }
        let mut outcome = Outcome::deny(reason, Some(meta.id.clone()), Vec::new());
        if would == WouldAnswer::PendingApproval {
            outcome.verdict = Verdict::PendingApproval;
        }
        return Err(Box::new(outcome));
    }
    Ok(())
}

/// The reason of guard `guard` that could not decide.
fn failed(guard: &str, error: &GuardError) -> DenyReason {
    DenyReason::GuardFailed {
        guard: guard.to_string(),
        cause: error.to_string(),
    }
}

/// A rewrite that a post-invocation guard made: (guard id, what changed).
pub(super) type Rewrite = Option<(String, String)>;

/// Runs the post-invocation guards over the output in pipeline order.
pub(super) fn run_output_guards(
    guards: &[Box<dyn Guard>],
    ctx: &GuardContext<'_>,
    content: Value,
    observed: &mut Vec<ObservedFinding>,
    answers: &mut Vec<GuardAnswer>,
) -> Result<(Value, bool, Rewrite), Box<Outcome>> {
    let mut content = content;
    let mut sanitized = false;
    let mut rewrite: Rewrite = None;
    for guard in guards.iter().filter(|g| g.inspects_output()) {
        let meta = guard.meta();
        let observe = meta.mode == GuardMode::Observe;
        let answer = guard.check_output(ctx, &content);
        answers.push(GuardAnswer {
            guard: meta.id.clone(),
            kind: guard.kind().as_str().to_string(),
            mode: meta.mode.as_str().to_string(),
            phase: "output".to_string(),
            answer: match &answer {
                Ok(OutputVerdict::Pass) => "pass",
                Ok(OutputVerdict::Deny(_)) => "deny",
                Ok(OutputVerdict::Rewrite(..)) => "rewrite",
                Err(_) => "error",
            }
            .to_string(),
            reason: match &answer {
                Ok(OutputVerdict::Pass) => None,
                Ok(OutputVerdict::Deny(r)) => Some(r.to_string()),
                Ok(OutputVerdict::Rewrite(_, r)) => Some(r.clone()),
                Err(e) => Some(failed(&meta.id, e).to_string()),
            },
            admitted: Vec::new(),
        });
        match answer {
            Ok(OutputVerdict::Pass) => {}
            Ok(OutputVerdict::Deny(reason)) if observe => observed.push(ObservedFinding {
                guard: meta.id.clone(),
                would: WouldAnswer::Deny,
                reason: reason.to_string(),
            }),
            Ok(OutputVerdict::Deny(reason)) => {
                return Err(Box::new(Outcome::deny(
                    reason,
                    Some(meta.id.clone()),
                    Vec::new(),
                )))
            }
            Ok(OutputVerdict::Rewrite(_, why)) if observe => observed.push(ObservedFinding {
                guard: meta.id.clone(),
                would: WouldAnswer::Rewrite,
                reason: why,
            }),
            Ok(OutputVerdict::Rewrite(new, why)) => {
                content = new;
                sanitized = true;
                rewrite = Some(match rewrite {
                    Some((g, w)) => (g, format!("{w}; {why}")),
                    None => (meta.id.clone(), why),
                });
            }
            Err(e) if observe => observed.push(ObservedFinding {
                guard: meta.id.clone(),
                would: WouldAnswer::Error,
                reason: failed(&meta.id, &e).to_string(),
            }),
            Err(e) => {
                return Err(Box::new(Outcome::deny(
                    failed(&meta.id, &e).withheld(),
                    Some(meta.id.clone()),
                    Vec::new(),
                )))
            }
        }
    }
    Ok((content, sanitized, rewrite))
}
