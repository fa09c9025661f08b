//! The rules of shared authority state, written once.
//!
//! Budget holds, sibling shares and seen request ids are kept by three
//! stores: the kernel crate's in-memory authority (its own tests and
//! portable evaluation), trust-control's in-memory store (the embedded
//! topology, the adversary search's direct dispatcher and trust-control's
//! memory mode) and trust-control's SQLite store (the distributed topology).
//! Each store only loads and saves; every decision about what a hold, a
//! share admission or a repeated request id means is one of the pure
//! functions here, so the stores cannot drift apart at the edges.
//!
//! The edges, decided once:
//! - a hold is granted when `used + amount <= limit` (inclusive), and an
//!   overflowing sum is refused, never wrapped;
//! - a repeated hold id with the same budget and amount is a transport
//!   retry while the hold is `held` (granted again, counted once); once the
//!   hold is `committed` the repeat is a replay and is refused; a `released`
//!   hold id is never held again; another budget or amount is a conflict;
//! - commit moves `held` to `committed` (idempotent); release moves `held`
//!   to `released` (idempotent) and refuses a committed hold;
//! - a parent's share is the share first admitted for it, and later
//!   admissions check against the smaller of that and the share presented,
//!   so a second token naming the same parent id with a larger share widens
//!   nothing;
//! - a child is admitted once, with one parent and one share: the same
//!   admission again is idempotent, another parent or share is a conflict;
//! - `child + sum(other admitted siblings) <= parent` (inclusive), where a
//!   revoked sibling no longer counts: its calls are refused as revoked,
//!   so its share is free for new siblings. The store reads the revocation
//!   in the same admission ([`sibling_sum_bps`]), so the answer is the
//!   same on every topology;
//! - a monetary budget counted in windows keeps one total per window, the
//!   window of a call being `floor((now - origin) / length)`: a call at
//!   exactly `origin + k * length` is the first of window `k`.

use thiserror::Error;

/// Where a granted hold is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HoldState {
    /// Counts against the budget until committed or released.
    Held,
    /// Counts against the budget permanently.
    Committed,
    /// No longer counts.
    Released,
}

impl HoldState {
    /// The state's name in error messages and in the SQLite `state` column.
    pub fn as_str(self) -> &'static str {
        match self {
            HoldState::Held => "held",
            HoldState::Committed => "committed",
            HoldState::Released => "released",
        }
    }

    /// Reads a state back from its stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "held" => Some(HoldState::Held),
            "committed" => Some(HoldState::Committed),
            "released" => Some(HoldState::Released),
            _ => None,
        }
    }
}

/// A granted hold as every store records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldRecord {
    /// The budget the hold counts against.
    pub budget_key: String,
    /// The amount held.
    pub amount: u64,
    /// Its state.
    pub state: HoldState,
}

/// The answer to a budget hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldDecision {
    /// The hold counts against the budget.
    Granted {
        /// Held plus committed amount including this hold.
        used: u64,
        /// The limit checked against.
        limit: u64,
    },
    /// The hold would exceed the limit and is not recorded.
    Refused {
        /// Held plus committed amount without this hold.
        used: u64,
        /// The limit checked against.
        limit: u64,
    },
}

/// The answer to a sibling-share admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareDecision {
    /// The child's share is recorded (now or already) and counts for its
    /// siblings.
    Admitted {
        /// Sum of all admitted children of the parent, this one included.
        sum_bps: u32,
        /// The parent share checked against.
        parent_bps: u32,
    },
    /// The child's share did not fit and is not recorded.
    Refused {
        /// Sum of the other admitted children.
        sibling_sum_bps: u32,
        /// The parent share checked against.
        parent_bps: u32,
    },
}

/// What an admitted child already is, as a store loaded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmittedChild {
    /// The parent it was admitted under.
    pub parent_id: String,
    /// The share it was admitted with.
    pub child_bps: u32,
}

