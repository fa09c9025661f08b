//! Faults inflicted on a local cluster (`--topology local`): the dispatcher
//! of a fault scenario's run, which carries every step to the node
//! processes like the gRPC dispatcher and inflicts each fault step's fault
//! on the real processes.
//!
//! - `crash`: the node's process is killed (SIGKILL) and the controller
//!   checks that its address refuses connections;
//! - `restart`: the node's process starts again on the same address and is
//!   sent the same world and run id (so its kernels see the run's shared
//!   state in trust-control); with `keep_state`, every capability handed to
//!   its agents during the run is handed over again, and without it they
//!   hold only their grants;
//! - `stall`: every node's link to trust-control becomes a black hole (its
//!   proxy keeps the connections and throws away what is sent) and
//!   trust-control is paused (SIGSTOP); the controller checks that a real
//!   store call fails at a short deadline. The stall's end drops every
//!   connection the black hole swallowed from and resumes the service
//!   (SIGCONT), so nothing sent during the stall ever reaches the store:
//!   a request left in a paused process's socket would be applied when it
//!   resumes, residue an embedded run does not have;
//! - `partition`, `heal`, `delay`: the link's proxies are cut, opened, or
//!   made to hold every chunk (for the virtual delay, bounded by
//!   [`MAX_WALL_DELAY`] of wall time so runs stay fast).
//!
//! The steps a fault reaches are dispatched like any other, and the node
//! processes and their kernels meet the real fault and give their own
//! fail-closed answers (`chio_node::outage`), the bytes the embedded
//! simulation gives; only a step whose agent's node is down is answered by
//! the step executor.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use chio_arena::scenario::{FaultAction, TRUST_CONTROL};
use chio_arena::Scenario;
use chio_node::client::{witness_key, WorldOffer, DEFAULT_CONTROL_DEADLINE};
use chio_node::executor::{FaultEvent, PreparedFault};
use chio_node::grpc_link::DEFAULT_LINK_DEADLINE;
use chio_node::link::{KernelLink, LinkFuture};
use chio_node::outage::Refusal;
use chio_node::{
    CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, GrpcLink, MessageCommand,
    MessageOutcome, NodeClient, NodeError, World,
};
use chio_trust::{TrustClient, TrustClientConfig, TrustError, TrustStore};

use crate::driver::{Dispatcher, RunInputs};
use crate::link_proxy::{check_cut, LinkMode, LinkProxy};
use crate::local_cluster::{LocalCluster, NodeStoreDeadlines};
use crate::topology::{check_witness, GrpcTopology, Topology};

/// The most wall time a delayed link holds each chunk.
pub const MAX_WALL_DELAY: Duration = Duration::from_millis(50);
/// The store deadlines of the nodes of a cluster whose scenario stalls
/// trust-control: a call sent into the stall waits its whole deadline (and
/// a denied call's receipt append its own), so they are short to keep runs
/// fast, yet long enough that a store call on a loaded machine (a SQLite
/// write and its fsync) never misses one outside a stall, which would turn
/// an allow into a deny.
pub const STALL_STORE_DEADLINES: NodeStoreDeadlines = NodeStoreDeadlines {
    store_ms: 500,
    receipt_ms: 1_000,
};
/// How long the end of a stall waits for the connections it swallowed
/// from to close.
const DRAIN_BOUND: Duration = Duration::from_secs(2);
/// How long the nodes are given, after a stall, to see the connections it
/// broke closed before the run goes on.
const CLOSE_SETTLE: Duration = Duration::from_millis(50);
/// The deadline of the store call that checks a stall is in effect.
const STALL_PROBE_DEADLINE: Duration = Duration::from_millis(200);

/// Starts a local cluster for `scenario`'s nodes, shaped for its fault
/// steps: every link proxied when one partitions, heals or delays a link
/// or stalls trust-control, and the nodes' store deadlines shortened when
/// one stalls it ([`STALL_STORE_DEADLINES`]). The caller serves the
/// proxies on its runtime ([`LocalCluster::serve_proxies`]).
pub fn start_cluster(chio: &Path, scenario: &Scenario) -> Result<LocalCluster, NodeError> {
    let mut proxied = false;
    let mut stalls = false;
    for fault in scenario.fault_steps() {
        proxied |= !matches!(
            fault,
            FaultAction::Crash { .. } | FaultAction::Restart { .. }
        );
        stalls |= matches!(fault, FaultAction::Stall { .. });
    }
    let deadlines = stalls.then_some(STALL_STORE_DEADLINES);
    LocalCluster::start(chio, &scenario.node_ids(), proxied, deadlines)
}

