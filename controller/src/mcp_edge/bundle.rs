//! The session folder as a bundle, written when the session ends.
//!
//! The edge then signs the session's end (`session-end.json`: how many
//! calls `calls.jsonl` holds and their SHA-256, and the SHA-256 of
//! `session.json`, signed by the receipt key, so a call dropped from the
//! end, any byte of either file changed, a guard claimed that never ran or
//! a tool definition the upstream never listed, no longer matches), builds the equivalent scenario (`scenario`), runs it in
//! the embedded topology as `chio arena run --keep-going --out` does and
//! moves the run's bundle into the folder (`inputs/` with the scenario and
//! the sealed files it reads, `inputs/fixtures/secrets/`, `policies/`,
//! `receipts.ndjson`, and `arena.json` last), so `chio arena replay DIR`
//! re-decides every call and compares it with the edge's own record
//! (`verify`).

use std::path::Path;

use chio_arena::bundle::{INPUTS_DIR, MANIFEST_FILE, POLICIES_DIR, RECEIPTS_FILE};
use chio_kernel::canonical::to_canonical_vec;
use chio_kernel::keys::public_key_hex;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::scenario::{session_scenario, PROMPT_FILE, PROMPT_TEXT};
use super::values::SealedFile;
use crate::driver::{run_embedded, RunOptions};

/// Schema id of `session-end.json`.
pub const SESSION_END_SCHEMA: &str = "chio.mcp-session-end/v2";
/// The signed end of a session.
pub const SESSION_END_FILE: &str = "session-end.json";
/// The session's header.
pub const SESSION_FILE: &str = "session.json";
/// The session's calls.
pub const CALLS_FILE: &str = "calls.jsonl";

/// The signed part of `session-end.json`.
pub fn end_body(calls: u64, calls_sha256: &str, session_sha256: &str, kernel_key: &str) -> Value {
    json!({
        "schema": SESSION_END_SCHEMA,
        "calls": calls,
        "calls_sha256": calls_sha256,
        "session_sha256": session_sha256,
        "kernel_key": kernel_key,
    })
}

/// The lines of `calls.jsonl`, each parsed.
pub fn parse_calls(bytes: &[u8]) -> Result<Vec<Value>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "calls.jsonl is not UTF-8".to_string())?;
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map_err(|_| format!("calls.jsonl line {} is not JSON", i + 1))
        })
        .collect()
}

/// Signs the session's end and writes its bundle into `dir`. Every
/// failure is returned as a sentence naming the file or step, never a
/// recorded value.
pub async fn finish(dir: &Path, key: &SigningKey) -> Result<(), String> {
    let calls_bytes =
        std::fs::read(dir.join(CALLS_FILE)).map_err(|e| format!("{CALLS_FILE}: {}", e.kind()))?;
    let calls = parse_calls(&calls_bytes)?;
    let header_bytes = std::fs::read(dir.join(SESSION_FILE))
        .map_err(|e| format!("{SESSION_FILE}: {}", e.kind()))?;
    let body = end_body(
        calls.len() as u64,
        &hex::encode(Sha256::digest(&calls_bytes)),
        &hex::encode(Sha256::digest(&header_bytes)),
        &public_key_hex(key),
    );
    let signed = to_canonical_vec(&body).map_err(|e| e.to_string())?;
    let mut end = body;
    end["signature"] = json!(hex::encode(key.sign(&signed).to_bytes()));
    let text = serde_json::to_string_pretty(&end).map_err(|e| e.to_string())?;
    std::fs::write(dir.join(SESSION_END_FILE), text + "\n")
        .map_err(|e| format!("{SESSION_END_FILE}: {}", e.kind()))?;
    let header: Value = serde_json::from_slice(&header_bytes)
        .map_err(|_| format!("{SESSION_FILE} cannot be read"))?;
    let scenario = session_scenario(&header, &calls)?;
    let work = tempfile::tempdir().map_err(|e| format!("a work folder: {}", e.kind()))?;
    let world = work.path().join("world");
    std::fs::create_dir_all(&world).map_err(|e| format!("a work folder: {}", e.kind()))?;
    std::fs::write(world.join(PROMPT_FILE), PROMPT_TEXT)
        .and_then(|()| std::fs::write(world.join("scenario.toml"), &scenario.text))
        .map_err(|e| format!("the scenario: {}", e.kind()))?;
    write_sealed(&world, &scenario.sealed)?;
    let sealed = scenario.sealed.clone();
    let (scenario, inputs) =
        crate::arena_run::load_for_run("mcp serve", &world.join("scenario.toml"))
            .map_err(|e| format!("the equivalent scenario is refused: {}", e.message))?;
    let out = work.path().join("bundle");
    let live = std::collections::BTreeMap::new();
    run_embedded(
        &scenario,
        &inputs,
        RunOptions::keep_going(true),
        &live,
        &out,
    )
    .await
    .map_err(|e| format!("the equivalent scenario did not run: {e}"))?
    .map_err(|e| format!("the bundle was not written: {e}"))?;
    // The run's bundle records each sealed file's digest only; the session
    // folder already holds the values (`calls.jsonl`), so it keeps the
    // files beside the scenario, where `chio arena replay DIR` reads them.
    write_sealed(&out.join(INPUTS_DIR), &sealed)?;
    for name in [INPUTS_DIR, POLICIES_DIR, RECEIPTS_FILE, MANIFEST_FILE] {
        std::fs::rename(out.join(name), dir.join(name)).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

/// Writes each sealed file below `folder`, as the scenario names it, mode
/// 0600: it holds a credential.
fn write_sealed(folder: &Path, sealed: &[SealedFile]) -> Result<(), String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;
    for file in sealed {
        let path = folder.join(&file.path);
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&path)
            })
            .and_then(|mut out| out.write_all(format!("{}\n", file.text).as_bytes()))
            .map_err(|e| format!("{}: {}", file.path, e.kind()))?;
    }
    Ok(())
}
