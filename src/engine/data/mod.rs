//! One data operation over a batch of items, in as many round trips as the
//! input size and concurrent changes of the filter require. Each round is
//! built from the machine's snapshot of the filter and decoded against the
//! same snapshot; a reload replaces the snapshot between rounds, never
//! during one.

use super::plan::Pace;
use super::roll::{DueRotation, Grow, RollMachine};
use super::Core;
use crate::error::{Error, Result};
use crate::items::Items;
use crate::machine::{Machine, Poll};
use crate::proto::script::{Batch, DataOp, Record};
use crate::proto::txn::{self, Verdict};
use crate::proto::{now_arg, take_one};
use crate::request::Replies;
use crate::view::{NewGen, View};
use std::sync::Arc;

/// A round sent through the script: each call's items.
struct ScriptRound {
    chunks: Vec<Vec<usize>>,
}

/// Phase A of a check-and-insert round sent.
struct ReadRound {
    view: Arc<View>,
    round: Vec<usize>,
    local: Vec<bool>,
    serve: Vec<usize>,
    sent: txn::ReadSent,
}

/// A guarded transaction sent.
struct TxRound {
    view: Arc<View>,
    round: Vec<usize>,
    present: Vec<bool>,
    sent: txn::TxSent,
}

enum State {
    Start,
    Script(ScriptRound),
    Read(ReadRound),
    Tx(TxRound),
    /// These (seq, delta) pairs are being added to the counts; then the
    /// round's verdict applies.
    Commit(Vec<(u64, i64)>, Verdict),
    /// The same commit, its one command sent in front of the next round's
    /// request (one round trip fewer per round of a long batch); then that
    /// round's replies go to its state.
    CommitThen(Vec<(u64, i64)>, Box<State>),
    /// A reservation is being released after a transaction that failed:
    /// then the failure.
    Release(Error),
    Preflight,
    Reload,
    Lazy(Box<RollMachine<DueRotation>>),
    Grow(Box<RollMachine<Grow>>),
    /// A full filter becoming one that grows (`when_full = expand`).
    Outgrow(Box<dyn Machine<Output = View> + Send>),
}

/// Per-item answers, and the generation to allocate ahead of need with the
/// view it belongs to.
pub(crate) type DataOutput = (Vec<bool>, Option<(NewGen, Arc<View>)>);

pub(crate) struct DataMachine {
    core: Core,
    op: DataOp,
    /// The items themselves, always kept: a later snapshot of the same
    /// operation may need them (a RedisBloom or legacy generation). Their
    /// hashes come with them, or are made by the first snapshot that has a
    /// generation that places bits itself.
    items: Arc<Items>,
    out: Vec<bool>,
    /// Undecided items, ascending.
    pending: Vec<usize>,
    view: Arc<View>,
    state: State,
    pace: Pace,
    /// The deciding generation's count after the last call that reported it.
    fill: Option<u64>,
    tx_ok: bool,
    /// Where each call keeps its answers for a retry, if it does.
    record: Option<Record>,
    /// The deciding generation's (seq, count) after the last write that
    /// reported it.
    count: Option<(u64, u64)>,
    /// The next round goes through the script: a transaction's guard found
    /// no room for it, and only the script fills the rest item by item.
    script_next: bool,
    /// Rounds that found the room left held by transactions in flight.
    busy: u32,
    /// The caller's clock, read once when the operation began (`None`:
    /// the server's).
    clock_now: Option<chrono::DateTime<chrono::Utc>>,
}

/// Rounds a write asks again while the room it needs is held by other
/// writers' transactions in flight, before it takes the generation as
/// full: each is one round trip, so about a tenth of a second.
const BUSY_ROUNDS: u32 = 1_000;

/// Whether some generation of `view` places bits itself (a bitmap).
fn needs_hashes(view: &View) -> bool {
    view.gens.iter().any(|g| g.layout.store().hashed())
}

impl DataMachine {
    pub fn new(core: Core, op: DataOp, items: Arc<Items>) -> DataMachine {
        let view = core.view();
        let n = items.len();
        let clock_now = core.clock.now();
        DataMachine {
            tx_ok: core.transactions,
            core,
            op,
            out: vec![false; n],
            pending: (0..n).collect(),
            items,
            view,
            state: State::Start,
            pace: Pace::new(),
            fill: None,
            record: None,
            count: None,
            script_next: false,
            busy: 0,
            clock_now,
        }
    }

