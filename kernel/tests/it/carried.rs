//! What an admitted call carries to its tool server, and when admission
//! reads labels at all, on a kernel with a catalog and no guard that reads
//! labels: a tool that may keep what it is sent carries its caller's
//! labels; a read-only tool carries nothing and reads no label, unless an
//! argument was built from a handed-over value, whose record is read.

use crate::util;

use chio_kernel::contract::{ToolAnnotations, ToolCatalog, ToolContract};
use chio_kernel::kernel::{Admission, Kernel};
use chio_kernel::provenance::ArgumentSource;
use chio_kernel::stores::{InMemoryAuthority, KernelStores};
use chio_kernel::verdict::Verdict;
use serde_json::json;
use util::*;

fn catalog_kernel() -> Kernel {
    let contract = |name: &str, read_only_hint: bool| ToolContract {
        name: name.into(),
        description: name.into(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: ToolAnnotations {
            read_only_hint,
            ..ToolAnnotations::default()
        },
    };
    let mut catalog = ToolCatalog::new();
    catalog.insert(
        "files".into(),
        [("read_file", true), ("write_file", false)]
            .into_iter()
            .map(|(name, read_only)| (name.to_string(), contract(name, read_only)))
            .collect(),
    );
    let authority = InMemoryAuthority::default();
    authority.join_label("principal/alice", "integrity:untrusted");
    let mut config = kernel_config(vec![]);
    config.tools = Some(catalog);
    Kernel::new(config, KernelStores::new(authority)).expect("builds")
}

fn admitted(admission: Admission) -> Box<chio_kernel::kernel::AdmissionTicket> {
    match admission {
        Admission::Admitted(ticket) => ticket,
        Admission::Decided(d) => panic!("expected admission, got {:?}", d.reason),
    }
}

// A writing tool carries the caller's retained labels; a read-only one
// carries none and reads no label key.
#[test]
fn a_writer_carries_the_callers_labels_and_a_reader_reads_none() {
    let mut k = catalog_kernel();
    let cap = issue("cap-alice", "alice", files_scope());
    let write = request(
        "alice",
        &cap,
        "files",
        "write_file",
        json!({"path": "/workspace/a.txt", "content": "x"}),
        "w1",
    );
    let ticket = admitted(k.admit(&write, NOW_MS));
    assert_eq!(
        ticket.carried_labels().iter().collect::<Vec<_>>(),
        ["integrity:untrusted"]
    );
    let read = |id: &str| {
        let arguments = json!({"path": "/workspace/a.txt"});
        request("alice", &cap, "files", "read_file", arguments, id)
    };
    let ticket = admitted(k.admit(&read("r1"), NOW_MS));
    assert!(ticket.carried_labels().is_empty());
    let files = standard_files();
    let decision = k.evaluate(&read("r2"), NOW_MS, &mut dispatch(&files));
    assert_eq!(decision.verdict, Verdict::Allow, "{:?}", decision.reason);
    assert!(
        decision.trace.label_keys.is_empty(),
        "{:?}",
        decision.trace.label_keys
    );
}

// An argument of a read-only tool built from a hand-over record that was
// never written refuses the call: admission reads the record, it does not
// guess it empty.
#[test]
fn a_read_only_tools_unrecorded_argument_is_refused() {
    let mut k = catalog_kernel();
    let cap = issue("cap-alice", "alice", files_scope());
    let mut call = request(
        "alice",
        &cap,
        "files",
        "read_file",
        json!({"path": "/workspace/a.txt"}),
        "r1",
    );
    call.argument_sources = vec![ArgumentSource {
        pointer: "/path".to_string(),
        labels: Vec::new(),
        record: Some("handover/alice/never".to_string()),
        sender: None,
    }];
    let call = call.sign(&agent_key("alice")).expect("signs");
    let files = standard_files();
    let decision = k.evaluate(&call, NOW_MS, &mut dispatch(&files));
    assert_eq!(decision.verdict, Verdict::Deny);
    assert_eq!(
        decision.trace.reason_code.map(|c| c.as_str()),
        Some("argument-unrecorded")
    );
}
