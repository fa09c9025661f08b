//! The campaign report checks every row against the evidence it names: a
//! row whose bundle is missing, whose bundle records another status,
//! receipt root or verdict counts, whose output folder changed, or whose
//! source revision the repository does not hold (or cannot be asked about)
//! is never a verified delivery, blocks its section's comparison, and is
//! named with the field that disagrees; a row its evidence bears out stays
//! verified. The bundles are written here with the bundle types, the
//! repositories with real `git` commands.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chio_arena::bundle::{
    Bundle, BundleManifest, BundleStatus, StepInputs, StepRecord, StopRecord, BUNDLE_SCHEMA,
};
use chio_arena::{ActionKind, DeterminismWitness};
use chio_campaign::evidence::{Redecide, Redecision};
use chio_campaign::ledger::{
    check_ledger, template, EvidenceRef, Ledger, LedgerRow, OracleCheck, RecordEvidence,
    RuntimeIdentity, Spent, EVOLVE_RECORD, RUN_RECORD,
};
use chio_campaign::portfolio::{portfolio_outcome, render_text, report};
use chio_campaign::{load_campaign, task_definition, Campaign, TaskKind};
use chio_experiment::definition::sha256_hex;
use chio_kernel::verdict::{ProjectedVerdict, Verdict};
use serde_json::Value;

use crate::git_repo;
use git_repo::{commit_all, INVENTED};

const LIMITS: &str =
    "{ wall_seconds = 120, steps = 20, kernel_evaluations = 20, generations = 10 }";
const CONTRADICTED: &str = "contradicted by its evidence";
const VERIFIED: &str = "verified delivery";

/// The allow receipt a kernel signs for `request`, as a run's bundle holds it.
fn signed_allow(request: &str) -> chio_kernel::receipt::SignedReceipt {
    let key = chio_kernel::keys::derive_arena_key(1, "kernel", "kernel-a");
    let body = chio_kernel::receipt::ReceiptBody {
        schema: "chio.receipt/v1".into(),
        timestamp_ms: 1_767_600_000_000,
        kernel_id: "kernel-a".into(),
        kernel_key: chio_kernel::keys::public_key_hex(&key),
        capability_id: "solo-files".into(),
        request_id: request.into(),
        agent_id: "solo".into(),
        session_id: "session-solo".into(),
        server: "workspace".into(),
        tool: "read_file".into(),
        parameter_hash: "0".repeat(64),
        decision: chio_kernel::receipt::ReceiptDecision {
            verdict: Verdict::Allow,
            reason: None,
            guard: None,
            sanitized: false,
        },
        observed: Vec::new(),
        output_hash: Some("1".repeat(64)),
    };
    chio_kernel::receipt::SignedReceipt::sign(body, &key).unwrap()
}

fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(rel)
}

/// A campaign of one live run of the walking skeleton and one evolution of
/// it, a run bundle and an evolution output folder, and a ledger whose rows
/// both agree with them.
struct Setup {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    campaign: Campaign,
    ledger: Ledger,
    bundle: PathBuf,
    folder: PathBuf,
    scenario_sha256: String,
    /// The scenario file the bundle holds among its inputs.
    scenario: Vec<u8>,
    /// What re-deciding the bundle gives: these bundles are written by
    /// hand, so the report's re-decision is answered here.
    stub: Stub,
}

/// Answers every re-decision with the same [`Redecision`], and counts them.
struct Stub(Redecision, std::cell::Cell<usize>);

impl Stub {
    fn new(answer: Redecision) -> Stub {
        Stub(answer, std::cell::Cell::new(0))
    }
}

impl Redecide for Stub {
    fn redecide(&self, _bundle: &Path, _scenario: &Path) -> Redecision {
        self.1.set(self.1.get() + 1);
        self.0.clone()
    }
}

