//! From a base step and an RNG sub-stream to an [`AdversaryAction`].
//!
//! A base step is a call the scenario expects to be admitted (`allow` or
//! `rewrite`): that is what an attacker bends. [`mutate`] is a pure function
//! of the scenario, the population's params, one gene, the base step and
//! the action's sub-stream, which is seeded by FNV-1a 64 over the acting
//! agent's sub-stream seed (8 big-endian bytes), `:` and the action id
//! (`<population>/<member>/<step>/r<round>`), so an action never depends on
//! which other actions exist or on the generation it is evaluated in.
//!
//! Every action names the verdict it expects. Attacks expect `deny`; an
//! over-request that lands inside the capability's declared scope (a swap to
//! a tool the grant also covers) expects the base step's own verdict and is
//! marked `inside_grant`: fitness never counts it as an escape. The declared
//! scope is computed from the scenario's grants and delegate steps; the
//! kernel's own scope check is what the evaluator then exercises.

use std::collections::BTreeMap;

use chio_kernel::guards::prompt_injection::Pattern;
use chio_kernel::verdict::ProjectedVerdict;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::operators::{apply_all, Draft, Operator};
use chio_arena::adversaries::class::{
    ClassParams, Gene, InjectionTarget, ReplayMode, ReplayReuse, SwapKind, WideningKind,
    FALLBACK_SERVER,
};
use chio_arena::adversaries::goal::Goal;
use chio_arena::error::ArenaError;
use chio_arena::rng::fnv1a64;
use chio_arena::scenario::{Action, DelegateAction, ExpectedVerdict, ServerKind, Step};
use chio_arena::Scenario;

mod inject;
mod monetary;
mod shape;
mod world;
use inject::{inject_draft, pick};
pub use monetary::MonetaryWidening;
use shape::{
    base_call, extra_widenings, injection_mutation, replay_mutation, widen_call, widening_mutation,
    WideningCandidates,
};
pub use world::{
    base_steps, budget_limit, consequential_calls, declared_scopes, insider, labelled_read_after,
    pinned_redefinition_after, poisoned_redefinition_after, revocation_after, untrusted_read_after,
    BaseStep, ConsequentialCall, DeclaredGrant, DeclaredScope,
};

/// The call an action makes (for a replay: the captured original).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MutatedCall {
    /// The calling agent; its arena key signs the request.
    pub agent: String,
    /// The capability presented (for a scope escape: the widened child).
    pub capability: String,
    /// The server called.
    pub server: String,
    /// The tool called.
    pub tool: String,
    /// The arguments.
    pub arguments: Value,
    /// Virtual offset the call is evaluated at.
    pub evaluation_ms: u64,
    /// The request id to sign with instead of the action id (a reused one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The session to claim instead of the agent's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Whether the call is evaluated at the presented capability's expiry instant.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_expiry: bool,
    /// Milliseconds the request's issue time sits past the evaluation time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub future_dated_ms: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A fixture edited before the call reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixtureEdit {
    /// The workspace server holding the file.
    pub server: String,
    /// The file's absolute path.
    pub path: String,
    /// The injected text.
    pub payload: String,
    /// Where it goes: before line `line % (lines + 1)`.
    pub line: u32,
}

impl FixtureEdit {
    /// The file's content after the edit: the payload as its own line(s).
    pub fn apply(&self, original: &str) -> String {
        let mut lines: Vec<&str> = original.split('\n').collect();
        let at = (self.line as usize) % (lines.len() + 1);
        lines.insert(at, &self.payload);
        lines.join("\n")
    }
}

/// A replay of a captured request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayPlan {
    /// When the copy comes back.
    pub mode: ReplayMode,
    /// What it reuses.
    pub reuse: ReplayReuse,
    /// Virtual milliseconds between the original and the copy.
    pub offset_ms: u64,
    /// For a nonce reuse: the copy's (different) arguments.
    pub copy_arguments: Option<Value>,
}

