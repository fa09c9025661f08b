//! Writes every target's seeds (see `chio_fuzz_targets::seeds`) into
//! `fuzz/corpus/<target>/seed-<name>`, where libFuzzer starts from them.
//! Run it before a first fuzzing session or after the worlds change:
//! `cargo run -p chio-fuzz-targets --example seed_corpora`. Existing files
//! are overwritten, others are left alone; `cargo fuzz cmin` then minimises.

use std::path::PathBuf;

use chio_fuzz_targets::seeds::seeds;
use chio_fuzz_targets::TARGETS;

fn main() -> std::io::Result<()> {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    for (target, _) in TARGETS {
        let folder = corpus.join(target);
        std::fs::create_dir_all(&folder)?;
        let seeds = seeds(target);
        for (name, bytes) in &seeds {
            std::fs::write(folder.join(format!("seed-{name}")), bytes)?;
        }
        println!("{target}: {} seeds", seeds.len());
    }
    Ok(())
}
