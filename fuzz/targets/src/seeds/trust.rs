//! Seeds of the `trust_control` target: one session per area of the
//! service (issuer keys, revocations, budget holds, sibling shares, request
//! records, the receipt log, labels), each with the conflicts and repeats
//! the store must answer consistently, and a session of values at and past
//! the request limits.

use prost::Message;

use chio_proto::trust::v1 as pb;
use chio_trust::model::{MAX_ID_BYTES, MAX_KEYS_PER_CALL};

use super::{named, Seed};
use crate::frames;
use crate::trust::selector;
use crate::world::token_world;

/// One framed request.
type Frame = (u8, Vec<u8>);

fn frame(rpc: &str, message: impl Message) -> Frame {
    (selector(rpc), message.encode_to_vec())
}

fn revoke(id: &str, at_ms: u64) -> Frame {
    let id = id.to_string();
    frame("Revoke", pb::RevokeRequest { id, at_ms })
}

fn hold(hold_id: &str, budget_key: &str, amount: u64, limit: u64) -> Frame {
    let (hold_id, budget_key) = (hold_id.to_string(), budget_key.to_string());
    let request = pb::HoldBudgetRequest {
        hold_id,
        budget_key,
        amount,
        limit,
    };
    frame("HoldBudget", request)
}

fn share(child_id: &str, child_bps: u32) -> Frame {
    let request = pb::AdmitShareRequest {
        parent_id: "parent".into(),
        child_id: child_id.into(),
        child_bps,
        parent_bps: 10_000,
    };
    frame("AdmitShare", request)
}

fn append(receipts: &[(&str, &str)]) -> Frame {
    let receipts = receipts
        .iter()
        .map(|(id, body)| pb::Receipt {
            receipt_id: id.to_string(),
            body: body.as_bytes().to_vec(),
        })
        .collect();
    frame("AppendReceipts", pb::AppendReceiptsRequest { receipts })
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The `trust_control` seeds.
pub fn trust_seeds() -> Vec<Seed> {
    let mut sessions = issuer_and_revocation_sessions();
    sessions.extend(budget_share_and_request_sessions());
    sessions.extend(log_and_limit_sessions());
    sessions
        .into_iter()
        .map(|(name, frames)| named(name, frames::encode(&frames)))
        .collect()
}

/// Sessions of the issuer keys (one added twice, in two cases) and of
/// revocations (earlier, later and at the last instant).
fn issuer_and_revocation_sessions() -> Vec<(&'static str, Vec<Frame>)> {
    let key = token_world().issuer_hex.clone();
    let upper = key.to_uppercase();
    vec![
        (
            "issuers",
            vec![
                frame(
                    "AddIssuerKey",
                    pb::AddIssuerKeyRequest {
                        public_key_hex: key,
                    },
                ),
                frame(
                    "AddIssuerKey",
                    pb::AddIssuerKeyRequest {
                        public_key_hex: upper,
                    },
                ),
                frame("ListIssuerKeys", pb::ListIssuerKeysRequest {}),
            ],
        ),
        (
            "revocations",
            vec![
                revoke("cap-1", 5),
                revoke("cap-1", 3),
                revoke("cap-2", u64::MAX),
                frame("IsRevoked", pb::IsRevokedRequest { id: "cap-1".into() }),
            ],
        ),
    ]
}

/// Sessions of budget holds (past the limit, committed, released, released
/// unknown), sibling shares past their parent, and a request id recorded
/// twice.
fn budget_share_and_request_sessions() -> Vec<(&'static str, Vec<Frame>)> {
    vec![
        (
            "budgets",
            vec![
                hold("h1", "k", 3, 5),
                hold("h2", "k", 3, 5),
                frame(
                    "CommitBudget",
                    pb::CommitBudgetRequest {
                        hold_id: "h1".into(),
                    },
                ),
                frame(
                    "ReleaseBudget",
                    pb::ReleaseBudgetRequest {
                        hold_id: "h1".into(),
                    },
                ),
                hold("h1", "k", 3, 5),
                frame(
                    "ReleaseBudget",
                    pb::ReleaseBudgetRequest {
                        hold_id: "none".into(),
                    },
                ),
            ],
        ),
        (
            "shares",
            vec![share("c1", 6000), share("c2", 5000), share("c3", 10_001)],
        ),
        (
            "requests",
            vec![
                frame(
                    "RecordRequest",
                    pb::RecordRequestRequest {
                        request_key: "run/rq-1".into(),
                    },
                ),
                frame(
                    "RecordRequest",
                    pb::RecordRequestRequest {
                        request_key: "run/rq-1".into(),
                    },
                ),
            ],
        ),
    ]
}

/// Sessions of the receipt log, labels, and values past the limits.
fn log_and_limit_sessions() -> Vec<(&'static str, Vec<Frame>)> {
    let long = "x".repeat(MAX_ID_BYTES + 1);
    let many: Vec<String> = (0..=MAX_KEYS_PER_CALL).map(|i| format!("k{i}")).collect();
    vec![
        (
            "receipts",
            vec![
                append(&[("r1", "{}"), ("r2", "{\"a\":1}")]),
                append(&[("r1", "{}"), ("r3", "[]")]),
                append(&[("r2", "changed")]),
                frame(
                    "ListReceipts",
                    pb::ListReceiptsRequest {
                        after_seq: 1,
                        limit: 1,
                    },
                ),
                frame("CountReceipts", pb::CountReceiptsRequest {}),
            ],
        ),
        (
            "labels",
            vec![
                frame(
                    "JoinLabels",
                    pb::JoinLabelsRequest {
                        keys: strings(&["session/a", "principal/a"]),
                        label: "confidential".into(),
                    },
                ),
                frame(
                    "ReadLabels",
                    pb::ReadLabelsRequest {
                        keys: strings(&["session/a", "nobody"]),
                    },
                ),
            ],
        ),
        (
            "limits",
            vec![
                revoke(&long, 1),
                hold("h", &long, u64::MAX, 1),
                frame("ReadLabels", pb::ReadLabelsRequest { keys: many }),
                revoke("nul\0inside", 1),
                frame("IsRevoked", pb::IsRevokedRequest { id: "cap-9".into() }),
            ],
        ),
    ]
}
