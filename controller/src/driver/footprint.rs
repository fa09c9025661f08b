//! Step footprints: what each scheduled step reads or writes that another
//! step's outcome could depend on, known from the scenario and the resolved
//! world before anything runs.
//!
//! The pipelined driver (`pipeline`) dispatches a step while earlier steps
//! are still in flight only when their footprints do not overlap (two reads
//! of one resource never overlap; a write overlaps any access). A step's
//! footprint claims, as [`Resource`]s:
//!
//! - the acting agent ([`Resource::Agent`]): its principal and session
//!   labels (the session id is the agent id), its session journal on every
//!   kernel, its tool budgets (a call also counts in the tool budgets of
//!   the agents who delegated its chain, which the write of the budgeted
//!   server below covers), the request ids and tokens its agent actor
//!   holds;
//! - for a call, delegation or revocation, the whole lineage of the
//!   capability ([`Resource::Lineage`]): every capability id joined to it by
//!   any delegate step of the scenario, ancestors and descendants alike, so
//!   a revocation of an ancestor, a budget held on an ancestor, a sibling
//!   share, the total of a monetary scope constraint (kept per root
//!   capability), lineage labels and the run's ledger entries of the lineage (which
//!   capability exists and who holds it, what `prepare` reads) are covered;
//!   and a read of every agent that holds or delegates in that lineage (a
//!   call reads the delegator's principal labels for each chain link);
//! - for a delegation, the delegatee too (it comes to hold the child); for a
//!   message, the receiver (its principal and session take the message's
//!   labels) and the forwarded call's released output
//!   ([`Resource::Output`]), which that call writes; for a call whose
//!   argument takes its value from a step, that step's output, likewise;
//! - for a call, the tool server's state ([`Resource::Server`], named by
//!   the server whose store it keeps what it is sent in: its own, or the
//!   one it declares `shares_state_with`): a read of a
//!   workspace server by `read_file` or `list_dir`, a write for every other
//!   tool and server kind, and a write for any call to a server a tool or
//!   monetary budget names. A write stores the labels its caller holds with
//!   what it writes (labels at rest), which the caller's own claims (its
//!   agent, its lineage and the delegators of its chain) and the server
//!   write cover: a later read of the server waits for the write and the
//!   labels it read;
//! - for a call, every monetary budget declared on its server and tool
//!   ([`Resource::Budget`], a write, whoever the budget's subject): its total
//!   (in every window) is shared by every call it counts, whichever agent,
//!   lineage or kernel makes them, and an approval on the total reads it;
//! - for a call, the run-time allowlist records ([`Resource::Allowlists`],
//!   one resource for all of them): a write for a call of a tool some
//!   kernel's `integrity` guard reads an allowlist from (`allow_from`: its
//!   release records values), a read for a call of a tool whose protected
//!   arguments an allowlist may admit, so such a call waits for every
//!   earlier listing read, whichever agent made it.
//!
//! What is not claimed, and why it cannot reach an output: receipts are
//! content-addressed and the bundle lists them in the order the driver
//! records them, not the order trust-control appended them; request and
//! hold ids are step ids, unique in a run; issuer-key refreshes follow the
//! wall clock and change no decision. A step whose footprint cannot be
//! known (a call that presents no capability or an unknown one, a call to
//! an unknown server, and any step kind this module does not analyse) is a
//! [`Footprint::Barrier`]: it waits for every earlier step and every later
//! step waits for it. When unsure, conflict.

use std::collections::{BTreeMap, BTreeSet};

use chio_arena::{Action, Scenario, Step};
use chio_node::tools::ToolServerConfig;
use chio_node::World;

/// Something steps share whose state one step's outcome could depend on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    /// An agent: its principal and session labels, journal, tool budgets
    /// and actor.
    Agent(String),
    /// A class of capability ids joined by delegation, named by its least id.
    Lineage(String),
    /// A tool server's state.
    Server(String),
    /// A call step's released output, by step id.
    Output(String),
    /// A monetary budget's total, by budget id.
    Budget(String),
    /// Every run-time allowlist record.
    Allowlists,
}

