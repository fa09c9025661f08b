//! Cluster authentication: the shared bearer token every `NodeControl` and
//! `KernelLink` call carries, its constant-time check on the serving node,
//! and the header the calling side adds.
//!
//! One token per cluster: the controller and every node hold it, and a call
//! without it is refused before its body is decoded. The token never appears
//! in `Debug` output, logs or error messages. The check is trust-control's
//! own (`chio_trust::token::bearer_header_matches`: SHA-256 of the presented
//! value compared in constant time), so neither the content nor the length
//! of the expected token leaks through timing.
//! Validation rules match trust-control's bearer token (at least 16 visible
//! ASCII characters), so one generated secret fits both.

use chio_trust::BearerToken;

use crate::error::NodeError;

/// The validated cluster secret: the same rules as trust-control's bearer
/// token (at least 16 visible ASCII characters), by reusing its type.
#[derive(Clone)]
pub struct ClusterToken {
    token: BearerToken,
}

impl std::fmt::Debug for ClusterToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterToken(<redacted>)")
    }
}

impl ClusterToken {
    /// Validates a token: at least 16 visible ASCII characters.
    pub fn new(secret: impl Into<String>) -> Result<Self, NodeError> {
        let token = BearerToken::new(secret).map_err(|e| NodeError::Config {
            problem: match e {
                chio_trust::TrustError::WeakToken { problem, .. } => {
                    format!("the cluster token is unusable: {problem}")
                }
                _ => "the cluster token is empty".to_string(),
            },
            fix: "use at least 16 printable ASCII characters, for example 32 random hex digits",
        })?;
        Ok(Self { token })
    }

    /// Reads a token from a file, ignoring surrounding whitespace.
    pub fn from_file(path: &std::path::Path) -> Result<Self, NodeError> {
        let contents = chio_trust::read_token_file(path).map_err(|e| NodeError::Config {
            problem: e.to_string(),
            fix: "pass a readable file that holds the token",
        })?;
        Self::new(contents.trim())
    }

    /// The interceptor a serving node installs.
    pub fn check(&self) -> ClusterCheck {
        self.token.checker(CLUSTER_REFUSAL)
    }

    /// The interceptor a calling side installs.
    pub fn header(&self) -> ClusterHeader {
        self.token.header()
    }
}

/// What a node answers a call without the cluster token.
pub const CLUSTER_REFUSAL: &str =
    "chio node requires authorization: Bearer <cluster token>; the token was missing or wrong";

/// The serving side's interceptor: trust-control's bearer check with the
/// node's refusal message.
pub type ClusterCheck = chio_trust::token::BearerCheck;

/// The calling side's interceptor: adds the cluster bearer header.
pub type ClusterHeader = chio_trust::token::BearerHeader;

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "cluster-token-0123456789";

    // Proves only the exact bearer header is admitted, and weak tokens are refused without echo.
    #[test]
    fn check_admits_only_the_exact_token() {
        let check = ClusterToken::new(TOKEN).unwrap().check();
        assert!(check.admits(Some(format!("Bearer {TOKEN}").as_bytes())));
        assert!(!check.admits(None));
        assert!(!check.admits(Some(TOKEN.as_bytes())));
        assert!(!check.admits(Some(format!("Bearer {TOKEN}x").as_bytes())));
        assert!(!check.admits(Some(b"Bearer ")));
        let short = ClusterToken::new("open-sesame").unwrap_err();
        assert!(!short.to_string().contains("sesame"), "{short}");
        assert!(!format!("{:?}", ClusterToken::new(TOKEN).unwrap()).contains(TOKEN));
    }
}
