//! Targets `node_control` and `kernel_link`: a sequence of `NodeControl`
//! (LoadWorld, Call, Delegate, Message, Revoke, ChangeFixture) or
//! `KernelLink` (Evaluate, HandOver, EvaluateTogether) requests (see [`crate::frames`]), each decoded from protobuf as
//! tonic decodes it and served by the node's own service implementation
//! over a `NodeHost` that has just loaded the world of
//! `fuzz/targets/world.toml` over an in-memory trust store. One input is one
//! session against a fresh host, so an input replays alone. `Shutdown` is
//! left out: it ends the serving loop by design and touches nothing else.
//!
//! Properties: nothing panics (a panic in any actor aborts the fuzzer, and
//! the replay test counts them); every refusal is a status whose message
//! names its cause, never `UNKNOWN`; a node's own refusal of a call,
//! delegation or revocation (sent in place of the answer) names its cause
//! alone and carries no OS text; every answer decodes through the
//! node's own wire conversions, and its signed values and JSON fields are
//! canonical (encoding the decoded value gives the same bytes); every
//! receipt verifies; every deny names its cause; reported labels are in
//! ascending order as documented.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prost::Message;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;
use tonic::{Code, Request, Response, Status};

use chio_arena::parse_scenario;
use chio_kernel::canonical::to_canonical_vec;
use chio_kernel::receipt::SignedReceipt;
use chio_kernel::verdict::Verdict;
use chio_kernel::CapabilityToken;
use chio_node::cluster::ClusterToken;
use chio_node::host::{HostConfig, NodeHost, TrustBackend};
use chio_node::service::{KernelLinkService, NodeControlService};
use chio_node::trust_stores::StoreDeadlines;
use chio_node::wire::command::fixtures_to_proto;
use chio_node::wire::outcome::call_outcome_from_proto;
use chio_node::{FixtureSet, World};
use chio_proto::node::v1 as pb;
use chio_proto::node::v1::kernel_link_server::KernelLink;
use chio_proto::node::v1::node_control_server::NodeControl;
use chio_trust::InMemoryTrustStore;

use crate::frames;
use crate::scenario::scenarios_dir;
use crate::Reach;

/// The scenario every node input is served against.
pub const WORLD_TOML: &str = include_str!("../world.toml");
/// The logical node the host plays.
pub const NODE: &str = "node-a";
/// The run id the fuzz world is loaded under, which every command names.
pub const RUN_ID: &str = "fuzz";
/// The world's clock start, Unix milliseconds (2026-06-15T14:00:00Z).
pub const START_MS: u64 = 1_781_532_000_000;
/// The number of `NodeControl` RPCs fuzzed; a selector is taken modulo it.
pub const CONTROL_RPCS: u8 = 6;
/// The number of `KernelLink` RPCs; a selector is taken modulo it.
pub const LINK_RPCS: u8 = 3;

/// The runtime and the world's `LoadWorld` request, built once.
struct Fixture {
    runtime: tokio::runtime::Runtime,
    load: pb::LoadWorldRequest,
}

/// The fuzz world as a node resolves it: keys, grants and placement.
pub fn node_world() -> World {
    let scenario =
        parse_scenario(WORLD_TOML, &scenarios_dir()).expect("the fuzz world scenario loads");
    let fixtures = FixtureSet::load(&scenario).expect("the fuzz world's fixtures load");
    World::resolve(&scenario, &fixtures).expect("the fuzz world resolves")
}

/// The `LoadWorld` request that loads the fuzz world onto [`NODE`].
pub fn load_world_request() -> pb::LoadWorldRequest {
    let scenario =
        parse_scenario(WORLD_TOML, &scenarios_dir()).expect("the fuzz world scenario loads");
    let fixtures = FixtureSet::load(&scenario).expect("the fuzz world's fixtures load");
    pb::LoadWorldRequest {
        node: NODE.into(),
        scenario: WORLD_TOML.as_bytes().to_vec(),
        fixtures: fixtures_to_proto(&fixtures),
        peers: [(NODE.to_string(), "http://127.0.0.1:1".to_string())]
            .into_iter()
            .collect(),
        run_id: RUN_ID.into(),
        redefinitions_json: String::new(),
        witness_key: String::new(),
    }
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| Fixture {
        runtime: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("the node targets' runtime builds"),
        load: load_world_request(),
    })
}

