//! Trust-control and node processes for process tests: the real `chio`
//! binary on port 0 in a fresh temporary folder per cluster, generated
//! tokens, each process's standard error kept in a file so a failure can
//! print it, and loading a scenario's world into the nodes the way the
//! controller does. Dropping a process kills it.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chio_node::client::{witness_key, WorldOffer, DEFAULT_CONTROL_DEADLINE, WITNESS_LABEL};
use chio_node::{FixtureSet, NodeClient, World};
use chio_trust::model::IssuerKey;
use chio_trust::TrustStore;

use crate::binary::{chio, OUTPUT_ENV};

/// The cluster token every process of a test cluster shares.
pub const CLUSTER_TOKEN: &str = "cluster-token-for-tests-0123456789";
/// Trust-control's bearer token in a test cluster.
pub const TRUST_TOKEN: &str = "trust-token-for-tests-0123456789";

/// A serving process and what it printed.
pub struct Proc {
    /// The name the test gave it (a node name or `trust-control`).
    pub name: String,
    /// The running process.
    pub child: Child,
    /// The address it printed (`HOST:PORT`).
    pub addr: String,
    /// The command line, for failure messages.
    pub command: String,
    /// The file holding its standard error.
    pub stderr: PathBuf,
}

impl Proc {
    /// Its gRPC URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it wrote on standard error so far.
    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Kills it and waits for it to end.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `chio ARGS --print-addr` in `dir` and waits for its address.
pub fn serve(dir: &Path, name: &str, args: &[String]) -> Proc {
    let stderr = dir.join(format!("{name}.stderr"));
    let mut all: Vec<String> = args.to_vec();
    all.push("--print-addr".into());
    let command = format!("chio {}", all.join(" "));
    let mut process = Command::new(chio());
    process.args(&all).env_remove("CHIO_TRUST_TOKEN");
    for key in OUTPUT_ENV {
        process.env_remove(key);
    }
    let mut child = process
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("{command} does not start: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the address line");
    let Some(addr) = line.trim().strip_prefix("listening on ") else {
        panic!(
            "command: {command}\nprinted {line:?}\nstderr:\n{}",
            std::fs::read_to_string(&stderr).unwrap_or_default()
        )
    };
    Proc {
        name: name.to_string(),
        addr: addr.to_string(),
        child,
        command,
        stderr,
    }
}

/// Trust-control and nodes started by a test.
pub struct Cluster {
    /// The cluster's folder: tokens, database, logs, scenarios, bundles.
    pub dir: tempfile::TempDir,
    /// The trust-control process.
    pub trust: Proc,
    /// Node processes by name.
    pub nodes: BTreeMap<String, Proc>,
}

/// A scenario's world loaded into nodes of a [`Cluster`].
pub struct LoadedWorld {
    /// The scenario as the controller loads it.
    pub scenario: chio_arena::Scenario,
    /// Its fixture files.
    pub fixtures: FixtureSet,
    /// The world resolved from it (keys, grants, placement).
    pub world: World,
    /// A client per node the world was loaded into, by node name.
    pub clients: BTreeMap<String, NodeClient>,
}

impl LoadedWorld {
    /// The client of `node`.
    pub fn client(&self, node: &str) -> &NodeClient {
        self.clients
            .get(node)
            .unwrap_or_else(|| panic!("the world was not loaded into {node}"))
    }
}

impl Cluster {
    /// Starts trust-control and one node process per name.
    pub fn start(nodes: &[&str]) -> Cluster {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("cluster.token"), CLUSTER_TOKEN).expect("token file");
        std::fs::write(dir.path().join("trust.token"), format!("{TRUST_TOKEN}\n"))
            .expect("token file");
        let trust = serve(
            dir.path(),
            "trust-control",
            &[
                "trust".into(),
                "serve".into(),
                "--listen".into(),
                "127.0.0.1:0".into(),
                "--db".into(),
                dir.path().join("trust.db").display().to_string(),
                "--token-file".into(),
                dir.path().join("trust.token").display().to_string(),
            ],
        );
        let mut cluster = Cluster {
            dir,
            trust,
            nodes: BTreeMap::new(),
        };
        for node in nodes {
            cluster.start_node(node);
        }
        cluster
    }

    /// Starts (or restarts) the node `name` against this trust-control.
    pub fn start_node(&mut self, name: &str) {
        let store = [
            "--control-url".into(),
            self.trust.url(),
            "--control-token-file".into(),
            self.dir.path().join("trust.token").display().to_string(),
        ];
        self.start_node_with(name, &store);
    }

    /// Starts the node `name` with private authority state
    /// (`--state-dir`), in a folder of its own under the cluster's.
    pub fn start_private_node(&mut self, name: &str) {
        let state = self.dir.path().join(format!("state-{name}"));
        self.start_node_with(name, &["--state-dir".into(), state.display().to_string()]);
    }

    /// Starts the node `name` with the store flags `store`.
    fn start_node_with(&mut self, name: &str, store: &[String]) {
        let dir = self.dir.path();
        let mut args: Vec<String> = vec![
            "node".into(),
            "serve".into(),
            "--name".into(),
            name.into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--cluster-token-file".into(),
            dir.join("cluster.token").display().to_string(),
        ];
        args.extend_from_slice(store);
        let proc = serve(dir, name, &args);
        self.nodes.insert(name.to_string(), proc);
    }

