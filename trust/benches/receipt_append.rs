//! Receipt append cost, measured in one run on one machine: a bare rusqlite
//! insert with the store's durability (WAL, `synchronous=FULL`, one row per
//! transaction) against appends through the trust-control gRPC service
//! (loopback TCP, bearer token, SQLite store with group commit), sequential
//! and concurrent. Prints latency percentiles, throughput, the writer's mean
//! batch size and the ratios.
//!
//! Run: `cargo bench -p chio-trust --bench receipt_append`
//! (`RECEIPT_BENCH_N` sets the sequential count, default 1000;
//! `RECEIPT_BENCH_TASKS` the concurrent callers, default 32).

use std::time::{Duration, Instant};

use chio_trust::model::ReceiptRecord;
use chio_trust::{
    serve, BearerToken, SqliteTrustStore, TrustClient, TrustClientConfig, TrustStore,
};
use rusqlite::{params, Connection};
use tokio::net::TcpListener;

const TOKEN: &str = "bench-token-0123456789abcdef";

/// Latency summary of one series.
struct Series {
    name: &'static str,
    count: usize,
    wall: Duration,
    latencies: Vec<Duration>,
}

impl Series {
    fn mean(&self) -> Duration {
        self.wall / self.count as u32
    }

    fn throughput(&self) -> f64 {
        self.count as f64 / self.wall.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted[index]
    }

    fn print(&self) {
        println!(
            "{:<34} n={:<6} wall={:>8.1} ms  per-op={:>7.3} ms  p50={:>7.3} ms  p99={:>7.3} ms  {:>8.0} ops/s",
            self.name,
            self.count,
            ms(self.wall),
            ms(self.mean()),
            ms(self.percentile(0.50)),
            ms(self.percentile(0.99)),
            self.throughput()
        );
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}

/// A receipt-sized canonical JSON body (about 600 bytes).
fn body(tag: &str, n: usize) -> Vec<u8> {
    format!(
        "{{\"capability_id\":\"cap-{n:08}\",\"decision\":{{\"guard\":null,\"reason\":\"allowed\",\"verdict\":\"allow\"}},\
         \"kernel_key\":\"{}\",\"parameter_hash\":\"{}\",\"receipt_id\":\"{tag}-{n}\",\"server\":\"workspace-fs\",\
         \"signature\":\"{}\",\"timestamp\":\"2026-01-01T00:00:00.{n:03}Z\",\"tool\":\"read_file\"}}",
        "ab".repeat(32),
        "cd".repeat(32),
        "ef".repeat(64)
    )
    .into_bytes()
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .filter(|value| *value > 0)
        .unwrap_or(default)
}

/// Bare rusqlite: same durability, one row per transaction, no service.
fn bare_rusqlite(dir: &std::path::Path, count: usize) -> Series {
    let conn = Connection::open(dir.join("bare.db")).expect("open");
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
        .expect("wal");
    assert_eq!(mode, "wal");
    conn.pragma_update(None, "synchronous", "FULL")
        .expect("synchronous");
    conn.execute_batch(
        "CREATE TABLE receipts (seq INTEGER PRIMARY KEY AUTOINCREMENT,
         receipt_id TEXT NOT NULL UNIQUE, body BLOB NOT NULL);",
    )
    .expect("schema");
    let mut latencies = Vec::with_capacity(count);
    let started = Instant::now();
    for n in 0..count {
        let body = body("bare", n);
        let one = Instant::now();
        conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
        conn.prepare_cached("INSERT INTO receipts (receipt_id, body) VALUES (?1, ?2)")
            .expect("prepare")
            .execute(params![format!("bare-{n}"), body])
            .expect("insert");
        conn.execute_batch("COMMIT").expect("commit");
        latencies.push(one.elapsed());
    }
    Series {
        name: "bare rusqlite insert (1 row/txn)",
        count,
        wall: started.elapsed(),
        latencies,
    }
}

async fn service_sequential(client: &TrustClient, count: usize) -> Series {
    let mut latencies = Vec::with_capacity(count);
    let started = Instant::now();
    for n in 0..count {
        let record = ReceiptRecord {
            receipt_id: format!("seq-{n}"),
            body: body("seq", n),
        };
        let one = Instant::now();
        client.append_receipts(vec![record]).await.expect("append");
        latencies.push(one.elapsed());
    }
    Series {
        name: "service append, 1 caller",
        count,
        wall: started.elapsed(),
        latencies,
    }
}

async fn service_concurrent(clients: &[TrustClient], tasks: usize, per_task: usize) -> Series {
    let started = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let client = clients[task % clients.len()].clone();
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(per_task);
                for n in 0..per_task {
                    let record = ReceiptRecord {
                        receipt_id: format!("con-{task}-{n}"),
                        body: body("con", n),
                    };
                    let one = Instant::now();
                    client.append_receipts(vec![record]).await.expect("append");
                    latencies.push(one.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(tasks * per_task);
    for handle in handles {
        latencies.extend(handle.await.expect("task"));
    }
    Series {
        name: "service append, concurrent callers",
        count: tasks * per_task,
        wall: started.elapsed(),
        latencies,
    }
}

fn main() {
    let count = env_count("RECEIPT_BENCH_N", 1_000);
    let tasks = env_count("RECEIPT_BENCH_TASKS", 32);
    let dir = tempfile::tempdir().expect("temp dir");
    println!("receipt append benchmark: {count} sequential appends, {tasks} concurrent callers");

    let bare = bare_rusqlite(dir.path(), count);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (sequential, concurrent, batch_mean) = runtime.block_on(async {
        let store = SqliteTrustStore::open(dir.path().join("service.db")).expect("open store");
        let stats = store.clone();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let token = BearerToken::new(TOKEN).expect("token");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(store, token.clone(), listener, async {
            let _ = stopped.await;
        }));
        let mut clients = Vec::new();
        for _ in 0..4 {
            clients.push(
                TrustClient::connect(&url, &token, TrustClientConfig::default())
                    .await
                    .expect("connect"),
            );
        }
        // Warm the connections and the statement cache.
        for (n, client) in clients.iter().enumerate() {
            client
                .append_receipts(vec![ReceiptRecord {
                    receipt_id: format!("warm-{n}"),
                    body: body("warm", n),
                }])
                .await
                .expect("warm up");
        }
        let sequential = service_sequential(&clients[0], count).await;
        let before = stats.writer_stats();
        let per_task = count.div_ceil(tasks).max(50);
        let concurrent = service_concurrent(&clients, tasks, per_task).await;
        let after = stats.writer_stats();
        let batch_mean =
            (after.jobs - before.jobs) as f64 / (after.batches - before.batches).max(1) as f64;
        let expected = (count + tasks * per_task + clients.len()) as u64;
        assert_eq!(
            clients[0].count_receipts().await.expect("count"),
            expected,
            "every acknowledged append must be stored"
        );
        let _ = stop.send(());
        server.await.expect("server task").expect("server");
        (sequential, concurrent, batch_mean)
    });

    bare.print();
    sequential.print();
    concurrent.print();
    println!(
        "concurrent writer mean batch: {batch_mean:.1} appends per transaction (one fsync each)"
    );
    println!(
        "ratio service/bare, 1 caller:        {:.2}x per-op latency",
        sequential.mean().as_secs_f64() / bare.mean().as_secs_f64()
    );
    println!(
        "ratio service/bare, concurrent:      {:.2}x throughput (group commit)",
        concurrent.throughput() / bare.throughput()
    );
}
