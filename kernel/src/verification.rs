//! Step 1 of the pipeline: verifying a presented capability and its chain.
//!
//! Shared by the kernel and the portable evaluator so both give the same
//! reasons in the same order: schema, issuer trusted, signatures (the root
//! by the issuer, each link by its delegator, and the top-level fields equal
//! to the last link's, since only the link signs them), the validity window
//! against the injected clock, then the chain's shape: depth, continuity,
//! cycles, link dates, and attenuation of every link (scope subset, window
//! inside the parent's, budget and share no larger). The depth limit is
//! checked first of all, before any signature is verified, then every key
//! field ([`first_malformed_key`]): an issuer, a subject, a delegator or a
//! delegatee that is not the one accepted spelling of an Ed25519 key (64
//! lowercase hex characters of a curve point) is denied, since keys are
//! compared as strings from then on (a key spelt in capitals would slip
//! past the chain's key-cycle check). Times are Unix
//! milliseconds end to end: nothing is rounded toward validity. What passes is a
//! [`VerifiedCapability`] that the later steps read.

use crate::canonical::to_canonical_vec;
use crate::keys::parse_public_key_hex;
use crate::path::{is_under, normalize_path};
use crate::planted::Weakness;
use crate::reason::{DenyReason, Widening};
use crate::signature::{verify_hex, SignatureCache};
use crate::token::{
    CapabilityBody, CapabilityToken, GrantState, MonetaryLimit, ScopeGrant, ANY_TOOL,
    CAPABILITY_SCHEMA, DELEGATION_SCHEMA,
};

/// One sibling-share admission the chain requires (step 7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareClaim {
    /// The parent capability.
    pub parent_id: String,
    /// The child capability.
    pub child_id: String,
    /// The child's share.
    pub child_bps: u32,
    /// The parent's share.
    pub parent_bps: u32,
}

/// One invocation budget along the chain (step 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvocationLimit {
    /// The capability (root or delegated child) whose budget it is.
    pub capability_id: String,
    /// Its maximum number of invocations.
    pub max_invocations: u64,
}

/// A capability that passed step 1.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedCapability {
    /// The presented capability's id.
    pub id: String,
    /// Its holder (hex key).
    pub subject: String,
    /// The root capability's id (the lineage).
    pub root_id: String,
    /// Ids of the root and every intermediate capability, root first.
    pub ancestors: Vec<String>,
    /// The effective state.
    pub state: GrantState,
    /// Share admissions, root side first.
    pub shares: Vec<ShareClaim>,
    /// Invocation budgets along the chain, root first.
    pub invocation_limits: Vec<InvocationLimit>,
    /// The key (hex) of every link's delegator, root holder first: the
    /// agents who authorised a call under the capability besides its
    /// holder. Empty for a capability without links.
    pub delegators: Vec<String>,
}

/// Verifies a capability at `now_ms` (Unix milliseconds) against the trusted
/// issuer keys; answers the deny reason on failure. The checks run in the
/// order the module documents: structure and issuer, signatures, window,
/// then the chain's shape.
pub fn verify_capability(
    token: &CapabilityToken,
    trusted_issuers: &[String],
    now_ms: u64,
    max_depth: usize,
    cache: Option<&mut SignatureCache>,
) -> Result<VerifiedCapability, DenyReason> {
    if token.schema != CAPABILITY_SCHEMA {
        return Err(DenyReason::SchemaUnknown {
            schema: token.schema.clone(),
        });
    }
    // Cheap structural limits come before any signature work, so a chain
    // of thousands of links is refused without verifying one of them.
    let depth = token.delegation_chain.len();
    if depth > max_depth {
        return Err(DenyReason::DelegationTooDeep {
            depth,
            limit: max_depth,
        });
    }
    if let Some(field) = first_malformed_key(token) {
        return Err(DenyReason::KeyMalformed { field });
    }
    let root = token.root_body();
    let delegated = !token.delegation_chain.is_empty();
    if delegated != token.root.is_some() {
        return Err(if delegated {
            DenyReason::RootGrantMissing
        } else {
            DenyReason::RootGrantUnexpected
        });
    }
    if !trusted_issuers.contains(&root.issuer) {
        return Err(DenyReason::UntrustedIssuer);
    }
    verify_signatures(token, &root, cache)?;
    // Time, on the effective window.
    if now_ms < token.not_before_ms {
        return Err(DenyReason::NotYetValid);
    }
    if now_ms > token.expires_at_ms {
        return Err(DenyReason::Expired);
    }
    let chain = verify_chain(token, &root, now_ms)?;
    Ok(VerifiedCapability {
        id: token.id.clone(),
        subject: token.subject.clone(),
        root_id: root.id,
        ancestors: chain.ancestors,
        state: token.state(),
        shares: chain.shares,
        invocation_limits: chain.invocation_limits,
        delegators: chain.delegators,
    })
}

