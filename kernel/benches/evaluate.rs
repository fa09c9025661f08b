//! Benchmark of the kernel's evaluation paths against the signature work
//! they cannot avoid.
//!
//! Measures, in one run: the allow path at delegation depth 0, 1 and 3 with
//! the verified-signature cache off and on; the main deny paths; and bare
//! `verify_strict` and `sign` costs. Afterwards it reads criterion's
//! estimates and prints, per path, evaluations per second and the ratio of
//! the evaluation to its unavoidable signature work (each verification the
//! path performs plus the receipt signature).

#[path = "../tests/it/util/mod.rs"]
mod util;

use std::path::{Path, PathBuf};
use std::time::Duration;

use chio_kernel::keys::derive_arena_key;
use chio_kernel::stores::KernelStores;
use chio_kernel::token::Attenuation;
use chio_kernel::{AdmissionTicket, CapabilityToken, Kernel, ToolOutput, Verdict};
use criterion::{BatchSize, Criterion};
use ed25519_dalek::{Signer, Verifier};
use serde_json::json;
use util::*;

fn chain(depth: usize) -> (CapabilityToken, String) {
    let names = ["alice", "bob", "carol", "dave"];
    let mut cap = issue_with(
        "cap-alice",
        "alice",
        files_scope(),
        &authority(),
        None,
        10_000,
    );
    for i in 0..depth {
        cap = cap
            .delegate(
                &agent_key(names[i]),
                &agent_pk(names[i + 1]),
                &Attenuation::default(),
                &format!("cap-{}", names[i + 1]),
                NOW_MS - 10_000,
            )
            .expect("bench delegation");
    }
    (cap, names[depth].to_string())
}

fn bench_kernel(cache: usize, trusted: bool) -> Kernel {
    let mut config = kernel_config(vec![]);
    config.signature_cache_capacity = cache;
    if !trusted {
        config.trusted_issuers.clear();
    }
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

/// One evaluation path: a kernel, the capability presented, and the call.
struct PathSetup {
    kernel: Kernel,
    cap: CapabilityToken,
    agent: String,
    tool: &'static str,
    now_ms: u64,
    fresh_ids: bool,
}

fn run_path(c: &mut Criterion, name: &str, setup: PathSetup) {
    let PathSetup {
        mut kernel,
        cap,
        agent,
        tool,
        now_ms,
        fresh_ids,
    } = setup;
    let mut n = 0u64;
    let args = json!({"path": "/workspace/a.txt"});
    let fixed = request(&agent, &cap, "files", tool, args.clone(), "fixed");
    // Each path must take the branch it is named for, or the figure times
    // something else: probe it once before measuring.
    let expected = if name.starts_with("allow_") {
        Verdict::Allow
    } else {
        Verdict::Deny
    };
    let probe = if fresh_ids {
        request(&agent, &cap, "files", tool, args.clone(), "probe")
    } else {
        // A replay path: the first use of the fixed id is the allow it replays.
        kernel.evaluate(&fixed, now_ms, &mut echo);
        fixed.clone()
    };
    let decision = kernel.evaluate(&probe, now_ms, &mut echo);
    assert_eq!(
        decision.verdict, expected,
        "bench path {name} takes another branch: {:?}",
        decision.reason
    );
    c.bench_function(name, |b| {
        b.iter_batched(
            || {
                n += 1;
                if fresh_ids {
                    request(&agent, &cap, "files", tool, args.clone(), &format!("r{n}"))
                } else {
                    fixed.clone()
                }
            },
            |req| kernel.evaluate(&req, now_ms, &mut echo),
            BatchSize::SmallInput,
        )
    });
}

fn setup(
    kernel: Kernel,
    cap: &CapabilityToken,
    agent: &str,
    tool: &'static str,
    now_ms: u64,
) -> PathSetup {
    PathSetup {
        kernel,
        cap: cap.clone(),
        agent: agent.to_string(),
        tool,
        now_ms,
        fresh_ids: true,
    }
}

fn benches(c: &mut Criterion) {
    for depth in [0usize, 1, 3] {
        for (cache, label) in [(0usize, "nocache"), (4096, "cache")] {
            let (cap, agent) = chain(depth);
            let path = setup(bench_kernel(cache, true), &cap, &agent, "read_file", NOW_MS);
            run_path(c, &format!("allow_depth{depth}_{label}"), path);
        }
    }
    let (cap, agent) = chain(0);
    let path = setup(bench_kernel(0, false), &cap, &agent, "read_file", NOW_MS);
    run_path(c, "deny_untrusted_issuer", path);
    let mut bad = cap.clone();
    let mut sig = hex::decode(&bad.signature).unwrap();
    sig[3] ^= 1;
    bad.signature = hex::encode(sig);
    let path = setup(bench_kernel(0, true), &bad, &agent, "read_file", NOW_MS);
    run_path(c, "deny_bad_signature", path);
    let late = (NOW_SECS + 7200) * 1000;
    let path = setup(bench_kernel(0, true), &cap, &agent, "read_file", late);
    run_path(c, "deny_expired", path);
    let path = setup(bench_kernel(0, true), &cap, &agent, "delete_file", NOW_MS);
    run_path(c, "deny_scope", path);
    let mut path = setup(bench_kernel(0, true), &cap, &agent, "read_file", NOW_MS);
    path.fresh_ids = false;
    run_path(c, "deny_replay", path);

    let key = derive_arena_key(SEED, "agent", "bench");
    let message = vec![7u8; 300];
    let signature = key.sign(&message);
    let public = key.verifying_key();
    for n in [1usize, 2, 3, 5] {
        c.bench_function(&format!("bare_verify_strict_x{n}"), |b| {
            b.iter(|| {
                for _ in 0..n {
                    public
                        .verify_strict(&message, &signature)
                        .expect("verifies");
                }
            })
        });
    }
    c.bench_function("bare_sign_x1", |b| b.iter(|| key.sign(&message)));
    let _ = public.verify(&message, &signature);
}

fn output_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("criterion")
}

