//! Fuzz targets for every `TrustControl` request the service accepts.
//!
//! - `structured_requests_keep_both_stores_consistent`: arbitrary sequences
//!   of well-formed prost messages with hostile field values (empty, control
//!   characters, ids at and past the length limit, invalid hex, amounts and
//!   basis points past their bounds, batches past their limits) are sent to
//!   the service implementation over the SQLite store and over the in-memory
//!   store. Every call must answer a response or a `Status`, never panic;
//!   both stores must answer identically; and afterwards the receipt log must
//!   hold exactly the acknowledged receipts, in strictly ascending sequence.
//! - `raw_bodies_over_the_wire_never_crash_the_service`: arbitrary bytes and
//!   byte mutations of valid encoded requests are posted to every RPC path
//!   of a served instance on loopback, with the right bearer token. Every
//!   answer must be a `Status` or a response that decodes as the RPC's
//!   response type, no handler may panic, and the service must keep
//!   answering.
//! - `oversized_messages_are_refused_and_the_service_survives`: a request
//!   past the gRPC message limit is refused with a status that does not echo
//!   it, and the next call is answered.
//!
//! The case count comes from `CHIO_FUZZ_CASES` (default 64, what CI runs); a
//! long run is `CHIO_FUZZ_CASES=20000 cargo test --release -p chio-trust
//! --test it -- fuzz_grpc::` (see docs/fuzzing.md).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use bytes::{Buf, BufMut};
use chio_proto::trust::v1 as pb;
use chio_proto::trust::v1::trust_control_server::TrustControl;
use chio_trust::model::{MAX_AMOUNT, MAX_ID_BYTES, MAX_KEYS_PER_CALL, MAX_RECEIPTS_PER_APPEND};
use chio_trust::service::TrustControlService;
use chio_trust::{BearerToken, InMemoryTrustStore, SqliteTrustStore, TrustClient};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};

/// The token of the served instance.
const TOKEN: &str = "fuzz-token-0123456789abcdef";

fn cases() -> u32 {
    std::env::var("CHIO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn config() -> Config {
    Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Panics seen on this module's threads since the hook was installed; a
/// panicking handler inside the server would otherwise only reset its
/// stream. The test binary runs other modules' tests in the same process,
/// and their panics are not counted (see [`on_this_modules_thread`]).
static PANICS: AtomicUsize = AtomicUsize::new(0);

/// The name of every thread of this module's runtimes (workers and blocking
/// pool), the threads the served handlers run on.
const RUNTIME_THREADS: &str = "trust-fuzz-runtime";

/// Whether the running thread is one of this module's: a thread of its
/// runtimes, or the thread of one of its tests (the test harness names each
/// test's thread after the test's path, which starts with this module's).
fn on_this_modules_thread() -> bool {
    let path = module_path!();
    let module = path.split_once("::").map_or(path, |(_, inner)| inner);
    std::thread::current().name().is_some_and(|name| {
        name == RUNTIME_THREADS
            || name
                .strip_prefix(module)
                .is_some_and(|rest| rest.starts_with("::"))
    })
}

fn count_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if on_this_modules_thread() {
                PANICS.fetch_add(1, Ordering::SeqCst);
            }
            default(info);
        }));
    });
}

// ---------------------------------------------------------------- strategies

/// Ids, keys and labels: a small colliding alphabet, arbitrary characters
/// (controls included), and lengths around `MAX_ID_BYTES`.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["a", "b", "h1", "k", "cap-1", "internal"])
            .prop_map(str::to_owned),
        1 => Just(String::new()),
        2 => prop::collection::vec(any::<char>(), 0..24)
            .prop_map(|chars| chars.into_iter().collect()),
        1 => (MAX_ID_BYTES - 1..=MAX_ID_BYTES + 1).prop_map(|n| "x".repeat(n)),
        1 => Just("é".repeat(MAX_ID_BYTES / 2 + 1)),
        1 => Just("nul\0inside".to_owned()),
    ]
}