/// A request the rules refuse as inconsistent with what the store holds.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LedgerRefusal {
    /// A hold id was reused for another budget or amount.
    #[error("hold {hold_id} is already taken for another budget or amount; use a fresh hold id per hold")]
    HoldConflict {
        /// The reused hold id.
        hold_id: String,
    },
    /// A committed hold was asked for again: the request that took it is
    /// being replayed.
    #[error("request replayed: hold {hold_id} is already committed; sign a new request with a fresh request id")]
    HoldReplayed {
        /// The hold id asked for again.
        hold_id: String,
    },
    /// A hold is asked to move against its life (commit after release,
    /// release after commit, hold after release).
    #[error("cannot {action} hold {hold_id}: it is already {state}; {fix}")]
    HoldStateConflict {
        /// The hold whose state forbids the action.
        hold_id: String,
        /// `hold`, `commit` or `release`.
        action: &'static str,
        /// The state the hold is in.
        state: &'static str,
        /// How the caller proceeds.
        fix: &'static str,
    },
    /// A budget sum would overflow.
    #[error("budget {budget_key} amount overflows; use smaller amounts")]
    BudgetOverflow {
        /// The budget whose sum overflowed.
        budget_key: String,
    },
    /// A child was already admitted under another parent or with another share.
    #[error("child {child_id} is already admitted with another parent or share; a child capability has one parent and one share")]
    ShareConflict {
        /// The child capability id.
        child_id: String,
    },
}

/// Largest budget amount or sum; keeps every sum inside SQLite's signed
/// 64-bit integers, so all stores agree on what overflows.
pub const MAX_AMOUNT: u64 = i64::MAX as u64;

/// The budget rule: a hold is granted when `used + amount <= limit`.
pub fn decide_hold(
    budget_key: &str,
    used: u64,
    amount: u64,
    limit: u64,
) -> Result<HoldDecision, LedgerRefusal> {
    let after = match used
        .checked_add(amount)
        .filter(|after| *after <= MAX_AMOUNT)
    {
        Some(after) => after,
        // A sum past what a store can hold is past any limit a store can
        // hold: the call is over its budget, never a store failure.
        None if limit <= MAX_AMOUNT => return Ok(HoldDecision::Refused { used, limit }),
        None => {
            return Err(LedgerRefusal::BudgetOverflow {
                budget_key: budget_key.to_owned(),
            })
        }
    };
    let granted =
        if crate::planted::weakened_anywhere(crate::planted::Weakness::BudgetCheckBeforeAdd) {
            used <= limit
        } else {
            after <= limit
        };
    Ok(if granted {
        HoldDecision::Granted { used: after, limit }
    } else {
        HoldDecision::Refused { used, limit }
    })
}

/// The answer to a repeated hold id (see the module doc): a retry of a live
/// hold is granted again and counted once; anything else is refused.
pub fn repeat_hold(
    hold_id: &str,
    existing: &HoldRecord,
    budget_key: &str,
    amount: u64,
    used: u64,
    limit: u64,
) -> Result<HoldDecision, LedgerRefusal> {
    if existing.budget_key != budget_key || existing.amount != amount {
        return Err(LedgerRefusal::HoldConflict {
            hold_id: hold_id.to_owned(),
        });
    }
    match existing.state {
        HoldState::Held => Ok(HoldDecision::Granted { used, limit }),
        HoldState::Committed => Err(LedgerRefusal::HoldReplayed {
            hold_id: hold_id.to_owned(),
        }),
        HoldState::Released => Err(LedgerRefusal::HoldStateConflict {
            hold_id: hold_id.to_owned(),
            action: "hold",
            state: "released",
            fix: "take a new hold with a fresh hold id",
        }),
    }
}

/// The commit rule: held becomes committed, committed stays, released refuses.
pub fn commit_transition(hold_id: &str, state: HoldState) -> Result<HoldState, LedgerRefusal> {
    match state {
        HoldState::Held | HoldState::Committed => Ok(HoldState::Committed),
        HoldState::Released => Err(LedgerRefusal::HoldStateConflict {
            hold_id: hold_id.to_owned(),
            action: "commit",
            state: "released",
            fix: "take a new hold; a released amount no longer counts",
        }),
    }
}

