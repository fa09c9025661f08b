//! The one error type of trust-control: invalid requests, refused conflicts,
//! storage failures, service start-up refusals and client-side failures.
//!
//! Every message names the trust-control store, so a node that turns any
//! failure into a deny can use the message as the deny reason unchanged.
//! Messages never contain a bearer token or any other secret value.

use std::time::Duration;

/// Everything that can go wrong in trust-control, on either side of the wire.
///
/// `Clone` because one storage failure of a group commit is answered to every
/// request of the batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// A request field is malformed (empty id, bad hex key, share over 10000 bps).
    #[error("trust-control store rejected {field}: {problem}; {fix}")]
    InvalidArgument {
        /// Which field of the request is wrong.
        field: &'static str,
        /// What is wrong with it (never the raw value when it could be secret).
        problem: String,
        /// How the caller fixes it.
        fix: &'static str,
    },
    /// A receipt id is already stored with different bytes.
    #[error(
        "trust-control store refused receipt {receipt_id}: already stored with other bytes; \
         receipt ids are content-addressed, recompute the id from the body"
    )]
    ReceiptConflict {
        /// The receipt id whose stored body differs.
        receipt_id: String,
    },
    /// A commit or release names a hold that was never granted.
    #[error("trust-control store has no hold {hold_id}; take the hold before committing it")]
    UnknownHold {
        /// The hold id that is not in the store.
        hold_id: String,
    },
    /// The shared ledger rules refuse the request as inconsistent with what
    /// the store holds (a reused hold id, a replayed committed hold, a hold
    /// moved against its life, an overflowing sum, a child admitted twice
    /// with another parent or share). The rules live in the kernel crate so
    /// every store applies the same ones.
    #[error("trust-control store refused: {0}")]
    Refused(#[from] chio_kernel::ledger::LedgerRefusal),
    /// SQLite failed (I/O, full disk, corruption); nothing of the batch is durable.
    #[error("trust-control store failed: {detail}; check the database file and its disk")]
    Storage {
        /// The SQLite error text (file names and SQL, never request secrets).
        detail: String,
    },
    /// The in-memory store could not write or read the temporary file its
    /// receipt log spills to; the append or listing is refused whole.
    #[error("in-memory trust store failed on its receipt spill file: {detail}; check that the temporary directory (TMPDIR) is writable and has space")]
    Spill {
        /// The operating system's reason, or what was inconsistent.
        detail: String,
    },
    /// The database was written by a newer schema than this build knows.
    #[error(
        "trust-control store schema version {found} is not supported (this build knows up to \
         {supported}); upgrade chio or use another database file"
    )]
    UnsupportedSchema {
        /// The `user_version` found in the file.
        found: i64,
        /// The newest schema version this build creates and reads.
        supported: i64,
    },
    /// A version 1 file holds an admission whose request the migration to
    /// the current schema cannot carry over as seen, so a replay of it would
    /// be admitted again; the file is left at version 1, unchanged.
    #[error(
        "trust-control store cannot migrate {path} from schema version 1: {problem}, so a replay \
         of that request could not be refused after the upgrade; the file is left unchanged at \
         version 1: {fix}"
    )]
    MigrationRefused {
        /// The database path.
        path: String,
        /// Which row could not be carried over, and why.
        problem: String,
        /// How the operator proceeds.
        fix: &'static str,
    },
    /// The file is a SQLite database of another application.
    #[error(
        "trust-control store refused {path}: it is not a trust-control database; pass a new file \
         or one created by chio trust serve"
    )]
    ForeignDatabase {
        /// The database path.
        path: String,
    },
    /// The store's writer has stopped, so no request can be answered.
    #[error("trust-control store is closed; restart the trust-control service")]
    StoreClosed,
    /// The service was asked to start without any bearer token.
    #[error(
        "trust-control refuses to start without a bearer token; pass --token-file FILE or set \
         CHIO_TRUST_TOKEN"
    )]
    MissingToken,
    /// The bearer token is present but unusable.
    #[error("trust-control bearer token is unusable: {problem}; {fix}")]
    WeakToken {
        /// What is wrong with the token (its length or alphabet, never its value).
        problem: String,
        /// How to make a usable token.
        fix: &'static str,
    },
    /// The token came from two sources and it is unclear which to use.
    #[error(
        "trust-control token given twice (--token-file and CHIO_TRUST_TOKEN); use exactly one"
    )]
    AmbiguousToken,
    /// A file the configuration names is unusable: a token file that is not
    /// a small regular file, a database file another user owns or may write.
    #[error("cannot use {what}: {detail}; {fix}")]
    UnusableFile {
        /// The file, by its role (never its contents).
        what: String,
        /// What is wrong with it.
        detail: String,
        /// How to fix it.
        fix: &'static str,
    },
    /// A file the service needs could not be read, or an address not bound.
    #[error("trust-control could not {action}: {detail}; {fix}")]
    Io {
        /// What the service was doing.
        action: String,
        /// The operating system's error text.
        detail: String,
        /// How to fix it.
        fix: &'static str,
    },
    /// The service is unreachable or the connection broke.
    #[error(
        "trust-control unavailable: {detail}; check that the service runs at the configured url"
    )]
    Unavailable {
        /// The transport's description of the failure.
        detail: String,
    },
    /// The service did not answer within the call's deadline.
    #[error(
        "trust-control deadline exceeded: {operation} got no answer within {} ms; check the \
         service's health and load, or raise the deadline",
        .deadline.as_millis()
    )]
    DeadlineExceeded {
        /// The RPC that timed out.
        operation: &'static str,
        /// The deadline it had.
        deadline: Duration,
    },
    /// The service refused the bearer token this client presented.
    #[error(
        "trust-control refused the bearer token; configure the token the service was started with"
    )]
    Unauthenticated,
    /// The service answered with an error status the client has no variant for.
    #[error("trust-control rejected {operation}: {message}")]
    Rejected {
        /// The RPC that was rejected.
        operation: &'static str,
        /// The service's message (it names the cause and its fix).
        message: String,
    },
    /// The service answered with a message this client cannot interpret.
    #[error("trust-control sent a malformed answer to {operation}: {problem}; upgrade the client or service so both speak chio.trust.v1")]
    MalformedAnswer {
        /// The RPC whose answer was malformed.
        operation: &'static str,
        /// What was missing or wrong.
        problem: &'static str,
    },
}

impl From<rusqlite::Error> for TrustError {
    fn from(error: rusqlite::Error) -> Self {
        TrustError::Storage {
            detail: error.to_string(),
        }
    }
}
