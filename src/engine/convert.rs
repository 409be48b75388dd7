//! Converting a filter in place into another kind (a full base filter into
//! generation 0 of an expanding filter): load, ask the kind's [`Plan`],
//! run the conversion, reload and ask again, until the filter is what the
//! plan wants or the retry limit is spent. The kind supplies only the plan;
//! loading, fencing and retrying are the engine's, as for a roll.

use crate::engine::load::LoadMachine;
use crate::engine::machine::{Machine, Poll};
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::metadata::Kind;
use crate::proto::request::Replies;
use crate::proto::{convert, load, take_one};
use crate::view::{Accept, Codec, View};

/// What a filter calls for, as a kind's plan sees it.
pub(crate) enum Conversion {
    /// It already is what the conversion makes.
    Done,
    /// It is of kind `from`: it becomes a filter of `to`'s kind with
    /// these parameters.
    Set {
        from: Kind,
        to: Codec,
        fields: Vec<(&'static str, String)>,
    },
}

/// A kind's policy for converting a filter into it.
pub(crate) trait Plan: Send {
    fn plan(&mut self, view: &View) -> Result<Conversion>;
}

enum State {
    Load(LoadMachine),
    Converting,
    Reload,
}

/// The conversion machine.
pub(crate) struct ConvertMachine<P> {
    keys: Keys,
    accept: Accept,
    plan: P,
    state: State,
    stalls: u32,
    max_retries: u32,
}

impl<P: Plan> ConvertMachine<P> {
    /// Converts the filter under `keys`, reading it as one of `accept` (the
    /// kind it is converted from and the kind it becomes).
    pub fn new(keys: Keys, accept: Accept, plan: P, max_retries: u32) -> Self {
        ConvertMachine {
            state: State::Load(LoadMachine::new(keys.clone(), accept)),
            keys,
            accept,
            plan,
            stalls: 0,
            max_retries,
        }
    }

    fn decide(&mut self, view: View, retried: bool) -> Result<Poll<View>> {
        let (from, to, fields) = match self.plan.plan(&view)? {
            Conversion::Done => return Ok(Poll::Ready(view)),
            Conversion::Set { from, to, fields } => (from, to, fields),
        };
        if retried {
            // Changed under the conversion and still to convert.
            self.stalls += 1;
            if self.stalls > self.max_retries {
                return Err(Error::Contention {
                    name: view.name.clone(),
                    retries: self.stalls,
                });
            }
        }
        // What the filter will say once converted must read back as the
        // new kind: checked here, before anything is written, so a
        // conversion never leaves a filter nobody can open.
        let mut after = view.fields.clone();
        after
            .raw
            .insert(crate::metadata::field::KIND.into(), to.kind.as_str().into());
        for (f, v) in &fields {
            after.raw.insert((*f).into(), v.clone().into_bytes());
        }
        View::decode(after, None, "", Accept::One(to)).map_err(|e| {
            Error::Internal(format!(
                "converting filter {:?} would leave metadata that cannot be read ({e}); nothing was written",
                view.name
            ))
        })?;
        let epoch = view
            .epoch
            .checked_add(1)
            .ok_or_else(|| Error::LimitReached {
                name: view.name.clone(),
                limit: "the epoch cannot grow further".into(),
            })?;
        self.state = State::Converting;
        Ok(Poll::Send(convert::request(
            &self.keys, &view, epoch, from, to.kind, &fields,
        )))
    }
}

impl<P: Plan> Machine for ConvertMachine<P> {
    type Output = View;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<View>> {
        match std::mem::replace(&mut self.state, State::Reload) {
            State::Load(mut m) => match m.step(replies)? {
                Poll::Send(req) => {
                    self.state = State::Load(m);
                    Ok(Poll::Send(req))
                }
                Poll::Ready(view) => self.decide(view, false),
            },
            State::Converting => {
                // Converted by us, or STALE (changed meanwhile): either way
                // read what is there now and decide from that.
                take_one(replies)?.map_err(|e| Error::from_script(self.keys.name().as_str(), e))?;
                self.state = State::Reload;
                Ok(Poll::Send(load::request(&self.keys)))
            }
            State::Reload => {
                let view = load::decode(&self.keys, self.accept, take_one(replies)?)?;
                self.decide(view, true)
            }
        }
    }
}