/// Locks the cluster; a poisoned lock only means a panic elsewhere.
pub fn lock(cluster: &Mutex<LocalCluster>) -> MutexGuard<'_, LocalCluster> {
    cluster.lock().unwrap_or_else(|e| e.into_inner())
}

/// The dispatcher of a fault scenario on a local cluster.
pub struct LocalFaults<'r> {
    /// Carries the ordinary steps.
    pub grpc: &'r GrpcTopology,
    /// The processes faults are inflicted on.
    pub cluster: &'r Mutex<LocalCluster>,
    /// Their addresses and tokens.
    pub topology: &'r Topology,
    /// The run's world.
    pub world: &'r World,
    /// The scenario's bytes and fixtures, sent again to a restarted node.
    pub inputs: &'r RunInputs,
    /// The run's namespace in trust-control.
    pub run_id: &'r str,
    /// Whether a stall is in effect (its links to trust-control swallow).
    pub stalled: AtomicBool,
}

impl Dispatcher for LocalFaults<'_> {
    fn call(&self, node: &str, command: CallCommand) -> LinkFuture<'_, CallAnswer> {
        self.grpc.call(node, command)
    }

    fn delegate(
        &self,
        node: &str,
        command: DelegateCommand,
    ) -> LinkFuture<'_, Result<DelegateOutcome, Refusal>> {
        self.grpc.delegate(node, command)
    }

    fn revoke(&self, node: &str, target: &str, at_ms: u64) -> LinkFuture<'_, Option<Refusal>> {
        self.grpc.revoke(node, target, at_ms)
    }

    fn message(&self, node: &str, command: MessageCommand) -> LinkFuture<'_, MessageOutcome> {
        self.grpc.message(node, command)
    }

    fn fault(&self, event: FaultEvent) -> LinkFuture<'_, ()> {
        Box::pin(async move {
            match event {
                FaultEvent::EndStall => self.end_stall().await,
                FaultEvent::Begin(prepared) => self.begin(prepared).await,
            }
        })
    }
}

