//! The process tests of the distributed arena, one test binary: each module
//! below was once a binary of its own, and one binary links the workspace
//! (and builds the `chio` binary it runs, see `chio_tests::chio`) once
//! instead of once per area. Run one area with its module path as the
//! filter, for example `cargo test -p chio-tests --test it -- distributed::`.
//! Their helpers are the `chio-tests` library (`src/`).
//!
//! Module map: one module per area, named as its binary was.

mod concurrency;
mod distributed;
mod distributed_runs;
mod escapes;
mod evolve_topology;
mod faults;
mod load;
mod monetary_budgets;
mod multi_kernel_routing;
mod run_time_allowlist;
mod scenario_faults;
mod soundness;