impl Setup {
    /// `git` says whether the root is committed in a repository; the rows'
    /// source revision is its commit, or none.
    fn new(git_root: bool) -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let root = dir.join("root");
        for file in [
            "walking_skeleton.toml",
            "fixtures/walking-skeleton/notes.txt",
            "fixtures/walking-skeleton/.env",
            "prompts/walking-skeleton.txt",
        ] {
            let target = root.join(file);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::copy(repo_file(file), target).unwrap();
        }
        // The runs below are two granted reads: the scenario's second step
        // becomes `read-more`, a read of the notes expected to be allowed.
        let path = root.join("walking_skeleton.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let (head, tail) = text.split_at(text.find("id = \"read-dotenv\"").unwrap());
        let tail = tail
            .replacen("id = \"read-dotenv\"", "id = \"read-more\"", 1)
            .replacen("/workspace/.env", "/workspace/notes.txt", 1)
            .replacen("expect_verdict = \"deny\"", "expect_verdict = \"allow\"", 1);
        std::fs::write(&path, format!("{head}{tail}")).unwrap();
        let commit = git_root.then(|| commit_all(&root));
        let (_, definition) =
            task_definition(&root, TaskKind::Scenario, "walking_skeleton.toml").unwrap();
        let pin = format!(
            "{{ sha256 = \"{}\", files = {} }}",
            definition.sha256, definition.files
        );
        let decl = dir.join("campaign.toml");
        std::fs::write(
            &decl,
            format!(
                "schema_version = \"chio.arena.campaign/v2\"\nid = \"evidence\"\ntitle = \"evidence\"\nroot = \"root\"\n\n\
                 [[tasks]]\nid = \"ws\"\nkind = \"scenario\"\nfile = \"walking_skeleton.toml\"\nrepetitions = 1\nlimits = {LIMITS}\ndefinition = {pin}\n\n\
                 [[tasks]]\nid = \"evo\"\nkind = \"evolve\"\nfile = \"walking_skeleton.toml\"\nrepetitions = 1\nlimits = {LIMITS}\ndefinition = {pin}\n"
            ),
        )
        .unwrap();
        let campaign = load_campaign(&decl).unwrap();
        let scenario = std::fs::read(root.join("walking_skeleton.toml")).unwrap();
        let scenario_sha256 = sha256_hex(&scenario);
        let bundle = dir.join("bundle");
        let folder = dir.join("evolve-out");
        let mut setup = Setup {
            _tmp: tmp,
            dir,
            ledger: template(&campaign),
            campaign,
            bundle,
            folder,
            scenario_sha256,
            scenario,
            stub: Stub::new(Redecision::Same),
        };
        setup.write_bundle(|_| {});
        std::fs::create_dir_all(&setup.folder).unwrap();
        setup.write_trace(2, 2);
        let ws = setup.run_row(commit.clone());
        let evo = setup.evolve_row(commit);
        setup.ledger.rows = vec![ws, evo];
        check_ledger(&setup.campaign, &setup.ledger).unwrap();
        setup
    }

    /// Writes the evolution's trace, a search of the task's scenario with
    /// `completed` of `scheduled` generations, and the leaderboard it
    /// derives beside it.
    fn write_trace(&self, completed: u64, scheduled: u64) {
        let scenario =
            chio_arena::load_scenario(self.dir.join("root/walking_skeleton.toml")).unwrap();
        let trace = serde_json::json!({
            "schema_version": chio_adversary::TRACE_SCHEMA,
            "scenario_id": scenario.id(),
            "rng_seed": scenario.file().rng_seed,
            "scenario_sha256": scenario.text().sha256(),
            "config": {"generations": scheduled},
            "generations": (0..completed)
                .map(|g| serde_json::json!({"generation": g, "best_population": null, "samples": [], "populations": []}))
                .collect::<Vec<_>>(),
            "generations_completed": completed,
        });
        let bytes = serde_json::to_vec(&trace).unwrap();
        let parsed = chio_adversary::report::TraceFile::parse(&bytes, "evolve-trace.json").unwrap();
        let board =
            chio_adversary::Leaderboard::from_trace(&parsed.scenario_id, &parsed.generations);
        std::fs::write(self.folder.join("evolve-trace.json"), bytes).unwrap();
        std::fs::write(
            self.folder.join("leaderboard.json"),
            board.to_json().unwrap(),
        )
        .unwrap();
    }

    /// Writes the run's bundle: two granted reads, completed, with
    /// `edit` applied to the manifest first.
    fn write_bundle(&self, edit: impl FnOnce(&mut BundleManifest)) {
        let receipt_ids: Vec<String> = ["read-notes", "read-more"]
            .iter()
            .map(|request| signed_allow(request).id)
            .collect();
        let steps: Vec<StepRecord> = ["read-notes", "read-more"]
            .iter()
            .zip(&receipt_ids)
            .map(|(id, receipt)| {
                let mut step = StepRecord::new(
                    id,
                    ActionKind::Call,
                    "solo",
                    "2026-01-05T08:00:00.000Z".into(),
                    StepInputs::default(),
                );
                step.expected = Some(ProjectedVerdict::Allow.into());
                step.actual = Some(ProjectedVerdict::Allow.into());
                step.verdict = Some(Verdict::Allow);
                step.receipt_id = Some(receipt.to_string());
                step.pass = Some(true);
                step.kernel = Some("kernel-a".into());
                step.target = Some("workspace/read_file".into());
                step
            })
            .collect();
        let signed: Vec<chio_kernel::receipt::SignedReceipt> = ["read-notes", "read-more"]
            .iter()
            .map(|request| signed_allow(request))
            .collect();
        let ids: Vec<&str> = signed.iter().map(|r| r.id.as_str()).collect();
        let receipts: Vec<String> = signed
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        let mut manifest = BundleManifest {
            schema_version: BUNDLE_SCHEMA.to_string(),
            determinism: DeterminismWitness {
                agents: vec!["solo".into()],
                locale: "C".into(),
                rng_seed: 1,
                scenario_id: "walking_skeleton".into(),
                scheduler: "single-agent-v1".into(),
                schema_version: "chio.arena.scenario/v1".into(),
                steps: vec!["read-notes".into(), "read-more".into()],
                virtual_clock_start: "2026-01-05T08:00:00.000Z".into(),
            },
            scenario_title: "walking skeleton".into(),
            scenario_sha256: self.scenario_sha256.clone(),
            status: BundleStatus::Completed,
            stopped: None,
            mismatches: Vec::new(),
            receipt_root: chio_kernel::receipt::merkle_root_of_ids(&ids),
            receipt_count: 2,
            // The key its receipts are signed with, as a run records it.
            arena_keys: BTreeMap::from([(
                "kernel".to_string(),
                BTreeMap::from([(
                    "kernel-a".to_string(),
                    chio_kernel::keys::public_key_hex(&chio_kernel::keys::derive_arena_key(
                        1, "kernel", "kernel-a",
                    )),
                )]),
            )]),
            policies: BTreeMap::new(),
            sealed: BTreeMap::new(),
            steps,
        };
        edit(&mut manifest);
        let _ = std::fs::remove_dir_all(&self.bundle);
        Bundle {
            manifest,
            receipts,
            policies: BTreeMap::new(),
            inputs: self.inputs(),
        }
        .write(&self.bundle)
        .unwrap();
    }

    /// The bundle's inputs, as a run of the task writes them: the
    /// scenario file and its fixture folder.
    fn inputs(&self) -> BTreeMap<String, Vec<u8>> {
        let mut inputs = BTreeMap::from([("scenario.toml".to_string(), self.scenario.clone())]);
        for file in ["notes.txt", ".env"] {
            let rel = format!("fixtures/walking-skeleton/{file}");
            let bytes = std::fs::read(self.dir.join("root").join(&rel)).unwrap();
            inputs.insert(rel, bytes);
        }
        inputs
    }

    fn runtime() -> Option<RuntimeIdentity> {
        Some(RuntimeIdentity {
            chio_version: "0.1.0".into(),
            binary_sha256: "0".repeat(64),
            platform: "linux-x86_64".into(),
        })
    }

    /// The run's row, as an import of the bundle's run record fills it.
    fn run_row(&self, revision: Option<String>) -> LedgerRow {
        let mut row = self.ledger.rows[0].clone();
        let ids: Vec<String> = ["read-notes", "read-more"]
            .iter()
            .map(|request| signed_allow(request).id)
            .collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let root = chio_kernel::receipt::merkle_root_of_ids(&ids);
        row.native_outcome = "passed".into();
        row.reason = None;
        row.record = Some(RecordEvidence {
            schema_version: RUN_RECORD.into(),
            sha256: "a".repeat(64),
            subject: "walking_skeleton".into(),
            calls: Some(2),
            passed: Some(2),
            failed: Some(0),
            failing_steps: Some(Vec::new()),
            receipt_root: Some(root.clone()),
            ..RecordEvidence::default()
        });
        row.definition_sha256 = Some(self.campaign.tasks[0].definition.sha256.clone());
        row.source_revision = revision;
        row.runtime_identity = Self::runtime();
        row.oracle_checks = ["read-notes", "read-more"]
            .iter()
            .map(|id| OracleCheck {
                name: format!("{id} expects allow"),
                ok: true,
            })
            .collect();
        row.spent = Spent {
            steps: Some(2),
            kernel_evaluations: Some(2),
            generations: Some(0),
        };
        row.elapsed_seconds = Some(0.5);
        row.evidence_refs = vec![EvidenceRef {
            path: self.bundle.display().to_string(),
            merkle_root: Some(root),
        }];
        row
    }

    /// The evolution's row, its output folder's Merkle root computed here
    /// from the documented leaf and node rules.
    fn evolve_row(&self, revision: Option<String>) -> LedgerRow {
        let mut row = self.ledger.rows[1].clone();
        row.native_outcome = "generations".into();
        row.reason = None;
        row.record = Some(RecordEvidence {
            schema_version: EVOLVE_RECORD.into(),
            sha256: "b".repeat(64),
            subject: "walking_skeleton".into(),
            generations_scheduled: Some(2),
            generations_completed: Some(2),
            ..RecordEvidence::default()
        });
        row.definition_sha256 = Some(self.campaign.tasks[1].definition.sha256.clone());
        row.source_revision = revision;
        row.runtime_identity = Self::runtime();
        row.oracle_checks = vec![OracleCheck {
            name: "every scheduled generation ran".into(),
            ok: true,
        }];
        row.spent = Spent {
            steps: Some(0),
            kernel_evaluations: Some(4),
            generations: Some(2),
        };
        row.elapsed_seconds = Some(1.0);
        row.evidence_refs = vec![EvidenceRef {
            path: self.folder.display().to_string(),
            merkle_root: chio_campaign::evidence::folder_merkle_root(&self.folder),
        }];
        row
    }

    fn edit(&mut self, id: &str, edit: impl FnOnce(&mut LedgerRow)) {
        let row = self
            .ledger
            .rows
            .iter_mut()
            .find(|r| r.schedule_id == id)
            .unwrap();
        edit(row);
        check_ledger(&self.campaign, &self.ledger)
            .expect("the edited ledger passes every row check");
    }

    fn json(&self) -> Value {
        serde_json::to_value(report(&self.campaign, &self.ledger, &self.stub)).unwrap()
    }

    /// Asserts that `id` is contradicted on `field` in the outcome, the
    /// JSON, the blocked comparison and the text, and is no delivery.
    fn assert_contradicted(&self, id: &str, field: &str) {
        let row = self
            .ledger
            .rows
            .iter()
            .find(|r| r.schedule_id == id)
            .unwrap();
        assert_eq!(
            portfolio_outcome(&self.campaign, row, &self.stub),
            CONTRADICTED
        );
        self.assert_reported_contradicted(id, field);
    }

    /// The report's half of [`Setup::assert_contradicted`], for what only
    /// the whole ledger shows.
    fn assert_reported_contradicted(&self, id: &str, field: &str) {
        let json = self.json();
        let line = json["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["schedule_id"] == id)
            .unwrap();
        assert_eq!(line["outcome"], CONTRADICTED, "{line}");
        let fields: Vec<&str> = line["contradictions"]
            .as_array()
            .unwrap_or_else(|| panic!("no contradictions listed: {line}"))
            .iter()
            .map(|c| c["field"].as_str().unwrap())
            .collect();
        assert!(fields.contains(&field), "{field} not in {fields:?}");
        let live = &json["sections"][0];
        assert_eq!(live["comparison"], "blocked");
        let prefix = format!("{id} is contradicted by its evidence: {field}: ");
        assert!(
            live["blocked_because"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.as_str().unwrap().starts_with(&prefix)),
            "{}",
            live["blocked_because"]
        );
        let text = render_text(&report(&self.campaign, &self.ledger, &self.stub));
        assert!(
            text.contains(&format!("    contradicted: {field}: ")),
            "{text}"
        );
        assert!(text.contains(&prefix), "{text}");
    }
}