/// A delegation that widens its parent, then a call using the widening.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WideningPlan {
    /// How the child widens.
    pub widening: WideningKind,
    /// The parent capability.
    pub parent: String,
    /// The parent's holder, who signs the delegation link.
    pub delegator: String,
    /// The tool added, for a tool widening.
    pub extra_tool: Option<String>,
    /// The server added, for a server widening.
    pub extra_server: Option<String>,
    /// Further widenings the same link makes (operators add them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<WideningKind>,
    /// For a budget widening: the invocation limit the link claims, above
    /// the parent's; `None` drops the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raised_invocations: Option<u64>,
    /// For a monetary widening: how the link's monetary constraint is
    /// wider than its parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monetary: Option<MonetaryWidening>,
}

impl WideningPlan {
    /// Every dimension the link widens: the gene's, then the operators'.
    pub fn dimensions(&self) -> impl Iterator<Item = WideningKind> + '_ {
        std::iter::once(self.widening).chain(self.also.iter().copied())
    }
}

/// The base call made again and again, one more time than its tightest
/// declared budget allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BurstPlan {
    /// How many copies are made.
    pub copies: u32,
    /// Whether every copy is admitted before any completes.
    pub concurrent: bool,
}

/// The most copies a burst makes; a budget it cannot exceed is not pursued.
pub use chio_arena::adversaries::MAX_BURST;

/// How the action departs from its base step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Mutation {
    /// The payload sits in the call's arguments at `pointer`.
    Arguments {
        /// Pattern name.
        pattern: String,
        /// JSON pointer of the argument carrying the payload.
        pointer: String,
    },
    /// The fixture the call reads carries the payload.
    Fixture {
        /// Pattern name.
        pattern: String,
        /// The edit.
        edit: FixtureEdit,
    },
    /// Server, tool or both swapped.
    Overrequest {
        /// What was swapped.
        swap: SwapKind,
    },
    /// The call is captured and replayed.
    Replay(ReplayPlan),
    /// A widening delegation precedes the call.
    Widen(WideningPlan),
    /// The call names a path its goal tries to reach.
    Path {
        /// The path as spelled after the operators.
        path: String,
    },
    /// The base call made again right after a revocation of its capability.
    AfterRevocation {
        /// The revoke step it follows.
        revoke_step: String,
    },
    /// The base call made again right after a read of a labelled value.
    AfterLabelledRead {
        /// The read step it follows.
        read_step: String,
    },
    /// The base call made as a burst (see [`BurstPlan`]).
    Burst(BurstPlan),
    /// The base call made again right after the scenario redefines its tool
    /// (for `use-changed-definition` and `call-poisoned-tool`).
    AfterRedefinition {
        /// The redefine step it follows.
        redefine_step: String,
    },
}

impl Mutation {
    /// The scenario step an action is made right after, when it is not made
    /// right before its base step.
    pub fn made_after(&self) -> Option<&str> {
        match self {
            Mutation::AfterRevocation { revoke_step } => Some(revoke_step),
            Mutation::AfterLabelledRead { read_step } => Some(read_step),
            Mutation::AfterRedefinition { redefine_step } => Some(redefine_step),
            _ => None,
        }
    }
}

/// One adversary action: a mutated call and the verdict the guard pool
/// should return.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdversaryAction {
    /// `<population>/<member>/<step>/r<round>`; unique in one evaluation.
    pub id: String,
    /// The population acting.
    pub population: String,
    /// The member's index in the population.
    pub member: u32,
    /// The member's gene.
    pub gene: Gene,
    /// The base step.
    pub base_step: String,
    /// The fitness round.
    pub round: u32,
    /// The call made.
    pub call: MutatedCall,
    /// How it departs from the base step.
    pub mutation: Mutation,
    /// The verdict the guard pool should return.
    pub expected: ProjectedVerdict,
    /// Whether the call stays inside the declared grant (never an escape).
    pub inside_grant: bool,
    /// The member's operator sequence, applied to the base action.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<Operator>,
    /// What the action tries to reach; the evaluator's oracle reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<Goal>,
}

