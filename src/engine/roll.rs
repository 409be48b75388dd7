//! Every structural change is one machine: decide from a view (and, for a
//! schedule, `now`), allocate the new generations, run the roll script,
//! reload, settle. Expansion, manual rotation, scheduled rotation and lazy
//! rotation differ only in their [`Decide`]; so does conversion
//! (`convert`), a roll that adds nothing.

use super::alloc::PreallocMachine;
use super::trash::TrashMachine;
use super::Core;
use crate::error::{Error, Result};
use crate::machine::{Machine, Poll};
use crate::proto::{load, roll, take_one};
use crate::request::{Replies, Request};
use crate::view::{Due, Growth, NewGen, Roll, View};
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// What a call to `rotate` or `rotate_if_due` did. Not rotating is an
/// expected outcome, not an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// This call rotated `rotations` times (more than once after missed
    /// runs, at most N).
    Rotated {
        /// Rotations performed.
        rotations: u32,
        /// The epoch (rotations so far) afterwards.
        epoch: u64,
        /// When the next scheduled rotation is due, if there is a schedule.
        next_at: Option<DateTime<Utc>>,
    },
    /// The current period's rotation is done (by this or another process).
    NotDue {
        /// When the next one is due.
        next_at: DateTime<Utc>,
    },
    /// A manual rotation lost the race: another process changed the filter
    /// since this handle last saw it, and the handle now holds that state.
    Superseded {
        /// The epoch now.
        epoch: u64,
    },
}

/// A decision of what to change.
pub(crate) enum Step<T> {
    Done(T),
    Roll(Roll),
}

/// One kind of structural change.
pub(crate) trait Decide: Send {
    type Output;

    /// Whether deciding needs `now` (schedules).
    fn needs_now(&self) -> bool {
        false
    }

    fn decide(&mut self, view: &View, now: Option<DateTime<Utc>>) -> Result<Step<Self::Output>>;

    /// After the roll script (`rolled`: this call changed the filter) and a
    /// reload: the outcome, or `None` to decide again on the new view.
    fn settle(&mut self, view: &View, rolled: bool) -> Result<Option<Self::Output>>;
}

enum State {
    Start,
    /// Allocating the new generations (and their bytes) before the roll.
    Alloc(Box<(PreallocMachine, Request, u64)>),
    Sent,
    /// Deleting the dropped generations' blocks, after the roll.
    Drain(Box<TrashMachine>),
    Reload(bool),
}

pub(crate) struct RollMachine<D> {
    core: Core,
    decide: D,
    view: Arc<View>,
    now: Option<DateTime<Utc>>,
    state: State,
    stalls: u32,
}

impl<D: Decide> RollMachine<D> {
    /// Starts from the handle's latest view.
    pub fn new(core: Core, decide: D) -> RollMachine<D> {
        let view = core.view();
        RollMachine::with_view(core, view, decide, None)
    }

    /// Starts from a given snapshot (and instant, if known).
    pub fn with_view(
        core: Core,
        view: Arc<View>,
        decide: D,
        now: Option<DateTime<Utc>>,
    ) -> RollMachine<D> {
        RollMachine {
            core,
            decide,
            view,
            now,
            state: State::Start,
            stalls: 0,
        }
    }

    /// The view the machine ended with (its snapshot after the last reload).
    pub fn view(&self) -> Arc<View> {
        Arc::clone(&self.view)
    }

    /// Steps the deletion of dropped blocks; then reloads.
    fn drain(
        &mut self,
        mut m: Box<TrashMachine>,
        replies: Option<Replies>,
    ) -> Result<Poll<D::Output>> {
        match m.step(replies)? {
            Poll::Send(req) => {
                self.state = State::Drain(m);
                Ok(Poll::Send(req))
            }
            Poll::Ready(_) => {
                self.state = State::Reload(true);
                Ok(Poll::Send(load::request(&self.core.keys)))
            }
        }
    }

    fn decide(&mut self) -> Result<Poll<D::Output>> {
        match self.decide.decide(&self.view, self.now)? {
            Step::Done(out) => Ok(Poll::Ready(out)),
            Step::Roll(r) => {
                let req = roll::request(&self.core.keys, &self.view, &r)?;
                let ahead: Vec<NewGen> = r
                    .add
                    .iter()
                    .enumerate()
                    .filter(|(i, g)| *i < r.allocate || g.layout.store().made_before_listed())
                    .map(|(_, g)| *g)
                    .collect();
                let mut alloc = PreallocMachine::new(&self.core.keys, &self.view, &ahead);
                match alloc.step(None)? {
                    Poll::Send(first) => {
                        let bytes = ahead
                            .iter()
                            .map(|g| g.layout.bytes())
                            .fold(0, u64::saturating_add);
                        self.state = State::Alloc(Box::new((alloc, req, bytes)));
                        Ok(Poll::Send(first))
                    }
                    Poll::Ready(()) => {
                        self.state = State::Sent;
                        Ok(Poll::Send(req))
                    }
                }
            }
        }
    }
}

