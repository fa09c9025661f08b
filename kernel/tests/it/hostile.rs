//! The hostile-input suite: every case under `tests/cases/<family>/` is a
//! small world built on a valid baseline (alice holds `cap-alice`: read,
//! write and list on `files` under `/workspace/`; a `forbidden-path` guard
//! refuses `**/.ssh/**` and `**/.env`; delegation depth limit 3). A case adds
//! grants and delegations, applies mutations to signed material after
//! signing (signatures stay real), revokes ids, swaps in a failing store,
//! and runs calls that each name the verdict and exact reason they expect.
//! Positive controls in the same folders must be allowed.

use crate::util;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use chio_kernel::keys::derive_arena_key;
use chio_kernel::request::RequestProof;
use chio_kernel::stores::{InMemoryAuthority, KernelStores};
use chio_kernel::token::{Attenuation, ScopeGrant, FULL_SHARE_BPS};
use chio_kernel::{CapabilityToken, Kernel, StoreName, Verdict};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use util::*;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    description: String,
    #[serde(default)]
    grants: Vec<GrantSpec>,
    #[serde(default)]
    delegations: Vec<DelegationSpec>,
    #[serde(default)]
    tamper: Vec<Tamper>,
    #[serde(default)]
    revoke: Vec<String>,
    #[serde(default)]
    failing_store: Option<String>,
    #[serde(default)]
    trusted_issuers: Option<Vec<String>>,
    calls: Vec<Call>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrantSpec {
    name: String,
    id: String,
    to: String,
    #[serde(default)]
    issuer: Option<String>,
    #[serde(default = "files")]
    server: String,
    tools: Vec<String>,
    #[serde(default)]
    path_prefix: Option<String>,
    #[serde(default)]
    constraints: Map<String, Value>,
    #[serde(default)]
    share_bps: Option<u32>,
    /// The grant's invocation budget (100 when absent).
    #[serde(default)]
    max_invocations: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DelegationSpec {
    name: String,
    parent: String,
    by: String,
    to: String,
    child_id: String,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    path_prefix: Option<String>,
    #[serde(default)]
    expires_offset_secs: Option<i64>,
    #[serde(default)]
    share_bps: Option<u32>,
    #[serde(default)]
    max_invocations: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tamper {
    capability: String,
    op: String,
    field: String,
    #[serde(default)]
    link: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    #[serde(rename = "as")]
    agent: String,
    #[serde(default)]
    signer: Option<String>,
    capability: String,
    #[serde(default = "files")]
    server: String,
    #[serde(default = "read_file")]
    tool: String,
    arguments: Value,
    #[serde(default)]
    request_id: Option<String>,
    #[serde(default)]
    clock_offset_secs: i64,
    /// Extra milliseconds on top of `clock_offset_secs`, for cases at the
    /// exact edge of a validity window.
    #[serde(default)]
    clock_offset_ms: i64,
    #[serde(default)]
    proof: Option<String>,
    expect: String,
    #[serde(default)]
    expect_reason: Option<String>,
    #[serde(default)]
    expect_reason_prefix: Option<String>,
}

fn files() -> String {
    "files".into()
}

fn read_file() -> String {
    "read_file".into()
}

fn flip_bit(hex_text: &str) -> String {
    let mut bytes = hex::decode(hex_text).expect("signature hex");
    bytes[10] ^= 0x01;
    hex::encode(bytes)
}

fn apply_tamper(token: &mut CapabilityToken, t: &Tamper) {
    match (t.op.as_str(), t.field.as_str()) {
        ("mutate_field", "id") => token.id.push('x'),
        ("mutate_field", "subject") => token.subject = agent_pk("mallory"),
        ("mutate_field", "scope") => token.scope[0].tools.push("delete_file".into()),
        ("mutate_field", "not_before_ms") => token.not_before_ms -= 1,
        ("mutate_field", "expires_at_ms") => token.expires_at_ms += 1,
        ("mutate_field", "max_invocations") => {
            token.max_invocations = token.max_invocations.map(|m| m + 1)
        }
        ("mutate_field", "share_bps") => token.share_bps -= 1,
        ("mutate_field", "root.expires_at_ms") => {
            token.root.as_mut().expect("delegated token").expires_at_ms += 1
        }
        ("mutate_field", "link.attenuation") => {
            token.delegation_chain[t.link.unwrap_or(0)]
                .attenuation
                .expires_at_ms -= 1
        }
        ("mutate_field", "link.delegatee") => {
            token.delegation_chain[t.link.unwrap_or(0)].delegatee = agent_pk("mallory")
        }
        ("mutate_field", "link.timestamp_ms") => {
            token.delegation_chain[t.link.unwrap_or(0)].timestamp_ms -= 1
        }
        ("flip_signature_bit", "signature") => token.signature = flip_bit(&token.signature),
        ("flip_signature_bit", "link.signature") => {
            let link = &mut token.delegation_chain[t.link.unwrap_or(0)];
            link.signature = flip_bit(&link.signature);
        }
        ("truncate_signature", "signature") => token.signature.truncate(126),
        ("truncate_signature", "link.signature") => token.delegation_chain[t.link.unwrap_or(0)]
            .signature
            .truncate(126),
        other => panic!("unknown tamper {other:?}"),
    }
}

fn build_caps(case: &Case) -> BTreeMap<String, CapabilityToken> {
    let mut caps = BTreeMap::new();
    caps.insert(
        "alice-root".to_string(),
        issue("cap-alice", "alice", files_scope()),
    );
    for g in &case.grants {
        let issuer = derive_arena_key(SEED, "authority", g.issuer.as_deref().unwrap_or("root"));
        let tools: Vec<&str> = g.tools.iter().map(String::as_str).collect();
        let mut grant = ScopeGrant::new(&g.server, &tools);
        if let Some(p) = &g.path_prefix {
            grant = grant.with_path_prefix(p);
        }
        for (k, v) in &g.constraints {
            grant = grant.with_constraint(k, v.clone());
        }
        let cap = issue_with(
            &g.id,
            &g.to,
            vec![grant],
            &issuer,
            Some(g.max_invocations.unwrap_or(100)),
            g.share_bps.unwrap_or(FULL_SHARE_BPS),
        );
        caps.insert(g.name.clone(), cap);
    }
    for d in &case.delegations {
        let parent = caps
            .get(&d.parent)
            .unwrap_or_else(|| panic!("no capability {}", d.parent));
        let att = Attenuation {
            tools: d.tools.clone(),
            path_prefix: d.path_prefix.clone(),
            not_before_ms: None,
            expires_at_ms: d
                .expires_offset_secs
                .map(|o| (parent.expires_at_ms as i64 + o * 1000) as u64),
            max_invocations: d.max_invocations,
            share_bps: d.share_bps,
            monetary: None,
        };
        let child = parent
            .delegate(
                &agent_key(&d.by),
                &agent_pk(&d.to),
                &att,
                &d.child_id,
                NOW_MS - 1000,
            )
            .expect("delegation signs");
        caps.insert(d.name.clone(), child);
    }
    for t in &case.tamper {
        let cap = caps
            .get_mut(&t.capability)
            .expect("tampered capability exists");
        apply_tamper(cap, t);
    }
    caps
}

fn build_kernel(case: &Case) -> Kernel {
    let mut config = kernel_config(vec![guard(
        "no-secrets-on-disk",
        chio_kernel::guards::GuardKind::ForbiddenPath,
        json!({"globs": ["**/.ssh/**", "**/.env"]}),
    )]);
    if let Some(names) = &case.trusted_issuers {
        config.trusted_issuers = names
            .iter()
            .map(|n| chio_kernel::keys::public_key_hex(&derive_arena_key(SEED, "authority", n)))
            .collect();
    }
    let authority = InMemoryAuthority::default();
    for id in &case.revoke {
        authority.revoke(id, 0);
    }
    let failing =
        |store, cause| KernelStores::new(FailingStore::new(store, cause, authority.clone()));
    let stores = match case.failing_store.as_deref() {
        None => KernelStores::new(authority.clone()),
        Some("revocation") => failing(StoreName::Revocation, "connection refused"),
        Some("budget") => failing(StoreName::Budget, "deadline exceeded"),
        Some("nonce") => failing(StoreName::Nonce, "disk full"),
        Some(other) => panic!("unknown failing store {other}"),
    };
    Kernel::new(config, stores).expect("case kernel builds")
}

fn run_case(path: &Path) -> Result<usize, String> {
    let text = fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case: Case = serde_json::from_str(&text).map_err(|e| format!("parse: {e}"))?;
    let caps = build_caps(&case);
    let mut kernel = build_kernel(&case);
    let files = standard_files();
    let mut dispatch = dispatch(&files);
    for (i, call) in case.calls.iter().enumerate() {
        let cap = caps
            .get(&call.capability)
            .ok_or_else(|| format!("no capability {}", call.capability))?;
        let rid = call
            .request_id
            .clone()
            .unwrap_or_else(|| format!("req-{i}"));
        let signer = call.signer.as_deref().unwrap_or(&call.agent);
        let mut req = request_by(
            signer,
            &call.agent,
            cap,
            &call.server,
            &call.tool,
            call.arguments.clone(),
            &rid,
        );
        match call.proof.as_deref() {
            None => {}
            Some("missing") => req.proof = RequestProof::default(),
            Some("signature_missing") => req.proof.signature.clear(),
            Some("signer_missing") => req.proof.signer.clear(),
            Some("tampered_arguments") => req.arguments = json!({"path": "/workspace/a.txt"}),
            Some(other) => return Err(format!("unknown proof mode {other}")),
        }
        let now_ms =
            ((NOW_SECS as i64 + call.clock_offset_secs) * 1000 + call.clock_offset_ms) as u64;
        let decision = kernel.evaluate(&req, now_ms, &mut dispatch);
        decision
            .receipt
            .verify()
            .map_err(|e| format!("call {i}: receipt does not verify: {e}"))?;
        let reason = decision.reason.clone().unwrap_or_default();
        match call.expect.as_str() {
            "allow" => {
                if decision.verdict != Verdict::Allow {
                    return Err(format!(
                        "call {i}: expected allow, got {:?}: {reason}",
                        decision.verdict
                    ));
                }
            }
            "deny" => {
                if decision.verdict != Verdict::Deny {
                    return Err(format!(
                        "call {i}: expected deny, got {:?}",
                        decision.verdict
                    ));
                }
                if let Some(exact) = &call.expect_reason {
                    if &reason != exact {
                        return Err(format!("call {i}: reason {reason:?}, expected {exact:?}"));
                    }
                } else if let Some(prefix) = &call.expect_reason_prefix {
                    if !reason.starts_with(prefix.as_str()) {
                        return Err(format!(
                            "call {i}: reason {reason:?}, expected prefix {prefix:?}"
                        ));
                    }
                } else {
                    return Err(format!("call {i}: a deny case must name its reason"));
                }
            }
            other => return Err(format!("call {i}: unknown expectation {other}")),
        }
    }
    if case.description.is_empty() {
        return Err("case has no description".into());
    }
    Ok(case.calls.len())
}

// Every hostile case is denied with its exact reason and every positive control is allowed.
#[test]
fn hostile_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut families = 0;
    let mut cases = 0;
    let mut denies = 0;
    let mut allows = 0;
    let mut failures = Vec::new();
    let mut dirs: Vec<_> = fs::read_dir(&root)
        .expect("cases folder")
        .flatten()
        .collect();
    dirs.sort_by_key(|d| d.path());
    for family in dirs {
        families += 1;
        let mut files: Vec<_> = fs::read_dir(family.path())
            .expect("family folder")
            .flatten()
            .collect();
        files.sort_by_key(|f| f.path());
        for file in files {
            cases += 1;
            let text = fs::read_to_string(file.path()).expect("case file");
            denies += text.matches("\"expect\": \"deny\"").count();
            allows += text.matches("\"expect\": \"allow\"").count();
            if let Err(e) = run_case(&file.path()) {
                failures.push(format!("{}: {e}", file.path().display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "failing cases:\n{}",
        failures.join("\n")
    );
    assert!(families >= 15, "only {families} families");
    assert!(cases >= 30, "only {cases} cases");
    assert!(allows >= 5, "only {allows} positive controls");
    assert!(denies >= 30, "only {denies} denials");
}

// A sealed argument quoted by an observe-mode guard's finding stays out of
// the signed receipt: the finding is kept, its reason scrubbed.
#[test]
fn a_sealed_argument_never_reaches_an_observed_finding() {
    use chio_kernel::guards::{GuardKind, GuardMode};
    let cap = issue("cap-alice", "alice", files_scope());
    let mut spec = guard(
        "env",
        GuardKind::ForbiddenPath,
        json!({"globs": ["**/plan.md"]}),
    );
    spec.mode = GuardMode::Observe;
    let mut k = kernel(vec![spec]);
    let path = "/workspace/shared/plan.md";
    let mut call = request(
        "alice",
        &cap,
        "files",
        "read_file",
        json!({"path": path}),
        "r1",
    );
    call.sealed = vec!["/path".to_string()];
    let call = call.sign(&agent_key("alice")).expect("signs");
    let files = standard_files();
    let d = k.evaluate(&call, NOW_MS, &mut dispatch(&files));
    assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reason);
    assert_eq!(d.receipt.body.observed.len(), 1);
    let reason = &d.receipt.body.observed[0].reason;
    assert!(reason.contains("<sealed>"), "{reason}");
    assert!(!reason.contains("shared/pl"), "{reason}");
    d.receipt.verify().expect("the scrubbed receipt verifies");
}
