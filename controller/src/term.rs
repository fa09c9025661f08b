//! Terminal conventions: whether output is coloured (`--color`, `NO_COLOR`,
//! `CLICOLOR`, `CLICOLOR_FORCE`), how `--quiet`/`--verbose` map onto the
//! tracing filter when `RUST_LOG` is not set, and when a long command draws
//! its `indicatif` progress bar (standard error, a terminal, no `--quiet`).
//!
//! Colour is decided once per stream, before a command runs, and handed to
//! the commands that print tables as a [`Palette`]; a command never asks the
//! terminal itself. Colour only ever decorates human-readable text: JSON,
//! bundles and report files are never coloured, so the determinism of every
//! file is untouched by these flags.
//!
//! The `auto` rules follow the conventions of `no-color.org` and
//! `bixense.com/clicolors`: `NO_COLOR` (present and not empty) turns colour
//! off; otherwise `CLICOLOR_FORCE` (present, not empty and not `0`) turns it
//! on even when the stream is not a terminal; otherwise `CLICOLOR=0` turns it
//! off; otherwise colour is used on a terminal whose `TERM` is not `dumb`.
//! An explicit `--color always` or `--color never` wins over the environment,
//! as `no-color.org` asks of per-invocation flags.

use std::ffi::OsString;
use std::io::IsTerminal;

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The `--color` flag's values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour on a terminal, unless the environment says otherwise.
    #[default]
    Auto,
    /// Always colour, whatever the stream and the environment.
    Always,
    /// Never colour.
    Never,
}

/// The colours the human-readable output uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// A held expectation (`pass`, `passed`).
    Good,
    /// A broken expectation or an error (`FAIL`, `error[...]`).
    Bad,
    /// Secondary text (a deny's reason).
    Dim,
}

impl Tone {
    fn sgr(self) -> &'static str {
        match self {
            Tone::Good => "\x1b[32m",
            Tone::Bad => "\x1b[1;31m",
            Tone::Dim => "\x1b[2m",
        }
    }
}

/// Whether one output stream is coloured; passed to the commands that print
/// for people, so the decision is made once and tests can force it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Palette {
    /// True when ANSI colour sequences may be written to the stream.
    pub enabled: bool,
}

impl Palette {
    /// A palette that never colours (files, JSON, in-process callers).
    pub const PLAIN: Palette = Palette { enabled: false };

    /// Decides colour for a stream from the flag, whether the stream is a
    /// terminal, and the process environment.
    pub fn resolve(choice: ColorChoice, is_terminal: bool) -> Self {
        Self::resolve_with(choice, is_terminal, &|key| std::env::var_os(key))
    }

    /// [`Palette::resolve`] with the environment given as a lookup, so the
    /// rules can be tested without touching the process environment.
    pub fn resolve_with(
        choice: ColorChoice,
        is_terminal: bool,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> Self {
        let set = |key: &str| env(key).filter(|v| !v.is_empty());
        let enabled = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                if set("NO_COLOR").is_some() {
                    false
                } else if set("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
                    true
                } else if set("CLICOLOR").is_some_and(|v| v == "0") {
                    false
                } else {
                    is_terminal && set("TERM").is_none_or(|t| t != "dumb")
                }
            }
        };
        Self { enabled }
    }

    /// `text` wrapped in the tone's colour when colour is on, else as is.
    pub fn paint(&self, tone: Tone, text: &str) -> String {
        if self.enabled && !text.is_empty() {
            format!("{}{text}\x1b[0m", tone.sgr())
        } else {
            text.to_string()
        }
    }
}

/// The tracing filter used when `RUST_LOG` is not set: `warn` by default,
/// `error` with `--quiet`, then `info`, `debug` and `trace` for one, two and
/// three or more `--verbose`. Levels past `info` apply to the chio crates
/// only: a dependency's debug output (the MCP SDK logs every message it
/// sends and receives, credentials and tokens included) never reaches the
/// log through `--verbose`; `RUST_LOG` can still ask for it explicitly.
pub fn log_filter(quiet: bool, verbose: u8) -> String {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    if matches!(level, "error" | "warn" | "info") {
        return level.to_string();
    }
    let mut filter = String::from("info");
    for krate in CHIO_CRATES {
        filter.push_str(&format!(",{krate}={level}"));
    }
    filter
}

