//! Who may revoke a capability or a delegation link.
//!
//! A revocation removes authority, so it needs authority of its own: the
//! issuer of the capability's root grant may revoke anything in its
//! lineage, and the holder of an ancestor link may revoke what descends
//! from what it holds (a delegator takes back what it handed on). Nobody
//! else may: not the delegatee revoking its delegator's grant, not a
//! bystander revoking someone else's link, and not the holder of the
//! capability itself (a holder that wants to stop using a capability simply
//! stops presenting it). The rule is decided from the signed token alone,
//! by key, never by a name a request asserts.

use crate::token::CapabilityToken;

/// On whose authority a permitted revocation happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevocationAuthority {
    /// The issuer of the root grant.
    Issuer,
    /// The holder of the ancestor capability with this id.
    AncestorHolder(String),
}

/// Checks that the key `revoker` (hex) may revoke `target`; answers on
/// whose authority, or `None` when it may not (the node that refuses the
/// revocation words the refusal).
pub fn check_revocation_authority(
    target: &CapabilityToken,
    revoker: &str,
) -> Option<RevocationAuthority> {
    let root = target.root_body();
    if root.issuer == revoker {
        return Some(RevocationAuthority::Issuer);
    }
    // Strict ancestors: the root and every link but the last (whose
    // delegatee holds the target itself).
    let mut ancestors = vec![(root.id.clone(), root.subject.clone())];
    let chain = &target.delegation_chain;
    for link in chain.iter().take(chain.len().saturating_sub(1)) {
        ancestors.push((link.child_id.clone(), link.delegatee.clone()));
    }
    if !chain.is_empty() {
        if let Some((id, _)) = ancestors.iter().find(|(_, subject)| subject == revoker) {
            return Some(RevocationAuthority::AncestorHolder(id.clone()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{derive_arena_key, public_key_hex};
    use crate::token::{Attenuation, CapabilityBody, ScopeGrant, CAPABILITY_SCHEMA};

    fn key(name: &str) -> ed25519_dalek::SigningKey {
        derive_arena_key(7, "agent", name)
    }

    fn chain() -> (CapabilityToken, CapabilityToken, CapabilityToken) {
        let issuer = derive_arena_key(7, "authority", "root");
        let root = CapabilityToken::issue(
            CapabilityBody {
                schema: CAPABILITY_SCHEMA.into(),
                id: "alice-files".into(),
                issuer: public_key_hex(&issuer),
                subject: public_key_hex(&key("alice")),
                scope: vec![ScopeGrant::new("files", &["read_file"])],
                not_before_ms: 0,
                expires_at_ms: 10_000,
                max_invocations: None,
                share_bps: 10_000,
            },
            &issuer,
        )
        .unwrap();
        let bob = root
            .delegate(
                &key("alice"),
                &public_key_hex(&key("bob")),
                &Attenuation::default(),
                "bob-files",
                1,
            )
            .unwrap();
        let carol = bob
            .delegate(
                &key("bob"),
                &public_key_hex(&key("carol")),
                &Attenuation::default(),
                "carol-files",
                2,
            )
            .unwrap();
        (root, bob, carol)
    }

    // Proves the issuer and every ancestor holder may revoke, and the holder, a delegatee and a bystander may not.
    #[test]
    fn issuer_and_ancestor_holders_only() {
        let (root, bob, carol) = chain();
        let issuer = public_key_hex(&derive_arena_key(7, "authority", "root"));
        let pk = |n: &str| public_key_hex(&key(n));
        assert_eq!(
            check_revocation_authority(&root, &issuer),
            Some(RevocationAuthority::Issuer)
        );
        assert_eq!(
            check_revocation_authority(&carol, &pk("alice")),
            Some(RevocationAuthority::AncestorHolder("alice-files".into()))
        );
        assert_eq!(
            check_revocation_authority(&carol, &pk("bob")),
            Some(RevocationAuthority::AncestorHolder("bob-files".into()))
        );
        assert!(
            check_revocation_authority(&root, &pk("bob")).is_none(),
            "a delegatee revoking its owner's root"
        );
        assert!(
            check_revocation_authority(&root, &pk("alice")).is_none(),
            "the holder of a root grant is not its issuer"
        );
        assert!(
            check_revocation_authority(&carol, &pk("carol")).is_none(),
            "the holder itself"
        );
        assert!(
            check_revocation_authority(&bob, &pk("carol")).is_none(),
            "a descendant revoking its ancestor"
        );
        assert!(
            check_revocation_authority(&bob, &pk("mallory")).is_none(),
            "a bystander"
        );
    }
}
