//! Terminal conventions: whether output is coloured (`--color`, `NO_COLOR`,
//! `CLICOLOR`, `CLICOLOR_FORCE`) and how `--quiet`/`--verbose` map onto the
//! tracing filter when `RUST_LOG` is not set.
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

use clap::ValueEnum;

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
/// three or more `--verbose`.
pub fn log_filter(quiet: bool, verbose: u8) -> &'static str {
    match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    }
}

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
        assert_eq!(log_filter(false, 2), "debug");
        assert_eq!(log_filter(false, 7), "trace");
    }
}
