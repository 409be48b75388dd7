//! The options of a restore.

use super::lease::DEFAULT_LEASE;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Options of [`restore_with`](crate::dump::restore_with).
///
/// ```
/// use rotabloom::dump::RestoreOptions;
/// let o = RestoreOptions::new().name(Some("copy")).lease(std::time::Duration::from_secs(60));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct RestoreOptions<'a> {
    pub(crate) name: Option<&'a str>,
    pub(crate) cancel: Option<&'a AtomicBool>,
    pub(crate) lease: Duration,
}

impl Default for RestoreOptions<'_> {
    fn default() -> Self {
        RestoreOptions::new()
    }
}

impl<'a> RestoreOptions<'a> {
    /// The dumped name, no cancel flag, [`DEFAULT_LEASE`].
    pub fn new() -> RestoreOptions<'a> {
        RestoreOptions {
            name: None,
            cancel: None,
            lease: DEFAULT_LEASE,
        }
    }

    /// The name to restore as (`None`: the dumped filter's).
    pub fn name(mut self, name: Option<&'a str>) -> RestoreOptions<'a> {
        self.name = name;
        self
    }

    /// Cancels the restore once `flag` is true: it stops before its next
    /// write, deletes what it wrote and fails with
    /// [`Error::Cancelled`](crate::Error::Cancelled). A restore already
    /// published stays. Set it from a signal handler or another thread; an
    /// input that blocks a read is the caller's to interrupt (the
    /// `rotabloom` CLI reads it on a thread of its own).
    pub fn cancel_on(mut self, flag: &'a AtomicBool) -> RestoreOptions<'a> {
        self.cancel = Some(flag);
        self
    }

    /// The name to restore as, if given.
    pub(crate) fn target(&self) -> Option<&'a str> {
        self.name
    }

    /// The time to live of the blocks until the restore publishes them
    /// (at least [`MIN_LEASE`](super::lease::MIN_LEASE); default [`DEFAULT_LEASE`]).
    pub fn lease(mut self, lease: Duration) -> RestoreOptions<'a> {
        self.lease = lease;
        self
    }
}