// Rows their bundle and folder bear out, with a revision the repository holds, stay verified deliveries and leave the comparison complete.
#[test]
fn rows_their_evidence_bears_out_stay_verified() {
    let s = Setup::new(true);
    let json = s.json();
    for line in json["attempts"].as_array().unwrap() {
        assert_eq!(line["outcome"], VERIFIED, "{line}");
        assert_eq!(line["contradictions"], Value::Array(Vec::new()), "{line}");
    }
    assert_eq!(json["sections"][0]["comparison"], "complete");
}

// A bundle that agrees with itself is not taken on its word: the report re-decides every run's bundle (and only scenario bundles: the evolution's folder is not), and a drift contradicts the row at the evidence path, once per difference, naming the step and the field; the comparison is blocked.
#[test]
fn a_bundle_that_drifts_when_re_decided_is_contradicted() {
    let mut s = Setup::new(true);
    s.json();
    assert_eq!(
        s.stub.1.get(),
        1,
        "the run's bundle is re-decided, the evolution's folder is not"
    );
    s.stub = Stub::new(Redecision::Drifted(vec![
        "step read-more (#1): verdict differs (allow in the bundle, deny when re-decided)".into(),
        "arena.json steps[1].actual, receipts.ndjson line 2 are not what re-deciding it writes"
            .into(),
    ]));
    s.assert_reported_contradicted("ws/01", "evidence_refs[0].path");
    let json = s.json();
    let reasons: Vec<&str> = json["attempts"][0]["contradictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[0].starts_with(
            "re-decided from its inputs (as `chio arena replay` re-decides it), the bundle drifts: step read-more (#1): verdict differs (allow in the bundle, deny when re-decided)"
        ),
        "{reasons:?}"
    );
    assert!(
        reasons[1].contains("arena.json steps[1].actual"),
        "{reasons:?}"
    );
    assert_eq!(
        json["attempts"][1]["outcome"], VERIFIED,
        "the evolution is not a bundle"
    );
}

