//! The outside parts some process tests run (a Python venv with real MCP
//! servers, a headless browser), found through the environment variable
//! `.ci/run` exports for each. Outside CI a missing part skips the test
//! with a message saying how to provide it; under CI (`CI` set) it fails
//! the test, so a green CI run has run every such test for real.

use std::path::PathBuf;

/// One outside part: its variable and what to tell the reader.
#[derive(Debug, Clone, Copy)]
pub struct OutsidePart {
    /// The variable naming the executable.
    pub var: &'static str,
    /// What the executable must be, for the message when it is not a file.
    pub what: &'static str,
    /// How to provide it outside CI.
    pub how: &'static str,
}

/// The python of the venv with `mcp-server-git` and the MCP Python SDK.
pub const MCP_PYTHON: OutsidePart = OutsidePart {
    var: "CHIO_MCP_PYTHON",
    what: "the python of a venv with mcp-server-git (see CONTRIBUTING.md)",
    how: "make the venv as CONTRIBUTING.md says (or run .ci/run)",
};

/// Debian's headless chromium.
pub const CHROMIUM: OutsidePart = OutsidePart {
    var: "CHIO_CHROMIUM",
    what: "a chromium binary (Debian: apt-get install chromium)",
    how: "install chromium (Debian: apt-get install chromium) and export CHIO_CHROMIUM=$(command -v chromium)",
};

/// The executable `part` names, or `None` (the caller's test returns)
/// when its variable is unset outside CI; `tests` says which tests skip.
pub fn outside_part(part: OutsidePart, tests: &str) -> Option<PathBuf> {
    match std::env::var_os(part.var).filter(|v| !v.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            assert!(
                path.is_file(),
                "{} names {}, which is not a file; point it at {}",
                part.var,
                path.display(),
                part.what
            );
            Some(path)
        }
        None if std::env::var_os("CI").is_some() => panic!(
            "{} is not set under CI: .ci/run provides it and exports the variable; run the tests through .ci/run",
            part.var
        ),
        None => {
            eprintln!(
                "skipped: {} is not set; {} to run {tests}",
                part.var, part.how
            );
            None
        }
    }
}