impl<D: Decide> Machine for RollMachine<D> {
    type Output = D::Output;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<D::Output>> {
        match std::mem::replace(&mut self.state, State::Start) {
            State::Start => {
                // Time is an argument: whoever starts a scheduled decision
                // read the clock at the operation's edge.
                if self.decide.needs_now() && self.now.is_none() {
                    return Err(Error::Internal(
                        "a scheduled rotation was started without the time".into(),
                    ));
                }
                self.decide()
            }
            State::Alloc(mut pending) => match pending.0.step(replies).map_err(|e| {
                let bytes = pending.2;
                super::create::out_of_memory(self.core.name(), bytes, e)
            })? {
                Poll::Send(next) => {
                    self.state = State::Alloc(pending);
                    Ok(Poll::Send(next))
                }
                Poll::Ready(()) => {
                    self.state = State::Sent;
                    Ok(Poll::Send(pending.1))
                }
            },
            State::Sent => {
                let rolled = roll::decode(self.core.name(), take_one(replies)?)?;
                if rolled {
                    // The dropped generations' blocks are in the trash now.
                    return self.drain(Box::new(TrashMachine::new(self.core.keys.clone())), None);
                }
                self.state = State::Reload(false);
                Ok(Poll::Send(load::request(&self.core.keys)))
            }
            State::Drain(m) => self.drain(m, replies),
            State::Reload(rolled) => {
                self.view = self.core.reloaded(take_one(replies)?)?;
                if let Some(out) = self.decide.settle(&self.view, rolled)? {
                    return Ok(Poll::Ready(out));
                }
                self.stalls += 1;
                if self.stalls > self.core.max_retries {
                    return Err(self.core.contention(self.stalls));
                }
                self.decide()
            }
        }
    }
}

/// Appending the generation a full one calls for (expansion): `true` when
/// this call appended it. A filter that may not grow is
/// [`Error::LimitReached`].
pub(crate) struct Grow;

impl Decide for Grow {
    type Output = bool;

    fn decide(&mut self, view: &View, _: Option<DateTime<Utc>>) -> Result<Step<bool>> {
        match &view.growth {
            Growth::Capped(Ok(next)) => Ok(Step::Roll(Roll {
                drop: 0,
                add: vec![*next],
                expect: Vec::new(),
                set: Vec::new(),
                allocate: 1,
            })),
            Growth::Capped(Err(limit)) => Err(Error::LimitReached {
                name: view.name.clone(),
                limit: limit.clone(),
            }),
            Growth::Unbounded => Ok(Step::Done(false)),
        }
    }

    fn settle(&mut self, _: &View, rolled: bool) -> Result<Option<bool>> {
        Ok(Some(rolled))
    }
}

/// Growth up to an epoch (a sharded filter's expansion target,
/// docs/FORMAT.md §11.8): one generation appended unless the epoch has
/// reached `floor` (by this call, another process, or growth of its own);
/// `true` when this call appended it.
pub(crate) struct GrowTo(pub u64);

impl Decide for GrowTo {
    type Output = bool;

    fn decide(&mut self, view: &View, now: Option<DateTime<Utc>>) -> Result<Step<bool>> {
        match view.epoch >= self.0 {
            true => Ok(Step::Done(false)),
            false => Grow.decide(view, now),
        }
    }

    fn settle(&mut self, view: &View, rolled: bool) -> Result<Option<bool>> {
        Ok(match rolled {
            true => Some(true),
            false => (view.epoch >= self.0).then_some(false),
        })
    }
}

/// The rotations a schedule owes at `now`.
pub(crate) struct DueRotation {
    rotations: u32,
    next_at: Option<DateTime<Utc>>,
}

impl DueRotation {
    pub fn new() -> DueRotation {
        DueRotation {
            rotations: 0,
            next_at: None,
        }
    }
}

impl Decide for DueRotation {
    type Output = Rotation;

    fn needs_now(&self) -> bool {
        true
    }

    fn decide(&mut self, view: &View, now: Option<DateTime<Utc>>) -> Result<Step<Rotation>> {
        let now = now.ok_or_else(|| Error::Internal("a scheduled rotation without now".into()))?;
        match view.policy.due(view, now)? {
            Due::Unscheduled => Err(Error::InvalidParameter {
                name: "schedule",
                reason: format!("filter {:?} has no schedule; use rotate()", view.name),
            }),
            Due::Later { next_at } => Ok(Step::Done(Rotation::NotDue { next_at })),
            Due::Owed {
                roll,
                rotations,
                next_at,
            } => {
                self.rotations = rotations;
                self.next_at = Some(next_at);
                Ok(Step::Roll(roll))
            }
        }
    }

    fn settle(&mut self, view: &View, rolled: bool) -> Result<Option<Rotation>> {
        Ok(rolled.then(|| Rotation::Rotated {
            rotations: self.rotations,
            epoch: view.epoch,
            next_at: self.next_at,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::view_of;

    #[test]
    fn growth_to_an_epoch_reached_appends_nothing_and_one_short_appends_one() {
        let view = view_of("expanding", 1);
        let mut reached = GrowTo(view.epoch);
        assert!(matches!(reached.decide(&view, None), Ok(Step::Done(false))));
        let mut short = GrowTo(view.epoch + 1);
        match short.decide(&view, None) {
            Ok(Step::Roll(roll)) => assert_eq!((roll.drop, roll.add.len()), (0, 1)),
            _ => panic!("one generation owed"),
        }
        // Stale, and another process grew it: done, not grown by this call.
        let mut grown = GrowTo(view.epoch);
        assert_eq!(grown.settle(&view, false).unwrap(), Some(false));
        assert_eq!(short.settle(&view, true).unwrap(), Some(true));
        // Stale and still short: decide again.
        assert_eq!(short.settle(&view, false).unwrap(), None);
    }
}
