//! Exact decimal amounts: the one rule by which the approval guard compares
//! an amount with its threshold and a monetary budget counts what a call
//! spends.
//!
//! An amount is a whole JSON number or a decimal string (`"999.99"`, no
//! exponent, no spaces, an optional leading minus). A JSON number with a
//! fraction is refused, because a binary float has already rounded it before
//! the kernel sees it (`100.000000000000001` arrives as `100`); so is a
//! decimal string with more digits than a 96-bit decimal holds exactly.
//!
//! A monetary budget counts in minor units: its limit's decimal places as
//! written (`"2000.00"`: 2) are its scale, and every amount becomes the
//! integer `amount * 10^scale`. An amount whose significant decimal places
//! exceed the scale (`"999.999"` under `"2000.00"`) is refused, never
//! rounded; trailing zeros carry nothing (`"999.990"` is `99999` hundredths).
//! Minor units stay at most [`MAX_UNITS`] (2^53): every figure a decision
//! trace prints (an amount, a total, a limit) is then an exact JSON integer,
//! and every store sums them far below [`crate::ledger::MAX_AMOUNT`], so
//! them exactly.

use std::str::FromStr;

use rust_decimal::Decimal;
use serde_json::Value;

/// The most minor units an amount or a limit may have: 2^53, the largest
/// integer canonical JSON prints exactly.
pub const MAX_UNITS: u64 = 1 << 53;

/// Reads an amount exactly: a whole JSON number, or a decimal string of
/// digits with at most one point and an optional leading minus. Anything
/// else (a fraction carried by a binary float, an exponent, spaces, more
/// digits than a 96-bit decimal holds) answers why it cannot be read.
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

/// Why an amount cannot be counted in a budget's minor units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitsProblem {
    /// Not an exact amount (see [`exact_amount`]).
    Malformed(&'static str),
    /// More significant decimal places than the scale.
    TooPrecise {
        /// The amount's significant decimal places.
        places: u32,
    },
    /// Zero or below.
    NotPositive,
    /// More minor units than a store can sum exactly.
    TooLarge,
}

/// `amount` in minor units of `scale` decimal places; see the module doc.
pub fn minor_units(amount: Decimal, scale: u32) -> Result<u64, UnitsProblem> {
    if amount <= Decimal::ZERO {
        return Err(UnitsProblem::NotPositive);
    }
    let amount = amount.normalize();
    let places = amount.scale();
    if places > scale {
        return Err(UnitsProblem::TooPrecise { places });
    }
    10i128
        .checked_pow(scale - places)
        .and_then(|factor| amount.mantissa().checked_mul(factor))
        .and_then(|units| u64::try_from(units).ok())
        .filter(|units| *units <= MAX_UNITS)
        .ok_or(UnitsProblem::TooLarge)
}

/// The value's minor units in the budget's scale, from the argument's
/// JSON value.
pub fn value_units(value: &Value, scale: u32) -> Result<u64, UnitsProblem> {
    let amount = exact_amount(value).map_err(UnitsProblem::Malformed)?;
    minor_units(amount, scale)
}

/// `units` minor units written with `scale` decimal places (`199998`, 2:
/// `1999.98`).
pub fn format_units(units: u64, scale: u32) -> String {
    Decimal::from_i128_with_scale(i128::from(units), scale).to_string()
}

/// `units` minor units as the decimal they stand for.
pub fn units_decimal(units: u64, scale: u32) -> Decimal {
    Decimal::from_i128_with_scale(i128::from(units), scale)
}

/// A monetary budget's limit: the text as written, its scale and its value
/// in minor units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoneyLimit {
    /// The limit as written, such as `2000.00`.
    pub text: String,
    /// Its decimal places as written: the budget's minor unit.
    pub scale: u32,
    /// The limit in minor units.
    pub units: u64,
}

