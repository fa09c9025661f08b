//! Round trips to trust-control per kernel decision, counted: every
//! reference scenario (the AgentDojo tasks included) runs embedded over a
//! trust store that counts the calls made to it, so each call a remote
//! trust-control would answer is one round trip. Every call step's decision
//! must take at most two, but one kind: a call that presents sibling shares
//! while labels are retained for it admits its shares after the guards have
//! read those labels, in a third. The issuer-key refresh, at most once per
//! kernel every 2 s (`docs/topology.md`), is counted apart.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chio_controller::arena_run::load_for_run;
use chio_controller::driver::{
    run_schedule, DispatchMode, Dispatcher, ReadBack, RunOptions, RunStatus,
};
use chio_node::embedded::start_nodes_with_faults;
use chio_node::executor::FaultEvent;
use chio_node::link::LinkFuture;
use chio_node::outage::Refusal;
use chio_node::simulated_faults::FaultSwitch;
use chio_node::{
    CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, MessageCommand, MessageOutcome,
    Node, NodeError, World,
};
use chio_trust::model::{
    AppendSummary, BatchAnswers, BatchOp, HoldOutcome, HoldState, IssuerKey, LabelSets,
    ReceiptPage, ReceiptRecord, ReleaseOutcome, Revocation, ShareOutcome,
};
use chio_trust::{InMemoryTrustStore, TrustError, TrustStore};

/// An in-memory trust store that counts every call made to it.
#[derive(Default)]
struct Counting {
    inner: InMemoryTrustStore,
    calls: AtomicU64,
    refreshes: AtomicU64,
}

impl Counting {
    fn count(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }
}

impl TrustStore for Counting {
    async fn add_issuer_key(&self, key: IssuerKey) -> Result<bool, TrustError> {
        self.count();
        self.inner.add_issuer_key(key).await
    }
    async fn list_issuer_keys(&self) -> Result<Vec<IssuerKey>, TrustError> {
        self.refreshes.fetch_add(1, Ordering::SeqCst);
        self.inner.list_issuer_keys().await
    }
    async fn revoke(&self, id: &str, at_ms: u64) -> Result<Revocation, TrustError> {
        self.count();
        self.inner.revoke(id, at_ms).await
    }
    async fn revoked_at(&self, id: &str) -> Result<Option<u64>, TrustError> {
        self.count();
        self.inner.revoked_at(id).await
    }
    async fn hold_budget(
        &self,
        hold_id: &str,
        budget_key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, TrustError> {
        self.count();
        self.inner
            .hold_budget(hold_id, budget_key, amount, limit)
            .await
    }
    async fn commit_budget(&self, hold_id: &str) -> Result<HoldState, TrustError> {
        self.count();
        self.inner.commit_budget(hold_id).await
    }
    async fn release_budget(&self, hold_id: &str) -> Result<ReleaseOutcome, TrustError> {
        self.count();
        self.inner.release_budget(hold_id).await
    }
    async fn admit_share(
        &self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareOutcome, TrustError> {
        self.count();
        self.inner
            .admit_share(parent_id, child_id, child_bps, parent_bps)
            .await
    }
    async fn record_request(&self, request_key: &str) -> Result<bool, TrustError> {
        self.count();
        self.inner.record_request(request_key).await
    }
    async fn append_receipts(
        &self,
        receipts: Vec<ReceiptRecord>,
    ) -> Result<AppendSummary, TrustError> {
        self.count();
        self.inner.append_receipts(receipts).await
    }
    async fn list_receipts(&self, after_seq: u64, limit: u32) -> Result<ReceiptPage, TrustError> {
        self.count();
        self.inner.list_receipts(after_seq, limit).await
    }
    async fn count_receipts(&self) -> Result<u64, TrustError> {
        self.count();
        self.inner.count_receipts().await
    }
    async fn read_labels(&self, keys: Vec<String>) -> Result<LabelSets, TrustError> {
        self.count();
        self.inner.read_labels(keys).await
    }
    async fn join_labels(&self, keys: Vec<String>, label: &str) -> Result<LabelSets, TrustError> {
        self.count();
        self.inner.join_labels(keys, label).await
    }
    async fn run_batch(&self, ops: Vec<BatchOp>) -> Result<BatchAnswers, TrustError> {
        self.count();
        self.inner.run_batch(ops).await
    }
}

/// One call step's decision and the trust-control calls it took.
#[derive(Debug)]
#[allow(dead_code)] // `step` and `reason` are read through `Debug` on failure.
struct Counted {
    step: String,
    calls: u64,
    verdict: String,
    reason: Option<String>,
    /// Whether the decision presented sibling shares while labels were
    /// retained for it: the shares are admitted after the guards read them.
    tainted_shares: bool,
}

/// The embedded nodes, counting the store calls of each call step (one
/// action is in flight at a time, so the difference is the decision's).
/// Faults are simulated by the switch the nodes reach each other and the
/// store through; a store call a fault refuses never reaches the counting
/// store, and a restarted node keeps its actors.
struct CountingDispatcher {
    nodes: BTreeMap<String, Node>,
    store: Arc<Counting>,
    switch: FaultSwitch,
    counted: Mutex<Vec<Counted>>,
}

impl CountingDispatcher {
    fn node(&self, id: &str) -> Result<Node, NodeError> {
        self.nodes
            .get(id)
            .cloned()
            .ok_or_else(|| NodeError::Unroutable(format!("node {id}")))
    }
}

impl Dispatcher for CountingDispatcher {
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallAnswer> {
        let node = self.node(node);
        Box::pin(async move {
            let step = command.request_id.clone();
            let before = self.store.calls.load(Ordering::SeqCst);
            let answer = node?.call(command).await?;
            let calls = self.store.calls.load(Ordering::SeqCst) - before;
            // A node's own deny is no kernel decision: nothing to count.
            if let (CallAnswer::Decided(outcome), Ok(mut counted)) = (&answer, self.counted.lock())
            {
                counted.push(Counted {
                    step,
                    calls,
                    verdict: outcome.projected.as_str().to_string(),
                    reason: outcome.reason.clone(),
                    tainted_shares: !outcome.trace.shares.is_empty()
                        && outcome.trace.label_keys.values().any(|set| !set.is_empty()),
                });
            }
            Ok(answer)
        })
    }

    fn delegate(
        &self,
        node: &str,
        command: DelegateCommand,
    ) -> LinkFuture<'_, Result<DelegateOutcome, Refusal>> {
        let node = self.node(node);
        Box::pin(async move { node?.delegate(command).await })
    }

    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, Option<Refusal>> {
        let node = self.node(node);
        let target = target.to_string();
        Box::pin(async move { node?.revoke(&target, at_ms).await })
    }

    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome> {
        let node = self.node(node);
        Box::pin(async move { node?.message(command).await })
    }

    fn fault(&self, event: FaultEvent) -> LinkFuture<'_, ()> {
        self.switch.apply(&event);
        Box::pin(async { Ok(()) })
    }
}

