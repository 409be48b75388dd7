//! Writes that wait for replicas: the `WAIT` appended to every request that
//! changes a filter, and the check of its reply. Pure: `exec` appends and
//! strips it.

use crate::error::{Error, Result};
use redis::{Cmd, Value};
use std::num::NonZeroU32;
use std::time::Duration;

/// Every state change and every write batch is acknowledged only once this
/// many replicas have it (Redis `WAIT`), within `timeout`.
///
/// What it promises: when a call returns `Ok`, its writes reached the
/// primary and at least `replicas` replicas acknowledged them, so a
/// failover that promotes one of those replicas keeps them. What it does
/// not: `WAIT` is not a consensus commit. The replicas hold the writes in
/// memory (durability on their disk depends on their own `appendfsync`),
/// a failover may still promote a replica that did not acknowledge, and
/// when too few replicas confirm in time the writes are *not* undone: the
/// call fails with [`Error::ReplicasTimeout`] (retryable) and the primary
/// keeps them. Redis 7.2 adds `WAITAOF` for fsync on the primary and
/// replicas; this library uses `WAIT`, which every supported server has.
///
/// On a Redis Cluster connection the redis crate sends `WAIT` to every
/// master and keeps the smallest count: a write waits for a replica of
/// every master, not only of its own, so while a master has fewer replicas
/// (after a failover, until a new replica is in sync) every write is
/// `ReplicasTimeout`, whatever its shard. Over plain connections to the
/// masters (a sharded filter's `*_on` batches given
/// [`Target::connect_to`](crate::connect::Target::connect_to) connections,
/// as the command line writes) each master's `WAIT` counts its own
/// replicas: only the shards of a master short of replicas wait.
///
/// ```
/// use rotabloom::WaitReplicas;
/// use std::time::Duration;
/// let w = WaitReplicas::new(1, Duration::from_millis(500)).unwrap();
/// assert_eq!(w.replicas(), 1);
/// assert!(WaitReplicas::new(0, Duration::from_millis(500)).is_err());
/// assert!(WaitReplicas::new(1, Duration::ZERO).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitReplicas {
    replicas: NonZeroU32,
    /// Whole milliseconds, at least one: `WAIT n 0` would block forever.
    timeout_ms: u64,
}

/// The default time to wait for replicas when none is given.
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_millis(1_000);

impl WaitReplicas {
    /// Waits for `replicas` (at least 1) replicas, at most `timeout` (at
    /// least 1 ms) per request.
    pub fn new(replicas: u32, timeout: Duration) -> Result<WaitReplicas> {
        let replicas = NonZeroU32::new(replicas).ok_or_else(|| Error::InvalidParameter {
            name: "wait_replicas",
            reason: "must be at least 1 (leave it unset not to wait)".into(),
        })?;
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        if timeout_ms == 0 {
            return Err(Error::InvalidParameter {
                name: "wait_timeout_ms",
                reason: "must be at least 1 ms (0 would wait forever)".into(),
            });
        }
        Ok(WaitReplicas {
            replicas,
            timeout_ms,
        })
    }

    /// How many replicas must acknowledge.
    pub fn replicas(&self) -> u32 {
        self.replicas.get()
    }

    /// How long to wait for them.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    pub(crate) fn command(&self) -> Cmd {
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(self.replicas.get()).arg(self.timeout_ms);
        cmd
    }

    /// The reply to [`command`](Self::command): enough replicas, or the
    /// typed error.
    pub(crate) fn check(&self, reply: redis::RedisResult<Value>) -> Result<()> {
        let acked = match reply? {
            Value::Int(n) => n,
            other => {
                return Err(Error::UnexpectedReply(format!(
                    "WAIT answered {other:?}, not a count of replicas"
                )))
            }
        };
        if acked < i64::from(self.replicas.get()) {
            return Err(Error::ReplicasTimeout {
                acked: u32::try_from(acked.max(0)).unwrap_or(0),
                wanted: self.replicas.get(),
                timeout_ms: self.timeout_ms,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(n: u32) -> WaitReplicas {
        WaitReplicas::new(n, Duration::from_millis(250)).unwrap()
    }

    #[test]
    fn command_names_count_and_timeout() {
        let args: Vec<Vec<u8>> = w(2)
            .command()
            .args_iter()
            .filter_map(|a| match a {
                redis::Arg::Simple(b) => Some(b.to_vec()),
                _ => None,
            })
            .collect();
        assert_eq!(args, [&b"WAIT"[..], b"2", b"250"]);
    }

    #[test]
    fn enough_replicas_is_ok_fewer_is_a_retryable_error() {
        assert!(w(1).check(Ok(Value::Int(1))).is_ok());
        assert!(w(1).check(Ok(Value::Int(3))).is_ok());
        let e = w(2).check(Ok(Value::Int(1))).unwrap_err();
        assert!(matches!(
            e,
            Error::ReplicasTimeout {
                acked: 1,
                wanted: 2,
                timeout_ms: 250
            }
        ));
        assert!(e.is_retryable());
        assert!(e.to_string().contains("1 of 2 replicas"), "{e}");
    }

    #[test]
    fn a_strange_reply_is_unexpected() {
        let e = w(1).check(Ok(Value::Nil)).unwrap_err();
        assert!(matches!(e, Error::UnexpectedReply(_)), "{e}");
    }

    #[test]
    fn timeout_is_whole_milliseconds() {
        let t = WaitReplicas::new(1, Duration::from_micros(1500)).unwrap();
        assert_eq!(t.timeout(), Duration::from_millis(1));
        assert!(WaitReplicas::new(1, Duration::from_micros(999)).is_err());
    }
}
