//! What an operation meets between its rounds: a stale snapshot (reload),
//! a due lazy rotation, growth, a conversion, or a failure to report.

use super::{DataMachine, DataOutput, State};
use crate::engine::roll::{DueRotation, RollMachine};
use crate::error::{Error, Result};
use crate::machine::{Machine, Poll};
use crate::proto::load;
use crate::proto::script::DataOp;
use crate::request::Replies;
use crate::view::View;
use std::sync::Arc;

impl DataMachine {
    pub(super) fn reload(&mut self) -> Result<Poll<DataOutput>> {
        self.state = State::Reload;
        Ok(Poll::Send(load::request(&self.core.keys)))
    }

    /// The rotation a lazy filter's deadline calls for, made at the instant
    /// the deadline was judged by (the caller's clock, or the server's as
    /// the atomic step read it): no second reading of the clock.
    pub(super) fn lazy_rotation(&mut self, judged_at: Option<i64>) -> Result<Poll<DataOutput>> {
        let at = self.clock_now.or_else(|| {
            judged_at
                .and_then(|ms| chrono::TimeZone::timestamp_millis_opt(&chrono::Utc, ms).single())
        });
        let mut m = Box::new(RollMachine::with_view(
            self.core.clone(),
            Arc::clone(&self.view),
            DueRotation::new(),
            at,
        ));
        match m.step(None)? {
            Poll::Send(req) => {
                self.state = State::Lazy(m);
                Ok(Poll::Send(req))
            }
            Poll::Ready(_) => self.reload(),
        }
    }

    pub(super) fn fail(&mut self, e: Error) -> Result<Poll<DataOutput>> {
        let view = self.core.view();
        let e = crate::store::missing_module(
            self.core.name(),
            view.gens.iter().map(|g| g.layout.store()),
            e,
        );
        if matches!(e, Error::ModuleMissing { .. }) {
            return Err(e);
        }
        if e.is_oom() {
            // Under maxmemory the server refuses every command queued in
            // MULTI, reads too; the data script reads whatever the memory
            // (it is only refused at a write). So a read goes on by the
            // script; a write is refused, and says why.
            if self.op == DataOp::Has && self.tx_ok {
                self.tx_ok = false;
                return self.next_round();
            }
            if let Error::Redis(r) = &e {
                return Err(Error::memory_full(self.core.name(), r.inner()));
            }
        }
        Err(e)
    }

    /// Steps the conversion; once done, goes on with the filter it made.
    pub(super) fn step_outgrow(
        &mut self,
        mut m: Box<dyn Machine<Output = View> + Send>,
        replies: Option<Replies>,
    ) -> Result<Poll<DataOutput>> {
        match m.step(replies)? {
            Poll::Send(req) => {
                self.state = State::Outgrow(m);
                Ok(Poll::Send(req))
            }
            Poll::Ready(view) => {
                self.view = self.core.publish(view)?;
                self.pace.progress = true;
                self.after_reload()
            }
        }
    }

    /// Steps a nested roll machine; when it is done, goes on with its view.
    pub(super) fn step_roll<D: crate::engine::roll::Decide>(
        &mut self,
        mut m: Box<RollMachine<D>>,
        replies: Option<Replies>,
        wrap: fn(Box<RollMachine<D>>) -> State,
    ) -> Result<Poll<DataOutput>> {
        match m.step(replies)? {
            Poll::Send(req) => {
                self.state = wrap(m);
                Ok(Poll::Send(req))
            }
            Poll::Ready(_) => {
                // A change of structure is the filter moving on: progress.
                // A due rotation that changed nothing is not, so a deadline
                // that never passes ends in Contention, not a loop.
                let view = m.view();
                if view.epoch != self.view.epoch || view.uid != self.view.uid {
                    self.pace.progress = true;
                }
                self.view = view;
                self.after_reload()
            }
        }
    }

    pub(super) fn after_reload(&mut self) -> Result<Poll<DataOutput>> {
        if self.pace.settle() > self.core.max_retries {
            return Err(self.core.contention(self.pace.stalls));
        }
        self.next_round()
    }
}
