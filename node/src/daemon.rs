//! Running a node as a process (`chio node serve`): checking the store
//! choice, reading the tokens, connecting to trust-control or opening the
//! local SQLite state, binding the listener, announcing the bound address
//! and serving until shutdown.
//!
//! A node keeps shared authority state in exactly one place: a trust-control
//! service (`--control-url` with `--control-token-file`) or SQLite files of
//! its own (`--state-dir`). Both at once, or neither, is refused before
//! anything starts. Argument parsing and signals belong to the binary.

use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chio_trust::{BearerToken, SqliteTrustStore, TrustClient, TrustClientConfig};
use tokio::net::TcpListener;

use crate::cluster::ClusterToken;
use crate::error::NodeError;
use crate::host::{HostConfig, NodeHost, TrustBackend};
use crate::service::serve;
use crate::trust_stores::StoreDeadlines;

/// The file name of the node's local trust state under `--state-dir`.
pub const LOCAL_STATE_FILE: &str = "trust.db";

/// What `chio node serve` was asked to do.
#[derive(Debug, Clone)]
pub struct NodeServeOptions {
    /// The logical node name this process plays.
    pub name: String,
    /// Where to listen; port 0 picks a free port.
    pub listen: SocketAddr,
    /// The file holding the cluster token.
    pub cluster_token_file: PathBuf,
    /// The trust-control URL, for shared authority state.
    pub control_url: Option<String>,
    /// The file holding trust-control's bearer token.
    pub control_token_file: Option<PathBuf>,
    /// A folder for local authority state instead of trust-control.
    pub state_dir: Option<PathBuf>,
    /// Deadline of a receipt append, in milliseconds.
    pub receipt_deadline_ms: u64,
    /// Deadline of other trust-control calls, in milliseconds.
    pub store_deadline_ms: u64,
    /// Deadline of a call forwarded to another node's kernel, in
    /// milliseconds; a miss denies the call naming the unreachable node.
    pub link_deadline_ms: u64,
    /// Print `listening on ADDR` on stdout once bound.
    pub print_addr: bool,
}

/// Where authority state will live, once the flags are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// A trust-control service.
    Control {
        /// Its URL.
        url: String,
        /// Its token file.
        token_file: PathBuf,
    },
    /// Local SQLite state.
    Local {
        /// The folder.
        dir: PathBuf,
    },
}

impl NodeServeOptions {
    /// Checks the store flags: exactly one of trust-control or local state.
    pub fn store_choice(&self) -> Result<StoreChoice, NodeError> {
        match (&self.control_url, &self.control_token_file, &self.state_dir) {
            (Some(_), _, Some(_)) | (None, Some(_), Some(_)) => Err(NodeError::Config {
                problem: "both trust-control (--control-url/--control-token-file) and local state (--state-dir) were given".to_string(),
                fix: "pass either --control-url URL --control-token-file FILE, or --state-dir DIR, not both",
            }),
            (Some(url), Some(token_file), None) => Ok(StoreChoice::Control {
                url: url.clone(),
                token_file: token_file.clone(),
            }),
            (Some(_), None, None) => Err(NodeError::Config {
                problem: "--control-url was given without --control-token-file".to_string(),
                fix: "pass the file holding trust-control's bearer token with --control-token-file",
            }),
            (None, Some(_), None) => Err(NodeError::Config {
                problem: "--control-token-file was given without --control-url".to_string(),
                fix: "pass trust-control's address with --control-url http://HOST:PORT",
            }),
            (None, None, Some(dir)) => Ok(StoreChoice::Local { dir: dir.clone() }),
            (None, None, None) => Err(NodeError::Config {
                problem: "no authority state was given".to_string(),
                fix: "pass --control-url URL --control-token-file FILE, or --state-dir DIR",
            }),
        }
    }
}

/// Asks trust-control one authenticated question before the node listens,
/// so a token it refuses stops the node at its start rather than at its
/// first run. A service not answering yet is no refusal: a node may start
/// before trust-control does (the compose file starts them together), and
/// its calls fail closed until it answers.
async fn check_control_token(client: &TrustClient) -> Result<(), NodeError> {
    match client.is_revoked("").await {
        Err(chio_trust::TrustError::Unauthenticated) => Err(NodeError::Config {
            problem: "trust-control refused the bearer token in --control-token-file".to_string(),
            fix: "use the token trust-control was started with",
        }),
        Err(error) => {
            tracing::warn!(%error, "trust-control did not answer the node's start check");
            Ok(())
        }
        Ok(_) => Ok(()),
    }
}

