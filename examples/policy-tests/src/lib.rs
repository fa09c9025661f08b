//! An example policy-test crate: it holds no code of its own. The scenarios
//! under `scenarios/` are the policy's tests, run by `tests/scenarios.rs`
//! (one `cargo test` test per file) and by `tests/api.rs` (the library API,
//! for assertions beyond the scenario's own expectations).
#![forbid(unsafe_code)]
