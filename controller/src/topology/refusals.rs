//! What a topology refuses before anything starts: a scenario that needs
//! what the chosen processes cannot give it.

use chio_arena::Scenario;

use chio_node::NodeError;

use super::{topology_error, RunTopology, Topology};
use crate::error::CliError;

/// Refuses, naming the fix, a scenario `topology` cannot run: on node
/// processes, a recorded answer that reads a sealed file (only the
/// controller reads sealed files); on a topology file, fault steps (they
/// need processes the controller owns). Nothing is sent to any node.
pub(super) fn refuse_before_start(
    command: &'static str,
    topology: &RunTopology,
    scenario: &Scenario,
) -> Result<(), CliError> {
    if matches!(topology, RunTopology::Embedded) {
        return Ok(());
    }
    if let Some(server) = sealed_answer_server(scenario) {
        return Err(topology_error(
            command,
            format!(
                "server {server} answers with a sealed file's text, and only the controller reads sealed files: a node process cannot serve that answer"
            ),
            "run the scenario embedded (no --topology)",
        ));
    }
    if let (RunTopology::File(_), Some(fault)) = (topology, scenario.fault_steps().next()) {
        return Err(topology_error(
            command,
            format!(
                "scenario {} declares fault steps (the first: {}), which need processes the controller owns; a topology file names processes it did not start",
                scenario.id(),
                fault.describe()
            ),
            "run the scenario embedded (no --topology) or with --topology local",
        ));
    }
    Ok(())
}

/// The first server with a recorded answer that reads a sealed file
/// (`output = { fixture = ... }`), which only the embedded topology serves.
fn sealed_answer_server(scenario: &Scenario) -> Option<&str> {
    let none = chio_arena::scenario::sealed::SealedSet::new();
    scenario.file().servers.iter().find_map(|server| {
        server
            .answers
            .iter()
            .flatten()
            .any(|answer| {
                matches!(
                    answer.output_json(&none),
                    Err(chio_arena::ArenaError::SealedFixture { .. })
                )
            })
            .then_some(server.id.as_str())
    })
}

/// Refuses `node` when its authority store did not hold the run's witness
/// record: it keeps other state than the trust-control `topology` names.
pub(crate) fn check_witness(
    node: &str,
    topology: &Topology,
    witness_found: bool,
) -> Result<(), NodeError> {
    if witness_found {
        Ok(())
    } else {
        Err(NodeError::AuthorityNotShared {
            node: node.to_string(),
            trust_url: topology.trust_url.clone(),
        })
    }
}
