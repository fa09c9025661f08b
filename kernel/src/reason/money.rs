//! The reasons of monetary budgets (`[[budgets]]` with a `limit`): what a
//! call's amount or currency argument lacks, a budget whose total the call
//! would take past its limit, and a running total above an approval
//! threshold.
//!
//! Each names the budget by its id, so a reader finds the declaration; an
//! amount is written in the budget's decimal places, a currency the call
//! named is made printable first (it is the caller's text).

use std::fmt;

use super::ReasonCode;

/// A monetary-budget reason; see the module doc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MoneyDeny {
    /// The amount argument is absent.
    AmountMissing {
        /// The budget's id.
        budget: String,
        /// The argument that carries the amount.
        argument: String,
    },
    /// The amount is not an exact decimal (or is too large to sum).
    AmountMalformed {
        /// The budget's id.
        budget: String,
        /// The argument that carries the amount.
        argument: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// The amount has more decimal places than the budget's limit.
    AmountTooPrecise {
        /// The budget's id.
        budget: String,
        /// The argument that carries the amount.
        argument: String,
        /// The amount's significant decimal places.
        places: u32,
        /// The budget's limit as written.
        limit: String,
    },
    /// The amount is zero or negative.
    AmountNotPositive {
        /// The budget's id.
        budget: String,
        /// The argument that carries the amount.
        argument: String,
    },
    /// The currency argument is absent.
    CurrencyMissing {
        /// The budget's id.
        budget: String,
        /// The argument that carries the currency.
        argument: String,
        /// The budget's currency.
        currency: String,
    },
    /// The currency argument names another currency.
    CurrencyMismatch {
        /// The budget's id.
        budget: String,
        /// The argument that carries the currency.
        argument: String,
        /// What the call named, made printable (or the JSON type it is).
        found: String,
        /// The budget's currency.
        currency: String,
    },
    /// The call's instant is before the budget's first window.
    WindowBeforeStart {
        /// The budget's id.
        budget: String,
        /// The call's instant (ms).
        now: u64,
        /// Where the first window starts (ms).
        origin: u64,
    },
    /// The call's amount would take the total past the limit.
    Exceeded {
        /// The budget's id.
        budget: String,
        /// Held and spent so far (in the call's window).
        spent: String,
        /// The call's amount.
        amount: String,
        /// The limit.
        limit: String,
        /// The budget's currency.
        currency: String,
        /// The window's index, for a budget counted in windows.
        window: Option<u64>,
    },
    /// The call's amount would take what a delegated capability's lineage
    /// has spent past that capability's share of the budget.
    ShareExceeded {
        /// The budget's id.
        budget: String,
        /// The delegated capability whose share it is.
        capability: String,
        /// Its share, in basis points of the budget's own capability.
        bps: u32,
        /// Held and spent so far under that capability (in the call's window).
        spent: String,
        /// The call's amount.
        amount: String,
        /// The share's limit: the budget's limit times the share, rounded down
        /// to the budget's minor unit.
        limit: String,
        /// The budget's currency.
        currency: String,
        /// The window's index, for a budget counted in windows.
        window: Option<u64>,
    },
    /// The total with this call would be above an approval threshold
    /// (approval, PendingApproval).
    TotalAboveApproval {
        /// The budget's id.
        budget: String,
        /// The total with this call.
        total: String,
        /// The threshold.
        threshold: String,
        /// The budget's currency.
        currency: String,
    },
}

impl MoneyDeny {
    /// The reason's stable code.
    pub fn code(&self) -> ReasonCode {
        use MoneyDeny as M;
        use ReasonCode as C;
        match self {
            M::AmountMissing { .. } => C::BudgetAmountMissing,
            M::AmountMalformed { .. } => C::BudgetAmountMalformed,
            M::AmountTooPrecise { .. } => C::BudgetAmountTooPrecise,
            M::AmountNotPositive { .. } => C::BudgetAmountNotPositive,
            M::CurrencyMissing { .. } => C::BudgetCurrencyMissing,
            M::CurrencyMismatch { .. } => C::BudgetCurrencyMismatch,
            M::WindowBeforeStart { .. } => C::BudgetWindowBeforeStart,
            M::Exceeded { .. } => C::BudgetExceeded,
            M::ShareExceeded { .. } => C::BudgetShareExceeded,
            M::TotalAboveApproval { .. } => C::ApprovalTotalThreshold,
        }
    }
}

impl fmt::Display for MoneyDeny {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use MoneyDeny as M;
        match self {
            M::AmountMissing { budget, argument } => write!(
                f,
                "monetary budget {budget} needs the amount in argument {argument} and the call has none"
            ),
            M::AmountMalformed {
                budget,
                argument,
                problem,
            } => write!(f, "monetary budget {budget}: argument {argument} {problem}"),
            M::AmountTooPrecise {
                budget,
                argument,
                places,
                limit,
            } => write!(
                f,
                "monetary budget {budget}: argument {argument} has {places} decimal places, more than its limit {limit}; amounts are never rounded"
            ),
            M::AmountNotPositive { budget, argument } => write!(
                f,
                "monetary budget {budget}: argument {argument} is zero or negative; an amount spent is positive"
            ),
            M::CurrencyMissing {
                budget,
                argument,
                currency,
            } => write!(
                f,
                "monetary budget {budget} counts {currency} and needs the currency in argument {argument}; the call has none"
            ),
            M::CurrencyMismatch {
                budget,
                argument,
                found,
                currency,
            } => write!(
                f,
                "monetary budget {budget} counts {currency} and argument {argument} names {found}"
            ),
            _ => self.fmt_total(f),
        }
    }
}

impl MoneyDeny {
    /// The reasons about a budget's window or total, after the call's
    /// arguments were read.
    fn fmt_total(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use MoneyDeny as M;
        match self {
            M::WindowBeforeStart {
                    budget,
                    now,
                    origin,
                } => write!(
                    f,
                    "monetary budget {budget} counts in windows from {origin} ms; the call at {now} ms is before the first"
                ),
                M::Exceeded {
                    budget,
                    spent,
                    amount,
                    limit,
                    currency,
                    window,
                } => {
                    write!(
                        f,
                        "monetary budget {budget} exceeded: {spent} of {limit} {currency} spent"
                    )?;
                    spent_tail(f, *window, amount)
                }
                M::ShareExceeded {
                    budget,
                    capability,
                    bps,
                    spent,
                    amount,
                    limit,
                    currency,
                    window,
                } => {
                    write!(
                        f,
                        "monetary budget {budget}: delegated share of {capability} ({bps} bps) exceeded: {spent} of {limit} {currency} spent"
                    )?;
                    spent_tail(f, *window, amount)
                }
                M::TotalAboveApproval {
                    budget,
                    total,
                    threshold,
                    currency,
                } => write!(
                    f,
                    "monetary budget {budget} would reach {total} {currency}, above {threshold}; approval required"
                ),
                // `fmt` prints every other reason; its code stands in for
                // the text if one is ever added to neither (the reason
                // table's test requires each code's text).
                _ => write!(f, "monetary budget reason {}", self.code()),
        }
    }
}

/// The end both exceeded reasons share: the window, when the budget has
/// windows, and the amount the call asked for.
fn spent_tail(f: &mut fmt::Formatter<'_>, window: Option<u64>, amount: &str) -> fmt::Result {
    if let Some(window) = window {
        write!(f, " in window {window}")?;
    }
    write!(f, ", {amount} more requested")
}
