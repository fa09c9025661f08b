//! The typed form of a scenario's steps: what each action does once the
//! validator has checked it, and the small closed vocabularies (server
//! kinds, expected verdicts, step expectations) the file spells as words.
//!
//! These types hold no rule of their own beyond parsing a word; the
//! validator (`super::validate`) decides which values are admissible and
//! builds them, and runners read them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The kind of a tool server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// A simulated filesystem seeded from fixtures.
    Workspace,
    /// A publish sink.
    Publish,
    /// A deterministic test runner.
    TestRunner,
    /// An HTTP sink.
    Http,
    /// A server whose tools the scenario declares and whose answers it
    /// records.
    Recorded,
    /// A live MCP server the scenario starts with its command: its tools
    /// are declared as a recorded server's are, and its answers are
    /// recorded by `chio arena record` and replayed from the recording.
    Mcp,
    /// The user's own bank: transfers leave the account, not the world.
    Bank,
}

impl ServerKind {
    /// Parses the kind as written in the scenario.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "workspace" => Some(Self::Workspace),
            "publish" => Some(Self::Publish),
            "test-runner" => Some(Self::TestRunner),
            "http" => Some(Self::Http),
            "recorded" => Some(Self::Recorded),
            "mcp" => Some(Self::Mcp),
            "bank" => Some(Self::Bank),
            _ => None,
        }
    }
}

/// The verdict a call step expects, in the scenario alphabet: the kernel's
/// projected verdict, so an expectation and an answer compare as values.
pub type ExpectedVerdict = chio_kernel::verdict::ProjectedVerdict;

/// A tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallAction {
    /// The server called.
    pub server: String,
    /// The tool called.
    pub tool: String,
    /// The arguments as a JSON object, ready to hash and send.
    pub arguments: serde_json::Value,
    /// What the kernel is expected to answer.
    pub expect_verdict: ExpectedVerdict,
    /// The capability presented: as written, or resolved to the agent's only
    /// capability for the server; `None` only in a scenario without a world.
    pub capability: Option<String>,
}

/// An attenuated hand-over of a capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DelegateAction {
    /// The parent capability the delegator holds.
    pub capability: String,
    /// The receiving agent.
    pub to: String,
    /// The id of the new capability.
    pub delegation: String,
    /// Attenuated tools; inherited when absent.
    pub tools: Option<Vec<String>>,
    /// Attenuated path prefix; inherited when absent.
    pub path_prefix: Option<String>,
    /// Validity in milliseconds after the delegation is evaluated; inherited when absent.
    pub expires_after_ms: Option<u64>,
    /// Attenuated invocation cap; inherited when absent.
    pub max_invocations: Option<u64>,
    /// Share of the parent's allowance; the whole parent share when absent.
    pub share_bps: Option<u64>,
    /// The monetary constraint the child carries; the parent's when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monetary: Option<chio_kernel::token::MonetaryLimit>,
    /// Whether the delegation is expected to be done or refused.
    #[serde(skip_serializing_if = "StepExpectation::is_done")]
    pub expect: StepExpectation,
}

/// What a delegate or revoke step expects of itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepExpectation {
    /// The step takes effect (the default).
    #[default]
    Done,
    /// The step is refused (an unauthorised revocation, a delegation of a
    /// capability the agent does not hold or that widens its parent).
    Refused,
}

impl StepExpectation {
    /// The word a bundle and a table print.
    pub fn as_str(self) -> &'static str {
        match self {
            StepExpectation::Done => "done",
            StepExpectation::Refused => "refused",
        }
    }

    /// Whether this is the default, so fingerprints of steps that do not
    /// declare an expectation keep their bytes.
    pub fn is_done(&self) -> bool {
        *self == StepExpectation::Done
    }

    /// Parses the expectation as written in the scenario.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "done" => Some(StepExpectation::Done),
            "refused" => Some(StepExpectation::Refused),
            _ => None,
        }
    }
}

