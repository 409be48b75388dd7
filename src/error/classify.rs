//! Errors of the `redis` crate in the crate's terms: wrapped so that their
//! text is scrubbed of credentials, their common causes said in words, an
//! ACL refusal, a script's error reply or a refusal for memory turned into
//! the variant that names it, and which of them are worth retrying.

use super::Error;
use std::fmt;

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

impl std::error::Error for RedisError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
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
    } else if code == Some("OOM") {
        "out of memory: the server refused a write (its used memory is above maxmemory); \
         free memory or raise maxmemory, then run again"
    } else if e.is_timeout() {
        "timed out waiting for the server's reply"
    } else if let Some((node, slot)) = e.redirect_node() {
        // A cluster connection follows redirections itself: one that
        // reaches here came, most often, over a URL naming one node.
        return Some(format!(
            "the server is a node of a Redis Cluster, and slot {slot} of the filter's keys is served by {node} \
             (a redis+cluster://HOST:PORT,HOST:PORT URL follows the cluster's slots; \
             if it is one already, the cluster is moving that slot: run again)"
        ));
    } else {
        return None;
    };
    Some(words.to_string())
}

/// The server's words without the location a script error ends with
/// (`script: <sha>, on @user_script:23.`), which says nothing to a user.
/// The last one: Valkey's words begin with `ACL failure in script: `.
fn without_location(text: &str) -> &str {
    text.rsplit_once(" script: ")
        .map_or(text, |(words, _)| words)
        .trim()
}

/// `(sha, line)` of the script line an error reply points to.
fn location(text: &str) -> Option<(&str, usize)> {
    let (_, at) = text.rsplit_once(" script: ")?;
    let (sha, rest) = at.split_once(", on @user_script:")?;
    let line = rest.trim_end_matches('.').trim().parse().ok()?;
    Some((sha.trim(), line))
}

/// What an ACL refused, when `e` is such a refusal: `NOPERM` (a command
/// the client sent; on Redis 7.2 and later also one a script runs),
/// Valkey's `ERR ACL failure in script: ...` for a command a script runs,
/// or Redis 7.0's words for one, which do not name it: the script's line
/// does.
pub(crate) fn acl_refusal(e: &redis::RedisError) -> Option<String> {
    let detail = e.detail().unwrap_or_default();
    let scripted = e.code() == Some("ERR")
        && (detail.contains("The user executing the script can't run this command")
            || detail.starts_with("ACL failure in script:"));
    if e.code() != Some("NOPERM") && !scripted {
        return None;
    }
    let words = crate::redact::redact_urls(without_location(detail));
    // Valkey names the command, but no script to look its line up in.
    let named = || {
        Some(
            words
                .split_once("run the '")?
                .1
                .split_once('\'')?
                .0
                .to_string(),
        )
    };
    let command = location(detail)
        .and_then(|(sha, line)| crate::scripts::command_at(sha, line))
        .or_else(|| if scripted { named() } else { None });
    Some(match command {
        Some(c) if scripted || !words.contains(&format!("'{c}'")) => {
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
    /// The same failure for another operation it stopped (the other
    /// shards of a joint request whose connection failed): as retryable
    /// as this one, so that each of them knows its reply may be lost.
    pub(crate) fn again(&self) -> Error {
        match self {
            Error::Redis(RedisError(e)) => Error::Redis(RedisError(e.clone())),
            Error::ReplicasTimeout {
                acked,
                wanted,
                timeout_ms,
            } => Error::ReplicasTimeout {
                acked: *acked,
                wanted: *wanted,
                timeout_ms: *timeout_ms,
            },
            Error::TimedOut { target, after } => Error::TimedOut {
                target: target.clone(),
                after: *after,
            },
            Error::Contention { name, retries } => Error::Contention {
                name: name.clone(),
                retries: *retries,
            },
            other => Error::Internal(other.to_string()),
        }
    }

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
            Error::Partial(p) => p.is_retryable(),
            Error::Redis(RedisError(e)) => {
                e.is_io_error()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    // A cluster connection with no live connection to the
                    // slot's node: what it says while a master is down
                    // and before its replica takes over.
                    || e.kind() == redis::ErrorKind::ClusterConnectionNotFound
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

/// A reply of a shape the protocol does not give (`what` names the
/// command): [`Error::UnexpectedReply`] with the reply, cut to 200
/// characters, never read as some default.
pub(crate) fn unexpected(what: &str, v: &redis::Value) -> Error {
    let mut text = format!("{v:?}");
    if text.len() > 200 {
        text.truncate(200);
        text.push('…');
    }
    Error::UnexpectedReply(format!("{what}: {text}"))
}

#[cfg(test)]
mod tests;