// A bundle that cannot be re-decided here (its run read sealed files that are not at hand) keeps a pass from being a verified delivery: a pass without complete evidence, saying why; it contradicts nothing, and a stop stays a stop.
#[test]
fn a_bundle_that_cannot_be_re_decided_is_no_verified_delivery() {
    let mut s = Setup::new(true);
    s.stub = Stub::new(Redecision::Undecidable(
        "CHIO-CLI-SEALED-FROM: the run read 2 sealed file(s), which a bundle records only as digests"
            .into(),
    ));
    let json = s.json();
    let line = &json["attempts"][0];
    assert_eq!(line["outcome"], "pass without complete evidence", "{line}");
    assert_eq!(line["contradictions"], Value::Array(Vec::new()), "{line}");
    let gaps = line["evidence_gaps"].as_array().unwrap();
    assert!(
        gaps.iter().any(|g| {
            let g = g.as_str().unwrap();
            g.contains(
                "cannot be re-decided here: CHIO-CLI-SEALED-FROM: the run read 2 sealed file(s)",
            )
        }),
        "{gaps:?}"
    );
    let text = render_text(&report(&s.campaign, &s.ledger, &s.stub));
    assert!(
        text.contains("    evidence incomplete: its bundle ")
            && text.contains("cannot be re-decided here"),
        "{text}"
    );
    assert_eq!(json["attempts"][1]["outcome"], VERIFIED, "{json}");
}

