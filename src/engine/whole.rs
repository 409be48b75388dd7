//! Clear and drop: a step per block, then a script over the filter's
//! keys, retried on a reloaded view when the filter changed meanwhile.

use super::Core;
use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies};
use crate::proto::whole::{self, Outcome};
use crate::proto::{load, take_one};
use crate::view::View;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    Clear,
    Drop,
}

enum State {
    Start,
    /// Blocks emptied (clear) or deleted (drop) so far.
    Zero(usize),
    Sent,
    Reload,
}

pub(crate) struct WholeMachine {
    core: Core,
    which: Which,
    view: Arc<View>,
    state: State,
    stalls: u32,
}

impl WholeMachine {
    pub fn new(core: Core, which: Which) -> WholeMachine {
        let view = core.view();
        WholeMachine {
            core,
            which,
            view,
            state: State::Start,
            stalls: 0,
        }
    }

    /// The next step: each block emptied (clear) or deleted (drop) in a
    /// call of its own, so that other clients' commands run between them;
    /// then one script: for a clear the counts and the fence, for a drop
    /// the view check and every key (the blocks gone already cost nothing
    /// then).
    fn send(&mut self, done: usize) -> Result<Poll<bool>> {
        let keys = &self.core.keys;
        let step = match self.which {
            Which::Clear => whole::zero_targets(keys, &self.view)
                .get(done)
                .map(|(key, how)| whole::zero_request(keys, &self.view, key, how)),
            Which::Drop => whole::drop_targets(keys, &self.view)
                .get(done)
                .map(|key| whole::unlink_request(key)),
        };
        if let Some(req) = step {
            self.state = State::Zero(done + 1);
            return Ok(Poll::Send(req));
        }
        self.state = State::Sent;
        Ok(Poll::Send(match self.which {
            Which::Clear => whole::clear_request(&self.core.keys, &self.view)?,
            Which::Drop => whole::drop_request(&self.core.keys, &self.view),
        }))
    }

    fn stale(&mut self) -> Result<Poll<bool>> {
        self.stalls += 1;
        if self.stalls > self.core.max_retries {
            return Err(self.core.contention(self.stalls));
        }
        self.state = State::Reload;
        Ok(Poll::Send(load::request(&self.core.keys)))
    }
}

impl Machine for WholeMachine {
    /// Whether the filter was there to clear or drop.
    type Output = bool;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<bool>> {
        match std::mem::replace(&mut self.state, State::Start) {
            State::Start => self.send(0),
            State::Zero(done) if self.which == Which::Drop => {
                // UNLINK's count: a block already gone is no matter.
                take_one(replies)??;
                self.send(done)
            }
            State::Zero(done) => match whole::decode(self.core.name(), take_one(replies)?)? {
                Outcome::Done => self.send(done),
                Outcome::Gone | Outcome::Stale => self.stale(),
            },
            State::Sent => match whole::decode(self.core.name(), take_one(replies)?)? {
                Outcome::Done => Ok(Poll::Ready(true)),
                Outcome::Gone => Ok(Poll::Ready(false)),
                Outcome::Stale => self.stale(),
            },
            State::Reload => {
                match load::decode(&self.core.keys, self.core.accept, take_one(replies)?) {
                    Ok(view) => {
                        self.view = self.core.publish(view)?;
                        self.send(0)
                    }
                    Err(Error::NotFound { .. }) => Ok(Poll::Ready(false)),
                    Err(e) => Err(e),
                }
            }
        }
    }
}
