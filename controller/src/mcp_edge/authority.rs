//! The edge's authority file: the issuer key that signs the capabilities
//! `chio mcp grant` issues and the key the edge's kernel signs receipts
//! with.
//!
//! The file is one JSON object, created with mode 0600 and never
//! overwritten:
//!
//! ```json
//! {"schema":"chio.mcp-authority/v1","issuer_secret_hex":"<64 hex>","receipt_secret_hex":"<64 hex>"}
//! ```
//!
//! Each secret is an Ed25519 secret key (32 bytes, lowercase hex) drawn from
//! the operating system's randomness when the file is made; a key is
//! operator material, not a run's output. Reading refuses a file that any
//! other user may read or write, a different schema or a key that is not
//! 64 lowercase hex characters, naming the field and never its value.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use chio_kernel::keys::{decode_lower_hex, public_key_hex};
use ed25519_dalek::SigningKey;
use rand_core::{OsRng, RngCore};
use serde::{Deserialize, Serialize};

use crate::error::{codes, CliError};

/// Schema id of the authority file.
pub const AUTHORITY_SCHEMA: &str = "chio.mcp-authority/v1";

const COMMAND: &str = "mcp authority";

/// The file as written.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthorityFile {
    schema: String,
    issuer_secret_hex: String,
    receipt_secret_hex: String,
}

/// The keys an authority file holds.
pub struct Authority {
    /// Signs capabilities; the edge's kernel trusts its public key.
    pub issuer: SigningKey,
    /// Signs the edge kernel's receipts.
    pub receipts: SigningKey,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("issuer", &public_key_hex(&self.issuer))
            .field("receipts", &public_key_hex(&self.receipts))
            .finish()
    }
}

fn authority_error(command: &'static str, message: String, help: &str) -> CliError {
    CliError::new(codes::MCP_AUTHORITY, command, message, help)
}

fn fresh_key() -> SigningKey {
    let mut secret = [0u8; 32];
    OsRng.fill_bytes(&mut secret);
    SigningKey::from_bytes(&secret)
}

/// `chio mcp authority new FILE`: writes a new authority file (mode 0600,
/// refusing an existing file) and prints its two public keys.
pub fn run_new(path: &Path, out: &mut dyn Write) -> Result<(), CliError> {
    let authority = Authority {
        issuer: fresh_key(),
        receipts: fresh_key(),
    };
    let file = AuthorityFile {
        schema: AUTHORITY_SCHEMA.to_string(),
        issuer_secret_hex: hex::encode(authority.issuer.to_bytes()),
        receipt_secret_hex: hex::encode(authority.receipts.to_bytes()),
    };
    let text = serde_json::to_string(&file).map_err(|e| {
        CliError::infrastructure(COMMAND, format!("cannot write the authority as JSON: {e}"))
    })?;
    let mut handle = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            authority_error(
                COMMAND,
                format!("cannot create {}: {}", path.display(), e.kind()),
                "name a new file in a folder you may write; an existing authority is never overwritten",
            )
        })?;
    handle
        .write_all(text.as_bytes())
        .and_then(|()| handle.write_all(b"\n"))
        .and_then(|()| handle.sync_all())
        .map_err(|e| {
            CliError::infrastructure(
                COMMAND,
                format!("cannot write {}: {}", path.display(), e.kind()),
            )
        })?;
    writeln!(out, "issuer {}", public_key_hex(&authority.issuer))
        .and_then(|()| writeln!(out, "receipts {}", public_key_hex(&authority.receipts)))
        .map_err(|e| CliError::output(COMMAND, &e))
}

/// The most bytes an authority file may hold (64 KiB; one holds two keys).
const MAX_AUTHORITY_BYTES: u64 = 64 << 10;

/// Reads an authority file for `command`.
pub fn read(path: &Path, command: &'static str) -> Result<Authority, CliError> {
    let unreadable = |what: String| {
        authority_error(
            command,
            format!("authority file {}: {what}", path.display()),
            "pass the file `chio mcp authority new` wrote, readable by its owner only",
        )
    };
    let meta = std::fs::metadata(path).map_err(|e| unreadable(format!("{}", e.kind())))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(unreadable(
            "other users may read or write it; chmod 600 it".to_string(),
        ));
    }
    let bytes = chio_arena::files::read_named(path, MAX_AUTHORITY_BYTES)
        .map_err(|e| unreadable(e.describe("an authority file")))?;
    let text = String::from_utf8(bytes).map_err(|_| unreadable("not UTF-8 text".to_string()))?;
    let file: AuthorityFile = serde_json::from_str(&text)
        .map_err(|_| unreadable("not the authority JSON object".to_string()))?;
    if file.schema != AUTHORITY_SCHEMA {
        return Err(unreadable(format!("schema is not {AUTHORITY_SCHEMA}")));
    }
    let key = |field: &str, hex_text: &str| -> Result<SigningKey, CliError> {
        let bytes: [u8; 32] = decode_lower_hex(hex_text)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| unreadable(format!("{field} is not 64 lowercase hex characters")))?;
        Ok(SigningKey::from_bytes(&bytes))
    };
    Ok(Authority {
        issuer: key("issuer_secret_hex", &file.issuer_secret_hex)?,
        receipts: key("receipt_secret_hex", &file.receipt_secret_hex)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // A new authority reads back with the same keys, is mode 0600, and is never overwritten.
    #[test]
    fn new_authority_reads_back_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("edge.key");
        let mut out = Vec::new();
        run_new(&path, &mut out).unwrap();
        let printed = String::from_utf8(out).unwrap();
        let authority = read(&path, COMMAND).unwrap();
        assert!(printed.contains(&public_key_hex(&authority.issuer)));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!printed.contains(&text[text.find("secret_hex\":\"").unwrap() + 13..][..64]));
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let again = run_new(&path, &mut Vec::new()).unwrap_err();
        assert_eq!(again.code, codes::MCP_AUTHORITY.code);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            read(&path, COMMAND).unwrap_err().code,
            codes::MCP_AUTHORITY.code
        );
    }
}
