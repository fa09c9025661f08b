//! Tests of `handling`.
use super::*;
use crate::node::HandOverCommand;
use chio_kernel::label::{LabelKey, Unrecorded};
use chio_kernel::provenance::ArgumentSource;
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn handover(value: Value) -> MessageCommand {
    MessageCommand {
        agent: "reader".to_string(),
        to: "planner".to_string(),
        sources: vec![ArgumentSource {
            pointer: String::new(),
            labels: vec!["integrity:untrusted".to_string()],
            ..Default::default()
        }],
        handover: Some(HandOverCommand {
            step: "hand-iban".to_string(),
            schema: json!({"type": "string", "maxLength": 8}),
            value,
            by_reference: false,
        }),
        now_ms: 1,
    }
}

// Only a quarantined reader's hand-over to a planner leaves the receiver untouched; any other sender taints it besides the record; a refused value carries nothing and names its code, never the value.
#[test]
fn the_one_exception_to_message_tainting() {
    let record = LabelKey::HandOver("handover/planner/hand-iban".to_string());
    let endorsed = message_carry(
        &handover(json!("DE89")),
        AgentRole::Quarantined,
        AgentRole::Planner,
    )
    .unwrap();
    assert_eq!(endorsed.into, std::slice::from_ref(&record));
    assert!(endorsed
        .carried(&BTreeMap::new())
        .unwrap()
        .contains("integrity:untrusted"));
    for sender in [AgentRole::Ordinary, AgentRole::Planner] {
        let tainting = message_carry(&handover(json!("DE89")), sender, AgentRole::Planner).unwrap();
        assert_eq!(
            tainting.into,
            [
                LabelKey::Principal("planner".to_string()),
                LabelKey::Session("planner".to_string()),
                record.clone()
            ]
        );
    }
    let refused = message_carry(
        &handover(json!("DE89370400440532013000")),
        AgentRole::Quarantined,
        AgentRole::Planner,
    )
    .unwrap_err();
    assert_eq!(refused.code, "hand-over-refused");
    assert!(!refused.message.contains("DE89"), "{}", refused.message);
}

// A value the sender wrote carries what the sender's principal holds; a value that is wholly one output's part, taken by reference from a quarantined reader, carries only that part's labels; from any other sender it carries the sender's principal too.
#[test]
fn only_a_value_the_sender_wrote_carries_the_sender() {
    let mut written = handover(json!("DE89"));
    let wrote = message_carry(&written, AgentRole::Quarantined, AgentRole::Planner).unwrap();
    assert_eq!(wrote.from, [LabelKey::Principal("reader".to_string())]);
    if let Some(h) = written.handover.as_mut() {
        h.by_reference = true;
    }
    written.sources = Vec::new();
    let taken = message_carry(&written, AgentRole::Quarantined, AgentRole::Planner).unwrap();
    assert!(taken.from.is_empty());
    assert_eq!(
        taken.carried(&BTreeMap::new()).unwrap().len(),
        1,
        "only the record's floor"
    );
    // From any other sender a value taken by reference still carries the
    // sender's principal, into the receiver as by any message.
    for sender in [AgentRole::Ordinary, AgentRole::Planner] {
        let taken = message_carry(&written, sender, AgentRole::Planner).unwrap();
        assert_eq!(taken.from, [LabelKey::Principal("reader".to_string())]);
    }
}

// A relayed value carries the records of the earlier hand-overs it was built from, read as a call reads them, by a plain message as by a hand-over; a record that holds nothing refuses the move, naming the place and the record, never guessing.
#[test]
fn a_relay_carries_the_records_of_its_sources() {
    let record = "handover/planner1/hand-iban".to_string();
    let relay = |message: MessageCommand| {
        let mut message = message;
        message.agent = "planner1".to_string();
        message.to = "planner2".to_string();
        message.sources = vec![ArgumentSource {
            pointer: "/payee".to_string(),
            record: Some(record.clone()),
            sender: Some("reader".to_string()),
            ..Default::default()
        }];
        message
    };
    let mut plain = relay(handover(json!("x")));
    plain.handover = None;
    for message in [relay(handover(json!("DE89"))), plain] {
        let carry = message_carry(&message, AgentRole::Planner, AgentRole::Planner).unwrap();
        assert!(carry.from_keys().contains(&record));
        let held: BTreeSet<String> = ["integrity:untrusted", "public"].map(str::to_string).into();
        let read = BTreeMap::from([(record.clone(), held)]);
        assert!(carry
            .carried(&read)
            .unwrap()
            .contains("integrity:untrusted"));
        for read in [
            BTreeMap::new(),
            BTreeMap::from([(record.clone(), BTreeSet::new())]),
        ] {
            assert_eq!(
                carry.carried(&read),
                Err(Unrecorded {
                    pointer: "/payee".to_string(),
                    record: record.clone()
                })
            );
        }
    }
}