/// How a step uses a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Reads it; reads of one resource never overlap.
    Read,
    /// Writes it; overlaps any other access.
    Write,
}

/// What one step claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Footprint {
    /// Every earlier step must finish first, and every later step waits.
    Barrier,
    /// The resources it reads or writes.
    Claims(BTreeMap<Resource, Access>),
}

impl Footprint {
    fn claims() -> Self {
        Footprint::Claims(BTreeMap::new())
    }

    /// Adds a claim; a write wins over a read of the same resource.
    fn claim(&mut self, resource: Resource, access: Access) {
        if let Footprint::Claims(claims) = self {
            let entry = claims.entry(resource).or_insert(access);
            *entry = (*entry).max(access);
        }
    }
}

/// Capability ids joined by delegation, and the agents of each class.
struct Lineages {
    /// Each known capability id's class name.
    class: BTreeMap<String, String>,
    /// Every agent that holds, delegates or receives in each class.
    agents: BTreeMap<String, BTreeSet<String>>,
}

impl Lineages {
    /// Joins every grant and every delegate step's parent and child.
    fn of(scenario: &Scenario, world: &World) -> Self {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut members: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (id, (holder, _)) in &world.grants {
            edges.entry(id.clone()).or_default();
            members
                .entry(id.clone())
                .or_default()
                .insert(holder.clone());
        }
        for index in scenario.delegate_steps() {
            // A step that cannot be read leaves its lineage unjoined; its
            // own footprint is then a barrier (see `Footprints::at`).
            let Ok(step) = scenario.step(*index) else {
                continue;
            };
            if let Action::Delegate(d) = &step.action {
                edges
                    .entry(d.capability.clone())
                    .or_default()
                    .insert(d.delegation.clone());
                edges
                    .entry(d.delegation.clone())
                    .or_default()
                    .insert(d.capability.clone());
                for id in [&d.capability, &d.delegation] {
                    let agents = members.entry(id.clone()).or_default();
                    agents.insert(step.head.agent.clone());
                    agents.insert(d.to.clone());
                }
            }
        }
        let mut class = BTreeMap::new();
        let mut agents: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        // Ids in ascending order, so each class is named by its least id.
        for start in edges.keys() {
            if class.contains_key(start) {
                continue;
            }
            let mut stack = vec![start.clone()];
            while let Some(id) = stack.pop() {
                if class.insert(id.clone(), start.clone()).is_some() {
                    continue;
                }
                if let Some(held) = members.get(&id) {
                    agents
                        .entry(start.clone())
                        .or_default()
                        .extend(held.iter().cloned());
                }
                if let Some(next) = edges.get(&id) {
                    stack.extend(next.iter().filter(|n| !class.contains_key(*n)).cloned());
                }
            }
        }
        Lineages { class, agents }
    }

    /// Claims `capability`'s lineage (write) and its agents (read); `false`
    /// when the id belongs to no lineage.
    fn claim(&self, footprint: &mut Footprint, capability: &str) -> bool {
        let Some(class) = self.class.get(capability) else {
            return false;
        };
        footprint.claim(Resource::Lineage(class.clone()), Access::Write);
        for agent in self.agents.get(class).into_iter().flatten() {
            footprint.claim(Resource::Agent(agent.clone()), Access::Read);
        }
        true
    }
}

/// The tools of every kernel's `integrity` guards' run-time allowlists
/// (`allow_from`): the listings whose release records values, and the
/// tools whose protected arguments read the records, by `(server, tool)`.
#[derive(Default)]
struct AllowlistTools {
    sources: BTreeSet<(String, String)>,
    readers: BTreeSet<(String, String)>,
}

