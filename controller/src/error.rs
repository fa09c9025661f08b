//! The CLI's error type and its one rendering.
//!
//! Every `chio` command reports a failure as a [`CliError`] and the binary
//! prints it with [`CliError::render`] as the block documented in
//! `docs/errors.md`:
//!
//! ```text
//! error[CHIO-SCENARIO-DUPLICATE-ID]: arena validate: duplicate agent id "x" at agents[1].id
//!   help: give each agent a unique id
//!   code: urn:chio:error:scenario:duplicate-id
//!   docs: https://chio.computer/docs/reference/errors#error-scenario-duplicate-id
//! ```
//!
//! The URN and the docs anchor are derived from the code, so a new code
//! needs only its heading in `docs/errors.md`. Exit codes are [`Exit`].

use chio_arena::ArenaError;

/// Where `docs/errors.md` is published; each code has an anchor there.
pub const ERRORS_DOC_URL: &str = "https://chio.computer/docs/reference/errors";

/// Codes the controller raises itself (the scenario codes are
/// `chio_arena::ERROR_CODES`); each has a heading in `docs/errors.md`.
pub const CLI_ERROR_CODES: &[&str] = &[
    "CHIO-CLI-OUTPUT",
    "CHIO-ARENA-WORLD",
    "CHIO-ARENA-UNEXPECTED-VERDICT",
    "CHIO-ARENA-UNEXPECTED-REASON",
    "CHIO-ARENA-INFRASTRUCTURE",
    "CHIO-ARENA-DRIFT",
    "CHIO-TOPOLOGY-INVALID",
    "CHIO-SERVE-CONFIG",
    "CHIO-EVAL-UNREADABLE",
    "CHIO-EVAL-NOT-JSON",
    "CHIO-EVAL-NOT-AN-OBJECT",
    "CHIO-EVAL-MISSING-FIELD",
    "CHIO-EVAL-UNKNOWN-FIELD",
    "CHIO-EVAL-INVALID-FIELD",
    "CHIO-EVAL-MISSING-CLOCK",
    "CHIO-EVAL-OUT-OF-RANGE",
    "CHIO-CLI-FLAG-OUT-OF-RANGE",
    "CHIO-REPORT-WRITE",
];

/// The documented process exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the command did what was asked.
    Success,
    /// 1: the command ran but an expected verdict or check did not hold.
    ExpectationFailed,
    /// 2: the input (file, flag, scenario) was refused; nothing was written.
    InvalidInput,
    /// 3: something outside the input failed (output stream, store, peer).
    Infrastructure,
}

impl Exit {
    /// The numeric process exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::ExpectationFailed => 1,
            Exit::InvalidInput => 2,
            Exit::Infrastructure => 3,
        }
    }
}

/// A typed CLI failure: what to print and how to exit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{command}: {message}; {help}")]
pub struct CliError {
    /// The stable code, such as `CHIO-CLI-FLAG-OUT-OF-RANGE`.
    pub code: String,
    /// The command that failed, such as `arena validate`.
    pub command: &'static str,
    /// What went wrong, naming the field or flag.
    pub message: String,
    /// How to fix it.
    pub help: String,
    /// The exit code to leave with.
    pub exit: Exit,
}

impl CliError {
    /// Wraps an arena error. Whether it is an infrastructure failure (exit 3,
    /// such as a bundle the disk could not hold) or a refused input (exit 2)
    /// is decided once, by [`ArenaError::is_infrastructure`].
    pub fn from_arena(command: &'static str, err: &ArenaError) -> Self {
        let exit = if err.is_infrastructure() {
            Exit::Infrastructure
        } else {
            Exit::InvalidInput
        };
        Self {
            code: err.code().to_string(),
            command,
            message: err.summary(),
            help: err.help(),
            exit,
        }
    }

    /// Writing to standard output failed.
    pub fn output(command: &'static str, err: &std::io::Error) -> Self {
        Self {
            code: "CHIO-CLI-OUTPUT".to_string(),
            command,
            message: format!("cannot write to standard output: {}", err.kind()),
            help: "check that the output pipe or file is writable".to_string(),
            exit: Exit::Infrastructure,
        }
    }

    /// Wraps a node failure: a world that cannot be resolved is invalid
    /// input, anything else an infrastructure failure.
    pub fn node(command: &'static str, err: &chio_node::NodeError) -> Self {
        use chio_node::NodeError;
        match err {
            NodeError::Scenario(_) | NodeError::Fixture { .. } => Self {
                code: "CHIO-ARENA-WORLD".to_string(),
                command,
                message: err.to_string(),
                help: "fix the scenario's world declarations or its fixture files".to_string(),
                exit: Exit::InvalidInput,
            },
            _ => Self::infrastructure(command, err.to_string()),
        }
    }

    /// Something outside the input failed.
    pub fn infrastructure(command: &'static str, message: String) -> Self {
        Self {
            code: "CHIO-ARENA-INFRASTRUCTURE".to_string(),
            command,
            message,
            help:
                "check the named node or store and run again; the bundle keeps every receipt so far"
                    .to_string(),
            exit: Exit::Infrastructure,
        }
    }

    /// The code's URN, such as `urn:chio:error:scenario:duplicate-id`.
    pub fn urn(&self) -> String {
        let (domain, rest) = split_code(&self.code);
        format!("urn:chio:error:{domain}:{rest}")
    }

    /// The code's documentation link.
    pub fn docs_url(&self) -> String {
        format!("{ERRORS_DOC_URL}#{}", docs_anchor(&self.code))
    }

    /// The four-line block printed on standard error.
    pub fn render(&self) -> String {
        format!(
            "error[{}]: {}: {}\n  help: {}\n  code: {}\n  docs: {}\n",
            self.code,
            self.command,
            self.message,
            self.help,
            self.urn(),
            self.docs_url()
        )
    }
}

/// Splits `CHIO-SCENARIO-DUPLICATE-ID` into `("scenario", "duplicate-id")`.
fn split_code(code: &str) -> (String, String) {
    let lower = code
        .strip_prefix("CHIO-")
        .unwrap_or(code)
        .to_ascii_lowercase();
    match lower.split_once('-') {
        Some((domain, rest)) => (domain.to_string(), rest.to_string()),
        None => (lower, String::new()),
    }
}

/// The heading anchor of a code in `docs/errors.md`, such as
/// `error-scenario-duplicate-id`.
pub fn docs_anchor(code: &str) -> String {
    let (domain, rest) = split_code(code);
    format!("error-{domain}-{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    // The rendering matches the documented block byte for byte.
    #[test]
    fn renders_the_documented_block() {
        let err = CliError {
            code: "CHIO-CLI-FLAG-OUT-OF-RANGE".into(),
            command: "arena evolve",
            message: "--generations must be at most 200".into(),
            help: "pass --generations 200 or fewer".into(),
            exit: Exit::InvalidInput,
        };
        assert_eq!(
            err.render(),
            "error[CHIO-CLI-FLAG-OUT-OF-RANGE]: arena evolve: --generations must be at most 200\n  help: pass --generations 200 or fewer\n  code: urn:chio:error:cli:flag-out-of-range\n  docs: https://chio.computer/docs/reference/errors#error-cli-flag-out-of-range\n"
        );
    }
}
