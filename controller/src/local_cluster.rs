//! `--topology local`: the controller starts trust-control and one node
//! process per logical node on loopback, runs the scenario across them, and
//! stops them.
//!
//! Every process is the `chio` binary itself (`chio trust serve`, `chio node
//! serve`), bound to port 0 and announcing its address on its first line of
//! standard output. Tokens are generated fresh for the cluster and written
//! to owner-only files in a temporary folder that also holds trust-control's
//! SQLite database; the folder goes when the cluster does. Children inherit
//! standard error, so their logs appear with the controller's. Dropping a
//! [`LocalCluster`] kills any process still running.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use chio_node::{ClusterToken, NodeError};
use chio_trust::BearerToken;
use rand_core::{OsRng, RngCore};

use crate::topology::{Topology, START_TIMEOUT};

/// A cluster of processes this controller started.
#[derive(Debug)]
pub struct LocalCluster {
    topology: Topology,
    children: Vec<(String, Child)>,
    /// Holds the token files and the database while the cluster runs.
    _dir: tempfile::TempDir,
}

fn fresh_secret() -> String {
    let mut bytes = [0u8; 24];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn write_secret(path: &Path, secret: &str) -> Result<(), NodeError> {
    let failed = |e: std::io::Error| NodeError::Config {
        problem: format!("cannot write token file {}: {e}", path.display()),
        fix: "make the temporary folder writable",
    };
    std::fs::write(path, secret).map_err(failed)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(failed)?;
    }
    Ok(())
}

/// Starts `command` and waits for its `listening on ADDR` line.
fn start(what: &str, mut command: Command) -> Result<(Child, String), NodeError> {
    tracing::info!(process = what, command = ?command, "starting");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| NodeError::Remote {
            target: what.to_string(),
            cause: format!("cannot start: {e}"),
        })?;
    let stdout = child.stdout.take().ok_or_else(|| NodeError::Remote {
        target: what.to_string(),
        cause: "no standard output to read its address from".to_string(),
    })?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(format!("stdout-{what}"))
        .spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = tx.send(reader.read_line(&mut line).map(|_| line));
            // Keep draining so the child never blocks on a full pipe.
            let mut sink = Vec::new();
            let _ = reader.read_to_end(&mut sink);
        })
        .map_err(|e| NodeError::Remote {
            target: what.to_string(),
            cause: format!("cannot watch its output: {e}"),
        })?;
    let line = match rx.recv_timeout(START_TIMEOUT) {
        Ok(Ok(line)) => line,
        Ok(Err(e)) => {
            let _ = child.kill();
            return Err(NodeError::Remote {
                target: what.to_string(),
                cause: format!("its output cannot be read: {e}"),
            });
        }
        Err(_) => {
            let _ = child.kill();
            return Err(NodeError::Remote {
                target: what.to_string(),
                cause: format!(
                    "did not announce its address within {} s",
                    START_TIMEOUT.as_secs()
                ),
            });
        }
    };
    match line.trim().strip_prefix("listening on ") {
        Some(addr) => Ok((child, addr.to_string())),
        None => {
            let _ = child.kill();
            let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
            Err(NodeError::Remote {
                target: what.to_string(),
                cause: format!("exited ({status}) before listening; its standard error says why"),
            })
        }
    }
}

impl LocalCluster {
    /// Starts trust-control and one node per name with the `chio` binary at
    /// `chio`.
    pub fn start(chio: &Path, nodes: &[String]) -> Result<LocalCluster, NodeError> {
        let dir = tempfile::Builder::new()
            .prefix("chio-local-cluster-")
            .tempdir()
            .map_err(|e| NodeError::Config {
                problem: format!("cannot create a folder for the local cluster: {e}"),
                fix: "make TMPDIR (or /tmp) writable",
            })?;
        let trust_secret = fresh_secret();
        let cluster_secret = fresh_secret();
        let trust_token_file = dir.path().join("trust.token");
        let cluster_token_file = dir.path().join("cluster.token");
        write_secret(&trust_token_file, &trust_secret)?;
        write_secret(&cluster_token_file, &cluster_secret)?;
        let mut cluster = LocalCluster {
            topology: Topology {
                nodes: BTreeMap::new(),
                cluster_token: ClusterToken::new(cluster_secret)?,
                trust_url: String::new(),
                trust_token: BearerToken::new(trust_secret).map_err(|e| NodeError::Config {
                    problem: e.to_string(),
                    fix: "report this: a generated token was refused",
                })?,
            },
            children: Vec::new(),
            _dir: dir,
        };
        let mut trust = Command::new(chio);
        trust
            .args(["trust", "serve", "--listen", "127.0.0.1:0", "--print-addr"])
            .arg("--db")
            .arg(cluster._dir.path().join("trust.db"))
            .arg("--token-file")
            .arg(&trust_token_file)
            .env_remove("CHIO_TRUST_TOKEN");
        let (child, addr) = start("trust-control", trust)?;
        cluster.children.push(("trust-control".to_string(), child));
        cluster.topology.trust_url = format!("http://{addr}");
        for name in nodes {
            let mut node = Command::new(chio);
            node.args(["node", "serve", "--name", name, "--listen", "127.0.0.1:0"])
                .arg("--print-addr")
                .arg("--cluster-token-file")
                .arg(&cluster_token_file)
                .arg("--control-url")
                .arg(&cluster.topology.trust_url)
                .arg("--control-token-file")
                .arg(&trust_token_file);
            let (child, addr) = start(&format!("node {name}"), node)?;
            cluster.children.push((format!("node {name}"), child));
            cluster
                .topology
                .nodes
                .insert(name.clone(), format!("http://{addr}"));
        }
        Ok(cluster)
    }

    /// The topology of the started processes.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The folder holding the cluster's token files and database.
    pub fn dir(&self) -> PathBuf {
        self._dir.path().to_path_buf()
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        // Nodes were asked to shut down; whatever still runs is stopped.
        for (name, child) in self.children.iter_mut().rev() {
            if let Ok(None) = child.try_wait() {
                if let Err(e) = child.kill() {
                    tracing::warn!(process = %name, error = %e, "cannot stop");
                }
            }
            let _ = child.wait();
        }
    }
}
