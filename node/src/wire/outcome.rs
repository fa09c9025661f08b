//! The node's answers on the wire: a kernel's `CallOutcome` with its
//! decision trace (answered by `NodeControl.Call` and `KernelLink.Evaluate`)
//! or the node's own refusal of a call, a delegation's child and labels or
//! its refusal, and a message's labels, to and from their `chio.node.v1`
//! messages.
//!
//! The signed receipt and the child capability token cross as the canonical
//! JSON their signer signed, and the released output as canonical JSON;
//! everything else is typed. The projected verdict is not sent: the
//! receiver projects the kernel's verdict with `sanitized`, so the two can
//! never disagree. Decoding names the field that does not decode.

use std::collections::BTreeMap;

use chio_kernel::reason::ReasonCode;
use chio_kernel::stores::JournalEntry;
use chio_kernel::trace::{BudgetRead, DecisionTrace, GuardAnswer, ShareRead, StageTrace};
use chio_kernel::verdict::{ProjectedVerdict, Verdict};
use chio_proto::node::v1 as pb;

use super::{decode, encode, malformed, required};
use crate::actors::CallOutcome;
use crate::error::NodeError;
use crate::node::StepRefusal;
use crate::node::{CallAnswer, DelegateOutcome, MessageOutcome};
use crate::outage::{NodeCode, Refusal};

fn verdict_to_proto(verdict: Verdict) -> pb::Verdict {
    match verdict {
        Verdict::Allow => pb::Verdict::Allow,
        Verdict::Deny => pb::Verdict::Deny,
        Verdict::PendingApproval => pb::Verdict::PendingApproval,
    }
}

fn verdict_from_proto(field: &str, value: i32) -> Result<Verdict, NodeError> {
    match pb::Verdict::try_from(value) {
        Ok(pb::Verdict::Allow) => Ok(Verdict::Allow),
        Ok(pb::Verdict::Deny) => Ok(Verdict::Deny),
        Ok(pb::Verdict::PendingApproval) => Ok(Verdict::PendingApproval),
        Ok(pb::Verdict::Unspecified) => Err(malformed(field, "unspecified")),
        Err(_) => Err(malformed(field, format!("{value} is not a verdict"))),
    }
}

fn projected_to_proto(verdict: ProjectedVerdict) -> pb::ProjectedVerdict {
    match verdict {
        ProjectedVerdict::Allow => pb::ProjectedVerdict::Allow,
        ProjectedVerdict::Deny => pb::ProjectedVerdict::Deny,
        ProjectedVerdict::Rewrite => pb::ProjectedVerdict::Rewrite,
    }
}

fn projected_from_proto(field: &str, value: i32) -> Result<ProjectedVerdict, NodeError> {
    match pb::ProjectedVerdict::try_from(value) {
        Ok(pb::ProjectedVerdict::Allow) => Ok(ProjectedVerdict::Allow),
        Ok(pb::ProjectedVerdict::Deny) => Ok(ProjectedVerdict::Deny),
        Ok(pb::ProjectedVerdict::Rewrite) => Ok(ProjectedVerdict::Rewrite),
        Ok(pb::ProjectedVerdict::Unspecified) => Err(malformed(field, "unspecified")),
        Err(_) => Err(malformed(
            field,
            format!("{value} is not a projected verdict"),
        )),
    }
}

/// A kernel's answer, on the wire.
pub fn call_outcome_to_proto(outcome: &CallOutcome) -> Result<pb::CallOutcome, NodeError> {
    Ok(pb::CallOutcome {
        kernel_id: outcome.kernel_id.clone(),
        verdict: verdict_to_proto(outcome.verdict).into(),
        sanitized: outcome.sanitized,
        reason: outcome.reason.clone(),
        guard: outcome.guard.clone(),
        recorded: outcome.recorded,
        receipt_json: encode("a signed receipt", &outcome.receipt)?,
        output_json: outcome
            .output
            .as_ref()
            .map(|output| encode("a released output", output))
            .transpose()?,
        trace: Some(trace_to_proto(&outcome.trace)),
    })
}

