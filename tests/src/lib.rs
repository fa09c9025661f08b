//! Helpers shared by every test that runs the real `chio` binary: finding
//! (and, when needed, building) the binary, running it to completion with a
//! clean environment, explaining a failure with the command, status and
//! both streams, starting trust-control and node processes on port 0 in a
//! fresh temporary folder, loading a scenario's world into them, and
//! reading or writing folders. The suites of this package (`tests/tests/`)
//! and the process tests of `controller/tests/` both use it, so there is
//! one runner and one `repo_path`.
//!
//! It leaves the product alone: nothing here decides a verdict, and no
//! helper is used outside tests.
//!
//! Module map:
//! - [`binary`]: locating the `chio` binary, running it, explaining output.
//! - [`files`]: repository paths, folder trees, scenario folders and the
//!   reference scenario lists.
//! - [`cluster`]: trust-control and node processes, topology files, loading
//!   a world into nodes, gRPC clients and a runtime for them.
//! - [`scenarios`]: generated scenario texts shared by several suites.
//! - [`outside`]: the outside parts (a Python venv, a browser) found
//!   through the variables `.ci/run` exports.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod binary;
pub mod cluster;
pub mod files;
pub mod outside;
pub mod scenarios;

pub use binary::{chio, explain, run_binary, run_chio, OUTPUT_ENV};
pub use cluster::{
    call_command, runtime, serve, wait_until, Cluster, LoadedWorld, Proc, CLUSTER_TOKEN,
    TRUST_TOKEN,
};
pub use files::{
    copy_tree, entries, mcp_scenarios, reference_scenarios, repo_path, tree, worldless_scenarios,
    write_scenario,
};
pub use scenarios::{cross_node_scenario, many_agent_scenario};
