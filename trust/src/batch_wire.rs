//! Decision batches on the wire: `BatchOp` and its answers to and from the
//! `chio.trust.v1` messages, for the service and the client.
//!
//! An operation that failed travels as the status its own RPC would have
//! answered (code and message), so the client maps it to the same
//! [`TrustError`] a single call gives and a deny reason reads the same
//! whether its operation went alone or in a batch. No rule lives here.

use chio_kernel::batch::StoreOp;
use chio_kernel::stores::ShareAdmission;
use chio_proto::trust::v1 as pb;
use tonic::{Code, Status};

use crate::model::{BatchOp, HoldOutcome, OpAnswer, ReceiptRecord};
use crate::service::status_of;
use crate::TrustError;

/// The name of an operation's own RPC, used in error messages.
pub fn operation_name<R>(op: &StoreOp<R>) -> &'static str {
    match op {
        StoreOp::IsRevoked { .. } => "is_revoked",
        StoreOp::RecordRequest { .. } => "record_request",
        StoreOp::Hold { .. } => "hold_budget",
        StoreOp::ReadLabels { .. } => "read_labels",
        StoreOp::AdmitShare { .. } => "admit_share",
        StoreOp::Commit { .. } => "commit_budget",
        StoreOp::Release { .. } => "release_budget",
        StoreOp::JoinLabels { .. } => "join_labels",
        StoreOp::AppendReceipt { .. } => "append_receipts",
    }
}

/// An operation as the client sends it.
pub fn op_to_wire(op: BatchOp) -> pb::BatchOp {
    use pb::batch_op::Op;
    let op = match op {
        StoreOp::IsRevoked { id } => Op::IsRevoked(pb::IsRevokedRequest { id }),
        StoreOp::RecordRequest { key } => {
            Op::RecordRequest(pb::RecordRequestRequest { request_key: key })
        }
        StoreOp::Hold {
            hold_id,
            key,
            amount,
            limit,
        } => Op::HoldBudget(pb::HoldBudgetRequest {
            hold_id,
            budget_key: key,
            amount,
            limit,
        }),
        StoreOp::ReadLabels {
            keys,
            stop_unless_empty,
        } => Op::ReadLabels(pb::ReadLabelsOp {
            keys,
            stop_unless_empty,
        }),
        StoreOp::AdmitShare {
            parent_id,
            child_id,
            child_bps,
            parent_bps,
        } => Op::AdmitShare(pb::AdmitShareRequest {
            parent_id,
            child_id,
            child_bps,
            parent_bps,
        }),
        StoreOp::Commit { hold_id } => Op::CommitBudget(pb::CommitBudgetRequest { hold_id }),
        StoreOp::Release { hold_id } => Op::ReleaseBudget(pb::ReleaseBudgetRequest { hold_id }),
        StoreOp::JoinLabels { keys, label } => {
            Op::JoinLabels(pb::JoinLabelsRequest { keys, label })
        }
        StoreOp::AppendReceipt { receipt } => Op::AppendReceipt(pb::Receipt {
            receipt_id: receipt.receipt_id,
            body: receipt.body,
        }),
    };
    pb::BatchOp { op: Some(op) }
}

/// An operation as the service receives it; an empty one is refused.
pub fn op_from_wire(op: pb::BatchOp) -> Result<BatchOp, Status> {
    use pb::batch_op::Op;
    let Some(op) = op.op else {
        return Err(status_of(TrustError::InvalidArgument {
            field: "ops",
            problem: "an operation is empty".to_owned(),
            fix: "set exactly one operation in every BatchOp",
        }));
    };
    Ok(match op {
        Op::IsRevoked(r) => StoreOp::IsRevoked { id: r.id },
        Op::RecordRequest(r) => StoreOp::RecordRequest { key: r.request_key },
        Op::HoldBudget(r) => StoreOp::Hold {
            hold_id: r.hold_id,
            key: r.budget_key,
            amount: r.amount,
            limit: r.limit,
        },
        Op::ReadLabels(r) => StoreOp::ReadLabels {
            keys: r.keys,
            stop_unless_empty: r.stop_unless_empty,
        },
        Op::AdmitShare(r) => StoreOp::AdmitShare {
            parent_id: r.parent_id,
            child_id: r.child_id,
            child_bps: r.child_bps,
            parent_bps: r.parent_bps,
        },
        Op::CommitBudget(r) => StoreOp::Commit { hold_id: r.hold_id },
        Op::ReleaseBudget(r) => StoreOp::Release { hold_id: r.hold_id },
        Op::JoinLabels(r) => StoreOp::JoinLabels {
            keys: r.keys,
            label: r.label,
        },
        Op::AppendReceipt(r) => StoreOp::AppendReceipt {
            receipt: ReceiptRecord {
                receipt_id: r.receipt_id,
                body: r.body,
            },
        },
    })
}

