//! Running trust-control as a process: resolving the bearer token from its
//! sources, opening the SQLite store, binding the listener, announcing the
//! bound address and serving until shutdown.
//!
//! Argument parsing and signal handling belong to the binary; this module
//! takes an already parsed [`ServeOptions`] and a shutdown future.

use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use tokio::net::TcpListener;

use crate::service::serve;
use crate::store::sqlite::SqliteTrustStore;
use crate::token::BearerToken;
use crate::TrustError;

/// Environment variable that may carry the token instead of a token file.
pub const TOKEN_ENV: &str = "CHIO_TRUST_TOKEN";

/// What `chio trust serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The SQLite database file, created when absent.
    pub db: PathBuf,
    /// Where to listen; port 0 picks a free port.
    pub listen: SocketAddr,
    /// A file holding the bearer token (surrounding whitespace ignored).
    pub token_file: Option<PathBuf>,
    /// The token from [`TOKEN_ENV`], when set and non-empty.
    pub env_token: Option<String>,
    /// Print `listening on ADDR` on stdout once bound, for scripts and tests.
    pub print_addr: bool,
}

/// Picks the token from exactly one source and validates it.
pub fn resolve_token(
    token_file: Option<&Path>,
    env_token: Option<&str>,
) -> Result<BearerToken, TrustError> {
    match (token_file, env_token) {
        (Some(_), Some(_)) => Err(TrustError::AmbiguousToken),
        (None, None) => Err(TrustError::MissingToken),
        (None, Some(token)) => BearerToken::new(token),
        (Some(path), None) => BearerToken::from_file(path),
    }
}

/// A database file SQLite cannot open or migrate (truncated, not a
/// database, tables that contradict its version) is the operator's file to
/// fix, named by its path and SQLite's first line, never its statements.
fn unopenable(db: &std::path::Path, error: TrustError) -> TrustError {
    match error {
        TrustError::Storage { detail } => {
            let first = detail.lines().next().unwrap_or_default();
            TrustError::UnusableFile {
                what: format!("database file {}", db.display()),
                detail: first.trim_end().trim_end_matches(" in").to_string(),
                fix: "restore it from a backup, or pass --db a new path to start an empty store",
            }
        }
        other => other,
    }
}

/// Runs the service until `shutdown` completes. The token is checked before
/// anything else, so a misconfigured service never opens its database.
pub async fn run(
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), TrustError> {
    let token = resolve_token(options.token_file.as_deref(), options.env_token.as_deref())?;
    let store = SqliteTrustStore::open(&options.db).map_err(|e| unopenable(&options.db, e))?;
    let listener = TcpListener::bind(options.listen)
        .await
        .map_err(|error| TrustError::Io {
            action: format!("listen on {}", options.listen),
            detail: error.to_string(),
            fix: "pass a free address, or port 0 to pick one",
        })?;
    let bound = listener.local_addr().map_err(|error| TrustError::Io {
        action: "read the bound address".to_owned(),
        detail: error.to_string(),
        fix: "retry; the socket closed while starting",
    })?;
    tracing::info!(addr = %bound, db = %options.db.display(), "trust-control listening");
    if options.print_addr {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {bound}")
            .and_then(|()| stdout.flush())
            .map_err(|error| TrustError::Io {
                action: "print the bound address".to_owned(),
                detail: error.to_string(),
                fix: "keep stdout open while the service starts",
            })?;
    }
    serve(store, token, listener, shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the token must come from exactly one source and be usable.
    #[test]
    fn token_sources_are_exclusive_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "file-token-0123456789\n").unwrap();
        assert!(resolve_token(Some(&file), None).is_ok());
        assert!(resolve_token(None, Some("env-token-0123456789")).is_ok());
        assert_eq!(
            resolve_token(Some(&file), Some("env-token-0123456789")).unwrap_err(),
            TrustError::AmbiguousToken
        );
        assert_eq!(
            resolve_token(None, None).unwrap_err(),
            TrustError::MissingToken
        );
        let missing = resolve_token(Some(&dir.path().join("absent")), None).unwrap_err();
        assert!(
            matches!(missing, TrustError::UnusableFile { .. }),
            "{missing}"
        );
    }
}
