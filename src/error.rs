//! The one error type of the crate.

use std::fmt;

/// The end of [`Error::Full`]'s message: what of the call was applied.
fn refused_from(answered: &[bool]) -> String {
    match answered.len() {
        0 => "nothing was written".to_string(),
        n => format!("the first {n} items of the call were handled, the rest refused from item {n} (counting from 0) on"),
    }
}

/// Everything that can go wrong in rotabloom.
///
/// Expected outcomes (an item already present, a rotation that is not due yet)
/// are values, not errors. Errors are either the caller's input, a filter that
/// disagrees with what the caller asked for, or Redis.
///
/// No variant ever carries a password: connection details are never part of
/// an error message.
///
/// ```
/// use rotabloom::{BloomParams, Error};
/// let err = BloomParams::for_capacity(0, 0.01).unwrap_err();
/// assert!(matches!(err, Error::InvalidParameter { name: "capacity", .. }));
/// assert!(!err.is_retryable());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is out of its valid range (for example a false-positive
    /// rate outside (0, 1), a capacity of 0, or a hash count of 0).
    #[error("invalid {name}: {reason}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// Why it was rejected.
        reason: String,
    },

    /// A generation would need more bits than the configured maximum.
    #[error("a generation of {bits} bits exceeds the configured maximum of {max} bits")]
    TooLarge {
        /// Bits requested.
        bits: u64,
        /// The configured maximum.
        max: u64,
    },

    /// A filter name that cannot be used in a Redis key.
    #[error("invalid filter name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    },

    /// The filter does not exist (no metadata hash in Redis).
    #[error("filter {name:?} does not exist")]
    NotFound {
        /// The filter's name.
        name: String,
    },

    /// The filter exists, but was created with a different value for a
    /// parameter. rotabloom never reuses or overwrites a filter silently.
    #[error("filter {name:?} exists with {field} = {stored}, but {requested} was requested")]
    ParameterMismatch {
        /// The filter's name.
        name: String,
        /// The metadata field that differs.
        field: String,
        /// The value stored in Redis.
        stored: String,
        /// The value asked for.
        requested: String,
    },

    /// The filter exists but is of another kind.
    #[error("filter {name:?} is of kind {found}, not {expected}")]
    KindMismatch {
        /// The filter's name.
        name: String,
        /// The kind the caller asked for.
        expected: &'static str,
        /// The kind stored in Redis.
        found: String,
    },

    /// The filter was written in a format version this library cannot read.
    #[error("filter {name:?} uses format version {found}; this library reads version {supported}")]
    UnsupportedFormat {
        /// The filter's name.
        name: String,
        /// The version found in the metadata.
        found: String,
        /// The version this library implements.
        supported: u32,
    },

    /// A key exists with a Redis type the filter cannot use.
    #[error("key {key:?} holds a Redis {found}, but rotabloom needs a {expected} there")]
    WrongType {
        /// The key.
        key: String,
        /// Its type in Redis.
        found: String,
        /// The type rotabloom needs.
        expected: &'static str,
    },

    /// A legacy bitmap (see [`Legacy`](crate::Legacy)) cannot be adopted
    /// as it is: the key is missing, empty, saturated or not a bitmap, its
    /// shape does not fit the legacy parameters, or items known to be in it
    /// are absent. Checked before anything moves: nothing was changed, the
    /// legacy keys are where they were.
    #[error("cannot adopt {key:?}: {reason}; nothing was changed")]
    NotAdoptable {
        /// The legacy key (or key prefix).
        key: String,
        /// Why, and what to check.
        reason: String,
    },

    /// The metadata hash is present but cannot be decoded.
    #[error("corrupt metadata for filter {name:?}: field {field}: {reason}")]
    CorruptMetadata {
        /// The filter's name.
        name: String,
        /// The field that could not be read.
        field: String,
        /// What is wrong with it.
        reason: String,
    },

    /// Redis answered something the protocol of this library does not allow.
    #[error("unexpected reply from Redis: {0}")]
    UnexpectedReply(String),

    /// The filter kept changing under this operation (other processes
    /// expanding, rotating or re-creating it) more times than the retry limit.
    #[error("filter {name:?} changed {retries} times during one operation; giving up")]
    Contention {
        /// The filter's name.
        name: String,
        /// How many times the operation was retried.
        retries: u32,
    },

    /// The generation a write fills holds its capacity, and the handle's
    /// [`WhenFull`](crate::WhenFull) is `Error` (the default). Capacity is
    /// enforced item by item inside the atomic step: the first
    /// `answered.len()` items of the call were handled (inserted, or found
    /// present) and `answered` holds their answers, in input order; no
    /// item from index `answered.len()` on was written.
    #[error("filter {name:?} is full: its generation holds {count} items of the {capacity} it was made for, and more would raise its false-positive rate above its target; {} (rotate it, convert it to an expanding filter, make a bigger one, or set when_full = warn)", refused_from(answered))]
    Full {
        /// The filter's name.
        name: String,
        /// What the generation was made for.
        capacity: u64,
        /// What it holds.
        count: u64,
        /// The answers of the items handled before the generation filled
        /// (a prefix of the call's items); empty when nothing was written.
        answered: Vec<bool>,
    },

    /// An [`ExpandingFilter`](crate::ExpandingFilter) reached its configured
    /// limit on generations or memory.
    #[error("filter {name:?} reached its limit: {limit}")]
    LimitReached {
        /// The filter's name.
        name: String,
        /// Which limit.
        limit: String,
    },

    /// The filter keeps its generations in RedisBloom keys, but the server
    /// has no RedisBloom (or compatible bloom) module.
    #[error("filter {name:?} uses the RedisBloom backend, but the server has no bloom module (BF.* commands): load redisbloom.so, or use the bitmap backend")]
    ModuleMissing {
        /// The filter's name.
        name: String,
    },

    /// Block keys of listed generations are gone (evicted, deleted): the
    /// filter would answer "absent" for what it holds, so a call that reads
    /// or writes such a block answers nothing (a batch of 16 items or more
    /// checks every block of the generations it uses; a smaller call, the
    /// blocks its items use). Every block is allocated when its generation
    /// is made, so a missing one is always lost data; `info` reports it as
    /// a `missing_block` warning.
    #[error("filter {name:?} has lost data: {} of its block keys are missing ({}): evicted or deleted? No answer is given; restore the filter or drop and re-create it", keys.len(), keys.iter().take(3).cloned().collect::<Vec<_>>().join(", "))]
    MissingData {
        /// The filter's name.
        name: String,
        /// The missing keys.
        keys: Vec<String>,
    },

    /// The server refused to allocate memory for the filter (`maxmemory`
    /// with `noeviction`, or the machine's memory). Nothing of the refused
    /// step is left behind.
    #[error("filter {name:?}: the Redis server refused {bytes} bytes of memory (maxmemory reached?): {message}")]
    OutOfMemory {
        /// The filter's name.
        name: String,
        /// The bytes asked for.
        bytes: u64,
        /// The server's words.
        message: String,
    },

    /// The server refused a write because its memory is full (used memory
    /// above `maxmemory`, with a policy that does not evict the filter's
    /// keys). Nothing of the refused step was applied: a script fails at
    /// its first write, a transaction is refused before it runs. Reads
    /// keep working.
    #[error("filter {name:?}: the Redis server refused the write: used memory is above maxmemory and nothing can be evicted; nothing of it was applied (free memory, raise maxmemory, or drop filters): {message}")]
    MemoryFull {
        /// The filter's name.
        name: String,
        /// The server's words.
        message: String,
    },

    /// The Redis user may not run a command rotabloom needs (ACL), or may
    /// not touch one of the filter's keys. Nothing was written by the
    /// command refused.
    #[error("permission denied by the Redis server: {message}")]
    PermissionDenied {
        /// The server's words, naming the command or key.
        message: String,
    },

    /// rotabloom broke one of its own invariants: a bug, never a problem
    /// of the data in Redis.
    #[error("internal error (a bug in rotabloom, please report it): {0}")]
    Internal(String),

    /// Opening a connection failed: the server refused it, TLS or a
    /// certificate failed, the credentials were refused, the Sentinels did
    /// not name a primary, the cluster is down... `target` is the URL
    /// without credentials, `reason` is scrubbed of the passwords in use.
    #[error("cannot connect to {target}: {reason}")]
    Connect {
        /// Where, without credentials.
        target: String,
        /// Why, on one line.
        reason: String,
    },

    /// The server did not answer in time: a server that accepts
    /// connections and never answers (a hung process, a firewall that
    /// drops packets, a port that is not Redis's). `after` is the timeout
    /// that ran out
    /// ([`Target::with_timeouts`](crate::connect::Target::with_timeouts)
    /// sets it). Retryable: a server that is slow now may answer later.
    #[error(
        "cannot connect to {target}: timed out: the server did not answer within {}",
        seconds(after)
    )]
    TimedOut {
        /// Where, without credentials.
        target: String,
        /// How long rotabloom waited.
        after: std::time::Duration,
    },

    /// Fewer replicas than asked for
    /// ([`WaitReplicas`](crate::WaitReplicas)) acknowledged a write in
    /// time. The write stays on the primary (WAIT undoes nothing), but a
    /// failover now could lose it. Retryable: the same call again (for
    /// check-and-insert, through an [`IdempotentBatch`](crate::IdempotentBatch)
    /// so the answers are not lost) waits again.
    #[error("only {acked} of {wanted} replicas acknowledged the write within {timeout_ms} ms (it is on the primary, but a failover could lose it)")]
    ReplicasTimeout {
        /// Replicas that acknowledged.
        acked: u32,
        /// Replicas asked for.
        wanted: u32,
        /// How long the server waited, in milliseconds.
        timeout_ms: u64,
    },

    /// A dump file (see [`dump`](crate::dump)) is not one this library
    /// wrote or can read: bad magic, version or checksum, truncated, or
    /// holding a filter that does not add up.
    #[error("not a valid rotabloom dump: {reason}")]
    BadDump {
        /// What is wrong with it.
        reason: String,
    },

    /// Reading or writing the local side of a dump or restore failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being read or written.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// A filter of that name exists already: a restore never overwrites
    /// one. Nothing was written.
    #[error("filter {name:?} already exists: drop it first, or restore under another name")]
    AlreadyExists {
        /// The filter's name.
        name: String,
    },

    /// A restore was cancelled through its flag
    /// ([`RestoreOptions::cancel_on`](crate::dump::RestoreOptions::cancel_on);
    /// the CLI sets it on SIGINT, SIGTERM and SIGHUP) before it published
    /// the filter. Nothing was restored, and the blocks it had written
    /// were deleted.
    #[error("the restore of filter {name:?} was interrupted: nothing was restored, and the blocks it had written are deleted")]
    Cancelled {
        /// The name it was restoring.
        name: String,
    },

    /// Blocks a restore had written vanished before it published the
    /// filter: they expired after the restore paused longer than its
    /// lease ([`RestoreOptions::lease`](crate::dump::RestoreOptions::lease);
    /// a stalled input), or a `volatile-*` maxmemory policy evicted them.
    /// Nothing was restored; the rest of its blocks were deleted.
    #[error("the restore of filter {name:?} lost {} of the blocks it had written before it could finish ({}): they expired after a pause longer than its lease of {lease_secs} s, or a volatile-* maxmemory policy evicted them; nothing was restored", keys.len(), keys.iter().take(3).cloned().collect::<Vec<_>>().join(", "))]
    RestoreExpired {
        /// The name it was restoring.
        name: String,
        /// The vanished block keys.
        keys: Vec<String>,
        /// The lease, in seconds.
        lease_secs: u64,
    },

    /// An error from Redis or the connection to it. Its message says the
    /// cause in words where it is a common one (authentication, a
    /// read-only replica, not a Redis server, a timeout), else it is the
    /// `redis` crate's, after `redis: `.
    #[error("{0}")]
    Redis(#[source] RedisError),
}

