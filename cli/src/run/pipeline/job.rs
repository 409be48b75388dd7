//! A batch as the pipeline passes it from the reader to a worker (`Job`),
//! and the count of batches handed on that the reader waits for.

use crate::run::resume::Journal;
use rotabloom::ShardedBatch;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How often a waiting worker looks at the stop flag.
pub const POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// One batch: its place in the input and its lines.
pub struct Job {
    pub(super) seq: u64,
    /// Lines of the input before this batch.
    pub first: u64,
    pub lines: Vec<Vec<u8>>,
    /// Resumed: the token the interrupted run sent it under.
    pub(super) token: Option<String>,
    /// One of a resumed run's listed batches.
    pub(super) resumed: bool,
    /// Resumed although its record was gone.
    pub(super) lost: bool,
    pub(super) journal: Option<Arc<Journal>>,
    pub(super) window: Duration,
}

impl Job {
    /// `batch` (an idempotent batch of this job's lines) as it goes out:
    /// under the interrupted run's token when resumed, and written down in
    /// the state file before it is sent.
    pub fn prepare(&self, batch: ShardedBatch) -> anyhow::Result<ShardedBatch> {
        if batch.delivery() != rotabloom::Delivery::ExactlyOnce {
            // No record: nothing to name or to write down.
            return Ok(batch);
        }
        let batch = batch.with_retry_window(self.window);
        let batch = match &self.token {
            Some(t) => batch.with_token(t)?,
            None => batch,
        };
        if let Some(j) = &self.journal {
            j.sending(self.first, batch.token(), self.window)?;
        }
        Ok(batch)
    }
}

/// The count of batches handed on, which the reader waits for.
#[derive(Default)]
pub struct Progress {
    emitted: Mutex<u64>,
    moved: Condvar,
}

impl Progress {
    pub fn advance(&self) {
        let mut n = match self.emitted.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *n += 1;
        self.moved.notify_all();
    }

    /// Waits until batch `seq` is within `window` of what was handed on,
    /// or `stop()`.
    pub fn wait_for(&self, seq: u64, window: u64, stop: impl Fn() -> bool) {
        let mut n = match self.emitted.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        while seq >= *n + window && !stop() {
            n = match self.moved.wait_timeout(n, POLL) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}
