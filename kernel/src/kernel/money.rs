//! Step 5's monetary budgets, before anything is held: which configured
//! budgets a call falls under, what it spends in each (in the budget's
//! minor units, by the one exact rule of [`crate::amount`]), which window
//! it counts in, and the deny reason when its arguments cannot say.
//!
//! Everything here is local: the holds it plans travel in the admission
//! batch like every invocation hold, under the same hold ids (scoped by
//! lineage, principal and request id), so a retry, a replay and a release
//! mean for money what they mean for counts ([`crate::ledger`]).

use serde_json::Value;

use super::config::{Authorisers, BudgetSubject, MonetaryBudget};
use crate::amount::format_units;
use crate::amount::{value_units, UnitsProblem};
use crate::ledger::{money_budget_key, share_budget_key, window_index};
use crate::reason::{printable_id, DenyReason, MoneyDeny};

/// One monetary hold a call needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PlannedMoney {
    /// The budget's id.
    pub budget: String,
    /// The store key of the total it counts against.
    pub key: String,
    /// The call's amount in minor units.
    pub units: u64,
    /// The limit in minor units.
    pub limit: u64,
    /// The limit as written.
    pub limit_text: String,
    /// The limit's decimal places.
    pub scale: u32,
    /// The currency.
    pub currency: String,
    /// The window the call counts in, when the budget has windows.
    pub window: Option<u64>,
    /// For the sub-total of a delegated share: the capability and its
    /// share in basis points of the budget's own capability. `None` for
    /// the budget's total.
    pub share: Option<(String, u32)>,
}

fn money(reason: MoneyDeny) -> DenyReason {
    reason.into()
}

/// What a currency argument that is not the budget's currency is, for a
/// reason: the caller's text made printable, or its JSON type.
fn found(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{:?}", printable_id(text)),
        Value::Number(_) => "a number".to_string(),
        Value::Bool(_) => "a boolean".to_string(),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
        Value::Null => "null".to_string(),
    }
}

/// The hold `budget` needs for a call with `arguments` at `now_ms`, or
/// why the call cannot be counted.
fn plan_one(
    budget: &MonetaryBudget,
    arguments: &Value,
    now_ms: u64,
) -> Result<PlannedMoney, DenyReason> {
    let id = &budget.id;
    let argument = &budget.amount_argument;
    let Some(value) = arguments.get(argument) else {
        return Err(money(MoneyDeny::AmountMissing {
            budget: id.clone(),
            argument: argument.clone(),
        }));
    };
    let units = value_units(value, budget.limit.scale).map_err(|problem| {
        money(match problem {
            UnitsProblem::Malformed(problem) => MoneyDeny::AmountMalformed {
                budget: id.clone(),
                argument: argument.clone(),
                problem,
            },
            UnitsProblem::TooLarge => MoneyDeny::AmountMalformed {
                budget: id.clone(),
                argument: argument.clone(),
                problem: "is more minor units than a budget can sum",
            },
            UnitsProblem::TooPrecise { places } => MoneyDeny::AmountTooPrecise {
                budget: id.clone(),
                argument: argument.clone(),
                places,
                limit: budget.limit.text.clone(),
            },
            UnitsProblem::NotPositive => MoneyDeny::AmountNotPositive {
                budget: id.clone(),
                argument: argument.clone(),
            },
        })
    })?;
    if let Some(currency_argument) = &budget.currency_argument {
        match arguments.get(currency_argument) {
            None => {
                return Err(money(MoneyDeny::CurrencyMissing {
                    budget: id.clone(),
                    argument: currency_argument.clone(),
                    currency: budget.currency.clone(),
                }))
            }
            Some(Value::String(named)) if *named == budget.currency => {}
            Some(other) => {
                return Err(money(MoneyDeny::CurrencyMismatch {
                    budget: id.clone(),
                    argument: currency_argument.clone(),
                    found: found(other),
                    currency: budget.currency.clone(),
                }))
            }
        }
    }
    let window = match budget.window {
        None => None,
        Some(window) => Some(
            window_index(now_ms, window.origin_ms, window.length_ms).ok_or_else(|| {
                money(MoneyDeny::WindowBeforeStart {
                    budget: id.clone(),
                    now: now_ms,
                    origin: window.origin_ms,
                })
            })?,
        ),
    };
    Ok(PlannedMoney {
        budget: id.clone(),
        key: money_budget_key(id, &budget.currency, window),
        units,
        limit: budget.limit.units,
        limit_text: budget.limit.text.clone(),
        scale: budget.limit.scale,
        currency: budget.currency.clone(),
        window,
        share: None,
    })
}

