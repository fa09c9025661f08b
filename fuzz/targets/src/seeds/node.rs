//! Seeds of the `node_control` and `kernel_link` targets: sessions of
//! requests against the fuzz world (calls allowed and denied, a delegation
//! and a call through it, a message, a revocation, a reload, forwarded
//! requests signed by the world's agents, a token handed over), and hostile
//! neighbours (an unknown agent or kernel, a stolen token, malformed JSON).

use prost::Message;
use serde_json::json;

use chio_kernel::request::RequestProof;
use chio_kernel::token::Attenuation;
use chio_kernel::{CapabilityToken, ToolCallRequest};
use chio_node::wire::command::{call_request, delegate_request, message_request};
use chio_node::{CallCommand, DelegateCommand, MessageCommand, World};
use chio_proto::node::v1 as node_pb;

use super::{json_bytes, named, Seed};
use crate::frames;
use crate::node::{load_world_request, node_world, RUN_ID, START_MS};

/// One framed request: the RPC's selector and its protobuf bytes.
type Frame = (u8, Vec<u8>);

fn call(request_id: &str, agent: &str, capability: &str, path: &str, offset_ms: u64) -> Vec<u8> {
    let command = CallCommand {
        request_id: request_id.into(),
        agent: agent.into(),
        capability_id: capability.into(),
        captured: None,
        server: "workspace-a".into(),
        tool: "read_file".into(),
        arguments: json!({ "path": path }),
        sources: Vec::new(),
        now_ms: START_MS + offset_ms,
        issued_at_ms: START_MS + offset_ms,
        sealed: Vec::new(),
    };
    let mut request = call_request(&command).expect("a seed call encodes");
    request.run_id = RUN_ID.into();
    request.encode_to_vec()
}

fn delegate_to(to: &str, id: &str, offset_ms: u64) -> Vec<u8> {
    let command = DelegateCommand {
        agent: "alice".into(),
        capability_id: "alice-files".into(),
        to: to.into(),
        delegation_id: id.into(),
        attenuation: Attenuation {
            tools: Some(vec!["read_file".into()]),
            path_prefix: Some("/workspace/shared/".into()),
            expires_at_ms: Some(START_MS + 3_600_000),
            share_bps: Some(6000),
            ..Attenuation::default()
        },
        now_ms: START_MS + offset_ms,
    };
    let mut request = delegate_request(&command);
    request.run_id = RUN_ID.into();
    request.encode_to_vec()
}

fn message(to: &str, label: Option<&str>) -> Vec<u8> {
    let command = MessageCommand {
        agent: "alice".into(),
        to: to.into(),
        sources: label
            .map(|label| chio_kernel::provenance::ArgumentSource {
                labels: vec![label.to_string()],
                ..Default::default()
            })
            .into_iter()
            .collect(),
        handover: None,
        now_ms: START_MS + 500,
    };
    let mut request = message_request(&command).expect("a seed message encodes");
    request.run_id = RUN_ID.into();
    request.encode_to_vec()
}

