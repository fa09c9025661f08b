//! What the user typed: the `chio` command tree as clap derive types.
//!
//! The tree is `chio <group> <command>` (`chio arena run`, `chio node
//! serve`, ...) plus two commands about the CLI itself, `chio completions
//! SHELL` and `chio man`, which generate from this tree. The flags on
//! [`Cli`] (`--color`, `--quiet`, `--verbose`) are global: they may be given
//! before or after the command.
//!
//! Every argument of every command is declared here, in this module and its
//! submodules (`arena`, `campaign`, `import`, `mcp`, `report`), and the
//! command modules import their arguments from here; nothing here imports a
//! command module, so the arguments and the commands are not a circle. A
//! later command is one more variant in [`ArenaCommand`] (or a new group in
//! [`Command`]) with its arguments here, plus its module.

pub mod arena;
pub mod campaign;
pub mod import;
pub mod mcp;
pub mod report;

use std::path::PathBuf;

use chio_node::grpc_link::DEFAULT_LINK_DEADLINE_MS;
use clap::{ArgAction, Args, Parser, Subcommand};

use crate::term::ColorChoice;

/// The `chio` command line.
#[derive(Debug, Parser)]
#[command(
    name = "chio",
    version,
    about = "Chio Arena: replayable authorization scenarios"
)]
pub struct Cli {
    /// The command group to run.
    #[command(subcommand)]
    pub command: Command,
    /// When to colour tables and errors: `auto` on a terminal unless
    /// NO_COLOR is set (CLICOLOR_FORCE forces it), or `always`, `never`.
    #[arg(long, value_enum, global = true, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Log only errors on standard error (ignored when RUST_LOG is set).
    #[arg(long, short = 'q', global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Log more on standard error: -v info, -vv debug, -vvv trace (ignored
    /// when RUST_LOG is set).
    #[arg(long, short = 'v', global = true, action = ArgAction::Count)]
    pub verbose: u8,
}

/// Top-level command groups.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scenario commands.
    Arena(ArenaArgs),
    /// Evaluate a capability against a request from a JSON envelope (portable evaluation).
    Eval(EvalArgs),
    /// Pinned campaigns: ledger template, import and portfolio report.
    Campaign(campaign::CampaignArgs),
    /// Import tool definitions into a scenario declaration (`chio import mcp`).
    Import(import::ImportArgs),
    /// Write one self-contained HTML page for a run bundle, an evolve or
    /// matrix output, or a campaign ledger.
    Report(report::ReportArgs),
    /// The MCP edge: the kernel in front of real MCP servers (`chio mcp serve`, `grant`, `revoke`).
    Mcp(mcp::McpArgs),
    /// Node process commands (`chio node serve`).
    Node(NodeArgs),
    /// Trust-control commands (`chio trust serve`).
    Trust(TrustArgs),
    /// Print a shell completion script for `chio` (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the `chio(1)` manual page, or a command's (`chio man arena`), as roff generated from these definitions.
    Man(ManArgs),
}

/// `chio completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `chio man [COMMAND]...`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print, as words (`arena`, `arena run`):
    /// the `chio-arena(1)` and `chio-arena-run(1)` pages the main page lists.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `chio arena ...`.
#[derive(Debug, Args)]
pub struct ArenaArgs {
    /// The arena command to run.
    #[command(subcommand)]
    pub command: ArenaCommand,
}

/// Commands under `chio arena`.
#[derive(Debug, Subcommand)]
pub enum ArenaCommand {
    /// Write a working scenario with its fixtures into a new folder.
    Init(arena::InitArgs),
    /// Load and validate a scenario and print its determinism witness.
    Validate(ValidateArgs),
    /// Warn about what validates but is probably wrong in a scenario.
    Lint(arena::LintArgs),
    /// Run a scenario against the real kernel and write its evidence bundle.
    Run(RunArgs),
    /// Run a scenario against its live MCP servers and record their answers.
    Record(arena::RecordArgs),
    /// Re-evaluate a bundle and report drift by step.
    Replay(ReplayArgs),
    /// Name the first step where two bundles differ and the input that changed.
    Diff(DiffArgs),
    /// Print what one step of a bundle read and how each pipeline stage answered.
    Explain(arena::ExplainArgs),
    /// Run a policy matrix and write its synthesis with bootstrap verdicts.
    Matrix(arena::MatrixArgs),
    /// Co-evolve the scenario's adversary populations against the real kernel.
    Evolve(arena::EvolveArgs),
    /// Promote adversary denials into replayable fixtures or adversarial cases.
    Promote(arena::PromoteArgs),
}

