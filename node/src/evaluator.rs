//! The adversary evaluator: adversary actions judged by the real kernel in
//! the scenario's world.
//!
//! [`KernelActionEvaluator`] implements the arena's `ActionEvaluator`
//! synchronously, without actors: it resolves the world once (keys, issued
//! grants, kernel configurations with their guard pipelines, tool-server
//! configurations seeded from the fixtures), and for each batch builds a
//! fresh instance of it: one [`Kernel`] per declared kernel over one
//! [`SharedTrust`] (as the embedded topology shares authority state), and
//! one [`ToolServer`] per declared server. It then walks the scenario's
//! schedule in order, exactly as the run driver does (calls signed by the
//! acting agent's arena key with the step id as request id and the agent as
//! session, delegations signed by the holder with the delegator's labels
//! recorded for the child, messages carrying labels to the receiver, each
//! label move by the rule of `chio_kernel::label::LabelCarry`, revocations
//! through the shared state), and right before each call step evaluates the
//! batch's actions
//! whose base step it is, in batch order. So an action meets the state its
//! base step meets: earlier delegations, revocations, session journal,
//! labels and budgets; the batch's earlier actions of the same base step
//! also leave their traces there.
//!
//! Operators can make a request depart from its base step: another request
//! id (the base step's own), another session, an evaluation at the
//! capability's expiry instant, an issue time in the future, or further
//! widenings on a widening link; each is applied here as the action says.
//!
//! An `outlive-revocation` action is not made before its base step but right
//! after the revoke step that revokes its capability (or an ancestor), so it
//! meets the revocation; a `leak-label` action right after the labelled read
//! it tries to leak, so it meets the retained label.
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

use chio_arena::adversary::action::{AdversaryAction, MutatedCall, Mutation, WideningPlan};
use chio_arena::adversary::class::{ReplayMode, ReplayReuse, WideningKind};
use chio_arena::adversary::fitness::{ActionEvaluator, ActionOutcome, Feedback, Stage};
use chio_arena::adversary::goal::Goal;
use chio_arena::{Action, ArenaError, Scenario};
use chio_kernel::guards::prompt_injection::{scan_value, Pattern, Reading, ValueFinding};
use chio_kernel::kernel::{Admission, Decision, Kernel, ToolOutput};
use chio_kernel::keys::{derive_arena_key, public_key_hex};
use chio_kernel::label::LabelCarry;
use chio_kernel::path::normalize_path;
use chio_kernel::request::{RequestProof, ToolCallRequest};
use chio_kernel::token::{CapabilityToken, ScopeGrant};
use ed25519_dalek::SigningKey;
use serde_json::{json, Value};

use crate::error::NodeError;
use crate::shared::SharedTrust;
use crate::tools::ToolServer;
use crate::world::{FixtureSet, World, AGENT_ROLE};

/// Seconds a scope escape's expiry widening adds past the parent's expiry.
const EXPIRY_WIDENING_MS: u64 = 86_400_000;

/// Evaluates adversary actions with the real kernel in a scenario's world.
#[derive(Debug)]
pub struct KernelActionEvaluator {
    scenario: Scenario,
    world: World,
    evaluations: u64,
}

impl KernelActionEvaluator {
    /// Resolves the scenario's world, seeding workspaces from `fixtures`.
    pub fn new(scenario: &Scenario, fixtures: &FixtureSet) -> Result<Self, NodeError> {
        Ok(Self {
            scenario: scenario.clone(),
            world: World::resolve(scenario, fixtures)?,
            evaluations: 0,
        })
    }

