//! Fuzz target for every request a node accepts: `NodeControl` (LoadWorld,
//! Call, Delegate, Revoke, Message, ChangeFixture) and `KernelLink`
//! (Evaluate, HandOver, EvaluateTogether), sent to a
//! real node over loopback after it loaded a real world, with arbitrary
//! bytes and byte-level mutations of valid commands (a command's protobuf
//! bytes; bytes that do not decode as the command go into its JSON field). A case passes when the
//! node answers (a response or a `Status`) and still serves a valid call
//! afterwards; a transport failure means the node died. The case count comes
//! from `CHIO_FUZZ_CASES` (default 48, what CI runs); long runs are in
//! docs/fuzzing.md. Shutdown is not fuzzed: it ends the node by design.

use crate::util;

use std::sync::OnceLock;

use chio_arena::load_scenario;
use chio_node::wire::command::{call_request, fixtures_to_proto};
use chio_node::{CallCommand, FixtureSet};
use chio_proto::node::v1 as pb;
use chio_proto::node::v1::kernel_link_client::KernelLinkClient;
use chio_proto::node::v1::node_control_client::NodeControlClient;
use proptest::prelude::*;
use proptest::test_runner::Config;
use prost::Message;
use serde_json::json;
use util::{authorized, start};

fn cases() -> u32 {
    std::env::var("CHIO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

/// One runtime and one node for the whole target.
struct Harness {
    runtime: tokio::runtime::Runtime,
    url: String,
    _state: tempfile::TempDir,
}

fn repo(relative: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (url, state) = runtime.block_on(async {
            let (url, state) = start().await;
            load_world(&url).await;
            (url, state)
        });
        Harness {
            runtime,
            url,
            _state: state,
        }
    })
}

/// Loads the walking skeleton onto the node at `url`.
/// The run the fuzzed node's world is loaded under, which every command names.
const RUN_ID: &str = "fuzz";

async fn load_world(url: &str) {
    let file = repo("scenarios/walking_skeleton.toml");
    let scenario = load_scenario(&file).unwrap();
    let fixtures = FixtureSet::load(&scenario).unwrap();
    let mut control = NodeControlClient::connect(url.to_string()).await.unwrap();
    control
        .load_world(authorized(pb::LoadWorldRequest {
            node: "node-a".into(),
            scenario: std::fs::read(&file).unwrap(),
            fixtures: fixtures_to_proto(&fixtures),
            peers: [("node-a".to_string(), url.to_string())]
                .into_iter()
                .collect(),
            run_id: RUN_ID.into(),
            redefinitions_json: String::new(),
            witness_key: String::new(),
        }))
        .await
        .expect("the node loads the walking skeleton");
}

/// Whether `which` selects `LoadWorld`, which replaces (and, when refused,
/// drops) the hosted world.
fn reloads(which: u8) -> bool {
    which % 9 == 8
}

fn valid_call(request_id: &str) -> pb::CallRequest {
    let mut request = call_request(&CallCommand {
        request_id: request_id.into(),
        agent: "solo".into(),
        capability_id: "solo-read".into(),
        captured: None,
        server: "workspace".into(),
        tool: "read_file".into(),
        arguments: json!({"path": "/workspace/notes.txt"}),
        sources: Vec::new(),
        now_ms: 1767600000000,
        sealed: Vec::new(),
        issued_at_ms: 1767600000000,
    })
    .unwrap();
    request.run_id = RUN_ID.into();
    request
}

fn mutate(mut bytes: Vec<u8>, edits: &[(usize, u8)]) -> Vec<u8> {
    for (index, value) in edits {
        if !bytes.is_empty() {
            let i = index % bytes.len();
            bytes[i] = *value;
        }
    }
    bytes
}