/// A fresh host over a fresh in-memory store, with the fuzz world loaded.
async fn fresh_host(load: &pb::LoadWorldRequest) -> NodeHost {
    let host = NodeHost::spawn(HostConfig {
        name: NODE.into(),
        backend: TrustBackend::Memory(Arc::new(InMemoryTrustStore::new())),
        cluster_token: ClusterToken::new("fuzz-cluster-token-0123456789")
            .expect("the fuzz cluster token is strong enough"),
        deadlines: StoreDeadlines::default(),
        link_deadline: Duration::from_secs(5),
    });
    let (stop, _) = watch::channel(false);
    let control = NodeControlService::new(host.clone(), stop);
    if let Err(status) = control.load_world(Request::new(load.clone())).await {
        panic!("the fuzz world does not load: {status}");
    }
    host
}

/// Runs one `NodeControl` input (see the module doc).
pub fn node_control(data: &[u8]) -> Reach {
    let fixture = fixture();
    fixture.runtime.block_on(async {
        let host = fresh_host(&fixture.load).await;
        let (stop, _stopped) = watch::channel(false);
        let service = NodeControlService::new(host, stop);
        let mut reach = Reach::Undecoded;
        for frame in frames::decode(data) {
            reach = reach.max(control_frame(&service, frame).await);
        }
        reach
    })
}

/// Runs one `KernelLink` input (see the module doc).
pub fn kernel_link(data: &[u8]) -> Reach {
    let fixture = fixture();
    fixture.runtime.block_on(async {
        let host = fresh_host(&fixture.load).await;
        let service = KernelLinkService::new(host);
        let mut reach = Reach::Undecoded;
        for frame in frames::decode(data) {
            reach = reach.max(link_frame(&service, frame).await);
        }
        reach
    })
}

async fn control_frame(service: &NodeControlService, frame: frames::Frame<'_>) -> Reach {
    match frame.selector % CONTROL_RPCS {
        0 => {
            let Ok(message) = pb::LoadWorldRequest::decode(frame.body) else {
                return Reach::Undecoded;
            };
            let sent = message.scenario.clone();
            checked(service.load_world(Request::new(message)).await, |loaded| {
                assert!(!loaded.scenario_id.is_empty(), "a loaded world has an id");
                assert!(!sent.is_empty(), "an empty scenario loaded");
                assert!(sorted(&loaded.kernels) && sorted(&loaded.agents));
                Reach::Accepted
            })
        }
        1 => {
            let Ok(message) = pb::CallRequest::decode(frame.body) else {
                return Reach::Undecoded;
            };
            checked(
                service.call(Request::new(message)).await,
                |answer| match answer.refusal {
                    Some(reason) => node_refusal(&reason, answer.outcome.is_none()),
                    None => call_outcome(answer.outcome),
                },
            )
        }
        2 => {
            let Ok(message) = pb::DelegateRequest::decode(frame.body) else {
                return Reach::Undecoded;
            };
            checked(service.delegate(Request::new(message)).await, |answer| {
                if let Some(reason) = &answer.refusal {
                    let alone = answer.token_json.is_empty() && answer.labels.is_empty();
                    return node_refusal(reason, alone);
                }
                canonical::<CapabilityToken>("token_json", &answer.token_json);
                assert!(sorted(&answer.labels), "delegation labels out of order");
                Reach::Accepted
            })
        }
        3 => {
            let Ok(message) = pb::MessageRequest::decode(frame.body) else {
                return Reach::Undecoded;
            };
            checked(service.message(Request::new(message)).await, |answer| {
                assert!(sorted(&answer.labels), "message labels out of order");
                Reach::Accepted
            })
        }
        5 => {
            let Ok(message) = pb::ChangeFixtureRequest::decode(frame.body) else {
                return Reach::Undecoded;
            };
            checked(service.change_fixture(Request::new(message)).await, |_| {
                Reach::Accepted
            })
        }
        _ => {
            let Ok(message) = pb::RevokeRequest::decode(frame.body) else {
                return Reach::Undecoded;
            };
            checked(
                service.revoke(Request::new(message)).await,
                |answer| match answer.refusal {
                    Some(reason) => node_refusal(&reason, true),
                    None => Reach::Accepted,
                },
            )
        }
    }
}