    /// Reads the fixtures next to the scenario and resolves its world.
    pub fn load(scenario: &Scenario) -> Result<Self, NodeError> {
        Self::new(scenario, &FixtureSet::load(scenario)?)
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

/// One fresh instance of the world.
struct Instance<'w> {
    world: &'w World,
    trust: SharedTrust,
    kernels: BTreeMap<String, Kernel>,
    servers: BTreeMap<String, ToolServer>,
    /// Every capability so far, with the agent holding it.
    ledger: BTreeMap<String, (String, CapabilityToken)>,
    /// The label of each scenario call step's released output, by step id,
    /// for messages that forward it.
    output_labels: BTreeMap<String, Option<String>>,
    evaluations: u64,
}

impl<'w> Instance<'w> {
    fn new(world: &'w World) -> Result<Self, ArenaError> {
        let trust = SharedTrust::new();
        let mut kernels = BTreeMap::new();
        for (id, plan) in &world.kernels {
            let kernel = Kernel::new(plan.config.clone(), trust.kernel_stores())
                .map_err(|e| failure(format!("kernel {id}: {e}")))?;
            kernels.insert(id.clone(), kernel);
        }
        let servers = world
            .servers
            .iter()
            .map(|(id, plan)| {
                let server =
                    ToolServer::new(id, plan.config.clone()).with_integrity(plan.integrity.clone());
                (id.clone(), server)
            })
            .collect();
        Ok(Self {
            world,
            trust,
            kernels,
            servers,
            ledger: world.grants.clone(),
            output_labels: BTreeMap::new(),
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

    #[allow(clippy::too_many_arguments)]
    fn sign(
        &self,
        request_id: &str,
        agent: &str,
        capability: CapabilityToken,
        server: &str,
        tool: &str,
        arguments: Value,
        now_ms: u64,
    ) -> Result<ToolCallRequest, ArenaError> {
        ToolCallRequest {
            request_id: request_id.to_string(),
            capability,
            server: server.to_string(),
            tool: tool.to_string(),
            arguments,
            agent_id: agent.to_string(),
            session_id: agent.to_string(),
            issued_at_ms: now_ms,
            proof: RequestProof::default(),
        }
        .sign(&self.key_of(agent))
        .map_err(failure)
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
        self.ledger
            .get(&call.capability)
            .map_or(offset, |(_, token)| token.state().expires_at_ms)
    }

    fn token(&self, capability: &str) -> Result<CapabilityToken, ArenaError> {
        self.ledger
            .get(capability)
            .map(|(_, token)| token.clone())
            .ok_or_else(|| {
                failure(format!(
                    "capability {capability} does not exist at this point"
                ))
            })
    }

    /// `Kernel::evaluate` on `kernel`, dispatching to the simulated servers it serves.
    fn evaluate(
        &mut self,
        kernel: &str,
        request: &ToolCallRequest,
        now_ms: u64,
    ) -> Result<Decision, ArenaError> {
        let world = self.world;
        let servers = &mut self.servers;
        let k = self
            .kernels
            .get_mut(kernel)
            .ok_or_else(|| failure(format!("unknown kernel {kernel}")))?;
        self.evaluations += 1;
        Ok(k.evaluate(request, now_ms, &mut |req| {
            dispatch(world, servers, kernel, req)
        }))
    }

    fn complete(
        &mut self,
        kernel: &str,
        admission: Admission,
        now_ms: u64,
    ) -> Result<Decision, ArenaError> {
        let world = self.world;
        let k = self
            .kernels
            .get_mut(kernel)
            .ok_or_else(|| failure(format!("unknown kernel {kernel}")))?;
        Ok(match admission {
            Admission::Decided(decision) => *decision,
            Admission::Admitted(ticket) => {
                match dispatch(world, &mut self.servers, kernel, ticket.request()) {
                    Ok(output) => k.complete(*ticket, output, now_ms),
                    Err(reason) => k.abort(*ticket, &reason, now_ms),
                }
            }
        })
    }

    fn admit(
        &mut self,
        kernel: &str,
        request: &ToolCallRequest,
        now_ms: u64,
    ) -> Result<Admission, ArenaError> {
        let k = self
            .kernels
            .get_mut(kernel)
            .ok_or_else(|| failure(format!("unknown kernel {kernel}")))?;
        self.evaluations += 1;
        Ok(k.admit(request, now_ms))
    }

    /// Runs one of the scenario's own steps, as the run driver does.
    fn run_step(
        &mut self,
        scenario: &Scenario,
        index: usize,
        agent: &str,
        now_ms: u64,
    ) -> Result<(), ArenaError> {
        let step = &scenario.file().steps[index];
        match &scenario.actions()[index] {
            Action::Call(call) => {
                let Some(capability) = &call.capability else {
                    return Ok(());
                };
                let token = self.token(capability)?;
                let kernel = self.kernel_for(&call.server, &call.server)?;
                let request = self.sign(
                    &step.id,
                    agent,
                    token,
                    &call.server,
                    &call.tool,
                    call.arguments.clone(),
                    now_ms,
                )?;
                let decision = self.evaluate(&kernel, &request, now_ms)?;
                self.output_labels
                    .insert(step.id.clone(), decision.trace.output_label);
            }
            Action::Delegate(delegate) => {
                let parent = self.token(&delegate.capability)?;
                let attenuation = delegate.attenuation(now_ms);
                let delegatee = public_key_hex(&self.key_of(&delegate.to));
                let child = parent
                    .delegate(
                        &self.key_of(agent),
                        &delegatee,
                        &attenuation,
                        &delegate.delegation,
                        now_ms,
                    )
                    .map_err(failure)?;
                // What the delegator holds is recorded for the child, as a
                // node records it (chio_kernel::label::LabelCarry).
                let link = child
                    .delegation_chain
                    .last()
                    .ok_or_else(|| failure(format!("delegation {} carries no link", child.id)))?;
                LabelCarry::delegation(agent, link)
                    .and_then(|carry| carry.apply(&mut self.trust.clone()))
                    .map_err(failure)?;
                self.ledger
                    .insert(delegate.delegation.clone(), (delegate.to.clone(), child));
            }
            Action::Revoke(revoke) => {
                self.trust.revoke(&revoke.target).map_err(failure)?;
            }
            Action::Message(message) => {
                let output_label = message
                    .from_step
                    .as_ref()
                    .and_then(|source| self.output_labels.get(source).cloned().flatten());
                LabelCarry::message(agent, &message.to, &message.to, output_label.as_deref())
                    .apply(&mut self.trust.clone())
                    .map_err(failure)?;
            }
            Action::Advance(_) => {}
        }
        Ok(())
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
        let (decision, evaluations) = match &action.mutation {
            Mutation::Arguments { .. }
            | Mutation::Overrequest { .. }
            | Mutation::Path { .. }
            | Mutation::AfterRevocation { .. }
            | Mutation::AfterLabelledRead { .. } => {
                let token = self.token(&call.capability)?;
                let request =
                    self.sign_action(&action.id, call, token, call.arguments.clone(), now_ms)?;
                (self.evaluate(&kernel, &request, now_ms)?, 1)
            }
            Mutation::Fixture { edit, .. } => {
                let server = self.servers.get_mut(&edit.server).ok_or_else(|| {
                    failure(format!("fixture server {} is not declared", edit.server))
                })?;
                let before = server.call("read_file", &json!({"path": edit.path}));
                let original = before
                    .content
                    .get("content")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                server.call(
                    "write_file",
                    &json!({"path": edit.path, "content": edit.apply(original.as_deref().unwrap_or(""))}),
                );
                let token = self.token(&call.capability)?;
                let request =
                    self.sign_action(&action.id, call, token, call.arguments.clone(), now_ms)?;
                let decision = self.evaluate(&kernel, &request, now_ms);
                if let Some(server) = self.servers.get_mut(&edit.server) {
                    match original {
                        Some(text) => {
                            server.call("write_file", &json!({"path": edit.path, "content": text}))
                        }
                        None => server.call("delete_file", &json!({"path": edit.path})),
                    };
                }
                (decision?, 1)
            }
            Mutation::Replay(plan) => {
                let token = self.token(&call.capability)?;
                let original =
                    self.sign_action(&action.id, call, token, call.arguments.clone(), now_ms)?;
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
                    let first = self.admit(&kernel, &original, now_ms)?;
                    let second = self.admit(&kernel, &copy, copy_at)?;
                    self.complete(&kernel, first, now_ms)?;
                    (self.complete(&kernel, second, copy_at)?, 2)
                } else {
                    self.evaluate(&kernel, &original, now_ms)?;
                    (self.evaluate(&kernel, &copy, copy_at)?, 2)
                }
            }
            Mutation::Widen(plan) => {
                let child =
                    self.widened_child(plan, &call.agent, &call.capability, &call.tool, now_ms)?;
                let request =
                    self.sign_action(&action.id, call, child, call.arguments.clone(), now_ms)?;
                (self.evaluate(&kernel, &request, now_ms)?, 1)
            }
        };
        let projected = decision.projected();
        let feedback = feedback(action, &decision, projected);
        Ok(ActionOutcome {
            verdict: decision.verdict,
            projected,
            reason: decision.reason.clone(),
            guard: decision.guard.clone(),
            kernel,
            receipt: decision.receipt,
            evaluations,
            feedback: Some(feedback),
        })
    }

    /// The holder signs a link handing the accomplice a scope wider than the parent's.
    fn widened_child(
        &self,
        plan: &WideningPlan,
        accomplice: &str,
        child_id: &str,
        tool: &str,
        now_ms: u64,
    ) -> Result<CapabilityToken, ArenaError> {
        let parent = self.token(&plan.parent)?;
        let mut state = parent.state();
        for widening in std::iter::once(plan.widening).chain(plan.also.iter().copied()) {
            widen(&mut state, widening, plan, tool);
        }
        let delegatee = public_key_hex(&self.key_of(accomplice));
        parent
            .delegate_state(
                &self.key_of(&plan.delegator),
                &delegatee,
                state,
                child_id,
                now_ms,
            )
            .map_err(failure)
    }
}

/// Applies one widening to a link's state.
fn widen(
    state: &mut chio_kernel::token::GrantState,
    widening: WideningKind,
    plan: &WideningPlan,
    tool: &str,
) {
    {
        match widening {
            WideningKind::Tool => {
                if let Some(extra) = &plan.extra_tool {
                    for grant in &mut state.scope {
                        grant.tools.push(extra.clone());
                    }
                }
            }
            WideningKind::Path => {
                for grant in &mut state.scope {
                    grant.constraints.remove("path_prefix");
                }
            }
            WideningKind::Server => {
                if let Some(extra) = &plan.extra_server {
                    state.scope.push(ScopeGrant::new(extra, &[tool]));
                }
            }
            WideningKind::Expiry => state.expires_at_ms += EXPIRY_WIDENING_MS,
            WideningKind::Share => state.share_bps += 1,
        }
    }
}

/// The search's feedback on one decided action (see the module doc).
fn feedback(
    action: &AdversaryAction,
    decision: &Decision,
    projected: chio_kernel::verdict::ProjectedVerdict,
) -> Feedback {
    let stage = Stage::classify(
        projected,
        decision.reason.as_deref(),
        decision.guard.as_deref(),
    );
    let admitted = stage == Stage::Admitted;
    let goal = action
        .goal
        .clone()
        .unwrap_or_else(|| Goal::default_for(action.gene.class()));
    match goal {
        Goal::SmuggleInstruction => {
            // What the kernel saw: the arguments, or the output it produced.
            let seen = match &action.mutation {
                Mutation::Fixture { .. } => match &decision.output {
                    Some(output) => Some(output.clone()),
                    None if !admitted => action_fixture_text(action),
                    None => None,
                },
                _ => Some(action.call.arguments.clone()),
            };
            let finding = seen.as_ref().and_then(|v| scan_value(v, &Pattern::ALL));
            let (detail, closeness) = match &finding {
                Some(f) => (Some(describe_finding(f)), disguise(f)),
                None => (None, 0),
            };
            Feedback {
                stage,
                detail,
                closeness,
                goal_reached: admitted && finding.is_some(),
            }
        }
        Goal::ReachForbiddenPath { path } => {
            let spelled = action
                .call
                .arguments
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("");
            let reached = normalize_path(spelled)
                .ok()
                .zip(normalize_path(&path).ok())
                .is_some_and(|(a, b)| a.eq_ignore_ascii_case(&b));
            Feedback {
                stage,
                detail: reached.then(|| "names-the-goal-path".to_string()),
                closeness: if reached && spelled != path { 500 } else { 0 },
                goal_reached: admitted && reached,
            }
        }
        _ => Feedback {
            stage,
            detail: None,
            closeness: 0,
            goal_reached: admitted,
        },
    }
}

/// The fixture line an action injects, as a string value, for a denied fixture action.
fn action_fixture_text(action: &AdversaryAction) -> Option<Value> {
    match &action.mutation {
        Mutation::Fixture { edit, .. } => Some(Value::String(edit.payload.clone())),
        _ => None,
    }
}

/// `rule/reading/depth` of a reference finding, or `split/rule`.
fn describe_finding(finding: &ValueFinding) -> String {
    match finding {
        ValueFinding::At { found, .. } => format!(
            "{}/{}/{}/{}",
            found.pattern.as_str(),
            found.rule,
            found.reading.as_str(),
            found.embedding
        ),
        ValueFinding::Split { found } => {
            format!("{}/{}/split", found.pattern.as_str(), found.rule)
        }
        ValueFinding::Limit { limit, .. } => format!("limit/{limit}"),
    }
}

/// Thousandths: how hard the reference detector had to look to read the payload.
fn disguise(finding: &ValueFinding) -> u16 {
    match finding {
        ValueFinding::At { found, .. } => {
            let reading = if found.reading == Reading::Plain {
                0
            } else {
                500
            };
            let depth = 150 * found.embedding.min(3) as u16;
            (reading + depth).min(999)
        }
        ValueFinding::Split { .. } => 700,
        ValueFinding::Limit { .. } => 300,
    }
}

/// Serves an admitted call on a simulated server the kernel serves.
fn dispatch(
    world: &World,
    servers: &mut BTreeMap<String, ToolServer>,
    kernel: &str,
    request: &ToolCallRequest,
) -> Result<ToolOutput, String> {
    let served = world.server_kernel(&request.server) == Some(kernel);
    match servers.get_mut(&request.server) {
        Some(server) if served => {
            let result = server.call(&request.tool, &request.arguments);
            Ok(ToolOutput {
                content: result.content,
                label: result.label.map(|l| l.as_str().to_string()),
                integrity: result.integrity.label(),
                performed: result.performed,
            })
        }
        _ => Err(format!(
            "server {} is not served by kernel {kernel}",
            request.server
        )),
    }
}

impl ActionEvaluator for KernelActionEvaluator {
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
        let mut instance = Instance::new(&self.world)?;
        for scheduled in scenario.schedule() {
            if let Some(indices) = by_step.remove(scheduled.step_id.as_str()) {
                let base_server = match &scenario.actions()[scheduled.step_index] {
                    Action::Call(call) => call.server.clone(),
                    _ => {
                        return Err(failure(format!(
                            "base step {} is not a call",
                            scheduled.step_id
                        )))
                    }
                };
                for i in indices {
                    outcomes[i] = Some(instance.run_action(&actions[i], &base_server)?);
                }
            }
            let now_ms = self.world.start_ms + scheduled.evaluation_ms;
            instance.run_step(scenario, scheduled.step_index, &scheduled.agent_id, now_ms)?;
            if let Some(indices) = after.remove(scheduled.step_id.as_str()) {
                for i in indices {
                    let server = actions[i].call.server.clone();
                    outcomes[i] = Some(instance.run_action(&actions[i], &server)?);
                }
            }
        }
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
