//! The controller's integration tests, one test binary: each module below
//! was once a binary of its own, and one binary links the workspace once
//! instead of once per area (the link, not the tests, was most of the
//! suite's time). Run one area with its module path as the filter, for
//! example `cargo test -p chio-controller --test it -- trust_faults::`.
//! The reference scenarios stay a binary of their own (`tests/scenarios.rs`,
//! its own harness, one test per scenario file).
//!
//! Every module shares this one process, so none sets an environment
//! variable, changes the working folder or binds a fixed port: each passes
//! what it needs to the processes it starts, works in its own temporary
//! folder and binds port 0.
//!
//! Module map: the shared helpers `util` (the `chio` binary and the
//! `chio-tests` helpers), `git_repo` (git in a temporary folder, shared
//! with `chio-arena`'s tests), `trust_process` (a real `chio trust serve`),
//! `mcp_edge_util` (the MCP edge's harness) and `report_pages` (the results
//! and the browser driver of the HTML report tests); then one module per
//! area, named as its binary was.

#[path = "../../../arena/campaign/tests/it/git_repo.rs"]
mod git_repo;
mod mcp_edge_util;
mod report_pages;
mod trust_process;
mod util;

mod agentdojo;
mod agentdojo_suites;
mod arena_evolve;
mod arena_init;
mod arena_lint;
mod arena_record;
mod arena_run;
mod arena_validate;
mod campaign;
mod cli_conventions;
mod compose_files;
mod credential_reading;
mod determinism_gate;
mod eval;
mod evidence;
mod evolve_causes;
mod explain_evidence;
mod first_use;
mod import_mcp;
mod import_trace;
mod input_files;
mod keys_in_output;
mod matrix;
mod mcp_edge;
mod mcp_edge_bench;
mod mcp_edge_bundle;
mod mcp_edge_http;
mod mcp_edge_parity;
mod mcp_edge_sealed;
mod output_folders;
mod pipeline;
mod promote_twin;
mod promoted;
mod recording_layouts;
mod refusal_parity;
mod report_browser;
mod report_html;
mod report_paths;
mod reports;
mod round_trips;
mod sealed_values;
mod trust_auth;
mod trust_faults;
mod trust_secrets_in_output;
mod trust_service;
mod trust_startup;