/// The crates whose own logging `--verbose` raises past `info`.
const CHIO_CRATES: [&str; 9] = [
    "chio",
    "chio_controller",
    "chio_kernel",
    "chio_node",
    "chio_trust",
    "chio_arena",
    "chio_adversary",
    "chio_experiment",
    "chio_campaign",
];

/// Whether a long command draws a progress bar: only on a terminal, and
/// never with `--quiet`.
pub fn shows_progress(quiet: bool, stderr_is_terminal: bool) -> bool {
    stderr_is_terminal && !quiet
}

/// The progress bar of a long command (`arena matrix`, `arena evolve`):
/// `len` units drawn with `template` on standard error, and only there,
/// when [`shows_progress`] says so; otherwise a hidden bar that draws
/// nothing. Progress never reaches standard output or an output file.
pub fn progress_bar(len: u64, template: &str, quiet: bool) -> ProgressBar {
    if !shows_progress(quiet, std::io::stderr().is_terminal()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

pub use chio_arena::report::{printable, printable_json};

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |key| {
            pairs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| OsString::from(v))
        }
    }

    // auto colours a terminal only; NO_COLOR beats CLICOLOR_FORCE; the flag beats both.
    #[test]
    fn auto_follows_the_terminal_and_the_environment() {
        let auto =
            |tty, pairs| Palette::resolve_with(ColorChoice::Auto, tty, &env_of(pairs)).enabled;
        assert!(auto(true, &[]));
        assert!(!auto(false, &[]));
        assert!(!auto(true, &[("NO_COLOR", "1")]));
        assert!(
            auto(true, &[("NO_COLOR", "")]),
            "an empty NO_COLOR is unset"
        );
        assert!(auto(false, &[("CLICOLOR_FORCE", "1")]));
        assert!(!auto(false, &[("CLICOLOR_FORCE", "0")]));
        assert!(!auto(false, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]));
        assert!(!auto(true, &[("CLICOLOR", "0")]));
        assert!(!auto(true, &[("TERM", "dumb")]));
        let no_color = env_of(&[("NO_COLOR", "1")]);
        assert!(Palette::resolve_with(ColorChoice::Always, false, &no_color).enabled);
        assert!(
            !Palette::resolve_with(
                ColorChoice::Never,
                true,
                &env_of(&[("CLICOLOR_FORCE", "1")])
            )
            .enabled
        );
    }

    // A plain palette returns text unchanged; an enabled one wraps it in SGR and a reset.
    #[test]
    fn paint_wraps_only_when_enabled() {
        assert_eq!(Palette::PLAIN.paint(Tone::Bad, "FAIL"), "FAIL");
        assert_eq!(
            Palette { enabled: true }.paint(Tone::Good, "pass"),
            "\x1b[32mpass\x1b[0m"
        );
    }

    // Quiet wins over verbose, and verbosity climbs from warn to trace.
    #[test]
    fn quiet_and_verbose_map_onto_levels() {
        assert_eq!(log_filter(false, 0), "warn");
        assert_eq!(log_filter(true, 0), "error");
        assert_eq!(log_filter(false, 1), "info");
        let debug = log_filter(false, 2);
        assert!(
            debug.starts_with("info,") && debug.contains(",chio_kernel=debug"),
            "{debug}"
        );
        assert!(!debug.contains("rmcp"), "dependencies stay at info");
        let trace = log_filter(false, 7);
        assert!(
            trace.contains(",chio_controller=trace") && trace.starts_with("info,"),
            "{trace}"
        );
        for filter in [debug, trace] {
            assert!(
                tracing_subscriber::EnvFilter::try_new(&filter).is_ok(),
                "{filter}"
            );
        }
    }

    // A progress bar is drawn only on a terminal without --quiet, and the hidden bar draws nothing.
    #[test]
    fn progress_only_on_a_terminal_without_quiet() {
        assert!(shows_progress(false, true));
        assert!(!shows_progress(true, true));
        assert!(!shows_progress(false, false));
        assert!(!shows_progress(true, false));
        assert!(progress_bar(3, "{pos}/{len}", true).is_hidden());
    }

    // Control characters and bidirectional overrides are escaped; other text, Unicode included, is left as it is.
    #[test]
    fn printable_escapes_what_a_terminal_acts_on() {
        assert_eq!(printable("plain été"), "plain été");
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(
            printable("a\u{1b}]0;owned\u{7}b\nc\u{202e}d\u{9b}"),
            "a\\u{1b}]0;owned\\u{7}b\\u{a}c\\u{202e}d\\u{9b}"
        );
    }
}
