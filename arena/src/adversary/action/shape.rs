//! How each gene shapes an action's call and mutation: the base call as the
//! protocol operators leave it, an injection's placement, a replay's copy,
//! and a widening link's plan and the accomplice's call through it.

use super::*;
use crate::adversary::operators::Split;

/// The base step's call as the draft's protocol operators leave it.
pub(super) fn base_call(base: &BaseStep, draft: &Draft) -> MutatedCall {
    let protocol = &draft.protocol;
    MutatedCall {
        agent: base.agent.clone(),
        capability: base.capability.clone(),
        server: base.server.clone(),
        tool: base.tool.clone(),
        arguments: base.arguments.clone(),
        evaluation_ms: base.evaluation_ms,
        request_id: protocol.reuse_request_id.then(|| base.step_id.clone()),
        session: protocol
            .change_session
            .then(|| format!("{}.other-session", base.agent)),
        at_expiry: protocol.expiry_edge,
        future_dated_ms: protocol.future_dated_ms,
    }
}

/// The further widenings the draft's protocol operators ask of a link.
pub(super) fn extra_widenings(draft: &Draft) -> Vec<WideningKind> {
    draft
        .protocol
        .extra_widenings
        .iter()
        .filter_map(|w| match w.as_str() {
            "expiry" => Some(WideningKind::Expiry),
            "share" => Some(WideningKind::Share),
            _ => None,
        })
        .collect()
}

/// The accomplice's call through a widened link: its own id and the
/// child's, with the tool, server or path the widening adds.
pub(super) fn widen_call(
    call: &mut MutatedCall,
    widened: &WideningPlan,
    base: &BaseStep,
    member: u32,
) {
    call.agent = accomplice_id(&base.agent);
    call.capability = format!("{}.escape-{}", base.capability, member);
    if let Some(tool) = &widened.extra_tool {
        call.tool = tool.clone();
    }
    if let Some(server) = &widened.extra_server {
        call.server = server.clone();
    }
    if widened.widening == WideningKind::Path {
        let name = base
            .arguments
            .get("path")
            .and_then(Value::as_str)
            .and_then(|p| p.rsplit('/').next())
            .filter(|n| !n.is_empty())
            .unwrap_or("escape.txt");
        if let Value::Object(map) = &mut call.arguments {
            map.insert(
                "path".to_string(),
                Value::String(format!("/outside/{name}")),
            );
        }
    }
}

/// Where an injection's payload goes: into the arguments, or as a line of
/// the fixture the base step reads (`None` when it reads none).
pub(super) fn injection_mutation(
    pattern: &str,
    target: InjectionTarget,
    draft: &Draft,
    base: &BaseStep,
    call: &mut MutatedCall,
    rng: &mut ChaCha20Rng,
) -> Option<Mutation> {
    Some(match target {
        InjectionTarget::Arguments => {
            let pointer = inject_draft(&mut call.arguments, draft, rng);
            Mutation::Arguments {
                pattern: pattern.to_string(),
                pointer,
            }
        }
        InjectionTarget::Fixture => {
            let path = base.reads_fixture.clone()?;
            let text = match draft.split {
                Split::None => draft.payload.clone(),
                _ => {
                    let (a, b) = draft.halves();
                    format!("{a}\n\n{b}")
                }
            };
            Mutation::Fixture {
                pattern: pattern.to_string(),
                edit: FixtureEdit {
                    server: base.server.clone(),
                    path,
                    payload: text,
                    line: rng.next_u32(),
                },
            }
        }
    })
}

/// A replay of the base call: when the copy comes back (`delays` are the
/// class's delayed and stale offsets) and, for a nonce reuse, the copy's
/// changed arguments.
pub(super) fn replay_mutation(
    mode: ReplayMode,
    reuse: ReplayReuse,
    delays: (u64, u64),
    base: &BaseStep,
    rng: &mut ChaCha20Rng,
) -> Mutation {
    let offset_ms = match mode {
        ReplayMode::Immediate | ReplayMode::Concurrent => 0,
        ReplayMode::Delayed => delays.0,
        ReplayMode::Stale => delays.1,
    };
    let copy_arguments = match reuse {
        ReplayReuse::Request => None,
        ReplayReuse::Nonce => {
            let mut args = base.arguments.clone();
            if let Value::Object(map) = &mut args {
                map.insert(
                    "attempt".to_string(),
                    Value::from(rng.next_u32() % 1000 + 2),
                );
            }
            Some(args)
        }
    };
    Mutation::Replay(ReplayPlan {
        mode,
        reuse,
        offset_ms,
        copy_arguments,
    })
}

/// The tools and servers a widening may add (the class's params).
pub(super) struct WideningCandidates<'a> {
    /// Tools a tool widening may add.
    pub tools: &'a [String],
    /// Servers a server widening may add.
    pub servers: &'a [String],
}

/// The widening link's plan: what it adds beyond the parent's declared
/// scope (`None` when the parent already grants it, or a path widening of a
/// parent without a path prefix).
pub(super) fn widening_mutation(
    widening: WideningKind,
    choice: u32,
    candidates: &WideningCandidates<'_>,
    scope: &DeclaredScope,
    base: &BaseStep,
    also: Vec<WideningKind>,
) -> Option<WideningPlan> {
    let mut plan = WideningPlan {
        widening,
        parent: base.capability.clone(),
        delegator: scope.holder.clone(),
        extra_tool: None,
        extra_server: None,
        also: also.into_iter().filter(|w| *w != widening).collect(),
    };
    match widening {
        WideningKind::Tool => {
            let fresh: Vec<&String> = candidates
                .tools
                .iter()
                .filter(|t| !scope.grants_tool(&base.server, t))
                .collect();
            let tool = (*fresh.get(choice as usize % fresh.len().max(1))?).clone();
            plan.extra_tool = Some(tool);
        }
        WideningKind::Path => {
            let prefixed = scope
                .grants
                .iter()
                .any(|g| g.server == base.server && g.path_prefix.is_some());
            if !prefixed {
                return None;
            }
        }
        WideningKind::Server => {
            let fresh: Vec<&String> = candidates
                .servers
                .iter()
                .filter(|s| !scope.grants.iter().any(|g| &g.server == *s))
                .collect();
            let server = fresh
                .get(choice as usize % fresh.len().max(1))
                .map(|s| (*s).clone())
                .unwrap_or_else(|| FALLBACK_SERVER.to_string());
            plan.extra_server = Some(server);
        }
        WideningKind::Expiry | WideningKind::Share => {}
    }
    Some(plan)
}
