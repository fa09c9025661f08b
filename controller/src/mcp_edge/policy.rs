//! `chio mcp serve --policy FILE`: the guards the edge's kernel runs,
//! written as a scenario writes them (`[[guards]]` entries: `id`, `kind`,
//! `mode`, `[guards.config]`) and read by the scenario's own reader
//! (`chio_arena::scenario::guard_specs_of` over the scenario model's
//! `GuardDecl`), so a guard means at the edge what it means in a run. The
//! kernel's guard builder then checks each configuration when the kernel
//! starts, as it does for a run's kernel. The guards run in the order the
//! file declares them, and the session's equivalent scenario declares the
//! same guards on its kernel.

use std::path::Path;

use chio_arena::model::GuardDecl;
use chio_kernel::guards::GuardSpec;
use serde::Deserialize;

use crate::error::{codes, CliError};

const COMMAND: &str = "mcp serve";

/// Largest policy file read.
const MAX_POLICY_BYTES: u64 = 1 << 20;

/// The file: guards only.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    guards: Vec<GuardDecl>,
}

fn refused(path: &Path, what: String) -> CliError {
    CliError::new(
        codes::MCP_POLICY,
        COMMAND,
        format!("--policy {}: {what}", path.display()),
        "write [[guards]] entries as a scenario does (docs/scenario-schema.md, \"[[guards]]\")",
    )
}

/// Reads the guards of `path`, in declaration order.
pub fn read(path: &Path) -> Result<Vec<GuardSpec>, CliError> {
    let size = std::fs::metadata(path)
        .map_err(|e| refused(path, format!("cannot be read: {}", e.kind())))?
        .len();
    if size > MAX_POLICY_BYTES {
        return Err(refused(
            path,
            format!("is {size} bytes, over the bound of {MAX_POLICY_BYTES}"),
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| refused(path, format!("cannot be read: {}", e.kind())))?;
    let file: PolicyFile = toml::from_str(&text).map_err(|e| {
        let place = e
            .span()
            .map(|s| format!(" at byte {}", s.start))
            .unwrap_or_default();
        refused(path, format!("is not a file of [[guards]]{place}"))
    })?;
    let specs = chio_arena::scenario::guard_specs_of(&file.guards)
        .map_err(|e| refused(path, e.to_string()))?;
    if let Some(g) = file.guards.iter().find(|g| g.kind.is_none()) {
        return Err(refused(path, format!("guard {} has no kind", g.id)));
    }
    let mut ids = std::collections::BTreeSet::new();
    if let Some(g) = specs.iter().find(|g| !ids.insert(g.id.clone())) {
        return Err(refused(
            path,
            format!("guard id {} is declared twice", g.id),
        ));
    }
    for spec in &specs {
        spec.build()
            .map_err(|e| refused(path, format!("guard {}: {e}", spec.id)))?;
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<Vec<GuardSpec>, CliError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, text).unwrap();
        read(&path)
    }

    // A policy file's guards are read as a scenario's: kind, mode and config in declaration order.
    #[test]
    fn guards_are_read_in_order() {
        let specs = read_text(
            "[[guards]]\nid = \"b\"\nkind = \"forbidden-path\"\nmode = \"observe\"\n[guards.config]\nglobs = [\"**/.env\"]\n\n[[guards]]\nid = \"a\"\nkind = \"prompt-injection\"\n",
        )
        .unwrap();
        let ids: Vec<&str> = specs.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["b", "a"]);
        assert_eq!(specs[0].kind.as_str(), "forbidden-path");
        assert_eq!(specs[0].mode.as_str(), "observe");
        assert_eq!(specs[0].config["globs"][0], "**/.env");
    }

    // Anything but guards, a guard without a kind, an unknown kind, a config key the guard's builder refuses and an id twice are refused with CHIO-MCP-POLICY.
    #[test]
    fn a_policy_the_scenario_reader_refuses_is_refused() {
        for text in [
            "[[budgets]]\nserver = \"s\"\ntool = \"t\"\nmax_invocations = 1\n",
            "[[guards]]\nid = \"g\"\n",
            "[[guards]]\nid = \"g\"\nkind = \"no-such-guard\"\n",
            "[[guards]]\nid = \"g\"\nkind = \"forbidden-path\"\n[guards.config]\nglobz = [\"x\"]\n",
            "[[guards]]\nid = \"g\"\nkind = \"prompt-injection\"\n[[guards]]\nid = \"g\"\nkind = \"prompt-injection\"\n",
            "not toml [",
        ] {
            let err = read_text(text).unwrap_err();
            assert_eq!(err.code, codes::MCP_POLICY.code, "{text}: {}", err.message);
        }
    }
}
