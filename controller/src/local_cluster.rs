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
//!
//! For a scenario with fault steps the cluster is also the fault injector
//! (`local_faults`): it kills a node's process and starts it again on the
//! same address, pauses and resumes trust-control, and, when the scenario
//! cuts or slows links, puts a [`LinkProxy`] in front of every link (each
//! node's peers and its trust-control URL) that it can switch.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use chio_arena::scenario::TRUST_CONTROL;
use chio_node::{ClusterToken, NodeError};
use chio_trust::BearerToken;
use rand_core::{OsRng, RngCore};

use crate::link_proxy::LinkProxy;
use crate::topology::{Topology, START_TIMEOUT};

/// A cluster of processes this controller started.
#[derive(Debug)]
pub struct LocalCluster {
    topology: Topology,
    children: Vec<(String, Child)>,
    /// The binary every process runs.
    chio: PathBuf,
    /// The trust-control URL each node was given (a proxy's, when links
    /// are proxied).
    control_urls: BTreeMap<String, String>,
    /// The proxies in front of links, by (near end, far end); the far end
    /// of a node's trust-control link is `trust-control`.
    proxies: BTreeMap<(String, String), LinkProxy>,
    /// The store deadlines every node is started with, when not the
    /// defaults.
    deadlines: Option<NodeStoreDeadlines>,
    /// Holds the token files and the database while the cluster runs.
    _dir: tempfile::TempDir,
}

/// The trust-control deadlines a node process is started with
/// (`--store-deadline-ms`, `--receipt-deadline-ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeStoreDeadlines {
    /// Deadline of every store call but a receipt append, in milliseconds.
    pub store_ms: u64,
    /// Deadline of a receipt append, in milliseconds.
    pub receipt_ms: u64,
}

/// The file names of the cluster's tokens in its folder.
const TRUST_TOKEN_FILE: &str = "trust.token";
const CLUSTER_TOKEN_FILE: &str = "cluster.token";

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

/// The running `chio` binary, which a local cluster's processes run; the
/// error says what could not be found, in the words every caller reports.
pub fn running_chio() -> Result<PathBuf, String> {
    std::env::current_exe().map_err(|e| format!("cannot find the chio binary to start nodes: {e}"))
}

