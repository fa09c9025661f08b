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

use super::config::MonetaryBudget;
use crate::amount::{value_units, UnitsProblem};
use crate::ledger::{money_budget_key, window_index};
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
    })
}

/// Every monetary hold a call by `principal` presenting `chain` needs, in
/// declaration order, one per budget id (entries sharing an id share one
/// total, and a call is counted once in it); the first budget that cannot
/// count the call answers the deny reason.
pub(super) fn plan_money(
    budgets: &[MonetaryBudget],
    principal: &str,
    chain: &[String],
    server: &str,
    tool: &str,
    arguments: &Value,
    now_ms: u64,
) -> Result<Vec<PlannedMoney>, DenyReason> {
    let mut planned: Vec<PlannedMoney> = Vec::new();
    for budget in budgets
        .iter()
        .filter(|b| b.covers(principal, chain, server, tool))
    {
        if planned.iter().any(|p| p.budget == budget.id) {
            continue;
        }
        planned.push(plan_one(budget, arguments, now_ms)?);
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

    fn plan(arguments: Value, now_ms: u64) -> Result<Vec<PlannedMoney>, DenyReason> {
        plan_money(
            &[daily()],
            "clerk",
            &[],
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

    // Proves only the budget's subject, server and tool are covered, a capability budget covers its whole lineage, and entries sharing an id count a call once.
    #[test]
    fn coverage_and_shared_ids() {
        let args = json!({"amount": "1", "currency": "EUR"});
        let other = |principal: &str, tool: &str| {
            plan_money(&[daily()], principal, &[], "payments", tool, &args, 1_000).unwrap()
        };
        assert!(other("mallory", "pay").is_empty());
        assert!(other("clerk", "refund").is_empty());
        let mut lineage = daily();
        lineage.subject = BudgetSubject::Capability("root".into());
        let chain = ["root".to_string(), "child".to_string()];
        let held = plan_money(
            &[lineage.clone()],
            "anyone",
            &chain,
            "payments",
            "pay",
            &args,
            1_000,
        )
        .unwrap();
        assert_eq!(held.len(), 1);
        assert!(
            plan_money(&[lineage], "anyone", &[], "payments", "pay", &args, 1_000)
                .unwrap()
                .is_empty()
        );
        let twice = plan_money(
            &[daily(), daily()],
            "clerk",
            &[],
            "payments",
            "pay",
            &args,
            1_000,
        )
        .unwrap();
        assert_eq!(twice.len(), 1);
    }
}
