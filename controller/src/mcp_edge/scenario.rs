//! The equivalent scenario of an edge session: the one builder the edge
//! writes its session bundle with and `chio arena replay` checks a session
//! folder against.
//!
//! From `session.json` (the upstreams and the tools each listed) and the
//! lines of `calls.jsonl`, in the kernel's admission order, it writes a scenario of one
//! node and one kernel (`kernel-a`); one recorded server per upstream,
//! declaring the tools the upstream listed (as `chio import mcp` declares
//! them) and the label keys `--policy` gave it, and answering each admitted
//! call with what the upstream answered, read as the edge's kernel read it
//! (`crate::mcp_answer`, the reading of `chio arena record`: the structured
//! content, text or blocks; not performed, `ok = false`, for an error
//! result or an answer breaking the tool's output schema, and spent at
//! replay as at the edge, since the upstream received it); the guards the edge ran
//! (`--policy`), in its order, on the kernel; one agent per client key,
//! named by its one session or in order of first call; one grant per root
//! capability presented (its id, server, the tools it grants that the
//! upstream lists, `path_prefix`, window and invocation budget); and one call step per call the kernel decided from
//! the call itself, at the instant the edge admitted it, expecting the
//! edge's verdict and reason code.
//!
//! The wall-clock instants become the scenario's clock: the clock starts at
//! the earliest of the first admission and every capability's start, each
//! step's `at` is its admission's offset from there (moved forward by the
//! fewest milliseconds that keep the steps in decision order), and a
//! grant's window is its capability's, offset the same way.
//!
//! A call the arena cannot re-decide gets no step ([`Presentation`]): a
//! call the edge refused before the kernel (no request), one refused for
//! its presentation (the proof, the request's freshness or id, the
//! issuer's signature, a revocation, the stores), one the declaration
//! refuses before any step runs (a tool no upstream declares, arguments
//! outside the tool's schema), one under a delegated capability, a
//! capability of several scope grants or other constraints, or one whose id
//! a scenario cannot name. None of these
//! changes the state a later decision reads (budgets are charged only on
//! admission), and replay checks them against their signed receipts.
//!
//! Arguments and answers are written as the loader reads them back
//! ([`super::values`]): a null as `{ null = true }`, and a credential as a
//! sealed file of the scenario's folder (`fixtures/secrets/`), which
//! [`SessionScenario::sealed`] carries for the bundle writer.

use std::collections::BTreeMap;

use chio_arena::scenario::mcp::{parse_tools_list, server_declaration};
use chio_arena::VirtualClock;
use chio_kernel::contract::ToolContract;
use chio_kernel::token::CapabilityToken;
use chio_node::tools::LiveAnswer;
use serde_json::{json, Value};

use super::values::{sealed_inline, SealedFile, Secrets};
use crate::mcp_answer::recorded_answer;

/// The scenario's id.
pub const SESSION_SCENARIO_ID: &str = "mcp-edge-session";
/// The scenario's one kernel, which serves every upstream's recorded server.
pub const KERNEL: &str = "kernel-a";
/// The one seed prompt every agent of the scenario starts from.
pub const PROMPT_FILE: &str = "prompt.txt";
/// What the prompt file holds.
pub const PROMPT_TEXT: &str = "a client of the MCP edge\n";

/// Reason codes of calls decided on their presentation, not re-decided.
const PRESENTATION_CODES: &[&str] = &[
    "untrusted-issuer",
    "invalid-signature",
    "revoked",
    "chain-revoked",
    "store-unavailable",
    "store-refused",
    "proof-missing",
    "not-the-proving-agent",
    "agent-not-subject",
    "signer-not-subject",
    "proof-invalid",
    "proof-uncanonical",
    "request-stale",
    "request-from-future",
    "replayed",
    "server-not-served",
    "tool-not-declared",
    "arguments-refused",
    "dispatch-failed",
    "receipt-unrecorded",
];

/// Why a call has no step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Presentation {
    /// The call has a step, named here.
    Step(String),
    /// The call is not re-decided; the reason says why.
    NotRedecided(String),
}

/// The scenario of a session and, per call, its step.
#[derive(Debug, Clone)]
pub struct SessionScenario {
    /// The scenario file's text.
    pub text: String,
    /// Per line of `calls.jsonl`, in order: its step, or why it has none.
    pub steps: Vec<Presentation>,
    /// The sealed files the text reads, below the scenario's folder.
    pub sealed: Vec<SealedFile>,
}

/// The step id of the call numbered `seq`.
pub fn step_id(seq: u64) -> String {
    format!("call-{seq}")
}

