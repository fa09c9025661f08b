//! `chio campaign ...`: the pinned-campaign commands' arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `chio campaign ...`.
#[derive(Debug, Args)]
pub struct CampaignArgs {
    /// The campaign command to run.
    #[command(subcommand)]
    pub command: CampaignCommand,
}

/// Commands under `chio campaign`.
#[derive(Debug, Subcommand)]
pub enum CampaignCommand {
    /// Print a ledger with every scheduled attempt DEFERRED.
    Template(TemplateArgs),
    /// Run scheduled attempts with this binary and record them, measured.
    Run(CampaignRunArgs),
    /// Fill ledger rows from run, replay, evolve and matrix results.
    Import(ImportArgs),
    /// Record a human decision or repair on a row, or skip a row.
    Annotate(AnnotateArgs),
    /// Print the portfolio of a ledger.
    Report(ReportArgs),
    /// Print the definition hash of a task file.
    Hash(HashArgs),
}

/// `chio campaign template DECL [--out LEDGER]`.
#[derive(Debug, Args)]
pub struct TemplateArgs {
    /// The campaign declaration (`chio.arena.campaign/v1`).
    pub declaration: PathBuf,
    /// Write the ledger to this new file instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `chio campaign run DECL LEDGER SCHEDULE_ID... [--out DIR] [--bundle ID=DIR]`.
#[derive(Debug, Args)]
pub struct CampaignRunArgs {
    /// The campaign declaration.
    pub declaration: PathBuf,
    /// The ledger, updated in place.
    pub ledger: PathBuf,
    /// The attempts to run, by schedule id.
    #[arg(required = true)]
    pub schedule_ids: Vec<String>,
    /// Where each attempt writes its bundle or outputs (one folder per
    /// attempt; default `target/campaign/<campaign-id>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The recorded bundle a fixture attempt replays, as `SCHEDULE_ID=DIR`.
    #[arg(long = "bundle", value_name = "SCHEDULE_ID=DIR")]
    pub bundles: Vec<String>,
}

/// `chio campaign annotate DECL LEDGER SCHEDULE_ID --decision NOTE | --repair NOTE | --skip REASON`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("annotation").required(true).args(["decision", "repair", "skip"])))]
pub struct AnnotateArgs {
    /// The campaign declaration.
    pub declaration: PathBuf,
    /// The ledger, updated in place.
    pub ledger: PathBuf,
    /// The row.
    pub schedule_id: String,
    /// A human judgement on the attempt, such as why its stop was appropriate.
    #[arg(long)]
    pub decision: Option<String>,
    /// What a human repaired so the attempt could succeed.
    #[arg(long)]
    pub repair: Option<String>,
    /// Mark a DEFERRED row SKIPPED, with the reason.
    #[arg(long)]
    pub skip: Option<String>,
}

/// `chio campaign import DECL LEDGER SCHEDULE_ID=RESULT...`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The campaign declaration.
    pub declaration: PathBuf,
    /// The ledger, updated in place.
    pub ledger: PathBuf,
    /// Each record as `SCHEDULE_ID=PATH`: the evaluator names the attempt.
    #[arg(required = true)]
    pub records: Vec<String>,
}

/// `chio campaign report DECL LEDGER [--json]`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The campaign declaration.
    pub declaration: PathBuf,
    /// The ledger.
    pub ledger: PathBuf,
    /// Print canonical JSON (`chio.arena.campaign-report/v3`).
    #[arg(long)]
    pub json: bool,
}

/// `chio campaign hash --kind KIND --root DIR FILE`.
#[derive(Debug, Args)]
pub struct HashArgs {
    /// The task file, relative to `--root`.
    pub file: String,
    /// `scenario`, `evolve` or `matrix`.
    #[arg(long, default_value = "scenario")]
    pub kind: String,
    /// The definition root.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Hash the files as this commit holds them (pinned mode) instead of
    /// the working tree.
    #[arg(long)]
    pub revision: Option<String>,
    /// Print every hashed row too.
    #[arg(long)]
    pub rows: bool,
}