async fn link_frame(service: &KernelLinkService, frame: frames::Frame<'_>) -> Reach {
    match frame.selector % LINK_RPCS {
        0 => {
            let Ok(message) = pb::EvaluateRequest::decode(frame.body) else {
                return Reach::Undecoded;
            };
            checked(service.evaluate(Request::new(message)).await, |answer| {
                call_outcome(answer.outcome)
            })
        }
        1 => {
            let Ok(message) = pb::HandOverRequest::decode(frame.body) else {
                return Reach::Undecoded;
            };
            checked(service.hand_over(Request::new(message)).await, |_| {
                Reach::Accepted
            })
        }
        _ => {
            let Ok(message) = pb::EvaluateTogetherRequest::decode(frame.body) else {
                return Reach::Undecoded;
            };
            let sent = message.evaluations.len();
            checked(
                service.evaluate_together(Request::new(message)).await,
                |answer| {
                    assert_eq!(answer.outcomes.len(), sent, "one outcome per call");
                    // Every outcome is checked like a single call's; the
                    // group is accepted when any call was admitted.
                    answer
                        .outcomes
                        .into_iter()
                        .map(|outcome| call_outcome(Some(outcome)))
                        .fold(Reach::Refused, Ord::max)
                },
            )
        }
    }
}

/// Checks an answer with `accept`, or a refusal: a status naming its cause,
/// never `UNKNOWN`. A refusal of a request field that does not decode is
/// [`Reach::Undecoded`]; any other refusal is [`Reach::Refused`].
fn checked<T>(result: Result<Response<T>, Status>, accept: impl FnOnce(T) -> Reach) -> Reach {
    match result {
        Ok(response) => accept(response.into_inner()),
        Err(status) => {
            assert!(
                !status.message().is_empty(),
                "a refusal must name its cause"
            );
            assert_ne!(status.code(), Code::Unknown, "{}", status.message());
            let undecoded =
                status.code() == Code::InvalidArgument && status.message().contains("is malformed");
            if undecoded {
                Reach::Undecoded
            } else {
                Reach::Refused
            }
        }
    }
}

/// A node's own refusal of a step (the agent does not hold what it
/// presents, a peer or trust-control cannot be reached): it names its
/// cause, travels `alone` (never beside an answer), and carries no
/// transport text.
fn node_refusal(reason: &str, alone: bool) -> Reach {
    assert!(alone, "a refusal was sent beside an answer: {reason}");
    assert!(!reason.is_empty(), "a refusal must name its cause");
    assert!(
        !reason.contains("os error"),
        "a refusal carries OS text: {reason}"
    );
    Reach::Refused
}

/// A call's answer: typed fields that decode, a canonical receipt that
/// verifies, a canonical output, and a reason for every deny.
fn call_outcome(answer: Option<pb::CallOutcome>) -> Reach {
    let Some(answer) = answer else {
        panic!("a call was answered without an outcome");
    };
    canonical::<SignedReceipt>("outcome.receipt_json", &answer.receipt_json);
    if let Some(output) = &answer.output_json {
        canonical::<Value>("outcome.output_json", output);
    }
    let outcome = match call_outcome_from_proto("outcome", Some(answer)) {
        Ok(outcome) => outcome,
        Err(error) => panic!("a node answered an outcome that does not decode: {error}"),
    };
    if let Err(error) = outcome.receipt.verify() {
        panic!("a node answered a receipt that does not verify: {error}");
    }
    if outcome.verdict == Verdict::Allow {
        Reach::Accepted
    } else {
        let named = outcome.reason.as_deref().is_some_and(|r| !r.is_empty());
        assert!(named, "a deny must name its cause");
        Reach::Refused
    }
}

/// Decodes an answer field and checks it is the canonical encoding of
/// what it decodes to.
fn canonical<T: DeserializeOwned + Serialize>(field: &str, bytes: &[u8]) -> T {
    let value: T = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(error) => panic!("{field} of an answer does not decode: {error}"),
    };
    match to_canonical_vec(&value) {
        Ok(again) => assert!(again == bytes, "{field} of an answer is not canonical"),
        Err(error) => panic!("{field} of an answer has no canonical form: {error}"),
    }
    value
}

fn sorted(items: &[String]) -> bool {
    items.windows(2).all(|pair| pair[0] < pair[1])
}