/// A kernel's answer, from the wire; `field` names the message (`outcome`).
pub fn call_outcome_from_proto(
    field: &str,
    outcome: Option<pb::CallOutcome>,
) -> Result<CallOutcome, NodeError> {
    let outcome = required(field, outcome)?;
    let verdict = verdict_from_proto(&format!("{field}.verdict"), outcome.verdict)?;
    Ok(CallOutcome {
        projected: verdict.project(outcome.sanitized),
        verdict,
        receipt: decode(&format!("{field}.receipt_json"), &outcome.receipt_json)?,
        output: outcome
            .output_json
            .as_deref()
            .map(|bytes| decode(&format!("{field}.output_json"), bytes))
            .transpose()?,
        trace: trace_from_proto(
            &format!("{field}.trace"),
            required(&format!("{field}.trace"), outcome.trace)?,
        )?,
        kernel_id: outcome.kernel_id,
        sanitized: outcome.sanitized,
        reason: outcome.reason,
        guard: outcome.guard,
        recorded: outcome.recorded,
    })
}

/// A decision trace, on the wire.
pub fn trace_to_proto(trace: &DecisionTrace) -> pb::DecisionTrace {
    pb::DecisionTrace {
        principal: trace.principal.clone(),
        chain: trace.chain.clone(),
        stages: trace
            .stages
            .iter()
            .map(|s| pb::StageTrace {
                stage: s.stage.clone(),
                outcome: s.outcome.clone(),
                detail: s.detail.clone(),
            })
            .collect(),
        label_keys: trace
            .label_keys
            .iter()
            .map(|(key, labels)| pb::KeyLabels {
                key: key.clone(),
                labels: labels.clone(),
            })
            .collect(),
        argument_labels: trace
            .argument_labels
            .iter()
            .map(|(pointer, labels)| pb::KeyLabels {
                key: pointer.clone(),
                labels: labels.clone(),
            })
            .collect(),
        budget_keys: trace
            .budget_keys
            .iter()
            .map(|b| pb::BudgetRead {
                key: b.key.clone(),
                amount: b.amount,
                limit: b.limit,
                used: b.used,
                outcome: b.outcome.clone(),
                settled: b.settled.clone(),
            })
            .collect(),
        journal: trace.journal.iter().map(journal_to_proto).collect(),
        guards: trace
            .guards
            .iter()
            .map(|g| pb::GuardAnswer {
                guard: g.guard.clone(),
                kind: g.kind.clone(),
                mode: g.mode.clone(),
                phase: g.phase.clone(),
                answer: g.answer.clone(),
                reason: g.reason.clone(),
                admitted: g.admitted.clone(),
            })
            .collect(),
        shares: trace
            .shares
            .iter()
            .map(|s| pb::ShareRead {
                parent: s.parent.clone(),
                child: s.child.clone(),
                child_bps: s.child_bps,
                outcome: s.outcome.clone(),
            })
            .collect(),
        output_label: trace.output_label.clone(),
        output_integrity: trace.output_integrity.clone(),
        label_writes: trace.label_writes.clone(),
        not_performed: trace.not_performed,
        reason_code: trace.reason_code.map(|code| code.as_str().to_string()),
        allowlists_read: trace.allowlists_read.clone(),
        server_kept: trace.server_kept.clone(),
    }
}

fn journal_to_proto(entry: &JournalEntry) -> pb::JournalEntry {
    pb::JournalEntry {
        request_id: entry.request_id.clone(),
        server: entry.server.clone(),
        tool: entry.tool.clone(),
        verdict: projected_to_proto(entry.verdict).into(),
        at_ms: entry.at_ms,
        performed: entry.performed,
    }
}

