//! What the kernel answers beside `evaluate`: its identity (id and receipt
//! key) and its `Debug` form, which name the public key and never the
//! secret; the signature cache's hit count; and the revocation check a
//! listing of a capability's tools runs before it shows any.

use crate::util;

use chio_kernel::keys::public_key_hex;
use chio_kernel::stores::{InMemoryAuthority, KernelStores};
use chio_kernel::token::Attenuation;
use chio_kernel::verification::verify_capability;
use chio_kernel::Kernel;
use chio_kernel::{KernelConfig, StoreName};
use serde_json::json;
use util::*;

fn secret_hex(config: &KernelConfig) -> String {
    config
        .signing_key
        .to_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// The kernel's id and receipt key are the configured ones; its Debug form and its configuration's name both and never the signing key's secret bytes.
#[test]
fn identity_and_debug_name_the_public_key_never_the_secret() {
    let config = kernel_config(vec![]);
    let public = public_key_hex(&config.signing_key);
    let secret = secret_hex(&config);
    let shown_config = format!("{config:?}");
    let kernel = Kernel::new(config, KernelStores::in_memory()).expect("kernel builds");
    assert_eq!(kernel.kernel_id(), "kernel-a");
    assert_eq!(kernel.public_key_hex(), public);
    let shown = format!("{kernel:?}");
    for text in [&shown, &shown_config] {
        assert!(text.contains("kernel-a"), "{text}");
        assert!(text.contains(&public), "{text}");
        assert!(!text.contains(&secret), "the secret key is shown: {text}");
    }
}

// A second call presenting the same capability is answered from the signature cache; the count starts at zero.
#[test]
fn the_signature_cache_counts_its_hits() {
    let mut k = kernel(vec![]);
    let files = standard_files();
    let cap = issue("cap-alice", "alice", files_scope());
    assert_eq!(k.signature_cache_hits(), 0);
    let read = json!({ "path": "/workspace/notes.txt" });
    let first = request("alice", &cap, "files", "read_file", read.clone(), "c-1");
    k.evaluate(&first, NOW_MS, &mut dispatch(&files));
    let before = k.signature_cache_hits();
    let second = request("alice", &cap, "files", "read_file", read, "c-2");
    k.evaluate(&second, NOW_MS, &mut dispatch(&files));
    assert!(
        k.signature_cache_hits() > before,
        "the second call's chain was verified again"
    );
}

// The listing's revocation check refuses a revoked capability and a delegation under a revoked ancestor, with admission's reasons, passes an unrevoked one, and denies when the revocation store cannot answer.
#[test]
fn the_listing_check_refuses_revoked_lineages() {
    let root = issue("cap-alice", "alice", files_scope());
    let child = root
        .delegate(
            &agent_key("alice"),
            &agent_pk("bob"),
            &Attenuation::default(),
            "cap-bob",
            NOW_MS - 1000,
        )
        .unwrap();
    let trusted = [authority_pk()];
    let verified = |token| verify_capability(token, &trusted, NOW_MS, 3, None).expect("verifies");
    let kernel_over = |stores| Kernel::new(kernel_config(vec![]), stores).expect("kernel builds");

    let authority = InMemoryAuthority::default();
    let mut k = kernel_over(KernelStores::new(authority.clone()));
    assert!(k.check_revocation(&verified(&root)).is_ok());
    assert!(k.check_revocation(&verified(&child)).is_ok());
    authority.revoke("cap-alice", 0);
    let own = k.check_revocation(&verified(&root)).unwrap_err();
    assert_eq!(own.to_string(), "capability has been revoked: cap-alice");
    let ancestor = k.check_revocation(&verified(&child)).unwrap_err();
    assert_eq!(
        ancestor.to_string(),
        "delegation chain revoked at ancestor cap-alice"
    );

    let mut down = kernel_over(KernelStores::new(FailingStore::new(
        StoreName::Revocation,
        "connection refused",
        InMemoryAuthority::default(),
    )));
    let refused = down.check_revocation(&verified(&root)).unwrap_err();
    assert!(
        refused.to_string().contains("connection refused"),
        "{refused}"
    );
}
