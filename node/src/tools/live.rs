//! A live MCP server's seam: what the tool-server actor forwards an
//! admitted call to while `chio arena record` runs a scenario. The node
//! knows no MCP client; the controller implements [`LiveTools`] over its
//! connection to the server and hands it in as a `Live` server's
//! configuration. Only the embedded topology of a recording run hosts one.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

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
