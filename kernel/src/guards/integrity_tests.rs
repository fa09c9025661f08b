//! Run-time allowlists at the `integrity` guard: what a record admits, and
//! whose records count.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::*;
use crate::guards::GuardMode;
use crate::provenance::Provenance;

fn guard() -> IntegrityGuard {
    let meta = GuardMeta {
        id: "integrity".to_string(),
        mode: GuardMode::Enforce,
    };
    let config = json!({
        "consequential": {"bank": ["pay"]},
        "protected": {"bank": {"pay": ["recipient", "cc"]}},
        "allow_from": {"bank": {"pay": {
            "recipient": [{"server": "bank", "tool": "history", "pointer": "/*/recipient"}],
            "cc": [{"server": "bank", "tool": "history", "pointer": "/*/recipient"}],
        }}},
    });
    IntegrityGuard::new(meta, serde_json::from_value(config).unwrap()).unwrap()
}

fn record(agent: &str) -> String {
    format!("allowlist/{agent}/bank/history/*/recipient")
}

/// A planner's provenance: `/recipient` (and `/cc`) untrusted, `held`
/// the records admission read, `senders` who handed over `/recipient`.
fn planner(held: &[(&str, &[&str])], senders: &[&str]) -> Provenance {
    let untrusted = BTreeSet::from(["integrity:untrusted".to_string()]);
    Provenance {
        role: AgentRole::Planner,
        open_world: false,
        arguments: BTreeMap::from([
            ("/recipient".to_string(), untrusted.clone()),
            ("/cc".to_string(), untrusted),
        ]),
        allowlists: held
            .iter()
            .map(|(agent, values)| {
                let digests = values.iter().map(|v| value_digest(v)).collect();
                (record(agent), digests)
            })
            .collect(),
        senders: BTreeMap::from([(
            "/recipient".to_string(),
            senders.iter().map(|s| s.to_string()).collect(),
        )]),
    }
}

fn judge(arguments: serde_json::Value, provenance: &Provenance) -> GuardVerdict {
    let labels = BTreeMap::new();
    let ctx = GuardContext {
        server: "bank",
        tool: "pay",
        arguments: &arguments,
        agent_id: "planner",
        session_id: "planner",
        journal: &[],
        labels: &labels,
        money: &Default::default(),
        session_filesystem_roots: None,
        provenance,
        definition: None,
    };
    guard().check_request(&ctx).unwrap()
}

const PAYEE: &str = "DE89370400440532013000";

fn refused(verdict: &GuardVerdict) -> bool {
    matches!(
        verdict,
        GuardVerdict::Deny(DenyReason::UntrustedArgument { .. })
    )
}

// A protected argument whose every value the caller's own record holds is admitted whatever its labels; a value on no record, an empty record, a near miss (case, whitespace, a combining mark, Cyrillic look-alikes) and a non-string value are refused.
#[test]
fn the_callers_record_admits_exact_values_only() {
    let own = planner(&[("planner", &[PAYEE, "FR1420041010050500013M02606"])], &[]);
    let ok = json!({"recipient": PAYEE, "cc": ["FR1420041010050500013M02606", PAYEE]});
    assert_eq!(judge(ok, &own), GuardVerdict::Allow);
    let attacker = json!({"recipient": "GB33BUKB20201555555555", "cc": [PAYEE]});
    assert!(refused(&judge(attacker, &own)));
    let one_off = json!({"recipient": PAYEE, "cc": [PAYEE, "GB33BUKB20201555555555"]});
    assert!(refused(&judge(one_off, &own)), "every value of an array");
    for near in [
        "de89370400440532013000",
        " DE89370400440532013000",
        "DE89370400440532013000\n",
        "DE8937040044053201300\u{0030}\u{0301}",
        "DE89370400440532013\u{041e}\u{041e}\u{041e}",
    ] {
        let verdict = judge(json!({"recipient": near, "cc": [PAYEE]}), &own);
        assert!(refused(&verdict), "{near:?}");
    }
    assert!(refused(&judge(
        json!({"recipient": {"iban": PAYEE}, "cc": [PAYEE]}),
        &own
    )));
    let empty = planner(&[("planner", &[])], &[]);
    assert!(refused(&judge(
        json!({"recipient": PAYEE, "cc": [PAYEE]}),
        &empty
    )));
}

