//! `approval`: human approval above a threshold.
//!
//! Config: `{ "tools": ["pay"], "argument": "amount", "above": 100 }`. A call
//! to a listed tool is PendingApproval when its numeric `argument` exceeds
//! `above`; with no `argument` configured every call to a listed tool needs
//! approval. A listed call whose argument is missing or not a number is a
//! guard error (deny): the threshold cannot be evaluated.
//!
//! Amounts are compared exactly, as decimals, never as binary floats: the
//! threshold and the argument are each a whole JSON number or a decimal
//! string (`"100.000000000000001"`, no exponent, no spaces). A JSON number
//! with a fraction is refused, because a binary float has already rounded
//! it before the kernel sees it (`100.000000000000001` arrives as `100`);
//! so is a decimal string with more digits than can be held exactly. Both
//! refusals are guard errors, so the call is denied, never admitted.

use std::str::FromStr;

use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::Value;

use super::{config_error, Guard, GuardContext, GuardError, GuardKind, GuardMeta, GuardVerdict};
use crate::error::KernelError;
use crate::reason::DenyReason;

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
}

/// Reads an amount exactly: a whole JSON number, or a decimal string of
/// digits with at most one point and an optional leading minus. Anything
/// else (a fraction carried by a binary float, an exponent, spaces, more
/// digits than a 96-bit decimal holds) answers why it cannot be compared.
pub fn exact_amount(value: &Value) -> Result<Decimal, &'static str> {
    match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(Decimal::from(i))
            } else if let Some(u) = n.as_u64() {
                Ok(Decimal::from(u))
            } else {
                Err("is a number with a fraction, which JSON carries as a rounded binary float; pass it as a decimal string")
            }
        }
        Value::String(text) => {
            let digits = text.strip_prefix('-').unwrap_or(text);
            let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
            let well_formed = !whole.is_empty()
                && whole.bytes().all(|b| b.is_ascii_digit())
                && fraction.bytes().all(|b| b.is_ascii_digit())
                && (fraction.is_empty() != digits.contains('.'));
            if !well_formed {
                return Err("is not a decimal string of digits with at most one point");
            }
            Decimal::from_str_exact(text)
                .or_else(|_| {
                    Decimal::from_str(text).and_then(|d| {
                        // `from_str_exact` refuses some exact values with
                        // trailing zeros; accept them only if nothing was lost.
                        if d.normalize().to_string() == normalize_text(text) {
                            Ok(d)
                        } else {
                            Err(rust_decimal::Error::Underflow)
                        }
                    })
                })
                .map_err(|_| "has more digits than can be compared exactly")
        }
        _ => Err("is missing or not a number"),
    }
}

/// A decimal string without redundant zeros, to compare with a parsed value.
fn normalize_text(text: &str) -> String {
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let whole = whole.trim_start_matches('0');
    let fraction = fraction.trim_end_matches('0');
    let whole = if whole.is_empty() { "0" } else { whole };
    let body = if fraction.is_empty() {
        whole.to_string()
    } else {
        format!("{whole}.{fraction}")
    };
    if body == "0" {
        body
    } else {
        format!("{sign}{body}")
    }
}

/// The built guard.
#[derive(Debug, Clone)]
pub struct ApprovalGuard {
    meta: GuardMeta,
    tools: Vec<String>,
    threshold: Option<(String, Decimal)>,
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
        Ok(ApprovalGuard {
            meta,
            tools: config.tools,
            threshold,
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
    fn check_request(&self, ctx: &GuardContext<'_>) -> Result<GuardVerdict, GuardError> {
        if !self.tools.iter().any(|t| t == ctx.tool) {
            return Ok(GuardVerdict::Allow);
        }
        let Some((argument, above)) = &self.threshold else {
            return Ok(GuardVerdict::PendingApproval(
                DenyReason::ApprovalRequired {
                    tool: ctx.tool.to_string(),
                },
            ));
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
        if value > *above {
            Ok(GuardVerdict::PendingApproval(
                DenyReason::ApprovalThreshold {
                    argument: argument.clone(),
                    value: value.to_string(),
                    threshold: above.to_string(),
                },
            ))
        } else {
            Ok(GuardVerdict::Allow)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Proves amounts compare exactly: one unit in the 15th decimal place above the threshold is above it.
    #[test]
    fn decimal_strings_compare_exactly() {
        let above = exact_amount(&json!(100)).unwrap();
        assert!(exact_amount(&json!("100.000000000000001")).unwrap() > above);
        assert!(exact_amount(&json!("100.000000000000000")).unwrap() == above);
        assert!(exact_amount(&json!("99.999999999999999999")).unwrap() < above);
        assert!(exact_amount(&json!("-5")).unwrap() < above);
    }

    proptest::proptest! {
        // Proves the amount parser never panics on arbitrary text, and that whatever it accepts is a plain decimal that compares exactly with itself written out again.
        #[test]
        fn amount_parser_is_total_and_exact(text in ".{0,64}", digits in "-?[0-9]{1,20}(\\.[0-9]{1,8})?") {
            let _ = exact_amount(&json!(text));
            let parsed = exact_amount(&json!(digits.clone())).expect("a plain decimal parses");
            let again = exact_amount(&json!(parsed.to_string())).expect("its own text parses");
            proptest::prop_assert_eq!(parsed, again);
        }
    }

    // Proves what cannot be compared exactly is refused: fractions as floats, exponents, spaces, too many digits.
    #[test]
    fn inexact_amounts_are_refused() {
        for bad in [
            json!(100.5),
            json!("1e3"),
            json!(" 100"),
            json!("100."),
            json!(".5"),
            json!("+5"),
            json!("NaN"),
            json!("1".repeat(40)),
            json!("0.00000000000000000000000000000001"),
            json!(null),
            json!(true),
        ] {
            assert!(exact_amount(&bad).is_err(), "{bad} must be refused");
        }
    }
}
