//! Tests of the node's own answers: every code has an example reason, and codes are unique.

use std::time::Duration;

use super::*;

// Proves only the two transport failures are outages, and no answer carries the transport's text.
#[test]
fn only_transport_failures_are_outages_and_their_text_is_fixed() {
    let refused = TrustError::Unavailable {
        detail: "connecting to http://127.0.0.1:4242: Connection refused (os error 111)"
            .to_string(),
    };
    let late = TrustError::DeadlineExceeded {
        operation: "batch",
        deadline: Duration::from_millis(200),
    };
    assert_eq!(Outage::of_trust(&refused), Some(Outage::Unavailable));
    assert_eq!(Outage::of_trust(&late), Some(Outage::DeadlineExceeded));
    assert_eq!(Outage::of_trust(&TrustError::StoreClosed), None);
    let answers = [
        kernel_unreachable("k", "node-a", "node-b", Outage::Unavailable),
        delegation_unrecorded(Outage::DeadlineExceeded),
        delegation_undelivered("bob", "node-b", "node-a", Outage::Unavailable),
        revocation_unrecorded(Outage::Unavailable),
    ];
    for answer in answers.iter().map(|a| a.message.as_str()) {
        for leak in ["127.0.0.1", "os error", " ms", "4242"] {
            assert!(!answer.contains(leak), "{answer} leaks {leak}");
        }
    }
}