/// Valid Ed25519 public keys (from RFC 8032 test vectors), an uppercase
/// spelling, random hex of the right length, wrong lengths and non-hex.
fn key_hex() -> impl Strategy<Value = String> {
    const VALID: [&str; 2] = [
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
    ];
    prop_oneof![
        2 => prop::sample::select(VALID.to_vec()).prop_map(str::to_owned),
        1 => Just(VALID[0].to_uppercase()),
        2 => "[0-9a-f]{64}",
        1 => "[0-9a-fA-F]{0,80}",
        1 => "[g-z]{64}",
        1 => text(),
    ]
}

fn amount() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0..20u64,
        1 => any::<u64>(),
        1 => prop::sample::select(vec![MAX_AMOUNT - 1, MAX_AMOUNT, MAX_AMOUNT + 1, u64::MAX]),
    ]
}

fn bps() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0..=10_000u32,
        1 => any::<u32>(),
        1 => Just(10_001u32),
    ]
}

fn receipts() -> impl Strategy<Value = Vec<pb::Receipt>> {
    let one = (text(), prop::collection::vec(any::<u8>(), 0..48))
        .prop_map(|(receipt_id, body)| pb::Receipt { receipt_id, body });
    prop_oneof![
        8 => prop::collection::vec(one, 0..6),
        // Batches at and one past the per-append limit.
        1 => prop::sample::select(vec![MAX_RECEIPTS_PER_APPEND, MAX_RECEIPTS_PER_APPEND + 1])
            .prop_map(|n| (0..n)
                .map(|i| pb::Receipt { receipt_id: format!("bulk-{i}"), body: vec![b'{', b'}'] })
                .collect()),
    ]
}

fn keys() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        8 => prop::collection::vec(text(), 0..5),
        1 => Just((0..=MAX_KEYS_PER_CALL).map(|i| format!("key-{i}")).collect()),
    ]
}

/// One request of any of the 13 RPCs.
#[derive(Debug, Clone)]
enum Op {
    AddIssuerKey(pb::AddIssuerKeyRequest),
    ListIssuerKeys,
    Revoke(pb::RevokeRequest),
    IsRevoked(pb::IsRevokedRequest),
    HoldBudget(pb::HoldBudgetRequest),
    CommitBudget(pb::CommitBudgetRequest),
    ReleaseBudget(pb::ReleaseBudgetRequest),
    AdmitShare(pb::AdmitShareRequest),
    AppendReceipts(pb::AppendReceiptsRequest),
    ListReceipts(pb::ListReceiptsRequest),
    CountReceipts,
    ReadLabels(pb::ReadLabelsRequest),
    JoinLabels(pb::JoinLabelsRequest),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        key_hex().prop_map(|public_key_hex| Op::AddIssuerKey(pb::AddIssuerKeyRequest {
            public_key_hex
        })),
        Just(Op::ListIssuerKeys),
        (text(), any::<u64>()).prop_map(|(id, at_ms)| Op::Revoke(pb::RevokeRequest { id, at_ms })),
        text().prop_map(|id| Op::IsRevoked(pb::IsRevokedRequest { id })),
        (text(), text(), amount(), amount()).prop_map(|(hold_id, budget_key, amount, limit)| {
            Op::HoldBudget(pb::HoldBudgetRequest {
                hold_id,
                budget_key,
                amount,
                limit,
            })
        }),
        text().prop_map(|hold_id| Op::CommitBudget(pb::CommitBudgetRequest { hold_id })),
        text().prop_map(|hold_id| Op::ReleaseBudget(pb::ReleaseBudgetRequest { hold_id })),
        (text(), text(), bps(), bps()).prop_map(|(parent_id, child_id, child_bps, parent_bps)| {
            Op::AdmitShare(pb::AdmitShareRequest {
                parent_id,
                child_id,
                child_bps,
                parent_bps,
            })
        }),
        receipts().prop_map(|receipts| Op::AppendReceipts(pb::AppendReceiptsRequest { receipts })),
        (prop_oneof![0..8u64, any::<u64>()], any::<u32>()).prop_map(|(after_seq, limit)| {
            Op::ListReceipts(pb::ListReceiptsRequest { after_seq, limit })
        }),
        Just(Op::CountReceipts),
        keys().prop_map(|keys| Op::ReadLabels(pb::ReadLabelsRequest { keys })),
        (keys(), text())
            .prop_map(|(keys, label)| Op::JoinLabels(pb::JoinLabelsRequest { keys, label })),
    ]
}

