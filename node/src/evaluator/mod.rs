//! The adversary evaluator: adversary actions judged by the real kernel in
//! the scenario's world.
//!
//! [`KernelActionEvaluator`] implements the arena's `ActionEvaluator`
//! synchronously, without actors: it resolves the world once (keys, issued
//! grants, kernel configurations with their guard pipelines, tool-server
//! configurations seeded from the fixtures), and for each batch builds a
//! fresh instance of it, a [`DirectDispatcher`] (one kernel per declared
//! kernel over one shared authority state, one simulated server per declared
//! server, each agent's holdings). It then walks the scenario's schedule
//! through the run driver's own [`StepExecutor`], so every scheduled call,
//! delegation, revocation and message means here exactly what it means in a
//! run, and right before each call step evaluates the batch's actions whose
//! base step it is, in batch order. So an action meets the state its base
//! step meets: earlier delegations, revocations, session journal, labels and
//! budgets; the batch's earlier actions of the same base step also leave
//! their traces there.
//!
//! Operators can make a request depart from its base step: another request
//! id (the base step's own), another session, an evaluation at the
//! capability's expiry instant, an issue time in the future, or further
//! widenings on a widening link; each is applied here as the action says.
//!
//! An `outlive-revocation` action is not made before its base step but right
//! after the revoke step that revokes its capability (or an ancestor), so it
//! meets the revocation; a `leak-label` action right after the labelled read
//! it tries to leak, so it meets the retained label; a
//! `use-changed-definition` or `call-poisoned-tool` action right after the
//! redefine step of its tool, at that step's instant, so the new definition
//! is in force at its decision.
//!
//! Fault steps of the schedule are performed like every other step (a
//! crash, a partition, a stall), so an action meets the faults in effect
//! at its base step. An action whose kernel's node is down at that point
//! (or, for a fixture injection, the node serving the edited file) reaches
//! no kernel: it is a deny naming the crashed node, with no receipt and no
//! kernel evaluation, decided from the schedule's faults (`unreachable`),
//! so that an in-process world, whose kernel objects outlive a simulated
//! crash, and a cluster, whose crashed process answers nothing, give the
//! same bytes.
//!
//! Beyond the verdict, each outcome carries [`Feedback`] for the search: the
//! pipeline stage that stopped the action, and the goal's oracle. For
//! `smuggle-instruction` the kernel crate's reference detector
//! (`prompt_injection::scan_value`, all patterns, run here outside any guard)
//! reads what was admitted, the request's arguments or the released output:
//! the goal is reached when it still finds an instruction there, and for a
//! denied action its match detail (which reading, how deep, split or not)
//! says how disguised the payload was. For `reach-forbidden-path` the
//! admitted path, normalised by the kernel's path normaliser, must name the
//! goal's path (ASCII case ignored, as the forbidden-path guard reads it).
//! Other goals are reached by any admission. None of this detail comes from
//! the kernel's decision, which names a pattern and a pointer only.
//!
//! Where the world runs is the [`Worlds`] the evaluator is given
//! ([`instance`]): in process by default ([`DirectWorlds`]), or on node
//! processes, where an action's signed call reaches its kernel over
//! `KernelLink` exactly as a peer node's would. The logic here is the same
//! for both.
//!
//! Per action: the request is signed by the action's agent (for a scope
//! escape, an accomplice with its own arena key), routed to the kernel that
//! serves the server it names (or, for a server the world does not declare,
//! the kernel serving the base step's server) and decided by
//! `Kernel::evaluate`. A fixture injection writes the edited fixture into
//! the simulated server before the call and restores it after, so the
//! kernel's output scan sees the edited content. A replay evaluates the
//! captured original, then the copy; a concurrent replay admits the copy
//! while the original is still in flight. A scope escape has the holder sign
//! a delegation link whose scope is wider than its parent's.

use std::collections::BTreeMap;