/// The sub-totals a call under a budget that names a capability also
/// counts in: one per delegated capability of the presented chain below
/// the budget's own whose share (`bps`, parallel to `chain`) is smaller
/// than the budget capability's. Shares are basis points of the root
/// allowance and a child never holds more than its parent (the sibling
/// rule of [`crate::ledger`] keeps children within it together), so the
/// share's limit is the budget's limit times `child / own`, rounded down
/// to the minor unit; every call of the child's lineage counts in it.
fn share_holds(
    total: &PlannedMoney,
    own: &str,
    chain: &[String],
    bps: &[u32],
) -> Vec<PlannedMoney> {
    let Some(at) = chain.iter().position(|c| c == own) else {
        return Vec::new();
    };
    let own_bps = bps.get(at).copied().unwrap_or(FULL);
    chain
        .iter()
        .zip(bps)
        .skip(at + 1)
        .filter(|(_, child_bps)| **child_bps < own_bps)
        .map(|(child, child_bps)| {
            let limit = u64::try_from(
                u128::from(total.limit) * u128::from(*child_bps) / u128::from(own_bps.max(1)),
            )
            .unwrap_or(u64::MAX);
            PlannedMoney {
                key: share_budget_key(&total.key, child),
                limit,
                limit_text: format_units(limit, total.scale),
                share: Some((child.clone(), *child_bps)),
                ..total.clone()
            }
        })
        .collect()
}

/// A full share, in basis points.
const FULL: u32 = crate::token::FULL_SHARE_BPS;

/// The capabilities a call presents, root first, with each one's share in
/// basis points of the root allowance (`bps`, parallel to `ids`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Lineage<'a> {
    /// The capability ids, root first.
    pub ids: &'a [String],
    /// Each one's share.
    pub bps: &'a [u32],
}