/// The action's RNG sub-stream (see the module doc).
pub fn action_stream(scenario: &Scenario, agent: &str, action_id: &str) -> ChaCha20Rng {
    let mut bytes = scenario.rng().agent_seed(agent).to_be_bytes().to_vec();
    bytes.push(b':');
    bytes.extend_from_slice(action_id.as_bytes());
    ChaCha20Rng::seed_from_u64(fnv1a64(&bytes))
}

/// The payload of a pattern's variant: 0 the sample, `k` the `k`-th evasive one.
pub fn payload(pattern: &str, variant: u32) -> Option<&'static str> {
    let p = Pattern::parse(pattern)?;
    if variant == 0 {
        return Some(p.sample());
    }
    p.evasive_variants()
        .get(variant as usize - 1)
        .copied()
        .or(Some(p.sample()))
}

/// The id an action's accomplice (the receiver of a widening delegation)
/// has when the scenario declares no agent outside the parent's lineage.
pub fn accomplice_id(agent: &str) -> String {
    format!("{agent}.accomplice")
}

/// Who acts, with which gene and genome, toward which goal.
#[derive(Debug, Clone, Copy)]
pub struct Actor<'a> {
    /// The population's name.
    pub population: &'a str,
    /// The member's index.
    pub member: u32,
    /// The member's gene.
    pub gene: &'a Gene,
    /// The member's operator sequence.
    pub operators: &'a [Operator],
    /// The population's goal.
    pub goal: &'a Goal,
}

/// Mutates `base` with `gene` alone (no operators, the class's goal): the
/// base action an operator sequence starts from.
#[allow(clippy::too_many_arguments)]
pub fn mutate(
    scenario: &Scenario,
    scopes: &BTreeMap<String, DeclaredScope>,
    params: &ClassParams,
    population: &str,
    member: u32,
    gene: &Gene,
    base: &BaseStep,
    round: u32,
) -> Option<AdversaryAction> {
    let goal = Goal::default_for(gene.class());
    let actor = Actor {
        population,
        member,
        gene,
        operators: &[],
        goal: &goal,
    };
    mutate_with(scenario, scopes, params, &actor, base, round)
}

/// Mutates `base` with the actor's gene, then its operator sequence; `None`
/// when the gene does not apply to the step (a fixture injection on a step
/// that reads no fixture, a widening the parent already grants).
pub fn mutate_with(
    scenario: &Scenario,
    scopes: &BTreeMap<String, DeclaredScope>,
    params: &ClassParams,
    actor: &Actor<'_>,
    base: &BaseStep,
    round: u32,
) -> Option<AdversaryAction> {
    let Actor {
        population,
        member,
        gene,
        operators,
        goal,
    } = *actor;
    let id = format!("{population}/{member}/{}/r{round}", base.step_id);
    let mut rng = action_stream(scenario, &base.agent, &id);
    let scope = scopes.get(&base.capability);
    let payload_text = match gene {
        Gene::PromptInjection {
            pattern, variant, ..
        } => payload(pattern, *variant)?,
        _ => "",
    };
    let goal_path = match goal {
        Goal::ReachForbiddenPath { path, .. } => Some(path.as_str()),
        _ => None,
    };
    let mut draft = Draft::new(payload_text, goal_path);
    apply_all(operators, &mut draft);
    let mut call = base_call(base, &draft);
    let also = extra_widenings(&draft);
    let mut expected = ProjectedVerdict::Deny;
    let mut inside_grant = false;
    let mutation = match goal_mutation(scenario, base, gene, goal, &draft, &mut call) {
        Some(directed) => directed?,
        None => match (gene, params) {
            (
                Gene::PromptInjection {
                    pattern, target, ..
                },
                _,
            ) => injection_mutation(pattern, *target, &draft, base, &mut call, &mut rng)?,
            (
                Gene::CapabilityOverrequest { swap, choice },
                ClassParams::CapabilityOverrequest { tools, servers, .. },
            ) => {
                inside_grant =
                    overrequest_swap(&mut call, (*swap, *choice), tools, servers, base, scope)?;
                if inside_grant {
                    expected = base.expect;
                }
                Mutation::Overrequest { swap: *swap }
            }
            (
                Gene::ReplayAttempt { mode, reuse },
                ClassParams::ReplayAttempt {
                    delay_ms, stale_ms, ..
                },
            ) => replay_mutation(*mode, *reuse, (*delay_ms, *stale_ms), base, &mut rng),
            (
                Gene::ScopeEscape { widening, choice },
                ClassParams::ScopeEscape { tools, servers, .. },
            ) => {
                let candidates = WideningCandidates { tools, servers };
                let widened =
                    widening_mutation(*widening, *choice, &candidates, scope?, base, also)?;
                widen_call(&mut call, &widened, base, member, scenario);
                Mutation::Widen(widened)
            }
            // A gene whose params belong to another class: populations refuse
            // this at construction, so there is nothing to mutate.
            _ => return None,
        },
    };
    Some(AdversaryAction {
        id,
        population: population.to_string(),
        member,
        gene: gene.clone(),
        base_step: base.step_id.clone(),
        round,
        call,
        mutation,
        expected,
        inside_grant,
        operators: operators.to_vec(),
        goal: Some(goal.clone()),
    })
}

