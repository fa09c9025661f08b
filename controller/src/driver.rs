//! The run driver: dispatches a scenario's actions in total order to the
//! nodes that host the acting agents, and turns what comes back into an
//! evidence bundle.
//!
//! Order of work for one run: resolve the world (keys, grants, placement),
//! then for each scheduled action in the scheduler's order, compute its
//! virtual instant (`start + evaluation offset`), send it to the acting
//! agent's node through a [`Dispatcher`], wait for the answer, record it,
//! and only then send the next. One action in flight at a time is what
//! makes the run replayable whatever the topology: concurrency inside a node
//! never reaches an output. A call whose verdict differs from its
//! expectation, or whose reason lacks the step's `expect_reason`, stops the
//! run unless `keep_going`; an infrastructure failure always stops it.
//! Either way the bundle keeps every receipt so far. Each call's record
//! carries the kernel's decision trace (what the decision read, stage by
//! stage), each message and delegation the labels it carried.
//!
//! The driver does not know how nodes are reached: the embedded topology
//! and the gRPC topologies implement [`Dispatcher`].

use std::collections::BTreeMap;

use chio_arena::bundle::{
    Bundle, BundleManifest, StepInputs, StepRecord, StopRecord, BUNDLE_SCHEMA, SCENARIO_INPUT,
};
use chio_arena::fixtures::normalized_folder;
use chio_arena::scenario::StepExpectation;
use chio_arena::{Action, Scenario};
use chio_kernel::canonical::to_canonical_string;
use chio_kernel::keys::public_key_hex;
use chio_kernel::receipt::merkle_root;
use chio_kernel::revocation::check_revocation_authority;
use chio_kernel::token::CapabilityToken;
use chio_node::actors::CallOutcome;
use chio_node::link::LinkFuture;
use chio_node::{
    CallCommand, DelegateCommand, DelegateOutcome, EmbeddedTopology, FixtureSet, MessageCommand,
    MessageOutcome, NodeError, World,
};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tracing::Instrument;

/// The evaluator's version, part of every step's evaluator fingerprint.
pub const EVALUATOR_VERSION: &str = concat!("chio-kernel/", env!("CARGO_PKG_VERSION"));

/// How the driver reaches nodes by logical name.
pub trait Dispatcher: Send + Sync {
    /// Runs a call on `node`.
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallOutcome>;
    /// Runs a delegation on `node`, returning the child token and the
    /// labels recorded for it.
    fn delegate(&self, node: &str, command: DelegateCommand) -> LinkFuture<'_, DelegateOutcome>;
    /// Runs a revocation on `node`.
    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, ()>;
    /// Sends a message from an agent hosted on `node`.
    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome>;
}

impl Dispatcher for EmbeddedTopology {
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallOutcome> {
        let node = self.node(node).cloned();
        Box::pin(async move { node?.call(command).await })
    }

    fn delegate(&self, node: &str, command: DelegateCommand) -> LinkFuture<'_, DelegateOutcome> {
        let node = self.node(node).cloned();
        Box::pin(async move { node?.delegate(command).await })
    }

    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, ()> {
        let node = self.node(node).cloned();
        let target = target.to_string();
        Box::pin(async move { node?.revoke(&target, at_ms).await })
    }

    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome> {
        let node = self.node(node).cloned();
        Box::pin(async move { node?.message(command).await })
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Every action was dispatched and every expectation held.
    Passed,
    /// Every action was dispatched (`keep_going`) and some expectation failed.
    Failed,
    /// An unexpected verdict stopped the run.
    Stopped,
    /// A node or store failed; the run could not continue.
    InfrastructureFailure,
}

/// A finished run: its bundle and how it ended.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The evidence.
    pub bundle: Bundle,
    /// How it ended.
    pub status: RunStatus,
    /// The infrastructure failure, when one ended the run.
    pub failure: Option<NodeError>,
}

/// What the driver needs to know about a scenario's inputs.
#[derive(Debug, Clone)]
pub struct RunInputs {
    /// The scenario file's bytes, as run.
    pub scenario_bytes: Vec<u8>,
    /// The fixture files, by server.
    pub fixtures: FixtureSet,
    /// Input files for the bundle, by path relative to `inputs/`.
    pub files: BTreeMap<String, Vec<u8>>,
}