/// The release rule: held becomes released, released stays, committed refuses.
pub fn release_transition(hold_id: &str, state: HoldState) -> Result<HoldState, LedgerRefusal> {
    match state {
        HoldState::Held | HoldState::Released => Ok(HoldState::Released),
        HoldState::Committed => Err(LedgerRefusal::HoldStateConflict {
            hold_id: hold_id.to_owned(),
            action: "release",
            state: "committed",
            fix: "a committed amount is permanent; do not release it",
        }),
    }
}

/// The parent share an admission checks against: the first share recorded
/// for the parent, or the smaller of it and the presented one.
pub fn effective_parent_share(known_bps: Option<u32>, presented_bps: u32) -> u32 {
    known_bps.map_or(presented_bps, |known| known.min(presented_bps))
}

/// One admitted child of a parent, as the sibling sum reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiblingShare<'a> {
    /// The child's capability id.
    pub child_id: &'a str,
    /// The share it was admitted with.
    pub child_bps: u32,
    /// Whether the child is revoked (the store's revocations, read in the
    /// same admission).
    pub revoked: bool,
}

/// What the other children of a parent hold for [`decide_share`] when
/// `child_id` is admitted: every admitted sibling but `child_id` itself
/// that is not revoked (a revoked child's calls are refused, so its share
/// returns to the parent). The sum saturates, so a corrupt store refuses
/// rather than wraps.
pub fn sibling_sum_bps<'a>(
    child_id: &str,
    siblings: impl IntoIterator<Item = SiblingShare<'a>>,
) -> u32 {
    siblings
        .into_iter()
        .filter(|s| s.child_id != child_id && !s.revoked)
        .fold(0u32, |sum, s| sum.saturating_add(s.child_bps))
}

/// The sibling-share rule, with the repeat cases of the module doc.
///
/// `existing` is the child's earlier admission if the store has one;
/// `sibling_sum_bps` sums the parent's other admitted children that are
/// not revoked ([`sibling_sum_bps`]).
pub fn decide_share(
    parent_id: &str,
    child_id: &str,
    existing: Option<&AdmittedChild>,
    sibling_sum_bps: u32,
    child_bps: u32,
    parent_bps: u32,
) -> Result<ShareDecision, LedgerRefusal> {
    let sum_bps = sibling_sum_bps.saturating_add(child_bps);
    if let Some(earlier) = existing {
        if earlier.parent_id != parent_id || earlier.child_bps != child_bps {
            return Err(LedgerRefusal::ShareConflict {
                child_id: child_id.to_owned(),
            });
        }
        return Ok(ShareDecision::Admitted {
            sum_bps,
            parent_bps,
        });
    }
    Ok(if sum_bps <= parent_bps {
        ShareDecision::Admitted {
            sum_bps,
            parent_bps,
        }
    } else {
        ShareDecision::Refused {
            sibling_sum_bps,
            parent_bps,
        }
    })
}

/// The store key of a monetary budget's total: per budget id and
/// currency, and per window for a budget counted in windows, so each
/// window starts from nothing. Every component is length-prefixed, so no
/// choice of ids makes two budgets share a key.
pub fn money_budget_key(budget_id: &str, currency: &str, window: Option<u64>) -> String {
    let base = format!(
        "money/{}:{budget_id}/{}:{currency}",
        budget_id.len(),
        currency.len()
    );
    match window {
        Some(index) => format!("{base}/window/{index}"),
        None => base,
    }
}

/// The store key of a delegated capability's sub-total under a monetary
/// budget: the budget's key (window included) and the capability,
/// length-prefixed like every component.
pub fn share_budget_key(budget_key: &str, capability_id: &str) -> String {
    format!("{budget_key}/share/{}:{capability_id}", capability_id.len())
}

