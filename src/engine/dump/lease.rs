//! The lease of a restore's blocks: the time to live each write sets on
//! its block, and its renewal while the restore goes on.
//!
//! Why a lease rather than keys that `list` and `drop` would find: the
//! blocks of an unfinished restore belong to no filter (a filter of that
//! name may exist, or be created meanwhile, and its `drop` must not take
//! them), and a restore killed with SIGKILL or cut off from the server
//! runs no undo. A time to live set in the same atomic step as every write
//! (src/lua/restore_write.lua) needs nobody to come back: the server
//! deletes them. The publish step (src/lua/restore.lua) removes it from
//! every block in the step that writes the metadata naming them.

use crate::error::{Error, Result};
use std::time::{Duration, Instant};

/// How long the blocks of a restore in progress live unless renewed: a
/// restore that dies (killed, its connection lost) leaves them for at
/// most this long. Renewed every third of it, so only a pause of two
/// thirds of it between two steps (an input that stalls) loses them, and
/// then the restore fails ([`Error::RestoreExpired`]) rather than publish
/// a filter with holes.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15 * 60);

/// The shortest lease [`RestoreOptions::lease`](super::options::RestoreOptions::lease) takes.
pub const MIN_LEASE: Duration = Duration::from_secs(1);

/// A restore's lease: its length, and when it was last renewed (or the
/// restore's first step ran), on the driver's clock.
pub(crate) struct Lease {
    pub(crate) length: Duration,
    renewed: Option<Instant>,
}

impl Lease {
    /// Refuses a lease shorter than [`MIN_LEASE`].
    pub(crate) fn check(length: Duration) -> Result<()> {
        if length < MIN_LEASE {
            return Err(Error::InvalidParameter {
                name: "lease",
                reason: format!(
                    "{} ms is shorter than the {} s a restore's blocks must live between two steps",
                    length.as_millis(),
                    MIN_LEASE.as_secs()
                ),
            });
        }
        Ok(())
    }

    /// A lease of `length` that begins at the first [`at`](Self::at).
    pub(crate) fn start(length: Duration) -> Lease {
        Lease {
            length,
            renewed: None,
        }
    }

    /// Its length in milliseconds, as `PEXPIRE` and the write script take it.
    pub(crate) fn ms(&self) -> u64 {
        u64::try_from(self.length.as_millis()).unwrap_or(u64::MAX)
    }

    /// Its length in seconds, for messages.
    pub(crate) fn secs(&self) -> u64 {
        self.length.as_secs()
    }

    /// The driver's time: the first begins the lease.
    pub(crate) fn at(&mut self, now: Instant) {
        self.renewed.get_or_insert(now);
    }

    /// Whether at `now` a third of the lease has passed since it was last
    /// renewed (see [`DEFAULT_LEASE`] for why a third); if so, the renewal
    /// is counted as done at `now`.
    pub(crate) fn renewal_due(&mut self, now: Instant) -> bool {
        let since = *self.renewed.get_or_insert(now);
        if now.saturating_duration_since(since) >= self.length / 3 {
            self.renewed = Some(now);
            return true;
        }
        false
    }
}