impl RunInputs {
    /// Gathers the scenario's bytes and the fixtures its loader read; each
    /// fixture folder is recorded under its normalised path (`./a/` as `a`).
    pub fn load(scenario: &Scenario, scenario_bytes: Vec<u8>) -> Result<RunInputs, NodeError> {
        let fixtures = FixtureSet::load(scenario)?;
        let mut files = BTreeMap::new();
        files.insert(SCENARIO_INPUT.to_string(), scenario_bytes.clone());
        for server in &scenario.file().servers {
            let folder = server.fixtures.as_deref().and_then(normalized_folder);
            if let (Some(rel), Some(seeded)) = (folder, fixtures.servers.get(&server.id)) {
                for (path, content) in seeded {
                    files.insert(format!("{rel}/{path}"), content.as_bytes().to_vec());
                }
            }
        }
        Ok(RunInputs {
            scenario_bytes,
            fixtures,
            files,
        })
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn fingerprint(value: &Value) -> String {
    // Every value fingerprinted here is built from validated scenario data
    // (integers within 2^53), so canonicalisation cannot fail; an empty
    // input would only make two fingerprints compare equal, never allow.
    sha256_hex(to_canonical_string(value).unwrap_or_default().as_bytes())
}

/// A capability the run knows of: who holds it, the token, and the token's
/// fingerprint, computed once when the token enters the run rather than on
/// every call that presents it.
struct LedgerEntry {
    holder: String,
    token: CapabilityToken,
    token_sha256: String,
}

impl LedgerEntry {
    fn new(holder: &str, token: CapabilityToken) -> Self {
        let token_sha256 = fingerprint(&serde_json::to_value(&token).unwrap_or(Value::Null));
        Self {
            holder: holder.to_string(),
            token,
            token_sha256,
        }
    }
}

/// The next link of a hash chain: SHA-256 of the previous link (hex), a
/// newline, and the canonical JSON of the new entry.
fn extend_chain(previous: &str, entry: &Value) -> String {
    let mut hasher = Sha256::new();
    hasher.update(previous.as_bytes());
    hasher.update(b"\n");
    hasher.update(to_canonical_string(entry).unwrap_or_default().as_bytes());
    hex::encode(hasher.finalize())
}

/// Each kernel's policy as canonical JSON, by kernel id.
pub fn kernel_policies(world: &World) -> Result<BTreeMap<String, String>, NodeError> {
    let mut out = BTreeMap::new();
    for (id, plan) in &world.kernels {
        let policy = json!({
            "kernel": id,
            "kernel_key": public_key_hex(&plan.config.signing_key),
            "trusted_issuers": plan.config.trusted_issuers,
            "max_delegation_depth": plan.config.max_delegation_depth,
            "guards": plan.config.guards,
            "tool_budgets": plan.config.tool_budgets.iter().map(|b| json!({
                "agent": b.agent, "server": b.server, "tool": b.tool,
                "max_invocations": b.max_invocations,
            })).collect::<Vec<_>>(),
        });
        let text = to_canonical_string(&policy).map_err(|e| NodeError::Kernel(e.to_string()))?;
        out.insert(id.clone(), text);
    }
    Ok(out)
}

/// Records what a delegate or revoke step did against what it expected:
/// `refusal` is the reason it was refused, `None` when it took effect. A
/// mismatch (of the outcome, or of `expect_reason`) counts and, unless
/// `keep_going`, stops the run like an unexpected verdict.
fn judge_step(
    record: &mut StepRecord,
    expected: StepExpectation,
    refusal: Option<String>,
    keep_going: bool,
    mismatches: &mut Vec<String>,
    stopped: &mut Option<StopRecord>,
) {
    let actual = if refusal.is_some() {
        StepExpectation::Refused
    } else {
        StepExpectation::Done
    };
    let outcome_ok = actual == expected;
    record.expected = Some(expected.as_str().to_string());
    record.actual = Some(actual.as_str().to_string());
    record.reason = refusal.clone();
    let reason_miss = reason_mismatch(record);
    record.pass = Some(outcome_ok && reason_miss.is_none());
    if record.pass == Some(false) {
        mismatches.push(record.step_id.clone());
        if !keep_going {
            *stopped = Some(if outcome_ok {
                StopRecord {
                    step_id: record.step_id.clone(),
                    cause: UNEXPECTED_REASON.to_string(),
                    message: reason_miss.unwrap_or_default(),
                }
            } else {
                StopRecord {
                    step_id: record.step_id.clone(),
                    cause: "unexpected-outcome".to_string(),
                    message: format!(
                        "step {} expected {} but it was {}{}",
                        record.step_id,
                        expected.as_str(),
                        actual.as_str(),
                        refusal.map(|r| format!(": {r}")).unwrap_or_default()
                    ),
                }
            });
        }
    }
}

/// The stop cause of a step whose reason lacks its `expect_reason`.
pub const UNEXPECTED_REASON: &str = "unexpected-reason";

/// `None` when the record's reason contains its expected reason (or none
/// is expected); otherwise the message naming both. The expectation is a
/// plain, case-sensitive substring of the reason the kernel (or the
/// refusal) gave, so a scenario can pin the part that matters (a guard's
/// words, a label key) without restating ids or numbers.
pub fn reason_mismatch(record: &StepRecord) -> Option<String> {
    let want = record.expected_reason.as_deref()?;
    match record.reason.as_deref() {
        Some(reason) if reason.contains(want) => None,
        Some(reason) => Some(format!(
            "step {} expected a reason containing {want:?} but the reason is {reason:?}",
            record.step_id
        )),
        None => Some(format!(
            "step {} expected a reason containing {want:?} but it gave no reason (actual {})",
            record.step_id,
            record.actual.as_deref().unwrap_or("?")
        )),
    }
}

/// Runs a scenario's whole schedule through `dispatcher`.
pub async fn run_schedule(
    scenario: &Scenario,
    world: &World,
    inputs: &RunInputs,
    dispatcher: &dyn Dispatcher,
    keep_going: bool,
) -> Result<RunResult, NodeError> {
    let policies = kernel_policies(world)?;
    let policy_hashes: BTreeMap<String, String> = policies
        .iter()
        .map(|(k, v)| (k.clone(), sha256_hex(v.as_bytes())))
        .collect();
    let authority_hex = public_key_hex(&world.authority);
    let clock = scenario.clock();
    let file = scenario.file();

    // Every capability the run knows of, with the agent holding it.
    let mut ledger: BTreeMap<String, LedgerEntry> = world
        .grants
        .iter()
        .map(|(id, (holder, token))| (id.clone(), LedgerEntry::new(holder, token.clone())))
        .collect();
    let mut steps = Vec::new();
    let mut receipts = Vec::new();
    let mut mismatches = Vec::new();
    // Admission state and session history are hash chains over what
    // happened before each step, so each step costs the same whatever the
    // run's length.
    let empty = fingerprint(&Value::Array(Vec::new()));
    let mut admission = empty.clone();
    let mut sessions: BTreeMap<String, String> = BTreeMap::new();
    // Each call step's released output, by step id: its label and the
    // SHA-256 of its canonical JSON, for messages that forward it.
    let mut outputs: BTreeMap<String, (Option<String>, String)> = BTreeMap::new();
    let mut stopped = None;
    let mut failure = None;

    for scheduled in scenario.schedule() {
        let step = &file.steps[scheduled.step_index];
        let action = &scenario.actions()[scheduled.step_index];
        let agent = &scheduled.agent_id;
        let now_ms = world.start_ms + scheduled.evaluation_ms;
        let virtual_time = clock.format_offset_ms(scheduled.evaluation_ms);
        let node = world
            .agent_node(agent)
            .ok_or_else(|| NodeError::Unroutable(format!("agent {agent}")))?
            .to_string();
        let session = sessions
            .entry(agent.clone())
            .or_insert_with(|| empty.clone())
            .clone();
        let mut record = StepRecord {
            step_id: step.id.clone(),
            action: String::new(),
            agent: agent.clone(),
            virtual_time: virtual_time.clone(),
            kernel: None,
            target: None,
            expected: None,
            actual: None,
            verdict: None,
            reason: None,
            guard: None,
            receipt_id: None,
            recorded: None,
            pass: None,
            detail: None,
            expected_reason: scenario
                .expect_reason(scheduled.step_index)
                .map(str::to_string),
            labels: None,
            trace: None,
            inputs: StepInputs {
                invocation: String::new(),
                evaluator: String::new(),
                authority_time: fingerprint(&json!({
                    "trusted_issuers": [authority_hex],
                    "now": virtual_time,
                })),
                admission: admission.clone(),
                session,
            },
        };
        let result: Result<(), NodeError> = match action {
            Action::Call(call) => {
                record.action = "call".to_string();
                let capability_id = call.capability.clone().ok_or_else(|| {
                    NodeError::Scenario(format!("step {} presents no capability", step.id))
                })?;
                let entry = ledger.get(&capability_id).ok_or_else(|| {
                    NodeError::Scenario(format!(
                        "step {} presents capability {capability_id} before it exists",
                        step.id
                    ))
                })?;
                let captured = (entry.holder != *agent).then(|| entry.token.clone());
                let token_sha256 = entry.token_sha256.clone();
                let kernel = world
                    .server_kernel(&call.server)
                    .ok_or_else(|| NodeError::Unroutable(format!("server {}", call.server)))?
                    .to_string();
                record.kernel = Some(kernel.clone());
                record.target = Some(format!("{}/{}", call.server, call.tool));
                record.expected = Some(call.expect_verdict.as_str().to_string());
                record.inputs.invocation = fingerprint(&json!({
                    "agent": agent,
                    "server": call.server,
                    "tool": call.tool,
                    "arguments": call.arguments,
                    "capability": capability_id,
                    "captured": captured.is_some(),
                }));
                record.inputs.evaluator = fingerprint(&json!({
                    "kernel": kernel,
                    "policy": policy_hashes.get(&kernel),
                    "evaluator": EVALUATOR_VERSION,
                }));
                record.inputs.authority_time = fingerprint(&json!({
                    "trusted_issuers": [authority_hex],
                    "token": token_sha256,
                    "now": virtual_time,
                }));
                let outcome = dispatcher
                    .call(
                        &node,
                        CallCommand {
                            request_id: step.id.clone(),
                            agent: agent.clone(),
                            capability_id: capability_id.clone(),
                            captured,
                            server: call.server.clone(),
                            tool: call.tool.clone(),
                            arguments: call.arguments.clone(),
                            now_ms,
                        },
                    )
                    .await;
                match outcome {
                    Ok(outcome) => {
                        let actual = outcome.projected.as_str().to_string();
                        let verdict_ok = actual == call.expect_verdict.as_str();
                        record.actual = Some(actual.clone());
                        record.verdict = Some(outcome.verdict.as_str().to_string());
                        record.reason = outcome.reason.clone();
                        record.guard = outcome.guard.clone();
                        record.receipt_id = Some(outcome.receipt.id.clone());
                        record.recorded = Some(outcome.recorded);
                        let reason_miss = reason_mismatch(&record);
                        let pass = verdict_ok && reason_miss.is_none();
                        record.pass = Some(pass);
                        record.trace = Some(outcome.trace.clone());
                        outputs.insert(
                            step.id.clone(),
                            (
                                outcome.trace.output_label.clone(),
                                fingerprint(outcome.output.as_ref().unwrap_or(&Value::Null)),
                            ),
                        );
                        receipts.push(outcome.receipt.clone());
                        let entry = json!({"step": step.id, "server": call.server, "tool": call.tool, "verdict": actual});
                        if let Some(chain) = sessions.get_mut(agent) {
                            *chain = extend_chain(chain, &entry);
                        }
                        admission = extend_chain(
                            &admission,
                            &json!({"call": entry, "capability": capability_id}),
                        );
                        if !pass {
                            mismatches.push(step.id.clone());
                            if let (false, true, Some(message)) =
                                (keep_going, verdict_ok, reason_miss)
                            {
                                stopped = Some(StopRecord {
                                    step_id: step.id.clone(),
                                    cause: UNEXPECTED_REASON.to_string(),
                                    message,
                                });
                            } else if !keep_going {
                                stopped = Some(StopRecord {
                                    step_id: step.id.clone(),
                                    cause: "unexpected-verdict".to_string(),
                                    message: format!(
                                        "step {} expected {} but the kernel answered {}{}",
                                        step.id,
                                        call.expect_verdict.as_str(),
                                        actual,
                                        outcome
                                            .reason
                                            .as_deref()
                                            .map(|r| format!(": {r}"))
                                            .unwrap_or_default()
                                    ),
                                });
                            }
                        }
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Action::Delegate(delegate) => {
                record.action = "delegate".to_string();
                let attenuation = delegate.attenuation(now_ms);
                record.inputs.invocation = fingerprint(&json!({
                    "agent": agent,
                    "delegate": delegate,
                }));
                // Only the holder of a capability may hand it on; the
                // controller decides this from its ledger before anything
                // is dispatched, so every topology refuses alike.
                let held = ledger
                    .get(&delegate.capability)
                    .is_some_and(|entry| entry.holder == *agent);
                let outcome = if !held {
                    Ok(Err(format!(
                        "delegation refused: agent {agent} does not hold capability {}",
                        delegate.capability
                    )))
                } else {
                    dispatcher
                        .delegate(
                            &node,
                            DelegateCommand {
                                agent: agent.clone(),
                                capability_id: delegate.capability.clone(),
                                to: delegate.to.clone(),
                                delegation_id: delegate.delegation.clone(),
                                attenuation,
                                now_ms,
                            },
                        )
                        .await
                        .map(Ok)
                };
                match outcome {
                    Ok(done) => {
                        let refusal = match done {
                            Ok(DelegateOutcome { token, labels }) => {
                                let entry = LedgerEntry::new(&delegate.to, token);
                                record.detail = Some(entry.token_sha256.clone());
                                let mut link = json!({"delegate": delegate.delegation, "token": entry.token_sha256});
                                if !labels.is_empty() {
                                    link["labels"] = json!(labels);
                                }
                                admission = extend_chain(&admission, &link);
                                record.labels = Some(labels);
                                ledger.insert(delegate.delegation.clone(), entry);
                                None
                            }
                            Err(reason) => Some(reason),
                        };
                        judge_step(
                            &mut record,
                            delegate.expect,
                            refusal,
                            keep_going,
                            &mut mismatches,
                            &mut stopped,
                        );
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Action::Revoke(revoke) => {
                record.action = "revoke".to_string();
                record.detail = Some(revoke.target.clone());
                record.inputs.invocation = fingerprint(&json!({"agent": agent, "revoke": revoke}));
                // Revocation needs authority: the issuer, or the holder of an
                // ancestor of the target, decided by key from the signed
                // token before anything is dispatched.
                let revoker = if revoke.by_authority {
                    Some(authority_hex.clone())
                } else {
                    world
                        .agents
                        .get(agent)
                        .map(|plan| public_key_hex(&plan.key))
                };
                let permitted = match (ledger.get(&revoke.target), revoker) {
                    (Some(entry), Some(revoker)) => {
                        check_revocation_authority(&entry.token, &revoker).map(|_| ())
                    }
                    (None, _) => Err(format!(
                        "revocation refused: capability {} does not exist yet",
                        revoke.target
                    )),
                    (_, None) => Err(format!("revocation refused: agent {agent} is not placed")),
                };
                let outcome = match permitted {
                    Ok(()) => dispatcher
                        .revoke(&node, &revoke.target, now_ms)
                        .await
                        .map(|()| None),
                    Err(reason) => Ok(Some(reason)),
                };
                match outcome {
                    Ok(refusal) => {
                        if refusal.is_none() {
                            admission = extend_chain(&admission, &json!({"revoke": revoke.target}));
                        }
                        judge_step(
                            &mut record,
                            revoke.expect,
                            refusal,
                            keep_going,
                            &mut mismatches,
                            &mut stopped,
                        );
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Action::Message(message) => {
                record.action = "message".to_string();
                record.target = Some(message.to.clone());
                record.inputs.invocation =
                    fingerprint(&json!({"agent": agent, "message": message}));
                // What travels: literal text, or the released output of an
                // earlier call step of the sender with the label the kernel
                // recorded for it (a withheld output travels as nothing).
                let (output_label, content_sha256) = match &message.from_step {
                    Some(source) => outputs
                        .get(source)
                        .cloned()
                        .unwrap_or_else(|| (None, fingerprint(&Value::Null))),
                    None => (None, fingerprint(&json!(message.content))),
                };
                record.detail = Some(content_sha256);
                let outcome = dispatcher
                    .message(
                        &node,
                        MessageCommand {
                            agent: agent.clone(),
                            to: message.to.clone(),
                            output_label,
                            now_ms,
                        },
                    )
                    .await;
                match outcome {
                    Ok(MessageOutcome { labels }) => {
                        let entry = json!({"message": step.id, "from": agent, "to": message.to, "labels": labels});
                        admission = extend_chain(&admission, &entry);
                        let receiver = sessions
                            .entry(message.to.clone())
                            .or_insert_with(|| empty.clone());
                        *receiver = extend_chain(receiver, &entry);
                        record.labels = Some(labels);
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            Action::Advance(advance) => {
                record.action = "advance".to_string();
                record.detail = Some(advance.advance_ms.to_string());
                record.inputs.invocation =
                    fingerprint(&json!({"agent": agent, "advance_ms": advance.advance_ms}));
                Ok(())
            }
        };
        if let Err(e) = result {
            stopped = Some(StopRecord {
                step_id: step.id.clone(),
                cause: "infrastructure".to_string(),
                message: e.to_string(),
            });
            failure = Some(e);
            steps.push(record);
            break;
        }
        steps.push(record);
        if stopped.is_some() {
            break;
        }
    }

    let status = if failure.is_some() {
        RunStatus::InfrastructureFailure
    } else if stopped.is_some() {
        RunStatus::Stopped
    } else if mismatches.is_empty() {
        RunStatus::Passed
    } else {
        RunStatus::Failed
    };
    let receipt_lines = receipts
        .iter()
        .map(|r| to_canonical_string(r).map_err(|e| NodeError::Kernel(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let manifest = BundleManifest {
        schema_version: BUNDLE_SCHEMA.to_string(),
        determinism: scenario.determinism_witness(),
        scenario_title: scenario.title().to_string(),
        scenario_sha256: sha256_hex(&inputs.scenario_bytes),
        status: match status {
            RunStatus::Passed | RunStatus::Failed => "completed",
            RunStatus::Stopped => "stopped",
            RunStatus::InfrastructureFailure => "failed",
        }
        .to_string(),
        stopped,
        mismatches,
        receipt_root: merkle_root(&receipts),
        receipt_count: receipts.len() as u64,
        arena_keys: world.public_keys(),
        policies: policy_hashes,
        steps,
    };
    Ok(RunResult {
        bundle: Bundle {
            manifest,
            receipts: receipt_lines,
            policies,
            inputs: inputs.files.clone(),
        },
        status,
        failure,
    })
}

/// Runs a scenario in the embedded topology (every node in this process).
pub async fn run_embedded(
    scenario: &Scenario,
    inputs: &RunInputs,
    keep_going: bool,
) -> Result<RunResult, NodeError> {
    let world = World::resolve(scenario, &inputs.fixtures)?;
    let span = tracing::info_span!(
        "run",
        scenario_id = scenario.id(),
        rng_seed = scenario.file().rng_seed,
        topology = "embedded"
    );
    tracing::info!(parent: &span, "starting embedded run");
    let topology = EmbeddedTopology::start(&world).await?;
    run_schedule(scenario, &world, inputs, &topology, keep_going)
        .instrument(span)
        .await
}