/// `chio arena validate FILE [--json]`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The scenario file; fixture folders resolve next to it.
    pub file: PathBuf,
    /// Print canonical JSON (`chio.arena.validate/v1`) instead of a summary.
    #[arg(long)]
    pub json: bool,
}

/// `chio arena run FILE [--json] [--out DIR] [--keep-going] [--one-at-a-time] [--junit PATH]
/// [--html FILE] [--replay-from DIR]`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file; fixture folders resolve next to it.
    pub file: PathBuf,
    /// Print canonical JSON (`chio.arena.run/v1`) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The bundle folder (default `target/arena/<scenario-id>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run every step and report all mismatches instead of stopping at the first.
    #[arg(long)]
    pub keep_going: bool,
    /// Send one step at a time, each answered and recorded before the next,
    /// instead of sending steps whose footprints do not overlap together;
    /// the bundle is the same bytes either way.
    #[arg(long)]
    pub one_at_a_time: bool,
    /// Where the nodes run: absent for one process (embedded), `local` to
    /// start trust-control and one node process per logical node on
    /// loopback, or a topology file (docs/topology.md) for running nodes.
    #[arg(long, value_name = "local|FILE")]
    pub topology: Option<RunTopology>,
    /// Also write a JUnit XML report here: one test case per step, a
    /// failure per unexpected verdict, skipped steps after a stop.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Also write the run's report here as one self-contained HTML page
    /// (what `chio report BUNDLE` writes).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Answer every mcp server's calls from the recording `chio arena record
    /// --out DIR` wrote (no server is started).
    #[arg(long, value_name = "DIR")]
    pub replay_from: Option<PathBuf>,
}

/// Where `chio arena run` runs a scenario's nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RunTopology {
    /// Every node in this process (no `--topology`).
    #[default]
    Embedded,
    /// Trust-control and one node process per logical node on loopback,
    /// started and stopped by the run (`--topology local`).
    Local,
    /// Node processes and trust-control already running, named by a
    /// topology file (`--topology FILE`, see `docs/topology.md`).
    File(PathBuf),
}

impl std::str::FromStr for RunTopology {
    type Err = std::convert::Infallible;

    /// `local`, or else the path of a topology file (read when the run starts).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "local" => RunTopology::Local,
            path => RunTopology::File(PathBuf::from(path)),
        })
    }
}

/// `chio arena replay DIR [--json]`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The bundle folder a run wrote.
    pub dir: PathBuf,
    /// The folder of the scenario the bundle was run from, where its
    /// sealed files (`{ fixture = ... }` values) are read again: a bundle
    /// records only their digests. An MCP edge session folder's are read
    /// from its `inputs/` without it.
    #[arg(long, value_name = "FOLDER")]
    pub sealed_from: Option<PathBuf>,
    /// Print canonical JSON (`chio.arena.replay/v1`).
    #[arg(long)]
    pub json: bool,
}

/// `chio arena diff A B [--json]`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first bundle folder.
    pub left: PathBuf,
    /// The second bundle folder.
    pub right: PathBuf,
    /// Print canonical JSON (`chio.arena.diff/v1`).
    #[arg(long)]
    pub json: bool,
}

/// `chio eval [ENVELOPE.json | - | --from-bundle BUNDLE STEP [--sealed-from FOLDER]] [--json] [--now-unix-secs N] [--write-envelope PATH]`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The envelope file; `-` or nothing reads standard input.
    #[arg(conflicts_with = "from_bundle")]
    pub envelope: Option<String>,
    /// Build the envelope from a call a run recorded: the bundle folder and
    /// the step id (its clock is the step's; `--now-unix-secs` moves it).
    #[arg(long, num_args = 2, value_names = ["BUNDLE", "STEP"])]
    pub from_bundle: Option<Vec<String>>,
    /// With `--from-bundle`: the folder of the scenario the bundle was run
    /// from, where the sealed files its run read are read again to
    /// re-decide it (a bundle records only their digests).
    #[arg(long, value_name = "FOLDER")]
    pub sealed_from: Option<PathBuf>,
    /// Also write the envelope evaluated to PATH (canonical JSON), to
    /// change one input and evaluate it again.
    #[arg(long, value_name = "PATH")]
    pub write_envelope: Option<std::path::PathBuf>,
    /// Print the answer as canonical JSON.
    #[arg(long)]
    pub json: bool,
    /// The clock, in Unix seconds, when the envelope has no `clock_override_unix_secs`.
    #[arg(long)]
    pub now_unix_secs: Option<u64>,
}

