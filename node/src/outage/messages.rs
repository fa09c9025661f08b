//! The messages of the refusals of a value taken from elsewhere (another
//! step's output, a hand-over's source, a sealed file) and of a revocation.

use super::NodeReason;

/// How a reason names the place a pointer reaches in a step's output.
pub(super) fn pointer_name(pointer: &str) -> String {
    if pointer.is_empty() {
        "the whole output".to_string()
    } else {
        format!("pointer {pointer}")
    }
}

/// How a reason names the argument at JSON pointer `at`.
pub(super) fn argument_name(at: &str) -> String {
    if at.is_empty() {
        "the arguments".to_string()
    } else {
        format!("argument {at}")
    }
}

/// [`argument_name`] with its verb.
fn argument_is(at: &str) -> String {
    if at.is_empty() {
        "the arguments are".to_string()
    } else {
        format!("argument {at} is")
    }
}

impl NodeReason {
    /// The refusals of a value taken from elsewhere: another step's output,
    /// a hand-over's source, or a sealed file.
    pub(super) fn fmt_value(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeReason::ReferenceUnresolved {
                argument,
                step,
                pointer,
                why,
            } => {
                let pointer = pointer_name(pointer);
                write!(
                    f,
                    "call refused: {} takes its value from step {step} ({pointer}), but {why}",
                    argument_name(argument)
                )
            }
            NodeReason::HandOverUnresolved {
                at,
                step,
                pointer,
                why,
            } => {
                let pointer = pointer_name(pointer);
                let place = if at.is_empty() {
                    "the value".to_string()
                } else {
                    format!("the value at {at}")
                };
                write!(
                    f,
                    "hand-over refused: {place} takes its value from step {step} ({pointer}), but {why}"
                )
            }
            NodeReason::ReferenceMalformed { argument, problem } => write!(
                f,
                "call refused: {} not a reference the value grammar reads: {problem}",
                argument_is(argument)
            ),
            NodeReason::SealedUnresolved {
                argument,
                path,
                why,
            } => write!(
                f,
                "call refused: {} takes its value from sealed file {path}, but {why}",
                argument_name(argument)
            ),
            _ => self.fmt_revocation(f),
        }
    }

    fn fmt_revocation(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeReason::RevokerNotAuthorized { capability } => write!(
                f,
                "revocation refused: the revoker holds no ancestor of capability {capability} and is not its issuer; only the issuing authority or a holder of an ancestor link may revoke it"
            ),
            NodeReason::RevocationTargetUnknown { capability } => write!(
                f,
                "revocation refused: capability {capability} does not exist yet"
            ),
            NodeReason::RevokerNotPlaced { agent } => {
                write!(f, "revocation refused: agent {agent} is not placed")
            }
            NodeReason::RevokerDown(down) => write!(f, "revocation refused: {down}"),
            NodeReason::RevocationUnrecorded(outage) => write!(
                f,
                "revocation refused: the revocation cannot be recorded: {}",
                outage.trust_cause()
            ),
            _ => self.fmt_in_flight(f),
        }
    }
}