impl MoneyLimit {
    /// Reads a limit: a positive exact decimal string, its decimal places
    /// as written being the scale. Answers what is wrong otherwise.
    pub fn parse(text: &str) -> Result<MoneyLimit, String> {
        let amount = exact_amount(&Value::String(text.to_string())).map_err(|p| p.to_string())?;
        let scale = text.split_once('.').map_or(0, |(_, f)| f.len());
        // A 96-bit decimal holds at most 28 decimal places.
        let scale = u32::try_from(scale)
            .ok()
            .filter(|s| *s <= 28)
            .ok_or("has more than 28 decimal places")?;
        let units = minor_units(amount, scale).map_err(|problem| match problem {
            UnitsProblem::NotPositive => "is zero or negative".to_string(),
            UnitsProblem::TooLarge => {
                format!("is more than {MAX_UNITS} (2^53) minor units at {scale} decimal places")
            }
            UnitsProblem::Malformed(p) => p.to_string(),
            UnitsProblem::TooPrecise { .. } => "is not exact".to_string(),
        })?;
        Ok(MoneyLimit {
            text: text.to_string(),
            scale,
            units,
        })
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

        // Proves minor units never panic and, when accepted, write back to the same value at the budget's scale.
        #[test]
        fn minor_units_round_trip(text in ".{0,40}", digits in "[0-9]{1,12}(\\.[0-9]{1,4})?", scale in 0u32..30) {
            let _ = value_units(&json!(text), scale);
            if let Ok(units) = value_units(&json!(digits.clone()), scale) {
                let back = exact_amount(&json!(format_units(units, scale))).unwrap();
                proptest::prop_assert_eq!(back, exact_amount(&json!(digits)).unwrap());
            }
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

    // Proves amounts become exact minor units at the budget's scale, and more places, zero, negatives and overflow are refused, never rounded.
    #[test]
    fn minor_units_are_exact_or_refused() {
        assert_eq!(value_units(&json!("999.99"), 2), Ok(99_999));
        assert_eq!(value_units(&json!("999.990"), 2), Ok(99_999));
        assert_eq!(value_units(&json!("5"), 2), Ok(500));
        assert_eq!(value_units(&json!(7), 2), Ok(700));
        assert_eq!(value_units(&json!("0.01"), 2), Ok(1));
        assert_eq!(
            value_units(&json!("999.999"), 2),
            Err(UnitsProblem::TooPrecise { places: 3 })
        );
        assert_eq!(
            value_units(&json!("0.5"), 0),
            Err(UnitsProblem::TooPrecise { places: 1 })
        );
        assert_eq!(value_units(&json!("0"), 2), Err(UnitsProblem::NotPositive));
        assert_eq!(
            value_units(&json!("0.00"), 2),
            Err(UnitsProblem::NotPositive)
        );
        assert_eq!(value_units(&json!("-1"), 2), Err(UnitsProblem::NotPositive));
        assert_eq!(value_units(&json!(-3), 2), Err(UnitsProblem::NotPositive));
        assert!(matches!(
            value_units(&json!(999.99), 2),
            Err(UnitsProblem::Malformed(_))
        ));
        assert!(matches!(
            value_units(&json!("1,000"), 2),
            Err(UnitsProblem::Malformed(_))
        ));
        assert_eq!(
            value_units(&json!("92233720368547758.07"), 2),
            Err(UnitsProblem::TooLarge)
        );
        // 2^53 minor units is the most a trace prints exactly.
        assert_eq!(
            value_units(&json!("90071992547409.93"), 2),
            Err(UnitsProblem::TooLarge)
        );
        assert_eq!(value_units(&json!("90071992547409.92"), 2), Ok(MAX_UNITS));
        assert_eq!(value_units(&json!("1"), 28), Err(UnitsProblem::TooLarge));
        assert_eq!(format_units(199_998, 2), "1999.98");
        assert_eq!(format_units(5, 0), "5");
    }

    // Proves a limit's scale is its decimal places as written, and a limit that is not a positive exact decimal string is refused with its cause.
    #[test]
    fn limits_carry_their_scale() {
        let limit = MoneyLimit::parse("2000.00").unwrap();
        assert_eq!((limit.scale, limit.units), (2, 200_000));
        assert_eq!(MoneyLimit::parse("2000").unwrap().units, 2000);
        assert_eq!(MoneyLimit::parse("0.001").unwrap().units, 1);
        for (bad, cause) in [
            ("0", "zero or negative"),
            ("0.00", "zero or negative"),
            ("-5", "zero or negative"),
            ("1e3", "not a decimal string"),
            ("", "not a decimal string"),
            ("2,000", "not a decimal string"),
            (
                "1.00000000000000000000000000000",
                "more than 28 decimal places",
            ),
            ("99999999999999999999", "minor units"),
        ] {
            let err = MoneyLimit::parse(bad).unwrap_err();
            assert!(err.contains(cause), "{bad}: {err}");
        }
    }
}