/// The path inside the capability (`subject`, `root.issuer`,
/// `delegation_chain[1].delegatee`, ...) of the first key field that is not
/// 64 lowercase hex characters of an Ed25519 public key, in the token's
/// order: the top-level issuer and subject, the root's, then each link's
/// delegator and delegatee. The one check of a key's spelling that the
/// kernel and the portable envelope both apply.
pub fn first_malformed_key(token: &CapabilityToken) -> Option<String> {
    let top = [("issuer", &token.issuer), ("subject", &token.subject)];
    let root = token
        .root
        .iter()
        .flat_map(|r| [("root.issuer", &r.issuer), ("root.subject", &r.subject)]);
    let named = top
        .into_iter()
        .chain(root)
        .find(|(_, key)| parse_public_key_hex(key).is_err())
        .map(|(field, _)| field.to_string());
    named.or_else(|| {
        token
            .delegation_chain
            .iter()
            .enumerate()
            .find_map(|(i, link)| {
                [
                    ("delegator", &link.delegator),
                    ("delegatee", &link.delegatee),
                ]
                .into_iter()
                .find(|(_, key)| parse_public_key_hex(key).is_err())
                .map(|(field, _)| format!("delegation_chain[{i}].{field}"))
            })
    })
}

/// Verifies the root's signature by its issuer and each link's by its
/// delegator, and that the top-level fields are what the last link signed.
fn verify_signatures(
    token: &CapabilityToken,
    root: &CapabilityBody,
    mut cache: Option<&mut SignatureCache>,
) -> Result<(), DenyReason> {
    // Signatures: root by the issuer, each link by its delegator, and the
    // top-level fields must be what the last link signed.
    if token.issuer != root.issuer || root.schema != CAPABILITY_SCHEMA {
        return Err(DenyReason::InvalidSignature);
    }
    let root_bytes = to_canonical_vec(root).map_err(|_| DenyReason::InvalidSignature)?;
    if !verify_hex(
        cache.as_deref_mut(),
        &root.issuer,
        &root_bytes,
        &token.signature,
    ) {
        return Err(DenyReason::InvalidSignature);
    }
    for link in &token.delegation_chain {
        let bytes = link
            .signing_bytes()
            .map_err(|_| DenyReason::InvalidSignature)?;
        if link.schema != DELEGATION_SCHEMA
            || !verify_hex(
                cache.as_deref_mut(),
                &link.delegator,
                &bytes,
                &link.signature,
            )
        {
            return Err(DenyReason::InvalidSignature);
        }
    }
    if let Some(last) = token.delegation_chain.last() {
        let renamed = last.child_id != token.id;
        let rekeyed = last.delegatee != token.subject;
        let restated = last.attenuation != token.state();
        let forged = if planted(Weakness::LeafRenameAndRekey) {
            (renamed && rekeyed) || restated
        } else {
            renamed || rekeyed || restated
        };
        if forged {
            return Err(DenyReason::InvalidSignature);
        }
    }
    Ok(())
}

/// What walking a well-formed chain yields for the later steps.
struct ChainWalk {
    /// Ids of the root and every intermediate capability, root first.
    ancestors: Vec<String>,
    /// Share admissions, root side first.
    shares: Vec<ShareClaim>,
    /// Invocation budgets along the chain, root first.
    invocation_limits: Vec<InvocationLimit>,
    /// Each link's delegator key, root holder first.
    delegators: Vec<String>,
}

