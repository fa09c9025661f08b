//! The MCP server role of the edge.
//!
//! `tools/list` answers the upstream tools the presented capability covers
//! (`_meta["chio/capability"]`, checked by the kernel's capability
//! verification: issuer, signature, window, chain), and nothing without a
//! valid one. `tools/call` reads the wall clock once (its admission
//! instant, recorded), assembles the kernel's request from the call and its
//! `_meta` (`present`), and runs the kernel: admit; on admission, forward
//! to the upstream serving the tool and complete with its answer (the
//! post-invocation guards, the second revocation look-up, budgets
//! committed, the receipt appended), or abort when the upstream fails. The
//! kernel reads the answer as `chio arena record` reads a live server's
//! ([`crate::mcp_answer`], the tool's declared output schema applied), and
//! the client gets what the kernel released, as a result ([`released`]). A
//! deny, whoever decides it, is a tool result with `isError: true` whose
//! text starts with the reason code; the upstream never sees a call the
//! kernel did not admit.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chio_arena::recording::{answer_out_of_bounds, nesting, MAX_SCENARIO_VALUE_DEPTH};
use chio_kernel::canonical::to_canonical_vec;
use chio_kernel::kernel::{Admission, Decision};
use chio_kernel::verdict::Verdict;
use chio_node::tools::tool_output;
use chio_node::tools::ToolServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, MetaObject, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};

use super::kernel::EdgeKernel;
use super::present;
use super::session::{CallRecord, Session};
use super::upstream::Upstreams;
use super::wall_ms;
use crate::mcp_answer::recorded_answer;

/// What the server needs; a clone shares every part (the kernel thread,
/// the upstreams, the session folder), so each streamable HTTP session
/// runs the one pipeline.
#[derive(Clone)]
pub struct Edge {
    /// The kernel thread.
    pub kernel: EdgeKernel,
    /// The upstreams.
    pub upstreams: Arc<Upstreams>,
    /// How each upstream's answers are labelled, by upstream id: the
    /// recorded server its session's equivalent scenario declares.
    pub labellers: Arc<BTreeMap<String, ToolServer>>,
    /// The session folder, when written.
    pub session: Option<Arc<Session>>,
    /// Largest canonical size of a call's arguments.
    pub max_argument_bytes: usize,
    /// Deadline of an upstream call.
    pub upstream_timeout: Duration,
    /// The calls being decided, which the session waits for when it ends.
    pub in_flight: Arc<InFlight>,
}

/// The calls an edge is deciding: a session ends only after each call
/// that arrived before the signal is answered and recorded, so a call the
/// upstream received is never missing from the session's record.
#[derive(Debug, Default)]
pub struct InFlight {
    count: std::sync::atomic::AtomicUsize,
    settled: tokio::sync::Notify,
    closed: std::sync::atomic::AtomicBool,
}

/// One call being decided; dropping it counts the call answered.
struct Flight(Arc<InFlight>);

impl Drop for Flight {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.settled.notify_waiters();
        }
    }
}

impl InFlight {
    /// The call, counted, or `None` once the session is ending.
    fn enter(self: &Arc<Self>) -> Option<Flight> {
        use std::sync::atomic::Ordering;
        self.count.fetch_add(1, Ordering::SeqCst);
        let flight = Flight(self.clone());
        (!self.closed.load(Ordering::SeqCst)).then_some(flight)
    }

    /// Takes no more calls, then waits until no call is being decided, or
    /// `within` has passed; answers how many calls are still being decided.
    pub async fn settle(&self, within: Duration) -> usize {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let left = self.count.load(std::sync::atomic::Ordering::SeqCst);
            if left == 0 {
                return 0;
            }
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep_until(deadline) => return left,
            }
        }
    }
}

/// An edge refusal decided before the kernel (no receipt).
fn refusal(code: &str, reason: &str) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!("{code}: {reason}"))]);
    result.structured_content = Some(json!({
        "verdict": "deny", "reason_code": code, "reason": reason,
    }));
    result
}