impl LocalFaults<'_> {
    /// Runs a blocking process operation on the cluster without stalling
    /// the runtime's other tasks (the link proxies among them).
    fn blocking<T>(
        &self,
        operation: impl FnOnce(&mut LocalCluster) -> Result<T, NodeError>,
    ) -> Result<T, NodeError> {
        tokio::task::block_in_place(|| operation(&mut lock(self.cluster)))
    }

    async fn begin(&self, prepared: PreparedFault) -> Result<(), NodeError> {
        match &prepared.fault {
            FaultAction::Crash { node } => {
                self.blocking(|c| c.kill_node(node))?;
                self.check_refuses(node).await
            }
            FaultAction::Restart { node, .. } => {
                self.blocking(|c| c.restart_node(node))?;
                self.reload(node, &prepared).await
            }
            FaultAction::Stall { .. } => {
                self.stalled.store(true, Ordering::SeqCst);
                self.switch_control_links(LinkMode::Open, LinkMode::BlackHole);
                self.blocking(|c| c.signal_trust_control("STOP"))?;
                self.check_stalled().await
            }
            FaultAction::Partition { link } => {
                self.set_link(&link.from, &link.to, LinkMode::Cut)?;
                self.check_cut(&link.from, &link.to).await
            }
            FaultAction::Heal { link } => {
                // A link to trust-control healed during a stall joins the
                // black hole, not the paused service.
                let stalled = self.stalled.load(Ordering::SeqCst);
                let to_control = link.from == TRUST_CONTROL || link.to == TRUST_CONTROL;
                let mode = if stalled && to_control {
                    LinkMode::BlackHole
                } else {
                    LinkMode::Open
                };
                self.set_link(&link.from, &link.to, mode)
            }
            FaultAction::Delay { link, delay_ms } => {
                let wall = Duration::from_millis(*delay_ms).min(MAX_WALL_DELAY);
                self.set_link(&link.from, &link.to, LinkMode::Delayed(wall))
            }
        }
    }

    /// Brings the cluster back to health after whatever faults an earlier
    /// use of it left in effect: every exited node process is started
    /// again (the caller then loads a world on every node), a stall is
    /// ended as a stall's end is, and every link is opened. Nothing sent
    /// into a fault reaches anything afterwards.
    pub async fn recover(&self) -> Result<(), NodeError> {
        for node in self.blocking(|c| c.exited_nodes())? {
            self.blocking(|c| c.restart_node(&node))?;
        }
        let swallowing = lock(self.cluster)
            .control_proxies()
            .iter()
            .any(|proxy| proxy.mode() == LinkMode::BlackHole);
        if swallowing {
            self.end_stall().await?;
        } else {
            self.blocking(|c| c.signal_trust_control("CONT"))?;
        }
        for proxy in lock(self.cluster).proxies() {
            proxy.set(LinkMode::Open);
        }
        Ok(())
    }

    /// Switches every node's link to trust-control that is in mode `from`
    /// to mode `to` (a cut link stays cut through a stall).
    fn switch_control_links(&self, from: LinkMode, to: LinkMode) {
        let cluster = lock(self.cluster);
        for proxy in cluster.control_proxies() {
            if proxy.mode() == from {
                proxy.set(to);
            }
        }
    }

    /// Ends a stall: the links to trust-control stop swallowing and drop
    /// every connection they swallowed from (what was sent into the stall
    /// never arrives, and a connection that lost a chunk is broken), the
    /// service resumes, and the nodes are given a moment to see their
    /// connections closed, so their next call opens a new one.
    async fn end_stall(&self) -> Result<(), NodeError> {
        self.stalled.store(false, Ordering::SeqCst);
        self.switch_control_links(LinkMode::BlackHole, LinkMode::Open);
        let drains: Vec<_> = {
            let cluster = lock(self.cluster);
            let proxies = cluster.control_proxies();
            proxies.into_iter().map(LinkProxy::drain_handle).collect()
        };
        let mut drained = true;
        for drain in drains {
            drained &= drain.drained(DRAIN_BOUND).await;
        }
        self.blocking(|c| c.signal_trust_control("CONT"))?;
        if !drained {
            return Err(NodeError::Remote {
                target: "trust-control link proxy".to_string(),
                cause: format!(
                    "a connection swallowed during the stall was still open {} ms after it ended",
                    DRAIN_BOUND.as_millis()
                ),
            });
        }
        tokio::time::sleep(CLOSE_SETTLE).await;
        Ok(())
    }

    fn set_link(&self, a: &str, b: &str, mode: LinkMode) -> Result<(), NodeError> {
        let cluster = lock(self.cluster);
        let proxies = cluster.link_proxies(a, b);
        if proxies.is_empty() {
            return Err(NodeError::Config {
                problem: format!("the link {a} <-> {b} has no proxy to switch"),
                fix: "report this: a local cluster for a scenario with link faults proxies every link",
            });
        }
        for proxy in proxies {
            proxy.set(mode);
        }
        Ok(())
    }

    /// Checks that every proxy of a cut link refuses.
    async fn check_cut(&self, a: &str, b: &str) -> Result<(), NodeError> {
        let probes: Vec<_> = {
            let cluster = lock(self.cluster);
            cluster
                .link_proxies(a, b)
                .into_iter()
                .map(LinkProxy::probe)
                .collect()
        };
        for (addr, upstream) in probes {
            check_cut(addr, &upstream).await?;
        }
        Ok(())
    }

    /// Checks that a crashed node's address refuses connections.
    async fn check_refuses(&self, node: &str) -> Result<(), NodeError> {
        let url = self.url(node)?;
        let addr = url.trim_start_matches("http://");
        let probe =
            tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr))
                .await;
        match probe {
            Ok(Ok(_)) => Err(NodeError::Remote {
                target: format!("node {node}"),
                cause: "still accepts connections after it was killed".to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Checks that a real store call to the paused trust-control fails at
    /// its deadline.
    async fn check_stalled(&self) -> Result<(), NodeError> {
        let config = TrustClientConfig {
            call_deadline: STALL_PROBE_DEADLINE,
            append_deadline: STALL_PROBE_DEADLINE,
            connect_timeout: STALL_PROBE_DEADLINE,
        };
        let client =
            TrustClient::connect_lazy(&self.topology.trust_url, &self.topology.trust_token, config)
                .map_err(NodeError::Authority)?;
        match client.count_receipts().await {
            Err(TrustError::DeadlineExceeded { .. }) => Ok(()),
            other => Err(NodeError::Remote {
                target: "trust-control".to_string(),
                cause: format!(
                    "a store call to the paused service did not miss its deadline: {other:?}"
                ),
            }),
        }
    }

    /// Sends a restarted node the run's world and, with its state, the
    /// capabilities its agents held.
    async fn reload(&self, node: &str, prepared: &PreparedFault) -> Result<(), NodeError> {
        let url = self.url(node)?;
        let client = NodeClient::new(
            node,
            &url,
            &self.topology.cluster_token,
            DEFAULT_CONTROL_DEADLINE,
        )?;
        let loaded = client
            .load_world(WorldOffer {
                scenario: &self.inputs.world_bytes,
                fixtures: &self.inputs.fixtures,
                peers: self
                    .topology
                    .peer_urls
                    .get(node)
                    .unwrap_or(&self.topology.nodes),
                run_id: self.run_id,
                redefinitions: &self.inputs.redefinitions,
                witness_key: &witness_key(self.run_id),
            })
            .await?;
        check_witness(node, self.topology, loaded.witness_found)?;
        if prepared.restore.is_empty() {
            return Ok(());
        }
        let link = GrpcLink::new(
            self.world,
            &self.topology.nodes,
            &self.topology.cluster_token,
            DEFAULT_LINK_DEADLINE,
        )?
        .for_run(self.run_id);
        for (agent, token) in &prepared.restore {
            link.hand_over(agent, token.clone()).await?;
        }
        Ok(())
    }

    fn url(&self, node: &str) -> Result<String, NodeError> {
        self.topology
            .nodes
            .get(node)
            .cloned()
            .ok_or_else(|| NodeError::Unroutable(format!("node {node}")))
    }
}

/// The receipts of the allows among `receipts` (canonical receipt lines, as
/// a bundle holds them) that `stored` (receipt bodies in trust-control)
/// lacks, and how many allows there are.
pub fn unstored_allows(receipts: &[String], stored: &BTreeSet<Vec<u8>>) -> (usize, Vec<String>) {
    let mut allows = 0;
    let mut missing = Vec::new();
    for line in receipts {
        let verdict = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|r| {
                r["body"]["decision"]["verdict"]
                    .as_str()
                    .map(str::to_string)
            });
        // A line that does not parse is counted as an allow, so it must be stored.
        if verdict.as_deref().is_none_or(|v| v == "allow") {
            allows += 1;
            if !stored.contains(line.as_bytes()) {
                missing.push(line.clone());
            }
        }
    }
    (allows, missing)
}

/// After a fault run: resumes trust-control if a stall outlived the run,
/// then checks that every allow of the bundle has its receipt in
/// trust-control (nothing acknowledged was lost to a fault); answers the
/// number of allows checked.
pub async fn audit_receipts(
    cluster: &Mutex<LocalCluster>,
    topology: &Topology,
    receipts: &[String],
) -> Result<usize, NodeError> {
    tokio::task::block_in_place(|| lock(cluster).signal_trust_control("CONT"))?;
    let client = TrustClient::connect_lazy(
        &topology.trust_url,
        &topology.trust_token,
        TrustClientConfig::default(),
    )
    .map_err(NodeError::Authority)?;
    let mut stored = BTreeSet::new();
    let mut after = 0;
    loop {
        let page = client
            .list_receipts(after, 1_000)
            .await
            .map_err(NodeError::Authority)?;
        stored.extend(page.receipts.into_iter().map(|r| r.body));
        match page.next_after_seq {
            Some(next) => after = next,
            None => break,
        }
    }
    let (allows, missing) = unstored_allows(receipts, &stored);
    if let Some(first) = missing.first() {
        return Err(NodeError::Remote {
            target: "trust-control".to_string(),
            cause: format!(
                "{} of {allows} admitted calls have no receipt in trust-control after the faults; the first: {first}",
                missing.len()
            ),
        });
    }
    tracing::info!(allows, "every admitted call's receipt is in trust-control");
    Ok(allows)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the audit names an allow whose receipt trust-control lacks and ignores denies.
    #[test]
    fn an_allow_without_its_stored_receipt_is_named() {
        let allow = r#"{"body":{"decision":{"verdict":"allow"}},"id":"a"}"#.to_string();
        let deny = r#"{"body":{"decision":{"verdict":"deny"}},"id":"d"}"#.to_string();
        let stored = BTreeSet::new();
        let (allows, missing) = unstored_allows(&[allow.clone(), deny.clone()], &stored);
        assert_eq!((allows, missing), (1, vec![allow.clone()]));
        let stored: BTreeSet<Vec<u8>> = [allow.as_bytes().to_vec()].into();
        assert_eq!(unstored_allows(&[allow, deny], &stored), (1, Vec::new()));
    }
}
