//! Security check of what trust-control prints: with `RUST_LOG=trace` (every
//! log line of the service and of its HTTP/2 and gRPC libraries), the real
//! `chio trust serve` is started with its token from a file and from the
//! environment, answers every RPC with the right token, refuses wrong
//! tokens, refuses to start with a short token, and is stopped. Its captured
//! stdout and stderr, and the status messages the clients received, must
//! never contain the service token or any token a client presented.

use crate::trust_process;

use std::process::{Command, Stdio};

use chio_proto::trust::v1 as pb;
use chio_proto::trust::v1::trust_control_client::TrustControlClient;
use tonic::metadata::MetadataValue;
use tonic::Request;

use trust_process::{binary, run_to_exit, TrustProcess};

/// Distinct from the shared test token, so a hit can only come from here.
const SERVICE_TOKEN: &str = "svc-secret-token-Q7w9e1r3t5y7";
const WRONG_TOKEN: &str = "wrong-secret-token-Z2x4c6v8b0";
const SHORT_TOKEN: &str = "short-Secr3t";

fn authorized<T>(message: T, token: &str) -> Request<T> {
    let mut request = Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        MetadataValue::try_from(format!("Bearer {token}")).unwrap(),
    );
    request
}

/// Calls every RPC with `token`, collecting each status message returned.
async fn exercise(url: &str, token: &str) -> Vec<String> {
    let mut client = TrustControlClient::connect(url.to_owned()).await.unwrap();
    let key = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    let mut messages = Vec::new();
    let mut note = |result: Result<(), tonic::Status>| {
        if let Err(status) = result {
            messages.push(format!("{status:?}"));
        }
    };
    let t = token;
    note(
        client
            .add_issuer_key(authorized(
                pb::AddIssuerKeyRequest {
                    public_key_hex: key.into(),
                },
                t,
            ))
            .await
            .map(drop),
    );
    note(
        client
            .list_issuer_keys(authorized(pb::ListIssuerKeysRequest {}, t))
            .await
            .map(drop),
    );
    note(
        client
            .revoke(authorized(
                pb::RevokeRequest {
                    id: "cap-1".into(),
                    at_ms: 1,
                },
                t,
            ))
            .await
            .map(drop),
    );
    note(
        client
            .is_revoked(authorized(pb::IsRevokedRequest { id: "cap-1".into() }, t))
            .await
            .map(drop),
    );
    let hold = pb::HoldBudgetRequest {
        hold_id: "h".into(),
        budget_key: "k".into(),
        amount: 1,
        limit: 5,
    };
    note(client.hold_budget(authorized(hold, t)).await.map(drop));
    note(
        client
            .commit_budget(authorized(
                pb::CommitBudgetRequest {
                    hold_id: "h".into(),
                },
                t,
            ))
            .await
            .map(drop),
    );
    note(
        client
            .release_budget(authorized(
                pb::ReleaseBudgetRequest {
                    hold_id: "h".into(),
                },
                t,
            ))
            .await
            .map(drop),
    );
    let share = pb::AdmitShareRequest {
        parent_id: "p".into(),
        child_id: "c".into(),
        child_bps: 1,
        parent_bps: 2,
    };
    note(client.admit_share(authorized(share, t)).await.map(drop));
    let receipts = pb::AppendReceiptsRequest {
        receipts: vec![pb::Receipt {
            receipt_id: "r".into(),
            body: b"{}".to_vec(),
        }],
    };
    note(
        client
            .append_receipts(authorized(receipts, t))
            .await
            .map(drop),
    );
    note(
        client
            .list_receipts(authorized(pb::ListReceiptsRequest::default(), t))
            .await
            .map(drop),
    );
    note(
        client
            .count_receipts(authorized(pb::CountReceiptsRequest {}, t))
            .await
            .map(drop),
    );
    note(
        client
            .read_labels(authorized(
                pb::ReadLabelsRequest {
                    keys: vec!["s".into()],
                },
                t,
            ))
            .await
            .map(drop),
    );
    let join = pb::JoinLabelsRequest {
        keys: vec!["s".into()],
        label: "internal".into(),
    };
    note(client.join_labels(authorized(join, t)).await.map(drop));
    // A malformed request (invalid key) draws an error message too.
    note(
        client
            .add_issuer_key(authorized(
                pb::AddIssuerKeyRequest {
                    public_key_hex: "zz".into(),
                },
                t,
            ))
            .await
            .map(drop),
    );
    messages
}

fn assert_clean(label: &str, text: &str) {
    for secret in [SERVICE_TOKEN, WRONG_TOKEN, SHORT_TOKEN] {
        assert!(
            !text.contains(secret),
            "{label} contains a token ({} bytes of output)",
            text.len()
        );
    }
}

// Proves no trace-level log line, stdout line or status message of the service contains a token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_and_errors_never_contain_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("trust.db");
    let token_path = trust_process::token_file(dir.path(), SERVICE_TOKEN);
    let stdout_path = dir.path().join("stdout.log");

    // Token from a file, then from the environment; stdout is teed to a file.
    let sources: [(&str, bool); 2] = [("token file", true), ("environment", false)];
    for (label, from_file) in sources {
        let mut script = format!(
            "exec '{}' trust serve --db '{}' --listen 127.0.0.1:0 --print-addr",
            binary(),
            db.display()
        );
        if from_file {
            script.push_str(&format!(" --token-file '{}'", token_path.display()));
        }
        script.push_str(&format!(" > >(tee -a '{}')", stdout_path.display()));
        let mut command = Command::new("bash");
        command
            .args(["-c", &script])
            .env("RUST_LOG", "trace")
            .env_remove("CHIO_TRUST_TOKEN");
        if !from_file {
            command.env("CHIO_TRUST_TOKEN", SERVICE_TOKEN);
        }
        let mut process = TrustProcess::spawn(&mut command, dir.path());
        let mut messages = exercise(&process.url, SERVICE_TOKEN).await;
        messages.extend(exercise(&process.url, WRONG_TOKEN).await);
        assert!(
            messages.len() >= 14,
            "the wrong token must be refused on every RPC ({label})"
        );
        assert_eq!(process.terminate().code(), Some(0), "{label}");
        let stderr = process.stderr();
        assert!(
            stderr.contains("TRACE") && stderr.contains("DEBUG"),
            "trace logging was not on ({label})"
        );
        assert_clean(&format!("stderr ({label})"), &stderr);
        assert_clean(&format!("status messages ({label})"), &messages.join("\n"));
    }
    let stdout = std::fs::read_to_string(&stdout_path).unwrap();
    assert!(stdout.contains("listening on"), "stdout was not captured");
    assert_clean("stdout", &stdout);

    // A refused start prints the problem, never the short token.
    let mut short = Command::new(binary());
    short
        .args(["trust", "serve", "--db", db.to_str().unwrap()])
        .env("RUST_LOG", "trace")
        .env("CHIO_TRUST_TOKEN", SHORT_TOKEN)
        .stdout(Stdio::piped());
    let (_, output) = run_to_exit(short);
    assert_eq!(output.status.code(), Some(2));
    assert_clean(
        "stderr of a refused start",
        &String::from_utf8_lossy(&output.stderr),
    );
    assert_clean(
        "stdout of a refused start",
        &String::from_utf8_lossy(&output.stdout),
    );
}
