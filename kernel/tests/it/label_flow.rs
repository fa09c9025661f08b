//! Labels that travel without a read: the delegation record (what a
//! delegator held when it delegated, read for every link of a presented
//! chain, with its explicit relaxation and the fallback for a link signed
//! outside the run) and the message carry; and the decision trace that
//! records what each decision read.

use crate::util;

use std::collections::BTreeMap;

use chio_kernel::guards::GuardKind;
use chio_kernel::label::{delegation_record_id, LabelCarry};
use chio_kernel::token::{Attenuation, CapabilityToken, ScopeGrant};
use chio_kernel::{Kernel, Verdict};
use serde_json::json;
use util::*;

fn files() -> BTreeMap<String, (String, Option<String>)> {
    let mut files = standard_files();
    files.insert(
        "/workspace/internal/roadmap.md".into(),
        ("Q3: acquire competitor".into(), Some("internal".into())),
    );
    files
}

fn flow_kernel(carry: bool) -> Kernel {
    kernel(vec![guard(
        "flow",
        GuardKind::InformationFlow,
        json!({"clearance": {"publish": "public"}, "carry_delegator_labels": carry}),
    )])
}

/// Alice's two root grants: one to read files, one to post.
fn alice_caps() -> (CapabilityToken, CapabilityToken) {
    let read = issue(
        "alice-files",
        "alice",
        vec![ScopeGrant::new("files", &["read_file"]).with_path_prefix("/workspace/")],
    );
    let post = issue(
        "alice-post",
        "alice",
        vec![ScopeGrant::new("publish", &["post"])],
    );
    (read, post)
}

fn delegate_post(post: &CapabilityToken) -> CapabilityToken {
    post.delegate(
        &agent_key("alice"),
        &agent_pk("bob"),
        &Attenuation::default(),
        "bob-post",
        NOW_MS,
    )
    .unwrap()
}

fn alice_reads_internal(k: &mut Kernel, read: &CapabilityToken) {
    let d = k.evaluate(
        &request(
            "alice",
            read,
            "files",
            "read_file",
            json!({"path": "/workspace/internal/roadmap.md"}),
            "alice-read",
        ),
        NOW_MS,
        &mut dispatch(&files()),
    );
    assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reason);
    assert_eq!(d.trace.output_label.as_deref(), Some("internal"));
}

fn bob_posts(k: &mut Kernel, cap: &CapabilityToken, id: &str) -> chio_kernel::Decision {
    k.evaluate(
        &request("bob", cap, "publish", "post", json!({"text": "hi"}), id),
        NOW_MS + 10,
        &mut dispatch(&files()),
    )
}

/// The label move that records alice's delegation of `child`.
fn record_of(child: &CapabilityToken) -> LabelCarry {
    LabelCarry::delegation("alice", child.delegation_chain.last().unwrap()).unwrap()
}

/// The label key `child`'s record is kept under.
fn record_key(child: &CapabilityToken) -> String {
    format!(
        "delegation/{}",
        delegation_record_id(child.delegation_chain.last().unwrap()).unwrap()
    )
}

fn record(k: &mut Kernel, carry: LabelCarry) -> Vec<String> {
    let carried = carry.apply(&mut *k.stores_mut().authority).unwrap();
    carry.reported(&carried)
}

// A capability delegated by a tainted principal carries the delegator's labels to the delegatee's post, named by the link's record.
#[test]
fn delegation_record_carries_the_delegators_labels() {
    let (read, post) = alice_caps();
    let mut k = flow_kernel(true);
    alice_reads_internal(&mut k, &read);
    let child = delegate_post(&post);
    let kept = record(&mut k, record_of(&child));
    assert_eq!(kept, ["internal"]);
    let d = bob_posts(&mut k, &child, "bob-1");
    assert_eq!(d.verdict, Verdict::Deny);
    assert_eq!(
        d.reason.as_deref(),
        Some("information flow: retained label internal (delegation/bob-post) exceeds the clearance public of server publish")
    );
    assert_eq!(
        d.trace.label_keys.get(&record_key(&child)),
        Some(&vec!["internal".to_string(), "public".to_string()])
    );
    assert_eq!(d.trace.label_keys.get("principal/bob"), Some(&Vec::new()));
}