/// Every monetary hold a call authorised by `by` presenting `lineage` needs, in declaration order, one per
/// budget id (entries sharing an id share one total, and a call is counted
/// once in it), each followed by the sub-totals of its delegated shares;
/// the first budget that cannot count the call answers the deny reason.
pub(super) fn plan_money(
    budgets: &[MonetaryBudget],
    by: &Authorisers<'_>,
    lineage: Lineage<'_>,
    server: &str,
    tool: &str,
    arguments: &Value,
    now_ms: u64,
) -> Result<Vec<PlannedMoney>, DenyReason> {
    let mut planned: Vec<PlannedMoney> = Vec::new();
    for budget in budgets
        .iter()
        .filter(|b| b.covers(by, lineage.ids, server, tool))
    {
        if planned.iter().any(|p| p.budget == budget.id) {
            continue;
        }
        let total = plan_one(budget, arguments, now_ms)?;
        let shares = match &budget.subject {
            BudgetSubject::Capability(own) => share_holds(&total, own, lineage.ids, lineage.bps),
            BudgetSubject::Agent(_) => Vec::new(),
        };
        planned.push(total);
        planned.extend(shares);
    }
    Ok(planned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::amount::MoneyLimit;
    use crate::kernel::config::{BudgetSubject, BudgetWindow};
    use serde_json::json;

    fn daily() -> MonetaryBudget {
        MonetaryBudget {
            id: "daily".into(),
            subject: BudgetSubject::Agent("clerk".into()),
            server: "payments".into(),
            tool: "pay".into(),
            amount_argument: "amount".into(),
            currency: "EUR".into(),
            currency_argument: Some("currency".into()),
            limit: MoneyLimit::parse("2000.00").unwrap(),
            window: Some(BudgetWindow {
                origin_ms: 1_000,
                length_ms: 100,
            }),
        }
    }

    /// A call its principal authorised alone (no delegated link).
    fn alone(principal: &str) -> Authorisers<'_> {
        static NO_KEYS: std::collections::BTreeMap<String, String> =
            std::collections::BTreeMap::new();
        Authorisers {
            principal,
            delegators: &[],
            agent_keys: &NO_KEYS,
        }
    }

    /// A call presenting no capability the budgets name.
    const NONE: Lineage<'static> = Lineage { ids: &[], bps: &[] };

    fn plan(arguments: Value, now_ms: u64) -> Result<Vec<PlannedMoney>, DenyReason> {
        plan_money(
            &[daily()],
            &alone("clerk"),
            NONE,
            "payments",
            "pay",
            &arguments,
            now_ms,
        )
    }

    fn code(arguments: Value) -> String {
        plan(arguments, 1_000).unwrap_err().code().to_string()
    }

    // Proves a covered call plans its amount in minor units under its window's key, and the window turns at its exact edge.
    #[test]
    fn a_covered_call_plans_its_units_in_its_window() {
        let first = plan(json!({"amount": "999.99", "currency": "EUR"}), 1_099).unwrap();
        assert_eq!(first[0].units, 99_999);
        assert_eq!(first[0].limit, 200_000);
        assert_eq!(first[0].window, Some(0));
        let next = plan(json!({"amount": 5, "currency": "EUR"}), 1_100).unwrap();
        assert_eq!((next[0].units, next[0].window), (500, Some(1)));
        assert_ne!(first[0].key, next[0].key);
    }

    // Proves each argument defect has its own reason, and a call before the first window is refused.
    #[test]
    fn each_argument_defect_denies_with_its_code() {
        assert_eq!(code(json!({"currency": "EUR"})), "budget-amount-missing");
        assert_eq!(
            code(json!({"amount": "1e3", "currency": "EUR"})),
            "budget-amount-malformed"
        );
        assert_eq!(
            code(json!({"amount": 999.99, "currency": "EUR"})),
            "budget-amount-malformed"
        );
        assert_eq!(
            code(json!({"amount": "99999999999999999999", "currency": "EUR"})),
            "budget-amount-malformed"
        );
        assert_eq!(
            code(json!({"amount": "999.999", "currency": "EUR"})),
            "budget-amount-too-precise"
        );
        assert_eq!(
            code(json!({"amount": "0.00", "currency": "EUR"})),
            "budget-amount-not-positive"
        );
        assert_eq!(
            code(json!({"amount": "-1", "currency": "EUR"})),
            "budget-amount-not-positive"
        );
        assert_eq!(code(json!({"amount": "1"})), "budget-currency-missing");
        assert_eq!(
            code(json!({"amount": "1", "currency": "USD"})),
            "budget-currency-mismatch"
        );
        assert_eq!(
            code(json!({"amount": "1", "currency": 978})),
            "budget-currency-mismatch"
        );
        let early = plan(json!({"amount": "1", "currency": "EUR"}), 999).unwrap_err();
        assert_eq!(early.code().to_string(), "budget-window-before-start");
        let odd = plan(json!({"amount": "1", "currency": "E\nUR"}), 1_000).unwrap_err();
        assert!(!odd.to_string().contains('\n'), "{odd}");
    }

    // Proves only the budget's subject, server and tool are covered, a capability budget covers its whole lineage and no other lineage that names a link like it, and entries sharing an id count a call once.
    #[test]
    fn coverage_and_shared_ids() {
        let args = json!({"amount": "1", "currency": "EUR"});
        let other = |principal: &str, tool: &str| {
            plan_money(
                &[daily()],
                &alone(principal),
                NONE,
                "payments",
                tool,
                &args,
                1_000,
            )
            .unwrap()
        };
        assert!(other("mallory", "pay").is_empty());
        assert!(other("clerk", "refund").is_empty());
        let mut lineage = daily();
        lineage.subject = BudgetSubject::Capability("root".into());
        let chain = ["root".to_string(), "child".to_string()];
        let held = plan_money(
            &[lineage.clone()],
            &alone("anyone"),
            Lineage {
                ids: &chain,
                bps: &[FULL, FULL],
            },
            "payments",
            "pay",
            &args,
            1_000,
        )
        .unwrap();
        assert_eq!(held.len(), 1);
        // Another lineage whose delegator named a link like this root is
        // not in this lineage: only the root counts.
        let foreign = ["attacker".to_string(), "root".to_string()];
        let stranger = Lineage {
            ids: &foreign,
            bps: &[FULL, FULL],
        };
        assert!(plan_money(
            &[lineage.clone()],
            &alone("anyone"),
            stranger,
            "payments",
            "pay",
            &args,
            1_000
        )
        .unwrap()
        .is_empty());
        assert!(plan_money(
            &[lineage],
            &alone("anyone"),
            NONE,
            "payments",
            "pay",
            &args,
            1_000
        )
        .unwrap()
        .is_empty());
        let twice = plan_money(
            &[daily(), daily()],
            &alone("clerk"),
            NONE,
            "payments",
            "pay",
            &args,
            1_000,
        )
        .unwrap();
        assert_eq!(twice.len(), 1);
    }

    // Proves an agent's budget counts a call its delegate (or a delegate of its delegate) makes under a chain the agent delegated, and not a call whose chain it had no part in.
    #[test]
    fn an_agent_budget_counts_its_delegates() {
        let args = json!({"amount": "1", "currency": "EUR"});
        let keys: std::collections::BTreeMap<String, String> = [("clerk", "k-clerk")]
            .iter()
            .map(|(a, k)| (a.to_string(), k.to_string()))
            .collect();
        let by = |delegators: &[String]| {
            plan_money(
                &[daily()],
                &Authorisers {
                    principal: "deputy",
                    delegators,
                    agent_keys: &keys,
                },
                NONE,
                "payments",
                "pay",
                &args,
                1_000,
            )
            .unwrap()
        };
        assert_eq!(by(&["k-clerk".to_string()]).len(), 1);
        assert_eq!(
            by(&["k-clerk".to_string(), "k-helper".to_string()]).len(),
            1
        );
        assert!(by(&["k-boss".to_string()]).is_empty());
        assert!(by(&[]).is_empty());
    }

    // Proves a capability budget adds one sub-total per delegated capability
    // below it whose share is smaller, with the limit scaled by the share
    // relative to the budget's own capability and rounded down to the minor
    // unit, under a key of its own; a full share and the budget's own
    // capability add none, and an agent budget never does.
    #[test]
    fn delegated_shares_add_sub_totals() {
        let args = json!({"amount": "1", "currency": "EUR"});
        let mut lineage = daily();
        lineage.subject = BudgetSubject::Capability("mid".into());
        let chain: Vec<String> = ["mid", "full", "third"]
            .iter()
            .map(|c| c.to_string())
            .collect();
        // mid 6000, full 6000 (no narrower), third 2000.
        let held = plan_money(
            &[lineage.clone()],
            &alone("anyone"),
            Lineage {
                ids: &chain,
                bps: &[6000, 6000, 2000],
            },
            "payments",
            "pay",
            &args,
            1_000,
        )
        .unwrap();
        assert_eq!(held.len(), 2, "{held:?}");
        assert_eq!(held[0].share, None);
        assert_eq!(held[0].limit, 200_000);
        let third = &held[1];
        assert_eq!(third.share, Some(("third".to_string(), 2000)));
        // 2000.00 * 2000 / 6000 = 666.666..., rounded down to 666.66.
        assert_eq!(third.limit, 66_666);
        assert_eq!(third.limit_text, "666.66");
        assert_eq!(third.key, share_budget_key(&held[0].key, "third"));
        assert_ne!(third.key, held[0].key);
        // The same chain under an agent budget: the total only.
        let by_agent = plan_money(
            &[daily()],
            &alone("clerk"),
            Lineage {
                ids: &chain,
                bps: &[FULL, 6000, 6000, 2000],
            },
            "payments",
            "pay",
            &args,
            1_000,
        )
        .unwrap();
        assert_eq!(by_agent.len(), 1);
        // Two siblings' keys never meet, whatever their ids.
        assert_ne!(
            share_budget_key("k", "a/share/1:b"),
            share_budget_key("k/share/1:a", "b")
        );
    }
}
