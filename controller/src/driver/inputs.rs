//! A run's inputs: the scenario's bytes and the fixture files it read.

use std::collections::BTreeMap;

use chio_arena::bundle::SCENARIO_INPUT;
use chio_arena::fixtures::normalized_folder;
use chio_arena::{Scenario, ScenarioText};
use chio_node::{FixtureSet, NodeError};

/// What the driver needs to know about a scenario's inputs.
#[derive(Debug, Clone)]
pub struct RunInputs {
    /// SHA-256 (hex) of the scenario file's bytes, as run; the bytes
    /// themselves are the scenario's own text (`Scenario::text`), recorded
    /// as `inputs/scenario.toml`.
    pub scenario_sha256: String,
    /// The part of those bytes a node loads: the file without its
    /// `[[steps]]` tables (`Scenario::world_bytes`).
    pub world_bytes: Vec<u8>,
    /// The fixture files, by server.
    pub fixtures: FixtureSet,
    /// The fixture files for the bundle, by path relative to `inputs/`
    /// (the scenario file is written from `text`).
    pub files: BTreeMap<String, Vec<u8>>,
    /// The scenario's bytes as run.
    pub text: ScenarioText,
    /// The tool definitions servers change during the run, which a node
    /// is sent beside the world bytes (they leave the schedule out).
    pub redefinitions: Vec<chio_kernel::contract::Redefinition>,
}

impl RunInputs {
    /// Gathers the fixtures the scenario's loader read; each fixture folder
    /// is recorded under its normalised path (`./a/` as `a`).
    pub fn load(scenario: &Scenario) -> Result<RunInputs, NodeError> {
        let world_bytes = scenario.world_bytes().map_err(spool_error)?;
        Self::gather(scenario, scenario.text().clone(), world_bytes)
    }

    /// As [`Self::load`], for a run whose recorded bytes are `bytes` (a
    /// matrix cell's text with its repetition's seed), which must validate
    /// to `scenario`.
    pub fn load_with_text(scenario: &Scenario, bytes: Vec<u8>) -> Result<RunInputs, NodeError> {
        let world_bytes = chio_arena::world_bytes(scenario, &bytes);
        Self::gather(scenario, ScenarioText::memory(bytes), world_bytes)
    }

    fn gather(
        scenario: &Scenario,
        text: ScenarioText,
        world_bytes: Vec<u8>,
    ) -> Result<RunInputs, NodeError> {
        let fixtures = FixtureSet::load(scenario)?;
        let mut files = BTreeMap::new();
        let scenario_sha256 = text.sha256().to_string();
        for server in &scenario.file().servers {
            let folder = server.fixtures.as_deref().and_then(normalized_folder);
            if let (Some(rel), Some(seeded)) = (folder, fixtures.servers.get(&server.id)) {
                for (path, content) in seeded {
                    files.insert(format!("{rel}/{path}"), content.as_bytes().to_vec());
                }
            }
        }
        let redefinitions = scenario
            .redefinitions()
            .map_err(|e| NodeError::Scenario(e.to_string()))?;
        Ok(RunInputs {
            redefinitions,
            world_bytes,
            scenario_sha256,
            fixtures,
            files,
            text,
        })
    }

    /// Every input file of the bundle, the scenario's bytes included, in memory.
    pub fn all_files(&self) -> Result<BTreeMap<String, Vec<u8>>, NodeError> {
        let mut files = self.files.clone();
        let bytes = self.text.to_vec().map_err(spool_error)?;
        files.insert(SCENARIO_INPUT.to_string(), bytes);
        Ok(files)
    }
}

/// The scenario's bytes could not be read back from where they are kept.
fn spool_error(e: std::io::Error) -> NodeError {
    NodeError::Fixture {
        path: "the scenario's spooled bytes".to_string(),
        cause: e.to_string(),
    }
}