/// A decision trace, from the wire; a label key read twice is refused.
pub fn trace_from_proto(field: &str, trace: pb::DecisionTrace) -> Result<DecisionTrace, NodeError> {
    let label_keys = labels_by_key(&format!("{field}.label_keys"), "key", trace.label_keys)?;
    let argument_labels = labels_by_key(
        &format!("{field}.argument_labels"),
        "argument",
        trace.argument_labels,
    )?;
    let reason_code = trace
        .reason_code
        .as_deref()
        .map(|code| {
            ReasonCode::parse(code)
                .ok_or_else(|| malformed(&format!("{field}.reason_code"), "not a reason code"))
        })
        .transpose()?;
    let journal = journal_from_proto(&format!("{field}.journal.verdict"), trace.journal)?;
    Ok(DecisionTrace {
        reason_code,
        principal: trace.principal,
        chain: trace.chain,
        stages: trace
            .stages
            .into_iter()
            .map(|s| StageTrace {
                stage: s.stage,
                outcome: s.outcome,
                detail: s.detail,
            })
            .collect(),
        label_keys,
        argument_labels,
        budget_keys: trace
            .budget_keys
            .into_iter()
            .map(budget_from_proto)
            .collect(),
        journal,
        guards: trace.guards.into_iter().map(guard_from_proto).collect(),
        shares: trace
            .shares
            .into_iter()
            .map(|s| ShareRead {
                parent: s.parent,
                child: s.child,
                child_bps: s.child_bps,
                outcome: s.outcome,
            })
            .collect(),
        output_label: trace.output_label,
        output_integrity: trace.output_integrity,
        server_kept: trace.server_kept,
        label_writes: trace.label_writes,
        not_performed: trace.not_performed,
        allowlists_read: trace.allowlists_read,
    })
}

/// Labels by key, from the wire, as read at `field`; a key (a `what`)
/// read twice is refused.
fn labels_by_key(
    field: &str,
    what: &str,
    reads: Vec<pb::KeyLabels>,
) -> Result<BTreeMap<String, Vec<String>>, NodeError> {
    let mut by_key = BTreeMap::new();
    for read in reads {
        if by_key.contains_key(&read.key) {
            return Err(malformed(
                field,
                format!("{what} {:?} appears twice", read.key),
            ));
        }
        by_key.insert(read.key, read.labels);
    }
    Ok(by_key)
}

/// A trace's journal, from the wire; `field` names the entries' verdict.
fn journal_from_proto(
    field: &str,
    entries: Vec<pb::JournalEntry>,
) -> Result<Vec<JournalEntry>, NodeError> {
    entries
        .into_iter()
        .map(|e| {
            Ok(JournalEntry {
                verdict: projected_from_proto(field, e.verdict)?,
                request_id: e.request_id,
                server: e.server,
                tool: e.tool,
                at_ms: e.at_ms,
                performed: e.performed,
            })
        })
        .collect()
}

/// A budget hold a trace records, from the wire.
fn budget_from_proto(b: pb::BudgetRead) -> BudgetRead {
    BudgetRead {
        key: b.key,
        amount: b.amount,
        limit: b.limit,
        used: b.used,
        outcome: b.outcome,
        settled: b.settled,
    }
}

/// A guard's answer a trace records, from the wire.
fn guard_from_proto(g: pb::GuardAnswer) -> GuardAnswer {
    GuardAnswer {
        guard: g.guard,
        kind: g.kind,
        mode: g.mode,
        phase: g.phase,
        answer: g.answer,
        reason: g.reason,
        admitted: g.admitted,
    }
}

/// A node's answer to a call, on the wire.
pub fn call_response(answer: &CallAnswer) -> Result<pb::CallResponse, NodeError> {
    Ok(match answer {
        CallAnswer::Decided(outcome) => pb::CallResponse {
            outcome: Some(call_outcome_to_proto(outcome)?),
            refusal: None,
            refusal_code: None,
        },
        CallAnswer::Refused(reason) => pb::CallResponse {
            outcome: None,
            refusal: Some(reason.message.clone()),
            refusal_code: Some(reason.code.as_str().to_string()),
        },
    })
}

