//! Adopting a legacy bitmap (`crate::legacy`): an existing filter is
//! compared and opened; otherwise the legacy keys are measured and judged,
//! the known items looked up, and only then is the filter created, the
//! keys moving into place in the same atomic step.

use super::create::create_whole;
use super::load::LoadMachine;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::legacy::check::{self, Verdict};
use crate::legacy::{Adoption, Legacy};
use crate::machine::{Machine, Poll};
use crate::metadata::field;
use crate::proto::create::{Blueprint, Opened};
use crate::request::Replies;
use crate::store::generation::Layout;
use crate::view::{Accept, View};

/// Where the adoption stands.
enum State {
    /// Is there a filter of that name already?
    Load(LoadMachine),
    /// The legacy keys are being measured.
    Measure,
    /// Known items `start..next` are being looked up, `absent` of those
    /// before missing (the first at `first_absent`).
    Verify {
        start: usize,
        next: usize,
        absent: u64,
        first_absent: Option<usize>,
        target: Target,
    },
    /// The create script (and the allocation before it) runs.
    Create(Box<dyn Machine<Output = (View, Opened)> + Send>),
    Done,
}

/// What a verification precedes.
enum Target {
    /// A new filter, from this measurement.
    New(Verdict),
    /// The filter adopted before (the items are looked up in its legacy
    /// generation).
    Existing(Box<View>),
}

/// Adoption: an existing filter is compared and opened; otherwise the
/// legacy keys are measured and judged, the known items looked up, and
/// only then is the filter created, the keys moving into place in the same
/// atomic step (so until that step succeeds they stay where they were).
struct AdoptMachine {
    keys: Keys,
    accept: Accept,
    bp: Blueprint,
    legacy: Legacy,
    known: Vec<Vec<u8>>,
    layout: Layout,
    /// The error rate of the new generations: a legacy bitmap answering
    /// more new items "seen" is adopted with a warning.
    error_rate: f64,
    /// The share of new items the legacy bitmap answers "seen".
    fpr: f64,
    state: State,
}

/// The adoption of `adoption` as generation 0 of the filter `bp` describes.
pub(crate) fn adopt(
    keys: Keys,
    accept: Accept,
    bp: Blueprint,
    adoption: Adoption,
    error_rate: f64,
) -> Result<impl Machine<Output = (View, Opened)> + Send> {
    let Adoption { legacy, known } = adoption;
    Ok(AdoptMachine {
        accept,
        layout: legacy.layout()?,
        state: State::Load(LoadMachine::new(keys.clone(), accept)),
        keys,
        bp,
        legacy,
        known,
        error_rate,
        fpr: 0.0,
    })
}

impl AdoptMachine {
    /// The filter exists: same parameters, legacy ones included, or an
    /// error; then its legacy generation must hold the known items.
    fn existing(&mut self, view: View) -> Result<Poll<(View, Opened)>> {
        view.check_params(&self.bp.params)?;
        check::compare(&view, &self.legacy, &self.layout)?;
        self.verify_from(0, 0, None, Target::Existing(Box::new(view)))
    }

    /// The keys the known items are looked up in.
    fn verify_keys(&self, target: &Target) -> Vec<String> {
        match target {
            Target::New(_) => self.legacy.keys(),
            Target::Existing(view) => match view.gens.first() {
                Some(g) => (0..g.layout.blocks)
                    .map(|b| self.keys.block(&view.uid, g.seq, b))
                    .collect(),
                None => Vec::new(),
            },
        }
    }

    /// The next round of the verification from item `next`, or what
    /// follows it.
    fn verify_from(
        &mut self,
        next: usize,
        absent: u64,
        first_absent: Option<usize>,
        target: Target,
    ) -> Result<Poll<(View, Opened)>> {
        if next < self.known.len() {
            let end = (next + check::verify_chunk(self.layout.hashes)).min(self.known.len());
            let items = self.known.get(next..end).unwrap_or_default();
            let req = check::verify_request(&self.layout, &self.verify_keys(&target), items);
            self.state = State::Verify {
                start: next,
                next: end,
                absent,
                first_absent,
                target,
            };
            return Ok(Poll::Send(req));
        }
        let doubt = match &target {
            Target::New(v) => v.doubt.as_ref(),
            Target::Existing(_) => None,
        };
        if let Some(i) = first_absent {
            let total = self.known.len() as u64;
            let first = self.known.get(i).map_or(&[][..], Vec::as_slice);
            return Err(check::unverified(&self.legacy, absent, total, first, doubt));
        }
        match target {
            Target::Existing(view) => {
                self.state = State::Done;
                Ok(Poll::Ready((*view, Opened::Existing)))
            }
            Target::New(verdict) => self.create(verdict),
        }
    }

