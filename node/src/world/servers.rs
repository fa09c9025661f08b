//! The world's tool servers: each placed on its kernel's node with its
//! configuration (simulated, recorded, or an MCP server replayed from its
//! recording), its integrity policy and its labels.

use std::collections::BTreeMap;

use chio_arena::model::ServerDecl;
use chio_arena::scenario::sealed::SealedSet;
use chio_arena::{Scenario, ServerKind};
use chio_kernel::label::{Integrity, Label};

use super::{kernel_node, FixtureSet, ServerPlan};
use crate::error::NodeError;
use crate::tools::{AnswerMatch, IntegrityPolicy, RecordedAnswer, ToolServer, ToolServerConfig};

/// Every tool server placed on its kernel's node, seeded from `fixtures`.
pub(super) fn resolve_servers(
    scenario: &Scenario,
    fixtures: &FixtureSet,
) -> Result<BTreeMap<String, ServerPlan>, NodeError> {
    let file = scenario.file();
    let mut servers = BTreeMap::new();
    for server in &file.servers {
        let node = kernel_node(scenario, &server.kernel)?;
        servers.insert(
            server.id.clone(),
            ServerPlan {
                id: server.id.clone(),
                kernel: server.kernel.clone(),
                node,
                config: server_config(server, fixtures, scenario.sealed())?,
                integrity: integrity_policy(server)?,
                outputs: chio_arena::scenario::tools::output_rules(server),
            },
        );
    }

    Ok(servers)
}

/// The recorded server `server` declares, answering no call, for what
/// labels an answer of it carries ([`ToolServer::live_result`]): its
/// `labels` globs and its integrity policy, checked as a run checks them.
/// The MCP edge labels each upstream's answers with it.
pub fn answer_labeller(server: &ServerDecl) -> Result<ToolServer, NodeError> {
    let config = ToolServerConfig::Recorded {
        answers: Vec::new(),
        labels: server_labels(server)?,
    };
    Ok(ToolServer::new(server.id.clone(), config).with_integrity(integrity_policy(server)?))
}

fn integrity_policy(server: &ServerDecl) -> Result<IntegrityPolicy, NodeError> {
    let parse = |text: &str, field: &str| {
        Integrity::parse(text).ok_or_else(|| {
            NodeError::Scenario(format!(
                "server {} {field} {text} is not trusted or untrusted",
                server.id
            ))
        })
    };
    let default = match &server.integrity {
        Some(text) => parse(text, "integrity")?,
        None => Integrity::Trusted,
    };
    let mut globs = Vec::new();
    for (glob, level) in server.integrity_globs.iter().flatten() {
        globs.push((glob.clone(), parse(level, "integrity_globs")?));
    }
    Ok(IntegrityPolicy { default, globs })
}

fn server_config(
    server: &ServerDecl,
    fixtures: &FixtureSet,
    sealed: &SealedSet,
) -> Result<ToolServerConfig, NodeError> {
    let kind = ServerKind::parse(&server.kind)
        .ok_or_else(|| NodeError::Scenario(format!("server {} has unknown kind", server.id)))?;
    Ok(match kind {
        ServerKind::Workspace => {
            let root = server.root_or_default().trim_end_matches('/').to_string();
            let mut files = BTreeMap::new();
            if let Some(seeded) = fixtures.servers.get(&server.id) {
                for (rel, content) in seeded {
                    files.insert(format!("{root}/{rel}"), content.clone());
                }
            }
            ToolServerConfig::Workspace {
                root,
                files,
                labels: server_labels(server)?,
            }
        }
        ServerKind::Publish => ToolServerConfig::Publish,
        ServerKind::TestRunner => ToolServerConfig::TestRunner {
            failing: server.failing.iter().flatten().cloned().collect(),
        },
        ServerKind::Http => ToolServerConfig::Http,
        ServerKind::Recorded => ToolServerConfig::Recorded {
            answers: recorded_answers(server, sealed)?,
            labels: server_labels(server)?,
        },
        ServerKind::Bank => ToolServerConfig::Bank,
        ServerKind::Mcp => ToolServerConfig::Recorded {
            answers: replayed_answers(server, fixtures)?,
            labels: server_labels(server)?,
        },
    })
}