impl AllowlistTools {
    fn of(world: &World) -> Self {
        let mut out = AllowlistTools::default();
        let guards = world.kernels.values().flat_map(|k| &k.config.guards);
        for spec in guards.filter(|g| g.kind == chio_kernel::guards::GuardKind::Integrity) {
            let by_server = spec.config.get("allow_from").and_then(|v| v.as_object());
            for (server, tools) in by_server.into_iter().flatten() {
                for (tool, arguments) in tools.as_object().into_iter().flatten() {
                    out.readers.insert((server.clone(), tool.clone()));
                    let listed = arguments.as_object().into_iter().flatten();
                    for source in listed.flat_map(|(_, l)| l.as_array().into_iter().flatten()) {
                        let named = |key: &str| source.get(key).and_then(|v| v.as_str());
                        if let (Some(server), Some(tool)) = (named("server"), named("tool")) {
                            out.sources.insert((server.to_string(), tool.to_string()));
                        }
                    }
                }
            }
        }
        out
    }

    /// Claims the allowlist records a call of `tool` on `server` writes or
    /// reads.
    fn claim(&self, footprint: &mut Footprint, server: &str, tool: &str) {
        let key = (server.to_string(), tool.to_string());
        if self.sources.contains(&key) {
            footprint.claim(Resource::Allowlists, Access::Write);
        }
        if self.readers.contains(&key) {
            footprint.claim(Resource::Allowlists, Access::Read);
        }
    }
}

/// Whether a call of `tool` on `server` leaves the server's state as it was.
fn reads_only(world: &World, server: &str, tool: &str) -> bool {
    let budgeted = world.kernels.values().any(|kernel| {
        kernel
            .config
            .tool_budgets
            .iter()
            .any(|budget| budget.server == server)
            || kernel
                .config
                .monetary_budgets
                .iter()
                .any(|budget| budget.server == server)
    });
    let workspace = world
        .servers
        .get(server)
        .is_some_and(|plan| matches!(plan.config, ToolServerConfig::Workspace { .. }));
    workspace && !budgeted && matches!(tool, "read_file" | "list_dir")
}

/// The footprint of one step of `agent`.
fn footprint(
    world: &World,
    lineages: &Lineages,
    allowlists: &AllowlistTools,
    step_id: &str,
    agent: &str,
    action: &Action,
) -> Footprint {
    let mut footprint = Footprint::claims();
    footprint.claim(Resource::Agent(agent.to_string()), Access::Write);
    #[allow(unreachable_patterns)]
    let known = match action {
        Action::Call(call) => {
            let access = if reads_only(world, &call.server, &call.tool) {
                Access::Read
            } else {
                Access::Write
            };
            // Two servers over one store are one state: a call claims the
            // store's owner, so a read through one waits for a write
            // through the other.
            let store = world
                .servers
                .get(&call.server)
                .map_or(call.server.as_str(), chio_node::world::ServerPlan::store);
            footprint.claim(Resource::Server(store.to_string()), access);
            footprint.claim(Resource::Output(step_id.to_string()), Access::Write);
            allowlists.claim(&mut footprint, &call.server, &call.tool);
            // An argument that takes its value from a step waits for it; a
            // sealed file was read at load and waits for nothing.
            for placed in
                chio_arena::scenario::value::references(&call.arguments).unwrap_or_default()
            {
                if let chio_arena::scenario::value::Reference::Step { step, .. } = placed.reference
                {
                    footprint.claim(Resource::Output(step), Access::Read);
                }
            }
            for budget in world
                .kernels
                .values()
                .flat_map(|kernel| &kernel.config.monetary_budgets)
                .filter(|b| b.server == call.server && b.tool == call.tool)
            {
                footprint.claim(Resource::Budget(budget.id.clone()), Access::Write);
            }
            world.servers.contains_key(&call.server)
                && call
                    .capability
                    .as_deref()
                    .is_some_and(|id| lineages.claim(&mut footprint, id))
        }
        Action::Delegate(delegate) => {
            footprint.claim(Resource::Agent(delegate.to.clone()), Access::Write);
            lineages.claim(&mut footprint, &delegate.capability)
        }
        Action::Revoke(revoke) => {
            // A target no step creates is refused; it touches no lineage.
            lineages.claim(&mut footprint, &revoke.target);
            true
        }
        Action::Message(message) => {
            footprint.claim(Resource::Agent(message.to.clone()), Access::Write);
            if let Some(source) = &message.from_step {
                footprint.claim(Resource::Output(source.clone()), Access::Read);
            }
            // A hand-over reads the outputs its value is built from and
            // writes the value a planner's call may take.
            if let Some(handover) = &message.handover {
                footprint.claim(Resource::Output(step_id.to_string()), Access::Write);
                for placed in
                    chio_arena::scenario::value::references(&handover.value).unwrap_or_default()
                {
                    if let chio_arena::scenario::value::Reference::Step { step, .. } =
                        placed.reference
                    {
                        footprint.claim(Resource::Output(step), Access::Read);
                    }
                }
            }
            true
        }
        Action::Advance(_) => true,
        // A step kind added later is a barrier until it is analysed here.
        _ => false,
    };
    if known {
        footprint
    } else {
        Footprint::Barrier
    }
}

