//! How kernel types cross the node protocols: RFC 8785 canonical JSON in
//! `bytes` fields, encoded with `chio_kernel::canonical` and decoded with
//! serde (the kernel types deny unknown fields), plus the message size
//! limits both node services and their clients apply.
//!
//! A field that does not decode is an `INVALID_ARGUMENT` status naming the
//! field on a server, and a [`NodeError::Remote`] on a client; nothing here
//! panics on input.

use chio_kernel::canonical::to_canonical_vec;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tonic::Status;

use crate::error::NodeError;

/// Largest `NodeControl` message: a world carries the scenario and every
/// fixture file.
pub const MAX_CONTROL_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Largest `KernelLink` message and call answer: one request or outcome.
pub const MAX_LINK_MESSAGE_BYTES: usize = 8 * 1024 * 1024;

/// Encodes a value as canonical JSON for a `bytes` field.
pub fn encode<T: Serialize>(what: &'static str, value: &T) -> Result<Vec<u8>, NodeError> {
    to_canonical_vec(value).map_err(NodeError::canonical(what))
}

/// Decodes a request field on a server, refusing it as `INVALID_ARGUMENT`.
pub fn decode_field<T: DeserializeOwned>(field: &str, bytes: &[u8]) -> Result<T, Status> {
    serde_json::from_slice(bytes).map_err(|e| {
        Status::invalid_argument(format!(
            "{field} is not canonical JSON of the expected shape ({e}); send the value the chio controller or node encodes"
        ))
    })
}

/// Decodes an answer field on a client.
pub fn decode_answer<T: DeserializeOwned>(
    target: &str,
    field: &str,
    bytes: &[u8],
) -> Result<T, NodeError> {
    serde_json::from_slice(bytes).map_err(|e| NodeError::Remote {
        target: target.to_string(),
        cause: format!("answered a malformed {field}: {e}; run the same chio version everywhere"),
    })
}

/// The status a node answers for one of its errors.
pub fn status_of(error: &NodeError) -> Status {
    let message = error.to_string();
    match error {
        NodeError::Scenario(_)
        | NodeError::Refused(_)
        | NodeError::Fixture { .. }
        | NodeError::Config { .. } => Status::invalid_argument(message),
        NodeError::Unroutable(_) => Status::not_found(message),
        NodeError::NotHeld { .. } => Status::failed_precondition(message),
        NodeError::ActorGone(_)
        | NodeError::Authority(_)
        | NodeError::AuthorityOperation { .. }
        | NodeError::AuthorityStore(_)
        | NodeError::AuthorityAnswer(_)
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

#[cfg(test)]
mod tests {
    use super::*;
    use chio_kernel::request::ToolCallRequest;

    // Proves a malformed or wrongly shaped field is refused as INVALID_ARGUMENT, never a panic.
    #[test]
    fn malformed_fields_are_invalid_arguments() {
        let status = decode_field::<ToolCallRequest>("request_json", b"{not json").unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        let status = decode_field::<ToolCallRequest>("request_json", b"{\"x\":1}").unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(status.message().starts_with("request_json"));
    }
}