impl LocalCluster {
    /// Starts trust-control and one node per name with the `chio` binary at
    /// `chio`; with `proxied_links`, every link runs through a [`LinkProxy`];
    /// with `deadlines`, every node's store calls are bounded by them
    /// instead of the defaults.
    pub fn start(
        chio: &Path,
        nodes: &[String],
        proxied_links: bool,
        deadlines: Option<NodeStoreDeadlines>,
    ) -> Result<LocalCluster, NodeError> {
        let dir = tempfile::Builder::new()
            .prefix("chio-local-cluster-")
            .tempdir()
            .map_err(|e| NodeError::Config {
                problem: format!("cannot create a folder for the local cluster: {e}"),
                fix: "make TMPDIR (or /tmp) writable",
            })?;
        // The folder holds the tokens and trust-control's database: the
        // user's own, before any file is written into it.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).map_err(
                |e| NodeError::Config {
                    problem: format!("cannot make the local cluster's folder private: {e}"),
                    fix: "make TMPDIR (or /tmp) a folder whose permissions you may set",
                },
            )?;
        }
        let trust_secret = fresh_secret();
        let cluster_secret = fresh_secret();
        write_secret(&dir.path().join(TRUST_TOKEN_FILE), &trust_secret)?;
        write_secret(&dir.path().join(CLUSTER_TOKEN_FILE), &cluster_secret)?;
        let mut cluster = LocalCluster {
            topology: Topology {
                nodes: BTreeMap::new(),
                peer_urls: BTreeMap::new(),
                cluster_token: ClusterToken::new(cluster_secret)?,
                trust_url: String::new(),
                trust_token: BearerToken::new(trust_secret).map_err(|e| NodeError::Config {
                    problem: e.to_string(),
                    fix: "report this: a generated token was refused",
                })?,
            },
            children: Vec::new(),
            chio: chio.to_path_buf(),
            control_urls: BTreeMap::new(),
            proxies: BTreeMap::new(),
            deadlines,
            _dir: dir,
        };
        let mut trust = Command::new(chio);
        trust
            .args(["trust", "serve", "--listen", "127.0.0.1:0", "--print-addr"])
            .arg("--db")
            .arg(cluster._dir.path().join("trust.db"))
            .arg("--token-file")
            .arg(cluster._dir.path().join(TRUST_TOKEN_FILE))
            .env_remove("CHIO_TRUST_TOKEN");
        let (child, addr) = start("trust-control", trust)?;
        cluster.children.push(("trust-control".to_string(), child));
        cluster.topology.trust_url = format!("http://{addr}");
        for name in nodes {
            let control = if proxied_links {
                let proxy = LinkProxy::bind(&addr)?;
                let url = proxy.url();
                cluster
                    .proxies
                    .insert((name.clone(), TRUST_CONTROL.to_string()), proxy);
                url
            } else {
                cluster.topology.trust_url.clone()
            };
            cluster.control_urls.insert(name.clone(), control);
            let (child, addr) = start(
                &format!("node {name}"),
                cluster.node_command(name, "127.0.0.1:0"),
            )?;
            cluster.children.push((format!("node {name}"), child));
            cluster
                .topology
                .nodes
                .insert(name.clone(), format!("http://{addr}"));
        }
        if proxied_links {
            cluster.proxy_peers()?;
        }
        Ok(cluster)
    }

    /// The command that starts node `name` listening on `listen`.
    fn node_command(&self, name: &str, listen: &str) -> Command {
        let mut node = Command::new(&self.chio);
        node.args(["node", "serve", "--name", name, "--listen", listen])
            .arg("--print-addr")
            .arg("--cluster-token-file")
            .arg(self._dir.path().join(CLUSTER_TOKEN_FILE))
            .arg("--control-url")
            .arg(self.control_urls.get(name).map_or("", String::as_str))
            .arg("--control-token-file")
            .arg(self._dir.path().join(TRUST_TOKEN_FILE));
        if let Some(deadlines) = self.deadlines {
            node.arg("--store-deadline-ms")
                .arg(deadlines.store_ms.to_string())
                .arg("--receipt-deadline-ms")
                .arg(deadlines.receipt_ms.to_string());
        }
        node
    }

    /// Puts a proxy in front of every link between two nodes and gives each
    /// node its peers' proxied addresses.
    fn proxy_peers(&mut self) -> Result<(), NodeError> {
        for from in self.topology.nodes.keys() {
            let mut peers = BTreeMap::new();
            for (to, url) in &self.topology.nodes {
                if from == to {
                    peers.insert(to.clone(), url.clone());
                    continue;
                }
                let proxy = LinkProxy::bind(url.trim_start_matches("http://"))?;
                peers.insert(to.clone(), proxy.url());
                self.proxies.insert((from.clone(), to.clone()), proxy);
            }
            self.topology.peer_urls.insert(from.clone(), peers);
        }
        Ok(())
    }

    /// Starts every link proxy's accept loop on the current runtime.
    pub fn serve_proxies(&self) -> Result<(), NodeError> {
        self.proxies.values().try_for_each(LinkProxy::serve)
    }

    /// The proxies of the link between `a` and `b`, both directions (a
    /// node's link to trust-control has one).
    pub fn link_proxies(&self, a: &str, b: &str) -> Vec<&LinkProxy> {
        [(a, b), (b, a)]
            .iter()
            .filter_map(|(x, y)| self.proxies.get(&(x.to_string(), y.to_string())))
            .collect()
    }

    /// The proxies of every node's link to trust-control, by node.
    pub fn control_proxies(&self) -> Vec<&LinkProxy> {
        self.proxies
            .iter()
            .filter(|((_, far), _)| far == TRUST_CONTROL)
            .map(|(_, proxy)| proxy)
            .collect()
    }

    /// Every link proxy of the cluster, in link order.
    pub fn proxies(&self) -> impl Iterator<Item = &LinkProxy> {
        self.proxies.values()
    }

    /// The nodes whose process has exited (killed by a crash fault, or
    /// died), in name order.
    pub fn exited_nodes(&mut self) -> Result<Vec<String>, NodeError> {
        let mut exited = Vec::new();
        for (label, child) in &mut self.children {
            let Some(name) = label.strip_prefix("node ") else {
                continue;
            };
            let status = child.try_wait().map_err(|e| NodeError::Remote {
                target: label.clone(),
                cause: format!("its status cannot be read: {e}"),
            })?;
            if status.is_some() {
                exited.push(name.to_string());
            }
        }
        exited.sort();
        Ok(exited)
    }

    /// Kills node `name`'s process and waits for it to exit.
    pub fn kill_node(&mut self, name: &str) -> Result<(), NodeError> {
        let label = format!("node {name}");
        let child = self
            .children
            .iter_mut()
            .find(|(n, _)| *n == label)
            .map(|(_, c)| c)
            .ok_or_else(|| NodeError::Unroutable(label.clone()))?;
        let gone = |e: std::io::Error| NodeError::Remote {
            target: label.clone(),
            cause: format!("cannot be killed: {e}"),
        };
        child.kill().map_err(gone)?;
        child.wait().map_err(gone)?;
        Ok(())
    }

    /// Starts node `name` again, on the address it had.
    pub fn restart_node(&mut self, name: &str) -> Result<(), NodeError> {
        let label = format!("node {name}");
        let listen = self
            .topology
            .nodes
            .get(name)
            .map(|url| url.trim_start_matches("http://").to_string())
            .ok_or_else(|| NodeError::Unroutable(label.clone()))?;
        let (child, _) = start(&label, self.node_command(name, &listen))?;
        match self.children.iter_mut().find(|(n, _)| *n == label) {
            Some(slot) => slot.1 = child,
            None => self.children.push((label, child)),
        }
        Ok(())
    }

    /// Sends `signal` (`STOP`, `CONT`) to trust-control.
    pub fn signal_trust_control(&self, signal: &str) -> Result<(), NodeError> {
        let pid = self
            .children
            .iter()
            .find(|(n, _)| n == "trust-control")
            .map(|(_, c)| c.id())
            .ok_or_else(|| NodeError::Unroutable("trust-control".to_string()))?;
        let sent = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status();
        match sent {
            Ok(status) if status.success() => Ok(()),
            other => Err(NodeError::Remote {
                target: "trust-control".to_string(),
                cause: format!("kill -{signal} {pid} failed: {other:?}"),
            }),
        }
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
        // A paused trust-control is resumed so it can stop like the rest.
        let _ = self.signal_trust_control("CONT");
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