/// Walks the chain from the root: continuity, cycles of ids and keys, link
/// dates, and the attenuation of every link, collecting share claims and
/// invocation budgets.
fn verify_chain(
    token: &CapabilityToken,
    root: &CapabilityBody,
    now_ms: u64,
) -> Result<ChainWalk, DenyReason> {
    let mut ids = vec![root.id.clone()];
    let mut keys = vec![root.subject.clone()];
    let mut parent_state = root.state();
    let mut parent_id = root.id.clone();
    let mut parent_subject = root.subject.clone();
    let mut parent_time = 0u64;
    let mut shares = Vec::new();
    let mut invocation_limits: Vec<InvocationLimit> = root
        .max_invocations
        .map(|m| InvocationLimit {
            capability_id: root.id.clone(),
            max_invocations: m,
        })
        .into_iter()
        .collect();
    for (i, link) in token.delegation_chain.iter().enumerate() {
        if link.parent_id != parent_id || link.delegator != parent_subject {
            return Err(DenyReason::ChainBroken {
                index: i,
                child: link.child_id.clone(),
                parent: parent_id,
            });
        }
        if ids.contains(&link.child_id) {
            return Err(DenyReason::ChainCycleId {
                child: link.child_id.clone(),
            });
        }
        if keys.contains(&link.delegatee) {
            return Err(DenyReason::ChainCycleKey {
                child: link.child_id.clone(),
            });
        }
        if link.timestamp_ms < parent_time {
            return Err(DenyReason::LinkBeforeParent {
                child: link.child_id.clone(),
            });
        }
        if link.timestamp_ms > now_ms {
            return Err(DenyReason::LinkInFuture {
                child: link.child_id.clone(),
            });
        }
        check_attenuation(&link.child_id, &parent_state, &link.attenuation)?;
        shares.push(ShareClaim {
            parent_id: parent_id.clone(),
            child_id: link.child_id.clone(),
            child_bps: link.attenuation.share_bps,
            parent_bps: parent_state.share_bps,
        });
        if let Some(m) = link.attenuation.max_invocations {
            invocation_limits.push(InvocationLimit {
                capability_id: link.child_id.clone(),
                max_invocations: m,
            });
        }
        ids.push(link.child_id.clone());
        keys.push(link.delegatee.clone());
        parent_state = link.attenuation.clone();
        parent_id = link.child_id.clone();
        parent_subject = link.delegatee.clone();
        parent_time = link.timestamp_ms;
    }
    ids.pop();
    // Every key but the holder's delegated a link.
    keys.pop();
    Ok(ChainWalk {
        ancestors: ids,
        shares,
        invocation_limits,
        delegators: keys,
    })
}

/// Whether a link's monetary constraint `c` stays within its parent's `p`:
/// the same argument and currency, and limits no larger. Each comparison
/// and each conjunction has a planted inversion (`planted-weakness` builds
/// only), the mutants the kernel's tests missed.
fn monetary_covered(p: &MonetaryLimit, c: &MonetaryLimit) -> bool {
    let invert = crate::planted::inverted;
    let argument = invert(Weakness::MonetaryArgumentInverted, p.argument == c.argument);
    let currency = invert(Weakness::MonetaryCurrencyInverted, p.currency == c.currency);
    let per_call = invert(
        Weakness::MonetaryPerCallInverted,
        c.max_per_invocation <= p.max_per_invocation,
    );
    let total = invert(Weakness::MonetaryTotalInverted, c.max_total <= p.max_total);
    if planted(Weakness::MonetaryArgumentSuffices) {
        argument || (currency && per_call && total)
    } else if planted(Weakness::MonetaryEitherMatch) {
        (argument && currency) || (per_call && total)
    } else if planted(Weakness::MonetaryTotalSuffices) {
        (argument && currency && per_call) || total
    } else {
        argument && currency && per_call && total
    }
}

/// Whether a planted weakness of the chain checks is selected
/// (`planted-weakness` builds only; a constant `false` otherwise).
fn planted(weakness: Weakness) -> bool {
    crate::planted::weakened_anywhere(weakness)
}