/// The mutation a goal directs: `None` when the goal leaves the gene to
/// its class, `Some(None)` when the goal applies but the scenario offers
/// nothing after the step to aim at (no revocation, budget, labelled read,
/// redefinition or forbidden path).
fn goal_mutation(
    scenario: &Scenario,
    base: &BaseStep,
    gene: &Gene,
    goal: &Goal,
    draft: &Draft,
    call: &mut MutatedCall,
) -> Option<Option<Mutation>> {
    let mut timed = |found: Option<(String, u64)>, mutation: fn(String) -> Mutation| {
        found.map(|(step, at_ms)| {
            call.evaluation_ms = at_ms;
            mutation(step)
        })
    };
    match gene {
        Gene::ReplayAttempt { .. } if *goal == Goal::OutliveRevocation => {
            Some(timed(revocation_after(scenario, base), |revoke_step| {
                Mutation::AfterRevocation { revoke_step }
            }))
        }
        Gene::ReplayAttempt { mode, .. } if *goal == Goal::ExceedBudget => {
            // A burst one copy past a budget of MAX_BURST or more would be
            // cut short and count as a miss: such a budget is not tried.
            let limit = budget_limit(scenario, base).filter(|limit| *limit < MAX_BURST);
            Some(limit.map(|limit| {
                Mutation::Burst(BurstPlan {
                    copies: (limit + 1) as u32,
                    concurrent: *mode == ReplayMode::Concurrent,
                })
            }))
        }
        Gene::CapabilityOverrequest { .. } if *goal == Goal::LeakLabel => {
            Some(timed(labelled_read_after(scenario, base), |read_step| {
                Mutation::AfterLabelledRead { read_step }
            }))
        }
        Gene::CapabilityOverrequest { choice, .. } if *goal == Goal::ActOnUntrusted => {
            let calls = consequential_calls(scenario, &base.agent);
            let target = calls.get(*choice as usize % calls.len().max(1));
            Some(target.zip(untrusted_read_after(scenario, base)).map(
                |(target, (read_step, at_ms))| {
                    call.evaluation_ms = at_ms;
                    call.arguments = arguments_for(scenario, target, base);
                    call.server.clone_from(&target.server);
                    call.tool.clone_from(&target.tool);
                    call.capability.clone_from(&target.grant);
                    Mutation::AfterLabelledRead { read_step }
                },
            ))
        }
        Gene::CapabilityOverrequest { .. } if *goal == Goal::UseChangedDefinition => Some(timed(
            pinned_redefinition_after(scenario, base),
            |redefine_step| Mutation::AfterRedefinition { redefine_step },
        )),
        Gene::CapabilityOverrequest { .. } if *goal == Goal::CallPoisonedTool => Some(timed(
            poisoned_redefinition_after(scenario, base),
            |redefine_step| Mutation::AfterRedefinition { redefine_step },
        )),
        Gene::CapabilityOverrequest { .. } if matches!(goal, Goal::ReachForbiddenPath { .. }) => {
            // A path forbidden to some tools only is tried with those.
            let tried = match goal {
                Goal::ReachForbiddenPath { tools, .. } => {
                    tools.is_empty() || tools.contains(&base.tool)
                }
                _ => true,
            };
            Some(draft.path.clone().filter(|_| tried).map(|path| {
                if !call.arguments.is_object() {
                    call.arguments = Value::Object(Default::default());
                }
                if let Value::Object(map) = &mut call.arguments {
                    map.insert("path".to_string(), Value::String(path.clone()));
                }
                Mutation::Path { path }
            }))
        }
        _ => None,
    }
}

