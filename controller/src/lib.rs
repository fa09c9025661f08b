//! The `chio` command-line interface: argument types, command dispatch and
//! the typed error every command reports with.
//!
//! The binary (`main.rs`) only parses arguments, sets up tracing and calls
//! [`run_with`]; each command lives in its own module and returns a
//! [`CliError`] that the binary renders and maps to an exit code.
//!
//! Module map:
//! - [`api`] is the library surface for a user's own tests: load, run, inspect, write, assert;
//! - [`cli`] holds the clap command tree;
//! - [`error`] holds [`CliError`], [`Exit`] and the rendering;
//! - [`arena_init`] holds `chio arena init` and the scenario templates it writes;
//! - [`arena_validate`] holds `chio arena validate`;
//! - [`arena_lint`] holds `chio arena lint`;
//! - [`arena_run`] holds `chio arena run`;
//! - [`arena_replay`] holds `chio arena replay` and `chio arena diff`;
//! - [`redecide`] re-decides the bundles `chio report` and
//!   `chio campaign report` present, with the code path of `arena replay`;
//! - [`arena_explain`] holds `chio arena explain`;
//! - [`driver`] holds the run driver every topology shares;
//! - [`eval`] holds `chio eval` (portable evaluation);
//! - [`arena_evolve`] holds `chio arena evolve`;
//! - [`arena_matrix`] holds `chio arena matrix`;
//! - [`arena_promote`] holds `chio arena promote`;
//! - [`campaign`] holds `chio campaign template | run | import | annotate | report | hash`;
//! - [`import_mcp`] holds `chio import mcp` (an MCP `tools/list` result as a recorded server)
//!   and `chio import trace` (a recorded trace as a scenario);
//! - [`import_mcp_live`] starts an MCP server for `chio import mcp --command` and lists its tools;
//! - [`mcp_answer`] reads an MCP `CallToolResult` as a recorded answer, the one reading of
//!   `chio arena record`, the MCP edge and the edge's equivalent scenario;
//! - [`topology`] holds topology files and the gRPC dispatcher;
//! - [`cluster_worlds`] is where the adversary evaluator's worlds run on
//!   node processes (`arena evolve --topology`, matrix cells on a topology);
//! - [`local_cluster`] holds `--topology local` (processes on loopback);
//! - [`local_faults`] inflicts a scenario's fault steps on those processes,
//!   and [`link_proxy`] is the switchable proxy in front of each link;
//! - [`placement`] decides where an experiment's runs execute (embedded,
//!   pooled local clusters, a topology file's nodes);
//! - [`serve`] holds `chio node serve` and `chio trust serve`;
//! - [`term`] holds `--color`, `NO_COLOR` and the `--quiet`/`--verbose` log levels;
//! - [`report`] writes report files atomically and types their failure;
//! - [`junit`] renders `--junit` reports of runs and matrices;
//! - [`sarif`] renders `arena evolve --sarif` reports of escapes;
//! - [`html_report`] holds `chio report` and the `--html` pages of `arena run` and
//!   `arena evolve` (rendered by `chio_arena::report`);
//! - [`harness`] runs every scenario of a folder as a `cargo test` test;
//! - `chio completions` and `chio man` are generated here from [`cli`].
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod api;
pub mod arena_evolve;
pub mod arena_explain;
pub mod arena_init;
pub mod arena_lint;
pub mod arena_matrix;
pub mod arena_promote;
pub mod arena_record;
pub mod arena_replay;
pub mod arena_run;
pub mod arena_validate;
pub mod campaign;
pub mod cli;
pub mod cluster_worlds;
pub mod driver;
pub mod error;
pub mod eval;
pub mod eval_bundle;
pub mod harness;
pub mod html_report;
pub mod import_mcp;
pub mod import_mcp_live;
pub mod junit;
pub mod link_proxy;
pub mod local_cluster;
pub mod local_faults;
pub mod man;
pub mod mcp_answer;
pub mod mcp_edge;
pub mod placement;
pub mod redecide;
pub mod report;
pub mod sarif;
pub mod serve;
pub mod term;
pub mod topology;

use std::io::Write;

use clap::CommandFactory;

pub use cli::Cli;
pub use error::{CliError, Exit};
pub use term::Palette;

/// Runs a parsed command line, printing its report to `out`, as if `out`
/// were not a terminal: colour only with `--color always` or
/// `CLICOLOR_FORCE` (see [`term`]).
pub fn run(cli: &Cli, out: &mut dyn Write) -> Result<(), CliError> {
    run_with(cli, out, Palette::resolve(cli.color, false))
}

/// Runs a parsed command line, printing its report to `out` with `palette`
/// deciding colour (the binary resolves it for standard output).
pub fn run_with(cli: &Cli, out: &mut dyn Write, palette: Palette) -> Result<(), CliError> {
    match &cli.command {
        cli::Command::Completions(args) => {
            // Generated into memory first: the generator panics on a write
            // error, and a closed pipe must stay a typed error.
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "chio", &mut script);
            CliError::print("completions", out, &script)
        }
        cli::Command::Man(args) => man::run(args, out),
        cli::Command::Eval(args) => eval::run(args, out),
        cli::Command::Node(node) => match &node.command {
            cli::NodeCommand::Serve(args) => serve::node(args),
        },
        cli::Command::Trust(trust) => match &trust.command {
            cli::TrustCommand::Serve(args) => serve::trust(args),
        },
        cli::Command::Campaign(args) => campaign::run(args, out),
        cli::Command::Import(args) => import_mcp::run(args, out),
        cli::Command::Report(args) => html_report::run(args, out),
        cli::Command::Mcp(args) => mcp_edge::run(args, out),
        cli::Command::Arena(arena) => match &arena.command {
            cli::ArenaCommand::Init(args) => arena_init::run(args, out),
            cli::ArenaCommand::Validate(args) => arena_validate::run(args, out),
            cli::ArenaCommand::Lint(args) => arena_lint::run(args, out),
            cli::ArenaCommand::Run(args) => arena_run::run(args, out, palette),
            cli::ArenaCommand::Record(args) => arena_record::run(args, out, palette),
            cli::ArenaCommand::Replay(args) => arena_replay::replay(args, out),
            cli::ArenaCommand::Diff(args) => arena_replay::diff(args, out),
            cli::ArenaCommand::Explain(args) => arena_explain::run(args, out),
            cli::ArenaCommand::Matrix(args) => arena_matrix::run(args, out, cli.quiet),
            cli::ArenaCommand::Evolve(args) => arena_evolve::run(args, out, cli.quiet),
            cli::ArenaCommand::Promote(args) => arena_promote::run(args, out),
        },
    }
}