// Each node reason prints its documented message, and every code has one.
#[test]
fn every_node_code_has_a_reason_with_its_message() {
    let down = || NodeDown {
        node: "node-b".to_string(),
        step: "crash".to_string(),
    };
    let s = |text: &str| text.to_string();
    let arrival = || Arrival {
        sent_step: s("give"),
        link: s("node-a <-> node-b"),
        delay_ms: 600,
        delay_step: s("slow"),
        arrival_ms: 1700,
    };
    let examples = [
        (NodeReason::KernelUnreachable { kernel: s("k"), kernel_node: s("node-a"), from_node: s("node-b"), outage: Outage::DeadlineExceeded }, "kernel k on node node-a is unreachable from node node-b: the link missed its deadline"),
        (NodeReason::NotHeld { agent: s("bob"), capability: s("c") }, "agent bob does not hold capability c"),
        (NodeReason::AgentDown { agent: s("bob"), down: down() }, "agent bob cannot call: node node-b is down (crashed at step crash)"),
        (NodeReason::KernelDown { kernel: s("k"), down: down() }, "kernel k cannot decide: node node-b is down (crashed at step crash)"),
        (NodeReason::KernelCrashedInFlight { kernel: s("k"), down: down() }, "kernel k cannot decide: node node-b crashed at step crash while the call was in flight"),
        (NodeReason::AgentCrashedInFlight { agent: s("bob"), down: down() }, "agent bob cannot call: node node-b crashed at step crash while the call was in flight"),
        (NodeReason::LinkCutInFlight { kernel: s("k"), kernel_node: s("node-b"), from_node: s("node-a"), step: s("cut") }, "kernel k on node node-b is unreachable from node node-a: the link was cut at step cut while the call was in flight"),
        (NodeReason::RunStopped { step: s("check") }, "call refused: the run stopped at step check before this call arrived"),
        (NodeReason::DelegationNotHeld { agent: s("bob"), capability: s("c") }, "delegation refused: agent bob does not hold capability c"),
        (NodeReason::DelegatorDown(down()), "delegation refused: node node-b is down (crashed at step crash)"),
        (NodeReason::DelegationUnrecorded(Outage::Unavailable), "delegation refused: the child's labels cannot be recorded: trust-control unavailable"),
        (NodeReason::DelegationUndelivered { to: s("bob"), to_node: s("node-b"), from_node: s("node-a"), outage: Outage::Unavailable }, "delegation refused: the child cannot be handed to agent bob on node node-b from node node-a: the link is unavailable"),
        (NodeReason::DelegationInFlight { agent: s("bob"), capability: s("c"), arrival: arrival() }, "delegation refused: agent bob does not hold capability c yet: it is in flight over link node-a <-> node-b until 1700 ms (sent at step give, delayed 600 ms at step slow)"),
        (NodeReason::CapabilityInFlight { agent: s("bob"), capability: s("c"), arrival: arrival() }, "agent bob does not hold capability c yet: it is in flight over link node-a <-> node-b until 1700 ms (sent at step give, delayed 600 ms at step slow)"),
        (NodeReason::HandOverUndelivered { to: s("bob"), to_node: s("node-b"), from_node: s("node-a") }, "hand-over refused: the value cannot be handed to agent bob on node node-b from node node-a: the link is unavailable"),
        (NodeReason::ReferenceInFlight { argument: s("/amount"), step: s("give"), pointer: s(""), arrival: arrival() }, "call refused: argument /amount takes its value from step give (the whole output), but the hand-over is in flight over link node-a <-> node-b until 1700 ms (sent at step give, delayed 600 ms at step slow)"),
        (NodeReason::RevokerNotAuthorized { capability: s("c") }, "revocation refused: the revoker holds no ancestor of capability c and is not its issuer; only the issuing authority or a holder of an ancestor link may revoke it"),
        (NodeReason::RevocationTargetUnknown { capability: s("c") }, "revocation refused: capability c does not exist yet"),
        (NodeReason::RevokerNotPlaced { agent: s("bob") }, "revocation refused: agent bob is not placed"),
        (NodeReason::RevokerDown(down()), "revocation refused: node node-b is down (crashed at step crash)"),
        (NodeReason::RevocationUnrecorded(Outage::DeadlineExceeded), "revocation refused: the revocation cannot be recorded: trust-control deadline exceeded"),
        (NodeReason::ReferenceUnresolved { argument: s("/to"), step: s("read-bill"), pointer: s("/iban"), why: chio_arena::scenario::value::Unresolved::Denied }, "call refused: argument /to takes its value from step read-bill (pointer /iban), but it was not allowed"),
        (NodeReason::SealedUnresolved { argument: s("/body"), path: s("fixtures/secrets/token.txt"), why: chio_arena::scenario::value::Unresolved::Unsealed }, "call refused: argument /body takes its value from sealed file fixtures/secrets/token.txt, but it was not read for this run"),
        (NodeReason::HandOverUnresolved { at: s("/iban"), step: s("reads-bill"), pointer: s(""), why: chio_arena::scenario::value::Unresolved::Denied }, "hand-over refused: the value at /iban takes its value from step reads-bill (the whole output), but it was not allowed"),
        (NodeReason::ReferenceMalformed { argument: s(""), problem: "a literal takes only the key literal; put the whole object inside it" }, "call refused: the arguments are not a reference the value grammar reads: a literal takes only the key literal; put the whole object inside it"),
    ];
    let mut covered = std::collections::BTreeSet::new();
    for (reason, message) in examples {
        let refusal = reason.refusal();
        assert_eq!(refusal.message, message);
        assert_eq!(refusal.code, reason.code());
        covered.insert(reason.code());
    }
    let all: std::collections::BTreeSet<_> = NodeCode::ALL.iter().copied().collect();
    assert_eq!(covered, all, "a node code without an example reason");
}

// Node codes are unique and never a kernel's, so a code names one reason.
#[test]
fn node_codes_are_unique_and_apart_from_the_kernel_codes() {
    let mut seen = std::collections::BTreeSet::new();
    for code in chio_kernel::reason::ReasonCode::ALL {
        assert!(seen.insert(code.as_str()));
    }
    for code in NodeCode::ALL {
        assert!(seen.insert(code.as_str()), "{code} is declared twice");
        assert_eq!(NodeCode::parse(code.as_str()), Some(*code));
    }
}
