//! Each step's keys checked against its action and turned into its typed
//! action.

use super::*;

/// Step `i`'s typed action from its declaration, which validation accepted
/// before: references are not looked up again.
pub(crate) fn rebuild_action(
    i: usize,
    decl: &StepDecl,
    has_world: bool,
) -> Result<Action, ArenaError> {
    let declared = Declared {
        agents: Names::Any,
        servers: Names::Any,
        capabilities: Names::Any,
        nodes: Names::Any,
    };
    step_action(i, decl, has_world, &declared)
}

/// The keys each action takes (besides `agent`, `action`, `at` and
/// `expect_reason`), or `None` for an unknown action.
fn allowed_keys(action: &str) -> Option<&'static [&'static str]> {
    Some(match action {
        "call" => &[
            "server",
            "tool",
            "arguments",
            "expect_verdict",
            "capability",
        ],
        "delegate" => &[
            "capability",
            "to",
            "delegation",
            "tools",
            "path_prefix",
            "expires_after_ms",
            "max_invocations",
            "share_bps",
            "monetary",
            "expect",
        ],
        "revoke" => &["target", "by", "expect"],
        "message" => &["to", "content", "from_step", "schema", "value", "expect"],
        "advance" => &["advance_ms"],
        "fault" => FAULT_KEYS,
        "redefine" => &["server", "tool", "definition"],
        _ => return None,
    })
}

/// Refuses a key the step's action does not take.
fn check_keys(step: &StepDecl, action: &str, allowed: &[&str], at: At) -> Result<(), ArenaError> {
    // A reason is what a call, a delegation or a revocation answers;
    // messages and advances have none to compare.
    let takes_reason = matches!(action, "call" | "delegate" | "revoke")
        || (action == "message" && step.schema.is_some());
    let present = [
        ("server", step.server.is_some()),
        ("tool", step.tool.is_some()),
        ("arguments", step.arguments.is_some()),
        ("expect_verdict", step.expect_verdict.is_some()),
        ("capability", step.capability.is_some()),
        ("to", step.to.is_some()),
        ("delegation", step.delegation.is_some()),
        ("tools", step.tools.is_some()),
        ("path_prefix", step.path_prefix.is_some()),
        ("expires_after_ms", step.expires_after_ms.is_some()),
        ("max_invocations", step.max_invocations.is_some()),
        ("share_bps", step.share_bps.is_some()),
        ("monetary", step.monetary.is_some()),
        ("target", step.target.is_some()),
        ("by", step.by.is_some()),
        ("expect", step.expect.is_some()),
        ("advance_ms", step.advance_ms.is_some()),
        ("content", step.content.is_some()),
        ("from_step", step.from_step.is_some()),
        ("schema", step.schema.is_some()),
        ("value", step.value.is_some()),
        ("fault", step.fault.is_some()),
        ("node", step.node.is_some()),
        ("keep_state", step.keep_state.is_some()),
        ("between", step.between.is_some()),
        ("duration_ms", step.duration_ms.is_some()),
        ("delay_ms", step.delay_ms.is_some()),
        ("definition", step.definition.is_some()),
        (
            "expect_reason",
            step.expect_reason.is_some() && !takes_reason,
        ),
    ];
    for (key, is_present) in present {
        if is_present && !allowed.contains(&key) {
            return Err(ArenaError::KeyNotAllowed {
                field: at(key),
                context: match action {
                    "call" => "a call step takes server, tool, arguments, expect_verdict, capability, expect_reason and at",
                    "delegate" => "a delegate step takes capability, to, delegation, its attenuations, expect, expect_reason and at",
                    "revoke" => "a revoke step takes target, by, expect, expect_reason and at",
                    "message" => "a message step takes to, content or from_step (or a hand-over's schema, value, expect and expect_reason), and at",
                    "fault" => "a fault step takes fault, the keys its kind needs (node, keep_state, between, duration_ms, delay_ms) and at; it has no verdict, so no expect_reason",
                    "redefine" => "a redefine step takes server, tool, definition and at; it has no verdict, so no expect_reason",
                    _ => "an advance step takes advance_ms and at",
                },
            });
        }
    }
    Ok(())
}

/// The value of a required key, or its absence as an error.
fn required(value: &Option<String>, at: At, key: &str) -> Result<String, ArenaError> {
    value
        .clone()
        .ok_or_else(|| ArenaError::MissingKey { field: at(key) })
}