// `carry_delegator_labels = false` is the explicit relaxation: the same delegated post is admitted, though the record was read.
#[test]
fn the_relaxation_ignores_delegation_records() {
    let (read, post) = alice_caps();
    let mut k = flow_kernel(false);
    alice_reads_internal(&mut k, &read);
    let child = delegate_post(&post);
    record(&mut k, record_of(&child));
    let d = bob_posts(&mut k, &child, "bob-1");
    assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reason);
    assert!(d.trace.label_keys.contains_key(&record_key(&child)));
}

// A link signed outside the run has no record, so admission reads its delegator's principal labels now: it carries no less taint.
#[test]
fn a_link_without_a_record_falls_back_to_the_delegator() {
    let (read, post) = alice_caps();
    let mut k = flow_kernel(true);
    alice_reads_internal(&mut k, &read);
    let child = delegate_post(&post);
    let d = bob_posts(&mut k, &child, "bob-1");
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(
        d.reason
            .as_deref()
            .unwrap()
            .contains("(delegation/bob-post)"),
        "{:?}",
        d.reason
    );
    assert_eq!(
        d.trace.label_keys.get(&record_key(&child)),
        Some(&Vec::new())
    );
    assert_eq!(
        d.trace.label_keys.get("principal/alice"),
        Some(&vec!["internal".to_string()])
    );
}

// The record is what the delegator held at the time of delegation: taint it acquires afterwards does not reach the delegatee.
#[test]
fn the_record_is_taken_at_the_time_of_delegation() {
    let (read, post) = alice_caps();
    let mut k = flow_kernel(true);
    let child = delegate_post(&post);
    assert!(record(&mut k, record_of(&child)).is_empty());
    alice_reads_internal(&mut k, &read);
    let d = bob_posts(&mut k, &child, "bob-1");
    assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reason);
}

// A link signed outside the run that reuses the child id of a clean record finds no record of its own, so it carries its delegator's labels.
#[test]
fn a_reused_child_id_does_not_borrow_a_clean_record() {
    let (read, post) = alice_caps();
    let mut k = flow_kernel(true);
    let clean = delegate_post(&post);
    assert!(record(&mut k, record_of(&clean)).is_empty());
    alice_reads_internal(&mut k, &read);
    // Tainted now, alice signs another link with the same child id by hand.
    let forged = post
        .delegate(
            &agent_key("alice"),
            &agent_pk("bob"),
            &Attenuation::default(),
            "bob-post",
            NOW_MS + 5,
        )
        .unwrap();
    assert_eq!(bob_posts(&mut k, &clean, "bob-0").verdict, Verdict::Allow);
    let d = bob_posts(&mut k, &forged, "bob-1");
    assert_eq!(d.verdict, Verdict::Deny);
    assert!(
        d.reason
            .as_deref()
            .unwrap()
            .contains("(delegation/bob-post)"),
        "{:?}",
        d.reason
    );
}

// A message from a tainted sender joins its labels into the receiver's principal and session, so the receiver's own post is refused.
#[test]
fn a_message_taints_the_receiver() {
    let (read, _) = alice_caps();
    let bob_post = issue(
        "bob-own-post",
        "bob",
        vec![ScopeGrant::new("publish", &["post"])],
    );
    let mut k = flow_kernel(true);
    assert_eq!(
        bob_posts(&mut k, &bob_post, "bob-0").verdict,
        Verdict::Allow
    );
    alice_reads_internal(&mut k, &read);
    let sent = record(
        &mut k,
        LabelCarry::message("alice", "bob", "session-bob", Some("internal")),
    );
    assert_eq!(sent, ["internal"]);
    let d = bob_posts(&mut k, &bob_post, "bob-1");
    assert_eq!(
        d.reason.as_deref(),
        Some("information flow: retained label internal (session/session-bob) exceeds the clearance public of server publish")
    );
    // An untainted sender's literal message carries nothing.
    let carol = LabelCarry::message("carol", "dave", "session-dave", None);
    assert!(record(&mut k, carol).is_empty());
}

