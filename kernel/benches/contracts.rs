//! What checking tool contracts costs on the kernel's allow path.
//!
//! Two kernels in one process, identical but for their tool catalog: one
//! checks every call against its tool's declared input schema (an object
//! schema with typed, bounded properties and no others, the shape an MCP
//! server declares), the other has no catalog and checks none. Rounds
//! alternate which kernel goes first, and each round times the same number
//! of allow evaluations on each, with requests signed before the clock
//! starts; the figure is the median over rounds of the per-round ratio
//! (with schema / without), so load that drifts during the run moves both
//! sides of a ratio alike. Before measuring, each kernel is probed: both
//! admit the call, and only the checking kernel refuses arguments its
//! schema forbids, so the figure times the check and not a branch around it.
//!
//! Run: `cargo bench -p chio-kernel --bench contracts` (add `-- --quick` for
//! fewer rounds).

#[path = "../tests/it/util/mod.rs"]
mod util;

use std::time::{Duration, Instant};

use chio_kernel::contract::{ToolCatalog, ToolContract};
use chio_kernel::stores::KernelStores;
use chio_kernel::{AdmissionTicket, CapabilityToken, Kernel, ToolCallRequest, ToolOutput, Verdict};
use serde_json::{json, Value};
use util::*;

fn catalog() -> ToolCatalog {
    let contract: ToolContract = serde_json::from_value(json!({
        "name": "read_file",
        "description": "Reads the file at path.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "maxLength": 4096},
                "encoding": {"enum": ["utf-8", "base64"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 1048576},
                "follow": {"type": "boolean"}
            },
            "required": ["path"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    }))
    .expect("bench contract");
    let mut catalog = ToolCatalog::new();
    catalog
        .entry("files".to_string())
        .or_default()
        .insert(contract.name.clone(), contract);
    catalog
}

fn kernel_with(tools: Option<ToolCatalog>) -> Kernel {
    let mut config = kernel_config(vec![]);
    config.tools = tools;
    Kernel::new(config, KernelStores::in_memory()).expect("bench kernel")
}

fn echo(_: &AdmissionTicket) -> Result<ToolOutput, String> {
    Ok(ToolOutput {
        content: json!({"content": "hello"}),
        label: None,
        integrity: None,
        performed: true,
        received: true,
    })
}

fn arguments() -> Value {
    json!({"path": "/workspace/a.txt", "encoding": "utf-8", "limit": 4096, "follow": false})
}

fn requests(cap: &CapabilityToken, prefix: &str, n: usize) -> Vec<ToolCallRequest> {
    (0..n)
        .map(|i| {
            request(
                "alice",
                cap,
                "files",
                "read_file",
                arguments(),
                &format!("{prefix}-{i}"),
            )
        })
        .collect()
}

fn timed(kernel: &mut Kernel, requests: &[ToolCallRequest]) -> Duration {
    let start = Instant::now();
    for request in requests {
        let decision = kernel.evaluate(request, NOW_MS, &mut echo);
        std::hint::black_box(&decision);
    }
    start.elapsed()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, per_round) = if quick { (5, 100) } else { (21, 300) };
    let cap = issue("cap-alice", "alice", files_scope());
    let mut with = kernel_with(Some(catalog()));
    let mut without = kernel_with(None);

    for (name, kernel) in [("with", &mut with), ("without", &mut without)] {
        let probe = request("alice", &cap, "files", "read_file", arguments(), "probe");
        let decision = kernel.evaluate(&probe, NOW_MS, &mut echo);
        assert_eq!(
            decision.verdict,
            Verdict::Allow,
            "{name}: {:?}",
            decision.reason
        );
        let extra = json!({"path": "/workspace/a.txt", "mode": "0777"});
        let probe = request("alice", &cap, "files", "read_file", extra, "probe-extra");
        let decision = kernel.evaluate(&probe, NOW_MS, &mut echo);
        let refused = decision.verdict == Verdict::Deny;
        assert_eq!(refused, name == "with", "{name}: {:?}", decision.reason);
    }
    // Warm both kernels' caches and allocators before the first round.
    timed(&mut with, &requests(&cap, "warm-with", per_round));
    timed(&mut without, &requests(&cap, "warm-without", per_round));

    let mut ratios = Vec::new();
    let mut with_us = Vec::new();
    let mut without_us = Vec::new();
    for round in 0..rounds {
        let a = requests(&cap, &format!("with-{round}"), per_round);
        let b = requests(&cap, &format!("without-{round}"), per_round);
        let (t_with, t_without) = if round % 2 == 0 {
            let t = timed(&mut with, &a);
            (t, timed(&mut without, &b))
        } else {
            let t = timed(&mut without, &b);
            (timed(&mut with, &a), t)
        };
        let per = |t: Duration| t.as_secs_f64() * 1e6 / per_round as f64;
        with_us.push(per(t_with));
        without_us.push(per(t_without));
        ratios.push(t_with.as_secs_f64() / t_without.as_secs_f64());
    }
    let (w, wo, r) = (median(with_us), median(without_us), median(ratios.clone()));
    let spread = (
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    );
    println!("kernel allow path, tool contract checked against not checked, {rounds} interleaved rounds of {per_round} evaluations each");
    println!(
        "with schema check     {w:>9.1} us/eval  {:>9.0} evals/s",
        1e6 / w
    );
    println!(
        "without schema check  {wo:>9.1} us/eval  {:>9.0} evals/s",
        1e6 / wo
    );
    println!(
        "ratio (median of per-round ratios): {r:.3}x  (rounds ranged {:.3}x to {:.3}x; goal at most 1.1x)",
        spread.0, spread.1
    );
}
