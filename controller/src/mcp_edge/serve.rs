//! `chio mcp serve`: start the upstreams, bind the kernel's stores to
//! trust-control (remote with `--control-url`, trust-control's in-memory
//! store otherwise, through the same adapter either way), trust the
//! authority's issuer key there, and serve MCP on standard input and
//! output (`--stdio`, until the client closes it) or over streamable HTTP
//! (`--listen`), until ctrl-c or SIGTERM; then make the session folder a
//! bundle.

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

use chio_kernel::kernel::KernelConfig;
use chio_kernel::keys::public_key_hex;
use chio_node::tools::ToolServer;
use chio_node::trust_stores::TrustBinding;
use chio_trust::model::IssuerKey;
use chio_trust::{InMemoryTrustStore, TrustStore};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{RoleServer, ServiceExt};
use serde_json::json;
use tokio::runtime::Handle;

use super::authority::{self, Authority};
use super::grant::{control_client, deadlines};
use super::kernel::EdgeKernel;
use super::policy::{EdgePolicy, UpstreamLabels};
use super::server::Edge;
use super::session::Session;
use super::upstream::{parse_spec, Upstream, Upstreams};
use super::ServeArgs;
use crate::arena_run::runtime;
use crate::error::{codes, CliError};

const COMMAND: &str = "mcp serve";

/// The id the edge's kernel signs receipts under.
pub const EDGE_KERNEL_ID: &str = "mcp-edge";

fn config_error(message: String, help: &str) -> CliError {
    CliError::new(codes::MCP_CONFIG, COMMAND, message, help)
}

/// Runs `chio mcp serve` until the client leaves or a signal arrives.
pub fn run(args: &ServeArgs) -> Result<(), CliError> {
    let specs = upstream_specs(args)?;
    if let Some(addr) = args.listen {
        super::http::check_listen(addr, args.allow_non_loopback)?;
    }
    let policy = match &args.policy {
        Some(path) => {
            let policy = super::policy::read(path)?;
            let ids: Vec<&str> = specs.iter().map(|(id, _)| id.as_str()).collect();
            policy.check_upstreams(path, &ids)?;
            policy
        }
        None => EdgePolicy::default(),
    };
    let labellers = labellers(&specs, &policy)?;
    let authority = authority::read(&args.authority, COMMAND)?;
    let rt = runtime(COMMAND)?;
    let _entered = rt.enter();
    let control = control_client(&args.control, COMMAND)?;
    let served = rt.block_on(async move {
        let timeout = Duration::from_millis(args.upstream_timeout_ms.max(1));
        let upstreams = start_upstreams(&specs, timeout).await?;
        if let Some(path) = &args.policy {
            policy.check_served(path, &upstreams.catalog())?;
        }
        let kernel = match control {
            Some(client) => start_kernel(client, args, &authority, &upstreams, &policy).await?,
            None => {
                start_kernel(
                    Arc::new(InMemoryTrustStore::new()),
                    args,
                    &authority,
                    &upstreams,
                    &policy,
                )
                .await?
            }
        };
        let session = open_session(args, &authority, &upstreams, &policy)?;
        tracing::info!(namespace = %args.control.namespace, "kernel started");
        let edge = Edge {
            kernel,
            upstreams: Arc::new(upstreams),
            labellers: Arc::new(labellers),
            session,
            max_argument_bytes: args.max_argument_bytes,
            upstream_timeout: timeout,
            in_flight: Arc::new(super::server::InFlight::default()),
        };
        let in_flight = edge.in_flight.clone();
        let reading = match args.listen {
            Some(addr) => {
                super::http::serve(edge, args, addr).await?;
                false
            }
            None => serve_stdio(edge, args.max_message_bytes).await?,
        };
        // Every call that arrived is answered and recorded before the
        // session ends: an upstream call is bounded by its timeout, the
        // kernel's by its store deadlines.
        let left = in_flight.settle(timeout + SETTLE_MARGIN).await;
        if left > 0 {
            tracing::warn!(
                calls = left,
                "calls still being decided are left out of the session"
            );
        }
        if let Some(dir) = &args.session_out {
            finish_session(dir, &authority).await;
        }
        Ok(reading)
    });
    drop(_entered);
    // A signal ended a stdio session while the client keeps standard input
    // open: a read of it blocks a thread until the client writes or closes
    // it, so the command ends without waiting for that read.
    if matches!(served, Ok(true)) {
        rt.shutdown_timeout(SHUTDOWN_WAIT);
    }
    served.map(|_| ())
}