// The trace names the stages reached in order, every label key read, and what became of each budget hold.
#[test]
fn the_trace_records_what_the_decision_read() {
    let (read, _) = alice_caps();
    let mut k = flow_kernel(true);
    let out_of_scope = k.evaluate(
        &request(
            "alice",
            &read,
            "files",
            "delete_file",
            json!({"path": "/workspace/notes.txt"}),
            "r0",
        ),
        NOW_MS,
        &mut dispatch(&files()),
    );
    let stages: Vec<(&str, &str)> = out_of_scope
        .trace
        .stages
        .iter()
        .map(|s| (s.stage.as_str(), s.outcome.as_str()))
        .collect();
    assert_eq!(
        stages,
        [
            ("capability", "pass"),
            ("revocation", "pass"),
            ("binding", "pass"),
            ("scope", "deny")
        ]
    );
    assert!(
        out_of_scope.trace.label_keys.is_empty(),
        "guards not reached"
    );
    let allowed = k.evaluate(
        &request(
            "alice",
            &read,
            "files",
            "read_file",
            json!({"path": "/workspace/notes.txt"}),
            "r1",
        ),
        NOW_MS,
        &mut dispatch(&files()),
    );
    assert_eq!(allowed.trace.stages.len(), 8);
    assert_eq!(allowed.trace.stages[7].outcome, "pass");
    assert_eq!(allowed.trace.principal.as_deref(), Some("alice"));
    assert_eq!(allowed.trace.chain, ["alice-files"]);
    let keys: Vec<&str> = allowed
        .trace
        .label_keys
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "lineage/alice-files",
            "principal/alice",
            "session/session-alice"
        ]
    );
    let budget = &allowed.trace.budget_keys[0];
    assert_eq!(budget.key, "invocations/alice-files");
    assert_eq!(budget.settled.as_deref(), Some("committed"));
    assert_eq!(allowed.trace.guards[0].answer, "allow");
}

// Sibling shares are read after the guards when the guards had labels to
// read: under a label-reading guard, with labels retained for the callers,
// a child's share that no longer fits beside its admitted sibling's is
// still refused.
#[test]
fn shares_read_after_non_empty_labels_still_refuse() {
    use chio_kernel::stores::{InMemoryAuthority, KernelStores};
    let cap = issue("cap-alice", "alice", files_scope());
    let child = |agent: &str, bps: u32| {
        let attenuation = Attenuation {
            tools: Some(vec!["read_file".into()]),
            share_bps: Some(bps),
            ..Default::default()
        };
        let id = format!("cap-{agent}");
        cap.delegate(
            &agent_key("alice"),
            &agent_pk(agent),
            &attenuation,
            &id,
            NOW_MS,
        )
        .unwrap()
    };
    let (bob, carol) = (child("bob", 6000), child("carol", 5000));
    let authority = InMemoryAuthority::default();
    authority.join_label("principal/bob", "internal");
    authority.join_label("principal/carol", "internal");
    let guards = vec![guard(
        "flow",
        GuardKind::InformationFlow,
        json!({"clearance": {"publish": "public"}}),
    )];
    let mut k = Kernel::new(kernel_config(guards), KernelStores::new(authority)).unwrap();
    let files = files();
    let notes = json!({"path": "/workspace/notes.txt"});
    let first = decide(
        &mut k,
        &files,
        "carol",
        &carol,
        ("files", "read_file"),
        notes.clone(),
        "c1",
    );
    assert_eq!(first.verdict, Verdict::Allow, "{:?}", first.reason);
    assert!(!first.trace.label_keys.is_empty(), "the guard read labels");
    let late = decide(
        &mut k,
        &files,
        "bob",
        &bob,
        ("files", "read_file"),
        notes,
        "b1",
    );
    assert_eq!(
        late.reason.as_deref(),
        Some("sibling shares oversubscribed: child cap-bob asks 6000 bps, admitted siblings hold 5000 of parent cap-alice's 10000 bps")
    );
}
