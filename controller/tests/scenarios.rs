//! Every reference scenario directly under `scenarios/` as its own test
//! (`cargo test -p chio-controller --test scenarios NAME` runs one), through
//! the library's harness: each passes when every step meets its expectation.

// Each `scenarios/*.toml` runs in the embedded topology and meets every expectation.
fn main() -> std::process::ExitCode {
    chio_controller::harness::run_scenarios_in(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"))
}