    fn verified(&mut self, replies: Replies) -> Result<Poll<(View, Opened)>> {
        let State::Verify {
            start,
            next,
            absent,
            first_absent,
            target,
        } = std::mem::replace(&mut self.state, State::Done)
        else {
            return Err(Error::Internal("an adoption lost its verification".into()));
        };
        let items = self
            .known
            .get(start..next)
            .ok_or_else(|| Error::Internal("a verification round out of range".into()))?;
        let present = check::decode_verify(&self.layout, items, replies)?;
        let mut absent = absent;
        let mut first_absent = first_absent;
        for (i, p) in present.into_iter().enumerate() {
            if !p {
                absent += 1;
                first_absent.get_or_insert(start + i);
            }
        }
        self.verify_from(next, absent, first_absent, target)
    }

    fn measured(&mut self, replies: Replies) -> Result<Poll<(View, Opened)>> {
        let found = check::decode_measure(&self.legacy.keys(), replies)?;
        let verdict = check::judge(&self.legacy, &self.layout, &found)?;
        if self.known.is_empty() {
            if let Some(doubt) = verdict.doubt {
                return Err(doubt);
            }
        }
        self.verify_from(0, 0, None, Target::New(verdict))
    }

    /// Creates the filter, moving the legacy keys that exist into place in
    /// the create script itself.
    fn create(&mut self, verdict: Verdict) -> Result<Poll<(View, Opened)>> {
        let count = if verdict.items.is_finite() {
            verdict.items.ceil() as u64
        } else {
            u64::MAX / 2
        };
        let mut bp = self.bp.clone();
        bp.gens.insert(0, (self.layout, count.max(1)));
        bp.adopt = verdict.sources;
        bp.extra
            .push((field::LEGACY_SOURCE, self.legacy.source().to_string()));
        self.fpr = verdict.fpr;
        // The new generation is allocated whole before the filter is
        // listed, as at every creation; the adopted bitmap stays as it was.
        let mut m: Box<dyn Machine<Output = (View, Opened)> + Send> =
            Box::new(create_whole(self.keys.clone(), self.accept, bp));
        let first = m.step(None)?;
        self.state = State::Create(m);
        self.created(first)
    }

    /// The create machine's step: an existing filter found instead (another
    /// process adopted first) is compared like one found at the start.
    fn created(&mut self, poll: Poll<(View, Opened)>) -> Result<Poll<(View, Opened)>> {
        match poll {
            Poll::Ready((view, Opened::Existing)) => {
                self.state = State::Done;
                check::compare(&view, &self.legacy, &self.layout)?;
                Ok(Poll::Ready((view, Opened::Existing)))
            }
            Poll::Ready((view, Opened::Created)) => {
                self.state = State::Done;
                if self.fpr > self.error_rate {
                    log::warn!(
                        "{}: the adopted bitmap {:?} alone answers about {:.2}% of new items \
                         \"seen\", more than the error rate {} of the new generations",
                        self.keys.name(),
                        self.legacy.source(),
                        self.fpr * 100.0,
                        self.error_rate
                    );
                }
                Ok(Poll::Ready((view, Opened::Created)))
            }
            other => Ok(other),
        }
    }
}

impl Machine for AdoptMachine {
    type Output = (View, Opened);

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<(View, Opened)>> {
        match &mut self.state {
            State::Load(m) => match m.step(replies) {
                Ok(Poll::Send(req)) => Ok(Poll::Send(req)),
                Ok(Poll::Ready(view)) => self.existing(view),
                Err(Error::NotFound { .. }) => {
                    self.state = State::Measure;
                    Ok(Poll::Send(check::measure_request(&self.legacy.keys())))
                }
                Err(e) => Err(e),
            },
            State::Measure => self.measured(replies.unwrap_or_default()),
            State::Verify { .. } => self.verified(replies.unwrap_or_default()),
            State::Create(m) => {
                let poll = m.step(replies)?;
                self.created(poll)
            }
            State::Done => Err(Error::Internal("a finished adoption was stepped".into())),
        }
    }
}
