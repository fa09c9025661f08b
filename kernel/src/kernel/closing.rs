//! What an allow's closing batch holds and how its answers are read: the
//! released output's labels and the keys they join, the run-time
//! allowlist records it gains, and the reading of the batch's answers in
//! pipeline order, whose first answer that ends the decision is the deny
//! reason ([`super::complete`] builds and sends the batch).

use super::admit::{next_answer, read_revocation};
use crate::batch::{OpAnswer, StoreOp};
use crate::error::{StoreError, StoreName};
use crate::label::{Label, LabelKey};
use crate::reason::DenyReason;
use crate::request::ToolCallRequest;
use crate::trace::DecisionTrace;
use crate::verification::VerifiedCapability;

/// What the closing batch of an allow must answer before the output is
/// released.
pub(super) struct Closing<'a> {
    /// Settlements, one per granted hold.
    pub(super) holds: usize,
    /// How its holds are settled: invocation holds committed when its
    /// server received the call, whatever it answered, monetary holds when
    /// the tool carried it out; the others released.
    pub(super) settle: super::Settle,
    /// Which of its holds are monetary.
    pub(super) money_holds: &'a super::MoneyHolds,
    /// Whose ids are looked up again.
    pub(super) verified: &'a VerifiedCapability,
    /// An output label that is not a known level: nothing is joined.
    pub(super) unknown: Option<String>,
    /// The keys the output's labels join.
    pub(super) label_keys: Vec<String>,
    /// How many labels join each key.
    pub(super) joined: usize,
    /// The run-time allowlist records written, with how many digests each.
    pub(super) allowlisted: Vec<(String, usize)>,
}

/// The deny reason of an output label that is not a known level.
pub(super) fn unexpected_label(name: Option<&str>) -> DenyReason {
    DenyReason::OutputLabelUnknown {
        label: name.unwrap_or_default().to_string(),
    }
    .withheld()
}

/// Reads the closing batch of an allow in pipeline order, recording the
/// settled holds and label writes in `trace`; the first answer that ends
/// the decision is the deny reason.
pub(super) fn read_closing(
    answers: &mut impl Iterator<Item = Result<OpAnswer, StoreError>>,
    closing: Closing<'_>,
    trace: &mut DecisionTrace,
) -> Result<(), DenyReason> {
    let mut commit = Ok(());
    for _ in 0..closing.holds {
        if let Err(e) = next_answer(answers, StoreName::Budget) {
            commit = Err(DenyReason::from(e));
            break;
        }
    }
    let settled = |committed: bool| match (commit.is_ok(), committed) {
        (true, true) => "committed",
        (false, true) => "commit-failed",
        (true, false) => "released",
        (false, false) => "release-failed",
    };
    let (spent, moved) = (settled(closing.settle.spent), settled(closing.settle.moved));
    trace.settle_holds_by(|key| {
        if closing.money_holds.counts(key) {
            moved
        } else {
            spent
        }
    });
    commit?;
    // Revocation again before the allow is finalised: a revocation that
    // raced the dispatch withholds the output (the tool did run, so the
    // budget stays committed).
    read_revocation(closing.verified, answers).map_err(DenyReason::withheld)?;
    if let Some(name) = &closing.unknown {
        return Err(unexpected_label(Some(name)));
    }
    if closing.joined > 0 {
        for key in closing.label_keys {
            for _ in 0..closing.joined {
                next_answer(answers, StoreName::Label)
                    .map_err(|e| DenyReason::from(e).withheld())?;
            }
            trace.label_writes.push(key);
        }
    }
    for (key, written) in closing.allowlisted {
        for _ in 0..written {
            next_answer(answers, StoreName::Label).map_err(|e| DenyReason::from(e).withheld())?;
        }
        trace.label_writes.push(key);
    }
    Ok(())
}

/// What an allow's closing batch needs of the admitted call and its output.
pub(super) struct Released {
    pub(super) request: ToolCallRequest,
    pub(super) verified: VerifiedCapability,
    pub(super) holds: Vec<String>,
    pub(super) parameter_hash: String,
    /// SHA-256 of the released output's canonical JSON.
    pub(super) output_hash: String,
    pub(super) label: Option<Label>,
    pub(super) integrity: Option<String>,
    pub(super) joined: Vec<String>,
    pub(super) unknown: Option<String>,
    pub(super) label_keys: Vec<String>,
    /// Run-time allowlist records and the digests they gain.
    pub(super) allowlisted: Vec<(String, Vec<String>)>,
    /// The monetary holds among `holds`.
    pub(super) money_holds: super::MoneyHolds,
    /// How the holds are settled ([`super::ToolOutput::received`]).
    pub(super) settle: super::Settle,
}

/// The retained keys a released output's labels join: the session, the
/// principal and the lineage.
pub(super) fn released_label_keys(
    request: &ToolCallRequest,
    principal: &str,
    verified: &VerifiedCapability,
) -> Vec<String> {
    [
        LabelKey::Session(request.session_id.clone()),
        LabelKey::Principal(principal.to_string()),
        LabelKey::Lineage(verified.root_id.clone()),
    ]
    .iter()
    .map(LabelKey::as_key)
    .collect()
}

/// One join per retained key and label, in key order then label order.
pub(super) fn join_ops(label_keys: &[String], joined: &[String]) -> Vec<StoreOp> {
    label_keys
        .iter()
        .flat_map(|key| {
            joined.iter().map(move |name| StoreOp::JoinLabels {
                keys: vec![key.clone()],
                label: name.clone(),
            })
        })
        .collect()
}

/// One join per run-time allowlist record and digest, in record order.
pub(super) fn allowlist_ops(allowlisted: &[(String, Vec<String>)]) -> Vec<StoreOp> {
    allowlisted
        .iter()
        .flat_map(|(key, digests)| {
            digests.iter().map(|digest| StoreOp::JoinLabels {
                keys: vec![key.clone()],
                label: digest.clone(),
            })
        })
        .collect()
}
