//! `approval`: human approval above a threshold.
//!
//! Config: `{ "tools": ["pay"], "argument": "amount", "above": 100 }`. A call
//! to a listed tool is PendingApproval when its numeric `argument` exceeds
//! `above`; with no threshold configured every call to a listed tool needs
//! approval. A listed call whose argument is missing or not a number is a
//! guard error (deny): the threshold cannot be evaluated.
//!
//! A threshold can also apply to a running total: `{ "tools": ["pay"],
//! "budget": "daily", "total_above": "1000" }` makes a listed call
//! PendingApproval when the total of monetary budget `daily` (a scenario's
//! `[[budgets]]` with a `limit`), this call's amount included, would be
//! above `total_above` in the call's window. Admission holds the amount
//! before the guards run and hands each held budget's total to the guards
//! ([`super::MoneyTotal`]), so the guard reads no store; a call that waits
//! for approval releases its hold like any refused call. A call the budget
//! does not count adds nothing to its total and meets only the other
//! thresholds. Both kinds of threshold may be set; either one above asks
//! for approval.
//!
//! Amounts are compared exactly, as decimals, never as binary floats, by the
//! one rule of [`crate::amount`]: the threshold and the argument are each a
//! whole JSON number or a decimal string (`"100.000000000000001"`, no
//! exponent, no spaces). A fraction carried by a binary float or a decimal
//! string with more digits than can be held exactly is refused as a guard
//! error, so the call is denied, never admitted.

use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::Value;

use super::{
    config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardNeeds, GuardVerdict,
};
use crate::amount::exact_amount;
use crate::error::KernelError;
use crate::reason::{DenyReason, MoneyDeny};

/// Configuration of `approval`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// Tools under approval.
    pub tools: Vec<String>,
    /// The numeric argument compared with `above`.
    #[serde(default)]
    pub argument: Option<String>,
    /// The threshold; a value strictly above it needs approval. A whole
    /// number or a decimal string.
    #[serde(default)]
    pub above: Option<Value>,
    /// The monetary budget whose running total `total_above` compares.
    #[serde(default)]
    pub budget: Option<String>,
    /// The threshold on the budget's total with the call; a total strictly
    /// above it needs approval. A whole number or a decimal string.
    #[serde(default)]
    pub total_above: Option<Value>,
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct ApprovalGuard {
    meta: GuardMeta,
    tools: Vec<String>,
    threshold: Option<(String, Decimal)>,
    total: Option<(String, Decimal)>,
}

impl ApprovalGuard {
    /// Validates the configuration.
    pub fn new(meta: GuardMeta, config: ApprovalConfig) -> Result<Self, KernelError> {
        if config.tools.is_empty() {
            return Err(config_error(
                &meta,
                "tools is empty; list the tools that need approval",
            ));
        }
        let threshold = match (config.argument, config.above) {
            (Some(arg), Some(above)) => match exact_amount(&above) {
                Ok(above) => Some((arg, above)),
                Err(_) => {
                    return Err(config_error(
                        &meta,
                        "above is not an exact amount; use a whole number or a decimal string such as \"100.50\"",
                    ))
                }
            },
            (None, None) => None,
            (Some(_), None) => {
                return Err(config_error(
                    &meta,
                    "argument is set without above; add above",
                ))
            }
            (None, Some(_)) => {
                return Err(config_error(
                    &meta,
                    "above is set without argument; add argument",
                ))
            }
        };
        let total = match (config.budget, config.total_above) {
            (Some(budget), Some(above)) => match exact_amount(&above) {
                Ok(above) => Some((budget, above)),
                Err(_) => {
                    return Err(config_error(
                        &meta,
                        "total_above is not an exact amount; use a whole number or a decimal string such as \"1000.00\"",
                    ))
                }
            },
            (None, None) => None,
            (Some(_), None) => {
                return Err(config_error(
                    &meta,
                    "budget is set without total_above; add total_above",
                ))
            }
            (None, Some(_)) => {
                return Err(config_error(
                    &meta,
                    "total_above is set without budget; name the monetary budget whose total it compares",
                ))
            }
        };
        Ok(ApprovalGuard {
            meta,
            tools: config.tools,
            threshold,
            total,
        })
    }
}

impl Guard for ApprovalGuard {
    fn meta(&self) -> &GuardMeta {
        &self.meta
    }
    fn kind(&self) -> GuardKind {
        GuardKind::Approval
    }
    fn needs(&self) -> GuardNeeds {
        GuardNeeds {
            money: self.total.is_some()
                && !crate::planted::weakened_anywhere(
                    crate::planted::Weakness::ApprovalWithoutTotals,
                ),
            ..GuardNeeds::default()
        }
    }
    fn money_budgets(&self) -> Vec<&str> {
        self.total
            .iter()
            .map(|(budget, _)| budget.as_str())
            .collect()
    }
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        if !self.tools.iter().any(|t| t == ctx.tool) {
            return Ok(GuardVerdict::Allow);
        }
        if self.threshold.is_none() && self.total.is_none() {
            return Ok(GuardVerdict::PendingApproval(
                DenyReason::ApprovalRequired {
                    tool: ctx.tool.to_string(),
                },
            ));
        }
        if let Some(pending) = self.above_threshold(ctx)? {
            return Ok(GuardVerdict::PendingApproval(pending));
        }
        if let Some((budget, above)) = &self.total {
            if let Some(held) = ctx.money.get(budget).filter(|held| held.total > *above) {
                return Ok(GuardVerdict::PendingApproval(DenyReason::from(
                    MoneyDeny::TotalAboveApproval {
                        budget: budget.clone(),
                        total: held.total.to_string(),
                        threshold: above.to_string(),
                        currency: held.currency.clone(),
                    },
                )));
            }
        }
        Ok(GuardVerdict::Allow)
    }
}

impl ApprovalGuard {
    /// The per-call threshold's reason when the call's argument is above it.
    fn above_threshold(&self, ctx: &GuardContext<'_>) -> Result<Option<DenyReason>, GuardError> {
        let Some((argument, above)) = &self.threshold else {
            return Ok(None);
        };
        let value = exact_amount(ctx.arguments.get(argument).unwrap_or(&Value::Null));
        let value = match value {
            Ok(value) => value,
            Err(problem) => {
                return Err(GuardError(format!(
                    "argument {argument} of tool {} {problem}; the approval threshold cannot be evaluated",
                    ctx.tool
                )))
            }
        };
        Ok((value > *above).then(|| DenyReason::ApprovalThreshold {
            argument: argument.clone(),
            value: value.to_string(),
            threshold: above.to_string(),
        }))
    }
}