/// Checks one step's keys and builds its typed action.
pub(super) fn step_action(
    i: usize,
    step: &StepDecl,
    has_world: bool,
    declared: &Declared,
) -> Result<Action, ArenaError> {
    let at = |key: &str| format!("steps[{i}].{key}");
    let action = step.action.as_deref().unwrap_or("call");
    let allowed = allowed_keys(action).ok_or_else(|| ArenaError::UnsupportedValue {
        field: at("action"),
        value: action.to_string(),
        allowed: "call, delegate, revoke, message, advance, fault, redefine",
    })?;
    if action != "call" {
        if step.expect_verdict.is_some() {
            return Err(ArenaError::ExpectVerdictNotCall {
                field: at("expect_verdict"),
                action: action.to_string(),
            });
        }
        if !has_world
            && matches!(
                action,
                "delegate" | "revoke" | "message" | "fault" | "redefine"
            )
        {
            return Err(ArenaError::WorldRequired {
                field: at("action"),
                action: action.to_string(),
            });
        }
    }
    check_keys(step, action, allowed, &at)?;
    if step.expect_reason.as_deref() == Some("") {
        return Err(ArenaError::OutOfRange {
            field: at("expect_reason"),
            rule: "expect_reason is a non-empty part of the expected reason",
        });
    }
    let expect = match step.expect.as_deref() {
        None => StepExpectation::Done,
        Some(text) => StepExpectation::parse(text).ok_or_else(|| ArenaError::UnsupportedValue {
            field: at("expect"),
            value: text.to_string(),
            allowed: "done, refused",
        })?,
    };
    match action {
        "call" => call(step, &at, has_world, declared),
        "delegate" => delegate(step, &at, declared, expect),
        "revoke" => revoke(step, &at, declared, expect),
        "message" => message(step, &at, declared, expect),
        "fault" => fault_action(step, &at, declared.nodes),
        "redefine" => redefine(step, &at, declared),
        _ => advance(step, &at),
    }
}

fn call(
    step: &StepDecl,
    at: At,
    has_world: bool,
    declared: &Declared,
) -> Result<Action, ArenaError> {
    let server = required(&step.server, at, "server")?;
    let tool = required(&step.tool, at, "tool")?;
    if has_world {
        declared
            .servers
            .resolve("server", &server, || at("server"))?;
    }
    let verdict =
        step.expect_verdict
            .as_deref()
            .ok_or_else(|| ArenaError::MissingExpectVerdict {
                field: at("expect_verdict"),
            })?;
    let expect_verdict =
        ExpectedVerdict::parse(verdict).ok_or_else(|| ArenaError::UnsupportedValue {
            field: at("expect_verdict"),
            value: verdict.to_string(),
            allowed: "allow, deny, rewrite",
        })?;
    if let Some(capability) = &step.capability {
        declared
            .capabilities
            .resolve("capability", capability, || at("capability"))?;
    }
    let arguments = match &step.arguments {
        Some(table) => table_to_json(table, &at("arguments"))?,
        None => serde_json::Value::Object(Default::default()),
    };
    crate::scenario::value::references(&arguments).map_err(|malformed| {
        ArenaError::ValueReference {
            field: format!("{}{}", at("arguments"), malformed.at),
            problem: malformed.problem,
        }
    })?;
    Ok(Action::Call(CallAction {
        server,
        tool,
        arguments,
        expect_verdict,
        capability: step.capability.clone(),
    }))
}

fn delegate(
    step: &StepDecl,
    at: At,
    declared: &Declared,
    expect: StepExpectation,
) -> Result<Action, ArenaError> {
    let capability = required(&step.capability, at, "capability")?;
    let to = required(&step.to, at, "to")?;
    let delegation = required(&step.delegation, at, "delegation")?;
    declared
        .capabilities
        .resolve("capability", &capability, || at("capability"))?;
    declared.agents.resolve("agent", &to, || at("to"))?;
    if let Some(tools) = &step.tools {
        check_tools(tools, &at("tools"))?;
    }
    check_path_prefix(step.path_prefix.as_deref(), || at("path_prefix"))?;
    check_offset(step.expires_after_ms, || at("expires_after_ms"))?;
    check_invocations(step.max_invocations, || at("max_invocations"))?;
    check_share(step.share_bps, || at("share_bps"))?;
    let monetary = step
        .monetary
        .as_ref()
        .map(|m| check_monetary(m, &at("monetary")))
        .transpose()?;
    Ok(Action::Delegate(DelegateAction {
        capability,
        to,
        delegation,
        tools: step.tools.clone(),
        path_prefix: step.path_prefix.clone(),
        expires_after_ms: step.expires_after_ms,
        max_invocations: step.max_invocations,
        share_bps: step.share_bps,
        monetary,
        expect,
    }))
}

fn revoke(
    step: &StepDecl,
    at: At,
    declared: &Declared,
    expect: StepExpectation,
) -> Result<Action, ArenaError> {
    let target = required(&step.target, at, "target")?;
    declared
        .capabilities
        .resolve("capability", &target, || at("target"))?;
    let by_authority = match step.by.as_deref() {
        None => false,
        Some("authority") => true,
        Some(other) => {
            return Err(ArenaError::UnsupportedValue {
                field: at("by"),
                value: other.to_string(),
                allowed: "authority (omit `by` to revoke as the step's agent)",
            })
        }
    };
    Ok(Action::Revoke(RevokeAction {
        target,
        by_authority,
        expect,
    }))
}

