//! The node crate's error type.
//!
//! These are infrastructure failures (a gone actor, an unroutable call, a
//! fixture that cannot be read), never verdicts: a kernel's deny is a
//! `CallOutcome`, not an error. The controller maps them to the
//! infrastructure-failure exit code.

use chio_kernel::canonical::CanonicalError;
use chio_kernel::{KernelError, StoreError};
use chio_trust::TrustError;

use crate::outage::Outage;

/// What can go wrong while hosting or reaching actors. Where a typed error
/// caused it, the variant keeps that error as its source.
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
    Kernel(#[from] KernelError),
    /// One kernel refused to start with its configuration.
    #[error("kernel error: kernel {kernel}: {source}")]
    KernelStart {
        /// The kernel id.
        kernel: String,
        /// Why its configuration was refused.
        #[source]
        source: KernelError,
    },
    /// A value that crosses a protocol as canonical JSON has no canonical
    /// form.
    #[error("kernel error: {what} has no canonical JSON form: {source}")]
    Canonical {
        /// What was being encoded.
        what: &'static str,
        /// Why it has no canonical form.
        #[source]
        source: CanonicalError,
    },
    /// A message's value, or the output it forwards, is built from a
    /// hand-over record that holds nothing: its labels are unknown, so the
    /// sender's node refuses the message (`message-unrecorded`).
    #[error("hand-over record {} holds nothing; nothing was carried", .0.record)]
    MessageUnrecorded(chio_kernel::label::Unrecorded),
    /// A delegation's label record cannot be formed from its link.
    #[error("kernel error: {0}")]
    LabelRecord(#[source] StoreError),
    /// A node invariant broke: a defect in chio, never a property of the
    /// input.
    #[error("internal error: {0}; this is a defect in chio, report it")]
    Internal(&'static str),
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
    Authority(#[from] TrustError),
    /// The authority state refused or did not answer one named operation.
    #[error("trust-control store failed: {operation}: {source}")]
    AuthorityOperation {
        /// The operation, such as `label store read`.
        operation: &'static str,
        /// What trust-control (or its client) reported.
        #[source]
        source: TrustError,
    },
    /// The in-process authority state (the embedded topology's and the
    /// direct dispatcher's stores) refused or failed.
    #[error("trust-control store failed: {0}")]
    AuthorityStore(#[from] StoreError),
    /// The authority state gave no usable answer: a deadline passed, a batch
    /// ended early, or a stored label is not a known level.
    #[error("trust-control store failed: {0}")]
    AuthorityAnswer(String),
    /// A node of a topology does not read the authority state the topology
    /// names: the run's witness record is not in its store.
    #[error("node {node} does not share the authority state of the topology's trust-control at {trust_url}: it did not find the run's witness record in its own store (a node started with --state-dir keeps private state, so a revocation or a delegation's labels recorded on one node would not be seen on another); start it with --control-url {trust_url} and that trust-control's token")]
    AuthorityNotShared {
        /// The logical node.
        node: String,
        /// The trust-control URL the topology names.
        trust_url: String,
    },
    /// A command names another run than the one whose world the node
    /// hosts: another controller loaded its world since.
    #[error("node {node} hosts the world of run {loaded}, but the command belongs to run {asked}: another run's LoadWorld replaced this run's world; a cluster serves one run at a time, so run one controller at a time on its nodes")]
    OtherRun {
        /// The logical node.
        node: String,
        /// The run whose world the node hosts.
        loaded: String,
        /// The run the command belongs to.
        asked: String,
    },
    /// A node's configuration (flags, token, store choice) is unusable.
    #[error("node configuration refused: {problem}; {fix}")]
    Config {
        /// What is wrong (never a secret value).
        problem: String,
        /// How to fix it.
        fix: &'static str,
    },
    /// A protocol message's field does not decode: not JSON of the expected
    /// shape, an unspecified enum, a missing message or a repeated key.
    #[error("{field} is malformed: {problem}; send the value the chio controller or node encodes")]
    Malformed {
        /// The field, as the protocol names it (`outcome.trace.journal.verdict`).
        field: String,
        /// What is wrong with it (never the field's value).
        problem: String,
    },
    /// The link to another node failed in transport (its detail is
    /// logged where it was met), so what the step needs on that node
    /// cannot be reached.
    #[error("node {node} is unreachable: {}", .outage.link_cause())]
    LinkDown {
        /// The node that could not be reached.
        node: String,
        /// How the link failed.
        outage: Outage,
    },
    /// Trust-control could not be reached for one named operation of the
    /// authority state (its detail is logged where it was met).
    #[error("trust-control store failed: {operation}: {}", .outage.trust_cause())]
    ControlDown {
        /// The operation, such as `label store read`.
        operation: &'static str,
        /// How the call failed.
        outage: Outage,
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
    /// The error of `what` having no canonical JSON form, for `map_err`.
    pub fn canonical(what: &'static str) -> impl FnOnce(CanonicalError) -> NodeError {
        move |source| NodeError::Canonical { what, source }
    }

    /// Whether the scenario's world or its fixtures are at fault (the input),
    /// rather than a process, store or peer (infrastructure).
    pub fn is_world(&self) -> bool {
        matches!(
            self,
            NodeError::Scenario(_) | NodeError::Refused(_) | NodeError::Fixture { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;
    use chio_kernel::StoreName;

    // A trust-control failure keeps its typed source and the message a user saw before.
    #[test]
    fn authority_failures_keep_their_source() {
        let error = NodeError::AuthorityOperation {
            operation: "revocation store",
            source: TrustError::StoreClosed,
        };
        assert_eq!(
            error.to_string(),
            format!(
                "trust-control store failed: revocation store: {}",
                TrustError::StoreClosed
            )
        );
        let source = error.source().expect("the trust error is the source");
        assert_eq!(
            source.downcast_ref::<TrustError>(),
            Some(&TrustError::StoreClosed)
        );
        let store = StoreError::unavailable(StoreName::Label, "poisoned");
        let error = NodeError::from(store.clone());
        assert_eq!(
            error.to_string(),
            format!("trust-control store failed: {store}")
        );
        assert_eq!(
            error.source().and_then(|s| s.downcast_ref::<StoreError>()),
            Some(&store)
        );
    }

    // A kernel refusal keeps its typed source, and a kernel that will not start is named.
    #[test]
    fn kernel_failures_keep_their_source() {
        let refused = KernelError::UnknownGuardMode {
            mode: "loud".to_string(),
        };
        let error = NodeError::KernelStart {
            kernel: "kernel-a".to_string(),
            source: refused.clone(),
        };
        assert_eq!(
            error.to_string(),
            format!("kernel error: kernel kernel-a: {refused}")
        );
        assert_eq!(
            error.source().and_then(|s| s.downcast_ref::<KernelError>()),
            Some(&refused)
        );
        let error = NodeError::from(refused.clone());
        assert_eq!(error.to_string(), format!("kernel error: {refused}"));
        assert!(error.source().is_some());
    }
}