/// The arguments of a consequential call: those of the scenario's first
/// call of the same tool on the same server, else the base step's when it
/// calls that server, else none.
fn arguments_for(scenario: &Scenario, target: &ConsequentialCall, base: &BaseStep) -> Value {
    let declared = scenario.schedule().iter().find_map(|s| {
        let step = scenario.step(s.step_index).ok()?;
        match &step.action {
            Action::Call(call) if call.server == target.server && call.tool == target.tool => {
                Some(call.arguments.clone())
            }
            _ => None,
        }
    });
    declared
        .filter(|a| !chio_arena::scenario::value::has_references(a))
        .unwrap_or_else(|| {
            if base.server == target.server {
                base.arguments.clone()
            } else {
                Value::Object(Default::default())
            }
        })
}

/// Swaps the call's tool, server or both (`swap` and `choice` of the gene)
/// for candidates of the class; `None` when no other tool is offered, else
/// whether the swapped call still falls inside the declared grant.
fn overrequest_swap(
    call: &mut MutatedCall,
    (swap, choice): (SwapKind, u32),
    tools: &[String],
    servers: &[String],
    base: &BaseStep,
    scope: Option<&DeclaredScope>,
) -> Option<bool> {
    if matches!(swap, SwapKind::Tool | SwapKind::Both) {
        call.tool = pick(tools, &base.tool, choice)?;
    }
    if matches!(swap, SwapKind::Server | SwapKind::Both) {
        call.server =
            pick(servers, &base.server, choice).unwrap_or_else(|| FALLBACK_SERVER.to_string());
    }
    Some(scope.is_some_and(|s| s.covers(&call.server, &call.tool, &call.arguments)))
}

#[cfg(test)]
mod tests {
    use super::*;

    // A fixture edit inserts the payload as a whole line and keeps every original line.
    #[test]
    fn fixture_edit_inserts_a_line() {
        let edit = FixtureEdit {
            server: "w".into(),
            path: "/w/a".into(),
            payload: "PAYLOAD".into(),
            line: 1,
        };
        assert_eq!(edit.apply("a\nb"), "a\nPAYLOAD\nb");
        let end = FixtureEdit { line: 5, ..edit };
        assert_eq!(end.apply("a\nb"), "a\nb\nPAYLOAD");
    }

    // Every canonical sample placed in a fixture line stays detectable by the kernel's detector.
    #[test]
    fn fixture_samples_stay_detectable() {
        let original = "{\n  \"issue\": 414,\n  \"comment\": \"bulk discount\"\n}";
        for p in Pattern::ALL {
            for line in 0..6 {
                let edit = FixtureEdit {
                    server: "w".into(),
                    path: "/w/a".into(),
                    payload: p.sample().into(),
                    line,
                };
                let text = edit.apply(original);
                assert!(
                    chio_kernel::guards::prompt_injection::detects(p, &text),
                    "{} at line {line}",
                    p.as_str()
                );
            }
        }
    }
}
