//! `monetary = { ... }` on a grant or a delegate step: the kernel's
//! monetary scope constraint (`chio_kernel::token::MonetaryLimit`).
//!
//! The constraint names the argument carrying each call's amount, a
//! currency code and two limits in whole minor units (the kernel reads the
//! amount as a JSON integer and compares integers; there is no decimal
//! point). So each limit must be a TOML integer of at least 1: a decimal
//! string such as `"500.00"` (the form a `[[budgets]]` limit takes), a
//! float, zero or a negative number is refused naming the unit. On a grant
//! the argument must be one every tool the grant covers can carry as an
//! integer, by the tool's declared input schema. A delegate step's
//! constraint is checked for its form only: whether it stays within its
//! parent's is the kernel's question when the child is presented.

use chio_kernel::token::{MonetaryLimit, ANY_TOOL};
use serde_json::Value;

use super::budgets::is_currency_code;
use super::checks::check_id;
use super::Validator;
use crate::error::ArenaError;
use crate::model::{GrantDecl, MonetaryDecl};
use crate::scenario::tools::server_tools;

/// The constraint `decl` at `field` as the kernel carries it, or the first
/// key at fault.
pub(super) fn check_monetary(
    decl: &MonetaryDecl,
    field: &str,
) -> Result<MonetaryLimit, ArenaError> {
    let at = |key: &str| format!("{field}.{key}");
    check_id(&decl.argument, at("argument"))?;
    if !is_currency_code(&decl.currency) {
        return Err(ArenaError::BudgetCurrency {
            field: at("currency"),
        });
    }
    minor_units(&decl.max_per_invocation, at("max_per_invocation"))?;
    minor_units(&decl.max_total, at("max_total"))?;
    decl.to_limit().ok_or_else(|| ArenaError::MonetaryAmount {
        field: at("max_total"),
        found: "not a number",
    })
}

/// Refuses a limit that is not a whole number of minor units, at least 1.
fn minor_units(value: &toml::Value, field: String) -> Result<(), ArenaError> {
    let found = match value {
        toml::Value::Integer(n) if *n >= 1 => return Ok(()),
        toml::Value::Integer(0) => "zero",
        toml::Value::Integer(_) => "negative",
        toml::Value::String(_) => "a string",
        toml::Value::Float(_) => "a fractional number",
        _ => "not a number",
    };
    Err(ArenaError::MonetaryAmount { field, found })
}

/// Why `schema` cannot carry `argument` as a whole number, if it cannot: a
/// declared property typed as neither an integer nor a number, or an
/// undeclared one where the schema admits no other property.
fn integer_refusal(schema: &Value, argument: &str) -> Option<&'static str> {
    let Some(property) = schema.get("properties").and_then(|p| p.get(argument)) else {
        return (schema.get("additionalProperties") == Some(&Value::Bool(false)))
            .then_some("does not declare and closes to other arguments");
    };
    let numeric = |kind: &str| matches!(kind, "integer" | "number");
    let admits = match property.get("type") {
        None => true,
        Some(Value::String(kind)) => numeric(kind),
        Some(Value::Array(kinds)) => kinds.iter().any(|k| k.as_str().is_some_and(numeric)),
        Some(_) => false,
    };
    (!admits).then_some("declares as neither an integer nor a number")
}

impl Validator<'_> {
    /// Grant `i`'s monetary constraint: its form, and that every tool it
    /// covers (every tool of its server, for `*`) can carry the amount.
    pub(super) fn grant_monetary(&self, i: usize, grant: &GrantDecl) -> Result<(), ArenaError> {
        let Some(decl) = &grant.monetary else {
            return Ok(());
        };
        let field = format!("grants[{i}].monetary");
        let limit = check_monetary(decl, &field)?;
        let Some(server) = self.file.servers.iter().find(|s| s.id == grant.server) else {
            return Ok(());
        };
        let tools = server_tools(server).unwrap_or_default();
        let covered = tools
            .iter()
            .filter(|t| grant.tools.iter().any(|g| g == &t.name || g == ANY_TOOL));
        for tool in covered {
            if let Some(why) = integer_refusal(&tool.input_schema, &limit.argument) {
                return Err(ArenaError::MonetaryArgument {
                    field: format!("{field}.argument"),
                    argument: limit.argument.clone(),
                    server: grant.server.clone(),
                    tool: tool.name.clone(),
                    why,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decl(per_call: toml::Value, total: toml::Value) -> MonetaryDecl {
        MonetaryDecl {
            argument: "amount".into(),
            currency: "EUR".into(),
            max_per_invocation: per_call,
            max_total: total,
        }
    }

    // Limits are whole minor units of at least 1; a decimal string, a float, zero or a negative number is refused at its key.
    #[test]
    fn limits_are_whole_minor_units() {
        let ok = check_monetary(&decl(50_000.into(), 200_000.into()), "grants[0].monetary")
            .expect("whole minor units");
        assert_eq!((ok.max_per_invocation, ok.max_total), (50_000, 200_000));
        let refused = |per_call: toml::Value, found: &'static str| {
            let err = check_monetary(&decl(per_call, 1.into()), "m").unwrap_err();
            assert_eq!(
                err,
                ArenaError::MonetaryAmount {
                    field: "m.max_per_invocation".into(),
                    found
                }
            );
        };
        refused("500.00".into(), "a string");
        refused(500.5.into(), "a fractional number");
        refused(0.into(), "zero");
        refused((-5).into(), "negative");
        refused(true.into(), "not a number");
        let err = check_monetary(&decl(1.into(), 0.into()), "m").unwrap_err();
        assert_eq!(err.code(), "CHIO-SCENARIO-MONETARY-AMOUNT");
    }

    // The argument is an id and the currency a code.
    #[test]
    fn argument_and_currency() {
        let mut bad = decl(1.into(), 1.into());
        bad.currency = "E U R".into();
        let err = check_monetary(&bad, "m").unwrap_err();
        assert_eq!(
            err,
            ArenaError::BudgetCurrency {
                field: "m.currency".into()
            }
        );
        let mut bad = decl(1.into(), 1.into());
        bad.argument = String::new();
        assert_eq!(
            check_monetary(&bad, "m").unwrap_err().code(),
            "CHIO-SCENARIO-INVALID-ID"
        );
    }

    // An argument is refused only where the schema types it as neither integer nor number, or closes to it.
    #[test]
    fn integer_refusals() {
        let schema = json!({
            "type": "object",
            "properties": {
                "amount": {"type": "integer"},
                "fee": {"type": ["integer", "null"]},
                "price": {"type": "number"},
                "note": {},
                "label": {"type": "string"},
            },
        });
        for ok in ["amount", "fee", "price", "note", "other"] {
            assert_eq!(integer_refusal(&schema, ok), None, "{ok}");
        }
        assert!(integer_refusal(&schema, "label").is_some());
        let closed = json!({"type": "object", "properties": {}, "additionalProperties": false});
        assert!(integer_refusal(&closed, "amount").is_some());
    }
}
