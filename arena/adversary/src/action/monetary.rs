//! The monetary dimension of a widening link: a child whose monetary scope
//! constraint is wider than its parent's in exactly one way (another
//! argument, another currency, a larger per-call limit, a larger total) or
//! that drops the constraint, and the accomplice's call that uses it.
//!
//! The plan names the form only; the evaluator reads the parent's
//! constraint from the signed parent token and derives the child's with
//! [`MonetaryWidening::widen`], so the link differs from its parent in the
//! one way the form names. A widening to another argument moves the base
//! call's amount to that argument too, so the call is one the child's
//! constraint would admit: another amount argument the tool's declared
//! input schema carries as a whole number when there is one.

use chio_kernel::token::MonetaryLimit;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{BaseStep, MutatedCall};
use chio_arena::adversaries::class::MONETARY_FORMS;
use chio_arena::model::ScenarioFile;
use chio_arena::scenario::tools::server_tools;

/// The currency a currency widening names (ISO 4217's code for testing),
/// or [`OTHER_CURRENCY_FALLBACK`] when the parent already counts in it.
const OTHER_CURRENCY: &str = "XTS";
/// The currency a currency widening names under a parent counting in [`OTHER_CURRENCY`].
const OTHER_CURRENCY_FALLBACK: &str = "XXX";

/// One way a link's monetary constraint is wider than its parent's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "kebab-case")]
pub enum MonetaryWidening {
    /// The amount read from another argument (`argument`), the parent's
    /// (`parent`) left unchecked.
    Argument {
        /// The parent's amount argument.
        parent: String,
        /// The child's.
        argument: String,
    },
    /// The amounts counted in another currency, a total of their own.
    Currency,
    /// A per-call limit one minor unit above the parent's.
    PerCall,
    /// A total one minor unit above the parent's.
    Total,
    /// No monetary constraint at all.
    Drop,
}

impl MonetaryWidening {
    /// The form `choice` picks (modulo [`MONETARY_FORMS`]) under `parent`;
    /// `amounts` are the arguments the called tool can carry an amount in.
    pub fn of_choice(choice: u32, parent: &MonetaryLimit, amounts: &[String]) -> Self {
        match choice % MONETARY_FORMS {
            0 => MonetaryWidening::Argument {
                parent: parent.argument.clone(),
                argument: amounts
                    .iter()
                    .find(|a| **a != parent.argument)
                    .cloned()
                    .unwrap_or_else(|| format!("{}_other", parent.argument)),
            },
            1 => MonetaryWidening::Currency,
            2 => MonetaryWidening::PerCall,
            3 => MonetaryWidening::Total,
            _ => MonetaryWidening::Drop,
        }
    }

    /// The child's constraint under `parent`, `None` when the form drops it.
    pub fn widen(&self, parent: &MonetaryLimit) -> Option<MonetaryLimit> {
        let mut child = parent.clone();
        match self {
            MonetaryWidening::Argument { argument, .. } => child.argument = argument.clone(),
            MonetaryWidening::Currency => {
                child.currency = if parent.currency == OTHER_CURRENCY {
                    OTHER_CURRENCY_FALLBACK
                } else {
                    OTHER_CURRENCY
                }
                .to_string();
            }
            MonetaryWidening::PerCall => {
                child.max_per_invocation = parent.max_per_invocation.saturating_add(1)
            }
            MonetaryWidening::Total => child.max_total = parent.max_total.saturating_add(1),
            MonetaryWidening::Drop => return None,
        }
        Some(child)
    }

    /// For an argument widening, the base call's amount carried in the
    /// child's argument as well (a whole 1 when the base call has none).
    pub(super) fn carry_amount(&self, call: &mut MutatedCall, base: &BaseStep) {
        let MonetaryWidening::Argument { parent, argument } = self else {
            return;
        };
        let amount = base
            .arguments
            .get(parent)
            .filter(|a| a.is_u64())
            .cloned()
            .unwrap_or(Value::from(1u64));
        if let Value::Object(map) = &mut call.arguments {
            map.insert(argument.clone(), amount);
        }
    }
}

/// The arguments `tool` of `server` declares as integers or numbers, in
/// name order: where a widened link may read its amount.
pub(super) fn amount_arguments(file: &ScenarioFile, server: &str, tool: &str) -> Vec<String> {
    let Some(server) = file.servers.iter().find(|s| s.id == server) else {
        return Vec::new();
    };
    let tools = server_tools(server).unwrap_or_default();
    let Some(tool) = tools.iter().find(|t| t.name == tool) else {
        return Vec::new();
    };
    let numeric = |kind: &Value| matches!(kind.as_str(), Some("integer" | "number"));
    tool.input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .filter(|(_, p)| p.get("type").is_some_and(numeric))
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> MonetaryLimit {
        MonetaryLimit {
            argument: "amount".into(),
            currency: "EUR".into(),
            max_per_invocation: 50_000,
            max_total: 200_000,
        }
    }

    // Each form widens exactly one field of the parent's constraint, or drops it.
    #[test]
    fn each_form_widens_one_way() {
        let p = parent();
        let amounts = vec!["amount".to_string(), "fee".to_string()];
        let forms: Vec<MonetaryWidening> = (0..MONETARY_FORMS)
            .map(|c| MonetaryWidening::of_choice(c, &p, &amounts))
            .collect();
        let widened: Vec<Option<MonetaryLimit>> = forms.iter().map(|f| f.widen(&p)).collect();
        let with = |f: fn(&mut MonetaryLimit)| {
            let mut m = p.clone();
            f(&mut m);
            Some(m)
        };
        assert_eq!(
            widened,
            vec![
                with(|m| m.argument = "fee".into()),
                with(|m| m.currency = "XTS".into()),
                with(|m| m.max_per_invocation = 50_001),
                with(|m| m.max_total = 200_001),
                None,
            ]
        );
        assert_eq!(MonetaryWidening::of_choice(5, &p, &amounts), forms[0]);
    }

    // Without another amount argument the widening still names one, and another currency never repeats the parent's.
    #[test]
    fn fallbacks() {
        let mut p = parent();
        let alone = MonetaryWidening::of_choice(0, &p, &["amount".to_string()]);
        assert_eq!(
            alone.widen(&p).map(|m| m.argument),
            Some("amount_other".to_string())
        );
        p.currency = "XTS".into();
        assert_eq!(
            MonetaryWidening::Currency.widen(&p).map(|m| m.currency),
            Some("XXX".to_string())
        );
    }
}
