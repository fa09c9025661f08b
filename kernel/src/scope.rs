//! Step 4 of the pipeline: selecting the scope grant and evaluating its constraints.
//!
//! The candidate grants are those naming the call's server and tool (or `*`).
//! They are tried most specific first: a grant naming the tool beats a
//! wildcard, then a longer `path_prefix`, then more constraints, then
//! declaration order. The first whose constraints all pass is selected; when
//! none passes, the most specific candidate's failure is the reason. A
//! constraint the kernel does not know denies; so does a known one that is
//! malformed. `path_prefix` requires every path-like argument (see
//! [`crate::path`]) to normalise to a path under the prefix, compared
//! case-sensitively by whole components; a call with no path argument fails
//! it. `monetary` requires its argument to be a whole number of minor units
//! no larger than `max_per_invocation`, and yields a hold against
//! `max_total` for step 5.

use serde_json::Value;

use crate::path::{is_under, normalize_path, path_arguments};
use crate::reason::DenyReason;
use crate::token::{MonetaryLimit, ScopeGrant, KNOWN_CONSTRAINTS};

/// A monetary amount to hold before dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonetaryHold {
    /// Currency code.
    pub currency: String,
    /// Amount of this call, in minor units.
    pub amount: u64,
    /// The total the capability allows.
    pub max_total: u64,
}

/// The grant that authorises a call.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectedGrant {
    /// Its index in the effective scope.
    pub index: usize,
    /// A monetary hold the grant requires, if any.
    pub monetary: Option<MonetaryHold>,
}

/// Selects the grant for `server`/`tool` and evaluates its constraints.
pub fn select_grant(
    scope: &[ScopeGrant],
    server: &str,
    tool: &str,
    arguments: &Value,
) -> Result<SelectedGrant, DenyReason> {
    let mut candidates: Vec<(usize, &ScopeGrant)> = scope
        .iter()
        .enumerate()
        .filter(|(_, g)| g.server == server && g.covers_tool(tool))
        .collect();
    if candidates.is_empty() {
        return Err(DenyReason::OutOfScope {
            tool: tool.to_string(),
            server: server.to_string(),
        });
    }
    candidates.sort_by_key(|(i, g)| {
        let exact = g.tools.iter().any(|t| t == tool);
        let prefix_len = g.path_prefix().map(str::len).unwrap_or(0);
        (
            std::cmp::Reverse(exact),
            std::cmp::Reverse(prefix_len),
            std::cmp::Reverse(g.constraints.len()),
            *i,
        )
    });
    let mut first_failure = None;
    for (index, grant) in candidates {
        match evaluate_constraints(grant, arguments) {
            Ok(monetary) => return Ok(SelectedGrant { index, monetary }),
            Err(reason) => {
                first_failure.get_or_insert(reason);
            }
        }
    }
    // Candidates were not empty, so one of them failed.
    Err(first_failure.unwrap_or_else(|| DenyReason::OutOfScope {
        tool: tool.to_string(),
        server: server.to_string(),
    }))
}

/// Evaluates every constraint of one grant against the arguments.
pub fn evaluate_constraints(
    grant: &ScopeGrant,
    arguments: &Value,
) -> Result<Option<MonetaryHold>, DenyReason> {
    if let Some(unknown) = grant
        .constraints
        .keys()
        .find(|k| !KNOWN_CONSTRAINTS.contains(&k.as_str()))
    {
        return Err(DenyReason::ConstraintUnknown {
            name: unknown.clone(),
        });
    }
    let mut monetary = None;
    for (name, value) in &grant.constraints {
        match name.as_str() {
            "path_prefix" => check_path_prefix(value, arguments)?,
            "monetary" => monetary = Some(check_monetary(value, arguments)?),
            _ => unreachable!("unknown constraints were refused above"),
        }
    }
    Ok(monetary)
}

fn check_path_prefix(value: &Value, arguments: &Value) -> Result<(), DenyReason> {
    let prefix = value.as_str().and_then(|p| normalize_path(p).ok()).ok_or(
        DenyReason::ConstraintMalformed {
            name: "path_prefix",
        },
    )?;
    let paths = path_arguments(arguments);
    if paths.is_empty() {
        return Err(DenyReason::PathArgumentMissing);
    }
    for arg in paths {
        let normal = normalize_path(&arg.raw).map_err(|p| p.reason(&arg.raw))?;
        if !is_under(&normal, &prefix) {
            return Err(DenyReason::OutsidePrefix {
                path: arg.raw,
                pointer: arg.pointer,
                prefix: value.as_str().unwrap_or_default().to_string(),
            });
        }
    }
    Ok(())
}

fn check_monetary(value: &Value, arguments: &Value) -> Result<MonetaryHold, DenyReason> {
    let limit: MonetaryLimit = serde_json::from_value(value.clone())
        .map_err(|_| DenyReason::ConstraintMalformed { name: "monetary" })?;
    let amount = arguments
        .get(&limit.argument)
        .and_then(Value::as_u64)
        .ok_or_else(|| DenyReason::AmountMalformed {
            argument: limit.argument.clone(),
        })?;
    if amount > limit.max_per_invocation {
        return Err(DenyReason::AmountTooLarge {
            amount,
            currency: limit.currency,
            max: limit.max_per_invocation,
        });
    }
    Ok(MonetaryHold {
        currency: limit.currency,
        amount,
        max_total: limit.max_total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // The most specific passing grant wins, and a decoy path field cannot satisfy a prefix.
    #[test]
    fn selection_and_decoys() {
        let scope = vec![
            ScopeGrant::new("files", &["*"]).with_path_prefix("/w/"),
            ScopeGrant::new("files", &["read_file"]).with_path_prefix("/w/shared/"),
        ];
        let sel = select_grant(&scope, "files", "read_file", &json!({"path": "/w/a"})).unwrap();
        assert_eq!(sel.index, 0);
        let sel = select_grant(
            &scope,
            "files",
            "read_file",
            &json!({"path": "/w/shared/a"}),
        )
        .unwrap();
        assert_eq!(sel.index, 1);
        let err = select_grant(
            &scope,
            "files",
            "read_file",
            &json!({"path": "/w/shared/a", "target": "/etc/passwd"}),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("/etc/passwd"), "{err}");
        let err = select_grant(&scope, "other", "read_file", &json!({}))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "tool read_file on server other not covered by any scope grant"
        );
    }

    // Unknown constraints deny; monetary limits bound one call.
    #[test]
    fn constraints() {
        let g = ScopeGrant::new("s", &["t"]).with_constraint("geo_fence", json!("eu"));
        assert_eq!(
            evaluate_constraints(&g, &json!({}))
                .unwrap_err()
                .to_string(),
            "unknown constraint geo_fence; the kernel cannot evaluate it"
        );
        let g = ScopeGrant::new("pay", &["pay"]).with_constraint(
            "monetary",
            json!({"argument": "amount", "currency": "EUR", "max_per_invocation": 100, "max_total": 150}),
        );
        assert!(evaluate_constraints(&g, &json!({"amount": 101})).is_err());
        let hold = evaluate_constraints(&g, &json!({"amount": 99}))
            .unwrap()
            .unwrap();
        assert_eq!(hold.amount, 99);
    }
}
