//! The grants the arena authority issues at the clock's start: one token
//! per `[[grants]]` entry, signed for its agent's key, with its window,
//! budget, share and constraints (a path prefix, the digests of the tool
//! definitions a definition-pinning grant binds, and a monetary limit).

use std::collections::BTreeMap;

use chio_arena::Scenario;
use chio_kernel::token::{
    CapabilityBody, CapabilityToken, ScopeGrant, ANY_TOOL, CAPABILITY_SCHEMA,
};
use ed25519_dalek::SigningKey;

use super::AgentKeys;
use crate::error::NodeError;

/// Every grant as a token the authority issues to its agent's key, its
/// window counted from the clock's start.
pub(super) fn issue_grants(
    scenario: &Scenario,
    start_ms: u64,
    authority: &SigningKey,
    authority_hex: &str,
    agent_keys: &AgentKeys,
) -> Result<BTreeMap<String, (String, CapabilityToken)>, NodeError> {
    let file = scenario.file();
    let mut grants = BTreeMap::new();
    for grant in &file.grants {
        let subject = agent_keys.get(&grant.agent).ok_or_else(|| {
            NodeError::Scenario(format!("grant {} names unknown agent", grant.id))
        })?;
        let tools: Vec<&str> = grant.tools.iter().map(String::as_str).collect();
        let mut scope = ScopeGrant::new(&grant.server, &tools);
        if let Some(prefix) = &grant.path_prefix {
            scope = scope.with_path_prefix(prefix);
        }
        if grant.pin_definitions == Some(true) {
            scope = scope.with_constraint("tool_digests", pinned_digests(file, grant)?);
        }
        if let Some(decl) = &grant.monetary {
            let limit = decl.to_limit().ok_or_else(|| {
                NodeError::Scenario(format!("grant {} has a malformed monetary limit", grant.id))
            })?;
            scope = scope.with_constraint("monetary", limit.to_constraint());
        }
        let body = CapabilityBody {
            schema: CAPABILITY_SCHEMA.to_string(),
            id: grant.id.clone(),
            issuer: authority_hex.to_string(),
            subject: subject.clone(),
            scope: vec![scope],
            not_before_ms: start_ms.saturating_add(grant.not_before()),
            expires_at_ms: start_ms.saturating_add(grant.expires_after()),
            max_invocations: grant.max_invocations,
            share_bps: u32::try_from(grant.share()).map_err(|_| {
                NodeError::Scenario(format!("grant {} share_bps out of range", grant.id))
            })?,
        };
        let token = CapabilityToken::issue(body, authority)?;
        grants.insert(grant.id.clone(), (grant.agent.clone(), token));
    }

    Ok(grants)
}

/// The digests a definition-pinning grant binds: each tool it covers (every
/// tool its server declares, for `*`), as the server declares it at the
/// clock's start.
fn pinned_digests(
    file: &chio_arena::model::ScenarioFile,
    grant: &chio_arena::model::GrantDecl,
) -> Result<serde_json::Value, NodeError> {
    let server = file
        .servers
        .iter()
        .find(|s| s.id == grant.server)
        .ok_or_else(|| NodeError::Scenario(format!("grant {} names unknown server", grant.id)))?;
    let tools = chio_arena::scenario::tools::server_tools(server)
        .ok_or_else(|| NodeError::Scenario(format!("server {} has no known kind", server.id)))?;
    let mut pins = serde_json::Map::new();
    for tool in tools
        .iter()
        .filter(|t| grant.tools.iter().any(|g| g == &t.name || g == ANY_TOOL))
    {
        let digest = tool
            .digest()
            .map_err(|_| NodeError::Scenario(format!("tool {} has no digest", tool.name)))?;
        pins.insert(tool.name.clone(), serde_json::Value::String(digest));
    }
    Ok(serde_json::Value::Object(pins))
}