/// How long the command waits, once the session is finished, for the
/// runtime's last writes (an answer on its way to standard output); a read
/// of standard input the client keeps open is not waited for beyond it.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// How long past the upstream timeout a session waits for calls being
/// decided when it ends: the kernel's store deadlines.
const SETTLE_MARGIN: Duration = Duration::from_secs(10);

/// Serves `edge` on standard input and output until the client leaves or a
/// signal arrives; answers whether standard input may still be read (a
/// signal came before the client closed it).
async fn serve_stdio(edge: Edge, max_message_bytes: usize) -> Result<bool, CliError> {
    // The binary holds the standard output's lock for the whole command
    // (`main` passes it locked), so the server writes to its own copy of
    // the descriptor, which takes no lock.
    let stdout = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| {
            CliError::infrastructure(COMMAND, format!("cannot use standard output: {e}"))
        })?;
    let stdout = tokio::fs::File::from_std(std::fs::File::from(stdout));
    let (reads, writes, writer) =
        super::frames::gate(tokio::io::stdin(), stdout, max_message_bytes);
    // The gate bounds each message; the SDK's own bound only has to admit
    // what the gate passes, with its newline.
    let transport = AsyncRwTransport::<RoleServer, _, _>::new(reads, writes)
        .with_max_line_length(max_message_bytes.saturating_add(2));
    tracing::info!("serving MCP on standard input and output");
    let running = edge.serve(transport).await.map_err(|e| {
        CliError::infrastructure(COMMAND, format!("the MCP client's handshake failed: {e}"))
    })?;
    // The service runs on while the session settles: a signal stops
    // taking calls, never the calls already being decided.
    let mut waiting = tokio::spawn(running.waiting());
    let signalled = tokio::select! {
        _ = &mut waiting => false,
        () = crate::serve::shutdown_signal() => true,
    };
    // Every answer on its way to the client is written before the command
    // goes on (the gate's answer to a last unterminated frame among them);
    // after a signal the client may keep its side open, so not for long.
    let _ = tokio::time::timeout(SHUTDOWN_WAIT, writer).await;
    Ok(signalled)
}

/// Makes the session folder a bundle; a failure is logged, since every
/// call was answered and recorded already.
async fn finish_session(dir: &std::path::Path, authority: &Authority) {
    match super::bundle::finish(dir, &authority.receipts).await {
        Ok(()) => tracing::info!("the session folder is a bundle chio arena replay re-decides"),
        Err(e) => tracing::error!(problem = %e, "the session's bundle was not written"),
    }
}

/// The upstreams the flags name, once the message and argument bounds are
/// checked.
fn upstream_specs(args: &ServeArgs) -> Result<Vec<(String, Vec<String>)>, CliError> {
    let specs = args
        .upstream
        .iter()
        .map(|s| parse_spec(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            config_error(
                e.to_string(),
                "write each upstream as --upstream ID=\"CMD ARGS...\"",
            )
        })?;
    for bound in [args.max_message_bytes, args.max_argument_bytes] {
        if bound < 1024 {
            return Err(config_error(
                "--max-message-bytes and --max-argument-bytes must be at least 1024".to_string(),
                "raise the bound",
            ));
        }
    }
    Ok(specs)
}