/// An answer as the service sends it.
pub fn answer_to_wire(answer: Result<OpAnswer, TrustError>) -> pb::BatchAnswer {
    use pb::batch_answer::Answer;
    let answer = match answer {
        Err(error) => {
            let status = status_of(error);
            Answer::Error(pb::BatchError {
                code: status.code() as i32,
                message: status.message().to_owned(),
            })
        }
        Ok(OpAnswer::Revoked(revoked)) => Answer::Revoked(revoked),
        Ok(OpAnswer::Fresh(fresh)) => Answer::Fresh(fresh),
        Ok(OpAnswer::Hold(outcome)) => Answer::HoldBudget(pb::HoldBudgetResponse {
            outcome: Some(match outcome {
                HoldOutcome::Granted { used, limit } => {
                    pb::hold_budget_response::Outcome::Granted(pb::BudgetGranted { used, limit })
                }
                HoldOutcome::Refused { used, limit } => {
                    pb::hold_budget_response::Outcome::Refused(pb::BudgetRefused { used, limit })
                }
            }),
        }),
        Ok(OpAnswer::Labels(sets)) => Answer::ReadLabels(pb::ReadLabelsResponse {
            entries: crate::service::key_labels(sets),
        }),
        Ok(OpAnswer::Share(admission)) => Answer::AdmitShare(pb::BatchShare {
            refused: match admission {
                ShareAdmission::Oversubscribed {
                    siblings_bps,
                    parent_bps,
                } => Some(pb::ShareRefused {
                    sibling_sum_bps: siblings_bps,
                    parent_bps,
                }),
                // Trust-control knows every parent on first admission.
                ShareAdmission::Admitted | ShareAdmission::UnknownParent => None,
            },
        }),
        Ok(OpAnswer::Done) => Answer::Done(pb::BatchDone {}),
    };
    pb::BatchAnswer {
        answer: Some(answer),
    }
}

/// An answer as the client reads it: `Ok` is the operation's answer,
/// `Err` the status its own RPC would have failed with.
pub fn answer_from_wire(answer: pb::BatchAnswer) -> Result<Result<OpAnswer, Status>, &'static str> {
    use pb::batch_answer::Answer;
    Ok(Ok(match answer.answer.ok_or("an answer is empty")? {
        Answer::Error(error) => return Ok(Err(Status::new(Code::from(error.code), error.message))),
        Answer::Revoked(revoked) => OpAnswer::Revoked(revoked),
        Answer::Fresh(fresh) => OpAnswer::Fresh(fresh),
        Answer::HoldBudget(hold) => OpAnswer::Hold(match hold.outcome {
            Some(pb::hold_budget_response::Outcome::Granted(g)) => HoldOutcome::Granted {
                used: g.used,
                limit: g.limit,
            },
            Some(pb::hold_budget_response::Outcome::Refused(r)) => HoldOutcome::Refused {
                used: r.used,
                limit: r.limit,
            },
            None => return Err("a hold's outcome is missing"),
        }),
        Answer::ReadLabels(read) => OpAnswer::Labels(crate::client::label_sets(read.entries)),
        Answer::AdmitShare(share) => OpAnswer::Share(match share.refused {
            None => ShareAdmission::Admitted,
            Some(refused) => ShareAdmission::Oversubscribed {
                siblings_bps: refused.sibling_sum_bps,
                parent_bps: refused.parent_bps,
            },
        }),
        Answer::Done(_) => OpAnswer::Done,
    }))
}
