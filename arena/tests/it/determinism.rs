//! Golden tests for the determinism core: the virtual clock's strict parse
//! and formatting, the RNG streams' first values for fixed seeds and ids,
//! and the scheduler's interleaving of three agents.

use chio_arena::{
    fnv1a64, ArenaError, ArenaRng, DeterministicScheduler, ScheduleInput, SchedulerKind,
    VirtualClock,
};
use rand_core::RngCore;

fn refused(text: &str) -> bool {
    matches!(
        VirtualClock::parse(text),
        Err(ArenaError::BadClockStart { .. })
    )
}

// A leap day parses; the same day in a common year and a 30 February do not.
#[test]
fn clock_checks_days_against_months_and_leap_years() {
    assert!(VirtualClock::parse("2028-02-29T00:00:00Z").is_ok());
    assert!(VirtualClock::parse("2000-02-29T12:00:00Z").is_ok());
    assert!(refused("2026-02-29T00:00:00Z"));
    assert!(refused("2100-02-29T00:00:00Z"));
    assert!(refused("2026-02-30T09:00:00.000Z"));
    assert!(refused("2026-04-31T09:00:00Z"));
    assert!(refused("2026-13-01T09:00:00Z"));
    assert!(refused("2026-00-10T09:00:00Z"));
}

// Only the strict UTC form is accepted: missing Z, offsets, lowercase, leap seconds and out-of-range years are refused.
#[test]
fn clock_refuses_everything_but_strict_utc() {
    assert!(refused("2026-10-12T09:00:00.000"));
    assert!(refused("2026-10-12T09:00:00+00:00"));
    assert!(refused("2026-10-12t09:00:00Z"));
    assert!(refused("2026-10-12 09:00:00Z"));
    assert!(refused("2026-10-12T09:00:60Z"));
    assert!(refused("2026-10-12T24:00:00Z"));
    assert!(refused("1969-12-31T23:59:59Z"));
    assert!(refused("3000-01-01T00:00:00Z"));
    assert!(refused("2026-10-12T09:00:00.Z"));
    assert!(refused("2026-10-12T09:00:00.1234567890Z"));
    assert!(refused("2026-10-12T09:00:00,5Z"));
    assert!(refused(""));
    assert!(VirtualClock::parse("1970-01-01T00:00:00Z").is_ok());
    assert!(VirtualClock::parse("2999-12-31T23:59:59.999999999Z").is_ok());
}

// The start formats back as written (9-digit fraction kept, none kept as none) and later instants keep millisecond precision.
#[test]
fn clock_formats_with_the_documented_fraction_rule() {
    let mut nine = VirtualClock::parse("2028-02-29T23:59:59.123456789Z").unwrap();
    assert_eq!(nine.format_start(), "2028-02-29T23:59:59.123456789Z");
    nine.advance(1_000);
    assert_eq!(nine.format(), "2028-03-01T00:00:00.123456789Z");

    let mut none = VirtualClock::parse("2026-10-12T09:00:00Z").unwrap();
    assert_eq!(none.format_start(), "2026-10-12T09:00:00Z");
    none.tick();
    assert_eq!(none.format(), "2026-10-12T09:00:00.001Z");

    let mut seed = VirtualClock::parse("2026-10-12T09:00:00.000Z").unwrap();
    assert_eq!(seed.now_ms(), 1_791_795_600_000);
    seed.advance(600_000);
    assert_eq!(seed.now_ms(), 1_791_796_200_000);
    assert_eq!(seed.offset_ms(), 600_000);
    assert_eq!(seed.format(), "2026-10-12T09:10:00.000Z");
    seed.set_offset_ms(5);
    assert_eq!(seed.format(), "2026-10-12T09:00:00.005Z");
    let ticking = VirtualClock::parse("2026-10-12T09:00:00.5Z")
        .unwrap()
        .with_tick_ms(250);
    assert_eq!(
        ticking.format_offset_ms(ticking.tick_ms() * 2),
        "2026-10-12T09:00:01.000Z"
    );
}

// FNV-1a 64 matches the published test vectors.
#[test]
fn fnv1a64_matches_reference_vectors() {
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
}

// Sub-stream seeds are FNV-1a over seed_be ++ ":" ++ id (or generation_be), and the first draws are pinned.
#[test]
fn rng_streams_are_pinned() {
    let rng = ArenaRng::new(421);
    let mut bytes = 421u64.to_be_bytes().to_vec();
    bytes.push(b':');
    bytes.extend_from_slice(b"reviewer");
    assert_eq!(rng.agent_seed("reviewer"), fnv1a64(&bytes));
    let mut gen = 421u64.to_be_bytes().to_vec();
    gen.push(b':');
    gen.extend_from_slice(&3u32.to_be_bytes());
    assert_eq!(rng.generation_seed(3), fnv1a64(&gen));

    let first = |mut r: rand_chacha::ChaCha20Rng| r.next_u64();
    let pinned = [
        first(ArenaRng::new(421).root()),
        first(ArenaRng::new(421).agent_stream("reviewer")),
        first(ArenaRng::new(7).agent_stream("alice")),
        first(ArenaRng::new(7).agent_stream("bob")),
        first(ArenaRng::new(7).agent_stream("carol")),
        first(ArenaRng::new(421).generation_stream(0)),
        first(ArenaRng::new(421).generation_stream(1)),
    ];
    assert_eq!(rng.agent_seed("reviewer"), 0xc9f8_6674_4549_1e00);
    assert_eq!(pinned, PINNED);
}