/// A Redis error, wrapped so that its text is scrubbed of credentials.
#[derive(Debug)]
pub struct RedisError(pub(crate) redis::RedisError);

impl RedisError {
    /// The underlying error of the `redis` crate.
    pub fn inner(&self) -> &redis::RedisError {
        &self.0
    }
}

impl fmt::Display for RedisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match plain(&self.0) {
            Some(words) => f.write_str(&words),
            None => write!(
                f,
                "redis: {}",
                crate::redact::redact_urls(&self.0.to_string())
            ),
        }
    }
}

/// `d` in seconds for a message: `10 s`, `0.5 s`.
fn seconds(d: &std::time::Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// The cause of `e` in words, for the errors a user meets first and whose
/// text from the `redis` crate or the server does not say what to do: a
/// password missing or refused, a replica asked to write, a server that
/// does not speak Redis, a reply that never came.
pub(crate) fn plain(e: &redis::RedisError) -> Option<String> {
    let code = e.code();
    let words = if code == Some("NOAUTH") {
        "authentication required: the server wants a password and none was given \
         (in the URL, :PASSWORD@ goes before the host; USER:PASSWORD@ for an ACL user)"
    } else if code == Some("WRONGPASS") || e.kind() == redis::ErrorKind::AuthenticationFailed {
        "authentication failed: the server refused the user name or password"
    } else if code == Some("READONLY") {
        "the server is a read-only replica: writes go to its primary \
         (connect to the primary, or use a redis+sentinel:// URL, which follows failovers)"
    } else if e.kind() == redis::ErrorKind::Parse {
        return Some(match e.detail().filter(|d| d.starts_with("it answered")) {
            Some(d) => format!("not a Redis server: {d}"),
            None => "not a Redis server: its reply is not in the Redis protocol".to_string(),
        });
    } else if e.is_timeout() {
        "timed out waiting for the server's reply"
    } else {
        return None;
    };
    Some(words.to_string())
}

impl std::error::Error for RedisError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// The server's words without the location a script error ends with
/// (`script: <sha>, on @user_script:23.`), which says nothing to a user.
fn without_location(text: &str) -> &str {
    text.split(" script: ").next().unwrap_or(text).trim()
}

/// `(sha, line)` of the script line an error reply points to.
fn location(text: &str) -> Option<(&str, usize)> {
    let at = text.split(" script: ").nth(1)?;
    let (sha, rest) = at.split_once(", on @user_script:")?;
    let line = rest.trim_end_matches('.').trim().parse().ok()?;
    Some((sha.trim(), line))
}

/// What an ACL refused, when `e` is such a refusal: `NOPERM` (a command
/// the client sent; on Redis 7.2 and later also one a script runs), or
/// Redis 7.0's words for a command a script runs, which do not name it:
/// the script's line does.
pub(crate) fn acl_refusal(e: &redis::RedisError) -> Option<String> {
    let detail = e.detail().unwrap_or_default();
    let scripted = e.code() == Some("ERR")
        && detail.contains("The user executing the script can't run this command");
    if e.code() != Some("NOPERM") && !scripted {
        return None;
    }
    let words = crate::redact::redact_urls(without_location(detail));
    let command = location(detail).and_then(|(sha, line)| crate::scripts::command_at(sha, line));
    Some(match command {
        Some(c) if !words.contains(&format!("'{c}'")) => {
            format!("this user has no permissions to run the '{c}' command (a rotabloom script calls it)")
        }
        _ if words.is_empty() => "NOPERM".to_string(),
        _ => words,
    })
}

impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Self {
        if let Some(message) = acl_refusal(&e) {
            return Error::PermissionDenied { message };
        }
        Error::Redis(RedisError(e))
    }
}

