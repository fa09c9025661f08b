//! Round-trip properties of the wire conversions: every command and answer
//! comes back from its protobuf encoding as the value that was sent, and
//! fields that do not decode are refused as `INVALID_ARGUMENT` naming the
//! field.

use chio_kernel::keys::{derive_arena_key, public_key_hex};
use chio_kernel::reason::ReasonCode;
use chio_kernel::receipt::{
    ObservedFinding, ReceiptBody, ReceiptDecision, SignedReceipt, WouldAnswer, RECEIPT_SCHEMA,
};
use chio_kernel::stores::JournalEntry;
use chio_kernel::token::{
    Attenuation, CapabilityBody, CapabilityToken, MonetaryLimit, CAPABILITY_SCHEMA,
};
use chio_kernel::trace::{BudgetRead, DecisionTrace, GuardAnswer, ShareRead, StageTrace};
use chio_kernel::verdict::{ProjectedVerdict, Verdict};
use chio_kernel::ScopeGrant;
use chio_proto::node::v1 as pb;
use proptest::prelude::*;
use prost::Message;
use serde_json::{json, Value};

use super::command::*;
use super::outcome::*;
use super::*;
use crate::actors::CallOutcome;
use crate::node::{
    CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, MessageCommand, MessageOutcome,
};
use crate::outage::{
    delegation_unrecorded, kernel_unreachable, revocation_unrecorded, Outage, Refusal,
};
use crate::world::FixtureSet;

#[path = "trace_strategy.rs"]
mod trace_strategy;
use trace_strategy::trace;

fn token(id: &str) -> CapabilityToken {
    let issuer = derive_arena_key(7, "authority", "arena");
    let subject = derive_arena_key(7, "agent", "alice");
    let body = CapabilityBody {
        schema: CAPABILITY_SCHEMA.into(),
        id: id.into(),
        issuer: public_key_hex(&issuer),
        subject: public_key_hex(&subject),
        scope: vec![ScopeGrant::new("files", &["read_file"])],
        not_before_ms: 0,
        expires_at_ms: 10_000,
        max_invocations: Some(3),
        share_bps: 10_000,
    };
    CapabilityToken::issue(body, &issuer).expect("a test token signs")
}

