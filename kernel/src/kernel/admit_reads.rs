//! Admission's reads of the budget answers of its batch: the holds of
//! step 5 and the sibling shares of step 7, each denying on the first
//! refusal or failure.

use super::*;
use crate::reason::BudgetName;

/// Reads the hold answers of step 5 in order; a refused or failed hold
/// denies, and every granted hold is kept for its release or commit.
pub(super) fn read_holds(
    wanted_holds: &[WantedHold],
    answers: &mut impl Iterator<Item = Result<OpAnswer, StoreError>>,
    state: &mut Admitting,
) -> Result<(), Box<Outcome>> {
    let deny = |reason: DenyReason| Box::new(Outcome::deny(reason, None, Vec::new()));
    for wanted in wanted_holds {
        let read = |used: u64, limit: u64, outcome: &str| BudgetRead {
            key: wanted.key.clone(),
            amount: wanted.amount,
            limit,
            used,
            outcome: outcome.to_string(),
            settled: None,
        };
        match next_answer(answers, StoreName::Budget) {
            Ok(OpAnswer::Hold(HoldOutcome::Granted { used, limit })) => {
                state.trace.budget_keys.push(read(used, limit, "held"));
                state.holds.push(wanted.hold_id.clone());
                if matches!(
                    wanted.what,
                    HoldOf::Money(_) | HoldOf::Units(BudgetName::Monetary { .. })
                ) {
                    state.money_holds.insert(&wanted.hold_id, &wanted.key);
                }
                if let HoldOf::Money(money @ PlannedMoney { share: None, .. }) = &wanted.what {
                    state.money.insert(
                        money.budget.clone(),
                        MoneyTotal {
                            total: units_decimal(used, money.scale),
                            currency: money.currency.clone(),
                        },
                    );
                }
            }
            Ok(OpAnswer::Hold(HoldOutcome::Refused { used, limit })) => {
                state.trace.budget_keys.push(read(used, limit, "refused"));
                return Err(deny(match &wanted.what {
                    HoldOf::Units(budget) => DenyReason::BudgetExhausted {
                        budget: budget.clone(),
                        used,
                        limit,
                        amount: wanted.amount,
                    },
                    HoldOf::Money(money) => DenyReason::from(match &money.share {
                        None => MoneyDeny::Exceeded {
                            budget: money.budget.clone(),
                            spent: format_units(used, money.scale),
                            amount: format_units(wanted.amount, money.scale),
                            limit: money.limit_text.clone(),
                            currency: money.currency.clone(),
                            window: money.window,
                        },
                        Some((capability, bps)) => MoneyDeny::ShareExceeded {
                            budget: money.budget.clone(),
                            capability: capability.clone(),
                            bps: *bps,
                            spent: format_units(used, money.scale),
                            amount: format_units(wanted.amount, money.scale),
                            limit: money.limit_text.clone(),
                            currency: money.currency.clone(),
                            window: money.window,
                        },
                    }),
                }));
            }
            Ok(_) => return Err(deny(unexpected(StoreName::Budget))),
            Err(e) => return Err(deny(e.into())),
        }
    }
    Ok(())
}

/// Reads the share answers of step 7, root side first, recording each in
/// `trace`; the first refused or failed admission denies.
pub(super) fn read_shares(
    shares: &[ShareClaim],
    answers: &mut impl Iterator<Item = Result<OpAnswer, StoreError>>,
    trace: &mut DecisionTrace,
) -> Result<(), Box<Outcome>> {
    let deny = |reason: DenyReason| Box::new(Outcome::deny(reason, None, Vec::new()));
    for claim in shares {
        let admitted = match next_answer(answers, StoreName::SiblingShare) {
            Ok(OpAnswer::Share(admission)) => Ok(admission),
            Ok(_) => Err(unexpected(StoreName::SiblingShare)),
            Err(e) => Err(DenyReason::from(e)),
        };
        trace.shares.push(ShareRead {
            parent: claim.parent_id.clone(),
            child: claim.child_id.clone(),
            child_bps: claim.child_bps,
            outcome: match &admitted {
                Ok(ShareAdmission::Admitted) => "admitted",
                Ok(ShareAdmission::Oversubscribed { .. }) => "oversubscribed",
                Ok(ShareAdmission::UnknownParent) => "unknown-parent",
                Err(_) => "error",
            }
            .to_string(),
        });
        match admitted {
            Ok(ShareAdmission::Admitted) => {}
            Ok(refusal) => {
                if let Some(reason) = share_refusal_reason(claim, &refusal) {
                    return Err(deny(reason));
                }
            }
            Err(reason) => return Err(deny(reason)),
        }
    }
    Ok(())
}
