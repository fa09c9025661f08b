//! How each gene shapes an action's call and mutation: the base call as the
//! protocol operators leave it, an injection's placement, a replay's copy,
//! and a widening link's plan and the accomplice's call through it.

use super::*;
use crate::operators::Split;

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
            "tool" => Some(WideningKind::Tool),
            "path" => Some(WideningKind::Path),
            "server" => Some(WideningKind::Server),
            "expiry" => Some(WideningKind::Expiry),
            "share" => Some(WideningKind::Share),
            "start" => Some(WideningKind::Start),
            "any-tool" => Some(WideningKind::AnyTool),
            "budget" => Some(WideningKind::Budget),
            "monetary" => Some(WideningKind::Monetary),
            _ => None,
        })
        .collect()
}

/// The accomplice's call through a widened link: its id (an insider of
/// the scenario outside the parent's lineage, else the base agent's
/// accomplice key) and the child's, with the tool, server or path the
/// widening adds.
pub(super) fn widen_call(
    call: &mut MutatedCall,
    widened: &WideningPlan,
    base: &BaseStep,
    member: u32,
    scenario: &Scenario,
) {
    call.agent = insider(scenario, &base.capability).unwrap_or_else(|| accomplice_id(&base.agent));
    call.capability = format!("{}.escape-{}", base.capability, member);
    if let Some(tool) = &widened.extra_tool {
        call.tool = tool.clone();
    }
    if let Some(server) = &widened.extra_server {
        call.server = server.clone();
    }
    if let Some(monetary) = &widened.monetary {
        monetary.carry_amount(call, base);
    }
    if widened.dimensions().any(|d| d == WideningKind::Path) {
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
/// scope, in the gene's dimension and each further dimension its operators
/// name (`None` when the gene's own dimension does not apply: the parent
/// already grants every candidate, or a path widening of a parent without a
/// path prefix; a further dimension that does not apply is left out). Every
/// dimension is applied by the same rule, so each is reachable alone (a
/// gene without widening operators) and with any other.
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
        also: Vec::new(),
        raised_invocations: None,
        monetary: None,
    };
    if !add_dimension(&mut plan, widening, choice, candidates, scope, base) {
        return None;
    }
    for extra in also.into_iter().filter(|w| *w != widening) {
        if add_dimension(&mut plan, extra, choice, candidates, scope, base) {
            plan.also.push(extra);
        }
    }
    Some(plan)
}

