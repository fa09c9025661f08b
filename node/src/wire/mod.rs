//! How node values cross the node protocols (`chio.node.v1`): every
//! conversion between a protobuf message and its Rust type, the message
//! size limits both node services and their clients apply, and the mapping
//! between node errors and gRPC statuses.
//!
//! Commands and answers are typed messages ([`command`], [`outcome`]).
//! Signed kernel values (capability tokens, agent-signed tool-call
//! requests, signed receipts) cross as the RFC 8785 canonical JSON their
//! signer signed, encoded with `chio_kernel::canonical` and decoded with
//! serde (the kernel types deny unknown fields), so they arrive unchanged;
//! so do a call's arguments and a released output, which are arbitrary
//! JSON. Every decoding fails closed: a field that does not decode is a
//! [`NodeError::Malformed`] naming the field, which a server answers as
//! `INVALID_ARGUMENT` and a client reports as a [`NodeError::Remote`];
//! nothing here panics on input.

use chio_kernel::canonical::to_canonical_vec;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tonic::Status;

use crate::error::NodeError;

pub mod command;
pub mod outcome;
#[cfg(test)]
mod tests;

/// Largest `NodeControl` message: a world carries the scenario and every
/// fixture file.
pub const MAX_CONTROL_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Largest `KernelLink` message and call answer: one request or outcome.
pub const MAX_LINK_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// Most calls one `EvaluateTogether` carries: an adversary's largest burst.
pub const MAX_EVALUATED_TOGETHER: usize = 64;

/// Encodes a value as canonical JSON for a `bytes` field.
pub fn encode<T: Serialize>(what: &'static str, value: &T) -> Result<Vec<u8>, NodeError> {
    to_canonical_vec(value).map_err(NodeError::canonical(what))
}

/// Decodes the canonical JSON of a `bytes` field, naming `field` when it
/// is not JSON of `T`'s shape.
pub fn decode<T: DeserializeOwned>(field: &str, bytes: &[u8]) -> Result<T, NodeError> {
    serde_json::from_slice(bytes).map_err(|e| {
        malformed(
            field,
            format!("not canonical JSON of the expected shape ({e})"),
        )
    })
}

/// The error of a field that does not decode.
pub fn malformed(field: &str, problem: impl Into<String>) -> NodeError {
    NodeError::Malformed {
        field: field.to_string(),
        problem: problem.into(),
    }
}

/// A message field that must be present.
pub fn required<T>(field: &str, value: Option<T>) -> Result<T, NodeError> {
    value.ok_or_else(|| malformed(field, "missing"))
}

/// Decodes a request on a server, refusing it as `INVALID_ARGUMENT`.
pub fn decode_request<T>(decoded: Result<T, NodeError>) -> Result<T, Status> {
    decoded.map_err(|error| status_of(&error))
}

/// Decodes an answer on a client; a malformed answer is a failure of the
/// remote `target`.
pub fn decode_answer<T>(target: &str, decoded: Result<T, NodeError>) -> Result<T, NodeError> {
    decoded.map_err(|error| match error {
        NodeError::Malformed { field, problem } => NodeError::Remote {
            target: target.to_string(),
            cause: format!(
                "answered a malformed {field}: {problem}; run the same chio version everywhere"
            ),
        },
        other => other,
    })
}

/// The status a node answers for one of its errors.
pub fn status_of(error: &NodeError) -> Status {
    let message = error.to_string();
    match error {
        NodeError::Scenario(_)
        | NodeError::Refused(_)
        | NodeError::Fixture { .. }
        | NodeError::Config { .. }
        | NodeError::Malformed { .. } => Status::invalid_argument(message),
        NodeError::Unroutable(_) => Status::not_found(message),
        NodeError::NotHeld { .. }
        | NodeError::AuthorityNotShared { .. }
        | NodeError::OtherRun { .. }
        | NodeError::MessageUnrecorded(_) => Status::failed_precondition(message),
        NodeError::ActorGone(_)
        | NodeError::Authority(_)
        | NodeError::AuthorityOperation { .. }
        | NodeError::AuthorityStore(_)
        | NodeError::AuthorityAnswer(_)
        | NodeError::LinkDown { .. }
        | NodeError::ControlDown { .. }
        | NodeError::Remote { .. } => Status::unavailable(message),
        NodeError::Kernel(_)
        | NodeError::KernelStart { .. }
        | NodeError::Canonical { .. }
        | NodeError::LabelRecord(_)
        | NodeError::Internal(_) => Status::internal(message),
    }
}

/// The error a client reports for a status from `target`.
pub fn error_of(target: &str, status: &Status) -> NodeError {
    let cause = match std::error::Error::source(status) {
        Some(source) if status.message().is_empty() => source.to_string(),
        Some(source) => format!("{}: {source}", status.message()),
        None => status.message().to_string(),
    };
    NodeError::Remote {
        target: target.to_string(),
        cause: format!("{:?}: {cause}", status.code()),
    }
}
