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
//! `max_total` for step 5. `tool_digests` (tool name to the SHA-256 of its
//! definition, [`crate::contract::ToolContract::digest`]) binds the grant to
//! the definitions it was issued for: a call to a tool it pins nothing for,
//! or whose definition in force at the decision differs, is denied, and so
//! is any pinned call before a kernel holding no definition of the tool.

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

/// What a grant is evaluated against: the call's target and arguments, and
/// the digest of the tool's definition in force when the call is decided
/// (`None` when the kernel holds no catalog).
#[derive(Debug, Clone, Copy)]
pub struct CallUnderScope<'a> {
    /// The tool server.
    pub server: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// The call's arguments.
    pub arguments: &'a Value,
    /// The digest of the tool's definition in force, for `tool_digests`.
    pub definition: Option<&'a str>,
}

/// Selects the grant for the call's server and tool and evaluates its
/// constraints.
pub fn select_grant(
    scope: &[ScopeGrant],
    call: CallUnderScope<'_>,
) -> Result<SelectedGrant, DenyReason> {
    let CallUnderScope { server, tool, .. } = call;
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
        match evaluate_constraints(grant, call) {
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

/// Evaluates every constraint of one grant against the call.
pub fn evaluate_constraints(
    grant: &ScopeGrant,
    call: CallUnderScope<'_>,
) -> Result<Option<MonetaryHold>, DenyReason> {
    let arguments = call.arguments;
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
            "tool_digests" => check_tool_digests(value, call)?,
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

fn check_tool_digests(value: &Value, call: CallUnderScope<'_>) -> Result<(), DenyReason> {
    let pins = value.as_object().ok_or(DenyReason::ConstraintMalformed {
        name: "tool_digests",
    })?;
    let pinned = match pins.get(call.tool) {
        None => {
            return Err(DenyReason::DefinitionNotPinned {
                server: call.server.to_string(),
                tool: call.tool.to_string(),
            })
        }
        Some(pinned) => pinned.as_str().ok_or(DenyReason::ConstraintMalformed {
            name: "tool_digests",
        })?,
    };
    match call.definition {
        None => Err(DenyReason::DefinitionUnknown {
            server: call.server.to_string(),
            tool: call.tool.to_string(),
        }),
        Some(in_force) if in_force == pinned => Ok(()),
        Some(_)
            if crate::planted::weakened_anywhere(crate::planted::Weakness::NoDefinitionPins) =>
        {
            Ok(())
        }
        Some(_) => Err(DenyReason::DefinitionChanged {
            server: call.server.to_string(),
            tool: call.tool.to_string(),
        }),
    }
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

    /// A call to `server`/`tool` with no definition in force.
    fn call<'a>(server: &'a str, tool: &'a str, arguments: &'a Value) -> CallUnderScope<'a> {
        CallUnderScope {
            server,
            tool,
            arguments,
            definition: None,
        }
    }

    // The most specific passing grant wins, and a decoy path field cannot satisfy a prefix.
    #[test]
    fn selection_and_decoys() {
        let scope = vec![
            ScopeGrant::new("files", &["*"]).with_path_prefix("/w/"),
            ScopeGrant::new("files", &["read_file"]).with_path_prefix("/w/shared/"),
        ];
        let sel =
            select_grant(&scope, call("files", "read_file", &json!({"path": "/w/a"}))).unwrap();
        assert_eq!(sel.index, 0);
        let sel = select_grant(
            &scope,
            call("files", "read_file", &json!({"path": "/w/shared/a"})),
        )
        .unwrap();
        assert_eq!(sel.index, 1);
        let err = select_grant(
            &scope,
            call(
                "files",
                "read_file",
                &json!({"path": "/w/shared/a", "target": "/etc/passwd"}),
            ),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("/etc/passwd"), "{err}");
        let err = select_grant(&scope, call("other", "read_file", &json!({})))
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
            evaluate_constraints(&g, call(&g.server, "t", &json!({})))
                .unwrap_err()
                .to_string(),
            "unknown constraint geo_fence; the kernel cannot evaluate it"
        );
        let g = ScopeGrant::new("pay", &["pay"]).with_constraint(
            "monetary",
            json!({"argument": "amount", "currency": "EUR", "max_per_invocation": 100, "max_total": 150}),
        );
        assert!(evaluate_constraints(&g, call(&g.server, "t", &json!({"amount": 101}))).is_err());
        let hold = evaluate_constraints(&g, call(&g.server, "t", &json!({"amount": 99})))
            .unwrap()
            .unwrap();
        assert_eq!(hold.amount, 99);
    }

    // An amount exactly at the per-call limit is admitted and one minor unit more is not (the survivor that compares with >= refuses the first).
    #[test]
    fn the_per_call_limit_is_reachable() {
        let g = ScopeGrant::new("pay", &["pay"]).with_constraint(
            "monetary",
            json!({"argument": "amount", "currency": "EUR", "max_per_invocation": 100, "max_total": 150}),
        );
        let hold = evaluate_constraints(&g, call(&g.server, "pay", &json!({"amount": 100})))
            .expect("the limit itself is admitted")
            .expect("a monetary hold");
        assert_eq!((hold.amount, hold.max_total), (100, 150));
        let over = evaluate_constraints(&g, call(&g.server, "pay", &json!({"amount": 101})));
        assert_eq!(over.unwrap_err().code().as_str(), "amount-too-large");
    }

    // A pinned grant admits only the definition it was issued for: another digest, an unpinned tool, a kernel without the definition and a malformed pin all deny.
    #[test]
    fn pinned_definitions() {
        let g = ScopeGrant::new("git", &["*"])
            .with_constraint("tool_digests", json!({"git_status": "aa", "git_log": "bb"}));
        let args = json!({});
        let at = |tool, definition| CallUnderScope {
            server: "git",
            tool,
            arguments: &args,
            definition,
        };
        assert!(evaluate_constraints(&g, at("git_status", Some("aa"))).is_ok());
        let reason = |tool, definition| {
            evaluate_constraints(&g, at(tool, definition))
                .unwrap_err()
                .code()
                .as_str()
        };
        assert_eq!(reason("git_status", Some("bb")), "definition-changed");
        assert_eq!(reason("git_push", Some("cc")), "definition-not-pinned");
        assert_eq!(reason("git_log", None), "definition-unknown");
        let malformed =
            ScopeGrant::new("git", &["*"]).with_constraint("tool_digests", json!(["aa"]));
        assert_eq!(
            evaluate_constraints(&malformed, at("git_status", Some("aa")))
                .unwrap_err()
                .to_string(),
            "constraint tool_digests is malformed; the kernel cannot evaluate it"
        );
        let not_text = ScopeGrant::new("git", &["*"])
            .with_constraint("tool_digests", json!({"git_status": 1}));
        assert!(evaluate_constraints(&not_text, at("git_status", Some("aa"))).is_err());
    }
}