/// A node's answer to a call, from the wire: the kernel's outcome or the
/// node's refusal, never both.
pub fn call_answer(response: pb::CallResponse) -> Result<CallAnswer, NodeError> {
    match (response.refusal, response.outcome) {
        (Some(_), Some(_)) => Err(malformed("refusal", "sent together with an outcome")),
        (Some(reason), None) => Ok(CallAnswer::Refused(refusal_from_proto(
            reason,
            response.refusal_code,
        )?)),
        (None, outcome) => Ok(CallAnswer::Decided(Box::new(call_outcome_from_proto(
            "outcome", outcome,
        )?))),
    }
}

/// A delegation's answer, on the wire.
pub fn delegate_response(
    answer: &Result<DelegateOutcome, Refusal>,
) -> Result<pb::DelegateResponse, NodeError> {
    Ok(match answer {
        Ok(outcome) => pb::DelegateResponse {
            token_json: encode("a capability token", &outcome.token)?,
            labels: outcome.labels.clone(),
            refusal: None,
            refusal_code: None,
        },
        Err(reason) => pb::DelegateResponse {
            token_json: Vec::new(),
            labels: Vec::new(),
            refusal: Some(reason.message.clone()),
            refusal_code: Some(reason.code.as_str().to_string()),
        },
    })
}

/// A delegation's answer, from the wire: the child, or the node's refusal
/// with nothing else set.
pub fn delegate_outcome(
    response: pb::DelegateResponse,
) -> Result<Result<DelegateOutcome, Refusal>, NodeError> {
    if let Some(reason) = response.refusal {
        if !response.token_json.is_empty() || !response.labels.is_empty() {
            return Err(malformed("refusal", "sent together with a child"));
        }
        return Ok(Err(refusal_from_proto(reason, response.refusal_code)?));
    }
    Ok(Ok(DelegateOutcome {
        token: decode("token_json", &response.token_json)?,
        labels: response.labels,
    }))
}

/// A revocation's answer, on the wire.
pub fn revoke_response(refusal: &Option<Refusal>) -> pb::RevokeResponse {
    pb::RevokeResponse {
        refusal: refusal.as_ref().map(|r| r.message.clone()),
        refusal_code: refusal.as_ref().map(|r| r.code.as_str().to_string()),
    }
}

/// A revocation's answer, from the wire: the node's refusal, if it refused.
pub fn revoke_outcome(response: pb::RevokeResponse) -> Result<Option<Refusal>, NodeError> {
    response
        .refusal
        .map(|reason| refusal_from_proto(reason, response.refusal_code))
        .transpose()
}

/// A node's refusal from the wire: its message and the code sent with it.
fn refusal_from_proto(message: String, code: Option<String>) -> Result<Refusal, NodeError> {
    let code = code.ok_or_else(|| malformed("refusal_code", "missing beside a refusal"))?;
    let code =
        NodeCode::parse(&code).ok_or_else(|| malformed("refusal_code", "not a node code"))?;
    Ok(Refusal { code, message })
}

/// A message's answer, on the wire.
pub fn message_response(outcome: &MessageOutcome) -> pb::MessageResponse {
    pb::MessageResponse {
        labels: outcome.labels.clone(),
        refusal: outcome.refusal.as_ref().map(|r| r.message.clone()),
        refusal_code: outcome.refusal.as_ref().map(|r| r.code.clone()),
    }
}

/// A message's answer, from the wire.
pub fn message_outcome(response: pb::MessageResponse) -> MessageOutcome {
    let refusal = match (response.refusal, response.refusal_code) {
        (Some(message), Some(code)) => Some(StepRefusal { code, message }),
        (Some(message), None) => Some(StepRefusal {
            code: String::new(),
            message,
        }),
        _ => None,
    };
    MessageOutcome {
        labels: response.labels,
        refusal,
    }
}
