//! The bearer token that guards every trust-control RPC: its validation at
//! start-up, its constant-time check on the server, and the header the
//! client sends.
//!
//! The token never appears in `Debug` output, logs or error messages. The
//! check compares SHA-256 digests with `subtle`, so neither the content nor
//! the length of the expected token leaks through timing.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::{Request, Status};

use crate::TrustError;

/// Shortest token accepted; shorter ones are guessable.
pub const MIN_TOKEN_CHARS: usize = 16;

/// A validated shared secret: at least [`MIN_TOKEN_CHARS`] visible ASCII
/// characters, so it fits an HTTP header unchanged.
#[derive(Clone)]
pub struct BearerToken {
    secret: String,
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl BearerToken {
    /// Validates a token; an absent or empty one is [`TrustError::MissingToken`].
    pub fn new(secret: impl Into<String>) -> Result<Self, TrustError> {
        let secret = secret.into();
        if secret.is_empty() {
            return Err(TrustError::MissingToken);
        }
        if !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(TrustError::WeakToken {
                problem: "it contains whitespace, control or non-ASCII characters".to_owned(),
                fix: "use printable ASCII only, for example 32 random hex digits",
            });
        }
        let chars = secret.len();
        if chars < MIN_TOKEN_CHARS {
            return Err(TrustError::WeakToken {
                problem: format!("it is {chars} characters long, the minimum is {MIN_TOKEN_CHARS}"),
                fix: "use at least 16 characters, for example 32 random hex digits",
            });
        }
        Ok(BearerToken { secret })
    }

    /// Reads a token from file contents, ignoring surrounding whitespace (a
    /// trailing newline is what editors and `echo` leave).
    pub fn from_file_contents(contents: &str) -> Result<Self, TrustError> {
        BearerToken::new(contents.trim())
    }

    /// Reads a token from the file at `path`. A file that cannot be read is
    /// refused without naming the path: an operator who passes the token
    /// itself where its file is wanted would otherwise see it printed.
    pub fn from_file(path: &std::path::Path) -> Result<Self, TrustError> {
        let contents = read_token_file(path)?;
        BearerToken::from_file_contents(&contents)
    }

    /// SHA-256 of the secret: what a server keeps to check presented tokens
    /// with [`bearer_header_matches`].
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(self.secret.as_bytes()).into()
    }

    /// The `authorization` header value a client sends.
    pub fn header_value(&self) -> MetadataValue<Ascii> {
        // Validated as visible ASCII in `new`, so the header always parses.
        MetadataValue::try_from(format!("Bearer {}", self.secret))
            .unwrap_or_else(|_| unreachable!("a validated token is a valid header value"))
    }

    /// The server-side checker for this token; `refusal` is the message a
    /// refused call gets (it must not echo what was sent).
    pub fn checker(&self, refusal: &'static str) -> BearerCheck {
        BearerCheck {
            expected: self.digest(),
            refusal,
        }
    }

    /// The client-side interceptor that sends this token.
    pub fn header(&self) -> BearerHeader {
        BearerHeader {
            value: self.header_value(),
        }
    }
}

/// What trust-control answers a call without its token.
pub const TRUST_REFUSAL: &str =
    "trust-control requires authorization: Bearer <token>; the token was missing or wrong";

/// A server's interceptor: refuses any request whose `authorization`
/// header is missing or is not `Bearer <the token>`, with the service's own
/// refusal message. Trust-control and the node cluster token both use it.
#[derive(Clone)]
pub struct BearerCheck {
    expected: [u8; 32],
    refusal: &'static str,
}

impl std::fmt::Debug for BearerCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerCheck(<redacted>)")
    }
}

impl BearerCheck {
    /// Whether `header` (the `authorization` value, if any) carries the token.
    pub fn admits(&self, header: Option<&[u8]>) -> bool {
        bearer_header_matches(&self.expected, header)
    }
}

impl tonic::service::Interceptor for BearerCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let header = request
            .metadata()
            .get("authorization")
            .map(|value| value.as_bytes());
        if self.admits(header) {
            Ok(request)
        } else {
            // Never echo what was sent.
            Err(Status::unauthenticated(self.refusal))
        }
    }
}

/// Whether an `authorization` header value is `Bearer <secret>` for the
/// secret whose SHA-256 is `expected`. The presented secret is hashed
/// first and the fixed-size digests compared in constant time, so neither
/// the content nor the length of the secret leaks through timing. Every
/// service that checks a bearer token (trust-control, the node cluster
/// token) uses this one comparison.
pub fn bearer_header_matches(expected: &[u8; 32], header: Option<&[u8]>) -> bool {
    let presented = header
        .and_then(|value| value.strip_prefix(b"Bearer "))
        .unwrap_or(b"");
    let digest: [u8; 32] = Sha256::digest(presented).into();
    let equal: bool = digest.ct_eq(expected).into();
    equal && header.is_some()
}

