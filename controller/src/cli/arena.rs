//! `chio arena ...`: the arguments of the arena commands that have a module of their own (`init`, `lint`, `record`, `explain`, `matrix`, `evolve`, `promote`); `validate`, `run`, `replay` and `diff` are in the parent module.

use std::path::PathBuf;

use chio_adversary::coevolution::DEFAULT_POPULATION_SIZE;
use chio_adversary::promotion::ARENA_PROMOTE_CAP_DEFAULT;
use clap::{ArgGroup, Args, ValueEnum};
use serde::Serialize;

use super::RunTopology;

/// Most wall-clock seconds one evolve may run (30 minutes).
pub const MAX_ARENA_EVOLVE_WALL_SECONDS: u64 = 30 * 60;

/// What to run and record, and where.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["out", "check"])))]
pub struct RecordArgs {
    /// The scenario file; an mcp server's cwd resolves next to it.
    pub file: PathBuf,
    /// Write the run's bundle here, and the recording below it (DIR/recording/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run live again and report, by step, every answer that drifted from
    /// the recording in DIR.
    #[arg(long, value_name = "DIR")]
    pub check: Option<PathBuf>,
}

/// `chio arena evolve` arguments.
#[derive(Debug, Args)]
pub struct EvolveArgs {
    /// The scenario file; its `[[adversaries]]` blocks are the populations.
    pub file: PathBuf,
    /// Generations to evolve, 1 to 200.
    #[arg(long, default_value_t = 4)]
    pub generations: u32,
    /// Populations each declared lineage breeds per generation, 1 to 64
    /// (a block's `population_size` overrides it).
    #[arg(long, default_value_t = DEFAULT_POPULATION_SIZE)]
    pub population_size: u32,
    /// Wall-clock budget in seconds, 1 to 1800; the run ends cleanly when spent.
    #[arg(long, default_value_t = MAX_ARENA_EVOLVE_WALL_SECONDS)]
    pub wall_seconds: u64,
    /// Print the canonical `chio.arena.evolve/v1` summary instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The output root (default `target/arena`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the escapes as SARIF 2.1.0 here: one result per cause,
    /// its occurrences as related locations (one rule per adversary class,
    /// located in the scenario file).
    #[arg(long, value_name = "PATH")]
    pub sarif: Option<PathBuf>,
    /// Also write the search's report here as one self-contained HTML page
    /// (what `chio report DIR` writes for the output root).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Where the kernels decide: in this process (the default), `local`
    /// (trust-control and one node process per logical node on loopback,
    /// started once and reused by every batch), or a topology file
    /// (docs/topology.md) naming running nodes. The files are the same bytes
    /// on every topology.
    #[arg(long, value_name = "local|FILE")]
    pub topology: Option<RunTopology>,
}

/// `chio arena matrix FILE [--json] [--out DIR] [--resume] [--workers N]`.
#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// The matrix file (`chio.arena.matrix/v1`).
    pub file: PathBuf,
    /// Print the synthesis as canonical JSON (`chio.arena.matrix-synthesis/v1`).
    #[arg(long)]
    pub json: bool,
    /// The output folder (default `target/arena/matrix/<matrix-id>-r<repetitions>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Complete an interrupted matrix from its run ledger.
    #[arg(long)]
    pub resume: bool,
    /// Runs at once when the matrix declares no `[protocol] concurrency`
    /// (default: the machine's cores); results do not depend on it.
    #[arg(long)]
    pub workers: Option<usize>,
    /// Also write a JUnit XML report here: one test suite per cell, one
    /// test case per step.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Where the scenario part of a run goes when its cell declares no
    /// topology: `local` starts node processes and trust-control on
    /// loopback and reuses them between runs, a topology file
    /// (docs/topology.md) names running ones; default embedded.
    #[arg(long, value_name = "local|FILE")]
    pub topology: Option<RunTopology>,
}

/// Where promoted cases go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromoteTarget {
    /// Deny outcomes as `chio.arena.fixture/v1`, behind the bless gate.
    Fixtures,
    /// Deny and Rewrite outcomes as `chio.arena.adversarial-case/v1`.
    AdversarialSuite,
}

/// `chio arena promote` arguments.
#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// The scenario file whose populations are promoted.
    pub file: PathBuf,
    /// The corpus to promote into.
    #[arg(long = "to", value_enum)]
    pub target: PromoteTarget,
    /// Base steps to promote actions of (default: every one).
    #[arg(long = "step")]
    pub steps: Vec<String>,
    /// Populations to promote (default: every declared one).
    #[arg(long = "population")]
    pub populations: Vec<String>,
    /// Most fixtures written by this call (fixtures only), 1 to 50.
    #[arg(long, default_value_t = ARENA_PROMOTE_CAP_DEFAULT)]
    pub cap: usize,
    /// The output root (default `promoted/` next to the scenario).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the canonical `chio.arena.promote/v1` report.
    #[arg(long)]
    pub json: bool,
    /// Promote the escapes recorded in this evolve trace instead of the
    /// declared populations' round-0 actions. Its search is first run
    /// again against the scenario it searched (FILE, or `--searched`), and
    /// the trace is refused unless it is what that search gives.
    #[arg(long, value_name = "PATH")]
    pub from_trace: Option<PathBuf>,
    /// The scenario file the trace searched, byte for byte, when FILE is
    /// another (its fixed twin): the search is run again against it, then
    /// the trace's actions are evaluated against FILE.
    #[arg(long, value_name = "FILE", requires = "from_trace")]
    pub searched: Option<PathBuf>,
}

/// `chio arena init DIR [--template NAME]`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The folder to write the scenario into; created when missing, and it
    /// may exist as long as none of the template's files does.
    pub dir: PathBuf,
    /// What the scenario teaches.
    #[arg(long, value_enum, default_value_t = Template::Triage)]
    pub template: Template,
}

/// A scenario template `arena init` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Template {
    /// One agent reading issues, an information-flow guard, one allow and one deny.
    Triage,
    /// A bank tool, a daily monetary budget and an approval guard.
    Finance,
    /// Two nodes, two kernels, a delegation across them and its revocation.
    MultiKernel,
}

/// `chio arena explain BUNDLE STEP [--json]`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The bundle folder a run wrote.
    pub bundle: PathBuf,
    /// The id of the step to explain.
    pub step: String,
    /// The folder of the scenario the bundle was run from, where its
    /// sealed files are read again to re-decide it (as `arena replay`
    /// does): a bundle records only their digests.
    #[arg(long, value_name = "FOLDER")]
    pub sealed_from: Option<PathBuf>,
    /// Print canonical JSON (`chio.arena.explain/v1`) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `chio arena lint FILE [--json] [--deny-warnings]`.
#[derive(Debug, Args)]
pub struct LintArgs {
    /// The scenario file; fixture folders resolve next to it.
    pub file: PathBuf,
    /// Print canonical JSON (`chio.arena.lint/v1`) instead of warning blocks.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 (`CHIO-CLI-LINT-WARNINGS`) when there is any warning, after
    /// printing them; without it warnings exit 0.
    #[arg(long)]
    pub deny_warnings: bool,
}