// A stopped run's row edited into a pass, with counts and checks made consistent, is contradicted by the bundle's status.
#[test]
fn an_edited_status_is_contradicted() {
    let mut s = Setup::new(true);
    s.write_bundle(|m| {
        m.status = BundleStatus::Stopped;
        m.stopped = Some(StopRecord {
            step_id: "read-more".into(),
            cause: "unexpected-verdict".into(),
            message: "the kernel denied the read".into(),
        });
    });
    s.edit("ws/01", |_| {});
    s.assert_contradicted("ws/01", "native_outcome");
    s.assert_contradicted("ws/01", "record.stopped_at");
}

// A row whose evidence root and record root were both rewritten to another value is contradicted by the bundle's receipt root.
#[test]
fn an_edited_receipt_root_is_contradicted() {
    let mut s = Setup::new(true);
    let other = "c".repeat(64);
    s.edit("ws/01", |row| {
        row.evidence_refs[0].merkle_root = Some(other.clone());
        row.record.as_mut().unwrap().receipt_root = Some(other.clone());
    });
    s.assert_contradicted("ws/01", "evidence_refs[0].merkle_root");
    s.assert_contradicted("ws/01", "record.receipt_root");
}

// A receipt whose verdict was edited (its id and signature no longer its body's), and an allowed step that names no receipt, are each contradicted: the verdict a bundle claims is the one its kernel signed.
#[test]
fn an_edited_or_missing_receipt_is_contradicted() {
    let mut setup = Setup::new(true);
    setup.write_bundle(|_| {});
    let path = setup.bundle.join("receipts.ndjson");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replacen("\"verdict\":\"allow\"", "\"verdict\":\"deny\"", 1),
    )
    .unwrap();
    let row = setup.run_row(None);
    setup.ledger.rows[0] = row;
    let found = chio_campaign::evidence::check_row_evidence(
        &setup.campaign,
        &setup.ledger.rows[0],
        &setup.stub,
    )
    .contradictions;
    assert!(
        found.iter().any(|c| c.reason.contains("does not verify")),
        "{found:?}"
    );
    setup.write_bundle(|m| m.steps[0].receipt_id = None);
    let found = chio_campaign::evidence::check_row_evidence(
        &setup.campaign,
        &setup.ledger.rows[0],
        &setup.stub,
    )
    .contradictions;
    assert!(
        found.iter().any(|c| c.reason.contains("names no receipt")),
        "{found:?}"
    );
}

// A bundle whose manifest root was rewritten to match an edited row no longer matches its own receipts.
#[test]
fn a_bundle_whose_receipts_do_not_hash_to_its_root_is_contradicted() {
    let mut s = Setup::new(true);
    let other = "c".repeat(64);
    s.write_bundle(|m| m.receipt_root = other.clone());
    s.edit("ws/01", |row| {
        row.evidence_refs[0].merkle_root = Some(other.clone());
        row.record.as_mut().unwrap().receipt_root = Some(other.clone());
    });
    s.assert_contradicted("ws/01", "evidence_refs[0].path");
}

