//! Why a run stops taking batches. A failure stops everything. A refusal
//! (a full filter) stops the reading of new input, but not the batches a
//! resumed run owes: the interrupted run sent them, the server may hold
//! their answers, and each is handed on (printed) or stays listed in the
//! state file by itself, whatever another one met.

use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
pub struct Stop {
    refused: AtomicBool,
    failed: AtomicBool,
}

impl Stop {
    /// A batch was refused: no new input is read.
    pub fn refuse(&self) {
        self.refused.store(true, Ordering::Relaxed);
    }

    /// A batch failed (or the output did): nothing more is sent.
    pub fn fail(&self) {
        self.failed.store(true, Ordering::Relaxed);
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Either.
    pub fn any(&self) -> bool {
        self.failed() || self.refused.load(Ordering::Relaxed)
    }

    /// Whether a batch may still be sent: one of the resumed run's own
    /// after a refusal, none after a failure.
    pub fn lets(&self, resumed: bool) -> bool {
        match resumed {
            true => !self.failed(),
            false => !self.any(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_stops_new_batches_and_a_failure_every_batch() {
        let s = Stop::default();
        assert!(s.lets(false) && s.lets(true) && !s.any());
        s.refuse();
        assert!(!s.lets(false) && s.lets(true) && s.any() && !s.failed());
        s.fail();
        assert!(!s.lets(false) && !s.lets(true) && s.failed());
    }
}
