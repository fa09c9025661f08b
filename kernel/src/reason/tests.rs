use super::*;
use crate::error::StoreName;

fn s(text: &str) -> String {
    text.to_string()
}

/// One reason of every code, with the message it prints.
fn examples() -> Vec<(DenyReason, &'static str)> {
    use DenyReason as R;
    let link = |widening| R::WidensScope {
        child: s("c"),
        widening,
    };
    let mut all = vec![
        (R::SchemaUnknown { schema: s("x/v9") }, "capability schema \"x/v9\" is not chio.capability/v1"),
        (R::RootGrantMissing, "delegated capability carries no root grant"),
        (R::RootGrantUnexpected, "capability carries a root grant but no delegation chain"),
        (R::UntrustedIssuer, "capability issuer is not a trusted CA"),
        (R::InvalidSignature, "capability signature is invalid"),
        (R::NotYetValid, "capability not yet valid"),
        (R::Expired, "capability has expired"),
        (R::DelegationTooDeep { depth: 9, limit: 8 }, "delegation depth 9 exceeds the limit 8"),
        (R::KeyMalformed { field: s("delegation_chain[0].delegatee") }, "capability key delegation_chain[0].delegatee is not an Ed25519 public key in 64 lowercase hex characters"),
        (R::ChainBroken { index: 1, child: s("c"), parent: s("p") }, "delegation chain is broken at link 1: link c does not continue from p"),
        (R::ChainCycleId { child: s("c") }, "delegation chain has a cycle: capability id c appears twice"),
        (R::ChainCycleKey { child: s("c") }, "delegation chain has a cycle: link c delegates back to a key already in the chain"),
        (R::LinkBeforeParent { child: s("c") }, "delegation link c is dated before its parent link"),
        (R::LinkInFuture { child: s("c") }, "delegation link c is dated after the evaluation time"),
        (link(Widening::Server { server: s("s") }), "delegation link c widens scope: server s is not granted by its parent"),
        (link(Widening::Tool { tool: s("t"), server: s("s") }), "delegation link c widens scope: tool t on server s is not granted by its parent"),
        (link(Widening::Constraint { name: s("path_prefix"), server: s("s") }), "delegation link c widens scope: constraint path_prefix on server s is looser than its parent's"),
        (R::WidensExpiry { child: s("c"), expires: 2, parent: 1 }, "delegation link c expires at 2 ms after its parent's expiry 1 ms"),
        (R::WidensStart { child: s("c"), not_before: 1, parent: 2 }, "delegation link c becomes valid at 1 ms before its parent's start 2 ms"),
        (R::WidensBudget { child: s("c"), allows: 3, parent: 2 }, "delegation link c allows 3 invocations, more than its parent's 2"),
        (R::UnlimitedBudget { child: s("c"), parent: 2 }, "delegation link c has an unlimited invocation budget under a parent limited to 2"),
        (R::WidensShare { child: s("c"), bps: 600, parent: 500 }, "delegation link c share 600 bps exceeds its parent's 500 bps"),
        (R::Revoked { id: s("cap") }, "capability has been revoked: cap"),
        (R::ChainRevoked { ancestor: s("root") }, "delegation chain revoked at ancestor root"),
        (StoreError::unavailable(StoreName::Revocation, "trust-control unavailable").into(), "revocation store unavailable: trust-control unavailable"),
        (R::Store(StoreError::Refused { store: StoreName::Nonce, detail: s("x") }), "nonce store refused the operation: x"),
        (R::ProofMissing, "proof of possession is missing"),
        (R::NotTheProvingAgent { agent: s("eve"), key: s("abcd") }, "request names an agent that does not hold the proving key: agent eve is not registered with key abcd"),
        (R::AgentNotSubject { agent: s("eve"), capability: s("cap") }, "capability presented by another agent: agent eve does not hold the subject key of capability cap"),
        (R::SignerNotSubject { signer: s("k1"), capability: s("cap"), subject: s("k2") }, "capability presented by another agent: request signed by key k1, capability cap belongs to key k2"),
        (R::ProofInvalid, "proof of possession is invalid"),
        (R::ProofUncanonical { cause: s("x") }, "request cannot be canonicalised for its proof: x"),
        (R::RequestStale { issued: 1, now: 9, max_age: 5 }, "request is stale: issued at 1 ms, evaluated at 9 ms, older than 5 ms"),
        (R::RequestFromFuture { issued: 9, now: 1 }, "request is dated 9 ms, after the evaluation time 1 ms"),
        (R::Replayed { request_id: s("r1") }, "request replayed: r1"),
        (R::ServerNotServed { server: s("s") }, "server s is not served by this kernel"),
        (R::ToolNotDeclared { tool: s("t"), server: s("s") }, "tool t is not declared by server s"),
        (R::ArgumentsRefused { server: s("s"), tool: s("t"), pointer: s("/path"), keyword: s("type") }, "arguments of s/t fail the tool's input schema at /path: type"),
        (R::OutOfScope { tool: s("t"), server: s("s") }, "tool t on server s not covered by any scope grant"),
        (R::DefinitionChanged { server: s("s"), tool: s("t") }, "tool definition changed: s/t is not the definition the capability was issued for"),
        (R::DefinitionNotPinned { server: s("s"), tool: s("t") }, "capability pins tool definitions and none for s/t"),
        (R::DefinitionUnknown { server: s("s"), tool: s("t") }, "capability pins tool definitions and this kernel holds no definition of s/t"),
        (R::ConstraintUnknown { name: s("geo") }, "unknown constraint geo; the kernel cannot evaluate it"),
        (R::ConstraintMalformed { name: "monetary" }, "constraint monetary is malformed; the kernel cannot evaluate it"),
        (R::PathArgumentMissing, "constraint path_prefix requires a path argument and the call has none"),
        (R::PathEscapesRoot { path: s("/../x") }, "path /../x escapes the root"),
        (R::PathNulByte { path: s("/a\0") }, "path \"/a\\0\" contains a NUL byte"),
        (R::OutsidePrefix { path: s("/x"), pointer: s("/path"), prefix: s("/w/") }, "path /x (argument /path) is outside the granted prefix /w/"),
        (R::AmountMalformed { argument: s("amount") }, "constraint monetary needs argument amount as a whole number of minor units"),
        (R::AmountTooLarge { amount: 9, currency: s("EUR"), max: 5 }, "amount 9 EUR exceeds the per-invocation maximum 5"),
        (R::BudgetExhausted { budget: BudgetName::Tool { agent: s("a"), server: s("s"), tool: s("t") }, used: 2, limit: 2, amount: 1 }, "tool budget of a for s/t exhausted: 2 of 2 used, 1 more requested"),
        (R::from(MoneyDeny::AmountMissing { budget: s("daily"), argument: s("amount") }), "monetary budget daily needs the amount in argument amount and the call has none"),
        (R::from(MoneyDeny::AmountMalformed { budget: s("daily"), argument: s("amount"), problem: "is not a decimal string of digits with at most one point" }), "monetary budget daily: argument amount is not a decimal string of digits with at most one point"),
        (R::from(MoneyDeny::AmountTooPrecise { budget: s("daily"), argument: s("amount"), places: 3, limit: s("2000.00") }), "monetary budget daily: argument amount has 3 decimal places, more than its limit 2000.00; amounts are never rounded"),
        (R::from(MoneyDeny::AmountNotPositive { budget: s("daily"), argument: s("amount") }), "monetary budget daily: argument amount is zero or negative; an amount spent is positive"),
        (R::from(MoneyDeny::CurrencyMissing { budget: s("daily"), argument: s("currency"), currency: s("EUR") }), "monetary budget daily counts EUR and needs the currency in argument currency; the call has none"),
        (R::from(MoneyDeny::CurrencyMismatch { budget: s("daily"), argument: s("currency"), found: s("\"USD\""), currency: s("EUR") }), "monetary budget daily counts EUR and argument currency names \"USD\""),
        (R::from(MoneyDeny::WindowBeforeStart { budget: s("daily"), now: 5, origin: 9 }), "monetary budget daily counts in windows from 9 ms; the call at 5 ms is before the first"),
        (R::from(MoneyDeny::Exceeded { budget: s("daily"), spent: s("1999.98"), amount: s("999.99"), limit: s("2000.00"), currency: s("EUR"), window: Some(0) }), "monetary budget daily exceeded: 1999.98 of 2000.00 EUR spent in window 0, 999.99 more requested"),
        (R::from(MoneyDeny::ShareExceeded { budget: s("daily"), capability: s("clerk-pay"), bps: 5000, spent: s("400.00"), amount: s("100.01"), limit: s("500.00"), currency: s("EUR"), window: None }), "monetary budget daily: delegated share of clerk-pay (5000 bps) exceeded: 400.00 of 500.00 EUR spent, 100.01 more requested"),
        (R::from(MoneyDeny::TotalAboveApproval { budget: s("daily"), total: s("1999.98"), threshold: s("1000"), currency: s("EUR") }), "monetary budget daily would reach 1999.98 EUR, above 1000; approval required"),
    ];
    all.extend(guard_examples());
    all
}