// Verdict counts edited consistently (more calls, all passed) are contradicted by the bundle's steps.
#[test]
fn edited_verdict_counts_are_contradicted() {
    let mut s = Setup::new(true);
    s.edit("ws/01", |row| {
        let record = row.record.as_mut().unwrap();
        record.calls = Some(3);
        record.passed = Some(3);
    });
    s.assert_contradicted("ws/01", "record.calls");
    s.assert_contradicted("ws/01", "record.passed");
}

// A failing step whose row was rewritten to a pass with every check held is contradicted by the bundle's verdicts.
#[test]
fn an_edited_failing_step_is_contradicted() {
    let mut s = Setup::new(true);
    s.write_bundle(|m| {
        m.steps[1].actual = Some(ProjectedVerdict::Deny.into());
        m.steps[1].pass = Some(false);
        m.mismatches = vec!["read-more".into()];
    });
    s.edit("ws/01", |_| {});
    s.assert_contradicted("ws/01", "native_outcome");
    s.assert_contradicted("ws/01", "record.failing_steps");
    s.assert_contradicted("ws/01", "oracle_checks[1]");
}

// A manifest edited after its run contradicts what the bundle itself holds: an expectation its scenario file does not state, a verdict its signed receipt does not record, or the digest of a scenario file it does not hold (another scenario's bundle with the task's digest written in).
#[test]
fn a_manifest_its_own_inputs_and_receipts_contradict_is_contradicted() {
    let mut s = Setup::new(true);
    s.write_bundle(|m| {
        m.steps[0].expected = Some(ProjectedVerdict::Deny.into());
        m.steps[0].actual = Some(ProjectedVerdict::Deny.into());
    });
    s.edit("ws/01", |_| {});
    s.assert_contradicted("ws/01", "evidence_refs[0].path");
    let json = s.json().to_string();
    assert!(
        json.contains("step read-notes expects deny, its scenario file allow"),
        "{json}"
    );

    let mut s = Setup::new(true);
    s.write_bundle(|m| m.steps[1].verdict = Some(Verdict::Deny));
    s.edit("ws/01", |_| {});
    s.assert_contradicted("ws/01", "evidence_refs[0].path");
    assert!(s
        .json()
        .to_string()
        .contains("step read-more was decided deny, its signed receipt allow"));

    let mut s = Setup::new(true);
    s.scenario = b"id = \"another\"\n".to_vec();
    s.write_bundle(|_| {});
    s.edit("ws/01", |_| {});
    s.assert_contradicted("ws/01", "evidence_refs[0].path");
    assert!(s
        .json()
        .to_string()
        .contains("but the scenario file it holds hashes to"));
}

// An evolution that stopped at its wall budget, rewritten as having completed every generation with the folder's root recomputed, is contradicted by the trace in its folder.
#[test]
fn an_evolution_its_trace_contradicts_is_contradicted() {
    let mut s = Setup::new(true);
    s.write_trace(1, 2);
    let root = chio_campaign::evidence::folder_merkle_root(&s.folder);
    s.edit("evo/01", |row| row.evidence_refs[0].merkle_root = root);
    s.assert_contradicted("evo/01", "native_outcome");
    s.assert_contradicted("evo/01", "record.generations_completed");
    s.assert_contradicted("evo/01", "spent.generations");
}

// An evolution's folder holding a search of another scenario id, of an edited scenario file that kept the id and the seed, or of its scenario under another seed (the leaderboard derived again), or a leaderboard its trace does not derive, each with the folder's root recomputed, is contradicted at the evidence path, naming what differs.
#[test]
fn an_evolution_of_another_search_is_contradicted() {
    let cases: [(&str, &str, Value, bool); 4] = [
        (
            "scenario_sha256",
            "searched a scenario file whose SHA-256 is cdcd",
            "cd".repeat(32).into(),
            true,
        ),
        (
            "scenario_id",
            "is a search of scenario \"another\"",
            "another".into(),
            true,
        ),
        ("rng_seed", "searched with seed 99", 99.into(), true),
        ("generation", "it ranks generation 7", 7.into(), false),
    ];
    for (key, said, value, in_trace) in cases {
        let mut s = Setup::new(true);
        let file = if in_trace {
            "evolve-trace.json"
        } else {
            "leaderboard.json"
        };
        let path = s.folder.join(file);
        let mut doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        doc[key] = value;
        std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
        if in_trace {
            let bytes = std::fs::read(&path).unwrap();
            let trace = chio_adversary::report::TraceFile::parse(&bytes, file).unwrap();
            let board =
                chio_adversary::Leaderboard::from_trace(&trace.scenario_id, &trace.generations);
            std::fs::write(s.folder.join("leaderboard.json"), board.to_json().unwrap()).unwrap();
        }
        let root = chio_campaign::evidence::folder_merkle_root(&s.folder);
        s.edit("evo/01", |row| row.evidence_refs[0].merkle_root = root);
        s.assert_contradicted("evo/01", "evidence_refs[0].path");
        let text = render_text(&report(&s.campaign, &s.ledger, &s.stub));
        assert!(text.contains(said), "{key}: {text}");
    }
}

