//! The arena library's integration tests, one test binary: each module
//! below was once a binary of its own, and one binary links the workspace
//! once instead of once per area. Run one area with its module path as the
//! filter, for example `cargo test -p chio-arena --test it -- fuzz_loader::`.
//!
//! Module map: one module per area, named as its binary was.

mod determinism;
mod fuzz_loader;
mod loader_props;
mod mcp_import_props;
mod recorded_values;
mod scenario_files;
mod sealed_links;
mod secret_forms;
mod trace_import_props;
mod value_props;