/// Makes the footprint of any scheduled step on demand, so the pipelined
/// driver holds footprints only for the steps in its window, never one per
/// step of the schedule.
pub struct Footprints<'a> {
    world: &'a World,
    lineages: Lineages,
    allowlists: AllowlistTools,
}

impl<'a> Footprints<'a> {
    /// Joins the scenario's lineages once, for every later footprint.
    pub fn new(scenario: &'a Scenario, world: &'a World) -> Self {
        Self {
            world,
            lineages: Lineages::of(scenario, world),
            allowlists: AllowlistTools::of(world),
        }
    }

    /// The footprint of `step`, one of the scenario's.
    pub fn of(&self, step: &Step) -> Footprint {
        footprint(
            self.world,
            &self.lineages,
            &self.allowlists,
            &step.head.id,
            &step.head.agent,
            &step.action,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena_run::load_for_run;
    use crate::driver::claims::Claimed;

    fn claims(list: &[(Resource, Access)]) -> Footprint {
        Footprint::Claims(list.iter().cloned().collect())
    }

    fn server(access: Access) -> Footprint {
        claims(&[(Resource::Server("ws".into()), access)])
    }

    /// The triangular scenario's footprints by step id.
    fn triangular() -> BTreeMap<String, Footprint> {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/three_agent_triangular_delegation.toml");
        let (scenario, inputs) = load_for_run("test", &file).expect("scenario loads");
        let world = World::resolve(&scenario, &inputs.fixtures).expect("world resolves");
        let footprints = Footprints::new(&scenario, &world);
        scenario
            .schedule()
            .iter()
            .map(|s| {
                let step = scenario.step(s.step_index).unwrap();
                (step.head.id.clone(), footprints.of(&step))
            })
            .collect()
    }

    /// Whether `later` may be dispatched while `earlier` is unfolded.
    fn overlap(earlier: &Footprint, later: &Footprint) -> bool {
        let mut claimed = Claimed::new();
        claimed.add(earlier);
        !claimed.admits(later)
    }

    // Proves two reads of one resource do not overlap, and a write overlaps a read either way round.
    #[test]
    fn reads_share_and_writes_exclude() {
        assert!(!overlap(&server(Access::Read), &server(Access::Read)));
        assert!(overlap(&server(Access::Read), &server(Access::Write)));
        assert!(overlap(&server(Access::Write), &server(Access::Read)));
        let other = claims(&[(Resource::Server("other".into()), Access::Write)]);
        assert!(!overlap(&server(Access::Write), &other));
    }

    // Proves a barrier waits for any earlier step and holds back every later one, and goes first when nothing is claimed.
    #[test]
    fn barrier_excludes_everything() {
        let empty = Footprint::claims();
        assert!(overlap(&Footprint::Barrier, &empty));
        assert!(overlap(&empty, &Footprint::Barrier));
        assert!(Claimed::new().admits(&Footprint::Barrier));
    }

    // Proves a call under a delegated capability shares a lineage with the revocation of its ancestor and reads the delegators' principals.
    #[test]
    fn delegated_call_overlaps_ancestor_revocation_and_delegators() {
        let steps = triangular();
        let revoke = &steps["alice-revokes-bob"];
        let carol = &steps["carol-reads-after-revocation"];
        assert!(overlap(revoke, carol));
        assert!(overlap(&steps["bob-to-carol"], &steps["carol-reads-plan"]));
        let Footprint::Claims(carol_claims) = carol else {
            panic!("a call with a known capability is analysed");
        };
        for agent in ["alice", "bob"] {
            assert!(carol_claims.contains_key(&Resource::Agent(agent.into())));
        }
        // Alice's own read of her grant is in the same lineage as carol's call.
        assert!(overlap(&steps["alice-reads-plan"], carol));
    }

    // Proves a listing read that feeds a run-time allowlist and a later call whose protected argument reads one overlap, though the call takes no value from the read and another agent made it; a call of neither tool claims no record.
    #[test]
    fn allowlist_listings_and_their_readers_overlap() {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/run_time_allowlist.toml");
        let (scenario, inputs) = load_for_run("test", &file).expect("scenario loads");
        let world = World::resolve(&scenario, &inputs.fixtures).expect("world resolves");
        let footprints = Footprints::new(&scenario, &world);
        let steps: BTreeMap<String, Footprint> = scenario
            .schedule()
            .iter()
            .map(|s| {
                let step = scenario.step(s.step_index).unwrap();
                (step.head.id.clone(), footprints.of(&step))
            })
            .collect();
        let listing = &steps["reader-reads-history"];
        let pay = &steps["pay-a-payee-the-bank-recorded"];
        assert!(overlap(listing, pay));
        let claimed = |fp: &Footprint| match fp {
            Footprint::Claims(c) => c.get(&Resource::Allowlists).copied(),
            Footprint::Barrier => panic!("analysed"),
        };
        assert_eq!(claimed(listing), Some(Access::Write));
        assert_eq!(claimed(pay), Some(Access::Read));
        assert_eq!(claimed(&steps["reader-reads-the-bill"]), None);
    }

    // Proves every call to a monetary-budgeted tool writes that budget's total, whichever agent makes it, so two calls counted by one budget are never in flight together.
    #[test]
    fn calls_counted_by_a_monetary_budget_write_its_total() {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/monetary_budget.toml");
        let (scenario, inputs) = load_for_run("test", &file).expect("scenario loads");
        let world = World::resolve(&scenario, &inputs.fixtures).expect("world resolves");
        let footprints = Footprints::new(&scenario, &world);
        let budgets = [
            Resource::Budget("clerk-daily-eur".into()),
            Resource::Budget("intern-daily-eur".into()),
        ];
        let mut calls = 0;
        for step in scenario.steps() {
            let step = step.unwrap();
            let Footprint::Claims(claims) = footprints.of(&step) else {
                panic!("{} is analysed", step.head.id);
            };
            for budget in &budgets {
                assert_eq!(claims.get(budget), Some(&Access::Write), "{}", step.head.id);
            }
            calls += 1;
        }
        assert!(calls > 2);
    }

    // Proves a call presenting a capability no grant or delegation names is a barrier.
    #[test]
    fn unknown_capability_is_a_barrier() {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/three_agent_triangular_delegation.toml");
        let (scenario, inputs) = load_for_run("test", &file).expect("scenario loads");
        let world = World::resolve(&scenario, &inputs.fixtures).expect("world resolves");
        let lineages = Lineages::of(&scenario, &world);
        let call = scenario
            .steps()
            .find_map(|s| match &s.unwrap().action {
                Action::Call(call) => Some(call.clone()),
                _ => None,
            })
            .expect("a call step");
        let mut unknown = call.clone();
        unknown.capability = Some("no-such-capability".into());
        let fp = footprint(
            &world,
            &lineages,
            &AllowlistTools::default(),
            "x",
            "alice",
            &Action::Call(unknown),
        );
        assert_eq!(fp, Footprint::Barrier);
        let known = footprint(
            &world,
            &lineages,
            &AllowlistTools::default(),
            "x",
            "alice",
            &Action::Call(call),
        );
        assert_ne!(known, Footprint::Barrier);
    }
}