/// One reason of every code from the guards on, with its message.
fn guard_examples() -> Vec<(DenyReason, &'static str)> {
    use DenyReason as R;
    let injection = |pointer: Option<&str>| {
        R::PromptInjection(Injection {
            place: "arguments",
            pointer: pointer.map(s),
            pattern: s("tool-name-spoof"),
        })
    };
    vec![
        (R::ForbiddenPath { path: s("/.env"), glob: s("**/.env") }, "path /.env matches forbidden glob **/.env"),
        (R::NotAllowlisted { path: s("/x"), access: "read" }, "path /x is not in the read allowlist"),
        (R::AllowlistPathMissing { tool: s("t"), access: "write" }, "tool t carries no path argument for the write allowlist to check"),
        (R::OutsideSessionRoots { path: s("/x") }, "path /x is outside the session filesystem roots"),
        (R::SequenceRequired { tool: s("push"), requires: s("test"), session: s("s1") }, "tool push requires an earlier allowed and performed test in session s1"),
        (R::InformationFlow { label: s("internal"), key: s("session/s1"), clearance: s("public"), server: s("blog") }, "information flow: retained label internal (session/s1) exceeds the clearance public of server blog"),
        (R::UntrustedContext { key: s("session/s1"), level: s("untrusted"), tool: s("push"), server: s("git") }, "integrity: session/s1 holds untrusted content; tool push on server git is consequential"),
        (R::UntrustedArgument { argument: s("/to"), tool: s("pay"), server: s("bank") }, "integrity: argument /to carries untrusted content; it is protected on tool pay of server bank"),
        (R::UntrustedOpenWorldArgument { argument: s("/memo"), tool: s("post"), server: s("web") }, "integrity: argument /memo carries untrusted content; tool post on server web reaches the open world"),
        (R::QuarantinedConsequential { agent: s("reader"), tool: s("pay"), server: s("bank") }, "agent reader is a quarantined reader; tool pay on server bank is consequential"),
        (R::ArgumentUnrecorded { argument: s("/to"), record: s("handover/p/m1") }, "argument /to is built from the hand-over handover/p/m1, which was never recorded; its labels are unknown"),
        (R::MessageUnrecorded { pointer: s("/payee"), record: s("handover/p/m1") }, "message refused: the value at /payee is built from the hand-over handover/p/m1, which was never recorded; its labels are unknown, so nothing was carried"),
        (R::MessageUnrecorded { pointer: s(""), record: s("handover/p/m1") }, "message refused: the value is built from the hand-over handover/p/m1, which was never recorded; its labels are unknown, so nothing was carried"),
        (R::HandOverRefused { pointer: s("/iban"), keyword: s("pattern") }, "hand-over refused: the value fails its schema at /iban: pattern"),
        (R::HandOverRefused { pointer: s(""), keyword: s("type") }, "hand-over refused: the value fails its schema at the root: type"),
        (injection(Some("/note")), "prompt injection (tool-name-spoof) in arguments at /note"),
        (R::CredentialInArguments { shape: "github-token", pointer: s("/body") }, "credential (github-token) in arguments at /body; a call may not send a credential"),
        (R::CredentialSplitInArguments { shape: "github-token", pointers: vec![s("/a"), s("/b")] }, "credential (github-token) in arguments split across string values at /a, /b; a call may not send a credential"),
        (injection(None), "prompt injection (tool-name-spoof) in arguments split across string values"),
        (R::ScanLimit { place: "tool output", pointer: s("/rows"), limit: s("more than 10 JSON nodes") }, "prompt injection scan limit reached in tool output at /rows: more than 10 JSON nodes"),
        (R::PoisonedDefinition { server: s("s"), tool: s("t"), pointer: s("/inputSchema/properties/notes/description"), pattern: s("ignore-previous-instructions") }, "tool poisoning: the definition of s/t in force carries a prompt injection (ignore-previous-instructions) at /inputSchema/properties/notes/description"),
        (R::ApprovalRequired { tool: s("pay") }, "tool pay requires approval"),
        (R::ApprovalThreshold { argument: s("amount"), value: s("12"), threshold: s("10") }, "argument amount = 12 exceeds 10; approval required"),
        (R::GuardFailed { guard: s("g"), cause: s("x") }, "guard g failed: x"),
        (R::SharesOversubscribed { child: s("c"), bps: 6000, siblings: 5000, parent: s("p"), parent_bps: 10000 }, "sibling shares oversubscribed: child c asks 6000 bps, admitted siblings hold 5000 of parent p's 10000 bps"),
        (R::ShareParentUnknown { parent: s("p") }, "sibling share registry does not know parent p"),
        (R::DispatchFailed { cause: s("x") }, "dispatch failed: x"),
        (R::OutputLabelUnknown { label: s("secret") }.withheld(), "tool output label \"secret\" is not a known level; output withheld"),
        (R::OutputUncanonical { cause: s("x") }.withheld(), "tool output has no canonical form for its receipt: x; output withheld"),
        (R::ReceiptUnrecorded(StoreError::unavailable(StoreName::Receipt, "x")), "receipt store unavailable: x; no allow is released without a receipt"),
        (R::PortableNotSubject { agent: s("k"), capability: s("cap") }, "capability presented by another agent: request agent k is not the subject of capability cap"),
        (R::PortableApproval { guard: s("g"), reason: Box::new(R::ApprovalRequired { tool: s("pay") }) }, "guard g requires approval, which portable evaluation cannot run: tool pay requires approval"),
    ]
}