/// `chio node ...`.
#[derive(Debug, Args)]
pub struct NodeArgs {
    /// The node command to run.
    #[command(subcommand)]
    pub command: NodeCommand,
}

/// Commands under `chio node`.
#[derive(Debug, Subcommand)]
pub enum NodeCommand {
    /// Serve NodeControl and KernelLink for one logical node until stopped.
    Serve(NodeServeArgs),
}

/// `chio node serve --name NODE --cluster-token-file F (--control-url URL --control-token-file F | --state-dir DIR)`.
#[derive(Debug, Args)]
pub struct NodeServeArgs {
    /// The logical node this process plays (a `[[nodes]]` id of the scenario).
    #[arg(long)]
    pub name: String,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// File holding the cluster token the controller and the other nodes present.
    #[arg(long, value_name = "FILE")]
    pub cluster_token_file: PathBuf,
    /// Trust-control's URL (http://HOST:PORT), for authority state shared by the cluster.
    #[arg(long, value_name = "URL")]
    pub control_url: Option<String>,
    /// File holding trust-control's bearer token.
    #[arg(long, value_name = "FILE")]
    pub control_token_file: Option<PathBuf>,
    /// Keep authority state in SQLite files here instead of trust-control.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Deadline of a receipt append in milliseconds; a miss means no allow.
    #[arg(long, value_name = "MS", default_value_t = 5_000)]
    pub receipt_deadline_ms: u64,
    /// Deadline of every other trust-control call in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2_000)]
    pub store_deadline_ms: u64,
    /// Deadline of a call forwarded to another node's kernel in milliseconds;
    /// a miss denies the call naming the unreachable node.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_LINK_DEADLINE_MS)]
    pub link_deadline_ms: u64,
    /// Print `listening on ADDR` on stdout once the socket is bound.
    #[arg(long)]
    pub print_addr: bool,
}

/// `chio trust ...`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The trust-control command to run.
    #[command(subcommand)]
    pub command: TrustCommand,
}

/// Commands under `chio trust`.
#[derive(Debug, Subcommand)]
pub enum TrustCommand {
    /// Serve trust-control over a SQLite database until SIGTERM or ctrl-c.
    Serve(TrustServeArgs),
}

/// `chio trust serve --db FILE [--listen ADDR] [--token-file FILE] [--print-addr]`.
#[derive(Debug, Args)]
pub struct TrustServeArgs {
    /// SQLite database file (created when absent; WAL, synchronous=FULL).
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// File holding the bearer token; CHIO_TRUST_TOKEN may carry it instead.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Print `listening on ADDR` on stdout once the socket is bound.
    #[arg(long)]
    pub print_addr: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_args(line: &[&str]) -> RunArgs {
        let cli = Cli::try_parse_from(line).expect("the command line parses");
        match cli.command {
            Command::Arena(ArenaArgs {
                command: ArenaCommand::Run(args),
            }) => args,
            other => panic!("not arena run: {other:?}"),
        }
    }

    // `--topology` parses to the embedded default, the local cluster, or a topology file, and nothing else.
    #[test]
    fn topology_flag_parses_to_its_enum() {
        let embedded = run_args(&["chio", "arena", "run", "s.toml"]);
        assert_eq!(embedded.topology.unwrap_or_default(), RunTopology::Embedded);
        let local = run_args(&["chio", "arena", "run", "s.toml", "--topology", "local"]);
        assert_eq!(local.topology, Some(RunTopology::Local));
        let file = run_args(&["chio", "arena", "run", "s.toml", "--topology", "t/top.toml"]);
        assert_eq!(
            file.topology,
            Some(RunTopology::File(PathBuf::from("t/top.toml")))
        );
    }
}
