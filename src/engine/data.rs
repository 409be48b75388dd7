//! One data operation over a batch of items, in as many round trips as the
//! input size and concurrent changes of the filter require. Each round is
//! built from the machine's snapshot of the filter and decoded against the
//! same snapshot; a reload replaces the snapshot between rounds, never
//! during one.

use super::plan::{self, Pace, Path};
use super::roll::{DueRotation, Grow, RollMachine};
use super::Core;
use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies, Request};
use crate::hashing::ItemHash;
use crate::items::Items;
use crate::proto::script::{self, Batch, DataOp, Limit, Record, Status};
use crate::proto::txn::{self, RoundOf, TxOutcome, Verdict};
use crate::proto::{is_module_missing, load, now_arg, take_one};
use crate::view::{NewGen, Role, View};
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
    Commit(Vec<(u64, u64)>, Verdict),
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
    /// The items' hashes: all of them once a snapshot has a generation that
    /// places bits itself, none before.
    hashes: Vec<ItemHash>,
    /// The items themselves, always kept: a later snapshot of the same
    /// operation may need them (a RedisBloom or legacy generation).
    items: Items,
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
    pub fn new<I>(core: Core, op: DataOp, items: I) -> DataMachine
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let view = core.view();
        let items = Items::collect(items);
        let n = items.len();
        let clock_now = core.clock.now();
        DataMachine {
            tx_ok: core.transactions,
            core,
            op,
            out: vec![false; n],
            pending: (0..n).collect(),
            // Hashed by the first round whose snapshot places bits itself:
            // a filter all of whose generations are RedisBloom keys never
            // hashes (MD5 is a third of the client's work per item there).
            hashes: Vec::new(),
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
            hashes: &self.hashes,
            items: &self.items,
        }
    }

    /// `now` as the requests pass it: the caller's clock, read once when
    /// the operation began, or '' for the server's own (read inside each
    /// atomic step that needs it).
    fn now(&self) -> String {
        now_arg(self.clock_now)
    }

    /// Whether this operation's writes stop at the deciding generation's
    /// capacity: an expanding filter's always (it grows there); a
    /// RedisBloom generation's always (a non-scaling module filter refuses
    /// items past its capacity: writing on is not possible there); any
    /// other filter's unless the handle writes on past it
    /// (`when_full = warn`).
    fn limit(&self) -> Limit {
        let module = self
            .view
            .with_role(Role::Decide)
            .filter_map(|g| self.view.gens.get(g))
            .any(|g| g.layout.store().caps_itself());
        match (
            self.op,
            self.view.growth.is_capped() || module,
            self.core.when_full,
        ) {
            (DataOp::Has, _, _) => Limit::Open,
            (_, true, _) => Limit::Capacity,
            (_, false, crate::full::WhenFull::Warn) => Limit::Open,
            (_, false, _) => Limit::Capacity,
        }
    }

    /// The deciding generation of a write: its seq and capacity.
    fn decider(&self) -> Option<(u64, u64)> {
        if self.op == DataOp::Has {
            return None;
        }
        let g = self.view.with_role(Role::Decide).next()?;
        self.view.gens.get(g).map(|g| (g.seq, g.capacity))
    }

    /// A count a write reported for the current view's deciding generation.
    fn counted(&mut self, count: u64) {
        if let Some((seq, _)) = self.decider() {
            let before = self.count.filter(|(s, _)| *s == seq).map(|(_, c)| c);
            self.count = Some((seq, before.map_or(count, |c| c.max(count))));
        }
    }

    /// The next round, or the result when nothing is left.
    fn next_round(&mut self) -> Result<Poll<DataOutput>> {
        if self.hashes.len() < self.out.len() && needs_hashes(&self.view) {
            self.hashes = self.items.iter().map(ItemHash::of).collect();
        }
        if self.pending.is_empty() {
            if let (Some((seq, cap)), Some((s, count))) = (self.decider(), self.count) {
                if s == seq {
                    self.core.note_count(seq, cap, count);
                }
            }
            let prealloc = plan::prealloc_due(&self.view, self.fill)
                .filter(|g| self.core.claim_prealloc(g.seq))
                .map(|g| (g, Arc::clone(&self.view)));
            return Ok(Poll::Ready((std::mem::take(&mut self.out), prealloc)));
        }
        let view = Arc::clone(&self.view);
        let mut round = self.pace.round(&self.pending);
        round.truncate(plan::max_round_items(&view));
        let cache = self.core.cache.as_deref();
        let mirrored = plan::mirrored(&view, cache);
        let now = self.now();
        let tx_ok = self.tx_ok && !std::mem::take(&mut self.script_next);
        let path = plan::path(&view, self.op, tx_ok, round.len(), &mirrored);
        if matches!(path, Path::Tx { .. }) {
            // The script cuts its rounds into short calls itself; a
            // transaction is one atomic step, so its round is kept short.
            round.truncate(plan::MAX_ITEMS_PER_TX);
        }
        match path {
            Path::Script => {
                // Mirrored generations are looked up here; the script
                // confirms the findings with its view check.
                let mut local = script::Local::default();
                if !mirrored.is_empty() && self.op != DataOp::Add {
                    let found = plan::local_present(&view, cache, &mirrored, &round, self.batch());
                    local.present = round
                        .iter()
                        .zip(found)
                        .filter(|(_, f)| *f)
                        .map(|(&i, _)| i)
                        .collect();
                }
                local.mirrored = mirrored;
                let r = RoundOf {
                    keys: &self.core.keys,
                    view: &view,
                    round: &round,
                    batch: self.batch(),
                };
                let limit = self.limit();
                let (req, chunks) =
                    script::request(r, self.op, &now, self.record.as_ref(), &local, limit);
                self.state = State::Script(ScriptRound { chunks });
                Ok(Poll::Send(req))
            }
            Path::Tx { .. } if !self.core.watch_ok() => {
                self.state = State::Preflight;
                Ok(Poll::Send(txn::preflight_request(&self.core.keys)))
            }
            Path::Tx { read, serve } => {
                let local = match self.op {
                    DataOp::Add => vec![false; round.len()],
                    _ => plan::local_present(&view, cache, &mirrored, &round, self.batch()),
                };
                if read.is_empty() {
                    return Ok(Poll::Send(self.send_tx(view, round, local, &serve)));
                }
                let (req, sent) = txn::read_request(
                    RoundOf {
                        keys: &self.core.keys,
                        view: &view,
                        round: &round,
                        batch: self.batch(),
                    },
                    &read,
                    &now,
                );
                self.state = State::Read(ReadRound {
                    view,
                    round,
                    local,
                    serve,
                    sent,
                });
                Ok(Poll::Send(req))
            }
        }
    }

    fn send_tx(
        &mut self,
        view: Arc<View>,
        round: Vec<usize>,
        present: Vec<bool>,
        serve: &[usize],
    ) -> Request {
        let r = RoundOf {
            keys: &self.core.keys,
            view: &view,
            round: &round,
            batch: self.batch(),
        };
        let limit = self.limit();
        let (req, sent) = txn::tx_request(r, self.op, serve, &present, &self.now(), limit);
        self.state = State::Tx(TxRound {
            view,
            round,
            present,
            sent,
        });
        req
    }

    fn decided(&mut self, done: &mut [usize]) {
        if done.is_empty() {
            return;
        }
        self.pace.progress = true;
        done.sort_unstable();
        self.pending.retain(|i| done.binary_search(i).is_err());
    }

    fn on_script(&mut self, sent: ScriptRound, replies: Replies) -> Result<Poll<DataOutput>> {
        let mut done = Vec::new();
        let mut worst = Status::Ok;
        let mut judged_at = None;
        let mut first_err = None;
        if replies.len() != sent.chunks.len() {
            return Err(Error::Internal(
                "replies do not match the script calls".into(),
            ));
        }
        for (chunk, reply) in sent.chunks.iter().zip(replies) {
            match script::decode(self.core.name(), chunk.len(), reply) {
                Ok(c) => {
                    if let Some(f) = c.fill {
                        self.fill = Some(self.fill.map_or(f, |old| old.max(f)));
                    }
                    if let Some(n) = c.count {
                        self.counted(n);
                    }
                    if c.judged_at.is_some() {
                        judged_at = c.judged_at;
                    }
                    for (&i, &yes) in chunk.iter().zip(&c.answers) {
                        if let Some(slot) = self.out.get_mut(i) {
                            *slot = yes;
                        }
                        done.push(i);
                    }
                    // The most urgent status wins: a due rotation, then a
                    // stale view, then a full generation.
                    worst = match (worst, c.status) {
                        (Status::Due, _) | (_, Status::Due) => Status::Due,
                        (Status::Stale, _) | (_, Status::Stale) => Status::Stale,
                        (Status::Full, _) | (_, Status::Full) => Status::Full,
                        (Status::Busy, _) | (_, Status::Busy) => Status::Busy,
                        _ => Status::Ok,
                    };
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        self.decided(&mut done);
        if let Some(e) = first_err {
            return self.fail(e);
        }
        match worst {
            Status::Ok => self.next_round(),
            Status::Stale => self.reload(),
            Status::Due => self.lazy_rotation(judged_at),
            Status::Full => self.full(),
            Status::Busy => {
                // Room held by transactions in flight comes back within a
                // round trip or two (or lapses, if their writer died):
                // ask again, a bounded number of times, then take the
                // generation as full.
                self.busy += 1;
                if self.busy > BUSY_ROUNDS {
                    return self.full();
                }
                self.script_next = true;
                self.next_round()
            }
        }
    }

    /// The deciding generation is at its capacity and items are left: an
    /// expanding filter grows; a base filter whose handle says
    /// `when_full = expand` becomes one; any other write is refused from
    /// the first item that needed room, with the answers of those before.
    fn full(&mut self) -> Result<Poll<DataOutput>> {
        if self.view.growth.is_capped() {
            let mut m = Box::new(RollMachine::with_view(
                self.core.clone(),
                Arc::clone(&self.view),
                Grow,
                None,
            ));
            return match m.step(None)? {
                Poll::Send(req) => {
                    self.state = State::Grow(m);
                    Ok(Poll::Send(req))
                }
                Poll::Ready(_) => self.reload(),
            };
        }
        let (seq, capacity) = self.decider().unwrap_or((0, 0));
        let count = self.fill.unwrap_or(capacity);
        if let Some(m) = self.core.outgrow(self.view.kind) {
            // Once per handle and its clones, however many of their calls
            // meet it full.
            if self.core.first_warning(seq) {
                log::warn!(
                    "filter {:?} reached its capacity ({count} items of {capacity}): it becomes an expanding filter (when_full = expand), so its next items go to a new, bigger generation",
                    self.core.name()
                );
            }
            return self.step_outgrow(m, None);
        }
        let first = self.pending.first().copied().unwrap_or(self.out.len());
        let mut answered = std::mem::take(&mut self.out);
        answered.truncate(first);
        Err(Error::Full {
            name: self.core.name().to_string(),
            capacity,
            count,
            answered,
        })
    }

    fn on_read(&mut self, r: ReadRound, replies: Replies) -> Result<Poll<DataOutput>> {
        match txn::decode_read(&r.view, &r.sent, r.round.len(), replies) {
            Err(e) => self.fail(e),
            Ok(Err(v)) => self.after_verdict(v),
            Ok(Ok(read)) => {
                let present = r.local.iter().zip(read).map(|(a, b)| *a || b).collect();
                Ok(Poll::Send(self.send_tx(r.view, r.round, present, &r.serve)))
            }
        }
    }

    fn on_tx(&mut self, t: TxRound, replies: Replies) -> Result<Poll<DataOutput>> {
        // What the guard reserved, if it said OK: released or settled by
        // the commit whatever happened to the transaction after it.
        let count = txn::guard_fill(replies.get(1));
        let reserved = t.sent.reserve.clone().filter(|_| count.is_some());
        if let (Some(c), Some(r)) = (count, &reserved) {
            // An upper bound until the commit: enough to allocate the next
            // generation ahead of need in time.
            let f = c.saturating_add(r.items);
            self.fill = Some(self.fill.map_or(f, |old| old.max(f)));
        }
        let outcome = match txn::decode_tx(&t.view, self.op, &t.sent, &t.present, replies) {
            Ok(o) => o,
            Err(e) => {
                return match txn::commit_request(&self.core.keys, &t.view, reserved.as_ref(), &[]) {
                    Some(req) => {
                        self.state = State::Release(e);
                        Ok(Poll::Send(req))
                    }
                    None => self.fail(e),
                };
            }
        };
        let (added, verdict) = match outcome {
            TxOutcome::Aborted(Verdict::Full) => {
                // No room for the whole round: the script fills what is
                // left item by item, and says where it stopped.
                self.script_next = true;
                self.pace.progress = true;
                (Vec::new(), Verdict::Ok)
            }
            TxOutcome::Aborted(v) => (Vec::new(), v),
            TxOutcome::Applied { answers, added } => {
                let mut done = t.round.clone();
                for (&i, yes) in t.round.iter().zip(answers) {
                    if let Some(slot) = self.out.get_mut(i) {
                        *slot = yes;
                    }
                }
                self.decided(&mut done);
                (added, Verdict::Ok)
            }
        };
        // Counts follow the bits they describe; the reservation ends.
        match txn::commit_request(&self.core.keys, &t.view, reserved.as_ref(), &added) {
            Some(req) => {
                self.state = State::Commit(added, verdict);
                Ok(Poll::Send(req))
            }
            None => self.after_verdict(verdict),
        }
    }

    /// After a round's verdict: go on, reload, or rotate first.
    fn after_verdict(&mut self, v: Verdict) -> Result<Poll<DataOutput>> {
        match v {
            Verdict::Stale => self.reload(),
            Verdict::Due(judged_at) => self.lazy_rotation(judged_at),
            Verdict::Full => {
                self.script_next = true;
                self.next_round()
            }
            Verdict::Ok => {
                // Nothing done means other clients' guards aborted the
                // transaction: the view is current; try again, smaller.
                if self.pace.settle() > self.core.max_retries.saturating_mul(4) {
                    return Err(self.core.contention(self.pace.stalls));
                }
                self.next_round()
            }
        }
    }

    fn reload(&mut self) -> Result<Poll<DataOutput>> {
        self.state = State::Reload;
        Ok(Poll::Send(load::request(&self.core.keys)))
    }

    /// The rotation a lazy filter's deadline calls for, made at the instant
    /// the deadline was judged by (the caller's clock, or the server's as
    /// the atomic step read it): no second reading of the clock.
    fn lazy_rotation(&mut self, judged_at: Option<i64>) -> Result<Poll<DataOutput>> {
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

    fn fail(&mut self, e: Error) -> Result<Poll<DataOutput>> {
        if is_module_missing(&e) {
            return Err(Error::ModuleMissing {
                name: self.core.name().to_string(),
            });
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
    fn step_outgrow(
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
    fn step_roll<D: super::roll::Decide>(
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

    fn after_reload(&mut self) -> Result<Poll<DataOutput>> {
        if self.pace.settle() > self.core.max_retries {
            return Err(self.core.contention(self.pace.stalls));
        }
        self.next_round()
    }
}

impl Machine for DataMachine {
    type Output = DataOutput;

    fn allow_transactions(&mut self, yes: bool) {
        self.tx_ok = self.core.transactions && yes && self.record.is_none();
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<DataOutput>> {
        match std::mem::replace(&mut self.state, State::Start) {
            State::Start => self.next_round(),
            State::Script(r) => self.on_script(r, replies.unwrap_or_default()),
            State::Read(r) => self.on_read(r, replies.unwrap_or_default()),
            State::Tx(t) => self.on_tx(t, replies.unwrap_or_default()),
            State::Commit(added, verdict) => {
                // The bits are in; a count that could not be added is
                // reported rather than forgotten.
                let reply =
                    take_one(replies)?.map_err(|e| Error::from_script(self.core.name(), e))?;
                let seq = self.decider().map(|(s, _)| s);
                for (s, n) in txn::decode_commit(&added, reply)? {
                    if Some(s) == seq {
                        self.counted(n);
                    }
                }
                self.after_verdict(verdict)
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
                let view = match load::decode(&self.core.keys, self.core.accept, take_one(replies)?)
                {
                    Ok(v) => v,
                    Err(e) => return self.fail(e),
                };
                self.view = self.core.publish(view)?;
                self.after_reload()
            }
            State::Lazy(m) => self.step_roll(m, replies, State::Lazy),
            State::Grow(m) => self.step_roll(m, replies, State::Grow),
            State::Outgrow(m) => self.step_outgrow(m, replies),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The pure machine driven with canned replies: no server.
    use super::*;
    use crate::testkit::{fields, keys, view_at, view_of, ALL};
    use crate::view::Accept;
    use redis::Value;

    fn core(view: View) -> Core {
        let c = Core::new(keys("t"), view, Accept::Any(ALL), Vec::new());
        c.set_watch_ok();
        c
    }

    fn machine(core: &Core, op: DataOp, n: usize) -> DataMachine {
        let mut m = DataMachine::new(core.clone(), op, (0..n).map(|i| format!("item{i}")));
        m.allow_transactions(true);
        m
    }

    fn send(p: Poll<DataOutput>) -> Request {
        match p {
            Poll::Send(r) => r,
            Poll::Ready(_) => panic!("expected a request"),
        }
    }

    /// Replies to a transaction request: every command answered, each
    /// BITFIELD with `bit` for every position.
    fn tx_replies(req: &Request, bit: i64) -> Replies {
        let mut out: Replies = Vec::new();
        let mut results = Vec::new();
        for i in 0..req.len() {
            let args = req.args(i);
            match args[0].as_str() {
                "WATCH" | "MULTI" => out.push(Ok(Value::Okay)),
                "EVAL" => out.push(Ok(Value::BulkString(b"OK".to_vec()))),
                "EXEC" => out.push(Ok(Value::Array(std::mem::take(&mut results)))),
                "BITFIELD" | "BITFIELD_RO" => {
                    let n = args.iter().filter(|a| *a == "u1").count();
                    let v = Value::Array(vec![Value::Int(bit); n]);
                    if req.args(0)[0] == "WATCH" {
                        out.push(Ok(Value::SimpleString("QUEUED".into())));
                        results.push(v);
                    } else {
                        out.push(Ok(v));
                    }
                }
                other => panic!("unexpected command {other}"),
            }
        }
        out
    }

    #[test]
    fn a_reload_by_a_clone_between_build_and_decode_changes_nothing() {
        // Clone A builds a check-and-insert round over a query-all filter
        // of generations 0, 1, 2; clone B then loads the filter rotated
        // (generations 1, 2, 3). A's counts must go to generation 2, the
        // one its round wrote, and nothing may panic.
        let mut a = core(view_of("circular", 3));
        // Writes past capacity: no reservation, the commit adds the count.
        a.when_full = crate::full::WhenFull::Warn;
        let b = a.clone();
        let mut m = machine(&a, DataOp::CheckAdd, 20);
        let phase_a = send(m.step(None).unwrap());
        assert_eq!(phase_a.args(0)[0], "EVAL", "phase A opens with the guard");
        b.publish(view_at("circular", 3, 1)).unwrap();
        assert_eq!(a.view().epoch, 1, "the clones share the latest view");
        let tx = send(m.step(Some(tx_replies(&phase_a, 0))).unwrap());
        assert_eq!(tx.args(0)[0], "WATCH");
        let guard = tx.args(1);
        assert!(
            guard.contains(&"0123456789abcdef:0:0".to_string()),
            "built from A's snapshot"
        );
        let commit = send(m.step(Some(tx_replies(&tx, 0))).unwrap());
        let args = commit.args(0);
        assert_eq!(
            &args[args.len() - 2..],
            ["2", "20"],
            "credited to A's deciding generation"
        );
        match m
            .step(Some(vec![Ok(Value::Array(vec![Value::Int(20)]))]))
            .unwrap()
        {
            Poll::Ready((out, _)) => assert!(out.iter().all(|&new| new)),
            Poll::Send(_) => panic!("expected the answers"),
        }
    }

    #[test]
    fn a_clone_reloading_a_smaller_filter_cannot_make_a_decode_panic() {
        // A's round reads three generations; B then loads a re-created
        // filter with one. A decodes its replies against its own three.
        let a = core(view_of("expanding", 3));
        let b = a.clone();
        let mut m = machine(&a, DataOp::Has, 20);
        let tx = send(m.step(None).unwrap());
        let mut small = fields("expanding", 1, 0);
        small.raw.insert("uid".into(), b"fedcba9876543210".to_vec());
        let small = View::decode(small, None, "fence", Accept::Any(ALL)).unwrap();
        b.publish(small).unwrap();
        match m.step(Some(tx_replies(&tx, 1))).unwrap() {
            Poll::Ready((out, _)) => assert_eq!(out, vec![true; 20]),
            Poll::Send(_) => panic!("expected the answers"),
        }
    }

    #[test]
    fn a_big_batch_goes_in_transactions_of_bounded_size() {
        // Each transaction runs whole on the server: 2,500 items go in
        // three of at most MAX_ITEMS_PER_TX items each.
        let c = core(view_of("bloom", 1));
        let k = c.view().gens[0].layout.hashes as usize;
        let mut m = machine(&c, DataOp::Has, 2_500);
        let mut step = m.step(None).unwrap();
        let mut sizes = Vec::new();
        loop {
            match step {
                Poll::Send(req) => {
                    let bits: usize = (0..req.len())
                        .map(|i| req.args(i).iter().filter(|a| *a == "u1").count())
                        .sum();
                    sizes.push(bits / k);
                    step = m.step(Some(tx_replies(&req, 1))).unwrap();
                }
                Poll::Ready((out, _)) => {
                    assert_eq!(out, vec![true; 2_500]);
                    break;
                }
            }
        }
        assert_eq!(sizes, vec![1_000, 1_000, 500]);
    }

    #[test]
    fn a_round_holds_a_bounded_number_of_arguments() {
        // 40,000 items of a three-generation filter through the script (a
        // record forces it): about 500,000 arguments uncapped.
        let c = core(view_of("circular", 3));
        let record = Record {
            key: "rotabloom:{t}:done:0123456789abcdef".into(),
            ttl_ms: 1000,
        };
        let mut m = machine(&c, DataOp::CheckAdd, 40_000).with_record(record);
        let req = send(m.step(None).unwrap());
        let args: usize = (0..req.len()).map(|i| req.args(i).len()).sum();
        assert!(args <= 210_000, "{args} arguments in one round trip");
    }

    #[test]
    fn no_transaction_is_sent_before_the_server_accepted_watch() {
        let fresh = Core::new(keys("t"), view_of("bloom", 1), Accept::Any(ALL), Vec::new());
        let mut m = machine(&fresh, DataOp::CheckAdd, 20);
        let pre = send(m.step(None).unwrap());
        assert_eq!(
            (pre.args(0)[0].as_str(), pre.args(1)[0].as_str()),
            ("WATCH", "UNWATCH")
        );
        let denied = crate::testkit::server_error(
            "NOPERM User u has no permissions to run the 'watch' command",
        );
        match m.step(Some(vec![Err(denied), Ok(Value::Okay)])) {
            Err(Error::PermissionDenied { message }) => assert!(message.contains("watch")),
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("a transaction was sent after WATCH was refused"),
        }
        // Accepted: the transaction follows, and the next machine of the
        // handle goes straight to it.
        let mut m = machine(&fresh, DataOp::CheckAdd, 20);
        let pre = send(m.step(None).unwrap());
        let tx = send(m.step(Some(vec![Ok(Value::Okay); pre.len()])).unwrap());
        assert_eq!(tx.args(0)[0], "WATCH");
        assert_eq!(tx.args(2)[0], "MULTI");
        let mut again = machine(&fresh, DataOp::CheckAdd, 20);
        assert_eq!(send(again.step(None).unwrap()).args(2)[0], "MULTI");
    }

    #[test]
    fn a_script_round_that_finds_the_generation_full_appends_the_next() {
        let a = core(view_of("expanding", 1));
        let mut m = machine(&a, DataOp::CheckAdd, 4);
        let req = send(m.step(None).unwrap());
        assert_eq!(req.args(0)[0], "EVALSHA");
        // Two items written, the generation is full, two left.
        let full = Value::Array(vec![
            Value::BulkString(b"FULL".to_vec()),
            Value::Int(2),
            Value::BulkString(b"11".to_vec()),
            Value::Int(100),
        ]);
        // Allocation ahead of the new generation, then the roll.
        let alloc = send(m.step(Some(vec![Ok(full)])).unwrap());
        assert!(alloc
            .args(0)
            .contains(&"rotabloom:{t}:gen:0123456789abcdef-1:0".to_string()));
        let roll = send(
            m.step(Some(vec![Ok(Value::BulkString(b"GREW".to_vec()))]))
                .unwrap(),
        );
        let args = roll.args(0);
        assert_eq!(
            &args[6..12],
            ["0123456789abcdef", "0", "0", "1", "0,1", "2"]
        );
    }
}
