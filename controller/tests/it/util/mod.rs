//! The controller's own process tests run the `chio` binary cargo built for
//! this package (`CARGO_BIN_EXE_chio`); everything else (the runner,
//! failure explanations, folder trees, repository paths, reference
//! scenario lists) is the shared helper library `chio-tests`.

use std::path::Path;
use std::process::Output;

pub use chio_tests::{
    copy_tree, entries, explain, reference_scenarios, repo_path, tree, worldless_scenarios,
    OUTPUT_ENV,
};

/// Runs `chio ARGS` with `dir` as working directory.
pub fn chio(dir: &Path, args: &[&str]) -> Output {
    chio_env(dir, args, &[])
}

/// Runs `chio ARGS` with `dir` as working directory and `env` set on top of
/// an environment without [`OUTPUT_ENV`].
pub fn chio_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    chio_tests::run_binary(Path::new(env!("CARGO_BIN_EXE_chio")), dir, args, env)
}
