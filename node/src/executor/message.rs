//! Message steps: one agent tells another something, and what the sender
//! knows travels with it.
//!
//! The controller's half decides what travels: literal text, or the
//! released output of an earlier call step with the label the serving
//! kernel recorded for it (a withheld output travels as nothing). The
//! node's half joins the sender's labels and the forwarded output's label
//! into the receiver's principal and session.

use chio_arena::scenario::value::Unresolved;
use chio_arena::scenario::MessageAction;
use serde_json::{json, Value};

use super::{canonical_sha256, Dispatcher, ReleasedOutput, StepExecutor};
use crate::error::NodeError;
use crate::node::{MessageCommand, MessageOutcome};

/// A message ready to dispatch.
#[derive(Debug, Clone)]
pub struct PreparedMessage {
    /// The command for the sender's node.
    pub command: MessageCommand,
    /// [`canonical_sha256`] of what travels.
    pub content_sha256: String,
}

/// The controller's decisions for a message step.
pub(super) fn prepare(
    executor: &StepExecutor,
    message: &MessageAction,
    agent: &str,
    now_ms: u64,
) -> Result<PreparedMessage, NodeError> {
    let released = match &message.from_step {
        Some(source) => match executor.outputs.get(source) {
            Some(released) => released.clone(),
            None => ReleasedOutput {
                label: None,
                content_sha256: canonical_sha256("a withheld output", &Value::Null)?,
                value: Err(Unresolved::NotPerformed),
            },
        },
        None => ReleasedOutput {
            label: None,
            content_sha256: canonical_sha256("a message's content", &json!(message.content))?,
            value: Ok(json!(message.content)),
        },
    };
    Ok(PreparedMessage {
        command: MessageCommand {
            agent: agent.to_string(),
            to: message.to.clone(),
            output_label: released.label,
            now_ms,
        },
        content_sha256: released.content_sha256,
    })
}

/// Dispatches the message.
pub(super) async fn dispatch(
    dispatcher: &dyn Dispatcher,
    node: &str,
    prepared: &PreparedMessage,
) -> Result<MessageOutcome, NodeError> {
    dispatcher.message(node, prepared.command.clone()).await
}