// ------------------------------------------------------- in-process target

/// A call's answer reduced to something two stores can be compared on: the
/// encoded response, or the status code.
type Answer = Result<Vec<u8>, Code>;

fn answer<T: Message>(result: Result<tonic::Response<T>, Status>) -> Answer {
    match result {
        Ok(response) => Ok(response.into_inner().encode_to_vec()),
        Err(status) => {
            assert!(
                !status.message().is_empty(),
                "a refusal must name its cause"
            );
            Err(status.code())
        }
    }
}

async fn call<S: chio_trust::TrustStore>(service: &TrustControlService<S>, op: &Op) -> Answer {
    match op.clone() {
        Op::AddIssuerKey(m) => answer(service.add_issuer_key(Request::new(m)).await),
        Op::ListIssuerKeys => answer(
            service
                .list_issuer_keys(Request::new(pb::ListIssuerKeysRequest {}))
                .await,
        ),
        Op::Revoke(m) => answer(service.revoke(Request::new(m)).await),
        Op::IsRevoked(m) => answer(service.is_revoked(Request::new(m)).await),
        Op::HoldBudget(m) => answer(service.hold_budget(Request::new(m)).await),
        Op::CommitBudget(m) => answer(service.commit_budget(Request::new(m)).await),
        Op::ReleaseBudget(m) => answer(service.release_budget(Request::new(m)).await),
        Op::AdmitShare(m) => answer(service.admit_share(Request::new(m)).await),
        Op::AppendReceipts(m) => answer(service.append_receipts(Request::new(m)).await),
        Op::ListReceipts(m) => answer(service.list_receipts(Request::new(m)).await),
        Op::CountReceipts => answer(
            service
                .count_receipts(Request::new(pb::CountReceiptsRequest {}))
                .await,
        ),
        Op::ReadLabels(m) => answer(service.read_labels(Request::new(m)).await),
        Op::JoinLabels(m) => answer(service.join_labels(Request::new(m)).await),
    }
}

/// Reads the whole receipt log page by page and checks it is exactly
/// `acknowledged` (id to body), with strictly ascending sequence numbers.
async fn check_receipt_log<S: chio_trust::TrustStore>(
    service: &TrustControlService<S>,
    acknowledged: &BTreeMap<String, Vec<u8>>,
) -> Result<(), TestCaseError> {
    let mut listed = BTreeMap::new();
    let mut after_seq = 0;
    loop {
        let page = service
            .list_receipts(Request::new(pb::ListReceiptsRequest {
                after_seq,
                limit: 1_000,
            }))
            .await
            .map_err(|status| TestCaseError::fail(format!("list failed: {status}")))?
            .into_inner();
        if page.receipts.is_empty() {
            break;
        }
        for receipt in page.receipts {
            prop_assert!(receipt.seq > after_seq, "sequence not ascending");
            after_seq = receipt.seq;
            prop_assert!(
                listed
                    .insert(receipt.receipt_id.clone(), receipt.body)
                    .is_none(),
                "receipt {:?} listed twice",
                receipt.receipt_id
            );
        }
    }
    let count = service
        .count_receipts(Request::new(pb::CountReceiptsRequest {}))
        .await
        .map_err(|status| TestCaseError::fail(format!("count failed: {status}")))?
        .into_inner()
        .count;
    prop_assert_eq!(count, listed.len() as u64, "count disagrees with the log");
    prop_assert!(
        &listed == acknowledged,
        "the log is not exactly the acknowledged receipts"
    );
    Ok(())
}