// A row whose bundle is gone is contradicted at its evidence path.
#[test]
fn a_missing_bundle_is_contradicted() {
    let s = Setup::new(true);
    std::fs::remove_dir_all(&s.bundle).unwrap();
    s.assert_contradicted("ws/01", "evidence_refs[0].path");
}

// A run row whose evidence reference was deleted is contradicted: a run record always names its bundle.
#[test]
fn a_run_row_without_its_bundle_reference_is_contradicted() {
    let mut s = Setup::new(true);
    s.edit("ws/01", |row| row.evidence_refs.clear());
    s.assert_contradicted("ws/01", "evidence_refs");
}

// A bundle of another scenario file put where the row's evidence points is contradicted.
#[test]
fn a_bundle_of_another_scenario_is_contradicted() {
    let s = Setup::new(true);
    s.write_bundle(|m| m.scenario_sha256 = "d".repeat(64));
    s.assert_contradicted("ws/01", "evidence_refs[0].path");
}

// An evolution's output folder changed after its root was recorded is contradicted at the reference's Merkle root.
#[test]
fn a_changed_output_folder_is_contradicted() {
    let s = Setup::new(true);
    std::fs::write(s.folder.join("leaderboard.json"), b"{\"escapes\":[1]}\n").unwrap();
    s.assert_contradicted("evo/01", "evidence_refs[0].merkle_root");
}

// Two live rows naming one evidence folder are both contradicted: the folder can hold one attempt's evidence only.
#[test]
fn one_folder_backing_two_attempts_is_contradicted() {
    let mut s = Setup::new(true);
    let path = s.dir.join("bundle").display().to_string();
    s.edit("evo/01", |row| {
        row.evidence_refs.push(EvidenceRef {
            path: path.clone(),
            merkle_root: None,
        });
    });
    s.assert_reported_contradicted("evo/01", "evidence_refs[1].path");
    s.assert_reported_contradicted("ws/01", "evidence_refs[0].path");
    let text = render_text(&report(&s.campaign, &s.ledger, &s.stub));
    assert!(text.contains("is also the evidence of ws/01"), "{text}");
}

// A well-formed revision the real repository does not hold is contradicted, for every kind of row.
#[test]
fn an_invented_revision_in_a_repository_is_contradicted() {
    let mut s = Setup::new(true);
    for id in ["ws/01", "evo/01"] {
        s.edit(id, |row| row.source_revision = Some(INVENTED.into()));
        s.assert_contradicted(id, "source_revision");
    }
    let text = render_text(&report(&s.campaign, &s.ledger, &s.stub));
    assert!(
        text.contains(&format!(
            "{INVENTED} is not a commit the repository at the campaign root holds"
        )),
        "{text}"
    );
}

// A revision name that resolves (a branch, an abbreviation) is not a commit id and is contradicted.
#[test]
fn a_revision_that_is_not_a_full_commit_id_is_contradicted() {
    let mut s = Setup::new(true);
    s.edit("ws/01", |row| row.source_revision = Some("HEAD".into()));
    s.assert_contradicted("ws/01", "source_revision");
}

// A revision claimed for a root that is not a Git checkout cannot be checked, and is contradicted with that reason.
#[test]
fn a_revision_claimed_outside_a_repository_is_contradicted() {
    let mut s = Setup::new(false);
    s.edit("ws/01", |row| row.source_revision = Some(INVENTED.into()));
    s.assert_contradicted("ws/01", "source_revision");
    let text = render_text(&report(&s.campaign, &s.ledger, &s.stub));
    assert!(
        text.contains(&format!(
            "{INVENTED} cannot be checked: the campaign root is not in a Git checkout"
        )),
        "{text}"
    );
    // Without a claimed revision the row is an incomplete pass, not a contradiction.
    s.edit("ws/01", |row| row.source_revision = None);
    let row = &s.ledger.rows[0];
    assert_eq!(
        portfolio_outcome(&s.campaign, row, &s.stub),
        "pass without complete evidence"
    );
}