// Every code is spelt once, parses back to itself, and is the code of a
// reason that prints the documented message.
#[test]
fn codes_are_unique_and_each_has_a_reason() {
    let mut seen = std::collections::BTreeSet::new();
    for code in ReasonCode::ALL {
        assert!(seen.insert(code.as_str()), "{code} is declared twice");
        assert_eq!(ReasonCode::parse(code.as_str()), Some(*code));
    }
    assert_eq!(ReasonCode::parse("no-such-code"), None);
    let mut covered = std::collections::BTreeSet::new();
    for (reason, message) in examples() {
        assert_eq!(reason.to_string(), message);
        covered.insert(reason.code());
    }
    let all: std::collections::BTreeSet<_> = ReasonCode::ALL.iter().copied().collect();
    assert_eq!(covered, all, "a code without an example reason");
}

// A withheld reason keeps its cause's code and adds the suffix.
#[test]
fn withheld_keeps_the_code() {
    let reason = DenyReason::Revoked { id: s("cap") }.withheld();
    assert_eq!(reason.code(), ReasonCode::Revoked);
    assert_eq!(
        reason.to_string(),
        "capability has been revoked: cap; output withheld"
    );
}

// A code serialises as its kebab-case word.
#[test]
fn codes_serialise_as_words() {
    let json = serde_json::to_string(&ReasonCode::ChainRevoked).unwrap();
    assert_eq!(json, "\"chain-revoked\"");
    let back: ReasonCode = serde_json::from_str(&json).unwrap();
    assert_eq!(back, ReasonCode::ChainRevoked);
    assert!(serde_json::from_str::<ReasonCode>("\"nope\"").is_err());
}