use chio_adversary::action::{AdversaryAction, BurstPlan, MutatedCall, Mutation, ReplayPlan};
use chio_adversary::fitness::{ActionEvaluator, ActionOutcome};
use chio_arena::adversaries::class::{ReplayMode, ReplayReuse};
use chio_arena::{Action, ArenaError, Scenario};
use chio_kernel::kernel::Decision;
use chio_kernel::keys::derive_arena_key;
use chio_kernel::request::{RequestProof, ToolCallRequest};
use chio_kernel::token::CapabilityToken;
use ed25519_dalek::SigningKey;
use serde_json::Value;

use crate::error::NodeError;
use crate::executor::{DelayedCalls, PreparedStep, StepExecutor};
use crate::tools::FileChange;
use crate::world::{FixtureSet, World, AGENT_ROLE};

mod budget;
mod feedback;
pub mod instance;
mod scheduled;
mod unreachable;
mod widening;

pub use instance::{DirectWorlds, WorldInstance, Worlds};

use budget::BudgetTally;
use feedback::{feedback, Observed};
use unreachable::{unreachable, unreached};

/// Evaluates adversary actions with the real kernel in a scenario's world,
/// in the instances `W` makes (in process unless told otherwise).
#[derive(Debug)]
pub struct KernelActionEvaluator<W: Worlds = DirectWorlds> {
    scenario: Scenario,
    world: World,
    worlds: W,
    evaluations: u64,
}

impl KernelActionEvaluator {
    /// Resolves the scenario's world, seeding workspaces from `fixtures`.
    pub fn new(scenario: &Scenario, fixtures: &FixtureSet) -> Result<Self, NodeError> {
        let world = World::resolve(scenario, fixtures)?;
        Ok(Self::with_worlds(scenario, world, DirectWorlds))
    }

    /// Reads the fixtures next to the scenario and resolves its world.
    pub fn load(scenario: &Scenario) -> Result<Self, NodeError> {
        Self::new(scenario, &FixtureSet::load(scenario)?)
    }
}

impl<W: Worlds> KernelActionEvaluator<W> {
    /// Evaluates in the instances of `world` that `worlds` makes.
    pub fn with_worlds(scenario: &Scenario, world: World, worlds: W) -> Self {
        Self {
            scenario: scenario.clone(),
            world,
            worlds,
            evaluations: 0,
        }
    }

    /// Kernel evaluations made so far (real steps and actions together).
    pub fn kernel_evaluations(&self) -> u64 {
        self.evaluations
    }

    /// The resolved world.
    pub fn world(&self) -> &World {
        &self.world
    }
}

/// A failure outside any verdict, as the arena reports it.
fn failure(cause: impl std::fmt::Display) -> ArenaError {
    ArenaError::Evaluation {
        cause: cause.to_string(),
    }
}

/// One fresh instance of the world: the run's step executor over the
/// instance's dispatcher, so scheduled steps mean here what they mean in a
/// run.
struct Instance<'w, I> {
    world: &'w World,
    place: I,
    executor: StepExecutor,
    /// Scheduled calls in flight over delayed links: step id, the agent's
    /// node and the prepared call.
    in_flight: DelayedCalls<(String, String, PreparedStep)>,
    tally: BudgetTally,
    /// Kernel decisions made: every call step a kernel answered and every
    /// decided action call.
    evaluations: u64,
}

impl<'w, I: WorldInstance> Instance<'w, I> {
    fn new(world: &'w World, place: I) -> Result<Self, NodeError> {
        Ok(Self {
            world,
            place,
            executor: StepExecutor::new(world)?,
            in_flight: DelayedCalls::default(),
            tally: BudgetTally::default(),
            evaluations: 0,
        })
    }

    fn key_of(&self, agent: &str) -> SigningKey {
        match self.world.agents.get(agent) {
            Some(plan) => plan.key.clone(),
            // An agent the world does not declare (an accomplice) still has
            // an arena key derived like every other.
            None => derive_arena_key(self.world.rng_seed, AGENT_ROLE, agent),
        }
    }