// Another agent's record admits nothing, unless that agent handed over the value the argument is built from; a sender's record counts only for the argument its value went into.
#[test]
fn only_the_caller_and_its_senders_count() {
    let args = json!({"recipient": PAYEE, "cc": [PAYEE]});
    let others = planner(&[("clerk", &[PAYEE])], &[]);
    assert!(refused(&judge(args.clone(), &others)));
    let handed = planner(&[("reader", &[PAYEE])], &["reader"]);
    let verdict = judge(args, &handed);
    assert!(
        matches!(verdict, GuardVerdict::Deny(DenyReason::UntrustedArgument { ref argument, .. }) if argument == "/cc"),
        "the reader handed over /recipient only: {verdict:?}"
    );
    assert_eq!(
        judge(json!({"recipient": PAYEE, "cc": "x"}), &{
            let mut p = planner(&[("reader", &[PAYEE])], &["reader"]);
            p.arguments.remove("/cc");
            p
        }),
        GuardVerdict::Allow
    );
    let mut ordinary = planner(&[("planner", &[PAYEE])], &[]);
    ordinary.role = AgentRole::Ordinary;
    assert_eq!(
        judge(json!({"recipient": "GB33BUKB20201555555555"}), &ordinary),
        GuardVerdict::Allow,
        "an ordinary agent is judged by its context alone"
    );
}

// A source must name a protected argument and a pointer; the sources are listed once each, all of them and those of one tool.
#[test]
fn sources_are_validated_and_listed() {
    let meta = GuardMeta {
        id: "integrity".to_string(),
        mode: GuardMode::Enforce,
    };
    let build = |config: serde_json::Value| {
        IntegrityGuard::new(meta.clone(), serde_json::from_value(config).unwrap())
    };
    let unprotected = build(json!({
        "consequential": {"bank": ["pay"]},
        "allow_from": {"bank": {"pay": {"recipient": [{"server": "bank", "tool": "history", "pointer": "/*/recipient"}]}}},
    }));
    assert!(unprotected.is_err());
    let no_pointer = build(json!({
        "consequential": {"bank": ["pay"]},
        "protected": {"bank": {"pay": ["recipient"]}},
        "allow_from": {"bank": {"pay": {"recipient": [{"server": "bank", "tool": "history", "pointer": "recipient"}]}}},
    }));
    assert!(no_pointer.is_err());
    let no_sources = build(json!({
        "consequential": {"bank": ["pay"]},
        "protected": {"bank": {"pay": ["recipient"]}},
        "allow_from": {"bank": {"pay": {"recipient": []}}},
    }));
    assert!(no_sources.is_err(), "an argument listing no source");
    let g = guard();
    assert_eq!(g.allowlist_sources().len(), 1);
    assert_eq!(g.allowlist_sources_for("bank", "pay").len(), 1);
    assert!(g.allowlist_sources_for("bank", "history").is_empty());
}

/// `judge`, with what the guard noted of the records that admitted.
fn judge_noting(
    arguments: serde_json::Value,
    provenance: &Provenance,
) -> (GuardVerdict, Vec<String>) {
    let labels = BTreeMap::new();
    let ctx = GuardContext {
        server: "bank",
        tool: "pay",
        arguments: &arguments,
        agent_id: "planner",
        session_id: "planner",
        journal: &[],
        labels: &labels,
        money: &Default::default(),
        session_filesystem_roots: None,
        provenance,
        definition: None,
    };
    let mut admitted = Vec::new();
    let verdict = guard().check_request_noting(&ctx, &mut admitted).unwrap();
    (verdict, admitted)
}

