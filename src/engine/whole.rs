//! Clear and drop: a clear empties one block per step, then a script
//! counts it; a drop is one script, which removes the filter at once and
//! puts its blocks in the trash. Both are retried on a reloaded view when
//! the filter changed meanwhile.

use super::Core;
use crate::error::{Error, Result};
use crate::machine::{Machine, Poll};
use crate::proto::whole::{self, Outcome};
use crate::proto::{load, take_one};
use crate::request::Replies;
use crate::view::View;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    Clear,
    Drop,
}

enum State {
    Start,
    /// Blocks emptied so far (clear).
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
    /// A clear to this count: none once the filter has had that many.
    until: Option<u64>,
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
            until: None,
        }
    }

    /// A clear that stops as soon as the filter's `cleared` is `cleared`
    /// or more: a sharded filter's shard converging to its root's target
    /// (docs/FORMAT.md §11.8), cleared once however many runs do it.
    pub fn clear_to(core: Core, cleared: u64) -> WholeMachine {
        WholeMachine {
            until: Some(cleared),
            ..WholeMachine::new(core, Which::Clear)
        }
    }

    /// The next step: for a clear, each block emptied in a call of its
    /// own, so that other clients' commands run between them, then one
    /// script for the counts and the fence; for a drop, its one script
    /// (the blocks are deleted after it, from the trash: see
    /// [`leftovers`](super::trash::leftovers)).
    fn send(&mut self, done: usize) -> Result<Poll<bool>> {
        if done == 0 && self.until.is_some_and(|t| self.view.cleared >= t) {
            return Ok(Poll::Ready(true));
        }
        let keys = &self.core.keys;
        let step = match self.which {
            Which::Clear => whole::zero_targets(keys, &self.view)
                .get(done)
                .map(|(key, how)| whole::zero_request(keys, &self.view, key, how)),
            Which::Drop => None,
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
            State::Zero(done) => match whole::decode(self.core.name(), take_one(replies)?)? {
                Outcome::Done => self.send(done),
                Outcome::Gone | Outcome::Stale => self.stale(),
            },
            State::Sent => match whole::decode(self.core.name(), take_one(replies)?)? {
                Outcome::Done => Ok(Poll::Ready(true)),
                Outcome::Gone => Ok(Poll::Ready(false)),
                Outcome::Stale => self.stale(),
            },
            State::Reload => match self.core.reloaded(take_one(replies)?) {
                Ok(view) => {
                    self.view = view;
                    self.send(0)
                }
                Err(Error::NotFound { .. }) => Ok(Poll::Ready(false)),
                Err(e) => Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{keys, view_of, ALL};
    use crate::view::Accept;
    use redis::Value;

    fn core(kind: &str, gens: u64) -> Core {
        Core::new(keys("t"), view_of(kind, gens), Accept::Any(ALL))
    }

    /// The command names of a request.
    fn names(req: &crate::request::Request) -> Vec<String> {
        (0..req.len()).map(|i| req.args(i)[0].clone()).collect()
    }

    #[test]
    fn drop_is_one_script_over_the_metadata_the_fence_the_trash_and_the_blocks() {
        let core = core("circular", 3);
        let mut m = WholeMachine::new(core.clone(), Which::Drop);
        let Poll::Send(req) = m.step(None).unwrap() else {
            panic!("a request first")
        };
        assert_eq!(names(&req), ["EVALSHA"]);
        let view = core.view();
        let keys = &core.keys;
        let args = req.args(0);
        let mut want = vec![keys.meta().to_string(), keys.fence(), keys.trash()];
        want.extend(crate::proto::whole::drop_targets(keys, &view));
        assert_eq!(args[2], want.len().to_string());
        assert_eq!(&args[3..3 + want.len()], want.as_slice());
        assert_eq!(
            &args[3 + want.len()..],
            [
                view.uid.clone(),
                view.epoch.to_string(),
                view.cleared.to_string()
            ]
        );
        let ok = Some(vec![Ok(Value::SimpleString("OK".into()))]);
        assert!(matches!(m.step(ok), Ok(Poll::Ready(true))));
    }

    #[test]
    fn a_clear_to_a_count_already_reached_sends_nothing() {
        let core = core("bloom", 1);
        let cleared = core.view().cleared;
        let mut done = WholeMachine::clear_to(core.clone(), cleared);
        assert!(matches!(done.step(None).unwrap(), Poll::Ready(true)));
        let mut owed = WholeMachine::clear_to(core, cleared + 1);
        assert!(matches!(owed.step(None).unwrap(), Poll::Send(_)));
    }

    #[test]
    fn clear_empties_one_block_per_step() {
        let core = core("bloom", 1);
        let mut m = WholeMachine::new(core, Which::Clear);
        let Poll::Send(first) = m.step(None).unwrap() else {
            panic!("a request first")
        };
        assert_eq!(first.len(), 1);
        let Poll::Send(last) = m
            .step(Some(vec![Ok(Value::SimpleString("OK".into()))]))
            .unwrap()
        else {
            panic!("then the clear script")
        };
        assert_eq!(last.len(), 1);
        assert!(matches!(
            m.step(Some(vec![Ok(Value::SimpleString("OK".into()))])),
            Ok(Poll::Ready(true))
        ));
    }
}
