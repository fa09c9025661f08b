//! Starting the real `chio` binary as trust-control and node processes for
//! the distributed tests: port 0, a fresh temporary folder per cluster,
//! generated tokens, each process's standard error kept in a file so a
//! failure can print it. Dropping a process kills it.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub const CLUSTER_TOKEN: &str = "cluster-token-for-tests-0123456789";
pub const TRUST_TOKEN: &str = "trust-token-for-tests-0123456789";

pub fn chio() -> &'static str {
    env!("CARGO_BIN_EXE_chio")
}

pub fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// A serving process and what it printed.
pub struct Proc {
    pub name: String,
    pub child: Child,
    pub addr: String,
    pub command: String,
    pub stderr: PathBuf,
}

impl Proc {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

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

/// Starts `chio ARGS --print-addr` and waits for its address.
pub fn serve(dir: &Path, name: &str, args: &[String]) -> Proc {
    let stderr = dir.join(format!("{name}.stderr"));
    let mut all: Vec<String> = args.to_vec();
    all.push("--print-addr".into());
    let command = format!("chio {}", all.join(" "));
    let mut child = Command::new(chio())
        .args(&all)
        .env_remove("RUST_LOG")
        .env_remove("CHIO_TRUST_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("{command} does not start: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the address line");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| {
            panic!(
                "command: {command}\nprinted {line:?}\nstderr:\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            )
        })
        .to_string();
    Proc {
        name: name.to_string(),
        child,
        addr,
        command,
        stderr,
    }
}

/// Trust-control and nodes started by a test.
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub trust: Proc,
    pub nodes: BTreeMap<String, Proc>,
}

impl Cluster {
    pub fn start(nodes: &[&str]) -> Cluster {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("cluster.token"), CLUSTER_TOKEN).unwrap();
        std::fs::write(dir.path().join("trust.token"), format!("{TRUST_TOKEN}\n")).unwrap();
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
        let dir = self.dir.path();
        let proc = serve(
            dir,
            name,
            &[
                "node".into(),
                "serve".into(),
                "--name".into(),
                name.into(),
                "--listen".into(),
                "127.0.0.1:0".into(),
                "--cluster-token-file".into(),
                dir.join("cluster.token").display().to_string(),
                "--control-url".into(),
                self.trust.url(),
                "--control-token-file".into(),
                dir.join("trust.token").display().to_string(),
            ],
        );
        self.nodes.insert(name.to_string(), proc);
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
        std::fs::write(&path, text).unwrap();
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

    pub fn cluster_token(&self) -> chio_node::ClusterToken {
        chio_node::ClusterToken::new(CLUSTER_TOKEN).unwrap()
    }

    pub fn trust_client(&self, token: &str) -> chio_trust::TrustClient {
        chio_trust::TrustClient::connect_lazy(
            &self.trust.url(),
            &chio_trust::BearerToken::new(token).unwrap(),
            chio_trust::TrustClientConfig::default(),
        )
        .unwrap()
    }
}

/// Runs `chio ARGS` in `dir` to completion.
pub fn run_chio(dir: &Path, args: &[&str]) -> Output {
    Command::new(chio())
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("the chio binary runs")
}

pub fn explain(args: &[&str], output: &Output) -> String {
    format!(
        "command: chio {}\nstatus: {}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Every file under `root`, by relative path.
pub fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("list") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A multi-threaded runtime for driving gRPC clients from a test.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Polls `check` until it is true or `limit` passes.
pub fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Writes a scenario folder: the TOML, a prompt and a workspace fixture.
pub fn write_scenario(dir: &Path, toml: &str, files: &[(&str, &str)]) -> PathBuf {
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(dir.join("prompts/agent.txt"), "You are a test agent.\n").unwrap();
    for (path, content) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let file = dir.join("scenario.toml");
    std::fs::write(&file, toml).unwrap();
    file
}

/// A scenario `id` (seed `seed`) in which an agent on node-b reads, `steps`
/// times, a workspace served by kernel-a on node-a, so every call crosses
/// from one node process to the other.
pub fn cross_node_scenario(id: &str, seed: u64, steps: usize) -> String {
    let mut text = format!(
        r#"id = "{id}"
title = "an agent on node-b reads through kernel-a on node-a"
schema_version = "chio.arena.scenario/v1"
rng_seed = {seed}
virtual_clock_start = "2026-01-05T08:00:00.000Z"

[determinism]
rng_seed = {seed}
virtual_clock_start = "2026-01-05T08:00:00.000Z"
scheduler = "single-agent-v1"
locale = "C"

[[nodes]]
id = "node-a"

[[nodes]]
id = "node-b"

[[kernels]]
id = "kernel-a"
node = "node-a"

[[kernels]]
id = "kernel-b"
node = "node-b"

[[servers]]
id = "workspace"
kernel = "kernel-a"
kind = "workspace"
fixtures = "fixtures/ws"

[[agents]]
id = "far"
role = "reader"
model = "recorded:far"
seed_prompt_ref = "prompts/agent.txt"
kernel = "kernel-b"

[[grants]]
id = "far-read"
agent = "far"
server = "workspace"
tools = ["read_file"]
path_prefix = "/workspace/"
"#
    );
    for i in 0..steps {
        text.push_str(&format!(
            "\n[[steps]]\nid = \"read-{i:05}\"\nagent = \"far\"\nserver = \"workspace\"\ntool = \"read_file\"\narguments = {{ path = \"/workspace/notes.txt\" }}\nexpect_verdict = \"allow\"\n"
        ));
    }
    text
}
