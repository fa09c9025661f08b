//! The `chio` binary: parse arguments, set up tracing on standard error
//! (`RUST_LOG` when set, otherwise the level `--quiet`/`--verbose` choose),
//! decide colour for each stream (`--color`, `NO_COLOR`), run the command,
//! print a failure as the documented `error[CODE]` block and exit with its
//! documented code.
//!
//! Module map: everything lives in the `chio_controller` library.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::io::IsTerminal;
use std::process::ExitCode;

use chio_controller::term::{log_filter, Tone};
use chio_controller::Palette;
use clap::Parser;

// mimalloc rather than the system allocator: a run allocates on one thread
// and frees on another (a call's request on the agent's task, its decision
// on the kernel's thread, its record on the driver's), which the system
// allocator serves slowly; see docs/benchmarks.md.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = chio_controller::Cli::parse();
    let stderr_palette = Palette::resolve(cli.color, std::io::stderr().is_terminal());
    let stdout_palette = Palette::resolve(cli.color, std::io::stdout().is_terminal());
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.is_empty())
        .and_then(|_| tracing_subscriber::EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(log_filter(cli.quiet, cli.verbose)));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(stderr_palette.enabled)
        .with_writer(std::io::stderr)
        .init();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match chio_controller::run_with(&cli, &mut out, stdout_palette) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let block = err.render();
            let block = match block.strip_prefix("error") {
                Some(rest) if stderr_palette.enabled => {
                    format!("{}{rest}", stderr_palette.paint(Tone::Bad, "error"))
                }
                _ => block,
            };
            eprint!("{block}");
            ExitCode::from(err.exit.code())
        }
    }
}
