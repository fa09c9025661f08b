//! The tool-server actor: owns one simulated server and answers its calls
//! in arrival order. What a call returns is `crate::tools`' business.

use std::collections::BTreeSet;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::error::NodeError;
use crate::tools::{Caller, FileChange, ToolResult, ToolServer};

enum ServerCommand {
    Call {
        request_id: String,
        agent: String,
        tool: String,
        arguments: Value,
        carried: BTreeSet<String>,
        reply: oneshot::Sender<ToolResult>,
    },
    ChangeFile {
        path: String,
        change: FileChange,
        reply: oneshot::Sender<Option<String>>,
    },
}

/// A handle to a running tool-server actor.
#[derive(Debug, Clone)]
pub struct ToolServerHandle {
    id: String,
    tx: mpsc::Sender<ServerCommand>,
}

struct ServerActor {
    server: ToolServer,
    rx: mpsc::Receiver<ServerCommand>,
}

impl ServerActor {
    async fn run(mut self) {
        while let Some(command) = self.rx.recv().await {
            match command {
                ServerCommand::Call {
                    request_id,
                    agent,
                    tool,
                    arguments,
                    carried,
                    reply,
                } => {
                    let result = match self.server.live() {
                        // A live server is awaited here, one call at a
                        // time in arrival order; it answers within its
                        // own timeout.
                        Some(live) => {
                            let answer = live
                                .0
                                .call(request_id, agent, tool, arguments.clone())
                                .await;
                            self.server.live_result(answer, &arguments)
                        }
                        None => {
                            let caller = Caller {
                                request_id: &request_id,
                                agent: &agent,
                            };
                            self.server.call(caller, &tool, &arguments, &carried)
                        }
                    };
                    // The caller may have given up; the call still happened.
                    let _ = reply.send(result);
                }
                ServerCommand::ChangeFile {
                    path,
                    change,
                    reply,
                } => {
                    let previous = self.server.change_file(&path, change);
                    let _ = reply.send(previous);
                }
            }
        }
    }
}

impl std::fmt::Debug for ServerCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerCommand::Call { tool, .. } => write!(f, "Call({tool})"),
            ServerCommand::ChangeFile { path, .. } => write!(f, "ChangeFile({path})"),
        }
    }
}

impl ToolServerHandle {
    /// Spawns the actor on the current tokio runtime.
    pub fn spawn(server: ToolServer) -> Self {
        let (tx, rx) = mpsc::channel(super::MAILBOX);
        let id = server.id().to_string();
        let actor = ServerActor { server, rx };
        tokio::spawn(actor.run());
        Self { id, tx }
    }

    /// The server id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Calls a tool from a thread outside the runtime (the kernel actor).
    pub fn call_blocking(
        &self,
        caller: Caller<'_>,
        tool: &str,
        arguments: &Value,
        carried: &BTreeSet<String>,
    ) -> Result<ToolResult, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .blocking_send(ServerCommand::Call {
                request_id: caller.request_id.to_string(),
                agent: caller.agent.to_string(),
                tool: tool.to_string(),
                arguments: arguments.clone(),
                carried: carried.clone(),
                reply,
            })
            .map_err(|_| NodeError::ActorGone(format!("tool server {}", self.id)))?;
        answer
            .blocking_recv()
            .map_err(|_| NodeError::ActorGone(format!("tool server {}", self.id)))
    }

    /// Changes a file of the server outside any call and answers the
    /// content it had (see `ToolServer::change_file`).
    pub async fn change_file(
        &self,
        path: &str,
        change: FileChange,
    ) -> Result<Option<String>, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(ServerCommand::ChangeFile {
                path: path.to_string(),
                change,
                reply,
            })
            .await
            .map_err(|_| NodeError::ActorGone(format!("tool server {}", self.id)))?;
        answer
            .await
            .map_err(|_| NodeError::ActorGone(format!("tool server {}", self.id)))
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};

    use chio_kernel::label::Label;
    use serde_json::json;

    use super::*;
    use crate::tools::{
        AnswerMatch, LiveAnswer, LiveServer, LiveTools, RecordedAnswer, ToolServerConfig,
    };

    /// A live server that answers every call with its tool's name, and
    /// `slow` as not performed, keeping what it was sent.
    struct Echo(Arc<Mutex<Vec<String>>>);

    impl LiveTools for Echo {
        fn call(
            &self,
            request_id: String,
            _agent: String,
            tool: String,
            _arguments: Value,
        ) -> Pin<Box<dyn Future<Output = LiveAnswer> + Send>> {
            self.0.lock().unwrap().push(request_id);
            Box::pin(async move {
                LiveAnswer {
                    ok: tool != "slow",
                    output: json!(tool),
                }
            })
        }
    }

    // The actor forwards each call to a live server in arrival order, and the answer is the result a recorded server gives for the same recorded answer, label of the path argument included, so a replay answers what the live run answered.
    #[test]
    fn a_live_answer_is_the_result_its_replay_gives() {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let labels = vec![("/secret/**".to_string(), Label::Confidential)];
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let live = runtime.block_on(async {
            ToolServerHandle::spawn(ToolServer::new(
                "git",
                ToolServerConfig::Live {
                    live: LiveServer(Arc::new(Echo(Arc::clone(&sent)))),
                    labels: labels.clone(),
                },
            ))
        });
        let calls = [
            ("a", "read", json!({"path": "/secret/x"})),
            ("b", "slow", json!({})),
        ];
        let answers: Vec<RecordedAnswer> = calls
            .iter()
            .map(|(step, tool, _)| RecordedAnswer {
                matches: AnswerMatch::Step(step.to_string()),
                ok: *tool != "slow",
                output: json!(tool),
            })
            .collect();
        let mut replay = ToolServer::new("git", ToolServerConfig::Recorded { answers, labels });
        let carried = BTreeSet::new();
        for (step, tool, arguments) in &calls {
            let caller = Caller {
                request_id: step,
                agent: "dev",
            };
            let live_result = live
                .call_blocking(caller, tool, arguments, &carried)
                .unwrap();
            let replayed = replay.call(caller, tool, arguments, &carried);
            assert_eq!(live_result, replayed, "step {step}");
        }
        assert_eq!(*sent.lock().unwrap(), ["a", "b"]);
        drop(live);
        runtime.shutdown_background();
    }
}