fn text() -> impl Strategy<Value = String> {
    "[a-z0-9/_.-]{0,12}"
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn verdict() -> impl Strategy<Value = Verdict> {
    prop_oneof![
        Just(Verdict::Allow),
        Just(Verdict::Deny),
        Just(Verdict::PendingApproval)
    ]
}

fn projected() -> impl Strategy<Value = ProjectedVerdict> {
    prop_oneof![
        Just(ProjectedVerdict::Allow),
        Just(ProjectedVerdict::Deny),
        Just(ProjectedVerdict::Rewrite)
    ]
}

fn argument_source() -> impl Strategy<Value = chio_kernel::provenance::ArgumentSource> {
    (
        text(),
        prop::collection::vec(text(), 0..3),
        prop::option::of(text()),
        prop::option::of(text()),
    )
        .prop_map(|(pointer, labels, record, sender)| {
            chio_kernel::provenance::ArgumentSource {
                pointer,
                labels,
                record,
                sender,
            }
        })
}

fn call_command_strategy() -> impl Strategy<Value = CallCommand> {
    (
        (text(), text(), text(), any::<bool>()),
        (text(), text(), json_value(), (1..=u64::MAX, any::<u64>())),
        prop::collection::vec(argument_source(), 0..3),
    )
        .prop_map(
            |(
                (request_id, agent, capability_id, captured),
                (server, tool, arguments, (now_ms, earlier)),
                sources,
            )| {
                CallCommand {
                    sources,
                    captured: captured.then(|| token(&capability_id)),
                    request_id,
                    agent,
                    capability_id,
                    server,
                    tool,
                    arguments,
                    now_ms,
                    issued_at_ms: now_ms - earlier % now_ms,
                    sealed: Vec::new(),
                }
            },
        )
}

fn attenuation() -> impl Strategy<Value = Attenuation> {
    (
        prop::option::of(prop::collection::vec(text(), 0..3)),
        prop::option::of(text()),
        prop::option::of(any::<u64>()),
        prop::option::of(any::<u64>()),
        prop::option::of(any::<u64>()),
        prop::option::of(any::<u32>()),
        prop::option::of((text(), text(), any::<u64>(), any::<u64>())),
    )
        .prop_map(
            |(
                tools,
                path_prefix,
                not_before_ms,
                expires_at_ms,
                max_invocations,
                share_bps,
                money,
            )| {
                Attenuation {
                    tools,
                    path_prefix,
                    not_before_ms,
                    expires_at_ms,
                    max_invocations,
                    share_bps,
                    monetary: money.map(|(argument, currency, max_per_invocation, max_total)| {
                        MonetaryLimit {
                            argument,
                            currency,
                            max_per_invocation,
                            max_total,
                        }
                    }),
                }
            },
        )
}

fn receipt(verdict: Verdict, n: u64, reason: Option<String>) -> SignedReceipt {
    SignedReceipt {
        id: format!("{n:064x}"),
        body: ReceiptBody {
            schema: RECEIPT_SCHEMA.into(),
            timestamp_ms: n,
            kernel_id: "kernel-a".into(),
            kernel_key: "00".repeat(32),
            capability_id: "cap".into(),
            request_id: format!("r{n}"),
            agent_id: "alice".into(),
            session_id: "alice".into(),
            server: "files".into(),
            tool: "read_file".into(),
            parameter_hash: "ab".repeat(32),
            decision: ReceiptDecision {
                verdict,
                reason: reason.clone(),
                guard: None,
                sanitized: false,
            },
            observed: vec![ObservedFinding {
                guard: "g".into(),
                would: WouldAnswer::PendingApproval,
                reason: reason.unwrap_or_default(),
            }],
            output_hash: None,
        },
        signature: "cd".repeat(64),
    }
}

fn call_outcome_strategy() -> impl Strategy<Value = CallOutcome> {
    (
        (text(), verdict(), any::<bool>(), prop::option::of(text())),
        // A receipt's integers stay within 2^53, as canonical JSON requires.
        (prop::option::of(text()), any::<bool>(), 0..(1u64 << 53)),
        (prop::option::of(json_value()), trace()),
    )
        .prop_map(
            |((kernel_id, verdict, sanitized, reason), (guard, recorded, n), (output, trace))| {
                CallOutcome {
                    receipt: receipt(verdict, n, reason.clone()),
                    projected: verdict.project(sanitized),
                    kernel_id,
                    verdict,
                    sanitized,
                    reason,
                    guard,
                    recorded,
                    output,
                    trace,
                }
            },
        )
}

/// Encodes a message to protobuf bytes and decodes it back, as the
/// transport does.
fn through_bytes<M: Message + Default>(message: M) -> M {
    M::decode(message.encode_to_vec().as_slice()).expect("an encoded message decodes")
}

proptest! {
    // Proves a scheduled call survives the wire unchanged, captured token and arguments included.
    #[test]
    fn call_commands_round_trip(command in call_command_strategy()) {
        let sent = through_bytes(call_request(&command).unwrap());
        prop_assert_eq!(call_command(sent).unwrap(), command);
    }

    // Proves a scheduled delegation survives the wire unchanged, an empty tool list included.
    #[test]
    fn delegate_commands_round_trip(
        (agent, capability_id, to, delegation_id) in (text(), text(), text(), text()),
        attenuation in attenuation(),
        now_ms in any::<u64>(),
    ) {
        let command = DelegateCommand { agent, capability_id, to, delegation_id, attenuation, now_ms };
        let sent = through_bytes(delegate_request(&command));
        prop_assert_eq!(delegate_command(sent).unwrap(), command);
    }

    // Proves a scheduled message survives the wire unchanged.
    #[test]
    fn message_commands_round_trip(
        (agent, to) in (text(), text()),
        sources in prop::collection::vec(argument_source(), 0..3),
        now_ms in any::<u64>(),
        labels in prop::collection::vec(text(), 0..4),
        handover in prop::option::of((text(), json_value(), json_value())),
        refusal in prop::option::of((text(), text())),
    ) {
        let handover = handover.map(|(step, schema, value)| crate::node::HandOverCommand { by_reference: step.len() % 2 == 0, step, schema, value });
        let command = MessageCommand { agent, to, sources, handover, now_ms };
        prop_assert_eq!(message_command(through_bytes(message_request(&command).unwrap())).unwrap(), command);
        let refusal = refusal.map(|(code, message)| crate::node::StepRefusal { code, message });
        let outcome = MessageOutcome { labels, refusal };
        prop_assert_eq!(message_outcome(through_bytes(message_response(&outcome))), outcome);
    }

    // Proves a kernel's answer, trace and signed receipt included, survives the wire unchanged.
    #[test]
    fn call_outcomes_round_trip(outcome in call_outcome_strategy()) {
        let answer = CallAnswer::Decided(Box::new(outcome));
        let back = call_answer(through_bytes(call_response(&answer).unwrap())).unwrap();
        prop_assert_eq!(back, answer);
    }

    // Proves fixture files survive the wire unchanged and in order.
    #[test]
    fn fixtures_round_trip(
        servers in prop::collection::btree_map(text(), prop::collection::btree_map(text(), text(), 0..4), 0..4),
    ) {
        let fixtures = FixtureSet { servers };
        let sent = through_bytes(pb::LoadWorldRequest {
            fixtures: fixtures_to_proto(&fixtures),
            ..pb::LoadWorldRequest::default()
        });
        prop_assert_eq!(fixtures_from_proto(sent.fixtures), fixtures);
    }
}

// Proves a delegation's child token and labels survive the wire unchanged.
#[test]
fn delegate_outcomes_round_trip() {
    let outcome = DelegateOutcome {
        token: token("bob-files"),
        labels: vec!["internal".into(), "public".into()],
    };
    let answer = Ok(outcome);
    let sent = through_bytes(delegate_response(&answer).unwrap());
    assert_eq!(delegate_outcome(sent).unwrap(), answer);
}

// Proves a node's own refusals of a call and of a delegation survive the wire, and one sent beside an answer is refused.
#[test]
fn node_refusals_round_trip_and_never_ride_with_an_answer() {
    let unreachable = kernel_unreachable("k", "node-a", "node-b", Outage::Unavailable);
    let refused = CallAnswer::Refused(unreachable.clone());
    let back = call_answer(through_bytes(call_response(&refused).unwrap())).unwrap();
    assert_eq!(back, refused);
    let both = pb::CallResponse {
        outcome: Some(pb::CallOutcome::default()),
        refusal: Some("no".to_string()),
        refusal_code: Some("kernel-unreachable".to_string()),
    };
    assert!(call_answer(both).is_err());
    let uncoded = pb::CallResponse {
        outcome: None,
        refusal: Some(unreachable.message.clone()),
        refusal_code: None,
    };
    assert!(call_answer(uncoded).is_err(), "a refusal without its code");
    let declined: Result<DelegateOutcome, Refusal> =
        Err(delegation_unrecorded(Outage::DeadlineExceeded));
    let sent = through_bytes(delegate_response(&declined).unwrap());
    assert_eq!(delegate_outcome(sent).unwrap(), declined);
    let both = pb::DelegateResponse {
        token_json: b"{}".to_vec(),
        labels: Vec::new(),
        refusal: Some("no".to_string()),
        refusal_code: Some("delegation-unrecorded".to_string()),
    };
    assert!(delegate_outcome(both).is_err());
    let unrecorded = Some(revocation_unrecorded(Outage::Unavailable));
    assert_eq!(
        revoke_outcome(through_bytes(revoke_response(&unrecorded))).unwrap(),
        unrecorded
    );
    let foreign = pb::RevokeResponse {
        refusal: Some("no".to_string()),
        refusal_code: Some("revoked".to_string()),
    };
    assert!(
        revoke_outcome(foreign).is_err(),
        "a kernel's code on a node's refusal"
    );
}

fn refusal<T: std::fmt::Debug>(decoded: Result<T, NodeError>) -> Status {
    decode_request(decoded).expect_err("the message is refused")
}

// Proves a field that does not decode is INVALID_ARGUMENT naming the field, never a panic.
#[test]
fn malformed_fields_are_invalid_arguments_naming_the_field() {
    let command = CallCommand {
        request_id: "r".into(),
        agent: "alice".into(),
        capability_id: "cap".into(),
        captured: None,
        server: "files".into(),
        tool: "read_file".into(),
        arguments: json!({"path": "/w/a"}),
        sources: Vec::new(),
        now_ms: 1,
        issued_at_ms: 1,
        sealed: Vec::new(),
    };
    let mut request = call_request(&command).unwrap();
    request.arguments_json = b"{\"path\":".to_vec();
    let status = refusal(call_command(request.clone()));
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(
        status.message().starts_with("arguments_json is malformed"),
        "{status:?}"
    );
    request.arguments_json = b"{}".to_vec();
    request.captured_token_json = Some(b"{\"x\":1}".to_vec());
    let status = refusal(call_command(request.clone()));
    assert!(
        status
            .message()
            .starts_with("captured_token_json is malformed"),
        "{status:?}"
    );
    // A call issued after its decision, or at no instant, is refused.
    request.captured_token_json = None;
    for (issued, now) in [(0, 5), (6, 5)] {
        request.issued_at_ms = issued;
        request.now_ms = now;
        let status = refusal(call_command(request.clone()));
        assert!(
            status.message().starts_with("issued_at_ms is malformed"),
            "{issued} {now}: {status:?}"
        );
    }
    request.issued_at_ms = 5;
    assert!(call_command(request).is_ok(), "issued at its decision");

    let delegate = pb::DelegateRequest {
        attenuation: None,
        ..pb::DelegateRequest::default()
    };
    let status = refusal(delegate_command(delegate));
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(
        status
            .message()
            .starts_with("attenuation is malformed: missing"),
        "{status:?}"
    );
    let status = refusal(decode::<chio_kernel::ToolCallRequest>(
        "request_json",
        b"[]",
    ));
    assert!(
        status.message().starts_with("request_json is malformed"),
        "{status:?}"
    );
}

// Proves an answer with an unspecified verdict, a missing trace or a key read twice is refused, naming the field.
#[test]
fn malformed_outcomes_are_refused_naming_the_field() {
    let outcome = CallOutcome {
        kernel_id: "kernel-a".into(),
        verdict: Verdict::Deny,
        projected: ProjectedVerdict::Deny,
        sanitized: false,
        reason: Some("no".into()),
        guard: None,
        recorded: true,
        receipt: receipt(Verdict::Deny, 1, Some("no".into())),
        output: None,
        trace: DecisionTrace::default(),
    };
    let good = call_outcome_to_proto(&outcome).unwrap();
    let field = |broken: pb::CallOutcome| match call_outcome_from_proto("outcome", Some(broken)) {
        Err(NodeError::Malformed { field, .. }) => field,
        other => panic!("not refused as malformed: {other:?}"),
    };
    assert_eq!(
        field(pb::CallOutcome {
            verdict: 0,
            ..good.clone()
        }),
        "outcome.verdict"
    );
    assert_eq!(
        field(pb::CallOutcome {
            verdict: 9,
            ..good.clone()
        }),
        "outcome.verdict"
    );
    assert_eq!(
        field(pb::CallOutcome {
            trace: None,
            ..good.clone()
        }),
        "outcome.trace"
    );
    assert_eq!(
        field(pb::CallOutcome {
            receipt_json: b"{}".to_vec(),
            ..good.clone()
        }),
        "outcome.receipt_json"
    );
    let twice = pb::KeyLabels {
        key: "principal/alice".into(),
        labels: Vec::new(),
    };
    let mut trace = good.trace.clone().unwrap();
    trace.label_keys = vec![twice.clone(), twice];
    assert_eq!(
        field(pb::CallOutcome {
            trace: Some(trace),
            ..good.clone()
        }),
        "outcome.trace.label_keys"
    );
    let mut trace = good.trace.clone().unwrap();
    trace.journal = vec![pb::JournalEntry::default()];
    assert_eq!(
        field(pb::CallOutcome {
            trace: Some(trace),
            ..good
        }),
        "outcome.trace.journal.verdict"
    );
    assert!(call_outcome_from_proto("outcome", None).is_err());
    let remote = decode_answer("node node-b", call_outcome_from_proto("outcome", None));
    assert!(
        matches!(remote, Err(NodeError::Remote { .. })),
        "{remote:?}"
    );
}