    /// Kills the node `name`.
    pub fn kill_node(&mut self, name: &str) {
        self.nodes
            .get_mut(name)
            .unwrap_or_else(|| panic!("no node {name} in the cluster"))
            .kill();
    }

    /// Writes a topology file for the running processes.
    pub fn topology(&self) -> PathBuf {
        let mut text = format!(
            "cluster_token_file = \"cluster.token\"\n\n[trust_control]\nurl = \"{}\"\ntoken_file = \"trust.token\"\n\n[nodes]\n",
            self.trust.url()
        );
        for (name, proc) in &self.nodes {
            text.push_str(&format!("{name} = \"{}\"\n", proc.url()));
        }
        let path = self.dir.path().join("topology.toml");
        std::fs::write(&path, text).expect("topology file");
        path
    }

    /// Every process's command and standard error, for failure messages.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        for proc in std::iter::once(&self.trust).chain(self.nodes.values()) {
            text.push_str(&format!(
                "--- {} ({})\n{}\n",
                proc.name,
                proc.command,
                proc.stderr_text()
            ));
        }
        text
    }

    /// The cluster token as the node clients present it.
    pub fn cluster_token(&self) -> chio_node::ClusterToken {
        chio_node::ClusterToken::new(CLUSTER_TOKEN).expect("a valid token")
    }

    /// A trust-control client presenting `token`.
    pub fn trust_client(&self, token: &str) -> chio_trust::TrustClient {
        chio_trust::TrustClient::connect_lazy(
            &self.trust.url(),
            &chio_trust::BearerToken::new(token).expect("a valid token"),
            chio_trust::TrustClientConfig::default(),
        )
        .expect("a trust-control client")
    }

    /// A NodeControl client of the node `name`.
    pub fn node_client(&self, name: &str) -> NodeClient {
        let proc = self
            .nodes
            .get(name)
            .unwrap_or_else(|| panic!("no node {name} in the cluster"));
        NodeClient::new(
            name,
            &proc.url(),
            &self.cluster_token(),
            DEFAULT_CONTROL_DEADLINE,
        )
        .expect("a node client")
    }

    /// Loads the scenario `file` the way the controller does: trusts the
    /// world's authority in trust-control, then loads the world under
    /// `run_id` into each node of `into`, with every running node as a peer.
    pub fn load_world(
        &self,
        rt: &tokio::runtime::Runtime,
        file: &Path,
        run_id: &str,
        into: &[&str],
    ) -> LoadedWorld {
        let _entered = rt.enter();
        let scenario = chio_arena::load_scenario(file).expect("scenario loads");
        let fixtures = FixtureSet::load(&scenario).expect("fixtures");
        let world = World::resolve(&scenario, &fixtures).expect("world");
        let bytes = std::fs::read(file).expect("scenario reads");
        let key = IssuerKey::parse_hex(&chio_kernel::keys::public_key_hex(&world.authority))
            .expect("an authority key");
        rt.block_on(self.trust_client(TRUST_TOKEN).add_issuer_key(key))
            .unwrap_or_else(|e| panic!("trust the authority: {e}\n{}", self.logs()));
        let witness = witness_key(run_id);
        rt.block_on(
            self.trust_client(TRUST_TOKEN)
                .join_labels(vec![witness.clone()], WITNESS_LABEL),
        )
        .unwrap_or_else(|e| panic!("write the run's witness: {e}\n{}", self.logs()));
        let peers: BTreeMap<String, String> = self
            .nodes
            .iter()
            .map(|(name, proc)| (name.clone(), proc.url()))
            .collect();
        let mut clients = BTreeMap::new();
        for node in into {
            let client = self.node_client(node);
            rt.block_on(client.load_world(WorldOffer {
                scenario: &bytes,
                fixtures: &fixtures,
                peers: &peers,
                run_id,
                redefinitions: &scenario.redefinitions().expect("redefinitions"),
                witness_key: &witness,
            }))
            .unwrap_or_else(|e| panic!("load world on {node}: {e}\n{}", self.logs()));
            clients.insert(node.to_string(), client);
        }
        LoadedWorld {
            scenario,
            fixtures,
            world,
            clients,
        }
    }
}

/// A multi-threaded runtime for driving gRPC clients from a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Polls `check` until it is true or `limit` passes.
pub fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A call by `agent` presenting the held capability `capability` to `tool`
/// on `server`: the command every process suite sends to a node.
pub fn call_command(
    request_id: &str,
    agent: &str,
    capability: &str,
    (server, tool): (&str, &str),
    arguments: serde_json::Value,
    now_ms: u64,
) -> chio_node::CallCommand {
    chio_node::CallCommand {
        request_id: request_id.to_string(),
        agent: agent.to_string(),
        capability_id: capability.to_string(),
        captured: None,
        server: server.to_string(),
        tool: tool.to_string(),
        arguments,
        sources: Vec::new(),
        now_ms,
        issued_at_ms: now_ms,
        sealed: Vec::new(),
    }
}
