//! The seed inputs of every target: valid documents, tokens, envelopes and
//! request sequences built from the repository's fixtures and the fixed
//! worlds of [`crate::world`] and [`crate::node`], and hostile neighbours of
//! each (a field past its limit, a signature that belongs to another token,
//! a request for an unknown agent). `examples/seed_corpora.rs` writes them
//! into `fuzz/corpus/<target>/`, where libFuzzer starts from them; the
//! tests run each through its target.
//!
//! The request sequences of the node and trust-control targets are built in
//! [`node`] and [`trust`]; the documents, tokens and envelopes here.

use std::path::Path;

use serde_json::{json, Value};

use chio_kernel::portable::reference_fixture_bytes;
use chio_kernel::CapabilityToken;

use crate::scenario::scenarios_dir;
use crate::world::{token_world, NOW_SECS};

pub mod node;
pub mod trust;

/// One named seed.
pub type Seed = (String, Vec<u8>);

/// The seeds of `target`, by the name of its corpus folder; none for an
/// unknown name.
pub fn seeds(target: &str) -> Vec<Seed> {
    match target {
        "scenario_loader" => scenario_seeds(),
        "capability_token" => token_seeds(),
        "portable_envelope" => envelope_seeds(),
        "node_control" => node::control_seeds(),
        "kernel_link" => node::link_seeds(),
        "trust_control" => trust::trust_seeds(),
        _ => Vec::new(),
    }
}

pub(crate) fn named(name: &str, bytes: Vec<u8>) -> Seed {
    (name.to_string(), bytes)
}

pub(crate) fn json_bytes(value: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(value).expect("a seed value encodes")
}

fn scenario_seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(scenarios_dir())
        .expect("the scenarios folder is readable")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    paths.sort();
    for path in paths {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("scenario");
        seeds.push(named(
            name,
            std::fs::read(&path).expect("a scenario is readable"),
        ));
    }
    seeds.push(named(
        "fuzz-world",
        crate::node::WORLD_TOML.as_bytes().to_vec(),
    ));
    let skeleton =
        std::fs::read_to_string(Path::new(&scenarios_dir()).join("walking_skeleton.toml"))
            .expect("the walking skeleton is readable");
    for (name, from, to) in [
        (
            "escaping-fixtures",
            "fixtures/walking-skeleton",
            "../../etc",
        ),
        ("negative-seed", "rng_seed = 1\n", "rng_seed = -1\n"),
        (
            "bad-clock",
            "2026-01-05T08:00:00.000Z",
            "2026-13-45T99:00:00.000Z",
        ),
        (
            "inline-secret",
            "/workspace/notes.txt",
            "Bearer abcdef1234567890abcdef",
        ),
        (
            "unknown-guard",
            "kind = \"forbidden-path\"",
            "kind = \"forbidden-paths\"",
        ),
    ] {
        seeds.push(named(name, skeleton.replacen(from, to, 1).into_bytes()));
    }
    seeds.push(named(
        "deep-nesting",
        format!("a = {}1{}", "[".repeat(200), "]".repeat(200)).into_bytes(),
    ));
    seeds.push(named("not-utf8", vec![b'i', b'd', b'=', 0xff, 0xfe]));
    seeds
}

fn token_seeds() -> Vec<Seed> {
    let world = token_world();
    let mut seeds: Vec<Seed> = world
        .tokens
        .iter()
        .map(|t| named(&t.id, json_bytes(t)))
        .collect();
    seeds.push(named("too-deep", json_bytes(&world.too_deep)));
    // Signed pieces moved where they do not belong.
    let mut stolen = world.tokens[0].clone();
    stolen.subject = world.tokens[1].subject.clone();
    seeds.push(named("subject-swapped", json_bytes(&stolen)));
    let mut truncated = world.tokens[3].clone();
    truncated.delegation_chain.pop();
    seeds.push(named("chain-truncated", json_bytes(&truncated)));
    let mut widened = world.tokens[2].clone();
    widened.scope = world.tokens[0].scope.clone();
    seeds.push(named("scope-widened", json_bytes(&widened)));
    let mut foreign = world.tokens[0].clone();
    foreign.signature = world.tokens[1].signature.clone();
    seeds.push(named("signature-of-another", json_bytes(&foreign)));
    seeds.push(named("empty-object", b"{}".to_vec()));
    seeds.push(named("huge-integer", {
        let mut value = serde_json::to_value(&world.tokens[0]).expect("a token encodes");
        value["expires_at_ms"] = json!(u64::MAX);
        json_bytes(&value)
    }));
    seeds
}

fn envelope(token: &CapabilityToken, issuer: &str, clock: Option<u64>) -> Value {
    let (server, tool, path) = (
        token.scope.first().map_or("files", |g| g.server.as_str()),
        token
            .scope
            .first()
            .and_then(|g| g.tools.first())
            .map_or("read_file", String::as_str),
        token
            .scope
            .first()
            .and_then(|g| g.path_prefix())
            .unwrap_or("/workspace/"),
    );
    let mut value = json!({
        "request": {
            "request_id": "req-1",
            "server": server,
            "tool": tool,
            "agent_id": token.subject,
            "arguments": { "path": format!("{path}plan.md") }
        },
        "capability": token,
        "trusted_issuers_hex": [issuer],
    });
    if let Some(clock) = clock {
        value["clock_override_unix_secs"] = json!(clock);
    }
    value
}

fn envelope_seeds() -> Vec<Seed> {
    let world = token_world();
    let mut seeds = vec![named("reference-fixture", reference_fixture_bytes())];
    for token in &world.tokens {
        seeds.push(named(
            &token.id,
            json_bytes(&envelope(token, &world.issuer_hex, Some(NOW_SECS))),
        ));
    }
    seeds.push(named(
        "no-clock",
        json_bytes(&envelope(&world.tokens[0], &world.issuer_hex, None)),
    ));
    let mut huge = envelope(&world.tokens[0], &world.issuer_hex, Some(NOW_SECS));
    huge["request"]["arguments"]["amount"] = json!(9_007_199_254_740_993u64);
    seeds.push(named("integer-past-2-53", json_bytes(&huge)));
    let mut unknown = envelope(&world.tokens[2], &world.issuer_hex, Some(NOW_SECS));
    unknown["request"]["extra"] = json!(true);
    seeds.push(named("unknown-field", json_bytes(&unknown)));
    let mut array = envelope(&world.tokens[2], &world.issuer_hex, Some(NOW_SECS));
    array["capability"]["delegation_chain"][0] = json!([1, 2]);
    seeds.push(named("array-for-link", json_bytes(&array)));
    seeds
}
