//! A tool server as its kernel reaches it: a simulated server is called
//! on the kernel's own thread, under a lock, and a live server through an
//! actor that owns it and answers its calls in arrival order. What a call
//! returns is `crate::tools`' business.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

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

/// A handle to a tool server.
#[derive(Debug, Clone)]
pub struct ToolServerHandle {
    id: String,
    serving: Serving,
}

/// How a handle reaches its server.
#[derive(Debug, Clone)]
enum Serving {
    /// A simulated server, called on the caller's thread: a call takes the
    /// lock for its whole length, so calls are answered one at a time, in
    /// the order they take it, as the actor would answer them.
    Direct(Arc<Mutex<ToolServer>>),
    /// A live server, owned by an actor on the runtime, which awaits each
    /// call of the server's client there.
    Actor(mpsc::Sender<ServerCommand>),
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
    /// Serves `server`: a live server from an actor spawned on the
    /// current tokio runtime, any other on its callers' threads.
    pub fn spawn(server: ToolServer) -> Self {
        let id = server.id().to_string();
        if server.live().is_none() {
            let serving = Serving::Direct(Arc::new(Mutex::new(server)));
            return Self { id, serving };
        }
        let (tx, rx) = mpsc::channel(super::MAILBOX);
        let actor = ServerActor { server, rx };
        tokio::spawn(actor.run());
        Self {
            id,
            serving: Serving::Actor(tx),
        }
    }

    /// The server id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The error of a server that can no longer answer: its actor ended,
    /// or a call failed while holding it.
    fn gone(&self) -> NodeError {
        NodeError::ActorGone(format!("tool server {}", self.id))
    }

    /// Calls a tool from a thread outside the runtime (the kernel actor).
    pub fn call_blocking(
        &self,
        caller: Caller<'_>,
        tool: &str,
        arguments: &Value,
        carried: &BTreeSet<String>,
    ) -> Result<ToolResult, NodeError> {
        let tx = match &self.serving {
            Serving::Direct(server) => {
                let mut server = server.lock().map_err(|_| self.gone())?;
                return Ok(server.call(caller, tool, arguments, carried));
            }
            Serving::Actor(tx) => tx,
        };
        let (reply, answer) = oneshot::channel();
        tx.blocking_send(ServerCommand::Call {
            request_id: caller.request_id.to_string(),
            agent: caller.agent.to_string(),
            tool: tool.to_string(),
            arguments: arguments.clone(),
            carried: carried.clone(),
            reply,
        })
        .map_err(|_| self.gone())?;
        answer.blocking_recv().map_err(|_| self.gone())
    }

    /// Changes a file of the server outside any call and answers the
    /// content it had (see `ToolServer::change_file`).
    pub async fn change_file(
        &self,
        path: &str,
        change: FileChange,
    ) -> Result<Option<String>, NodeError> {
        let tx = match &self.serving {
            Serving::Direct(server) => {
                let mut server = server.lock().map_err(|_| self.gone())?;
                return Ok(server.change_file(path, change));
            }
            Serving::Actor(tx) => tx,
        };
        let (reply, answer) = oneshot::channel();
        tx.send(ServerCommand::ChangeFile {
            path: path.to_string(),
            change,
            reply,
        })
        .await
        .map_err(|_| self.gone())?;
        answer.await.map_err(|_| self.gone())
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

    // A simulated server needs no runtime: it is called on the caller's thread, two handles reach one server, and a file changed through one is what the other's next call reads.
    #[test]
    fn a_simulated_server_is_called_on_the_callers_thread() {
        let files = std::collections::BTreeMap::from([(
            "/workspace/notes.txt".to_string(),
            "hello".to_string(),
        )]);
        let handle = ToolServerHandle::spawn(ToolServer::new(
            "ws",
            ToolServerConfig::Workspace {
                root: "/workspace".to_string(),
                files,
                labels: Vec::new(),
            },
        ));
        let other = handle.clone();
        let caller = Caller {
            request_id: "r1",
            agent: "dev",
        };
        let read = |h: &ToolServerHandle| {
            h.call_blocking(
                caller,
                "read_file",
                &json!({"path": "/workspace/notes.txt"}),
                &BTreeSet::new(),
            )
            .unwrap()
            .content["content"]
                .clone()
        };
        assert_eq!(read(&handle), json!("hello"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let change = FileChange::Write("edited".to_string());
        let previous = runtime
            .block_on(other.change_file("/workspace/notes.txt", change))
            .unwrap();
        assert_eq!(previous.as_deref(), Some("hello"));
        assert_eq!(read(&handle), json!("edited"));
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