fn message(
    step: &StepDecl,
    at: At,
    declared: &Declared,
    expect: StepExpectation,
) -> Result<Action, ArenaError> {
    let to = required(&step.to, at, "to")?;
    declared.agents.resolve("agent", &to, || at("to"))?;
    if step.schema.is_some() || step.value.is_some() {
        return handover(step, at, to, expect);
    }
    if step.expect.is_some() {
        return Err(ArenaError::KeyNotAllowed {
            field: at("expect"),
            context: "only a hand-over (a message with schema and value) can be refused; a message of content or from_step takes to, content or from_step, and at",
        });
    }
    match (&step.content, &step.from_step) {
        (Some(_), Some(_)) => {
            return Err(ArenaError::KeyNotAllowed {
                field: at("from_step"),
                context: "a message carries either content or from_step, not both",
            })
        }
        (None, None) => {
            return Err(ArenaError::MissingKey {
                field: at("content"),
            })
        }
        (None, Some(source)) => check_id(source, at("from_step"))?,
        (Some(_), None) => {}
    }
    Ok(Action::Message(MessageAction {
        to,
        content: step.content.clone(),
        from_step: step.from_step.clone(),
        handover: None,
    }))
}

/// A hand-over: a message whose `value` (in the value grammar) must
/// satisfy its `schema`, which the kernel's subset parses here and every
/// kernel checks again when the value is sent.
fn handover(
    step: &StepDecl,
    at: At,
    to: String,
    expect: StepExpectation,
) -> Result<Action, ArenaError> {
    for (key, present) in [
        ("content", step.content.is_some()),
        ("from_step", step.from_step.is_some()),
    ] {
        if present {
            return Err(ArenaError::KeyNotAllowed {
                field: at(key),
                context: "a hand-over carries its value in value (a reference or a literal), not content or from_step",
            });
        }
    }
    let Some(schema) = &step.schema else {
        return Err(ArenaError::MissingKey {
            field: at("schema"),
        });
    };
    let Some(value) = &step.value else {
        return Err(ArenaError::MissingKey { field: at("value") });
    };
    let schema = table_to_json(schema, &at("schema"))?;
    chio_kernel::handover::ValueSchema::parse(&schema).map_err(|refused| {
        ArenaError::HandOverSchema {
            field: format!("{}{}", at("schema"), refused.at),
            problem: refused.problem,
        }
    })?;
    let value = toml_to_json(value, &at("value"))?;
    crate::scenario::value::references(&value).map_err(|malformed| ArenaError::ValueReference {
        field: format!("{}{}", at("value"), malformed.at),
        problem: malformed.problem,
    })?;
    Ok(Action::Message(MessageAction {
        to,
        content: None,
        from_step: None,
        handover: Some(HandOverAction {
            schema,
            value,
            expect,
        }),
    }))
}

/// A redefine step: its server is declared and its definition is one a
/// server could list (checked as a declared tool is). That the server is a
/// recorded one declaring the tool is checked with the contracts.
fn redefine(step: &StepDecl, at: At, declared: &Declared) -> Result<Action, ArenaError> {
    let server = required(&step.server, at, "server")?;
    let tool = required(&step.tool, at, "tool")?;
    declared
        .servers
        .resolve("server", &server, || at("server"))?;
    let definition = step
        .definition
        .as_ref()
        .ok_or_else(|| ArenaError::MissingKey {
            field: at("definition"),
        })?;
    let (contract, digest) =
        crate::scenario::tools::declared_contract(&server, &definition.as_tool(&tool)).map_err(
            |problem| {
                let field = if problem.key == "name" {
                    at("tool")
                } else {
                    format!("{}.{}", at("definition"), problem.key)
                };
                if problem.key == "digest" {
                    ArenaError::ToolDigest {
                        field,
                        reason: problem.reason,
                    }
                } else {
                    ArenaError::ToolDeclaration {
                        field,
                        reason: problem.reason,
                    }
                }
            },
        )?;
    Ok(Action::Redefine(RedefineAction {
        server,
        tool,
        contract,
        digest,
    }))
}

fn advance(step: &StepDecl, at: At) -> Result<Action, ArenaError> {
    let advance_ms = step.advance_ms.ok_or_else(|| ArenaError::MissingKey {
        field: at("advance_ms"),
    })?;
    if advance_ms == 0 || advance_ms > MAX_OFFSET_MS {
        return Err(ArenaError::OutOfRange {
            field: at("advance_ms"),
            rule: "advance_ms is between 1 and 2^53",
        });
    }
    Ok(Action::Advance(AdvanceAction { advance_ms }))
}
