//! A caller named by its own key (`Kernel::register_key_agent`, how the MCP
//! edge meets its callers): its proof binds it like a configured agent, a
//! thief presenting another key's capability under its own key is refused,
//! a configured agent keeps its configured key, and a text that is not a
//! lowercase public key registers nothing.

use crate::util;

use serde_json::json;
use util::*;

// A key-named caller is admitted with its own capability and refused with another key's; re-registering changes nothing.
#[test]
fn a_key_named_caller_binds_to_its_key_only() {
    let mut kernel = kernel(vec![]);
    let files = standard_files();
    let alice = agent_pk("alice");
    let mallory = agent_pk("mallory");
    let cap = issue("cap-key", "alice", files_scope());
    let args = json!({ "path": "/workspace/notes.txt" });
    let unregistered = request_by(
        "alice",
        &alice,
        &cap,
        "files",
        "read_file",
        args.clone(),
        "k-0",
    );
    let refused = kernel.evaluate(&unregistered, NOW_MS, &mut dispatch(&files));
    assert_eq!(
        refused.projected().to_string(),
        "deny",
        "{:?}",
        refused.reason
    );

    kernel.register_key_agent(&alice).unwrap();
    kernel.register_key_agent(&alice).unwrap();
    let own = request_by(
        "alice",
        &alice,
        &cap,
        "files",
        "read_file",
        args.clone(),
        "k-1",
    );
    let admitted = kernel.evaluate(&own, NOW_MS, &mut dispatch(&files));
    assert_eq!(
        admitted.projected().to_string(),
        "allow",
        "{:?}",
        admitted.reason
    );
    assert_eq!(admitted.receipt.body.agent_id, alice);

    kernel.register_key_agent(&mallory).unwrap();
    let stolen = request_by("mallory", &mallory, &cap, "files", "read_file", args, "k-2");
    let denied = kernel.evaluate(&stolen, NOW_MS, &mut dispatch(&files));
    assert_eq!(denied.projected().to_string(), "deny");
    assert!(
        denied
            .reason
            .as_deref()
            .unwrap_or_default()
            .contains("cap-key"),
        "{:?}",
        denied.reason
    );
}

// Anything but 64 lowercase hex characters of a public key is refused and registers nothing; a configured agent's name is not rebound.
#[test]
fn only_lowercase_keys_register() {
    let mut kernel = kernel(vec![]);
    let alice = agent_pk("alice");
    for bad in ["alice", "", &alice.to_uppercase(), &alice[..62]] {
        assert!(kernel.register_key_agent(bad).is_err(), "{bad}");
    }
    let cap = issue("cap-upper", "alice", files_scope());
    let upper = alice.to_uppercase();
    let call = request_by(
        "alice",
        &upper,
        &cap,
        "files",
        "read_file",
        json!({"path": "/workspace/a.txt"}),
        "u-1",
    );
    let decision = kernel.evaluate(&call, NOW_MS, &mut dispatch(&standard_files()));
    assert_eq!(decision.projected().to_string(), "deny");
}

// A binding refusal names the keys by their first 16 hex digits, never whole: an unregistered agent with the signer's key, and a proof signed by another key with that key and the capability's subject.
#[test]
fn binding_refusals_name_keys_by_their_prefix() {
    let mut k = kernel(vec![]);
    let files = standard_files();
    let cap = issue("cap-alice", "alice", files_scope());
    let args = json!({ "path": "/workspace/notes.txt" });
    let prefix = |name: &str| agent_pk(name)[..16].to_string();
    let stranger = request_by(
        "alice",
        "zed",
        &cap,
        "files",
        "read_file",
        args.clone(),
        "b-1",
    );
    let d = k.evaluate(&stranger, NOW_MS, &mut dispatch(&files));
    assert_eq!(
        d.reason.as_deref(),
        Some(
            format!(
                "request names an agent that does not hold the proving key: agent zed is not registered with key {}",
                prefix("alice")
            )
            .as_str()
        )
    );
    let signed_by_bob = request_by("bob", "alice", &cap, "files", "read_file", args, "b-2");
    let d = k.evaluate(&signed_by_bob, NOW_MS, &mut dispatch(&files));
    assert_eq!(
        d.reason.as_deref(),
        Some(
            format!(
                "capability presented by another agent: request signed by key {}, capability cap-alice belongs to key {}",
                prefix("bob"),
                prefix("alice")
            )
            .as_str()
        )
    );
}