    /// Keeps every answer in `record`, so that the same operation run again
    /// with the same record (after a lost reply) answers as the first run
    /// did. Only the data script keeps records: the transaction's answers
    /// exist only in its reply.
    pub fn with_record(mut self, record: Record) -> DataMachine {
        self.tx_ok = false;
        self.record = Some(record);
        self
    }

    fn batch(&self) -> Batch<'_> {
        Batch {
            hashes: self.items.hashes(),
            items: &self.items,
        }
    }

    /// The commit's reply: the counts it added. The bits are in; a count
    /// that could not be added is reported rather than forgotten.
    fn on_commit(
        &mut self,
        added: &[(u64, i64)],
        reply: redis::RedisResult<redis::Value>,
    ) -> Result<()> {
        let reply = reply.map_err(|e| Error::from_script(self.core.name(), e))?;
        let seq = self.decider().map(|(s, _)| s);
        for (s, n) in txn::decode_commit(added, reply)? {
            if Some(s) == seq {
                self.counted(n);
            }
        }
        Ok(())
    }

    /// `now` as the requests pass it: the caller's clock, read once when
    /// the operation began, or '' for the server's own (read inside each
    /// atomic step that needs it).
    fn now(&self) -> String {
        now_arg(self.clock_now)
    }
}

impl Machine for DataMachine {
    type Output = DataOutput;

    fn allow_transactions(&mut self, yes: bool) {
        self.tx_ok = self.core.transactions && yes && self.record.is_none();
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<DataOutput>> {
        self.advance(replies).map_err(|e| self.partial(e))
    }
}

impl DataMachine {
    /// A failure after some items were decided (an earlier atomic step of
    /// a long batch applied them): their answers are kept, in a
    /// [`Partial`](crate::Partial) naming the undecided ones. A refusal
    /// of a full generation says its own prefix.
    fn partial(&mut self, e: Error) -> Error {
        if self.pending.len() == self.out.len() || matches!(e, Error::Full { .. }) {
            return e;
        }
        let mut answers: Vec<Option<bool>> = self.out.iter().map(|&a| Some(a)).collect();
        for &i in &self.pending {
            answers[i] = None;
        }
        let items = std::mem::take(&mut self.pending);
        let failure = crate::error::ShardFailure::new(0, items, e);
        Error::Partial(Box::new(crate::error::Partial::new(
            self.core.name(),
            answers,
            vec![failure],
        )))
    }

    fn advance(&mut self, replies: Option<Replies>) -> Result<Poll<DataOutput>> {
        match std::mem::replace(&mut self.state, State::Start) {
            State::Start => self.next_round(),
            State::Script(r) => self.on_script(r, replies.unwrap_or_default()),
            State::Read(r) => self.on_read(r, replies.unwrap_or_default()),
            State::Tx(t) => self.on_tx(t, replies.unwrap_or_default()),
            State::Commit(added, verdict) => {
                self.on_commit(&added, take_one(replies)?)?;
                self.after_verdict(verdict)
            }
            State::CommitThen(added, then) => {
                let mut replies = replies.unwrap_or_default();
                if replies.is_empty() {
                    return Err(Error::Internal("no reply to a commit".into()));
                }
                let rest = replies.split_off(1);
                self.on_commit(&added, take_one(Some(replies))?)?;
                self.state = *then;
                self.step(Some(rest))
            }
            // The release's own outcome changes nothing: the failure is
            // what the caller hears.
            State::Release(e) => self.fail(e),
            State::Preflight => {
                txn::decode_preflight(replies.unwrap_or_default())?;
                self.core.set_watch_ok();
                self.next_round()
            }
            State::Reload => {
                self.view = match self.core.reloaded(take_one(replies)?) {
                    Ok(v) => v,
                    Err(e) => return self.fail(e),
                };
                self.after_reload()
            }
            State::Lazy(m) => self.step_roll(m, replies, State::Lazy),
            State::Grow(m) => self.step_roll(m, replies, State::Grow),
            State::Outgrow(m) => self.step_outgrow(m, replies),
        }
    }
}

mod capacity;
mod change;
mod round;
mod script_replies;
#[cfg(test)]
mod tests;
mod tx_replies;
