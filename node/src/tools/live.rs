//! A live MCP server's seam: what a live server's actor forwards an
//! admitted call to while `chio arena record` runs a scenario. The node
//! knows no MCP client; the controller implements [`LiveTools`] over its
//! connection to the server and hands it in as a `Live` server's
//! configuration. Only the embedded topology of a recording run hosts one.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use chio_kernel::glob::Glob;
use chio_kernel::label::Label;
use serde_json::Value;

use super::recorded::answer_result;
use super::{ServerState, ToolResult, ToolServer};

/// What a live server answered one call: whether it carried it out, and
/// the output value (see `docs/mcp.md` for how an MCP result maps to it).
#[derive(Debug, Clone, PartialEq)]
pub struct LiveAnswer {
    /// Whether the call was carried out.
    pub ok: bool,
    /// The output value.
    pub output: Value,
}

/// A connection to a live tool server.
pub trait LiveTools: Send + Sync {
    /// Forwards one admitted call and answers what the server answered,
    /// or a failure (`ok: false`) when it did not answer in time; never
    /// waits past the server's timeout.
    fn call(
        &self,
        request_id: String,
        agent: String,
        tool: String,
        arguments: Value,
    ) -> Pin<Box<dyn Future<Output = LiveAnswer> + Send>>;
}

/// A shared handle to a live server, compared by identity.
#[derive(Clone)]
pub struct LiveServer(pub Arc<dyn LiveTools>);

impl fmt::Debug for LiveServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LiveServer")
    }
}

impl PartialEq for LiveServer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl ToolServer {
    /// The live server calls are forwarded to, for a live MCP server.
    pub fn live(&self) -> Option<LiveServer> {
        match &self.state {
            ServerState::Live { live, .. } => Some(live.clone()),
            _ => None,
        }
    }

    /// The result of a live server's answer to a call with `arguments`,
    /// by the rule a recorded answer follows (so its replay answers the
    /// same), with the server's labels and integrity: a live or recorded
    /// server's `labels` globs (no other kind has any) and its integrity
    /// policy. The MCP edge labels an upstream's answer with it, over the
    /// recorded server its session's equivalent scenario declares.
    pub fn live_result(&self, answer: LiveAnswer, arguments: &Value) -> ToolResult {
        let labels: &[(Glob, Label)] = match &self.state {
            ServerState::Live { labels, .. } | ServerState::Recorded { labels, .. } => labels,
            _ => &[],
        };
        let mut result = answer_result(answer.ok, answer.output, labels, arguments);
        result.integrity = result
            .integrity
            .max(self.integrity_of(arguments, &result.content));
        result
    }
}