    fn kernel_for(&self, server: &str, fallback_server: &str) -> Result<String, ArenaError> {
        self.world
            .server_kernel(server)
            .or_else(|| self.world.server_kernel(fallback_server))
            .map(str::to_string)
            .ok_or_else(|| failure(format!("no kernel serves {server} or {fallback_server}")))
    }

    /// Signs an action's call with `arguments`, applying its request-id,
    /// session and issue-time departures.
    fn sign_action(
        &self,
        action_id: &str,
        call: &MutatedCall,
        capability: CapabilityToken,
        arguments: Value,
        now_ms: u64,
    ) -> Result<ToolCallRequest, ArenaError> {
        ToolCallRequest {
            request_id: call
                .request_id
                .clone()
                .unwrap_or_else(|| action_id.to_string()),
            capability,
            server: call.server.clone(),
            tool: call.tool.clone(),
            arguments,
            agent_id: call.agent.clone(),
            session_id: call.session.clone().unwrap_or_else(|| call.agent.clone()),
            issued_at_ms: now_ms + call.future_dated_ms,
            proof: RequestProof::default(),
            sealed: Vec::new(),
            argument_sources: Vec::new(),
        }
        .sign(&self.key_of(&call.agent))
        .map_err(failure)
    }

    /// When an action's call is evaluated: its offset, or the presented
    /// capability's expiry instant when it asks for that edge.
    fn action_time(&self, call: &MutatedCall) -> u64 {
        let offset = self.world.start_ms + call.evaluation_ms;
        if !call.at_expiry {
            return offset;
        }
        self.executor
            .capability(&call.capability)
            .map_or(offset, |held| held.token.state().expires_at_ms)
    }

    fn token(&self, capability: &str) -> Result<CapabilityToken, ArenaError> {
        self.executor
            .capability(capability)
            .map(|held| held.token.clone())
            .ok_or_else(|| {
                failure(format!(
                    "capability {capability} does not exist at this point"
                ))
            })
    }

    /// `Kernel::evaluate` on `kernel`, dispatching to the simulated servers
    /// it serves; an admission is counted under its budgets.
    fn evaluate(
        &mut self,
        kernel: &str,
        request: &ToolCallRequest,
        now_ms: u64,
    ) -> Result<(Decision, bool), ArenaError> {
        let decision = self
            .place
            .decide(kernel, request, now_ms)
            .map_err(failure)?;
        self.evaluations += 1;
        let exceeded = self
            .tally
            .record(self.world, request.into(), decision.verdict);
        Ok((decision, exceeded))
    }

    /// Admits every request before completing any (a concurrent replay or
    /// burst); answers each decision, in order, with whether it was
    /// admitted past a budget.
    fn admit_all(
        &mut self,
        kernel: &str,
        requests: &[(ToolCallRequest, u64)],
    ) -> Result<Vec<(Decision, bool)>, ArenaError> {
        let world = self.world;
        let decisions = self
            .place
            .decide_together(kernel, requests)
            .map_err(failure)?;
        self.evaluations += requests.len() as u64;
        Ok(decisions
            .into_iter()
            .zip(requests)
            .map(|(decision, (request, _))| {
                let exceeded = self.tally.record(world, request.into(), decision.verdict);
                (decision, exceeded)
            })
            .collect())
    }

    /// Edits a server's fixture for the duration of `during`, then restores it.
    fn with_fixture_edit<T>(
        &mut self,
        edit: &chio_adversary::action::FixtureEdit,
        during: impl FnOnce(&mut Self) -> Result<T, ArenaError>,
    ) -> Result<T, ArenaError> {
        let original = self
            .place
            .change_file(&edit.server, &edit.path, FileChange::Keep)
            .map_err(failure)?;
        let edited = FileChange::Write(edit.apply(original.as_deref().unwrap_or("")));
        self.place
            .change_file(&edit.server, &edit.path, edited)
            .map_err(failure)?;
        let result = during(self);
        let restore = match original {
            Some(text) => FileChange::Write(text),
            None => FileChange::Delete,
        };
        self.place
            .change_file(&edit.server, &edit.path, restore)
            .map_err(failure)?;
        result
    }

