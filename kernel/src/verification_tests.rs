//! The attenuation check's monetary rule: a link's monetary constraint is
//! admitted exactly when it stays within its parent's.

use super::*;
use crate::token::FULL_SHARE_BPS;

/// A state granting `pay` on `payments` under `monetary` (none when `None`).
fn state(monetary: Option<&MonetaryLimit>) -> GrantState {
    let mut grant = ScopeGrant::new("payments", &["pay"]);
    if let Some(m) = monetary {
        grant = grant.with_constraint("monetary", m.to_constraint());
    }
    GrantState {
        scope: vec![grant],
        not_before_ms: 0,
        expires_at_ms: 1_000,
        max_invocations: None,
        share_bps: FULL_SHARE_BPS,
    }
}

fn limit(argument: &str, currency: &str, per_call: u64, total: u64) -> MonetaryLimit {
    MonetaryLimit {
        argument: argument.into(),
        currency: currency.into(),
        max_per_invocation: per_call,
        max_total: total,
    }
}

// A link whose monetary constraint equals or narrows its parent's is admitted (the survivor that deletes the covering arm refuses it).
#[test]
fn a_narrower_monetary_link_is_admitted() {
    let parent = limit("amount", "EUR", 50_000, 200_000);
    for child in [
        parent.clone(),
        limit("amount", "EUR", 10_000, 200_000),
        limit("amount", "EUR", 50_000, 30_000),
        limit("amount", "EUR", 1, 1),
    ] {
        assert_eq!(
            check_attenuation("c", &state(Some(&parent)), &state(Some(&child))),
            Ok(()),
            "{child:?}"
        );
    }
    // A child may add a constraint its parent does not carry.
    assert_eq!(
        check_attenuation("c", &state(None), &state(Some(&parent))),
        Ok(())
    );
}

// A link that widens the constraint in any one way, or drops it, is refused as a constraint widening.
#[test]
fn a_wider_monetary_link_is_refused() {
    let parent = limit("amount", "EUR", 50_000, 200_000);
    let refused = |child: Option<&MonetaryLimit>| match check_attenuation(
        "c",
        &state(Some(&parent)),
        &state(child),
    ) {
        Err(DenyReason::WidensScope {
            widening: Widening::Constraint { name, .. },
            ..
        }) => name,
        other => panic!("{child:?}: {other:?}"),
    };
    for child in [
        limit("fee", "EUR", 50_000, 200_000),
        limit("amount", "USD", 50_000, 200_000),
        limit("amount", "EUR", 50_001, 200_000),
        limit("amount", "EUR", 50_000, 200_001),
    ] {
        assert_eq!(refused(Some(&child)), "monetary");
    }
    assert_eq!(refused(None), "monetary");
}
