//! Errors: their exit codes, and the one line of text each is said in,
//! without credentials (`show::errors` prints it).

use rotabloom::config::{ConfigError, Secrets};
use rotabloom::Error;

/// An error with its exit code decided where it happened.
#[derive(Clone, Debug)]
pub struct Fail {
    pub code: u8,
    pub message: String,
}

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fail {}

/// A usage error (exit code 2).
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Fail {
        code: 2,
        message: message.into(),
    })
}

/// The exit code of a local file that cannot be read.
pub const EXIT_FILE: u8 = 5;

/// A local file (or standard input) that cannot be read: not a Redis
/// error (exit code 5).
pub fn file_error(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Fail {
        code: EXIT_FILE,
        message: message.into(),
    })
}

/// The exit code of a library error: 2 for what the user asked (bad
/// parameters, names, a missing, existing or different filter, one dropped
/// and created again under a run, a legacy
/// bitmap that does not fit the parameters given for it), 5 for a local
/// dump file, 3 for Redis and the data in it.
fn lib_code(e: &Error) -> u8 {
    match e {
        Error::InvalidParameter { .. }
        | Error::TooLarge { .. }
        | Error::InvalidName { .. }
        | Error::NotFound { .. }
        | Error::Recreated { .. }
        | Error::ParameterMismatch { .. }
        | Error::KindMismatch { .. }
        | Error::AlreadyExists { .. }
        | Error::NotAdoptable { .. } => 2,
        Error::Io { .. } | Error::BadDump { .. } => EXIT_FILE,
        _ => 3,
    }
}

pub fn exit_code(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if let Some(f) = cause.downcast_ref::<Fail>() {
            return f.code;
        }
        if cause.downcast_ref::<ConfigError>().is_some() {
            return 2;
        }
        if let Some(e) = cause.downcast_ref::<Error>() {
            return lib_code(e);
        }
    }
    3
}

/// Whether the connection to Redis itself failed, which ends a command
/// over several filters rather than skipping one.
pub fn is_redis(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<Error>(), Some(Error::Redis(_))))
}

/// The error and its causes, each said once (a cause whose text its
/// parent already includes is left out), on one line. The chain ends at
/// the library's error: its message says all its sources would (in words
/// where the `redis` crate's text would not, e.g. a read-only replica).
pub fn describe(e: &anyhow::Error, secrets: &Secrets) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        if cause.downcast_ref::<Error>().is_some() {
            break;
        }
    }
    secrets.redact(&parts.join(": ").replace('\n', " "))
}