// A commit the repository holds but that does not hold the task's pinned files (an older one, one with other fixture bytes, one without the scenario) cannot be the tree that ran: the row is contradicted at source_revision, naming the file.
#[test]
fn a_revision_without_the_pinned_files_is_contradicted() {
    let mut s = Setup::new(true);
    let root = s.dir.join("root");
    let notes = root.join("fixtures/walking-skeleton/notes.txt");
    let honest = std::fs::read(&notes).unwrap();
    std::fs::write(&notes, b"another world\n").unwrap();
    let other_fixture = commit_all(&root);
    std::fs::write(&notes, &honest).unwrap();
    std::fs::rename(root.join("walking_skeleton.toml"), root.join("moved.toml")).unwrap();
    let no_scenario = commit_all(&root);
    std::fs::rename(root.join("moved.toml"), root.join("walking_skeleton.toml")).unwrap();
    let restored = commit_all(&root);
    for (id, commit, said) in [
        (
            "ws/01",
            &other_fixture,
            "holds fixtures/walking-skeleton/notes.txt with SHA-256",
        ),
        ("evo/01", &no_scenario, "holds no walking_skeleton.toml"),
    ] {
        s.edit(id, |row| row.source_revision = Some(commit.clone()));
        s.assert_contradicted(id, "source_revision");
        let text = render_text(&report(&s.campaign, &s.ledger, &s.stub));
        assert!(
            text.contains(&format!("{commit} cannot be the tree that ran task"))
                && text.contains(said),
            "{text}"
        );
    }
    // The commit that holds the pinned files again bears the rows out.
    for id in ["ws/01", "evo/01"] {
        s.edit(id, |row| row.source_revision = Some(restored.clone()));
    }
    for line in s.json()["attempts"].as_array().unwrap() {
        assert_eq!(line["outcome"], VERIFIED, "{line}");
    }
}

// A bundle whose fixture inputs are not the pinned ones (other bytes, a file added, a file left out) ran another world, even with the task's scenario file byte for byte: contradicted at the evidence path, naming the file.
#[test]
fn a_bundle_of_another_world_is_contradicted() {
    let s = Setup::new(true);
    let bundle_file = |rel: &str| s.bundle.join("inputs").join(rel);
    std::fs::write(
        bundle_file("fixtures/walking-skeleton/notes.txt"),
        b"edited\n",
    )
    .unwrap();
    s.assert_contradicted("ws/01", "evidence_refs[0].path");
    let text = render_text(&report(&s.campaign, &s.ledger, &s.stub));
    assert!(
        text.contains("the bundle ran inputs/fixtures/walking-skeleton/notes.txt with SHA-256"),
        "{text}"
    );
    s.write_bundle(|_| {});
    std::fs::write(bundle_file("fixtures/walking-skeleton/extra.txt"), b"x\n").unwrap();
    s.assert_contradicted("ws/01", "evidence_refs[0].path");
    s.write_bundle(|_| {});
    std::fs::remove_file(bundle_file("fixtures/walking-skeleton/.env")).unwrap();
    s.assert_contradicted("ws/01", "evidence_refs[0].path");
    let text = render_text(&report(&s.campaign, &s.ledger, &s.stub));
    assert!(
        text.contains("the bundle holds no inputs/fixtures/walking-skeleton/.env"),
        "{text}"
    );
}

// A recording of MCP servers' answers is a file of the world the bundle ran, wherever the bundle keeps it: beside its inputs (`recording/`, as `chio arena record --out` writes it) or among them (`inputs/recording/`, as a `--replay-from` run keeps it). The definition pins none, so the same recording is named, as a file the definition does not pin, in either layout; two different copies, one in each place, are refused naming both, and the bundle without a recording is verified again.
#[test]
fn a_recording_beside_or_among_the_inputs_is_held_to_the_world_alike() {
    let s = Setup::new(true);
    let recording = br#"{"calls":[]}"#;
    let named = "the bundle ran inputs/recording/git.json, a fixture file the task's definition does not pin";
    for folder in ["recording", "inputs/recording"] {
        s.write_bundle(|_| {});
        std::fs::create_dir_all(s.bundle.join(folder)).unwrap();
        std::fs::write(s.bundle.join(folder).join("git.json"), recording).unwrap();
        s.assert_contradicted("ws/01", "evidence_refs[0].path");
        let text = render_text(&report(&s.campaign, &s.ledger, &s.stub));
        assert!(text.contains(named), "{folder}: {text}");
    }
    // Both layouts at once, with other bytes: two copies of one recording,
    // so the bundle's world cannot be read, naming both.
    std::fs::create_dir_all(s.bundle.join("recording")).unwrap();
    std::fs::write(s.bundle.join("recording/git.json"), b"other").unwrap();
    s.assert_contradicted("ws/01", "evidence_refs[0].path");
    let text = render_text(&report(&s.campaign, &s.ledger, &s.stub));
    assert!(
        text.contains("recording/git.json are two different copies of one recording"),
        "{text}"
    );
    // A bundle that holds no recording is the task's world again.
    s.write_bundle(|_| {});
    for line in s.json()["attempts"].as_array().unwrap() {
        assert_eq!(line["outcome"], VERIFIED, "{line}");
    }
}