/// The client's interceptor: adds the bearer header to every request.
#[derive(Clone)]
pub struct BearerHeader {
    value: MetadataValue<Ascii>,
}

impl std::fmt::Debug for BearerHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerHeader(<redacted>)")
    }
}

impl tonic::service::Interceptor for BearerHeader {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        request
            .metadata_mut()
            .insert("authorization", self.value.clone());
        Ok(request)
    }
}

/// The text of a token file; the error names what went wrong and never the
/// path given, which may be the token itself passed by mistake.
pub fn read_token_file(path: &std::path::Path) -> Result<String, TrustError> {
    use std::io::Read;
    let unusable = |detail: String| {
        TrustError::UnusableFile {
        what: "the token file given".to_owned(),
        detail,
        fix: "pass the path of a readable regular file of at most 4 KiB that holds the token (never the token itself)",
    }
    };
    // A FIFO, a device or a folder would block, never end, or not read:
    // refused before it is opened.
    let meta = std::fs::metadata(path).map_err(|e| unusable(e.kind().to_string()))?;
    if !meta.is_file() {
        return Err(unusable("it is not a regular file".to_owned()));
    }
    let too_long = || unusable(format!("it is longer than {MAX_TOKEN_FILE_BYTES} bytes"));
    if meta.len() > MAX_TOKEN_FILE_BYTES {
        return Err(too_long());
    }
    let file = std::fs::File::open(path).map_err(|e| unusable(e.kind().to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unusable(e.kind().to_string()))?;
    if bytes.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(too_long());
    }
    String::from_utf8(bytes).map_err(|_| unusable("it is not UTF-8 text".to_owned()))
}

/// The longest token file read; no token needs more.
pub const MAX_TOKEN_FILE_BYTES: u64 = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef-token";

    // Proves empty, short and non-printable tokens are refused without echoing them.
    #[test]
    fn weak_tokens_are_refused_without_echo() {
        assert_eq!(BearerToken::new("").unwrap_err(), TrustError::MissingToken);
        assert_eq!(
            BearerToken::from_file_contents("  \n").unwrap_err(),
            TrustError::MissingToken
        );
        let short = BearerToken::new("sesame-open").unwrap_err();
        assert!(!short.to_string().contains("sesame"), "{short}");
        assert!(short.to_string().contains("minimum is 16"));
        let spaced = BearerToken::new("abcdefgh ijklmnopq").unwrap_err();
        assert!(!spaced.to_string().contains("abcdefgh"), "{spaced}");
        let token = BearerToken::from_file_contents(&format!("{TOKEN}\n")).unwrap();
        assert!(!format!("{token:?}").contains(TOKEN));
    }

    // Proves only the exact bearer header is admitted.
    #[test]
    fn checker_admits_only_the_exact_token() {
        let check = BearerToken::new(TOKEN).unwrap().checker(TRUST_REFUSAL);
        assert!(check.admits(Some(format!("Bearer {TOKEN}").as_bytes())));
        assert!(!check.admits(None));
        assert!(!check.admits(Some(b"")));
        assert!(
            !check.admits(Some(TOKEN.as_bytes())),
            "the scheme is required"
        );
        assert!(!check.admits(Some(format!("Bearer {TOKEN}x").as_bytes())));
        assert!(!check.admits(Some(format!("bearer {TOKEN}").as_bytes())));
        assert!(!check.admits(Some(b"Bearer ")));
    }

    // A token passed where its file is wanted is never printed: the error names the failure, not the path.
    #[test]
    fn an_unreadable_token_file_is_not_named() {
        let token = "0123456789abcdef0123456789abcdef";
        let err = BearerToken::from_file(std::path::Path::new(token)).unwrap_err();
        let text = err.to_string();
        assert!(!text.contains(token), "{text}");
        assert!(text.contains("token file"), "{text}");
    }
}

#[cfg(all(test, unix))]
mod file_tests {
    use super::*;

    // Proves a token file that is a folder, a FIFO, a device or longer than 4 KiB is refused before it is read to its end (a FIFO would block, a device never end), naming the fix and never the contents; a small regular file is read.
    #[test]
    fn only_a_small_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let long = dir.path().join("long");
        std::fs::write(&long, "t".repeat(4097)).unwrap();
        for path in [
            dir.path(),
            fifo.as_path(),
            std::path::Path::new("/dev/zero"),
            long.as_path(),
        ] {
            let refused = read_token_file(path).unwrap_err();
            assert!(
                matches!(refused, TrustError::UnusableFile { .. }),
                "{refused}"
            );
            assert!(refused.to_string().contains("at most 4 KiB"), "{refused}");
        }
        let good = dir.path().join("token");
        std::fs::write(&good, "0123456789abcdef-token\n").unwrap();
        assert_eq!(read_token_file(&good).unwrap(), "0123456789abcdef-token\n");
        let missing = read_token_file(&dir.path().join("missing")).unwrap_err();
        assert!(
            missing
                .to_string()
                .starts_with("cannot use the token file given"),
            "{missing}"
        );
    }
}