/// First `next_u64` of: root(421), reviewer@421, alice@7, bob@7, carol@7, generation 0@421, generation 1@421.
const PINNED: [u64; 7] = [
    0x4e57_452c_e25f_6974,
    0xcdf8_fb64_2a79_faee,
    0xf228_15b0_409e_17af,
    0xe2d1_f095_e50d_583f,
    0x334b_1870_d20d_dbe3,
    0x5279_399c_8f77_71fb,
    0xe108_e70a_6bba_052e,
];

// A sub-stream does not depend on which other streams were drawn first.
#[test]
fn rng_streams_are_independent_of_draw_order() {
    let rng = ArenaRng::new(7);
    let mut bob_first = rng.agent_stream("bob");
    let bob_a = bob_first.next_u64();
    let mut alice = rng.agent_stream("alice");
    let _ = alice.next_u64();
    let mut bob_again = rng.agent_stream("bob");
    assert_eq!(bob_again.next_u64(), bob_a);
    assert_ne!(rng.agent_seed("alice"), rng.agent_seed("bob"));
}

/// A step's id beside its scheduler input; the agent's rank is its place
/// among the agent ids in ascending order, as the validator ranks them.
fn input<'a>(
    step: &'a str,
    agent: &'a str,
    at: Option<u64>,
    advance: Option<u64>,
) -> (&'a str, ScheduleInput) {
    let rank = ["alice", "bob", "carol"]
        .iter()
        .position(|a| *a == agent)
        .expect("a test agent") as u32;
    (
        step,
        ScheduleInput {
            agent: rank,
            at,
            advance_ms: advance,
        },
    )
}

fn inputs_of(steps: &[(&str, ScheduleInput)]) -> Vec<ScheduleInput> {
    steps.iter().map(|(_, input)| *input).collect()
}

// Three agents interleave by (time, agent id, intra-agent step), and an advance shifts only the actions ordered after it.
#[test]
fn scheduler_interleaves_three_agents() {
    let inputs = [
        input("c1", "carol", Some(0), None),
        input("a1", "alice", Some(0), None),
        input("b1", "bob", None, None),      // index 2: time 2
        input("a2", "alice", Some(2), None), // ties with b1 at 2; alice < bob
        input("c2", "carol", Some(2), None),
        input("wait", "bob", Some(3), Some(1_000)),
        input("a3", "alice", Some(3), None), // same time as wait; alice < bob
        input("b2", "bob", Some(4), None),
        input("c3", "carol", Some(1), None),
    ];
    let schedule = DeterministicScheduler::new(SchedulerKind::DeterministicMultiV1, 1)
        .schedule(&inputs_of(&inputs))
        .unwrap();
    let order: Vec<(&str, u64, u64)> = schedule
        .iter()
        .map(|s| (inputs[s.step_index].0, s.scheduled_ms, s.evaluation_ms))
        .collect();
    assert_eq!(
        order,
        vec![
            ("a1", 0, 0),
            ("c1", 0, 0),
            ("c3", 1, 1),
            ("a2", 2, 2),
            ("b1", 2, 2),
            ("c2", 2, 2),
            ("a3", 3, 3),
            ("wait", 3, 3),
            ("b2", 4, 1_004),
        ]
    );
}

// Same time and same agent fall back to declaration order among that agent's steps.
#[test]
fn scheduler_keeps_an_agents_own_order_on_ties() {
    let inputs = [
        input("x", "alice", Some(5), None),
        input("y", "alice", Some(5), None),
        input("z", "alice", Some(1), None),
    ];
    let schedule = DeterministicScheduler::new(SchedulerKind::SingleAgentV1, 1)
        .schedule(&inputs_of(&inputs))
        .unwrap();
    let ids: Vec<&str> = schedule.iter().map(|s| inputs[s.step_index].0).collect();
    assert_eq!(ids, ["z", "x", "y"]);
}

// single-agent-v1 refuses steps from two agents.
#[test]
fn single_agent_scheduler_refuses_two_agents() {
    let inputs = [
        input("a", "alice", None, None),
        input("b", "bob", None, None),
    ];
    let err = DeterministicScheduler::new(SchedulerKind::SingleAgentV1, 1)
        .schedule(&inputs_of(&inputs))
        .unwrap_err();
    assert_eq!(err, ArenaError::SingleAgentScheduler { count: 2 });
}