/// A session: its name and its framed requests.
type Session = (&'static str, Vec<Frame>);

/// The `node_control` seeds.
pub fn control_seeds() -> Vec<Seed> {
    let plan = "/workspace/shared/plan.md";
    call_sessions(plan)
        .into_iter()
        .chain(node_change_sessions(plan))
        .map(|(name, frames)| named(name, frames::encode(&frames)))
        .collect()
}

/// A revocation of `target` at the world's fixed instant.
fn revoke(target: &str) -> Vec<u8> {
    node_pb::RevokeRequest {
        run_id: RUN_ID.into(),
        target: target.into(),
        at_ms: START_MS + 1500,
    }
    .encode_to_vec()
}

/// Sessions of an agent's calls: allowed, denied, replayed, through a
/// delegation, after a message and a revocation, and by an unknown agent.
fn call_sessions(plan: &str) -> Vec<Session> {
    vec![
        (
            "call-allowed",
            vec![(1, call("rq-1", "alice", "alice-files", plan, 1000))],
        ),
        (
            "call-dotfile",
            vec![(
                1,
                call("rq-2", "alice", "alice-files", "/workspace/.env", 1000),
            )],
        ),
        (
            "call-replayed",
            vec![
                (1, call("rq-3", "alice", "alice-files", plan, 1000)),
                (1, call("rq-3", "alice", "alice-files", plan, 1100)),
            ],
        ),
        (
            "delegate-then-call",
            vec![
                (2, delegate_to("bob", "bob-files", 1000)),
                (1, call("rq-4", "bob", "bob-files", plan, 2000)),
                (
                    1,
                    call(
                        "rq-5",
                        "bob",
                        "bob-files",
                        "/workspace/private/keys.txt",
                        2100,
                    ),
                ),
            ],
        ),
        (
            "message-then-revoke",
            vec![
                (3, message("bob", Some("confidential"))),
                (4, revoke("alice-files")),
                (1, call("rq-6", "alice", "alice-files", plan, 2000)),
            ],
        ),
        (
            "unknown-agent",
            vec![(1, call("rq-7", "zed", "alice-files", plan, 1000))],
        ),
    ]
}

/// Sessions that change the node or send it what it must refuse: a
/// reload, another node's world, an edited fixture, malformed arguments,
/// a delegation without attenuation.
fn node_change_sessions(plan: &str) -> Vec<Session> {
    let mut reload = load_world_request();
    reload.run_id = "fuzz-again".into();
    let mut elsewhere = load_world_request();
    elsewhere.node = "node-z".into();
    vec![
        (
            "reload-then-call",
            vec![
                (0, reload.encode_to_vec()),
                (1, call("rq-8", "alice", "alice-files", plan, 1000)),
            ],
        ),
        ("load-foreign-node", vec![(0, elsewhere.encode_to_vec())]),
        (
            "change-fixture-then-call",
            vec![
                (
                    5,
                    node_pb::ChangeFixtureRequest {
                        run_id: RUN_ID.into(),
                        server_id: "workspace-a".into(),
                        path: plan.into(),
                        change: Some(node_pb::change_fixture_request::Change::Write(
                            "an edited plan".into(),
                        )),
                    }
                    .encode_to_vec(),
                ),
                (1, call("rq-9", "alice", "alice-files", plan, 1000)),
            ],
        ),
        (
            "malformed-arguments",
            vec![(
                1,
                node_pb::CallRequest {
                    agent: "alice".into(),
                    capability_id: "alice-files".into(),
                    arguments_json: b"{\"path\":".to_vec(),
                    run_id: RUN_ID.into(),
                    ..node_pb::CallRequest::default()
                }
                .encode_to_vec(),
            )],
        ),
        (
            "delegate-without-attenuation",
            vec![(
                2,
                node_pb::DelegateRequest {
                    run_id: RUN_ID.into(),
                    agent: "alice".into(),
                    capability_id: "alice-files".into(),
                    to: "bob".into(),
                    delegation_id: "bob-files".into(),
                    attenuation: None,
                    now_ms: START_MS + 1000,
                }
                .encode_to_vec(),
            )],
        ),
    ]
}

fn signed_request(
    token: &CapabilityToken,
    agent: &str,
    id: &str,
    path: &str,
    offset_ms: u64,
) -> Vec<u8> {
    let world = node_world();
    let key = &world
        .agents
        .get(agent)
        .expect("the agent is in the fuzz world")
        .key;
    let request = ToolCallRequest {
        request_id: id.into(),
        capability: token.clone(),
        server: "workspace-a".into(),
        tool: "read_file".into(),
        arguments: json!({ "path": path }),
        agent_id: agent.into(),
        session_id: agent.into(),
        issued_at_ms: START_MS + offset_ms,
        proof: RequestProof::default(),
        sealed: Vec::new(),
        argument_sources: Vec::new(),
    }
    .sign(key)
    .expect("a seed request signs");
    json_bytes(&request)
}

fn evaluate(kernel: &str, request_json: Vec<u8>, offset_ms: u64) -> Frame {
    let message = node_pb::EvaluateRequest {
        run_id: RUN_ID.into(),
        kernel_id: kernel.into(),
        request_json,
        now_ms: START_MS + offset_ms,
    };
    (0, message.encode_to_vec())
}

fn evaluate_together(kernel: &str, requests: Vec<(Vec<u8>, u64)>) -> Frame {
    let message = node_pb::EvaluateTogetherRequest {
        run_id: RUN_ID.into(),
        kernel_id: kernel.into(),
        evaluations: requests
            .into_iter()
            .map(|(request_json, offset_ms)| node_pb::Evaluation {
                request_json,
                now_ms: START_MS + offset_ms,
            })
            .collect(),
    };
    (2, message.encode_to_vec())
}

/// The `kernel_link` seeds.
pub fn link_seeds() -> Vec<Seed> {
    let world = node_world();
    let plan = "/workspace/shared/plan.md";
    let (_, root) = world
        .grants
        .get("alice-files")
        .expect("the fuzz world grants alice-files")
        .clone();
    let child = bob_link(&world, &root);
    let alice_read = signed_request(&root, "alice", "rq-1", plan, 1000);
    evaluate_sessions(alice_read)
        .into_iter()
        .chain(delegated_sessions(&root, &child, plan))
        .map(|(name, frames)| named(name, frames::encode(&frames)))
        .collect()
}

/// The child of alice's root that alice delegates to bob.
fn bob_link(world: &World, root: &CapabilityToken) -> CapabilityToken {
    let alice = &world
        .agents
        .get("alice")
        .expect("alice is in the fuzz world")
        .key;
    let bob_hex = chio_kernel::keys::public_key_hex(
        &world
            .agents
            .get("bob")
            .expect("bob is in the fuzz world")
            .key,
    );
    root.delegate(
        alice,
        &bob_hex,
        &Attenuation {
            tools: Some(vec!["read_file".into()]),
            share_bps: Some(5000),
            ..Attenuation::default()
        },
        "bob-link",
        START_MS + 500,
    )
    .expect("the seed delegation signs")
}

/// A token handed over to `agent`.
fn hand_over(agent: &str, token: &CapabilityToken) -> Frame {
    (
        1,
        node_pb::HandOverRequest {
            run_id: RUN_ID.into(),
            agent_id: agent.into(),
            token_json: json_bytes(token),
        }
        .encode_to_vec(),
    )
}

/// Sessions evaluating alice's one signed read: allowed, replayed (one
/// after another and together), too many together, and at the wrong or an
/// unknown kernel.
fn evaluate_sessions(alice_read: Vec<u8>) -> Vec<Session> {
    vec![
        (
            "evaluate-allowed",
            vec![evaluate("kernel-a", alice_read.clone(), 1000)],
        ),
        (
            "evaluate-replayed",
            vec![
                evaluate("kernel-a", alice_read.clone(), 1000),
                evaluate("kernel-a", alice_read.clone(), 1200),
            ],
        ),
        (
            "together-replayed",
            vec![evaluate_together(
                "kernel-a",
                vec![(alice_read.clone(), 1000), (alice_read.clone(), 1000)],
            )],
        ),
        (
            "together-too-many",
            vec![evaluate_together(
                "kernel-a",
                vec![(alice_read.clone(), 1000); 65],
            )],
        ),
        (
            "evaluate-wrong-kernel",
            vec![evaluate("kernel-b", alice_read.clone(), 1000)],
        ),
        (
            "evaluate-unknown-kernel",
            vec![evaluate("kernel-z", alice_read, 1000)],
        ),
    ]
}

/// Sessions around a delegation: a denied read by the root's holder, the
/// child handed over and used, stolen, handed to an unknown agent, and a
/// malformed request.
fn delegated_sessions(root: &CapabilityToken, child: &CapabilityToken, plan: &str) -> Vec<Session> {
    vec![
        (
            "evaluate-dotfile",
            vec![evaluate(
                "kernel-a",
                signed_request(root, "alice", "rq-2", "/workspace/.env", 1000),
                1000,
            )],
        ),
        (
            "hand-over-then-evaluate",
            vec![
                hand_over("bob", child),
                evaluate(
                    "kernel-a",
                    signed_request(child, "bob", "rq-3", plan, 1500),
                    1500,
                ),
            ],
        ),
        (
            "stolen-token",
            vec![evaluate(
                "kernel-a",
                signed_request(child, "carol", "rq-4", plan, 1500),
                1500,
            )],
        ),
        ("hand-over-unknown-agent", vec![hand_over("zed", child)]),
        (
            "malformed-request",
            vec![(
                0,
                node_pb::EvaluateRequest {
                    run_id: RUN_ID.into(),
                    kernel_id: "kernel-a".into(),
                    request_json: b"[1,2".to_vec(),
                    now_ms: 1,
                }
                .encode_to_vec(),
            )],
        ),
    ]
}