// The guard names, per admitted argument, the record that held its value (the caller's own, or a sender's), and notes nothing for an argument it refuses or for a call no allowlist had to admit.
#[test]
fn the_admitting_record_is_noted_per_argument() {
    let both = planner(&[("planner", &[PAYEE]), ("reader", &[PAYEE])], &["reader"]);
    let (verdict, admitted) = judge_noting(json!({"recipient": PAYEE, "cc": [PAYEE]}), &both);
    assert_eq!(verdict, GuardVerdict::Allow);
    assert_eq!(
        admitted,
        vec![
            format!("/cc on {}", record("planner")),
            format!("/recipient on {}", record("planner")),
        ]
    );
    let handed = planner(&[("reader", &[PAYEE])], &["reader"]);
    let mut only_recipient = handed.clone();
    only_recipient.arguments.remove("/cc");
    let (verdict, admitted) = judge_noting(json!({"recipient": PAYEE}), &only_recipient);
    assert_eq!(verdict, GuardVerdict::Allow);
    assert_eq!(
        admitted,
        vec![format!("/recipient on {}", record("reader"))]
    );
    let (verdict, admitted) = judge_noting(
        json!({"recipient": "GB33BUKB20201555555555", "cc": [PAYEE]}),
        &handed,
    );
    assert!(refused(&verdict));
    assert!(admitted.is_empty(), "{admitted:?}");
    let mut trusted = planner(&[("planner", &[PAYEE])], &[]);
    trusted.arguments.clear();
    let (verdict, admitted) = judge_noting(json!({"recipient": PAYEE, "cc": [PAYEE]}), &trusted);
    assert_eq!(verdict, GuardVerdict::Allow);
    assert!(admitted.is_empty(), "nothing untrusted needed a record");
}

// A sender counts for an argument when what it handed over lies inside the argument (one element of a list) or holds it (the whole arguments), never for an argument that only shares a prefix of its name.
#[test]
fn a_sender_counts_for_the_argument_its_value_went_into() {
    let with_senders = |pointers: &[&str]| {
        let mut p = planner(&[("reader", &[PAYEE])], &["reader"]);
        p.senders.extend(
            pointers
                .iter()
                .map(|pointer| (pointer.to_string(), BTreeSet::from(["reader".to_string()]))),
        );
        p
    };
    let args = json!({"recipient": PAYEE, "cc": [PAYEE]});
    assert_eq!(
        judge(args.clone(), &with_senders(&["/cc/0"])),
        GuardVerdict::Allow
    );
    assert_eq!(
        judge(args.clone(), &with_senders(&[""])),
        GuardVerdict::Allow
    );
    let prefix_only = judge(args, &with_senders(&["/ccx"]));
    assert!(
        matches!(prefix_only, GuardVerdict::Deny(DenyReason::UntrustedArgument { ref argument, .. }) if argument == "/cc"),
        "{prefix_only:?}"
    );
}

// A run-time allowlist exempts exactly the argument whose value it holds: arguments built whole from one handed-over value are each judged, so a recorded `cc` does not carry an unrecorded `recipient` beside it.
#[test]
fn a_recorded_argument_shields_no_neighbour() {
    let whole = || {
        let mut p = planner(&[("reader", &[PAYEE])], &[]);
        let untrusted = BTreeSet::from(["integrity:untrusted".to_string()]);
        p.arguments = BTreeMap::from([(String::new(), untrusted)]);
        p.senders = BTreeMap::from([(String::new(), BTreeSet::from(["reader".to_string()]))]);
        p
    };
    let (verdict, admitted) = judge_noting(
        json!({"recipient": "GB33BUKB20201555555555", "cc": [PAYEE]}),
        &whole(),
    );
    assert!(
        matches!(verdict, GuardVerdict::Deny(DenyReason::UntrustedArgument { ref argument, .. }) if argument == "/recipient"),
        "{verdict:?}"
    );
    assert_eq!(admitted, vec![format!("/cc on {}", record("reader"))]);
    let (verdict, admitted) = judge_noting(json!({"recipient": PAYEE, "cc": [PAYEE]}), &whole());
    assert_eq!(verdict, GuardVerdict::Allow);
    assert_eq!(admitted.len(), 2, "{admitted:?}");
}
