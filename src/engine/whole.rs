//! Clear and drop: scripts over every key of the filter, retried on a
//! reloaded view when the filter changed meanwhile.

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
    /// Clearing: blocks emptied so far.
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

    /// The next step: for a clear, each block emptied in a call of its own
    /// (other clients' commands run between them), then the counts and the
    /// fence; for a drop, one call.
    fn send(&mut self, zeroed: usize) -> Result<Poll<bool>> {
        if self.which == Which::Clear {
            let targets = whole::zero_targets(&self.core.keys, &self.view);
            if let Some((key, how)) = targets.get(zeroed) {
                self.state = State::Zero(zeroed + 1);
                return Ok(Poll::Send(whole::zero_request(
                    &self.core.keys,
                    &self.view,
                    key,
                    how,
                )));
            }
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