/// Checks that `child` attenuates `parent`: scope subset, window inside,
/// budget and share no larger.
pub fn check_attenuation(
    child_id: &str,
    parent: &GrantState,
    child: &GrantState,
) -> Result<(), DenyReason> {
    let link = child_id.to_string();
    for grant in &child.scope {
        if let Some(widening) = uncovered(grant, &parent.scope) {
            return Err(DenyReason::WidensScope {
                child: link,
                widening,
            });
        }
    }
    if child.expires_at_ms > parent.expires_at_ms && !planted(Weakness::ChildExpiryAfterParent) {
        return Err(DenyReason::WidensExpiry {
            child: link,
            expires: child.expires_at_ms,
            parent: parent.expires_at_ms,
        });
    }
    let widens_start = if planted(Weakness::StartCheckInverted) {
        child.not_before_ms > parent.not_before_ms
    } else {
        child.not_before_ms < parent.not_before_ms
    };
    if widens_start {
        return Err(DenyReason::WidensStart {
            child: link,
            not_before: child.not_before_ms,
            parent: parent.not_before_ms,
        });
    }
    match (parent.max_invocations, child.max_invocations) {
        (Some(p), None) if !planted(Weakness::UnlimitedChildBudget) => {
            return Err(DenyReason::UnlimitedBudget {
                child: link,
                parent: p,
            })
        }
        (Some(p), Some(c)) if c > p => {
            return Err(DenyReason::WidensBudget {
                child: link,
                allows: c,
                parent: p,
            })
        }
        _ => {}
    }
    if child.share_bps > parent.share_bps {
        return Err(DenyReason::WidensShare {
            child: link,
            bps: child.share_bps,
            parent: parent.share_bps,
        });
    }
    Ok(())
}

/// Why `grant` is not covered by any parent grant, or `None` when it is.
fn uncovered(grant: &ScopeGrant, parents: &[ScopeGrant]) -> Option<Widening> {
    let same_server: Vec<&ScopeGrant> = parents
        .iter()
        .filter(|p| p.server == grant.server)
        .collect();
    if same_server.is_empty() {
        return Some(Widening::Server {
            server: grant.server.clone(),
        });
    }
    let mut last = None;
    for parent in same_server {
        match covered_by(grant, parent) {
            Ok(()) => return None,
            Err(why) => last = Some(why),
        }
    }
    last
}

fn covered_by(grant: &ScopeGrant, parent: &ScopeGrant) -> Result<(), Widening> {
    for tool in &grant.tools {
        let ok = if tool == ANY_TOOL {
            let any = |t: &String| t == ANY_TOOL;
            if planted(Weakness::AnyToolUnderNamedTools) {
                parent.tools.iter().any(|t| !any(t))
            } else {
                parent.tools.iter().any(any)
            }
        } else {
            parent.covers_tool(tool)
        };
        if !ok {
            return Err(Widening::Tool {
                tool: tool.clone(),
                server: grant.server.clone(),
            });
        }
    }
    for (name, value) in &parent.constraints {
        let child_value = grant.constraints.get(name);
        let ok = match (name.as_str(), child_value) {
            (_, None) => false,
            ("path_prefix", Some(child)) => match (value.as_str(), child.as_str()) {
                (Some(p), Some(c)) => match (normalize_path(p), normalize_path(c)) {
                    (Ok(p), Ok(c)) => is_under(&c, &p),
                    _ => false,
                },
                _ => false,
            },
            ("monetary", Some(child)) => {
                let p: Option<MonetaryLimit> = serde_json::from_value(value.clone()).ok();
                let c: Option<MonetaryLimit> = serde_json::from_value(child.clone()).ok();
                match (p, c) {
                    (Some(p), Some(c)) => monetary_covered(&p, &c),
                    _ => false,
                }
            }
            (_, Some(child)) => child == value,
        };
        if !ok {
            return Err(Widening::Constraint {
                name: name.clone(),
                server: grant.server.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "verification_tests.rs"]
mod tests;