/// The window a call at `now_ms` counts in: `floor((now_ms - origin_ms) /
/// length_ms)`, so a call at exactly `origin_ms + k * length_ms` is in
/// window `k`. `None` before `origin_ms` (or for a zero length): no window
/// holds the call.
pub fn window_index(now_ms: u64, origin_ms: u64, length_ms: u64) -> Option<u64> {
    now_ms
        .checked_sub(origin_ms)
        .and_then(|elapsed| elapsed.checked_div(length_ms))
}

/// The key under which a request id is remembered: per capability lineage
/// and verified principal, so one principal cannot burn another's ids, and
/// one id is used once per lineage whichever kernel sees it.
pub fn seen_request_key(lineage_id: &str, principal: &str, request_id: &str) -> String {
    format!(
        "{}:{lineage_id}/{}:{principal}/{request_id}",
        lineage_id.len(),
        principal.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(state: HoldState) -> HoldRecord {
        HoldRecord {
            budget_key: "k".into(),
            amount: 1,
            state,
        }
    }

    // Proves the hold rule is inclusive of the limit and refuses overflow instead of wrapping.
    #[test]
    fn hold_rule_is_inclusive_and_never_wraps() {
        assert_eq!(
            decide_hold("k", 1, 1, 2).unwrap(),
            HoldDecision::Granted { used: 2, limit: 2 }
        );
        assert_eq!(
            decide_hold("k", 2, 1, 2).unwrap(),
            HoldDecision::Refused { used: 2, limit: 2 }
        );
        assert!(matches!(
            decide_hold("k", MAX_AMOUNT, 1, u64::MAX),
            Err(LedgerRefusal::BudgetOverflow { .. })
        ));
        // Past the sum a store holds, but within a limit it holds: refused
        // as over the limit, with nothing of the store in the reason.
        assert_eq!(
            decide_hold("k", MAX_AMOUNT - 1, 2, MAX_AMOUNT).unwrap(),
            HoldDecision::Refused {
                used: MAX_AMOUNT - 1,
                limit: MAX_AMOUNT
            }
        );
    }

    // Proves a repeated hold is a retry only while held: committed is a replay, released never comes back.
    #[test]
    fn repeated_holds_are_retries_only_while_held() {
        assert_eq!(
            repeat_hold("h", &record(HoldState::Held), "k", 1, 1, 1).unwrap(),
            HoldDecision::Granted { used: 1, limit: 1 }
        );
        let replay = repeat_hold("h", &record(HoldState::Committed), "k", 1, 1, 1).unwrap_err();
        assert!(
            replay.to_string().starts_with("request replayed"),
            "{replay}"
        );
        assert!(matches!(
            repeat_hold("h", &record(HoldState::Released), "k", 1, 0, 1),
            Err(LedgerRefusal::HoldStateConflict { .. })
        ));
        assert!(matches!(
            repeat_hold("h", &record(HoldState::Held), "other", 1, 1, 1),
            Err(LedgerRefusal::HoldConflict { .. })
        ));
        // The same hold id on the same budget for another amount is no
        // retry: granted again it would count the first amount only.
        assert!(matches!(
            repeat_hold("h", &record(HoldState::Held), "k", 1_000, 1, 1),
            Err(LedgerRefusal::HoldConflict { .. })
        ));
    }

    // Proves a hold's state reads back from the name the stores write, and an unknown name reads as none.
    #[test]
    fn hold_states_read_back_from_their_names() {
        for state in [HoldState::Held, HoldState::Committed, HoldState::Released] {
            assert_eq!(HoldState::parse(state.as_str()), Some(state));
        }
        assert_eq!(HoldState::parse("Held"), None);
        assert_eq!(HoldState::parse(""), None);
    }

    // Proves the sibling sum leaves out the child itself and every revoked sibling, so a revoked child's share is free for a new sibling, and saturates rather than wraps.
    #[test]
    fn revoked_siblings_free_their_share() {
        let child = |child_id, child_bps, revoked| SiblingShare {
            child_id,
            child_bps,
            revoked,
        };
        let siblings = [child("a", 6000, true), child("b", 1000, false)];
        assert_eq!(sibling_sum_bps("c", siblings), 1000);
        assert_eq!(sibling_sum_bps("b", siblings), 0);
        assert_eq!(
            sibling_sum_bps("c", [child("a", 6000, false), child("b", 1000, false)]),
            7000
        );
        // Exactly the parent once the revoked share is freed; one more is refused.
        let sum = sibling_sum_bps("c", siblings);
        assert!(matches!(
            decide_share("p", "c", None, sum, 9000, 10000),
            Ok(ShareDecision::Admitted { .. })
        ));
        assert!(matches!(
            decide_share("p", "c", None, sum, 9001, 10000),
            Ok(ShareDecision::Refused { .. })
        ));
        assert_eq!(
            sibling_sum_bps("c", [child("a", u32::MAX, false), child("b", 1, false)]),
            u32::MAX
        );
    }

    // Proves a child keeps its first parent and share, and a parent's share never grows.
    #[test]
    fn share_rule_edges() {
        let first = AdmittedChild {
            parent_id: "p".into(),
            child_bps: 6000,
        };
        assert!(matches!(
            decide_share("p", "c", Some(&first), 0, 6000, 10000),
            Ok(ShareDecision::Admitted { .. })
        ));
        assert!(matches!(
            decide_share("p", "c", Some(&first), 0, 7000, 10000),
            Err(LedgerRefusal::ShareConflict { .. })
        ));
        assert!(matches!(
            decide_share("q", "c", Some(&first), 0, 6000, 10000),
            Err(LedgerRefusal::ShareConflict { .. })
        ));
        assert_eq!(effective_parent_share(Some(5000), 10000), 5000);
        assert_eq!(effective_parent_share(None, 10000), 10000);
        assert_eq!(
            decide_share("p", "d", None, 6000, 4001, 10000).unwrap(),
            ShareDecision::Refused {
                sibling_sum_bps: 6000,
                parent_bps: 10000
            }
        );
    }

    // Proves a window starts exactly at each multiple of its length from the origin, and nothing before the origin falls in one.
    #[test]
    fn windows_start_at_their_exact_edge() {
        let day = 86_400_000;
        let origin = 1_000;
        assert_eq!(window_index(origin, origin, day), Some(0));
        assert_eq!(window_index(origin + day - 1, origin, day), Some(0));
        assert_eq!(window_index(origin + day, origin, day), Some(1));
        assert_eq!(window_index(origin + 2 * day - 1, origin, day), Some(1));
        assert_eq!(window_index(origin + 2 * day, origin, day), Some(2));
        assert_eq!(window_index(origin - 1, origin, day), None);
        assert_eq!(window_index(origin, origin, 0), None);
        assert_eq!(window_index(u64::MAX, 0, 1), Some(u64::MAX));
    }

    // Proves monetary budget keys differ per id, currency and window, and cannot collide by moving a separator.
    #[test]
    fn money_budget_keys_are_unambiguous() {
        assert_eq!(
            money_budget_key("daily", "EUR", Some(3)),
            "money/5:daily/3:EUR/window/3"
        );
        assert_ne!(
            money_budget_key("daily", "EUR", Some(0)),
            money_budget_key("daily", "EUR", Some(1))
        );
        assert_ne!(
            money_budget_key("daily", "EUR", None),
            money_budget_key("daily", "EUR", Some(0))
        );
        assert_ne!(
            money_budget_key("a/1:b", "c", None),
            money_budget_key("a", "b/1:c", None)
        );
    }

    // Proves seen-request keys cannot collide by moving a separator between lineage and principal.
    #[test]
    fn seen_request_keys_are_unambiguous() {
        assert_ne!(
            seen_request_key("a/b", "c", "r"),
            seen_request_key("a", "b/c", "r")
        );
        assert_eq!(seen_request_key("root", "alice", "r1"), "4:root/5:alice/r1");
    }
}
