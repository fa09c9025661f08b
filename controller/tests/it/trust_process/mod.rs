//! Shared harness of trust-control's process tests: runs the real `chio
//! trust serve` in a fresh temp directory on port 0, reads the bound address from its
//! stdout, and on a failing test prints the command, exit status, stdout and
//! stderr so the failure explains itself.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use chio_trust::{BearerToken, TrustClient, TrustClientConfig};

/// The token every test service is started with.
pub const TOKEN: &str = "test-token-0123456789abcdef";

/// How long a process may take to start or to exit before the test fails.
const PROCESS_TIMEOUT: Duration = Duration::from_secs(30);

/// The path of the binary under test; trust-control is its `trust`
/// subcommand.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_chio")
}

/// Writes `token` to a file in `dir` and returns its path.
pub fn token_file(dir: &Path, token: &str) -> PathBuf {
    let path = dir.join("token");
    std::fs::write(&path, format!("{token}\n")).expect("write token file");
    path
}

/// `chio -v trust ARGS` (service logs at info, as an operator would run
/// it) with `CHIO_TRUST_TOKEN` removed, so the host environment never
/// leaks into a test.
pub fn command(args: &[&str]) -> Command {
    let mut command = Command::new(binary());
    command
        .args(["-v", "trust"])
        .args(args)
        .env_remove("CHIO_TRUST_TOKEN");
    command
}

/// Runs a command that should exit by itself, bounded by the process timeout.
pub fn run_to_exit(mut command: Command) -> (String, Output) {
    let shown = format!("{command:?}");
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn chio trust serve");
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if started.elapsed() > PROCESS_TIMEOUT {
            let _ = child.kill();
            let output = child.wait_with_output().expect("collect output");
            panic!(
                "command did not exit within {PROCESS_TIMEOUT:?}\ncommand: {shown}\n{}",
                describe(&output)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("collect output");
    (shown, output)
}

/// Status, stdout and stderr of a finished process, for failure messages.
pub fn describe(output: &Output) -> String {
    format!(
        "status: {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A running `chio trust serve`; killed when dropped, and described on
/// stderr when dropped during a failing test.
pub struct TrustProcess {
    child: Child,
    /// The command line, for failure messages.
    pub command: String,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    stderr_path: PathBuf,
    status: Option<ExitStatus>,
}

impl TrustProcess {
    /// Starts `chio trust serve --db DB --listen 127.0.0.1:0 --token-file
    /// TOKEN_FILE --print-addr` and waits for its address line.
    pub fn start(db: &Path, token_file: &Path) -> TrustProcess {
        let mut command = command(&[
            "serve",
            "--db",
            db.to_str().expect("utf-8 path"),
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            token_file.to_str().expect("utf-8 path"),
            "--print-addr",
        ]);
        Self::spawn(&mut command, db.parent().expect("db in a directory"))
    }

    /// Spawns a prepared serve command and waits for `listening on ADDR`.
    pub fn spawn(command: &mut Command, dir: &Path) -> TrustProcess {
        let shown = format!("{command:?}");
        let stderr_path = dir.join(format!("stderr-{}.log", unique()));
        let stderr = std::fs::File::create(&stderr_path).expect("create stderr log");
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn chio trust serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let (line_tx, line_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = line_tx.send(line);
            // Keep draining so the process never blocks on a full pipe.
            let _ = reader.read_to_end(&mut Vec::new());
        });
        let mut process = TrustProcess {
            child,
            command: shown,
            url: String::new(),
            stderr_path,
            status: None,
        };
        let line = line_rx.recv_timeout(PROCESS_TIMEOUT).unwrap_or_default();
        match line.trim().strip_prefix("listening on ") {
            Some(addr) => process.url = format!("http://{addr}"),
            None => {
                panic!("chio trust serve did not announce its address; first stdout line: {line:?}")
            }
        }
        process
    }

    /// A client holding the right token.
    pub async fn client(&self) -> TrustClient {
        self.client_with(TOKEN).await
    }

    /// A client holding `token`.
    pub async fn client_with(&self, token: &str) -> TrustClient {
        let token = BearerToken::new(token).expect("test token");
        TrustClient::connect(&self.url, &token, TrustClientConfig::default())
            .await
            .expect("connect to chio trust serve")
    }

    /// Kills the process with SIGKILL (no chance to flush anything).
    pub fn kill9(&mut self) -> ExitStatus {
        self.child.kill().expect("kill -9");
        let status = self.child.wait().expect("wait");
        self.status = Some(status);
        status
    }

    /// Sends SIGTERM and waits for the exit, bounded by the process timeout.
    pub fn terminate(&mut self) -> ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill -TERM");
        assert!(sent.success(), "kill -TERM failed: {sent}");
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                self.status = Some(status);
                return status;
            }
            assert!(
                started.elapsed() < PROCESS_TIMEOUT,
                "chio trust serve did not stop within {PROCESS_TIMEOUT:?} of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The process id, for sending signals other than SIGTERM and SIGKILL.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }
}

impl Drop for TrustProcess {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            self.status = self.child.wait().ok();
        }
        if std::thread::panicking() {
            eprintln!(
                "--- chio trust serve process\ncommand: {}\nstatus: {:?}\nurl: {}\nstderr:\n{}",
                self.command,
                self.status,
                self.url,
                self.stderr()
            );
        }
    }
}

/// A per-process suffix for log names, so restarts do not overwrite logs.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
