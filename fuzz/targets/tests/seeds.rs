//! The seeds reach past the decoders: each target accepts its valid seeds
//! (a scenario loads and resolves, a token verifies and is allowed, a call
//! is allowed, a session of trust-control requests is answered) and refuses
//! its hostile ones with a reason, so the fuzzer starts from inputs that
//! exercise the validation and evaluation code, not only the parsers.

use chio_fuzz_targets::seeds::seeds;
use chio_fuzz_targets::{Reach, TARGETS};

/// Runs every seed of `target` and returns its reach by seed name.
fn reach(target: &str) -> Vec<(String, Reach)> {
    let run = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("no target {target}"));
    let seeds = seeds(target);
    assert!(seeds.len() >= 8, "{target} has too few seeds");
    seeds
        .into_iter()
        .map(|(name, bytes)| (name, run(&bytes)))
        .collect()
}

/// Asserts the named seeds reached exactly what is expected.
fn expect(target: &str, expected: &[(&str, Reach)]) {
    let reached = reach(target);
    for (name, want) in expected {
        let got = reached
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| *r)
            .unwrap_or_else(|| panic!("{target} has no seed {name}"));
        assert_eq!(got, *want, "{target} seed {name}");
    }
}

// Proves every reference scenario loads and resolves, and hostile edits are refused.
#[test]
fn scenario_seeds_load_or_are_refused() {
    let reached = reach("scenario_loader");
    let accepted = reached
        .iter()
        .filter(|(_, r)| *r == Reach::Accepted)
        .count();
    assert!(accepted >= 15, "only {accepted} scenario seeds load");
    expect(
        "scenario_loader",
        &[
            ("walking_skeleton", Reach::Accepted),
            ("fuzz-world", Reach::Accepted),
            ("escaping-fixtures", Reach::Refused),
            ("negative-seed", Reach::Refused),
            ("inline-secret", Reach::Refused),
            ("unknown-guard", Reach::Refused),
            ("not-utf8", Reach::Undecoded),
        ],
    );
}

// Proves issued tokens are allowed and every rearranged signed piece is refused.
#[test]
fn token_seeds_are_allowed_or_refused() {
    expect(
        "capability_token",
        &[
            ("cap-alice", Reach::Accepted),
            ("cap-dave", Reach::Accepted),
            ("cap-mallory", Reach::Accepted),
            ("too-deep", Reach::Refused),
            ("subject-swapped", Reach::Refused),
            ("chain-truncated", Reach::Refused),
            ("scope-widened", Reach::Refused),
            ("signature-of-another", Reach::Refused),
            ("empty-object", Reach::Undecoded),
        ],
    );
}

// Proves valid envelopes pass the capability check and malformed ones are refused.
#[test]
fn envelope_seeds_pass_or_are_refused() {
    expect(
        "portable_envelope",
        &[
            ("reference-fixture", Reach::Accepted),
            ("cap-bob", Reach::Accepted),
            ("no-clock", Reach::Accepted),
            ("integer-past-2-53", Reach::Undecoded),
            ("unknown-field", Reach::Undecoded),
            ("array-for-link", Reach::Undecoded),
        ],
    );
}

// Proves NodeControl seeds reach the kernel: allowed calls, guarded denies, refusals.
#[test]
fn node_control_seeds_reach_the_kernel() {
    expect(
        "node_control",
        &[
            ("call-allowed", Reach::Accepted),
            ("call-dotfile", Reach::Refused),
            ("delegate-then-call", Reach::Accepted),
            ("message-then-revoke", Reach::Accepted),
            ("reload-then-call", Reach::Accepted),
            ("change-fixture-then-call", Reach::Accepted),
            ("unknown-agent", Reach::Refused),
            ("load-foreign-node", Reach::Refused),
            ("malformed-arguments", Reach::Undecoded),
            ("delegate-without-attenuation", Reach::Undecoded),
        ],
    );
}

// Proves KernelLink seeds reach the kernel: signed requests allowed, stolen ones denied.
#[test]
fn kernel_link_seeds_reach_the_kernel() {
    expect(
        "kernel_link",
        &[
            ("evaluate-allowed", Reach::Accepted),
            ("together-replayed", Reach::Accepted),
            ("together-too-many", Reach::Undecoded),
            ("evaluate-dotfile", Reach::Refused),
            ("evaluate-unknown-kernel", Reach::Refused),
            ("hand-over-then-evaluate", Reach::Accepted),
            ("stolen-token", Reach::Refused),
            ("malformed-request", Reach::Undecoded),
        ],
    );
}

// Proves every trust-control seed session is answered by the service.
#[test]
fn trust_seeds_are_answered() {
    for (name, reached) in reach("trust_control") {
        assert_eq!(reached, Reach::Accepted, "trust_control seed {name}");
    }
}
