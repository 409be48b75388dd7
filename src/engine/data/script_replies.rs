//! The data script's replies: answers for a prefix of each call, and what
//! the most urgent status of the round calls for next (a reload, a due
//! rotation, growth, a refusal at capacity, or waiting for reserved room).

use super::{DataMachine, DataOutput, ScriptRound, State, BUSY_ROUNDS};
use crate::engine::roll::{Grow, RollMachine};
use crate::error::{Error, Result};
use crate::machine::{Machine, Poll};
use crate::proto::script::{self, Status};
use crate::request::Replies;
use std::sync::Arc;

impl DataMachine {
    pub(super) fn on_script(
        &mut self,
        sent: ScriptRound,
        replies: Replies,
    ) -> Result<Poll<DataOutput>> {
        let mut done = Vec::new();
        let mut worst = Status::Ok;
        let mut judged_at = None;
        let mut first_err = None;
        if replies.len() != sent.chunks.len() {
            return Err(Error::Internal(
                "replies do not match the script calls".into(),
            ));
        }
        for (chunk, reply) in sent.chunks.iter().zip(replies) {
            match script::decode(self.core.name(), chunk.len(), reply) {
                Ok(c) => {
                    if let Some(f) = c.fill {
                        self.fill = Some(self.fill.map_or(f, |old| old.max(f)));
                    }
                    if let Some(n) = c.count {
                        self.counted(n);
                    }
                    if c.judged_at.is_some() {
                        judged_at = c.judged_at;
                    }
                    for (&i, &yes) in chunk.iter().zip(&c.answers) {
                        if let Some(slot) = self.out.get_mut(i) {
                            *slot = yes;
                        }
                        done.push(i);
                    }
                    // The most urgent status wins: a due rotation, then a
                    // stale view, then a full generation.
                    worst = match (worst, c.status) {
                        (Status::Due, _) | (_, Status::Due) => Status::Due,
                        (Status::Stale, _) | (_, Status::Stale) => Status::Stale,
                        (Status::Full, _) | (_, Status::Full) => Status::Full,
                        (Status::Busy, _) | (_, Status::Busy) => Status::Busy,
                        _ => Status::Ok,
                    };
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        self.decided(&mut done);
        if let Some(e) = first_err {
            return self.fail(e);
        }
        match worst {
            Status::Ok => self.next_round(),
            Status::Stale => self.reload(),
            Status::Due => self.lazy_rotation(judged_at),
            Status::Full => self.full(),
            Status::Busy => {
                // Room held by transactions in flight comes back within a
                // round trip or two (or lapses, if their writer died):
                // ask again, a bounded number of times, then take the
                // generation as full.
                self.busy += 1;
                if self.busy > BUSY_ROUNDS {
                    return self.full();
                }
                self.script_next = true;
                self.next_round()
            }
        }
    }

    /// The deciding generation is at its capacity and items are left: an
    /// expanding filter grows; a base filter whose handle says
    /// `when_full = expand` becomes one; any other write is refused from
    /// the first item that needed room, with the answers of those before.
    pub(super) fn full(&mut self) -> Result<Poll<DataOutput>> {
        if self.view.growth.is_capped() {
            let mut m = Box::new(RollMachine::with_view(
                self.core.clone(),
                Arc::clone(&self.view),
                Grow,
                None,
            ));
            return match m.step(None)? {
                Poll::Send(req) => {
                    self.state = State::Grow(m);
                    Ok(Poll::Send(req))
                }
                Poll::Ready(_) => self.reload(),
            };
        }
        let (seq, capacity) = self.decider().unwrap_or((0, 0));
        let count = self.fill.unwrap_or(capacity);
        if let Some(m) = self.core.outgrow(self.view.kind) {
            // Once per handle and its clones, however many of their calls
            // meet it full.
            if self.core.first_warning(seq) {
                log::warn!(
                    "filter {:?} reached its capacity ({count} items of {capacity}): it becomes an expanding filter (when_full = expand), so its next items go to a new, bigger generation",
                    self.core.name()
                );
            }
            return self.step_outgrow(m, None);
        }
        let first = self.pending.first().copied().unwrap_or(self.out.len());
        let mut answered = std::mem::take(&mut self.out);
        answered.truncate(first);
        Err(Error::Full {
            name: self.core.name().to_string(),
            capacity,
            count,
            answered,
        })
    }
}