/// `value` as an inline TOML value; a JSON null has none.
pub fn toml_inline(value: &Value) -> Result<String, String> {
    Ok(match value {
        Value::Null => return Err("holds a JSON null, which TOML cannot write".to_string()),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => toml::Value::String(s.clone()).to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(toml_inline)
                .collect::<Result<Vec<_>, _>>()?
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| Ok(format!(
                    "{} = {}",
                    toml::Value::String(k.clone()),
                    toml_inline(v)?
                )))
                .collect::<Result<Vec<_>, String>>()?
                .join(", ")
        ),
    })
}

/// One call the scenario re-decides.
struct Decided {
    seq: u64,
    at_ms: u64,
    admission: Option<u64>,
    agent: String,
    session: String,
    token: CapabilityToken,
    server: String,
    tool: String,
    arguments: Value,
    verdict: String,
    reason_code: Option<String>,
    upstream: Option<Value>,
}

/// Why the call `record` is not re-decided, or the call as decided.
fn classify(record: &Value, seq: u64) -> Result<Decided, String> {
    let Some(request) = record.get("request").filter(|r| !r.is_null()) else {
        return Err("the edge refused it before the kernel".to_string());
    };
    let code = record["reason_code"].as_str();
    if let Some(code) = code.filter(|c| PRESENTATION_CODES.contains(c)) {
        return Err(format!("decided on its presentation ({code})"));
    }
    let token: CapabilityToken = serde_json::from_value(request["capability"].clone())
        .map_err(|_| "its capability cannot be read".to_string())?;
    let one_grant = token.scope.len() == 1
        && token.scope[0]
            .constraints
            .keys()
            .all(|k| k == "path_prefix");
    if !chio_arena::scenario::is_valid_id(&token.id) {
        return Err("its capability id is not a scenario id".to_string());
    }
    if !token.delegation_chain.is_empty() || !one_grant {
        return Err(
            "its capability is delegated or not one scope grant a scenario grant writes"
                .to_string(),
        );
    }
    let text = |v: &Value, what: &str| {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("its {what} is missing"))
    };
    Ok(Decided {
        seq,
        at_ms: record["admitted_at_ms"]
            .as_u64()
            .ok_or("its admission instant is missing")?,
        admission: record["admission"].as_u64(),
        agent: text(&request["agent_id"], "agent")?,
        session: text(&request["session_id"], "session")?,
        server: text(&request["server"], "server")?,
        tool: text(&request["tool"], "tool")?,
        arguments: request["arguments"].clone(),
        verdict: text(&record["verdict"], "verdict")?,
        reason_code: code.map(str::to_string),
        upstream: record.get("upstream").filter(|u| !u.is_null()).cloned(),
        token,
    })
}

/// Builds the equivalent scenario of a session.
pub fn session_scenario(header: &Value, calls: &[Value]) -> Result<SessionScenario, String> {
    let mut steps = Vec::new();
    let mut decided = Vec::new();
    for (i, record) in calls.iter().enumerate() {
        let seq = i as u64 + 1;
        match classify(record, seq) {
            Ok(d) => {
                steps.push(Presentation::Step(step_id(seq)));
                decided.push(d);
            }
            Err(why) => steps.push(Presentation::NotRedecided(why)),
        }
    }
    if decided.is_empty() {
        return Err("no call of the session is one the arena re-decides".to_string());
    }
    // Calls in flight together are written as each is decided; the steps
    // go in the order the kernel admitted them, which is what decided them.
    decided.sort_by_key(|d| d.admission);
    // Budget windows count from the edge's origin, the epoch: a scenario
    // counts them from its clock start, which then starts there too.
    let start_ms = if super::budgets::windowed(header) {
        super::budgets::WINDOW_ORIGIN_MS
    } else {
        decided
            .iter()
            .flat_map(|d| [d.at_ms, d.token.not_before_ms])
            .min()
            .unwrap_or(0)
    };
    let clock = VirtualClock::parse("1970-01-01T00:00:00.000Z").map_err(|e| e.to_string())?;
    let agents = agent_names(&decided);
    let guards = header["guards"].as_array().cloned().unwrap_or_default();
    let ids = guards
        .iter()
        .map(|g| toml_inline(&g["id"]))
        .collect::<Result<Vec<_>, _>>()?;
    let mut text = head(&clock.format_offset_ms(start_ms), agents.len());
    text.push_str(&format!("guards = [{}]\n", ids.join(", ")));
    for guard in &guards {
        text.push_str(&format!(
            "\n[[guards]]\nid = {}\nkind = {}\nmode = {}\nconfig = {}\n",
            toml_inline(&guard["id"])?,
            toml_inline(&guard["kind"])?,
            toml_inline(&guard["mode"])?,
            toml_inline(&guard["config"])?,
        ));
    }
    for name in agents.values() {
        text.push_str(&format!(
            "\n[[agents]]\nid = \"{name}\"\nrole = \"client\"\nmodel = \"recorded:{name}\"\nseed_prompt_ref = \"{PROMPT_FILE}\"\nkernel = \"{KERNEL}\"\n"
        ));
    }
    let mut secrets = Secrets::default();
    text.push_str(&servers(header, &decided, &mut secrets)?);
    text.push_str(&grants(header, &decided, &agents, start_ms)?);
    let presented = decided.iter().map(|d| d.token.id.clone()).collect();
    text.push_str(&super::budgets::scenario_tables(
        header, &agents, &presented,
    )?);
    text.push_str(&call_steps(&decided, &agents, start_ms, &mut secrets)?);
    Ok(SessionScenario {
        text,
        steps,
        sealed: secrets.into_files(),
    })
}