/// Runs the node until `shutdown` completes or the controller stops it.
pub async fn run(
    options: NodeServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), NodeError> {
    let choice = options.store_choice()?;
    let cluster_token = ClusterToken::from_file(&options.cluster_token_file)?;
    let deadlines = StoreDeadlines {
        call: Duration::from_millis(options.store_deadline_ms),
        receipt: Duration::from_millis(options.receipt_deadline_ms),
    };
    let link_deadline = Duration::from_millis(options.link_deadline_ms);
    if deadlines.call.is_zero() || deadlines.receipt.is_zero() || link_deadline.is_zero() {
        return Err(NodeError::Config {
            problem: "a deadline of 0 ms was given".to_string(),
            fix: "pass deadlines of at least 1 ms",
        });
    }
    let backend = match choice {
        StoreChoice::Control { url, token_file } => {
            let contents =
                chio_trust::read_token_file(&token_file).map_err(|e| NodeError::Config {
                    problem: e.to_string(),
                    fix: "pass a readable file that holds trust-control's token",
                })?;
            let token =
                BearerToken::from_file_contents(&contents).map_err(|e| NodeError::Config {
                    problem: e.to_string(),
                    fix: "use the token trust-control was started with",
                })?;
            let config = TrustClientConfig {
                call_deadline: deadlines.call,
                append_deadline: deadlines.receipt,
                ..TrustClientConfig::default()
            };
            let client =
                TrustClient::connect_lazy(&url, &token, config).map_err(|e| NodeError::Config {
                    problem: e.to_string(),
                    fix: "pass trust-control's address as http://HOST:PORT",
                })?;
            check_control_token(&client).await?;
            TrustBackend::Remote(Arc::new(client))
        }
        StoreChoice::Local { dir } => {
            std::fs::create_dir_all(&dir).map_err(|e| NodeError::Config {
                problem: format!("cannot create state folder {}: {e}", dir.display()),
                fix: "pass a writable --state-dir",
            })?;
            let store =
                SqliteTrustStore::open(dir.join(LOCAL_STATE_FILE)).map_err(NodeError::Authority)?;
            TrustBackend::Local(Arc::new(store))
        }
    };
    let listener = TcpListener::bind(options.listen)
        .await
        .map_err(|e| NodeError::Config {
            problem: format!("cannot listen on {}: {e}", options.listen),
            fix: "pass a free address, or port 0 to pick one",
        })?;
    let bound = listener.local_addr().map_err(|e| NodeError::Config {
        problem: format!("cannot read the bound address: {e}"),
        fix: "retry; the socket closed while starting",
    })?;
    tracing::info!(name = %options.name, addr = %bound, "node listening");
    if options.print_addr {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {bound}")
            .and_then(|()| stdout.flush())
            .map_err(|e| NodeError::Config {
                problem: format!("cannot print the bound address: {e}"),
                fix: "keep stdout open while the node starts",
            })?;
    }
    let host = NodeHost::spawn(HostConfig {
        name: options.name.clone(),
        backend,
        cluster_token: cluster_token.clone(),
        deadlines,
        link_deadline,
    });
    serve(host, cluster_token, listener, shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> NodeServeOptions {
        NodeServeOptions {
            name: "node-a".into(),
            listen: "127.0.0.1:0".parse().unwrap(),
            cluster_token_file: "cluster.token".into(),
            control_url: None,
            control_token_file: None,
            state_dir: None,
            receipt_deadline_ms: 5_000,
            store_deadline_ms: 2_000,
            link_deadline_ms: crate::grpc_link::DEFAULT_LINK_DEADLINE_MS,
            print_addr: false,
        }
    }

    // Proves both store choices at once, and neither, are refused with a message naming the flags.
    #[test]
    fn store_choice_is_exclusive() {
        let mut both = options();
        both.control_url = Some("http://127.0.0.1:1".into());
        both.control_token_file = Some("t".into());
        both.state_dir = Some("state".into());
        let error = both.store_choice().unwrap_err();
        assert!(error.to_string().contains("--state-dir"), "{error}");
        assert!(options().store_choice().is_err());
        let mut local = options();
        local.state_dir = Some("state".into());
        assert_eq!(
            local.store_choice().unwrap(),
            StoreChoice::Local {
                dir: "state".into()
            }
        );
    }

    // Proves a zero store, receipt or link deadline is refused before the node listens.
    #[test]
    fn a_zero_deadline_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("cluster.token");
        std::fs::write(&token, "a-cluster-token-of-thirty-two-bytes!").unwrap();
        let zeroed: [fn(&mut NodeServeOptions); 3] = [
            |o| o.store_deadline_ms = 0,
            |o| o.receipt_deadline_ms = 0,
            |o| o.link_deadline_ms = 0,
        ];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for zero in zeroed {
            let mut options = options();
            options.cluster_token_file = token.clone();
            options.state_dir = Some(dir.path().join("state"));
            zero(&mut options);
            let error = runtime
                .block_on(run(options, std::future::pending()))
                .unwrap_err();
            assert!(
                error.to_string().contains("a deadline of 0 ms was given"),
                "{error}"
            );
        }
    }
}
