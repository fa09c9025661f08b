//! Target `capability_token`: a capability token with its delegation chain,
//! decoded from JSON with the token's own closed schema, then verified by
//! `verify_capability` and, when its subject is a registered agent,
//! presented in a request that agent signs to a fresh kernel (revocation,
//! proof of possession, scope, budgets, shares, dispatch, receipt).
//!
//! Properties: nothing panics; what decodes encodes and decodes to the same
//! token; a token the world did not issue is refused by the verifier and
//! denied by the kernel, each with a reason; a token it issued verifies and
//! is allowed; every deny names its cause; every receipt the kernel signs
//! verifies.

use serde_json::{json, Value};

use chio_kernel::request::RequestProof;
use chio_kernel::verdict::Verdict;
use chio_kernel::verification::verify_capability;
use chio_kernel::{AdmissionTicket, CapabilityToken, ToolCallRequest, ToolOutput};

use crate::world::{token_world, MAX_DEPTH, NOW_MS};
use crate::Reach;

/// Runs one input (see the module doc).
pub fn capability_token(data: &[u8]) -> Reach {
    let Ok(token) = serde_json::from_slice::<CapabilityToken>(data) else {
        return Reach::Undecoded;
    };
    round_trips(&token);
    let world = token_world();
    let issued = world.issued(&token);
    let trusted = [world.issuer_hex.clone()];
    match verify_capability(&token, &trusted, NOW_MS, MAX_DEPTH, None) {
        Ok(verified) => {
            assert!(issued, "a token nobody issued verified: {}", verified.id);
        }
        Err(reason) => {
            assert!(!issued, "an issued token was refused: {reason}");
            assert!(
                !reason.to_string().is_empty(),
                "a refusal must name its cause"
            );
        }
    }
    let Some((agent, key)) = world.agent_of(&token.subject) else {
        return Reach::Refused;
    };
    let request = call_for(&token, agent);
    let Ok(request) = request.sign(key) else {
        // A token whose fields have no canonical form cannot be presented.
        assert!(!issued, "an issued token cannot be signed into a request");
        return Reach::Refused;
    };
    let mut kernel = world.kernel();
    let decision = kernel.evaluate(&request, NOW_MS, &mut dispatch);
    if let Err(error) = decision.receipt.verify() {
        panic!("the kernel signed a receipt that does not verify: {error}");
    }
    match decision.verdict {
        Verdict::Allow => {
            assert!(issued, "the kernel allowed a token nobody issued");
            Reach::Accepted
        }
        _ => {
            assert!(!issued, "an issued token was denied: {:?}", decision.reason);
            let named = decision.reason.as_deref().is_some_and(|r| !r.is_empty());
            assert!(named, "a deny must name its cause");
            Reach::Refused
        }
    }
}

/// Encodes a decoded token and decodes it again; both must succeed and
/// give the same token.
fn round_trips(token: &CapabilityToken) {
    let encoded = match serde_json::to_vec(token) {
        Ok(encoded) => encoded,
        Err(error) => panic!("a decoded token does not encode: {error}"),
    };
    match serde_json::from_slice::<CapabilityToken>(&encoded) {
        Ok(again) => assert_eq!(&again, token, "a token changed across a round trip"),
        Err(error) => panic!("an encoded token does not decode: {error}"),
    }
}

/// A call the token's first grant covers: its server, its first tool, and
/// a path under its prefix, so an issued token is allowed.
fn call_for(token: &CapabilityToken, agent: &str) -> ToolCallRequest {
    let grant = token.scope.first();
    let server = grant.map_or("files", |g| g.server.as_str());
    let tool = grant
        .and_then(|g| g.tools.first())
        .map_or("read_file", String::as_str);
    let prefix = grant.and_then(|g| g.path_prefix()).unwrap_or("/workspace/");
    ToolCallRequest {
        request_id: "rq-fuzz".into(),
        capability: token.clone(),
        server: server.to_string(),
        tool: tool.to_string(),
        arguments: json!({ "path": format!("{prefix}plan.md") }),
        agent_id: agent.to_string(),
        session_id: format!("session-{agent}"),
        issued_at_ms: NOW_MS,
        proof: RequestProof::default(),
        sealed: Vec::new(),
        argument_sources: Vec::new(),
    }
}

/// A tool world that answers every call with a fixed document.
fn dispatch(admitted: &AdmissionTicket) -> Result<ToolOutput, String> {
    let request = admitted.request();
    Ok(ToolOutput {
        content: Value::String(format!("{} of {}", request.tool, request.server)),
        label: None,
        integrity: None,
        performed: true,
        received: true,
    })
}