/// The scenario files with a world under `dir`, sorted, but those with a
/// live MCP server, which run only from a recording.
fn scenario_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.extension().is_some_and(|e| e == "toml")
            && chio_arena::load_scenario(p)
                .is_ok_and(|s| s.has_world() && !s.file().servers.iter().any(|s| s.kind == "mcp"))
    });
    files.sort();
    files
}

/// Runs `file` embedded over a counting store; the counted call steps.
fn count_run(runtime: &tokio::runtime::Runtime, file: &Path) -> Vec<Counted> {
    let (scenario, inputs) = load_for_run("round-trips", file).expect("scenario loads");
    let world = World::resolve(&scenario, &inputs.fixtures).expect("world resolves");
    let store = Arc::new(Counting::default());
    runtime.block_on(async {
        let switch = FaultSwitch::default();
        let nodes = start_nodes_with_faults(&world, store.clone(), &switch)
            .await
            .expect("nodes");
        let dispatcher = CountingDispatcher {
            nodes,
            store: store.clone(),
            switch,
            counted: Mutex::new(Vec::new()),
        };
        // One step at a time, so each call's count is its own decision's.
        let options = RunOptions {
            keep_going: true,
            dispatch: DispatchMode::OneAtATime,
        };
        let scratch = ReadBack::new().expect("a temporary folder");
        let run = run_schedule(
            &scenario,
            &world,
            &inputs,
            &dispatcher,
            options,
            scratch.out(),
        )
        .await;
        let result = scratch.bundle(run).expect("run");
        assert_ne!(
            result.status,
            RunStatus::InfrastructureFailure,
            "{}",
            file.display()
        );
        dispatcher.counted.into_inner().unwrap_or_default()
    })
}

// Proves every kernel decision of every reference scenario, allows and denies alike, takes at most two trust-control round trips (three for shares presented under retained labels).
#[test]
fn round_trips_per_decision_are_bounded() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scenarios");
    let mut files = scenario_files(&root);
    files.extend(scenario_files(&root.join("agentdojo")));
    assert!(files.len() > 20, "the reference scenarios were not found");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut histogram: BTreeMap<u64, usize> = BTreeMap::new();
    let mut verdicts: BTreeMap<String, usize> = BTreeMap::new();
    let mut over = Vec::new();
    for file in &files {
        for counted in count_run(&runtime, file) {
            *histogram.entry(counted.calls).or_default() += 1;
            *verdicts.entry(counted.verdict.clone()).or_default() += 1;
            let bound = if counted.tainted_shares { 3 } else { 2 };
            if counted.calls > bound {
                over.push((file.display().to_string(), counted));
            }
        }
    }
    eprintln!("decisions by round trips: {histogram:?}; by verdict: {verdicts:?}");
    assert!(
        verdicts.get("allow").copied().unwrap_or(0) > 50 && verdicts.len() > 1,
        "too few decisions of each kind were counted: {verdicts:?}"
    );
    assert!(over.is_empty(), "decisions over their bound: {over:#?}");
    assert!(histogram.keys().all(|calls| *calls <= 3), "{histogram:?}");
}