/// The result a client gets for `released`, the answer the kernel
/// released (`{"ok", "output"}`, as a guard may have rewritten it): an
/// output read from the upstream's structured content (`structured`) as
/// structured content with its JSON as the one text block, as MCP asks of
/// a tool with structured output; a text as one text block; content blocks
/// as themselves; anything else as its JSON in one text block; an error
/// result when it is not performed. The client gets exactly what the
/// kernel's guards read and its receipt binds, never a part of the
/// upstream's result the recorded answer leaves out.
fn released(released: &Value, structured: bool) -> CallToolResult {
    let output = released.get("output").unwrap_or(released).clone();
    let text = |v: &Value| vec![ContentBlock::text(v.to_string())];
    let content = match &output {
        _ if structured => text(&output),
        Value::String(s) => vec![ContentBlock::text(s.clone())],
        Value::Array(blocks) => {
            serde_json::from_value::<Vec<ContentBlock>>(Value::Array(blocks.clone()))
                .unwrap_or_else(|_| text(&output))
        }
        other => text(other),
    };
    let mut result = if released.get("ok") == Some(&Value::Bool(false)) {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    if structured {
        result.structured_content = Some(output);
    }
    result
}

/// The answer to a kernel decision: its released output (its structured
/// content when `structured`), or the deny.
fn answer(decision: &Decision, structured: bool) -> CallToolResult {
    let receipt = json!({
        "chio/receipt": {
            "id": decision.receipt.id,
            "verdict": decision.projected(),
            "recorded": decision.recorded,
        }
    });
    let meta = match receipt {
        Value::Object(map) => Some(MetaObject(map)),
        _ => None,
    };
    let mut result = match (&decision.verdict, &decision.output) {
        (Verdict::Allow, Some(output)) => released(output, structured),
        _ => {
            let code = decision
                .trace
                .reason_code
                .map(|c| c.as_str().to_string())
                .unwrap_or_else(|| "deny".to_string());
            let reason = decision.reason.clone().unwrap_or_default();
            let mut r = refusal(&code, &reason);
            if let Some(Value::Object(s)) = r.structured_content.as_mut() {
                s.insert(
                    "receipt_id".into(),
                    Value::String(decision.receipt.id.clone()),
                );
                s.insert("verdict".into(), json!(decision.projected()));
            }
            r
        }
    };
    result.meta = meta;
    result
}

/// Why a session cannot record `answered`, an upstream's answer, if it
/// cannot: past a recorded answer's bounds, or nested deeper than a
/// scenario holds.
fn unrecordable(answered: &Value) -> Option<String> {
    answer_out_of_bounds(answered).or_else(|| {
        let depth = nesting(answered);
        (depth > MAX_SCENARIO_VALUE_DEPTH).then(|| {
            format!("it nests {depth} levels, past the {MAX_SCENARIO_VALUE_DEPTH} a scenario holds")
        })
    })
}

impl Edge {
    /// The server of the tool `name`: its upstream's id, or, for a tool no
    /// upstream declares, the first server the presented capability names,
    /// so the kernel's contract check refuses it with its own reason.
    fn server_of(&self, name: &str, meta: &Map<String, Value>) -> String {
        self.upstreams.route.get(name).cloned().unwrap_or_else(|| {
            present::capability(meta)
                .ok()
                .and_then(|t| t.scope.first().map(|g| g.server.clone()))
                .unwrap_or_default()
        })
    }

    async fn decide(
        &self,
        params: CallToolRequestParams,
        meta: Map<String, Value>,
    ) -> CallToolResult {
        let Some(_flight) = self.in_flight.enter() else {
            return refusal(
                "edge-stopping",
                "the edge is ending its session after a signal; the call was not decided",
            );
        };
        let now_ms = wall_ms();
        let tool = params.name.to_string();
        let server = self.server_of(&tool, &meta);
        let arguments = Upstreams::arguments(params.arguments.as_ref());
        let mut record = CallRecord::new(now_ms, &server, &tool);
        let size = match chio_kernel::canonical::first_inexact_integer(&arguments, "") {
            // A float past 2^53 is an integer literal the parse rounded.
            Some(_) => Err(()),
            None => to_canonical_vec(&arguments)
                .map(|b| b.len())
                .map_err(|_| ()),
        };
        let result = match size {
            Err(_) => refusal(
                "edge-arguments-uncanonical",
                "the arguments have no canonical JSON form (an integer past 2^53)",
            ),
            Ok(n) if n > self.max_argument_bytes => refusal(
                "edge-arguments-too-large",
                &format!(
                    "the arguments are {n} bytes of canonical JSON, over the edge's bound of {}",
                    self.max_argument_bytes
                ),
            ),
            // The session's scenario holds every call's arguments, and a
            // scenario holds no deeper value.
            Ok(_) if nesting(&arguments) > MAX_SCENARIO_VALUE_DEPTH => refusal(
                "edge-arguments-too-deep",
                &format!(
                    "the arguments nest {} levels, past the {MAX_SCENARIO_VALUE_DEPTH} a session's scenario can hold",
                    nesting(&arguments)
                ),
            ),
            Ok(_) => match present::request(&meta, &server, &tool, arguments) {
                Err(e) => refusal(e.code(), &e.to_string()),
                Ok(request) => {
                    record.request = serde_json::to_value(&request).ok();
                    self.run_kernel(request, now_ms, &mut record).await
                }
            },
        };
        record.answer(&result);
        if let Some(session) = &self.session {
            session.append(&record);
        }
        result
    }

    async fn run_kernel(
        &self,
        request: chio_kernel::request::ToolCallRequest,
        now_ms: u64,
        record: &mut CallRecord,
    ) -> CallToolResult {
        let gone =
            |e: super::kernel::KernelThreadError| refusal("edge-kernel-stopped", &e.to_string());
        let (admission, place) = match self.kernel.admit(request, now_ms).await {
            Err(e) => return gone(e),
            Ok(admitted) => admitted,
        };
        record.admission = Some(place);
        let ticket = match admission {
            Admission::Decided(decision) => {
                record.decision(&decision);
                return answer(&decision, false);
            }
            Admission::Admitted(ticket) => ticket,
        };
        let request = ticket.request();
        let server = &request.server;
        let called = match (self.upstreams.by_id.get(server), self.labellers.get(server)) {
            (Some(upstream), Some(labeller)) => upstream
                .call(&request.tool, &request.arguments, self.upstream_timeout)
                .await
                .map(|result| (result, labeller)),
            _ => Err(super::upstream::CallFailure {
                reason: format!("no upstream serves {server}"),
                sent: false,
            }),
        };
        // An answer a session cannot record is not released: the upstream
        // received the call, so it may have carried it out.
        let called = called.and_then(|(result, labeller)| {
            let answered = serde_json::to_value(&result).unwrap_or(Value::Null);
            match unrecordable(&answered) {
                Some(why) => Err(super::upstream::CallFailure {
                    reason: format!(
                        "upstream {server} answered what a session cannot record ({why}); it may have carried the call out"
                    ),
                    sent: true,
                }),
                None => Ok((result, labeller)),
            }
        });
        let mut structured = false;
        let decided = match called {
            Ok((result, labeller)) => {
                let answered = serde_json::to_value(&result).unwrap_or(Value::Null);
                // The kernel reads an upstream's answer as `chio arena
                // record` reads a live server's, the tool's output schema
                // applied, labelled as the recorded server of the session's
                // scenario labels it, so a session replays as that scenario.
                let contract = self.upstreams.contract(server, &request.tool);
                let read = recorded_answer(&answered, server, contract);
                record.upstream = Some(answered);
                structured = read.structured;
                let output = tool_output(labeller.live_result(read.answer, &request.arguments));
                self.kernel.complete(*ticket, output, now_ms).await
            }
            Err(reason) => self.kernel.abort(*ticket, reason, now_ms).await,
        };
        match decided {
            Ok(decision) => {
                record.decision(&decision);
                answer(&decision, structured)
            }
            Err(e) => gone(e),
        }
    }
}

impl ServerHandler for Edge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("chio-mcp-edge", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let meta: &Map<String, Value> = &context.meta;
        let Ok(token) = present::capability(meta) else {
            return Ok(ListToolsResult::with_all_items(Vec::new()));
        };
        match self.kernel.verify(token.clone(), wall_ms()).await {
            Ok(Ok(())) => {}
            _ => return Ok(ListToolsResult::with_all_items(Vec::new())),
        }
        let tools = self
            .upstreams
            .by_id
            .values()
            .flat_map(|u| {
                u.tools.iter().filter(|t| {
                    token
                        .scope
                        .iter()
                        .any(|g| g.server == u.id && g.covers_tool(&t.name))
                })
            })
            .cloned()
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut meta: Map<String, Value> = context.meta.0 .0.clone();
        if let Some(own) = &request.meta {
            for (k, v) in own.0 .0.iter() {
                meta.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        Ok(self.decide(request, meta).await.into())
    }
}