    /// Runs one adversary action; `base_server` routes a server the world lacks.
    fn run_action(
        &mut self,
        action: &AdversaryAction,
        base_server: &str,
    ) -> Result<ActionOutcome, ArenaError> {
        let call = &action.call;
        let now_ms = self.action_time(call);
        let kernel = self.kernel_for(&call.server, base_server)?;
        if let Some(reason) = unreachable(self.world, self.executor.faults(), &kernel, action) {
            return Ok(unreached(kernel, reason));
        }
        let mut observed = Observed::default();
        let (decision, evaluations) = match &action.mutation {
            Mutation::Arguments { .. }
            | Mutation::Overrequest { .. }
            | Mutation::Path { .. }
            | Mutation::AfterRevocation { .. }
            | Mutation::AfterLabelledRead { .. }
            | Mutation::AfterRedefinition { .. } => {
                let token = self.token(&call.capability)?;
                let request =
                    self.sign_action(&action.id, call, token, call.arguments.clone(), now_ms)?;
                (self.evaluate(&kernel, &request, now_ms)?.0, 1)
            }
            Mutation::Fixture { edit, .. } => {
                let token = self.token(&call.capability)?;
                let request =
                    self.sign_action(&action.id, call, token, call.arguments.clone(), now_ms)?;
                let decision = self.with_fixture_edit(edit, |instance| {
                    instance.evaluate(&kernel, &request, now_ms)
                })?;
                (decision.0, 1)
            }
            Mutation::Replay(plan) => self.run_replay(action, &kernel, plan, now_ms)?,
            Mutation::Widen(plan) => {
                let child =
                    self.widened_child(plan, &call.agent, &call.capability, &call.tool, now_ms)?;
                let request =
                    self.sign_action(&action.id, call, child, call.arguments.clone(), now_ms)?;
                (self.evaluate(&kernel, &request, now_ms)?.0, 1)
            }
            Mutation::Burst(plan) => {
                self.run_burst(action, &kernel, plan, now_ms, &mut observed)?
            }
        };
        let projected = decision.projected();
        let feedback = feedback(action, &decision, projected, &observed);
        Ok(ActionOutcome {
            verdict: decision.verdict,
            projected,
            reason: decision.reason.clone(),
            guard: decision.guard.clone(),
            kernel,
            receipt: Some(decision.receipt),
            evaluations,
            feedback: Some(feedback),
        })
    }

    /// A replay: the captured original, then its copy (the same request, or
    /// signed again with a fresh nonce), the copy admitted while the
    /// original is in flight for a concurrent replay; the copy's decision.
    fn run_replay(
        &mut self,
        action: &AdversaryAction,
        kernel: &str,
        plan: &ReplayPlan,
        now_ms: u64,
    ) -> Result<(Decision, u32), ArenaError> {
        let call = &action.call;
        let token = self.token(&call.capability)?;
        let original = self.sign_action(&action.id, call, token, call.arguments.clone(), now_ms)?;
        let copy_at = now_ms + plan.offset_ms;
        let copy = match (&plan.reuse, &plan.copy_arguments) {
            (ReplayReuse::Nonce, Some(arguments)) => self.sign_action(
                &action.id,
                call,
                original.capability.clone(),
                arguments.clone(),
                copy_at,
            )?,
            _ => original.clone(),
        };
        if plan.mode == ReplayMode::Concurrent {
            let decided = self.admit_all(kernel, &[(original, now_ms), (copy, copy_at)])?;
            let last = decided
                .into_iter()
                .last()
                .ok_or_else(|| failure("a concurrent replay decided nothing"))?;
            Ok((last.0, 2))
        } else {
            self.evaluate(kernel, &original, now_ms)?;
            Ok((self.evaluate(kernel, &copy, copy_at)?.0, 2))
        }
    }