// Proves no request sequence panics, both stores answer alike, and the log holds exactly what was acknowledged.
#[test]
fn structured_requests_keep_both_stores_consistent() {
    count_panics();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .thread_name(RUNTIME_THREADS)
        .enable_all()
        .build()
        .unwrap();
    let mut runner = TestRunner::new(config());
    let outcome = runner.run(&prop::collection::vec(op(), 1..16), |ops| {
        runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let sqlite = TrustControlService::new(
                SqliteTrustStore::open(dir.path().join("trust.db")).unwrap(),
            );
            let memory = TrustControlService::new(InMemoryTrustStore::new());
            let mut acknowledged = BTreeMap::new();
            for op in &ops {
                let from_sqlite = call(&sqlite, op).await;
                let from_memory = call(&memory, op).await;
                prop_assert_eq!(
                    &from_sqlite,
                    &from_memory,
                    "the stores disagree on {:?}",
                    op
                );
                if let (Op::AppendReceipts(m), Ok(_)) = (op, &from_sqlite) {
                    for receipt in &m.receipts {
                        acknowledged
                            .entry(receipt.receipt_id.clone())
                            .or_insert_with(|| receipt.body.clone());
                    }
                }
            }
            check_receipt_log(&sqlite, &acknowledged).await?;
            check_receipt_log(&memory, &acknowledged).await?;
            Ok(())
        })
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a call panicked");
}

// ------------------------------------------------------------ wire target

/// Posts and reads message bodies as raw bytes, so the service's own decoder
/// sees whatever the fuzzer made.
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;

#[derive(Debug)]
struct RawEncoder;

#[derive(Debug)]
struct RawDecoder;

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let mut bytes = vec![0; src.remaining()];
        src.copy_to_slice(&mut bytes);
        Ok(Some(bytes))
    }
}

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

/// Each RPC's path, a valid encoded request to mutate, and a check that a
/// response body decodes as the RPC's response type.
struct Rpc {
    path: &'static str,
    valid: fn() -> Vec<u8>,
    decodes: fn(&[u8]) -> bool,
}

macro_rules! rpc {
    ($name:literal, $response:ty, $valid:expr) => {
        Rpc {
            path: concat!("/chio.trust.v1.TrustControl/", $name),
            valid: || $valid.encode_to_vec(),
            decodes: |bytes| <$response>::decode(bytes).is_ok(),
        }
    };
}

