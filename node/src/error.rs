//! The node crate's error type.
//!
//! These are infrastructure failures (a gone actor, an unroutable call, a
//! fixture that cannot be read), never verdicts: a kernel's deny is a
//! `CallOutcome`, not an error. The controller maps them to the
//! infrastructure-failure exit code.

/// What can go wrong while hosting or reaching actors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeError {
    /// The scenario's world cannot be resolved.
    #[error("scenario world cannot be resolved: {0}")]
    Scenario(String),
    /// The scenario's bytes, validated on the node against the fixture
    /// files sent with them, are refused.
    #[error("scenario world cannot be resolved: {0}")]
    Refused(#[from] chio_arena::ArenaError),
    /// A fixture file or folder cannot be read.
    #[error("fixture {path} cannot be read: {cause}")]
    Fixture {
        /// The file or folder.
        path: String,
        /// The I/O error.
        cause: String,
    },
    /// The kernel library refused something (a signature, a configuration).
    #[error("kernel error: {0}")]
    Kernel(String),
    /// An actor stopped before answering.
    #[error("{0} stopped before answering; the node is shutting down or crashed")]
    ActorGone(String),
    /// No kernel, agent or server by that name is reachable from this node.
    #[error("no route to {0}; check the scenario's placement and the topology")]
    Unroutable(String),
    /// An agent was asked to use a capability it does not hold.
    #[error("agent {agent} does not hold capability {capability}; delegate it to the agent first or present it as captured")]
    NotHeld {
        /// The agent.
        agent: String,
        /// The capability id.
        capability: String,
    },
    /// The authority state (trust-control) refused or did not answer.
    #[error("trust-control store failed: {0}")]
    Authority(String),
    /// A node's configuration (flags, token, store choice) is unusable.
    #[error("node configuration refused: {problem}; {fix}")]
    Config {
        /// What is wrong (never a secret value).
        problem: String,
        /// How to fix it.
        fix: &'static str,
    },
    /// A remote node or service did not answer.
    #[error("remote {target} failed: {cause}")]
    Remote {
        /// Which node or service.
        target: String,
        /// What the transport reported.
        cause: String,
    },
}

impl NodeError {
    /// Whether the scenario's world or its fixtures are at fault (the input),
    /// rather than a process, store or peer (infrastructure).
    pub fn is_world(&self) -> bool {
        matches!(
            self,
            NodeError::Scenario(_) | NodeError::Refused(_) | NodeError::Fixture { .. }
        )
    }
}