/// Each client key's agent name. A scenario agent's session is its id, so
/// when every client kept to one session of its own whose id is a scenario
/// id, each agent is named by its session, and a reason naming a session's
/// label key reads at replay as it read at the edge; otherwise `client-1`,
/// `client-2`, ... in order of first call.
fn agent_names(decided: &[Decided]) -> BTreeMap<String, String> {
    let mut sessions: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
    for d in decided {
        sessions.entry(&d.agent).or_default().insert(&d.session);
    }
    let mut used = std::collections::BTreeSet::new();
    let by_session = sessions.values().all(|s| {
        s.len() == 1
            && s.iter()
                .all(|id| chio_arena::scenario::is_valid_id(id) && used.insert(*id))
    });
    let mut names = BTreeMap::new();
    for d in decided {
        let next = if by_session {
            d.session.clone()
        } else {
            format!("client-{}", names.len() + 1)
        };
        names.entry(d.agent.clone()).or_insert(next);
    }
    names
}

/// The scenario's keys, its node and its kernel.
fn head(clock_start: &str, agents: usize) -> String {
    let scheduler = if agents == 1 {
        "single-agent-v1"
    } else {
        "deterministic-multi-v1"
    };
    format!(
        "# The equivalent scenario of an MCP edge session, written by the edge.\nschema_version = \"chio.arena.scenario/v1\"\nid = \"{SESSION_SCENARIO_ID}\"\ntitle = \"the calls of an MCP edge session\"\nrng_seed = 0\nvirtual_clock_start = \"{clock_start}\"\n\n[determinism]\nscheduler = \"{scheduler}\"\nlocale = \"C\"\n\n[[nodes]]\nid = \"node-a\"\n\n[[kernels]]\nid = \"{KERNEL}\"\nnode = \"node-a\"\n"
    )
}

/// One recorded server per upstream, declaring its listed tools and
/// answering each admitted call with the upstream's answer.
fn servers(header: &Value, decided: &[Decided], secrets: &mut Secrets) -> Result<String, String> {
    let mut out = String::new();
    for upstream in header["upstreams"].as_array().into_iter().flatten() {
        let id = upstream["id"].as_str().ok_or("an upstream has no id")?;
        let listed = serde_json::to_vec(&json!({ "tools": upstream["tools"] }))
            .map_err(|e| e.to_string())?;
        let tools = parse_tools_list(&listed, id)
            .map_err(|e| format!("upstream {id}: its tools are refused: {e}"))?;
        out.push('\n');
        let declared = server_declaration(id, KERNEL, &tools);
        let labelled = label_keys(header, id)?;
        out.push_str(&declared.replacen(
            "kind = \"recorded\"\n",
            &format!("kind = \"recorded\"\n{labelled}"),
            1,
        ));
        for d in decided.iter().filter(|d| d.server == id) {
            if let Some(answered) = &d.upstream {
                // The answer the edge's kernel read, by the reading of
                // `chio arena record`, so the declaration's output schema
                // accepts every answer recorded as carried out.
                let contract = tools.iter().map(|t| &t.contract).find(|c| c.name == d.tool);
                let answer = recorded_answer(answered, id, contract).answer;
                let output = sealed_inline(&answer.output, secrets)
                    .map_err(|e| format!("call {}: the upstream's answer {e}", d.seq))?;
                let ok = if answer.ok { "" } else { "ok = false\n" };
                out.push_str(&format!(
                    "\n[[servers.answers]]\nstep = \"{}\"\noutput = {output}\n{ok}",
                    step_id(d.seq)
                ));
            }
        }
    }
    Ok(out)
}

/// The tools each upstream listed (`session.json`'s `upstreams`), as the
/// kernel's contracts, by upstream id.
pub fn upstream_contracts(header: &Value) -> BTreeMap<String, Vec<ToolContract>> {
    let mut contracts = BTreeMap::new();
    for upstream in header["upstreams"].as_array().into_iter().flatten() {
        let id = upstream["id"].as_str().unwrap_or_default();
        let listed = serde_json::to_vec(&json!({ "tools": upstream["tools"] })).unwrap_or_default();
        let tools = parse_tools_list(&listed, id).unwrap_or_default();
        contracts.insert(
            id.to_string(),
            tools.into_iter().map(|t| t.contract).collect(),
        );
    }
    contracts
}