/// Adds one widening dimension to `plan`; `false` when it does not apply.
fn add_dimension(
    plan: &mut WideningPlan,
    dimension: WideningKind,
    choice: u32,
    candidates: &WideningCandidates<'_>,
    scope: &DeclaredScope,
    base: &BaseStep,
) -> bool {
    match dimension {
        WideningKind::Tool => {
            let fresh: Vec<&String> = candidates
                .tools
                .iter()
                .filter(|t| !scope.grants_tool(&base.server, t))
                .collect();
            let Some(tool) = fresh.get(choice as usize % fresh.len().max(1)) else {
                return false;
            };
            plan.extra_tool = Some((*tool).clone());
        }
        WideningKind::Path => {
            return scope
                .grants
                .iter()
                .any(|g| g.server == base.server && g.path_prefix.is_some());
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
        WideningKind::AnyTool => {
            return !scope.grants_tool(&base.server, chio_kernel::token::ANY_TOOL)
        }
        WideningKind::Budget => {
            // Only a parent with a limit can be widened here; an even
            // choice drops the limit, an odd one raises it by one.
            let Some(limit) = scope.max_invocations else {
                return false;
            };
            plan.raised_invocations = (choice % 2 == 1).then(|| limit.saturating_add(1));
        }
        WideningKind::Monetary => {
            // Only a parent whose grant on the called server carries a
            // monetary constraint can be widened here; the choice picks
            // the form (see `MonetaryWidening::of_choice`).
            let Some(parent) = scope
                .grants
                .iter()
                .find(|g| g.server == base.server)
                .and_then(|g| g.monetary.as_ref())
            else {
                return false;
            };
            plan.monetary = Some(MonetaryWidening::of_choice(
                choice,
                parent,
                &base.amount_arguments,
            ));
        }
        WideningKind::Expiry | WideningKind::Share | WideningKind::Start => {}
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use chio_arena::adversaries::class::MONETARY_FORMS;
    use chio_arena::load_scenario;

    /// The triangular-delegation reference world, its declared scopes and
    /// its base step `step`.
    fn triangle(step: &str) -> (Scenario, BTreeMap<String, DeclaredScope>, BaseStep) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/three_agent_triangular_delegation.toml");
        let scenario = load_scenario(path).expect("loads");
        let scopes = declared_scopes(&scenario).expect("scopes");
        let base = base_steps(&scenario)
            .expect("base steps")
            .into_iter()
            .find(|b| b.step_id == step)
            .expect("base step");
        (scenario, scopes, base)
    }

    const DIMENSIONS: [WideningKind; 8] = [
        WideningKind::Tool,
        WideningKind::Path,
        WideningKind::Server,
        WideningKind::Expiry,
        WideningKind::Share,
        WideningKind::Start,
        WideningKind::AnyTool,
        WideningKind::Budget,
    ];

    // Every dimension is reachable alone and with any other: the plan widens exactly the gene's dimension and the operators'.
    #[test]
    fn every_dimension_alone_and_in_pairs() {
        let (_, scopes, base) = triangle("alice-reads-plan");
        let mut limited = scopes[&base.capability].clone();
        limited.max_invocations = Some(3);
        let scope = &limited;
        let tools = vec!["read_file".to_string(), "delete_file".to_string()];
        let servers = vec!["mail".to_string()];
        let candidates = WideningCandidates {
            tools: &tools,
            servers: &servers,
        };
        for first in DIMENSIONS {
            let alone = widening_mutation(first, 0, &candidates, scope, &base, Vec::new())
                .expect("the dimension applies");
            assert_eq!(alone.dimensions().collect::<Vec<_>>(), vec![first]);
            assert_eq!(alone.extra_tool.is_some(), first == WideningKind::Tool);
            assert_eq!(alone.extra_server.is_some(), first == WideningKind::Server);
            for second in DIMENSIONS.into_iter().filter(|d| *d != first) {
                let pair = widening_mutation(first, 0, &candidates, scope, &base, vec![second])
                    .expect("the pair applies");
                assert_eq!(pair.dimensions().collect::<Vec<_>>(), vec![first, second]);
                let adds = |d| first == d || second == d;
                assert_eq!(
                    pair.extra_tool.as_deref(),
                    adds(WideningKind::Tool).then_some("delete_file")
                );
                assert_eq!(
                    pair.extra_server.as_deref(),
                    adds(WideningKind::Server).then_some("mail")
                );
            }
        }
    }

    // A dimension that does not apply refuses the gene, and is left out when an operator names it.
    #[test]
    fn a_dimension_that_does_not_apply() {
        let (_, scopes, base) = triangle("alice-reads-plan");
        let mut scope = scopes[&base.capability].clone();
        for grant in &mut scope.grants {
            grant.path_prefix = None;
        }
        let granted = vec!["read_file".to_string()];
        let candidates = WideningCandidates {
            tools: &granted,
            servers: &[],
        };
        assert_eq!(scope.max_invocations, None);
        for dimension in [WideningKind::Path, WideningKind::Tool, WideningKind::Budget] {
            assert_eq!(
                widening_mutation(dimension, 0, &candidates, &scope, &base, Vec::new()),
                None
            );
        }
        let plan = widening_mutation(
            WideningKind::Expiry,
            0,
            &candidates,
            &scope,
            &base,
            vec![
                WideningKind::Path,
                WideningKind::Tool,
                WideningKind::Budget,
                WideningKind::Expiry,
            ],
        )
        .expect("expiry applies");
        assert_eq!(
            plan.dimensions().collect::<Vec<_>>(),
            vec![WideningKind::Expiry]
        );
    }

    // A budget widening applies only under a parent with a limit: an even choice drops the limit, an odd one claims one more than the parent's.
    #[test]
    fn a_budget_widening_drops_or_raises_the_parents_limit() {
        let (_, scopes, base) = triangle("alice-reads-plan");
        let mut scope = scopes[&base.capability].clone();
        scope.max_invocations = Some(4);
        let none = WideningCandidates {
            tools: &[],
            servers: &[],
        };
        let plan = |choice| {
            widening_mutation(
                WideningKind::Budget,
                choice,
                &none,
                &scope,
                &base,
                Vec::new(),
            )
            .expect("a limited parent")
        };
        assert_eq!(plan(0).raised_invocations, None);
        assert_eq!(plan(2).raised_invocations, None);
        assert_eq!(plan(1).raised_invocations, Some(5));
        let other = widening_mutation(WideningKind::Expiry, 1, &none, &scope, &base, Vec::new())
            .expect("expiry applies");
        assert_eq!(other.raised_invocations, None);
    }

    // A monetary widening applies only under a parent whose grant on the called server carries a monetary constraint; the choice picks the form, and a widening to another argument carries the base amount there.
    #[test]
    fn a_monetary_widening_needs_a_constrained_parent() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/monetary_scope.toml");
        let scenario = load_scenario(path).expect("loads");
        let scopes = declared_scopes(&scenario).expect("scopes");
        let base = base_steps(&scenario)
            .expect("base steps")
            .into_iter()
            .find(|b| b.step_id == "deputy-pays-at-its-limit")
            .expect("base step");
        let scope = &scopes[&base.capability];
        let parent = scope.grants[0]
            .monetary
            .clone()
            .expect("narrowed constraint");
        assert_eq!(parent.max_per_invocation, 10_000);
        let amounts = base.amount_arguments.clone();
        assert_eq!(amounts, vec!["amount".to_string(), "fee".to_string()]);
        let candidates = WideningCandidates {
            tools: &[],
            servers: &[],
        };
        for choice in 0..MONETARY_FORMS {
            let plan = widening_mutation(
                WideningKind::Monetary,
                choice,
                &candidates,
                scope,
                &base,
                Vec::new(),
            )
            .expect("a constrained parent");
            let form = MonetaryWidening::of_choice(choice, &parent, &amounts);
            assert_eq!(plan.monetary.as_ref(), Some(&form));
            let mut call = base_call(&base, &Draft::new("", None));
            widen_call(&mut call, &plan, &base, 1, &scenario);
            let fee = call.arguments.get("fee").and_then(Value::as_u64);
            assert_eq!(fee, (choice == 0).then_some(10_000), "{form:?}");
        }
        let (_, triangle_scopes, triangle_base) = triangle("alice-reads-plan");
        let unconstrained = widening_mutation(
            WideningKind::Monetary,
            0,
            &candidates,
            &triangle_scopes[&triangle_base.capability],
            &triangle_base,
            Vec::new(),
        );
        assert_eq!(unconstrained, None);
    }

    // The declared scope carries each capability's invocation limit: a grant's own, a delegation's own.
    #[test]
    fn the_declared_scope_knows_the_limit() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/deny_reasons.toml");
        let scopes = declared_scopes(&load_scenario(path).expect("loads")).expect("scopes");
        assert_eq!(scopes["operator-read"].max_invocations, Some(3));
        assert_eq!(scopes["deputy-read"].max_invocations, Some(1));
        let (_, triangle_scopes, _) = triangle("alice-reads-plan");
        assert_eq!(triangle_scopes["alice-files"].max_invocations, None);
    }

    // A delegation that declares no limit of its own keeps its parent's, as the kernel does.
    #[test]
    fn a_delegation_without_a_limit_keeps_its_parents() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let text = std::fs::read_to_string(dir.join("deny_reasons.toml")).expect("reads");
        let own = "delegation = \"deputy-read\"\nmax_invocations = 1\n";
        assert!(text.contains(own));
        let text = text.replace(own, "delegation = \"deputy-read\"\n");
        let scenario = chio_arena::parse_scenario(&text, &dir).expect("parses");
        let scopes = declared_scopes(&scenario).expect("scopes");
        assert_eq!(scopes["deputy-read"].max_invocations, Some(3));
    }

    // The link goes to the first declared agent outside the parent's lineage, else to the base agent's accomplice key.
    #[test]
    fn the_receiver_is_an_insider_outside_the_lineage() {
        let (scenario, scopes, base) = triangle("alice-reads-plan");
        assert_eq!(insider(&scenario, "alice-files").as_deref(), Some("bob"));
        assert_eq!(insider(&scenario, "bob-files").as_deref(), Some("carol"));
        assert_eq!(insider(&scenario, "carol-files"), None);
        let plan = widening_mutation(
            WideningKind::Expiry,
            0,
            &WideningCandidates {
                tools: &[],
                servers: &[],
            },
            &scopes[&base.capability],
            &base,
            Vec::new(),
        )
        .expect("plan");
        let mut call = base_call(&base, &Draft::new("", None));
        widen_call(&mut call, &plan, &base, 3, &scenario);
        assert_eq!(call.agent, "bob");
        assert_eq!(call.capability, "alice-files.escape-3");
        let (_, _, carols) = triangle("carol-reads-plan");
        let mut call = base_call(&carols, &Draft::new("", None));
        widen_call(&mut call, &plan, &carols, 3, &scenario);
        assert_eq!(call.agent, accomplice_id("carol"));
    }
}