impl fmt::Display for StepExpectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl DelegateAction {
    /// What the delegator narrows, as the kernel applies it, for a
    /// delegation evaluated at `now_ms` (Unix milliseconds of virtual time):
    /// `expires_after_ms` counts from that instant and the kernel's expiry
    /// is in whole seconds. Every runner (the run driver, the adversary
    /// evaluator) builds the child's attenuation here, so they agree.
    pub fn attenuation(&self, now_ms: u64) -> chio_kernel::token::Attenuation {
        chio_kernel::token::Attenuation {
            tools: self.tools.clone(),
            path_prefix: self.path_prefix.clone(),
            not_before_ms: None,
            expires_at_ms: self.expires_after_ms.map(|ms| now_ms.saturating_add(ms)),
            max_invocations: self.max_invocations,
            // Validation keeps share_bps within 1..=10,000.
            share_bps: self.share_bps.and_then(|b| u32::try_from(b).ok()),
            monetary: self.monetary.clone(),
        }
    }
}

/// A revocation of a capability or delegation link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RevokeAction {
    /// The grant or delegation revoked.
    pub target: String,
    /// Whether the issuing authority revokes (`by = "authority"`); otherwise
    /// the step's agent does, and must hold an ancestor of the target.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_authority: bool,
    /// Whether the revocation is expected to be done or refused.
    #[serde(skip_serializing_if = "StepExpectation::is_done")]
    pub expect: StepExpectation,
}

/// Content one agent sends another. The receiver's principal and session
/// take the join of the content's labels: what the sender's principal holds
/// when it sends, plus the label of a forwarded output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageAction {
    /// The receiving agent.
    pub to: String,
    /// Literal text, when the message says something of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The earlier call step of the sender whose output is forwarded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_step: Option<String>,
    /// A schema-checked value handed over, instead of content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handover: Option<HandOverAction>,
}

/// A value a message hands over under a schema (`docs/security.md`,
/// "Planners and quarantined readers").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandOverAction {
    /// The schema (the kernel's hand-over subset, `chio_kernel::handover`).
    pub schema: serde_json::Value,
    /// The value in the value grammar: references to the sender's earlier
    /// call outputs are resolved when the message is sent.
    pub value: serde_json::Value,
    /// Whether the hand-over is expected to be delivered or refused.
    #[serde(skip_serializing_if = "StepExpectation::is_done")]
    pub expect: StepExpectation,
}

/// A tool server changing one of its tools' definitions at the step's
/// instant, as a live server can between two `tools/list` calls. The
/// kernel serving the server checks every call decided at or after that
/// instant against the new definition, and a capability that pinned the
/// old one no longer covers the tool (`definition-changed`). The change is
/// the server's, so it outlives a restart of any node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RedefineAction {
    /// The server (a recorded server).
    pub server: String,
    /// The tool, one the server declares.
    pub tool: String,
    /// The new definition.
    pub contract: chio_kernel::contract::ToolContract,
    /// The new definition's digest, as bundles and tables print it.
    pub digest: String,
}

/// A move of the virtual clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdvanceAction {
    /// Milliseconds added for every later action.
    pub advance_ms: u64,
}

/// The kind of a step's action, as bundles and tables name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    /// A tool call.
    Call,
    /// A delegation.
    Delegate,
    /// A revocation.
    Revoke,
    /// A message between agents.
    Message,
    /// A clock advance.
    Advance,
    /// A fault inflicted on the run's infrastructure.
    Fault,
    /// A tool server changing a tool's definition.
    Redefine,
}

impl ActionKind {
    /// The lowercase name.
    pub fn as_str(&self) -> &'static str {
        match self {
            ActionKind::Call => "call",
            ActionKind::Delegate => "delegate",
            ActionKind::Revoke => "revoke",
            ActionKind::Message => "message",
            ActionKind::Advance => "advance",
            ActionKind::Fault => "fault",
            ActionKind::Redefine => "redefine",
        }
    }
}

impl fmt::Display for ActionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name a fault's `between` gives the trust-control service.
pub const TRUST_CONTROL: &str = "trust-control";

/// A link a fault cuts or slows: two nodes (in id order), or a node and
/// trust-control (`to` is then [`TRUST_CONTROL`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct FaultLink {
    /// A node.
    pub from: String,
    /// The other node, or [`TRUST_CONTROL`].
    pub to: String,
}

