//! Target `trust_control`: a sequence of `TrustControl` requests (see
//! [`crate::frames`]), each decoded from protobuf as tonic decodes it and
//! served by `TrustControlService` over a fresh in-memory store, so one
//! input is one session of trust-control from an empty state.
//!
//! Properties: nothing panics; every refusal is a status whose message names
//! its cause, never `UNKNOWN` or `INTERNAL` (the in-memory store cannot fail
//! to store); afterwards the receipt log holds exactly the receipts of the
//! acknowledged appends, first body kept, with strictly ascending sequence
//! numbers and `CountReceipts` equal to what is listed; and every id whose
//! revocation was acknowledged reads back as revoked.

use std::collections::{BTreeMap, BTreeSet};

use prost::Message;
use tonic::{Code, Request, Response, Status};

use chio_proto::trust::v1 as pb;
use chio_proto::trust::v1::trust_control_server::TrustControl;
use chio_trust::service::TrustControlService;
use chio_trust::InMemoryTrustStore;

use crate::frames;
use crate::Reach;

/// The number of `TrustControl` RPCs; a frame's selector is taken modulo it.
pub const RPCS: u8 = 14;

/// The RPCs in selector order: a frame's selector modulo [`RPCS`] indexes it.
pub const RPC_NAMES: [&str; RPCS as usize] = [
    "AddIssuerKey",
    "ListIssuerKeys",
    "Revoke",
    "IsRevoked",
    "HoldBudget",
    "CommitBudget",
    "ReleaseBudget",
    "AdmitShare",
    "RecordRequest",
    "AppendReceipts",
    "ListReceipts",
    "CountReceipts",
    "ReadLabels",
    "JoinLabels",
];

/// The selector of the RPC named `rpc`, for seed generators; panics on a
/// name that is not in [`RPC_NAMES`], which only a seed could pass.
pub fn selector(rpc: &str) -> u8 {
    match RPC_NAMES.iter().position(|name| *name == rpc) {
        Some(index) => index as u8,
        None => panic!("no TrustControl RPC named {rpc}"),
    }
}

type Service = TrustControlService<InMemoryTrustStore>;

/// What one session acknowledged, to check the store against afterwards.
#[derive(Default)]
struct Acknowledged {
    receipts: BTreeMap<String, Vec<u8>>,
    revoked: BTreeSet<String>,
    answered: bool,
    decoded: bool,
}

/// Runs one input (see the module doc).
pub fn trust_control(data: &[u8]) -> Reach {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime builds");
    }
    RUNTIME.with(|runtime| runtime.block_on(session(data)))
}

async fn session(data: &[u8]) -> Reach {
    {
        let service = TrustControlService::new(InMemoryTrustStore::new());
        let mut seen = Acknowledged::default();
        for frame in frames::decode(data) {
            serve(&service, frame, &mut seen).await;
        }
        check_receipt_log(&service, &seen.receipts).await;
        for id in &seen.revoked {
            let answer = service
                .is_revoked(Request::new(pb::IsRevokedRequest { id: id.clone() }))
                .await;
            let revoked = answer.is_ok_and(|r| r.into_inner().revoked);
            assert!(revoked, "an acknowledged revocation does not read back");
        }
        match (seen.decoded, seen.answered) {
            (false, _) => Reach::Undecoded,
            (true, false) => Reach::Refused,
            (true, true) => Reach::Accepted,
        }
    }
}

/// Checks a refusal and reports whether the call was answered.
fn answered<T>(result: Result<Response<T>, Status>) -> Option<T> {
    match result {
        Ok(response) => Some(response.into_inner()),
        Err(status) => {
            assert!(
                !status.message().is_empty(),
                "a refusal must name its cause"
            );
            assert!(
                !matches!(status.code(), Code::Unknown | Code::Internal),
                "the in-memory store answered {:?}: {}",
                status.code(),
                status.message()
            );
            None
        }
    }
}

/// Decodes one frame as its RPC's request, as tonic would, and serves it.
async fn serve(service: &Service, frame: frames::Frame<'_>, seen: &mut Acknowledged) {
    macro_rules! call {
        ($message:ty, $method:ident) => {{
            let Ok(message) = <$message>::decode(frame.body) else {
                return;
            };
            seen.decoded = true;
            let reply = answered(service.$method(Request::new(message.clone())).await);
            seen.answered |= reply.is_some();
            (message, reply)
        }};
    }
    match frame.selector % RPCS {
        0 => {
            let _ = call!(pb::AddIssuerKeyRequest, add_issuer_key);
        }
        1 => {
            let _ = call!(pb::ListIssuerKeysRequest, list_issuer_keys);
        }
        2 => {
            let (message, reply) = call!(pb::RevokeRequest, revoke);
            if reply.is_some() {
                seen.revoked.insert(message.id);
            }
        }
        3 => {
            let _ = call!(pb::IsRevokedRequest, is_revoked);
        }
        4 => {
            let _ = call!(pb::HoldBudgetRequest, hold_budget);
        }
        5 => {
            let _ = call!(pb::CommitBudgetRequest, commit_budget);
        }
        6 => {
            let _ = call!(pb::ReleaseBudgetRequest, release_budget);
        }
        7 => {
            let _ = call!(pb::AdmitShareRequest, admit_share);
        }
        8 => {
            let _ = call!(pb::RecordRequestRequest, record_request);
        }
        9 => {
            let (message, reply) = call!(pb::AppendReceiptsRequest, append_receipts);
            if reply.is_some() {
                for receipt in message.receipts {
                    seen.receipts
                        .entry(receipt.receipt_id)
                        .or_insert(receipt.body);
                }
            }
        }
        10 => {
            let _ = call!(pb::ListReceiptsRequest, list_receipts);
        }
        11 => {
            let _ = call!(pb::CountReceiptsRequest, count_receipts);
        }
        12 => {
            let _ = call!(pb::ReadLabelsRequest, read_labels);
        }
        _ => {
            let _ = call!(pb::JoinLabelsRequest, join_labels);
        }
    }
}

/// Reads the whole receipt log page by page and checks it is exactly
/// `acknowledged` (id to body), in strictly ascending sequence.
async fn check_receipt_log(service: &Service, acknowledged: &BTreeMap<String, Vec<u8>>) {
    let mut listed = BTreeMap::new();
    let mut after_seq = 0;
    loop {
        let request = pb::ListReceiptsRequest {
            after_seq,
            limit: 1_000,
        };
        let page = match service.list_receipts(Request::new(request)).await {
            Ok(page) => page.into_inner(),
            Err(status) => panic!("listing the receipt log failed: {status}"),
        };
        if page.receipts.is_empty() {
            break;
        }
        for receipt in page.receipts {
            assert!(receipt.seq > after_seq, "receipt sequence not ascending");
            after_seq = receipt.seq;
            let twice = listed.insert(receipt.receipt_id, receipt.body).is_some();
            assert!(!twice, "a receipt is listed twice");
        }
    }
    let count = match service
        .count_receipts(Request::new(pb::CountReceiptsRequest {}))
        .await
    {
        Ok(count) => count.into_inner().count,
        Err(status) => panic!("counting the receipt log failed: {status}"),
    };
    assert_eq!(count, listed.len() as u64, "count disagrees with the log");
    assert!(
        &listed == acknowledged,
        "the log is not exactly the acknowledged receipts"
    );
}