/// The answer the edge's kernel read of `answered`, upstream `server`'s
/// answer to a call of `tool`, by the reading of `chio arena record`
/// ([`crate::mcp_answer`]) against the tools `contracts` holds.
pub fn upstream_answer(
    contracts: &BTreeMap<String, Vec<ToolContract>>,
    server: &str,
    tool: &str,
    answered: &Value,
) -> LiveAnswer {
    let contract = contracts
        .get(server)
        .and_then(|tools| tools.iter().find(|c| c.name == tool));
    recorded_answer(answered, server, contract).answer
}

/// The label keys `--policy` gave upstream `id` (`session.json`'s
/// `servers`), as the lines of its recorded server; none without any.
fn label_keys(header: &Value, id: &str) -> Result<String, String> {
    let mut out = String::new();
    let declared = header["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["id"] == id);
    for key in ["labels", "integrity", "integrity_globs"] {
        if let Some(value) = declared.and_then(|s| s.get(key)) {
            let value = toml_inline(value).map_err(|e| format!("upstream {id}: {key} {e}"))?;
            out.push_str(&format!("{key} = {value}\n"));
        }
    }
    Ok(out)
}

/// One grant per root capability presented, in order of first call.
fn grants(
    header: &Value,
    decided: &[Decided],
    agents: &BTreeMap<String, String>,
    start_ms: u64,
) -> Result<String, String> {
    let mut out = String::new();
    let mut seen = std::collections::BTreeSet::new();
    for d in decided {
        let t = &d.token;
        if !seen.insert(t.id.clone()) {
            continue;
        }
        let grant = &t.scope[0];
        // A tool the upstream does not list is never called under the
        // grant (such a call is refused before any step), so the grant is
        // written with the tools it covers that the upstream serves.
        let listed = listed_tools(header, &grant.server);
        let tools = if grant.tools.iter().any(|n| n == "*") {
            listed
        } else {
            grant
                .tools
                .iter()
                .filter(|t| listed.contains(t))
                .cloned()
                .collect()
        };
        let tools: Vec<Value> = tools.into_iter().map(Value::String).collect();
        out.push_str(&format!(
            "\n[[grants]]\nid = {}\nagent = \"{}\"\nserver = {}\ntools = {}\nnot_before_ms = {}\nexpires_after_ms = {}\nshare_bps = {}\n",
            toml_inline(&json!(t.id))?,
            agents
                .get(&t.subject)
                .ok_or("a capability's holder made none of the calls")?,
            toml_inline(&json!(grant.server))?,
            toml_inline(&Value::Array(tools))?,
            t.not_before_ms.saturating_sub(start_ms),
            t.expires_at_ms.saturating_sub(start_ms),
            t.share_bps,
        ));
        if let Some(prefix) = grant.constraints.get("path_prefix") {
            out.push_str(&format!("path_prefix = {}\n", toml_inline(prefix)?));
        }
        if let Some(n) = t.max_invocations {
            out.push_str(&format!("max_invocations = {n}\n"));
        }
    }
    Ok(out)
}

/// The names of the tools the upstream `server` listed.
fn listed_tools(header: &Value, server: &str) -> Vec<String> {
    header["upstreams"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|u| u["id"] == server)
        .flat_map(|u| u["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// One call step per re-decided call, at its admission's offset, in
/// decision order.
fn call_steps(
    decided: &[Decided],
    agents: &BTreeMap<String, String>,
    start_ms: u64,
    secrets: &mut Secrets,
) -> Result<String, String> {
    let mut out = String::new();
    let mut last: Option<u64> = None;
    for d in decided {
        let offset = d.at_ms.saturating_sub(start_ms);
        let at = match last {
            Some(prev) if offset <= prev => prev + 1,
            _ => offset,
        };
        last = Some(at);
        let expect = match d.verdict.as_str() {
            "pending_approval" => "deny",
            other => other,
        };
        out.push_str(&format!(
            "\n[[steps]]\nid = \"{}\"\nagent = \"{}\"\nat = {at}\nserver = {}\ntool = {}\ncapability = {}\narguments = {}\nexpect_verdict = \"{expect}\"\n",
            step_id(d.seq),
            agents[&d.agent],
            toml_inline(&json!(d.server))?,
            toml_inline(&json!(d.tool))?,
            toml_inline(&json!(d.token.id))?,
            sealed_inline(&d.arguments, secrets)
                .map_err(|e| format!("call {}: its arguments {e}", d.seq))?,
        ));
        if let Some(code) = &d.reason_code {
            out.push_str(&format!("expect_reason = {}\n", toml_inline(&json!(code))?));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
