//! Scale benchmark of the in-process arena (issue: runtime at scale).
//!
//! Generates scenarios of 1,000 agents spread over 10 kernels on 10 logical
//! nodes, with 1,000, 10,000 and 100,000 steps (nine reads in ten allowed,
//! one in ten a forbidden path denied), runs each in the embedded topology
//! through the same driver `chio arena run` uses, writing the bundle as the
//! run goes as `chio arena run` does, and prints steps per second, the cost
//! per step, the ratio of each size's cost per step to the smallest size's
//! (measured in the same invocation), and each run's peak resident memory. Each size runs in a child process of this binary so its
//! peak memory is its own.
//!
//! Run: `cargo bench -p chio-controller --bench scale` (sizes can be
//! narrowed with `CHIO_SCALE_SIZES=1000,10000`).

use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

const AGENTS: usize = 1_000;
const KERNELS: usize = 10;

fn scenario_text(steps: usize) -> String {
    let mut s = String::new();
    writeln!(
        s,
        "schema_version = \"chio.arena.scenario/v1\"\nid = \"scale_{steps}\"\ntitle = \"scale benchmark\"\nrng_seed = 7\nvirtual_clock_start = \"2026-01-01T00:00:00.000Z\"\n\n[determinism]\nrng_seed = 7\nvirtual_clock_start = \"2026-01-01T00:00:00.000Z\"\nscheduler = \"deterministic-multi-v1\"\nlocale = \"C\"\n"
    )
    .unwrap();
    writeln!(s, "[[guards]]\nid = \"no-dotfiles\"\nkind = \"forbidden-path\"\n\n[guards.config]\nglobs = [\"**/.env\"]\n").unwrap();
    for k in 0..KERNELS {
        writeln!(
            s,
            "[[nodes]]\nid = \"node-{k}\"\n\n[[kernels]]\nid = \"kernel-{k}\"\nnode = \"node-{k}\"\nguards = [\"no-dotfiles\"]\n\n[[servers]]\nid = \"ws-{k}\"\nkernel = \"kernel-{k}\"\nkind = \"workspace\"\nfixtures = \"fixtures\"\n"
        )
        .unwrap();
    }
    for a in 0..AGENTS {
        let k = a % KERNELS;
        writeln!(
            s,
            "[[agents]]\nid = \"agent-{a:04}\"\nrole = \"worker\"\nmodel = \"recorded:worker\"\nseed_prompt_ref = \"prompts/worker.txt\"\nkernel = \"kernel-{k}\"\n\n[[grants]]\nid = \"grant-{a:04}\"\nagent = \"agent-{a:04}\"\nserver = \"ws-{k}\"\ntools = [\"read_file\"]\npath_prefix = \"/workspace/\"\n"
        )
        .unwrap();
    }
    for i in 0..steps {
        let a = i % AGENTS;
        let k = a % KERNELS;
        let (path, verdict) = if i % 10 == 9 {
            ("/workspace/.env", "deny")
        } else {
            ("/workspace/notes.txt", "allow")
        };
        writeln!(
            s,
            "[[steps]]\nid = \"s{i:06}\"\nagent = \"agent-{a:04}\"\nserver = \"ws-{k}\"\ntool = \"read_file\"\narguments = {{ path = \"{path}\" }}\nexpect_verdict = \"{verdict}\"\n"
        )
        .unwrap();
    }
    s
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn child(steps: usize) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("fixtures")).unwrap();
    std::fs::write(dir.path().join("fixtures/notes.txt"), "scale notes\n").unwrap();
    std::fs::write(dir.path().join("fixtures/.env"), "SETTING=1\n").unwrap();
    let file = dir.path().join("scale.toml");
    std::fs::write(&file, scenario_text(steps)).unwrap();

    let load_start = Instant::now();
    let scenario = chio_arena::load_scenario(&file).expect("generated scenario validates");
    let inputs = chio_controller::driver::RunInputs::load(&scenario).unwrap();
    let load_s = load_start.elapsed().as_secs_f64();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let run_start = Instant::now();
    let result = runtime
        .block_on(chio_controller::driver::run_embedded(
            &scenario,
            &inputs,
            chio_controller::driver::RunOptions::keep_going(false),
            &std::collections::BTreeMap::new(),
            &dir.path().join("bundle"),
        ))
        .expect("run completes")
        .expect("bundle is written");
    let run_s = run_start.elapsed().as_secs_f64();
    assert_eq!(
        result.bundle.manifest.receipt_count as usize, steps,
        "every step has one receipt"
    );
    assert!(result.bundle.manifest.mismatches.is_empty());
    println!("RESULT {steps} {run_s:.6} {load_s:.6} {}", peak_rss_kib());
}

fn main() {
    if let Ok(size) = std::env::var("CHIO_SCALE_CHILD") {
        child(size.parse().expect("size"));
        return;
    }
    let sizes: Vec<usize> = std::env::var("CHIO_SCALE_SIZES")
        .unwrap_or_else(|_| "1000,10000,100000".to_string())
        .split(',')
        .map(|s| s.trim().parse().expect("sizes are integers"))
        .collect();
    let exe = std::env::current_exe().unwrap();
    println!("scale: {AGENTS} agents, {KERNELS} kernels on {KERNELS} nodes, embedded topology");
    println!(
        "{:>8} {:>10} {:>12} {:>12} {:>10} {:>12} {:>14}",
        "steps", "run s", "steps/s", "us/step", "vs first", "load s", "peak RSS MiB"
    );
    let mut first_cost = None;
    for size in sizes {
        let out = Command::new(&exe)
            .env("CHIO_SCALE_CHILD", size.to_string())
            .output()
            .expect("child runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find(|l| l.starts_with("RESULT "))
            .unwrap_or_else(|| {
                panic!(
                    "child failed: {}\n{}",
                    stdout,
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        let f: Vec<&str> = line.split_whitespace().collect();
        let run_s: f64 = f[2].parse().unwrap();
        let load_s: f64 = f[3].parse().unwrap();
        let rss_kib: f64 = f[4].parse().unwrap();
        let cost = run_s / size as f64 * 1e6;
        let first = *first_cost.get_or_insert(cost);
        println!(
            "{:>8} {:>10.3} {:>12.0} {:>12.1} {:>9.2}x {:>12.3} {:>14.1}",
            size,
            run_s,
            size as f64 / run_s,
            cost,
            cost / first,
            load_s,
            rss_kib / 1024.0
        );
    }
}