/// Starts every upstream and lists their tools.
async fn start_upstreams(
    specs: &[(String, Vec<String>)],
    timeout: Duration,
) -> Result<Upstreams, CliError> {
    let mut started = Vec::new();
    for (id, argv) in specs {
        started.push(Upstream::start(id, argv, timeout).await.map_err(|e| {
            CliError::new(
                codes::MCP_UPSTREAM,
                COMMAND,
                e.to_string(),
                "run the upstream's command by itself to check that it serves MCP on standard input and output",
            )
        })?);
    }
    for u in &started {
        tracing::info!(upstream = %u.id, tools = u.tools.len(), "upstream started");
    }
    Upstreams::new(started)
        .map_err(|e| config_error(e.to_string(), "give each upstream its own id and tools"))
}

/// The session folder, when `--session-out` names one, created with its
/// header.
fn open_session(
    args: &ServeArgs,
    authority: &Authority,
    upstreams: &Upstreams,
    policy: &EdgePolicy,
) -> Result<Option<Arc<Session>>, CliError> {
    Ok(match &args.session_out {
        None => None,
        Some(dir) => Some(Arc::new(
            Session::create(dir, &header(args, authority, upstreams, policy)).map_err(|e| {
                CliError::new(
                    codes::MCP_SESSION_WRITE,
                    COMMAND,
                    e.to_string(),
                    "name a new or empty folder you may write",
                )
            })?,
        )),
    })
}

/// What `session.json` holds besides its schema.
fn header(
    args: &ServeArgs,
    authority: &Authority,
    upstreams: &Upstreams,
    policy: &EdgePolicy,
) -> serde_json::Value {
    let listed: Vec<_> = upstreams
        .by_id
        .values()
        .map(|u| json!({ "id": u.id, "tools": u.tools }))
        .collect();
    json!({
        "namespace": args.control.namespace,
        "kernel_id": EDGE_KERNEL_ID,
        "issuer": public_key_hex(&authority.issuer),
        "kernel_key": public_key_hex(&authority.receipts),
        "max_request_age_ms": args.max_request_age_ms,
        "upstreams": listed,
        "guards": policy.guards,
        "budgets": super::budgets::header(&policy.budgets),
        "servers": policy.servers.values().collect::<Vec<_>>(),
    })
}

/// How each upstream's answers are labelled: as `--policy` declares it, or
/// unlabelled and trusted.
fn labellers(
    specs: &[(String, Vec<String>)],
    policy: &EdgePolicy,
) -> Result<BTreeMap<String, ToolServer>, CliError> {
    let mut by_id = BTreeMap::new();
    for (id, _) in specs {
        let declared = policy
            .servers
            .get(id)
            .cloned()
            .unwrap_or_else(|| UpstreamLabels::none(id));
        let labeller = declared
            .labeller()
            .map_err(|e| CliError::infrastructure(COMMAND, e))?;
        by_id.insert(id.clone(), labeller);
    }
    Ok(by_id)
}

/// One start-up call to trust-control within `deadline`; a refusal or no
/// answer is `CHIO-MCP-CONTROL`, naming `what` was refused.
async fn control_call<T, E: std::fmt::Display>(
    deadline: Duration,
    call: impl std::future::Future<Output = Result<T, E>>,
    what: &str,
) -> Result<T, CliError> {
    match tokio::time::timeout(deadline, call).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(CliError::new(
            codes::MCP_CONTROL,
            COMMAND,
            format!("trust-control refused {what}: {e}"),
            "check --control-url and that the token is trust-control's",
        )),
        Err(_) => Err(CliError::new(
            codes::MCP_CONTROL,
            COMMAND,
            "trust-control did not answer within its deadline".to_string(),
            "check that trust-control runs at --control-url",
        )),
    }
}

/// The trust-control label key that names the authority a namespace's
/// ids belong to.
fn namespace_owner_key(namespace: &str) -> String {
    format!("{namespace}/edge-authority")
}

