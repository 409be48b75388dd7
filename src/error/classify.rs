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
mod tests {
    #[test]
    fn a_failure_said_again_is_as_retryable() {
        let io = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        let cases = [
            super::Error::from(io),
            super::Error::ReplicasTimeout {
                acked: 0,
                wanted: 1,
                timeout_ms: 5,
            },
            super::Error::Contention {
                name: "f".into(),
                retries: 3,
            },
            super::Error::Internal("x".into()),
        ];
        for e in cases {
            assert_eq!(e.again().is_retryable(), e.is_retryable(), "{e}");
            assert!(e.again().to_string().contains(&e.to_string()), "{e}");
        }
    }

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
        let oom = server(
            "OOM",
            "command not allowed when used memory > 'maxmemory'. script: 1280af8c, on @user_script:21.",
        );
        assert!(said(oom).starts_with("out of memory: "));
        // Anything else keeps the redis crate's words, after `redis: `.
        assert!(said(server("BUSY", "a script is running")).starts_with("redis: "));
    }

    #[test]
    fn cluster_reconfiguration_is_retryable() {
        // The server's replies while a slot moves or a master fails over,
        // decoded as the redis crate decodes them off the wire.
        let reply = |wire: &str| -> Error {
            match redis::parse_redis_value(wire.as_bytes()) {
                Ok(redis::Value::ServerError(e)) => Error::from(redis::RedisError::from(e)),
                other => panic!("{wire:?} decoded as {other:?}"),
            }
        };
        for wire in [
            "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
            "-ASK 3999 127.0.0.1:6381\r\n",
            "-MOVED 3999 127.0.0.1:6381\r\n",
            "-CLUSTERDOWN The cluster is down\r\n",
            "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n",
            "-READONLY You can't write against a read only replica.\r\n",
        ] {
            let e = reply(wire);
            assert!(e.is_retryable(), "{wire:?}: {e:?}");
        }
        // A redirection says where the slot is, and which URL follows it.
        let moved = reply("-MOVED 3999 127.0.0.1:6381\r\n").to_string();
        assert!(
            moved.contains("slot 3999") && moved.contains("127.0.0.1:6381"),
            "{moved}"
        );
        assert!(moved.contains("redis+cluster://"), "{moved}");
        assert!(
            !reply("-CROSSSLOT Keys in request don't hash to the same slot\r\n").is_retryable()
        );
        // The redis crate's cluster connection while a master is down.
        let lost =
            redis::RedisError::from((ErrorKind::ClusterConnectionNotFound, "No connections found"));
        assert!(Error::from(lost).is_retryable());
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
        // Valkey's words, with no script to look up.
        let e = Error::from(server(
            "ERR",
            "ACL failure in script: User u has no permissions to run the 'scan' command script: on @user_script:21.",
        ));
        assert!(
            matches!(&e, Error::PermissionDenied { message } if message == "this user has no permissions to run the 'scan' command (a rotabloom script calls it)"),
            "{e:?}"
        );
        // Another ERR is no refusal.
        assert!(matches!(
            Error::from(server("ERR", "syntax error")),
            Error::Redis(_)
        ));
    }
}
