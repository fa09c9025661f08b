//! The planner / quarantined-reader split at one kernel: a quarantined
//! principal refused every consequential tool, arguments judged by the
//! labels of the values they were built from, and a hand-over record that
//! admission reads (or refuses to guess).

use crate::util;

use chio_kernel::guards::GuardKind;
use chio_kernel::kernel::Kernel;
use chio_kernel::provenance::{AgentRole, ArgumentSource};
use chio_kernel::stores::{InMemoryAuthority, KernelStores};
use chio_kernel::token::ScopeGrant;
use chio_kernel::verdict::Verdict;
use serde_json::json;
use util::*;

fn kernel_with_roles(guards: Vec<chio_kernel::guards::GuardSpec>, stores: KernelStores) -> Kernel {
    let mut config = kernel_config(guards);
    config.agent_roles = [
        ("mallory".to_string(), AgentRole::Quarantined),
        ("alice".to_string(), AgentRole::Planner),
    ]
    .into_iter()
    .collect();
    Kernel::new(config, stores).expect("test kernel builds")
}

/// Mallory's call through `cap`, over the standard files.
fn as_mallory(
    kernel: &mut Kernel,
    cap: &chio_kernel::token::CapabilityToken,
    target: (&str, &str),
    arguments: serde_json::Value,
    id: &str,
) -> chio_kernel::Decision {
    decide(
        kernel,
        &standard_files(),
        "mallory",
        cap,
        target,
        arguments,
        id,
    )
}

fn bank_scope() -> Vec<ScopeGrant> {
    let mut scope = files_scope();
    scope.push(ScopeGrant::new("bank", &["pay", "balance"]));
    scope
}