/// Claims `namespace` in `store` for the authority `issuer`, or refuses to
/// serve when another authority holds it: budgets, revocations and seen
/// request ids are kept by capability and request id under the namespace,
/// and ids are not secret, so an edge of another authority sharing it
/// could spend, or revoke, this edge's capabilities by granting itself one
/// with the same id. Edges of one authority share a namespace, as before.
async fn claim_namespace<S: TrustStore>(
    store: &S,
    namespace: &str,
    issuer: &str,
    deadline: Duration,
) -> Result<(), CliError> {
    let key = namespace_owner_key(namespace);
    let mine = format!("authority:{issuer}");
    let others = |sets: &chio_trust::model::LabelSets| {
        sets.get(&key)
            .map_or(0, |owners| owners.iter().filter(|o| **o != mine).count())
    };
    // Read before writing: an edge of another authority is refused without
    // leaving its mark, so a refused start never locks the owner out. The
    // read after the join catches two authorities claiming at once (both
    // are refused, as neither is first).
    let record = "the namespace's authority record";
    let before = control_call(deadline, store.read_labels(vec![key.clone()]), record).await?;
    let after = if others(&before) > 0 {
        before
    } else {
        control_call(
            deadline,
            store.join_labels(vec![key.clone()], &mine),
            record,
        )
        .await?
    };
    if others(&after) > 0 {
        return Err(CliError::new(
            codes::MCP_CONFIG,
            COMMAND,
            format!("namespace {namespace} in trust-control belongs to another edge authority"),
            "give each authority its own --namespace: edges of one authority share budgets, revocations and replay protection in theirs",
        ));
    }
    Ok(())
}

/// Trusts the issuer in `store` and starts the kernel over it.
async fn start_kernel<S: TrustStore>(
    store: Arc<S>,
    args: &ServeArgs,
    authority: &Authority,
    upstreams: &Upstreams,
    policy: &EdgePolicy,
) -> Result<EdgeKernel, CliError> {
    let issuer = public_key_hex(&authority.issuer);
    let key = IssuerKey::parse_hex(&issuer)
        .map_err(|e| CliError::infrastructure(COMMAND, e.to_string()))?;
    let d = deadlines();
    // The namespace first: a refused authority leaves no issuer key behind.
    claim_namespace(store.as_ref(), &args.control.namespace, &issuer, d.call).await?;
    control_call(
        d.call,
        store.add_issuer_key(key),
        "the authority's issuer key",
    )
    .await?;
    let binding = TrustBinding::new(store, Handle::current(), &args.control.namespace, d);
    let (stores, cache) = binding.kernel_stores();
    let mut config = KernelConfig::new(EDGE_KERNEL_ID, authority.receipts.clone());
    config.trusted_issuers = vec![issuer];
    config.max_request_age_ms = Some(args.max_request_age_ms);
    config.tools = Some(upstreams.catalog());
    // An upstream is a live server whose answers and state the edge does
    // not know, as a recorded server of the session's equivalent scenario:
    // its answers are computed from what calls sent, and what a call that
    // may write carried stays with the upstream for every later caller.
    config.output_fields = upstreams
        .catalog()
        .into_iter()
        .flat_map(|(id, tools)| {
            tools.into_keys().map(move |tool| {
                let rules = chio_kernel::provenance::OutputRules {
                    computed: true,
                    ..Default::default()
                };
                ((id.clone(), tool), rules)
            })
        })
        .collect();
    config.guards = policy.guards.clone();
    config.monetary_budgets = super::budgets::kernel_budgets(&policy.budgets)
        .map_err(|e| CliError::infrastructure(COMMAND, e))?;
    // A budget's client is known by its key before it calls, so a call its
    // delegate makes under a capability it delegated counts in its budget
    // (`chio_kernel::kernel::Authorisers`); a key that is no curve point can
    // neither prove nor delegate, and is left out.
    config.agent_keys = policy
        .budgets
        .iter()
        .filter_map(|b| b.agent.as_ref())
        .filter(|key| chio_kernel::keys::parse_public_key_hex(key).is_ok())
        .map(|key| (key.clone(), key.clone()))
        .collect();
    EdgeKernel::spawn(config, stores, Box::new(cache))
        .map_err(|e| CliError::infrastructure(COMMAND, e.to_string()))
}