    /// A burst: copies of one call, admitted together or one after another;
    /// how many were admitted and whether one went past a budget go to
    /// `observed`, and the decision shown is the copy that went past it,
    /// else the last.
    fn run_burst(
        &mut self,
        action: &AdversaryAction,
        kernel: &str,
        plan: &BurstPlan,
        now_ms: u64,
        observed: &mut Observed,
    ) -> Result<(Decision, u32), ArenaError> {
        let call = &action.call;
        let token = self.token(&call.capability)?;
        let mut requests = Vec::with_capacity(plan.copies as usize);
        for copy in 0..plan.copies {
            let id = format!("{}#{copy}", action.id);
            let request =
                self.sign_action(&id, call, token.clone(), call.arguments.clone(), now_ms)?;
            requests.push((request, now_ms));
        }
        let decided = if plan.concurrent {
            self.admit_all(kernel, &requests)?
        } else {
            let mut decided = Vec::with_capacity(requests.len());
            for (request, at) in &requests {
                decided.push(self.evaluate(kernel, request, *at)?);
            }
            decided
        };
        observed.copies = plan.copies;
        observed.admitted = decided
            .iter()
            .filter(|(d, _)| d.verdict == chio_kernel::verdict::Verdict::Allow)
            .count() as u32;
        observed.exceeded = decided.iter().any(|(_, exceeded)| *exceeded);
        // The copy that went past the budget, else the last one.
        let shown = match decided.iter().position(|(_, exceeded)| *exceeded) {
            Some(at) => decided.into_iter().nth(at),
            None => decided.into_iter().last(),
        };
        let shown = shown.ok_or_else(|| failure("a burst made no copy"))?;
        Ok((shown.0, plan.copies))
    }
}

impl<W: Worlds> ActionEvaluator for KernelActionEvaluator<W> {
    fn evaluate_batch(
        &mut self,
        actions: &[AdversaryAction],
    ) -> Result<Vec<ActionOutcome>, ArenaError> {
        let scenario = &self.scenario;
        // Base step id -> indices of its actions, in batch order; revoke
        // step id -> indices of the actions made right after it.
        let mut by_step: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        let mut after: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, action) in actions.iter().enumerate() {
            match action.mutation.made_after() {
                Some(step) => after.entry(step).or_default().push(i),
                None => by_step
                    .entry(action.base_step.as_str())
                    .or_default()
                    .push(i),
            }
        }
        let mut outcomes: Vec<Option<ActionOutcome>> = vec![None; actions.len()];
        let place = self.worlds.instance(&self.world).map_err(failure)?;
        let mut instance = Instance::new(&self.world, place).map_err(failure)?;
        for scheduled in scenario.schedule() {
            let now_ms = self.world.start_ms + scheduled.evaluation_ms;
            // Calls over delayed links arriving before this instant are
            // decided before anything made at it.
            instance.land_before(Some(now_ms))?;
            let step = scenario.step(scheduled.step_index)?;
            if let Some(indices) = by_step.remove(step.head.id.as_str()) {
                let base_server = match &step.action {
                    Action::Call(call) => call.server.clone(),
                    _ => return Err(failure(format!("base step {} is not a call", step.head.id))),
                };
                for i in indices {
                    outcomes[i] = Some(instance.run_action(&actions[i], &base_server)?);
                }
            }
            instance.run_step(&step, now_ms)?;
            if let Some(indices) = after.remove(step.head.id.as_str()) {
                for i in indices {
                    let server = actions[i].call.server.clone();
                    outcomes[i] = Some(instance.run_action(&actions[i], &server)?);
                }
            }
        }
        instance.land_before(None)?;
        if let Some(step) = by_step.keys().chain(after.keys()).next() {
            return Err(failure(format!("base step {step} is not in the scenario")));
        }
        self.evaluations += instance.evaluations;
        outcomes
            .into_iter()
            .map(|o| o.ok_or_else(|| failure("an action was left unevaluated")))
            .collect()
    }
}