fn rpcs() -> Vec<Rpc> {
    vec![
        rpc!(
            "AddIssuerKey",
            pb::AddIssuerKeyResponse,
            pb::AddIssuerKeyRequest {
                public_key_hex: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
                    .into()
            }
        ),
        rpc!(
            "ListIssuerKeys",
            pb::ListIssuerKeysResponse,
            pb::ListIssuerKeysRequest {}
        ),
        rpc!(
            "Revoke",
            pb::RevokeResponse,
            pb::RevokeRequest {
                id: "cap-1".into(),
                at_ms: 7
            }
        ),
        rpc!(
            "IsRevoked",
            pb::IsRevokedResponse,
            pb::IsRevokedRequest { id: "cap-1".into() }
        ),
        rpc!(
            "HoldBudget",
            pb::HoldBudgetResponse,
            pb::HoldBudgetRequest {
                hold_id: "h1".into(),
                budget_key: "k".into(),
                amount: 3,
                limit: 10
            }
        ),
        rpc!(
            "CommitBudget",
            pb::CommitBudgetResponse,
            pb::CommitBudgetRequest {
                hold_id: "h1".into()
            }
        ),
        rpc!(
            "ReleaseBudget",
            pb::ReleaseBudgetResponse,
            pb::ReleaseBudgetRequest {
                hold_id: "h1".into()
            }
        ),
        rpc!(
            "AdmitShare",
            pb::AdmitShareResponse,
            pb::AdmitShareRequest {
                parent_id: "p".into(),
                child_id: "c".into(),
                child_bps: 100,
                parent_bps: 1_000
            }
        ),
        rpc!(
            "AppendReceipts",
            pb::AppendReceiptsResponse,
            pb::AppendReceiptsRequest {
                receipts: vec![pb::Receipt {
                    receipt_id: "r1".into(),
                    body: br#"{"a":1}"#.to_vec()
                }]
            }
        ),
        rpc!(
            "ListReceipts",
            pb::ListReceiptsResponse,
            pb::ListReceiptsRequest {
                after_seq: 0,
                limit: 10
            }
        ),
        rpc!(
            "CountReceipts",
            pb::CountReceiptsResponse,
            pb::CountReceiptsRequest {}
        ),
        rpc!(
            "ReadLabels",
            pb::ReadLabelsResponse,
            pb::ReadLabelsRequest {
                keys: vec!["s".into()]
            }
        ),
        rpc!(
            "JoinLabels",
            pb::JoinLabelsResponse,
            pb::JoinLabelsRequest {
                keys: vec!["s".into()],
                label: "internal".into()
            }
        ),
    ]
}

