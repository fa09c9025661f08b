//! The edge's session folder (`--session-out DIR`), written as the session
//! goes so that a crash keeps every call decided before it:
//!
//! - `session.json`, written at start: the schema
//!   (`chio.mcp-session/v1`), the namespace, the authority's issuer key,
//!   the kernel's receipt key, and each upstream's id with its tools
//!   exactly as it listed them (the declared tools the kernel checks calls
//!   against);
//! - `calls.jsonl`, one line per `tools/call`, in the order the edge
//!   decided them: `seq`, `admitted_at_ms` (the wall-clock instant read
//!   once for the admission, the instant the kernel decided at),
//!   `admission` (the call's place in the kernel's admission order), `server`,
//!   `tool`, `request` (the kernel's request as assembled, with the token
//!   and proof; `null` when the edge refused the presentation before the
//!   kernel), `verdict`, `reason_code`, `reason`, `receipt` (the signed
//!   receipt, `null` without one), `upstream` (the upstream's answer,
//!   `null` when it was not called) and `result` (what the client got).
//!
//! Each line is flushed before the answer leaves the edge. A failed write
//! is logged and the call is still answered: the session folder is a
//! record for re-deciding, not the receipt log (receipts live in
//! trust-control).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Mutex;

use chio_kernel::kernel::Decision;
use rmcp::model::CallToolResult;
use serde::Serialize;
use serde_json::{json, Value};

/// Schema id of `session.json`.
pub const SESSION_SCHEMA: &str = "chio.mcp-session/v1";

/// One call as `calls.jsonl` records it.
#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    /// Position in the session, from 1 (set when appended).
    pub seq: u64,
    /// The admission instant, Unix milliseconds.
    pub admitted_at_ms: u64,
    /// The call's place in the order the kernel admitted calls in, from 1
    /// (calls in flight together are written as each is decided, which
    /// need not be that order); `None` for a call that never reached it.
    pub admission: Option<u64>,
    /// The upstream id the call was routed to.
    pub server: String,
    /// The tool called.
    pub tool: String,
    /// The kernel's request, when the presentation was read.
    pub request: Option<Value>,
    /// `allow`, `rewrite`, `deny` or `pending_approval`.
    pub verdict: String,
    /// The reason's code, for anything but an allow.
    pub reason_code: Option<String>,
    /// The reason.
    pub reason: Option<String>,
    /// The signed receipt, when the kernel decided.
    pub receipt: Option<Value>,
    /// The upstream's answer, when it was called.
    pub upstream: Option<Value>,
    /// What the client got.
    pub result: Value,
}

impl CallRecord {
    /// A record of a call admitted at `now_ms`, not yet decided.
    pub fn new(now_ms: u64, server: &str, tool: &str) -> Self {
        CallRecord {
            seq: 0,
            admitted_at_ms: now_ms,
            admission: None,
            server: server.to_string(),
            tool: tool.to_string(),
            request: None,
            verdict: "deny".to_string(),
            reason_code: None,
            reason: None,
            receipt: None,
            upstream: None,
            result: Value::Null,
        }
    }

    /// Records the kernel's decision.
    pub fn decision(&mut self, decision: &Decision) {
        self.verdict = serde_json::to_value(decision.projected())
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "deny".to_string());
        self.reason_code = decision.trace.reason_code.map(|c| c.as_str().to_string());
        self.reason = decision.reason.clone();
        self.receipt = serde_json::to_value(&decision.receipt).ok();
    }

    /// Records what the client got; a refusal before the kernel takes its
    /// code and reason from the result.
    pub fn answer(&mut self, result: &CallToolResult) {
        self.result = serde_json::to_value(result).unwrap_or(Value::Null);
        if self.receipt.is_none() {
            if let Some(s) = &result.structured_content {
                self.reason_code = s["reason_code"].as_str().map(str::to_string);
                self.reason = s["reason"].as_str().map(str::to_string);
            }
        }
    }
}

/// An open session folder.
pub struct Session {
    calls: Mutex<(u64, File)>,
}

/// Why the session folder cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("session folder {path}: {what}")]
pub struct SessionError {
    path: String,
    what: String,
}

impl Session {
    /// Creates `dir` (which must not exist or be empty) with its
    /// `session.json`.
    pub fn create(dir: &Path, header: &Value) -> Result<Self, SessionError> {
        let fail = |what: String| SessionError {
            path: dir.display().to_string(),
            what,
        };
        if dir.exists()
            && std::fs::read_dir(dir)
                .map(|mut d| d.next().is_some())
                .unwrap_or(true)
        {
            return Err(fail("exists and is not empty".to_string()));
        }
        std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create: {}", e.kind())))?;
        // The folder holds the session's traffic, credentials included.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| fail(format!("cannot make it private: {}", e.kind())))?;
        let mut header = header.clone();
        header["schema"] = json!(SESSION_SCHEMA);
        let text = serde_json::to_string_pretty(&header).map_err(|e| fail(e.to_string()))?;
        std::fs::write(dir.join("session.json"), text + "\n")
            .map_err(|e| fail(format!("cannot write session.json: {}", e.kind())))?;
        let calls = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(dir.join("calls.jsonl"))
            .map_err(|e| fail(format!("cannot create calls.jsonl: {}", e.kind())))?;
        Ok(Session {
            calls: Mutex::new((0, calls)),
        })
    }

    /// Appends one call, numbering it.
    pub fn append(&self, record: &CallRecord) {
        let Ok(mut calls) = self.calls.lock() else {
            tracing::error!("the session log is poisoned; a call went unrecorded");
            return;
        };
        calls.0 += 1;
        let mut record = record.clone();
        record.seq = calls.0;
        let written = serde_json::to_string(&record)
            .map_err(std::io::Error::other)
            .and_then(|line| {
                calls.1.write_all(line.as_bytes())?;
                calls.1.write_all(b"\n")?;
                calls.1.flush()
            });
        if let Err(e) = written {
            tracing::error!(error = %e, "a call could not be written to the session folder");
        }
    }
}
