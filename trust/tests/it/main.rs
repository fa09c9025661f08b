//! Trust-control's integration tests, one test binary: each module below
//! was once a binary of its own, and one binary links the workspace once
//! instead of once per area. Run one area with its module path as the
//! filter, for example `cargo test -p chio-trust --test it -- fuzz_grpc::`.
//!
//! Module map: one module per area, named as its binary was.

mod fuzz_grpc;
mod version_one_migration;