/// Sends one fuzzed request; an `Err` here is a transport failure.
async fn send(url: &str, which: u8, body: Vec<u8>, text: String) -> Result<(), String> {
    let mut control = NodeControlClient::connect(url.to_string())
        .await
        .map_err(|e| e.to_string())?;
    let mut link = KernelLinkClient::connect(url.to_string())
        .await
        .map_err(|e| e.to_string())?;
    let answered = match which % 9 {
        0 => {
            let mut request = pb::CallRequest::decode(body.as_slice()).unwrap_or(pb::CallRequest {
                arguments_json: body,
                ..pb::CallRequest::default()
            });
            request.run_id = RUN_ID.into();
            control.call(authorized(request)).await.map(|_| ())
        }
        1 => {
            let mut request = pb::DelegateRequest::decode(body.as_slice()).unwrap_or_default();
            request.run_id = RUN_ID.into();
            control.delegate(authorized(request)).await.map(|_| ())
        }
        2 => control
            .revoke(authorized(pb::RevokeRequest {
                target: text,
                at_ms: body.len() as u64,
                run_id: RUN_ID.into(),
            }))
            .await
            .map(|_| ()),
        3 => link
            .evaluate(authorized(pb::EvaluateRequest {
                kernel_id: text,
                request_json: body,
                now_ms: 1,
                run_id: RUN_ID.into(),
            }))
            .await
            .map(|_| ()),
        4 => link
            .hand_over(authorized(pb::HandOverRequest {
                agent_id: text,
                token_json: body,
                run_id: RUN_ID.into(),
            }))
            .await
            .map(|_| ()),
        5 => {
            let mut request = pb::MessageRequest::decode(body.as_slice()).unwrap_or_default();
            request.run_id = RUN_ID.into();
            control.message(authorized(request)).await.map(|_| ())
        }
        6 => {
            let mut request =
                pb::EvaluateTogetherRequest::decode(body.as_slice()).unwrap_or_else(|_| {
                    pb::EvaluateTogetherRequest {
                        kernel_id: text,
                        evaluations: vec![
                            pb::Evaluation {
                                request_json: body,
                                now_ms: 1,
                            };
                            2
                        ],
                        run_id: String::new(),
                    }
                });
            request.run_id = RUN_ID.into();
            link.evaluate_together(authorized(request))
                .await
                .map(|_| ())
        }
        7 => {
            let mut request = pb::ChangeFixtureRequest::decode(body.as_slice()).unwrap_or(
                pb::ChangeFixtureRequest {
                    server_id: "workspace".into(),
                    path: text,
                    change: Some(pb::change_fixture_request::Change::Write(
                        String::from_utf8_lossy(&body).into_owned(),
                    )),
                    run_id: String::new(),
                },
            );
            request.run_id = RUN_ID.into();
            control
                .change_fixture(authorized(request))
                .await
                .map(|_| ())
        }
        _ => control
            .load_world(authorized(pb::LoadWorldRequest {
                node: text,
                scenario: body,
                fixtures: Default::default(),
                peers: Default::default(),
                run_id: "fuzz-reload".into(),
                redefinitions_json: String::new(),
                witness_key: String::new(),
            }))
            .await
            .map(|_| ()),
    };
    match answered {
        Ok(()) => Ok(()),
        // A status is an answer; only a dead connection is a failure.
        Err(status) if status.code() == tonic::Code::Unavailable => Err(status.to_string()),
        Err(_) => Ok(()),
    }
}

proptest! {
    #![proptest_config(Config { cases: cases(), ..Config::default() })]

    // Arbitrary and mutated requests to every RPC get an answer, and the node still serves a valid call after them.
    #[test]
    fn every_request_gets_an_answer(
        which in any::<u8>(),
        raw in prop::collection::vec(any::<u8>(), 0..256),
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        use_raw in any::<bool>(),
        text in "[ -~]{0,24}",
        n in any::<u32>(),
    ) {
        let h = harness();
        let body = if use_raw {
            raw
        } else {
            mutate(valid_call(&format!("fz-{n}")).encode_to_vec(), &edits)
        };
        let sent = h.runtime.block_on(send(&h.url, which, body, text));
        prop_assert!(sent.is_ok(), "the node stopped answering: {sent:?}");
        if reloads(which) {
            // A load replaces the world, so a refused one leaves none: load it again.
            h.runtime.block_on(load_world(&h.url));
        }
        let check = h.runtime.block_on(async {
            let mut control = NodeControlClient::connect(h.url.clone()).await.map_err(|e| e.to_string())?;
            control
                .call(authorized(valid_call(&format!("check-{n}-{which}"))))
                .await
                .map(|r| r.into_inner().outcome)
                .map_err(|s| s.to_string())
        });
        // The check call is answered with an outcome (its verdict may be a replay deny when ids repeat).
        prop_assert!(check.is_ok(), "a valid call after the fuzzed one failed: {check:?}");
    }
}
