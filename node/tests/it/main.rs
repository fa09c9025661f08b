//! The node's integration tests, one test binary: each module below was
//! once a binary of its own, and one binary links the workspace once
//! instead of once per area. Run one area with its module path as the
//! filter, for example `cargo test -p chio-node --test it -- service::`.
//! The planted-weakness tests stay binaries of their own
//! (`tests/planted_*.rs`, built only with the `planted-weakness` feature):
//! a selected weakness is process-wide, so no other test may share their
//! process.
//!
//! Module map: the shared helper `util` (a real node serving on port 0
//! with local SQLite state); then one module per area, named as its binary
//! was.

mod util;

mod adversaries;
mod definition_goals;
mod executor;
mod fuzz_grpc;
mod one_node;
mod sealed_answers;
mod service;
mod simulated_faults;
