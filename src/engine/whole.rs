//! Clear and drop: a step per block, then a script over the filter's
//! keys, retried on a reloaded view when the filter changed meanwhile.

use super::trash::TrashMachine;
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
    /// A drop first deletes what rotations left in the trash.
    Trash(Box<TrashMachine>),
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

    fn trash(&mut self, mut m: Box<TrashMachine>, replies: Option<Replies>) -> Result<Poll<bool>> {
        match m.step(replies)? {
            Poll::Send(req) => {
                self.state = State::Trash(m);
                Ok(Poll::Send(req))
            }
            Poll::Ready(()) => self.send(0),
        }
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
            State::Start if self.which == Which::Drop => {
                self.trash(Box::new(TrashMachine::new(self.core.keys.clone())), None)
            }
            State::Start => self.send(0),
            State::Trash(m) => self.trash(m, replies),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{keys, view_of, ALL};
    use crate::view::Accept;
    use redis::Value;

    fn core(kind: &str, gens: u64) -> Core {
        Core::new(keys("t"), view_of(kind, gens), Accept::Any(ALL), Vec::new())
    }

    /// The command names of a request.
    fn names(req: &crate::exec::Request) -> Vec<String> {
        (0..req.len()).map(|i| req.args(i)[0].clone()).collect()
    }

    #[test]
    fn drop_frees_one_block_per_step_then_runs_its_script() {
        let core = core("circular", 3);
        let mut m = WholeMachine::new(core.clone(), Which::Drop);
        let mut unlinked = Vec::new();
        // First the trash: empty here.
        let Poll::Send(peek) = m.step(None).unwrap() else {
            panic!("a request first")
        };
        assert_eq!(names(&peek), ["LINDEX"]);
        let mut replies = Some(vec![Ok(Value::Nil)]);
        loop {
            match m.step(replies.take()).unwrap() {
                Poll::Send(req) => {
                    assert_eq!(req.len(), 1, "one command per round trip");
                    if names(&req) == ["UNLINK"] {
                        unlinked.push(req.args(0)[1].clone());
                        replies = Some(vec![Ok(Value::Int(1))]);
                    } else {
                        assert_eq!(names(&req), ["EVALSHA"]);
                        replies = Some(vec![Ok(Value::SimpleString("OK".into()))]);
                    }
                }
                Poll::Ready(there) => {
                    assert!(there);
                    break;
                }
            }
        }
        let view = core.view();
        let want = crate::proto::whole::drop_targets(&core.keys, &view);
        assert_eq!(unlinked, want, "every block, once, before the script");
        assert!(unlinked.iter().all(|k| k.contains(&view.uid)));
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