impl Error {
    /// A script's error reply, for filter `name`: `CORRUPT <field> ...`
    /// is the scripts' word for a stored value they will not use.
    pub(crate) fn from_script(name: &str, e: redis::RedisError) -> Error {
        if e.code() == Some("OOM") {
            return Error::memory_full(name, &e);
        }
        if e.code() == Some("CORRUPT") {
            let detail = e.detail().unwrap_or_default();
            let (field, reason) = detail.split_once(' ').unwrap_or((detail, "malformed"));
            let reason = reason.split(" script:").next().unwrap_or(reason);
            return Error::CorruptMetadata {
                name: name.to_string(),
                field: field.to_string(),
                reason: reason.trim().to_string(),
            };
        }
        e.into()
    }
}

impl Error {
    /// [`Error::MemoryFull`] from the server's OOM reply `e`.
    pub(crate) fn memory_full(name: &str, e: &redis::RedisError) -> Error {
        let text = crate::redact::redact_urls(e.detail().unwrap_or("OOM"));
        Error::MemoryFull {
            name: name.to_string(),
            message: text
                .split(" script:")
                .next()
                .unwrap_or(&text)
                .trim()
                .to_string(),
        }
    }

    /// Whether the server refused a command for lack of memory.
    pub(crate) fn is_oom(&self) -> bool {
        matches!(self, Error::MemoryFull { .. })
            || matches!(self, Error::Redis(RedisError(e)) if e.code() == Some("OOM"))
    }
}

