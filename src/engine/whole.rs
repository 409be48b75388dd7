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

    fn send(&mut self) -> Result<Poll<bool>> {
        self.state = State::Sent;
        Ok(Poll::Send(match self.which {
            Which::Clear => whole::clear_request(&self.core.keys, &self.view)?,
            Which::Drop => whole::drop_request(&self.core.keys, &self.view),
        }))
    }
}

impl Machine for WholeMachine {
    /// Whether the filter was there to clear or drop.
    type Output = bool;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<bool>> {
        match std::mem::replace(&mut self.state, State::Start) {
            State::Start => self.send(),
            State::Sent => match whole::decode(self.core.name(), take_one(replies)?)? {
                Outcome::Done => Ok(Poll::Ready(true)),
                Outcome::Gone => Ok(Poll::Ready(false)),
                Outcome::Stale => {
                    self.stalls += 1;
                    if self.stalls > self.core.max_retries {
                        return Err(self.core.contention(self.stalls));
                    }
                    self.state = State::Reload;
                    Ok(Poll::Send(load::request(&self.core.keys)))
                }
            },
            State::Reload => {
                match load::decode(&self.core.keys, self.core.accept, take_one(replies)?) {
                    Ok(view) => {
                        self.view = self.core.publish(view)?;
                        self.send()
                    }
                    Err(Error::NotFound { .. }) => Ok(Poll::Ready(false)),
                    Err(e) => Err(e),
                }
            }
        }
    }
}