fn mean_ns(dir: &Path, name: &str) -> Option<f64> {
    let text = std::fs::read_to_string(dir.join(name).join("new/estimates.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["mean"]["point_estimate"].as_f64()
}

fn main() {
    let dir = output_dir();
    let mut c = Criterion::default()
        .output_directory(&dir)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args();
    benches(&mut c);
    c.final_summary();
    let Some(verify) = mean_ns(&dir, "bare_verify_strict_x1") else {
        return;
    };
    let sign = mean_ns(&dir, "bare_sign_x1").unwrap_or(0.0);
    println!();
    println!("path                      evals/s   mean us  verifies  sig work us  ratio(all sig)  ratio(verify only)");
    let paths: [(&str, usize); 11] = [
        ("allow_depth0_nocache", 2),
        ("allow_depth0_cache", 1),
        ("allow_depth1_nocache", 3),
        ("allow_depth1_cache", 1),
        ("allow_depth3_nocache", 5),
        ("allow_depth3_cache", 1),
        ("deny_untrusted_issuer", 0),
        ("deny_bad_signature", 1),
        ("deny_expired", 1),
        ("deny_scope", 2),
        ("deny_replay", 2),
    ];
    for (name, verifies) in paths {
        let Some(mean) = mean_ns(&dir, name) else {
            continue;
        };
        let verify_work = verifies as f64 * verify;
        let work = verify_work + sign;
        println!(
            "{name:<24} {:>9.0} {:>9.1} {verifies:>9} {:>12.1} {:>15.2} {:>19}",
            1e9 / mean,
            mean / 1e3,
            work / 1e3,
            mean / work,
            if verifies > 0 {
                format!("{:.2}", mean / verify_work)
            } else {
                "-".into()
            }
        );
    }
    println!(
        "bare verify_strict: {:.1} us, bare sign: {:.1} us",
        verify / 1e3,
        sign / 1e3
    );
}
