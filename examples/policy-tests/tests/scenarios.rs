//! Every `*.toml` under `scenarios/` as its own test:
//! `cargo test -p policy-tests --test scenarios` runs them all, and
//! `cargo test -p policy-tests --test scenarios release_gate` runs one.

fn main() -> std::process::ExitCode {
    chio_controller::harness::run_scenarios_in(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"))
}
