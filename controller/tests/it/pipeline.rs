//! The pipelined run driver in process: steps of independent agents are in
//! flight together, steps that share an agent or a lineage are not, and
//! either way the bundle equals the one-at-a-time run's. A dispatcher over
//! the embedded topology counts the steps in flight at once.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use chio_controller::arena_run::load_for_run;
use chio_controller::driver::{
    run_schedule, DispatchMode, Dispatcher, ReadBack, RunOptions, RunResult,
};
use chio_node::link::LinkFuture;
use chio_node::outage::Refusal;
use chio_node::{
    CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, EmbeddedTopology, MessageCommand,
    MessageOutcome, World,
};
use chio_tests::{many_agent_scenario, repo_path, write_scenario};

/// The embedded topology, counting how many steps are in flight at once.
struct Counting {
    inner: EmbeddedTopology,
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Counting {
    fn around<'a, T: Send + 'a>(&'a self, inner: LinkFuture<'a, T>) -> LinkFuture<'a, T> {
        Box::pin(async move {
            let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            let answer = inner.await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            answer
        })
    }
}

impl Dispatcher for Counting {
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallAnswer> {
        self.around(self.inner.call(node, command))
    }
    fn delegate(
        &self,
        node: &str,
        command: DelegateCommand,
    ) -> LinkFuture<'_, Result<DelegateOutcome, Refusal>> {
        self.around(self.inner.delegate(node, command))
    }
    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, Option<Refusal>> {
        self.around(self.inner.revoke(node, target, at_ms))
    }
    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome> {
        self.around(self.inner.message(node, command))
    }
}

/// Runs `file` embedded in `dispatch` mode; the result and the peak number
/// of steps in flight.
fn run(file: &Path, dispatch: DispatchMode) -> (RunResult, usize) {
    let (scenario, inputs) = load_for_run("pipeline", file).expect("scenario loads");
    let world = World::resolve(&scenario, &inputs.fixtures).expect("world resolves");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let counting = Counting {
            inner: EmbeddedTopology::start(&world).await.expect("nodes"),
            now: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        };
        let options = RunOptions {
            keep_going: true,
            dispatch,
        };
        let scratch = ReadBack::new().expect("a temporary folder");
        let run = run_schedule(
            &scenario,
            &world,
            &inputs,
            &counting,
            options,
            scratch.out(),
        )
        .await;
        let result = scratch.bundle(run).expect("run");
        (result, counting.peak.load(Ordering::SeqCst))
    })
}

// Proves independent agents' steps are in flight together when pipelined, never when one at a time, with equal bundles.
#[test]
fn independent_agents_overlap_and_record_the_same_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_scenario(
        tmp.path(),
        &many_agent_scenario(4, 4, 96),
        &[("fixtures/ws/notes.txt", "notes\n")],
    );
    let (pipelined, peak) = run(&file, DispatchMode::Pipelined);
    let (one, one_peak) = run(&file, DispatchMode::OneAtATime);
    assert!(peak >= 8, "only {peak} steps were in flight at once");
    assert_eq!(one_peak, 1);
    assert_eq!(pipelined.bundle, one.bundle);
    assert_eq!(pipelined.status, one.status);
}

// Proves steps of one agent never overlap: a single-agent scenario keeps one step in flight even when pipelined.
#[test]
fn one_agents_steps_never_overlap() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_scenario(
        tmp.path(),
        &many_agent_scenario(1, 1, 24),
        &[("fixtures/ws/notes.txt", "notes\n")],
    );
    let (pipelined, peak) = run(&file, DispatchMode::Pipelined);
    let (one, _) = run(&file, DispatchMode::OneAtATime);
    assert_eq!(peak, 1);
    assert_eq!(pipelined.bundle, one.bundle);
}

// Proves the delegation, revocation and message scenarios record the same bundle in both modes in process (the reference gate runs the binary).
#[test]
fn dependent_reference_steps_record_the_same_bundle() {
    for name in [
        "three_agent_triangular_delegation",
        "delegation_taint",
        "message_exfiltration",
        "labels_at_rest",
        "value_references",
        "recorded_git",
        "sealed_secret",
        "planner_reader",
        "run_time_allowlist",
    ] {
        let file = repo_path(&format!("scenarios/{name}.toml"));
        let (pipelined, _) = run(&file, DispatchMode::Pipelined);
        let (one, _) = run(&file, DispatchMode::OneAtATime);
        assert_eq!(pipelined.bundle, one.bundle, "{name}");
    }
}

// Proves a call whose arguments take values from earlier outputs is sent the resolved values (the receipt's parameter hash is that of the arguments with the reference replaced and the literal unwrapped), and waits for the step it reads when pipelined.
#[test]
fn references_send_the_values_they_name() {
    let file = repo_path("scenarios/value_references.toml");
    let (pipelined, _) = run(&file, DispatchMode::Pipelined);
    let (one, _) = run(&file, DispatchMode::OneAtATime);
    assert_eq!(pipelined.bundle, one.bundle);
    let receipt = one
        .bundle
        .receipts
        .iter()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("receipt"))
        .find(|r| r["body"]["request_id"] == "pay-the-bill")
        .expect("pay-the-bill has a receipt");
    let sent = serde_json::json!({
        "url": "https://payments.test/transfer",
        "to": "IBAN-SUPPLIER",
        "amount": "120",
        "memo": {"from_step": "read-bill"},
    });
    assert_eq!(
        receipt["body"]["parameter_hash"],
        chio_kernel::receipt::canonical_sha256(&sent).expect("canonical")
    );
}