impl Error {
    /// Whether trying the same call again later may succeed: connection
    /// failures, timeouts, a server that is loading or busy, cluster
    /// reconfiguration, and contention between processes.
    ///
    /// ```
    /// use rotabloom::Error;
    /// let e = Error::Contention { name: "crawl".into(), retries: 16 };
    /// assert!(e.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Contention { .. } | Error::ReplicasTimeout { .. } | Error::TimedOut { .. } => {
                true
            }
            Error::Redis(RedisError(e)) => {
                e.is_io_error()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || matches!(
                        e.code(),
                        Some(
                            "LOADING"
                                | "BUSY"
                                | "TRYAGAIN"
                                | "CLUSTERDOWN"
                                | "MASTERDOWN"
                                | "READONLY"
                                | "NOREPLICAS"
                                | "MOVED"
                                | "ASK"
                        )
                    )
            }
            _ => false,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use redis::{make_extension_error, ErrorKind};

    fn server(code: &str, detail: &str) -> redis::RedisError {
        make_extension_error(code.to_string(), Some(detail.to_string()))
    }

    #[test]
    fn common_causes_are_said_in_words() {
        let said = |e: redis::RedisError| Error::from(e).to_string();
        assert!(said(server("NOAUTH", "Authentication required."))
            .starts_with("authentication required"));
        assert!(said(server("WRONGPASS", "invalid username-password pair"))
            .starts_with("authentication failed"));
        let replica = server(
            "READONLY",
            "You can't write against a read only replica. script: 129dee4b, on @user_script:37.",
        );
        let e = Error::from(replica);
        assert!(
            e.to_string()
                .starts_with("the server is a read-only replica"),
            "{e}"
        );
        assert!(
            e.is_retryable(),
            "a failover turns a primary into a replica"
        );
        let parse = redis::RedisError::from((
            ErrorKind::Parse,
            "parse error",
            "Unexpected `84`".to_string(),
        ));
        assert_eq!(
            said(parse),
            "not a Redis server: its reply is not in the Redis protocol"
        );
        let timeout: redis::RedisError = std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            "Resource temporarily unavailable",
        )
        .into();
        assert_eq!(said(timeout), "timed out waiting for the server's reply");
        // Anything else keeps the redis crate's words, after `redis: `.
        assert!(said(server("BUSY", "a script is running")).starts_with("redis: "));
    }

    #[test]
    fn an_acl_refusal_in_a_script_names_the_command_of_its_line() {
        let sha = crate::scripts::SWEEP.sha();
        let line = 1 + crate::scripts::SWEEP
            .source
            .lines()
            .position(|l| l.contains("redis.call('SCAN'"))
            .unwrap();
        let e = Error::from(server(
            "ERR",
            &format!(
                "The user executing the script can't run this command or subcommand script: {sha}, on @user_script:{line}."
            ),
        ));
        assert!(
            matches!(&e, Error::PermissionDenied { message } if message == "this user has no permissions to run the 'scan' command (a rotabloom script calls it)"),
            "{e:?}"
        );
        let e = Error::from(server(
            "NOPERM",
            "this user has no permissions to run the 'scan' command",
        ));
        assert!(
            matches!(&e, Error::PermissionDenied { message } if message == "this user has no permissions to run the 'scan' command"),
            "{e:?}"
        );
        // Another ERR is no refusal.
        assert!(matches!(
            Error::from(server("ERR", "syntax error")),
            Error::Redis(_)
        ));
    }
}
