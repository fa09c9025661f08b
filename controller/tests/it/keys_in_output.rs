//! Secret material never reaches output: a run of the triangular scenario,
//! in process and across local node processes, with every log level on,
//! prints no arena private key (authority, kernels, agents) in any form we
//! can derive, on standard output, standard error (the node and
//! trust-control processes share it) or in any bundle file.

use crate::util;

use chio_kernel::keys::derive_arena_key;
use util::{explain, repo_path, tree};

/// Hex and byte renderings of every private key the triangular run uses.
fn secret_renderings() -> Vec<String> {
    let seed = 3; // rng_seed of three_agent_triangular_delegation.toml
    let mut keys = vec![derive_arena_key(seed, "authority", "arena")];
    for kernel in ["kernel-a", "kernel-b", "kernel-c"] {
        keys.push(derive_arena_key(seed, "kernel", kernel));
    }
    for agent in ["alice", "bob", "carol"] {
        keys.push(derive_arena_key(seed, "agent", agent));
    }
    let mut out = Vec::new();
    for key in keys {
        let secret = key.to_bytes();
        out.push(hex::encode(secret));
        out.push(hex::encode_upper(secret));
        out.push(format!("{secret:?}"));
        out.push(hex::encode(key.to_keypair_bytes()));
    }
    out
}

// No private key appears in the output or the bundle of an embedded or a local-topology run at trace level.
#[test]
fn no_private_key_in_output_or_bundle() {
    let scenario = repo_path("scenarios/three_agent_triangular_delegation.toml");
    let text = std::fs::read_to_string(&scenario).unwrap();
    assert!(
        text.contains("rng_seed = 3\n"),
        "the test derives keys from seed 3"
    );
    let secrets = secret_renderings();
    for topology in [None, Some("local")] {
        let tmp = tempfile::tempdir().unwrap();
        let mut args = vec![
            "arena",
            "run",
            scenario.to_str().unwrap(),
            "--out",
            "bundle",
        ];
        if let Some(t) = topology {
            args.extend(["--topology", t]);
        }
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_chio"))
            .args(&args)
            .current_dir(tmp.path())
            .env("RUST_LOG", "trace")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
        let mut haystack = String::from_utf8_lossy(&output.stdout).into_owned();
        haystack.push_str(&String::from_utf8_lossy(&output.stderr));
        assert!(haystack.len() > 1000, "trace logging produced output");
        for (path, bytes) in tree(&tmp.path().join("bundle")) {
            haystack.push_str(&path);
            haystack.push_str(&String::from_utf8_lossy(&bytes));
        }
        for secret in &secrets {
            assert!(
                !haystack.contains(secret.as_str()),
                "a private key rendering appears in the {topology:?} run's output"
            );
        }
    }
}