/// An mcp server replayed from its recording, which travels in the fixture
/// set under the server's id: each recorded call answers its request id
/// (its step), once, and only while the step makes the call recorded for
/// it (its agent, tool and arguments). A world
/// without the recording is refused: only `chio arena record` talks to
/// the live server.
fn replayed_answers(
    server: &ServerDecl,
    fixtures: &FixtureSet,
) -> Result<Vec<RecordedAnswer>, NodeError> {
    use chio_arena::recording::{parse_recording, RECORDING_FIXTURE};
    let text = fixtures
        .servers
        .get(&server.id)
        .and_then(|files| files.get(RECORDING_FIXTURE))
        .ok_or_else(|| {
            NodeError::Scenario(format!(
                "mcp server {} has no recording: record it with chio arena record FILE --out DIR and replay it with chio arena run FILE --replay-from DIR",
                server.id
            ))
        })?;
    let recording = parse_recording(text.as_bytes(), &server.id)
        .map_err(|e| NodeError::Scenario(e.to_string()))?;
    recording
        .calls
        .into_iter()
        .map(|call| {
            let arguments = chio_kernel::canonical::canonical_bytes(&call.arguments)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(|| {
                    NodeError::Scenario(format!(
                        "the recording of mcp server {} holds arguments of call {} with no canonical JSON form",
                        server.id, call.request_id
                    ))
                })?;
            Ok(RecordedAnswer {
                matches: AnswerMatch::StepCall {
                    step: call.request_id,
                    agent: call.agent,
                    tool: call.tool,
                    arguments,
                },
                ok: call.ok,
                output: call.output,
            })
        })
        .collect()
}

/// A server's `labels` globs, each with its parsed label.
fn server_labels(server: &ServerDecl) -> Result<Vec<(String, Label)>, NodeError> {
    let mut labels = Vec::new();
    for (glob, label) in server.labels.iter().flatten() {
        let parsed = Label::parse(label).ok_or_else(|| {
            NodeError::Scenario(format!(
                "server {} label {label} is not public, internal, confidential or restricted",
                server.id
            ))
        })?;
        labels.push((glob.clone(), parsed));
    }
    Ok(labels)
}

/// A recorded server's answers, in declaration order, each call answer's
/// arguments in canonical JSON, each output read by the value grammar
/// (its sealed files from `sealed`).
fn recorded_answers(
    server: &ServerDecl,
    sealed: &SealedSet,
) -> Result<Vec<RecordedAnswer>, NodeError> {
    let invalid = |j: usize, why: &str| {
        NodeError::Scenario(format!("server {} answers[{j}] {why}", server.id))
    };
    let mut answers = Vec::new();
    for (j, answer) in server.answers.iter().flatten().enumerate() {
        let matches = match (&answer.step, &answer.agent, &answer.tool) {
            (Some(step), _, _) => AnswerMatch::Step(step.clone()),
            (None, Some(agent), Some(tool)) => {
                let arguments = answer
                    .arguments_json()
                    .map_err(|_| invalid(j, "has arguments JSON cannot hold"))?;
                let canonical = chio_kernel::canonical::canonical_bytes(&arguments)
                    .map_err(|_| invalid(j, "has arguments with no canonical JSON form"))?;
                AnswerMatch::Call {
                    agent: agent.clone(),
                    tool: tool.clone(),
                    arguments: String::from_utf8(canonical)
                        .map_err(|_| invalid(j, "has arguments that are not UTF-8"))?,
                }
            }
            _ => return Err(invalid(j, "names neither a step nor an agent and a tool")),
        };
        answers.push(RecordedAnswer {
            matches,
            ok: answer.ok.unwrap_or(true),
            output: answer.output_json(sealed).map_err(|e| match e {
                chio_arena::ArenaError::SealedFixture { .. } => {
                    NodeError::Scenario(format!("server {} answers[{j}]: {e}", server.id))
                }
                _ => invalid(j, "has an output JSON cannot hold"),
            })?,
        });
    }
    Ok(answers)
}
