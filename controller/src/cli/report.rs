//! `chio report`: the HTML report's arguments.

use std::path::PathBuf;

use clap::Args;

/// `chio report PATH --out FILE.html [--declaration DECL|MATRIX]`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run bundle, an evolve output folder, a matrix output folder or a
    /// campaign ledger.
    pub path: PathBuf,
    /// The HTML file to write.
    #[arg(long, value_name = "FILE.html")]
    pub out: PathBuf,
    /// The campaign declaration, when PATH is a campaign ledger; the
    /// matrix file, when PATH is a matrix output folder.
    #[arg(long, value_name = "DECL")]
    pub declaration: Option<PathBuf>,
}