/// A served instance over a SQLite store in `dir`, and a channel to it.
async fn served(dir: &std::path::Path) -> (Channel, String) {
    let store = SqliteTrustStore::open(dir.join("trust.db")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let token = BearerToken::new(TOKEN).unwrap();
    tokio::spawn(chio_trust::serve(
        store,
        token,
        listener,
        std::future::pending(),
    ));
    let channel = tonic::transport::Endpoint::from_shared(url.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    (channel, url)
}

/// Posts `body` to `path` with the right token.
async fn post(channel: &Channel, path: &'static str, body: Vec<u8>) -> Result<Vec<u8>, Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|error| Status::unavailable(error.to_string()))?;
    let mut request = Request::new(body);
    request.metadata_mut().insert(
        "authorization",
        MetadataValue::try_from(format!("Bearer {TOKEN}")).unwrap(),
    );
    grpc.unary(request, PathAndQuery::from_static(path), RawCodec)
        .await
        .map(tonic::Response::into_inner)
}

/// A body for one RPC: arbitrary bytes, or its valid request with bytes
/// flipped, truncated or appended.
/// Which RPC, random bytes, byte flips (position, xor) and a truncation point.
type Body = (usize, Vec<u8>, Vec<(usize, u8)>, Option<usize>);

fn body() -> impl Strategy<Value = Body> {
    (
        0..13usize,
        prop_oneof![
            1 => prop::collection::vec(any::<u8>(), 0..256),
            1 => Just(Vec::new()),
        ],
        prop::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        prop::option::of(any::<usize>()),
    )
}

// Proves arbitrary and mutated bodies on every RPC path get a status or a decodable answer, and never a panic.
#[test]
fn raw_bodies_over_the_wire_never_crash_the_service() {
    count_panics();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(RUNTIME_THREADS)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (channel, url) = runtime.block_on(served(dir.path()));
    let rpcs = rpcs();
    let mut runner = TestRunner::new(config());
    let outcome = runner.run(
        &(body(), any::<bool>()),
        |((index, random, flips, truncate), use_random)| {
            let rpc = &rpcs[index];
            let mut bytes = if use_random { random } else { (rpc.valid)() };
            if !bytes.is_empty() {
                for (at, xor) in &flips {
                    let at = at % bytes.len();
                    bytes[at] ^= xor;
                }
                if let Some(cut) = truncate {
                    bytes.truncate(cut % (bytes.len() + 1));
                }
            }
            let result = runtime.block_on(post(&channel, rpc.path, bytes.clone()));
            match result {
                Ok(response) => prop_assert!(
                    (rpc.decodes)(&response),
                    "{} answered a body that is not its response type",
                    rpc.path
                ),
                Err(status) => {
                    prop_assert!(
                        !matches!(
                            status.code(),
                            Code::Unknown | Code::Unavailable | Code::Unauthenticated
                        ),
                        "{} with {:?} failed like a crash: {:?}",
                        rpc.path,
                        bytes,
                        status
                    );
                    prop_assert!(
                        !status.message().is_empty(),
                        "a refusal must name its cause"
                    );
                }
            }
            prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a handler panicked");
            Ok(())
        },
    );
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    // The service still answers, through the typed client as a node would.
    runtime.block_on(async {
        let token = BearerToken::new(TOKEN).unwrap();
        let client = TrustClient::connect(&url, &token, Default::default())
            .await
            .unwrap();
        use chio_trust::TrustStore;
        client.count_receipts().await.unwrap();
    });
}

// Proves a request past the gRPC message limit is refused without echo, and the service keeps serving.
#[test]
fn oversized_messages_are_refused_and_the_service_survives() {
    count_panics();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(RUNTIME_THREADS)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (channel, _url) = runtime.block_on(served(dir.path()));
    let marker = "oversized-marker-";
    let huge = pb::AppendReceiptsRequest {
        receipts: vec![pb::Receipt {
            receipt_id: "big".into(),
            body: marker.repeat(5 * 1024 * 1024 / marker.len()).into_bytes(),
        }],
    }
    .encode_to_vec();
    let big_id = pb::RevokeRequest {
        id: "y".repeat(8 * 1024 * 1024),
        at_ms: 1,
    }
    .encode_to_vec();
    for (path, body) in [
        ("/chio.trust.v1.TrustControl/AppendReceipts", huge),
        ("/chio.trust.v1.TrustControl/Revoke", big_id),
    ] {
        let status = runtime
            .block_on(post(&channel, path, body))
            .expect_err("an oversized message must be refused");
        assert!(
            matches!(status.code(), Code::OutOfRange | Code::ResourceExhausted),
            "{path}: {status:?}"
        );
        assert!(
            status.message().len() < 1_024 && !status.message().contains(marker),
            "{path}: the refusal echoes the message"
        );
    }
    // An id just past the store limit is refused by the store, naming the field.
    let long_id = pb::RevokeRequest {
        id: "z".repeat(MAX_ID_BYTES + 1),
        at_ms: 1,
    }
    .encode_to_vec();
    let status = runtime
        .block_on(post(
            &channel,
            "/chio.trust.v1.TrustControl/Revoke",
            long_id,
        ))
        .expect_err("an id past the limit must be refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(!status.message().contains(&"z".repeat(64)), "{status:?}");
    // The service still answers, and nothing was appended.
    let count = runtime
        .block_on(post(
            &channel,
            "/chio.trust.v1.TrustControl/CountReceipts",
            Vec::new(),
        ))
        .expect("the service keeps serving");
    assert_eq!(
        pb::CountReceiptsResponse::decode(&count[..]).unwrap().count,
        0
    );
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a handler panicked");
}

// Proves a revocation time past i64::MAX is refused by both stores alike (regression: the in-memory store accepted it).
#[test]
fn regression_revoke_time_past_the_sqlite_range_is_refused_by_both_stores() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let sqlite =
            TrustControlService::new(SqliteTrustStore::open(dir.path().join("trust.db")).unwrap());
        let memory = TrustControlService::new(InMemoryTrustStore::new());
        let op = Op::Revoke(pb::RevokeRequest {
            id: "a".into(),
            at_ms: MAX_AMOUNT + 1,
        });
        assert_eq!(call(&sqlite, &op).await, Err(Code::InvalidArgument));
        assert_eq!(call(&memory, &op).await, Err(Code::InvalidArgument));
    });
}