impl FaultLink {
    /// The link between two ends, normalised so that both spellings of a
    /// link are one value.
    pub fn new(a: &str, b: &str) -> Self {
        let (from, to) = if a == TRUST_CONTROL || (b != TRUST_CONTROL && b < a) {
            (b, a)
        } else {
            (a, b)
        };
        Self {
            from: from.to_string(),
            to: to.to_string(),
        }
    }

    /// Whether the link joins a node to trust-control.
    pub fn to_trust_control(&self) -> bool {
        self.to == TRUST_CONTROL
    }

    /// Whether `node` is one of the link's ends.
    pub fn touches(&self, node: &str) -> bool {
        self.from == node || self.to == node
    }

    /// The link as a reason prints it (`node-a <-> node-b`).
    pub fn describe(&self) -> String {
        format!("{} <-> {}", self.from, self.to)
    }
}

/// What a fault step does to the run's infrastructure. A fault has no
/// verdict of its own: the steps after it state what the kernels answer
/// while it lasts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "fault", rename_all = "lowercase")]
pub enum FaultAction {
    /// A node stops: its agents and kernels answer nothing.
    Crash {
        /// The node.
        node: String,
    },
    /// A crashed node comes back.
    Restart {
        /// The node.
        node: String,
        /// Whether its agents keep the capabilities handed to them; without
        /// state they hold only their grants.
        keep_state: bool,
    },
    /// A link refuses everything that crosses it.
    Partition {
        /// The link cut.
        link: FaultLink,
    },
    /// A partitioned or delayed link carries again, on time.
    Heal {
        /// The link healed.
        link: FaultLink,
    },
    /// Trust-control answers nothing until the first step whose instant
    /// reaches the stall's end.
    Stall {
        /// Virtual milliseconds from the fault step's instant.
        duration_ms: u64,
    },
    /// A call crossing a link between two nodes arrives late.
    Delay {
        /// The link slowed.
        link: FaultLink,
        /// Virtual milliseconds added to the serving kernel's instant.
        delay_ms: u64,
    },
}

impl FaultAction {
    /// The fault's kind, as written in the scenario.
    pub fn kind(&self) -> &'static str {
        match self {
            FaultAction::Crash { .. } => "crash",
            FaultAction::Restart { .. } => "restart",
            FaultAction::Partition { .. } => "partition",
            FaultAction::Heal { .. } => "heal",
            FaultAction::Stall { .. } => "stall",
            FaultAction::Delay { .. } => "delay",
        }
    }

    /// The fault in words, as a table and a record's detail print it.
    pub fn describe(&self) -> String {
        match self {
            FaultAction::Crash { node } => format!("crash {node}"),
            FaultAction::Restart { node, keep_state } => format!(
                "restart {node} {}",
                if *keep_state {
                    "with its state"
                } else {
                    "without its state"
                }
            ),
            FaultAction::Partition { link } => format!("partition {}", link.describe()),
            FaultAction::Heal { link } => format!("heal {}", link.describe()),
            FaultAction::Stall { duration_ms } => {
                format!("stall {TRUST_CONTROL} for {duration_ms} ms")
            }
            FaultAction::Delay { link, delay_ms } => {
                format!("delay {} by {delay_ms} ms", link.describe())
            }
        }
    }
}

/// A step's action, typed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum Action {
    /// A tool call with an expected verdict.
    Call(CallAction),
    /// A delegation.
    Delegate(DelegateAction),
    /// A revocation.
    Revoke(RevokeAction),
    /// A message from the step's agent to another agent.
    Message(MessageAction),
    /// A clock advance.
    Advance(AdvanceAction),
    /// A fault in the run's infrastructure.
    Fault(FaultAction),
    /// A server changing a tool's definition.
    Redefine(RedefineAction),
}

impl Action {
    /// The kind of this action.
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::Call(_) => ActionKind::Call,
            Action::Delegate(_) => ActionKind::Delegate,
            Action::Revoke(_) => ActionKind::Revoke,
            Action::Message(_) => ActionKind::Message,
            Action::Advance(_) => ActionKind::Advance,
            Action::Fault(_) => ActionKind::Fault,
            Action::Redefine(_) => ActionKind::Redefine,
        }
    }
}