/// A catalog where the files' read and the bank's balance are read-only
/// and the bank's payment acts on the open world.
fn role_catalog() -> chio_kernel::contract::ToolCatalog {
    use chio_kernel::contract::{ToolAnnotations, ToolCatalog, ToolContract};
    let contract = |name: &str, read_only_hint: bool| ToolContract {
        name: name.into(),
        description: name.into(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: ToolAnnotations {
            read_only_hint,
            open_world_hint: !read_only_hint,
            ..ToolAnnotations::default()
        },
    };
    let mut catalog = ToolCatalog::new();
    catalog.insert(
        "files".into(),
        [("read_file".to_string(), contract("read_file", true))].into(),
    );
    catalog.insert(
        "bank".into(),
        [("pay", false), ("balance", true)]
            .into_iter()
            .map(|(name, read_only)| (name.to_string(), contract(name, read_only)))
            .collect(),
    );
    catalog
}

/// [`kernel_with_roles`] over [`role_catalog`].
fn catalog_kernel_with_roles(guards: Vec<chio_kernel::guards::GuardSpec>) -> Kernel {
    let mut config = kernel_config(guards);
    config.tools = Some(role_catalog());
    config.agent_roles = [("mallory".to_string(), AgentRole::Quarantined)]
        .into_iter()
        .collect();
    Kernel::new(config, KernelStores::in_memory()).expect("test kernel builds")
}

// Beside a forbidden-path guard alone, a quarantined reader is refused the payment (it acts) and admitted the read, as beside an integrity guard listing the payment; an integrity guard listing the read refuses it too, and one listing only the read still refuses the payment, which reaches an open world whatever a guard lists.
#[test]
fn other_guards_do_not_decide_what_is_consequential() {
    let cap = issue("cap-m", "mallory", bank_scope());
    let dotfiles = || {
        guard(
            "env",
            GuardKind::ForbiddenPath,
            json!({"globs": ["**/.env"]}),
        )
    };
    let integrity = |listed: serde_json::Value| {
        guard(
            "integrity",
            GuardKind::Integrity,
            json!({ "consequential": listed }),
        )
    };
    let read = ("files", "read_file");
    let file = || json!({"path": "/workspace/a.txt"});
    let cases = [
        (vec![dotfiles()], Verdict::Allow, Verdict::Deny),
        (
            vec![dotfiles(), integrity(json!({"bank": ["pay"]}))],
            Verdict::Allow,
            Verdict::Deny,
        ),
        (
            vec![integrity(json!({"files": ["read_file"]}))],
            Verdict::Deny,
            Verdict::Deny,
        ),
    ];
    for (i, (guards, read_verdict, pay_verdict)) in cases.into_iter().enumerate() {
        let mut kernel = catalog_kernel_with_roles(guards);
        let decided = as_mallory(&mut kernel, &cap, read, file(), &format!("r{i}"));
        assert_eq!(
            decided.verdict, read_verdict,
            "case {i}: {:?}",
            decided.reason
        );
        let pay = ("bank", "pay");
        let decided = as_mallory(&mut kernel, &cap, pay, json!({"to": "x"}), &format!("p{i}"));
        assert_eq!(decided.verdict, pay_verdict, "case {i}");
        if pay_verdict == Verdict::Deny {
            assert_eq!(
                decided.trace.reason_code.map(|c| c.as_str()),
                Some("quarantined-consequential")
            );
        }
    }
}

// A quarantined reader reads, but on a kernel without a catalog every tool is refused, whatever an integrity guard lists, since nothing is known to be read-only; with a catalog, exactly the tools with effects are; the principal is the signer, not the named agent.
#[test]
fn a_quarantined_reader_calls_nothing_consequential() {
    let cap = issue("cap-m", "mallory", bank_scope());
    let listing = || {
        guard(
            "integrity",
            GuardKind::Integrity,
            json!({"consequential": {"bank": ["pay"]}}),
        )
    };
    for guards in [Vec::new(), vec![listing()]] {
        let mut bare = kernel_with_roles(guards, KernelStores::in_memory());
        let read = as_mallory(
            &mut bare,
            &cap,
            ("files", "read_file"),
            json!({"path": "/workspace/a.txt"}),
            "m1",
        );
        assert_eq!(
            read.verdict,
            Verdict::Deny,
            "no catalog: nothing is known to be read-only"
        );
        assert_eq!(
            read.trace.reason_code.map(|c| c.as_str()),
            Some("quarantined-consequential")
        );
    }
    let mut guarded = catalog_kernel_with_roles(vec![listing()]);
    let read = as_mallory(
        &mut guarded,
        &cap,
        ("files", "read_file"),
        json!({"path": "/workspace/a.txt"}),
        "m2",
    );
    assert_eq!(read.verdict, Verdict::Allow);
    let balance = as_mallory(&mut guarded, &cap, ("bank", "balance"), json!({}), "m3");
    assert_eq!(balance.verdict, Verdict::Allow);
    let pay = as_mallory(
        &mut guarded,
        &cap,
        ("bank", "pay"),
        json!({"to": "x"}),
        "m4",
    );
    assert_eq!(pay.verdict, Verdict::Deny);
    assert_eq!(
        pay.reason.as_deref(),
        Some("agent mallory is a quarantined reader; tool pay on server bank is consequential")
    );
    assert_eq!(
        pay.trace.stages.last().map(|s| s.stage.as_str()),
        Some("scope")
    );
    assert!(
        pay.trace.budget_keys.is_empty(),
        "refused before any budget is held"
    );
}

fn sourced(
    agent: &str,
    cap: &chio_kernel::token::CapabilityToken,
    arguments: serde_json::Value,
    sources: Vec<ArgumentSource>,
    id: &str,
) -> chio_kernel::ToolCallRequest {
    let mut call = request(agent, cap, "bank", "pay", arguments, id);
    call.argument_sources = sources;
    call.sign(&agent_key(agent)).expect("signs")
}

// A planner's protected argument built from a hand-over recorded untrusted is refused by its pointer, its allowlisted value and a literal pass, a record never written refuses the call, and the trace shows each argument's labels; sources changed after signing break the proof.
#[test]
fn a_planners_arguments_carry_their_own_labels() {
    let files = standard_files();
    let authority = InMemoryAuthority::default();
    authority.join_label("handover/alice/hand-iban", "integrity:untrusted");
    authority.join_label("handover/alice/hand-iban", "public");
    let stores = KernelStores::new(authority);
    let guard = guard(
        "integrity",
        GuardKind::Integrity,
        json!({
            "consequential": {"bank": ["pay"]},
            "protected": {"bank": {"pay": ["to"]}},
            "allow": {"bank": {"pay": {"to": ["DE89"]}}},
        }),
    );
    let mut kernel = kernel_with_roles(vec![guard], stores);
    let cap = issue("cap-a", "alice", bank_scope());
    let from_hand_over = || {
        vec![ArgumentSource {
            pointer: "/to".to_string(),
            labels: Vec::new(),
            record: Some("handover/alice/hand-iban".to_string()),
            sender: None,
        }]
    };
    let mut world = dispatch(&files);
    let refused = kernel.evaluate(
        &sourced("alice", &cap, json!({"to": "GB33"}), from_hand_over(), "a1"),
        NOW_MS,
        &mut world,
    );
    assert_eq!(refused.verdict, Verdict::Deny);
    assert_eq!(
        refused.trace.reason_code.map(|c| c.as_str()),
        Some("untrusted-argument")
    );
    assert!(
        !refused
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("GB33"),
        "never the value"
    );
    assert_eq!(
        refused.trace.argument_labels["/to"],
        ["integrity:untrusted"]
    );
    let listed = kernel.evaluate(
        &sourced("alice", &cap, json!({"to": "DE89"}), from_hand_over(), "a2"),
        NOW_MS,
        &mut world,
    );
    assert_eq!(listed.verdict, Verdict::Allow);
    let literal = kernel.evaluate(
        &sourced("alice", &cap, json!({"to": "GB33"}), Vec::new(), "a3"),
        NOW_MS,
        &mut world,
    );
    assert_eq!(literal.verdict, Verdict::Allow);
    let unrecorded = vec![ArgumentSource {
        pointer: "/to".to_string(),
        labels: Vec::new(),
        record: Some("handover/alice/never".to_string()),
        sender: None,
    }];
    let guessed = kernel.evaluate(
        &sourced("alice", &cap, json!({"to": "DE89"}), unrecorded, "a4"),
        NOW_MS,
        &mut world,
    );
    assert_eq!(
        guessed.trace.reason_code.map(|c| c.as_str()),
        Some("argument-unrecorded")
    );
    let mut washed = sourced("alice", &cap, json!({"to": "GB33"}), from_hand_over(), "a5");
    washed.argument_sources.clear();
    let forged = kernel.evaluate(&washed, NOW_MS, &mut world);
    assert_eq!(forged.verdict, Verdict::Deny);
    assert_eq!(
        forged.trace.reason_code.map(|c| c.as_str()),
        Some("proof-invalid")
    );
}

// A kernel's catalog says which tools reach an open world: a planner's
// argument built from an untrusted hand-over is refused at such a tool,
// even one the integrity guard does not call consequential, and admitted
// at a closed-world tool of the same catalog.
#[test]
fn a_catalogs_open_world_tool_refuses_a_planners_untrusted_argument() {
    use chio_kernel::contract::{ToolAnnotations, ToolCatalog, ToolContract};
    let contract = |name: &str, open_world_hint: bool| ToolContract {
        name: name.into(),
        description: name.into(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: ToolAnnotations {
            open_world_hint,
            ..ToolAnnotations::default()
        },
    };
    let mut catalog = ToolCatalog::new();
    catalog.insert(
        "bank".into(),
        [("post", true), ("note", false)]
            .into_iter()
            .map(|(name, open)| (name.to_string(), contract(name, open)))
            .collect(),
    );
    let authority = InMemoryAuthority::default();
    authority.join_label("handover/alice/hand-text", "integrity:untrusted");
    let guard = guard(
        "integrity",
        GuardKind::Integrity,
        json!({"consequential": {"bank": ["pay"]}}),
    );
    let mut config = kernel_config(vec![guard]);
    config.tools = Some(catalog);
    config.agent_roles = [("alice".to_string(), AgentRole::Planner)]
        .into_iter()
        .collect();
    let mut kernel = Kernel::new(config, KernelStores::new(authority)).expect("builds");
    let cap = issue(
        "cap-a",
        "alice",
        vec![ScopeGrant::new("bank", &["post", "note"])],
    );
    let files = standard_files();
    let mut world = dispatch(&files);
    let mut call = |tool: &str, id: &str| {
        let mut call = request("alice", &cap, "bank", tool, json!({"text": "hi"}), id);
        call.argument_sources = vec![ArgumentSource {
            pointer: "/text".to_string(),
            labels: Vec::new(),
            record: Some("handover/alice/hand-text".to_string()),
            sender: None,
        }];
        let call = call.sign(&agent_key("alice")).expect("signs");
        kernel.evaluate(&call, NOW_MS, &mut world)
    };
    let open = call("post", "o1");
    assert_eq!(open.verdict, Verdict::Deny, "{:?}", open.reason);
    assert_eq!(
        open.trace.reason_code.map(|c| c.as_str()),
        Some("untrusted-open-world-argument")
    );
    let closed = call("note", "c1");
    assert_eq!(closed.verdict, Verdict::Allow, "{:?}", closed.reason);
}

// A run-time allowlist: a trusted listing the planner read records its recipients, and a protected argument built from an untrusted hand-over is admitted when its value is one of them, refused otherwise; before the listing is read nothing is admitted.
#[test]
fn a_recorded_listing_admits_its_own_values() {
    let files = standard_files();
    let authority = InMemoryAuthority::default();
    authority.join_label("handover/alice/hand-iban", "integrity:untrusted");
    let guard = guard(
        "integrity",
        GuardKind::Integrity,
        json!({
            "consequential": {"bank": ["pay"]},
            "protected": {"bank": {"pay": ["to"]}},
            "allow_from": {"bank": {"pay": {"to": [
                {"server": "history", "tool": "get_transactions", "pointer": "/transactions/*/recipient"}
            ]}}},
        }),
    );
    let mut kernel = kernel_with_roles(vec![guard], KernelStores::new(authority));
    let mut scope = bank_scope();
    scope.push(ScopeGrant::new("history", &["get_transactions"]));
    let cap = issue("cap-a", "alice", scope);
    let mut world = |admitted: &chio_kernel::AdmissionTicket| {
        let tool = admitted.request().tool.clone();
        let mut files_world = dispatch(&files);
        if tool == "get_transactions" {
            Ok(chio_kernel::ToolOutput {
                content: json!({"transactions": [{"recipient": "DE89"}, {"recipient": "FR76"}]}),
                label: None,
                integrity: None,
                performed: true,
                received: true,
            })
        } else {
            files_world(admitted)
        }
    };
    assert_eq!(
        pay_handed(&mut kernel, &cap, "DE89", "p0", &mut world),
        Verdict::Deny
    );
    let listing = request(
        "alice",
        &cap,
        "history",
        "get_transactions",
        json!({}),
        "read-history",
    );
    let read = kernel.evaluate(&listing, NOW_MS, &mut world);
    assert_eq!(read.verdict, Verdict::Allow);
    assert_eq!(
        pay_handed(&mut kernel, &cap, "DE89", "p1", &mut world),
        Verdict::Allow
    );
    assert_eq!(
        pay_handed(&mut kernel, &cap, "FR76", "p2", &mut world),
        Verdict::Allow
    );
    assert_eq!(
        pay_handed(&mut kernel, &cap, "GB33", "p3", &mut world),
        Verdict::Deny
    );
}

/// Alice pays `to`, the argument built from an untrusted hand-over.
fn pay_handed(
    kernel: &mut Kernel,
    cap: &chio_kernel::token::CapabilityToken,
    to: &str,
    id: &str,
    world: &mut impl FnMut(&chio_kernel::AdmissionTicket) -> Result<chio_kernel::ToolOutput, String>,
) -> Verdict {
    let handed = vec![ArgumentSource {
        pointer: "/to".to_string(),
        labels: Vec::new(),
        record: Some("handover/alice/hand-iban".to_string()),
        sender: None,
    }];
    let call = sourced("alice", cap, json!({ "to": to }), handed, id);
    kernel.evaluate(&call, NOW_MS, world).verdict
}

// Only a performed answer feeds a run-time allowlist: a listing its server answered as not carried out is released to its reader but records nothing, so a payee it names is refused; the same listing performed admits it.
#[test]
fn a_listing_not_carried_out_admits_nothing() {
    let files = standard_files();
    let authority = InMemoryAuthority::default();
    authority.join_label("handover/alice/hand-iban", "integrity:untrusted");
    let guard = guard(
        "integrity",
        GuardKind::Integrity,
        json!({
            "consequential": {"bank": ["pay"]},
            "protected": {"bank": {"pay": ["to"]}},
            "allow_from": {"bank": {"pay": {"to": [
                {"server": "history", "tool": "get_transactions", "pointer": "/transactions/*/recipient"}
            ]}}},
        }),
    );
    let mut kernel = kernel_with_roles(vec![guard], KernelStores::new(authority.clone()));
    let mut scope = bank_scope();
    scope.push(ScopeGrant::new("history", &["get_transactions"]));
    let cap = issue("cap-a", "alice", scope);
    let answering = |performed: bool| {
        let files = &files;
        move |admitted: &chio_kernel::AdmissionTicket| {
            if admitted.request().tool == "get_transactions" {
                Ok(chio_kernel::ToolOutput {
                    content: json!({"error": "history unavailable", "transactions": [{"recipient": "GB33"}]}),
                    label: None,
                    integrity: None,
                    performed,
                    received: performed,
                })
            } else {
                dispatch(files)(admitted)
            }
        }
    };
    let mut world = answering(false);
    let listing = |id: &str| request("alice", &cap, "history", "get_transactions", json!({}), id);
    let failed = kernel.evaluate(&listing("failed-history"), NOW_MS, &mut world);
    assert_eq!(failed.verdict, Verdict::Allow);
    assert!(failed.trace.not_performed);
    assert!(authority
        .labels("allowlist/alice/history/get_transactions/transactions/*/recipient")
        .is_empty());
    assert_eq!(
        pay_handed(&mut kernel, &cap, "GB33", "p1", &mut world),
        Verdict::Deny
    );
    let mut world = answering(true);
    let done = kernel.evaluate(&listing("history"), NOW_MS, &mut world);
    assert_eq!(done.verdict, Verdict::Allow);
    assert_eq!(
        pay_handed(&mut kernel, &cap, "GB33", "p2", &mut world),
        Verdict::Allow
    );
}
