//! The generation machinery every filter kind shares: the client's cached
//! view of a filter, and the state machines of its operations. Pure: each
//! machine builds requests and decodes replies; `exec` runs them.

use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies, Request};
use crate::generation::Layout;
use crate::hashing::ItemHash;
use crate::keys::Keys;
use crate::metadata::{field, Kind, Meta};
use crate::scripts;
use redis::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Limits of one script call: arguments and items. Bigger inputs are cut
/// into several calls, pipelined in one round trip; small calls keep any one
/// script short (a few milliseconds), so other clients are not held up.
const MAX_ARGS_PER_CALL: usize = 16_000;
const MAX_ITEMS_PER_CALL: usize = 500;
/// Items per round trip, so a huge input does not build a huge request.
const MAX_ITEMS_PER_ROUND: usize = 100_000;
/// Consecutive reloads without progress before giving up with
/// [`Error::Contention`].
pub(crate) const DEFAULT_MAX_RETRIES: u32 = 32;

/// How a block is allocated ahead of need: zero bytes up to its size, or
/// (a RedisBloom generation) `BF.RESERVE`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Alloc {
    Bytes(u64),
    Module { error_rate: f64, capacity: u64 },
}

/// A block to allocate: key, how, and its generation's seq.
pub(crate) type Block = (String, Alloc, u64);

/// A filter handle's shared state: its key names and its view of the
/// metadata. Cloning is cheap; clones share the view, so one reload serves
/// them all. Owns no connection.
#[derive(Clone, Debug)]
pub(crate) struct Core {
    pub keys: Keys,
    view: Arc<Mutex<Arc<Meta>>>,
    pub max_retries: u32,
    /// What the handle was opened as: a re-created filter (new uid) must
    /// still match, or the handle refuses to use it.
    kind: Kind,
    expect: Arc<Vec<(&'static str, String)>>,
    /// 1 + the seq of the last generation this handle family allocated
    /// ahead of need, so each process does it once.
    preallocated: Arc<AtomicU64>,
    /// Where `now` comes from for schedules (default: the server's clock).
    pub clock: Arc<dyn crate::Clock>,
    /// Frozen generations mirrored in memory, if enabled.
    pub cache: Option<Arc<crate::cache::FrozenCache>>,
}

impl Core {
    pub fn new(keys: Keys, meta: Meta, expect: Vec<(&'static str, String)>) -> Core {
        Core {
            keys,
            kind: meta.kind,
            view: Arc::new(Mutex::new(Arc::new(meta))),
            max_retries: DEFAULT_MAX_RETRIES,
            expect: Arc::new(expect),
            preallocated: Arc::new(AtomicU64::new(0)),
            clock: Arc::new(crate::ServerClock),
            cache: None,
        }
    }

    /// Marks `seq` as allocated ahead of need; false if it already was.
    pub fn claim_prealloc(&self, seq: u64) -> bool {
        self.preallocated.swap(seq + 1, Ordering::Relaxed) != seq + 1
    }

    /// Block keys and sizes of the given generations (by layout).
    pub fn blocks_of(&self, meta: &Meta, gens: &[(u64, Layout, u64)]) -> Vec<Block> {
        gens.iter()
            .flat_map(|(seq, layout, capacity)| {
                let alloc = if layout.scheme.is_module() {
                    Alloc::Module {
                        error_rate: layout.error_rate_at(*capacity),
                        capacity: *capacity,
                    }
                } else {
                    Alloc::Bytes(layout.block_bits().div_ceil(8))
                };
                (0..layout.blocks)
                    .map(move |b| (self.keys.block(&meta.uid, *seq, b), alloc.clone(), *seq))
            })
            .collect()
    }

    /// Installs a freshly loaded view, after checking that a re-created
    /// filter is still what this handle was opened as.
    pub fn accept(&self, meta: Meta) -> Result<()> {
        // A filter converted to another kind is refused by handles of the
        // old kind; a re-created one must also match what was asked for.
        meta.check_kind(self.kind)?;
        if meta.uid != self.view().uid {
            meta.check_params(&self.expect)?;
        }
        if let Some(cache) = &self.cache {
            cache.retain(&meta);
        }
        self.set_view(meta);
        Ok(())
    }

    /// The current view. A poisoned lock still holds a valid `Arc`, so it is
    /// used rather than propagated as a panic.
    pub fn view(&self) -> Arc<Meta> {
        match self.view.lock() {
            Ok(g) => Arc::clone(&g),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    fn set_view(&self, meta: Meta) {
        let meta = Arc::new(meta);
        match self.view.lock() {
            Ok(mut g) => *g = meta,
            Err(p) => *p.into_inner() = meta,
        }
    }

    /// Every block key of every generation in `meta`.
    pub fn all_block_keys(&self, meta: &Meta) -> Vec<String> {
        meta.gens
            .iter()
            .flat_map(|g| (0..g.layout.blocks).map(move |b| self.keys.block(&meta.uid, g.seq, b)))
            .collect()
    }

    pub fn name(&self) -> &str {
        self.keys.name().as_str()
    }
}

// ---------------------------------------------------------------------------
// Reply decoding helpers

pub(crate) fn take_one(replies: Option<Replies>) -> Result<redis::RedisResult<Value>> {
    replies
        .and_then(|r| r.into_iter().next())
        .ok_or_else(|| Error::UnexpectedReply("empty reply".into()))
}

fn as_string(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Okay => Some("OK".into()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

fn unexpected(what: &str, v: &Value) -> Error {
    Error::UnexpectedReply(format!("{what}: {v:?}"))
}

/// Decodes the field/value pairs of an HGETALL reply (RESP2 array or RESP3
/// map).
pub(crate) fn decode_pairs(v: Value) -> Result<BTreeMap<String, String>> {
    redis::from_redis_value::<BTreeMap<String, String>>(v)
        .map_err(|e| Error::UnexpectedReply(format!("metadata hash: {e}")))
}

/// Decodes HGETALL into a view; an empty hash is a missing filter.
pub(crate) fn decode_meta(name: &str, reply: redis::RedisResult<Value>) -> Result<Meta> {
    let pairs = decode_pairs(reply?)?;
    if pairs.is_empty() {
        return Err(Error::NotFound {
            name: name.to_string(),
        });
    }
    Meta::decode(name, pairs)
}

pub(crate) fn is_wrongtype(e: &Error) -> bool {
    matches!(e, Error::Redis(r) if r.inner().code() == Some("WRONGTYPE")
        || r.inner().to_string().contains("WRONGTYPE"))
}

/// `TYPE` of each key, to name the culprit of a WRONGTYPE error.
pub(crate) fn type_probe(keys: &[(String, &'static str)]) -> Request {
    let mut req = Request::new();
    for (k, _) in keys {
        req.push(redis::cmd("TYPE").arg(k).clone(), None);
    }
    req
}

/// Turns the replies of [`type_probe`] into the error naming the first key
/// of an unexpected type, or `original` when all look right (the key was
/// changed back meanwhile).
pub(crate) fn type_verdict(
    keys: &[(String, &'static str)],
    replies: Option<Replies>,
    original: Error,
) -> Error {
    let replies = replies.unwrap_or_default();
    for ((key, expected), r) in keys.iter().zip(replies) {
        if let Ok(v) = r {
            if let Some(t) = as_string(&v) {
                if t != "none" && t != *expected {
                    return Error::WrongType {
                        key: key.clone(),
                        found: t,
                        expected,
                    };
                }
            }
        }
    }
    original
}

pub(crate) fn hgetall(keys: &Keys) -> Request {
    Request::new().cmd(redis::cmd("HGETALL").arg(keys.meta()).clone())
}

// ---------------------------------------------------------------------------
// Which generations an operation reads and writes

/// A generation's part in a data operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Only queried.
    Query,
    /// Written, and its old bits decide whether an item was new.
    Decide,
    /// Written with what the decide generation accepted.
    Write,
}

impl Role {
    fn code(self) -> &'static str {
        match self {
            Role::Query => "q",
            Role::Decide => "d",
            Role::Write => "w",
        }
    }
}

/// The part each generation plays, by kind (and mode); index into `gens`.
pub(crate) fn roles(meta: &Meta) -> Result<Vec<(usize, Role)>> {
    let n = meta.gens.len();
    let query_all = || {
        let mut r: Vec<(usize, Role)> = (0..n - 1).map(|i| (i, Role::Query)).collect();
        r.push((n - 1, Role::Decide));
        r
    };
    Ok(match meta.kind {
        Kind::Bloom => vec![(n - 1, Role::Decide)],
        Kind::Expanding => query_all(),
        Kind::Circular => match crate::circular::Mode::from_meta(meta)? {
            crate::circular::Mode::InsertNewestQueryAll => query_all(),
            crate::circular::Mode::InsertAllQueryOldest => {
                let mut r = vec![(0, Role::Decide)];
                r.extend((1..n).map(|i| (i, Role::Write)));
                r
            }
        },
    })
}

/// What the data script does when the decide generation fills up.
pub(crate) enum Growth {
    /// Nothing: capacity is advisory (base and circular filters).
    Unbounded,
    /// The generation may not pass its capacity, and nothing can be added.
    Limit,
    /// Add this generation when the decide generation is full.
    Next {
        seq: u64,
        layout: Layout,
        capacity: u64,
    },
}

impl Growth {
    fn arg(&self) -> String {
        match self {
            Growth::Unbounded => String::new(),
            Growth::Limit => "LIMIT".into(),
            Growth::Next {
                seq,
                layout,
                capacity,
            } => format!(
                "{seq}|{}|{}|{}|{capacity}|{}",
                layout.bits,
                layout.hashes,
                layout.blocks,
                layout.scheme.as_str()
            ),
        }
    }
}

/// The generation that will be added next, if the kind adds any: its keys
/// may exist ahead of need.
pub(crate) fn pending_generation(meta: &Meta) -> Option<(u64, Layout, u64)> {
    match growth(meta) {
        Ok(Growth::Next {
            seq,
            layout,
            capacity,
        }) => Some((seq, layout, capacity)),
        _ => match meta.kind {
            Kind::Circular => Some((meta.next_seq, meta.newest().layout, meta.newest().capacity)),
            _ => None,
        },
    }
}

fn growth(meta: &Meta) -> Result<Growth> {
    match meta.kind {
        Kind::Expanding => crate::expanding::growth(meta),
        _ => Ok(Growth::Unbounded),
    }
}

// ---------------------------------------------------------------------------
// Data operations

/// The three data operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DataOp {
    /// Insert; true when the write changed the filter.
    Add,
    /// Query; true when present.
    Has,
    /// Check-and-insert; true when the item was new.
    CheckAdd,
}

impl DataOp {
    fn code(self) -> &'static str {
        match self {
            DataOp::Add => "add",
            DataOp::Has => "has",
            DataOp::CheckAdd => "cai",
        }
    }
}

enum DataState {
    Idle,
    Sent(Vec<Vec<usize>>),
    Reload,
    Probe(Vec<(String, &'static str)>, Option<Error>),
    /// A lazily rotated filter came due: rotate first, then go on.
    Rotate(Box<crate::circular::RotateMachine>),
    /// Fast path, phase A of a check-and-insert: the frozen generations
    /// read (not in a transaction: they cannot change under the same fence).
    FastRead(Vec<usize>, Vec<crate::txn::Part>, Vec<bool>),
    /// Fast path: the guarded transaction; `present` is per round item.
    FastTx(
        Vec<usize>,
        Vec<(std::ops::Range<usize>, Vec<crate::txn::Part>)>,
        Vec<bool>,
    ),
    /// Fast path: counts committed, then the guard's verdict acted on.
    CommitVerdict(crate::txn::Verdict),
    /// Fast path: counts committed, then an error reported.
    CommitThen(Box<Error>),
    /// Fast path: the counts of the last transaction.
    Commit,
}

/// What one chunk's reply asks for.
enum After {
    Continue,
    Reload,
    Rotate,
}

/// Runs one data operation over a batch of items, in as many round trips as
/// the input size and concurrent changes of the filter require.
pub(crate) struct DataMachine {
    core: Core,
    op: DataOp,
    hashes: Vec<ItemHash>,
    /// The items themselves, kept only when a generation's scheme needs
    /// more than their MD5 (an adopted legacy bitmap).
    items: Vec<Vec<u8>>,
    out: Vec<bool>,
    /// Undecided items, ascending.
    pending: Vec<usize>,
    state: DataState,
    stalls: u32,
    progress: bool,
    /// The decide generation's count after the last call that reported it.
    fill: Option<u64>,
    /// Whether the connection can run the guarded-transaction path (the
    /// blocking cluster connection cannot pipeline a transaction).
    tx_ok: bool,
    /// Items per round; halved after a round without progress.
    round_limit: usize,
}

/// Items per guarded transaction of the fast path.
const SUBTX_ITEMS: usize = MAX_ITEMS_PER_ROUND;

/// Batches smaller than this take the scripted path.
const FAST_MIN_ITEMS: usize = 16;

/// Fill ratio of the newest generation at which the next one is allocated.
const PREALLOC_AT: f64 = 0.5;

impl DataMachine {
    pub fn new<I>(core: Core, op: DataOp, items: I) -> DataMachine
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let keep = core
            .view()
            .gens
            .iter()
            .any(|g| g.layout.scheme.needs_item());
        let mut kept = Vec::new();
        let hashes: Vec<ItemHash> = items
            .into_iter()
            .map(|item| {
                if keep {
                    kept.push(item.as_ref().to_vec());
                }
                ItemHash::of(item)
            })
            .collect();
        let n = hashes.len();
        DataMachine {
            core,
            op,
            items: kept,
            out: vec![false; n],
            pending: (0..n).collect(),
            hashes,
            state: DataState::Idle,
            stalls: 0,
            progress: false,
            fill: None,
            tx_ok: false,
            round_limit: MAX_ITEMS_PER_ROUND,
        }
    }

    /// Whether this round can take the guarded-transaction path: every read;
    /// writes of filters without a capacity limit whose check-and-insert
    /// needs no second write after the decision.
    fn fast(&self, meta: &Meta) -> Result<bool> {
        // A handful of items: one script call is one round trip, where the
        // transaction needs two (its counts follow it).
        if !self.tx_ok || self.pending.len() < FAST_MIN_ITEMS {
            return Ok(false);
        }
        Ok(match (self.op, meta.kind) {
            (DataOp::Has, _) => true,
            (_, Kind::Expanding) => false,
            (DataOp::Add, _) => true,
            (DataOp::CheckAdd, Kind::Bloom) => true,
            (DataOp::CheckAdd, Kind::Circular) => {
                crate::circular::Mode::from_meta(meta)?
                    == crate::circular::Mode::InsertNewestQueryAll
            }
        })
    }

    fn now_arg(&self) -> String {
        self.core
            .clock
            .now()
            .map(|t| t.timestamp_millis().to_string())
            .unwrap_or_default()
    }

    fn round(&self) -> Vec<usize> {
        self.pending
            .iter()
            .copied()
            .take(self.round_limit)
            .collect()
    }

    /// A round that made no progress (the filter changed under it, or
    /// other clients' guards aborted it) is retried smaller: a round short
    /// enough to finish between two changes of a busy filter always makes
    /// progress.
    fn shrink(&mut self) {
        self.round_limit = (self.round_limit / 2).max(FAST_MIN_ITEMS);
    }

    /// Query-only generations mirrored in memory.
    fn cached(&self, meta: &Meta) -> Result<Vec<(usize, Arc<crate::cache::Frozen>)>> {
        let Some(cache) = &self.core.cache else {
            return Ok(Vec::new());
        };
        Ok(roles(meta)?
            .into_iter()
            .filter(|(_, r)| *r == Role::Query)
            .filter_map(|(g, _)| cache.get(meta, meta.gens[g].seq).map(|f| (g, f)))
            .collect())
    }

    /// The roles the server must serve: all but the mirrored generations.
    fn server_roles(&self, meta: &Meta) -> Result<Vec<(usize, Role)>> {
        let cached = self.cached(meta)?;
        Ok(roles(meta)?
            .into_iter()
            .filter(|(g, _)| !cached.iter().any(|(c, _)| c == g))
            .collect())
    }

    /// Per round item: whether a mirrored generation holds it. Provisional
    /// until the round's guard confirms the view.
    fn local_present(&self, meta: &Meta, round: &[usize]) -> Result<Vec<bool>> {
        let cached = self.cached(meta)?;
        Ok(round
            .iter()
            .map(|&i| {
                let item = self.items.get(i).map(Vec::as_slice);
                cached
                    .iter()
                    .any(|(_, f)| f.contains(&self.hashes[i], item))
            })
            .collect())
    }

    /// The guarded transactions over `round`: one per `SUBTX_ITEMS` items,
    /// pipelined in one round trip, so that the server runs the first while
    /// the next arrive and its replies flow back while it runs the rest, as
    /// with plain pipelining (a single transaction would queue everything
    /// until EXEC). Each is guarded on its own and decides its own items.
    fn fast_tx(&mut self, meta: &Meta, round: Vec<usize>, present: Vec<bool>) -> Result<Request> {
        let roles = self.server_roles(meta)?;
        let now = self.now_arg();
        let mut req = Request::new();
        let mut subs = Vec::new();
        for start in (0..round.len()).step_by(SUBTX_ITEMS) {
            let end = (start + SUBTX_ITEMS).min(round.len());
            req.push(
                redis::cmd("WATCH").arg(self.core.keys.fence()).clone(),
                None,
            );
            req.push(crate::txn::guard(&self.core, meta, &now), None);
            req.push(redis::cmd("MULTI"), None);
            // The items this transaction writes or reads, and where they
            // sit in the round.
            let positions: Vec<usize> = match self.op {
                DataOp::CheckAdd => (start..end).filter(|&p| !present[p]).collect(),
                _ => (start..end).collect(),
            };
            let ids: Vec<usize> = positions.iter().map(|&p| round[p]).collect();
            let mut parts = Vec::new();
            for (g, role) in &roles {
                let (take, set) = match (self.op, role) {
                    (DataOp::Has, Role::Write) => (false, false),
                    (DataOp::Has, _) => (true, false),
                    (DataOp::Add, Role::Query) => (false, true),
                    (DataOp::Add, _) => (true, true),
                    (DataOp::CheckAdd, Role::Decide) => (true, true),
                    (DataOp::CheckAdd, _) => (false, true),
                };
                if take && !ids.is_empty() {
                    let mut sub = Vec::new();
                    crate::txn::bitfields(
                        &self.core,
                        meta,
                        *g,
                        set,
                        &ids,
                        &self.hashes,
                        &self.items,
                        &mut req,
                        &mut sub,
                    );
                    for mut part in sub {
                        part.items = part.items.iter().map(|&c| positions[c]).collect();
                        parts.push(part);
                    }
                }
            }
            req.push(redis::cmd("EXEC"), None);
            subs.push((start..end, parts));
        }
        self.state = DataState::FastTx(round, subs, present);
        Ok(req)
    }

    /// Phase A of a check-and-insert: read the generations that are only
    /// queried, with the guard telling whether the view was current.
    fn fast_read(&mut self, meta: &Meta, round: Vec<usize>, local: Vec<bool>) -> Result<Request> {
        let roles = self.server_roles(meta)?;
        let mut req = Request::new();
        req.push(crate::txn::guard(&self.core, meta, &self.now_arg()), None);
        let mut parts = Vec::new();
        for (g, role) in &roles {
            if *role == Role::Query {
                crate::txn::bitfields(
                    &self.core,
                    meta,
                    *g,
                    false,
                    &round,
                    &self.hashes,
                    &self.items,
                    &mut req,
                    &mut parts,
                );
            }
        }
        self.state = DataState::FastRead(round, parts, local);
        Ok(req)
    }

    fn build(&mut self) -> Result<Request> {
        let meta = self.core.view();
        if !self.fast(&meta)? {
            return self.build_lua();
        }
        let round = self.round();
        self.fast_round(&meta, round)
    }

    /// One fast round: local decisions from the mirror, then (for a
    /// check-and-insert with unmirrored frozen generations) phase A, then
    /// the transaction.
    fn fast_round(&mut self, meta: &Meta, round: Vec<usize>) -> Result<Request> {
        let local = match self.op {
            DataOp::Add => vec![false; round.len()],
            _ => self.local_present(meta, &round)?,
        };
        let has_query = self
            .server_roles(meta)?
            .iter()
            .any(|(_, r)| *r == Role::Query);
        if self.op == DataOp::CheckAdd && has_query {
            return self.fast_read(meta, round, local);
        }
        self.fast_tx(meta, round, local)
    }

    /// After a guard said no: reload the view, or rotate first.
    fn after_verdict(&mut self, v: crate::txn::Verdict) -> Result<Poll<DataOutput>> {
        if v == crate::txn::Verdict::Due {
            let mut m = Box::new(crate::circular::RotateMachine::if_due(
                self.core.clone(),
                None,
            ));
            return match m.step(None)? {
                Poll::Send(req) => {
                    self.state = DataState::Rotate(m);
                    Ok(Poll::Send(req))
                }
                Poll::Ready(_) => {
                    self.state = DataState::Reload;
                    Ok(Poll::Send(hgetall(&self.core.keys)))
                }
            };
        }
        self.state = DataState::Reload;
        Ok(Poll::Send(hgetall(&self.core.keys)))
    }

    fn on_fast_read(
        &mut self,
        round: Vec<usize>,
        parts: Vec<crate::txn::Part>,
        local: Vec<bool>,
        replies: Replies,
    ) -> Result<Poll<DataOutput>> {
        let mut replies = replies.into_iter();
        let v = crate::txn::verdict(&replies.next().unwrap_or(Ok(Value::Nil)))?;
        if v != crate::txn::Verdict::Ok {
            return self.after_verdict(v);
        }
        let mut present = local;
        for part in &parts {
            let reply = replies.next().unwrap_or(Ok(Value::Nil));
            let full = match reply {
                Ok(v) => crate::txn::all_ones(part, &v)?,
                Err(e) => return self.fail(e.into()),
            };
            for (&pos, f) in part.items.iter().zip(full) {
                present[pos] |= f;
            }
        }
        let meta = self.core.view();
        Ok(Poll::Send(self.fast_tx(&meta, round, present)?))
    }

    fn on_fast_tx(
        &mut self,
        round: Vec<usize>,
        subs: Vec<(std::ops::Range<usize>, Vec<crate::txn::Part>)>,
        present: Vec<bool>,
        replies: Replies,
    ) -> Result<Poll<DataOutput>> {
        let meta = self.core.view();
        let deciders: Vec<usize> = roles(&meta)?
            .into_iter()
            .filter(|(_, r)| *r == Role::Decide)
            .map(|(g, _)| g)
            .collect();
        let mut replies = replies.into_iter();
        let mut added: Vec<(u64, u64)> = Vec::new();
        let mut done = Vec::new();
        let mut verdict = crate::txn::Verdict::Ok;
        let mut first_err = None;
        for (range, parts) in subs {
            // WATCH, guard, MULTI, one QUEUED per part, EXEC.
            let _watch = replies.next();
            let v = crate::txn::verdict(&replies.next().unwrap_or(Ok(Value::Nil)))?;
            for _ in 0..parts.len() + 1 {
                replies.next();
            }
            let exec = replies.next().unwrap_or(Ok(Value::Nil));
            let results = match exec {
                Ok(Value::Array(results)) if v == crate::txn::Verdict::Ok => results,
                Ok(Value::Nil) | Ok(Value::Array(_)) => {
                    // Aborted: by our guard (the view is stale, or a lazy
                    // rotation is due) or by another client's.
                    if v != crate::txn::Verdict::Ok {
                        verdict = v;
                    }
                    continue;
                }
                Ok(other) => return Err(unexpected("EXEC", &other)),
                Err(e) => {
                    first_err.get_or_insert(Error::from(e));
                    continue;
                }
            };
            if results.len() != parts.len() {
                return Err(Error::UnexpectedReply(format!(
                    "EXEC: {} results for {} commands",
                    results.len(),
                    parts.len()
                )));
            }
            let mut yes = vec![false; range.len()];
            let mut zero = vec![false; range.len()];
            for (part, reply) in parts.iter().zip(results) {
                if let Value::ServerError(e) = reply {
                    first_err.get_or_insert(redis::RedisError::from(e).into());
                    continue;
                }
                let full = crate::txn::all_ones(part, &reply)?;
                let mut n_new = 0u64;
                for (&pos, f) in part.items.iter().zip(full) {
                    if part.set {
                        if !f {
                            n_new += 1;
                            if deciders.contains(&part.gen) {
                                zero[pos - range.start] = true;
                            }
                        }
                    } else if f {
                        yes[pos - range.start] = true;
                    }
                }
                if part.set && n_new > 0 {
                    let seq = meta.gens[part.gen].seq;
                    match added.iter_mut().find(|(s, _)| *s == seq) {
                        Some(e) => e.1 += n_new,
                        None => added.push((seq, n_new)),
                    }
                }
            }
            for pos in range.clone() {
                let r = pos - range.start;
                self.out[round[pos]] = match self.op {
                    DataOp::Has => yes[r] || present[pos],
                    DataOp::Add => zero[r],
                    DataOp::CheckAdd => !present[pos] && zero[r],
                };
                done.push(round[pos]);
            }
        }
        if !done.is_empty() {
            self.progress = true;
            self.stalls = 0;
            done.sort_unstable();
            self.pending.retain(|i| done.binary_search(i).is_err());
        }
        // Counts first: they belong to bits already set.
        let commit = crate::txn::commit(&self.core, &meta, &added);
        if let Some(e) = first_err {
            if let Some((cmd, script)) = commit {
                let mut req = Request::new();
                req.script(script, cmd);
                self.state = DataState::CommitThen(Box::new(e));
                return Ok(Poll::Send(req));
            }
            return self.fail(e);
        }
        if let Some((cmd, script)) = commit {
            let mut req = Request::new();
            req.script(script, cmd);
            self.state = if verdict == crate::txn::Verdict::Ok {
                DataState::Commit
            } else {
                DataState::CommitVerdict(verdict)
            };
            return Ok(Poll::Send(req));
        }
        self.next_after(verdict)
    }

    /// What follows a round: another round, a reload, a rotation, or done.
    fn next_after(&mut self, verdict: crate::txn::Verdict) -> Result<Poll<DataOutput>> {
        if verdict != crate::txn::Verdict::Ok {
            return self.after_verdict(verdict);
        }
        if self.pending.is_empty() {
            return Ok(self.finish());
        }
        if !self.progress {
            // Every transaction was aborted by other clients' guards: the
            // view is current, so just try again, smaller, within limits.
            self.shrink();
            self.stalls += 1;
            if self.stalls > self.core.max_retries * 4 {
                return Err(Error::Contention {
                    name: self.core.name().to_string(),
                    retries: self.stalls,
                });
            }
        }
        self.progress = false;
        Ok(Poll::Send(self.build()?))
    }

    /// Blocks of the next generation to allocate now, when the newest one
    /// has passed `PREALLOC_AT` of its capacity and this process has not
    /// done so yet.
    fn prealloc_plan(&self) -> Vec<Block> {
        let Some(fill) = self.fill else {
            return Vec::new();
        };
        let meta = self.core.view();
        if (fill as f64) < meta.newest().capacity as f64 * PREALLOC_AT {
            return Vec::new();
        }
        match pending_generation(&meta) {
            Some((seq, layout, capacity)) if self.core.claim_prealloc(seq) => {
                self.core.blocks_of(&meta, &[(seq, layout, capacity)])
            }
            _ => Vec::new(),
        }
    }

    fn finish(&mut self) -> Poll<DataOutput> {
        Poll::Ready((std::mem::take(&mut self.out), self.prealloc_plan()))
    }

    fn build_lua(&mut self) -> Result<Request> {
        let meta = self.core.view();
        let roles = roles(&meta)?;
        // Reads leave the filter alone: only generations that answer take part.
        let roles: Vec<(usize, Role)> = match self.op {
            DataOp::Has => roles
                .into_iter()
                .filter(|(_, r)| *r != Role::Write)
                .collect(),
            _ => roles,
        };
        let growth = if self.op == DataOp::Has {
            Growth::Unbounded
        } else {
            growth(&meta)?
        };
        let growth_arg = growth.arg();
        let per_item: usize = roles
            .iter()
            .map(|(g, _)| match meta.gens[*g].layout.scheme.is_module() {
                true => 1,
                false => 1 + meta.gens[*g].layout.hashes as usize,
            })
            .sum();
        let per_call = (MAX_ARGS_PER_CALL / per_item.max(1)).clamp(1, MAX_ITEMS_PER_CALL);

        let mut keys = vec![self.core.keys.meta().to_string(), self.core.keys.fence()];
        for (g, _) in &roles {
            let gen = &meta.gens[*g];
            keys.extend(
                (0..gen.layout.blocks).map(|b| self.core.keys.block(&meta.uid, gen.seq, b)),
            );
        }

        let now = self
            .core
            .clock
            .now()
            .map(|t| t.timestamp_millis().to_string())
            .unwrap_or_default();
        let round: Vec<usize> = self
            .pending
            .iter()
            .copied()
            .take(self.round_limit)
            .collect();
        let mut req = Request::new();
        let mut chunks = Vec::new();
        for chunk in round.chunks(per_call) {
            let mut cmd = scripts::DATA.invoke(&keys);
            cmd.arg(self.op.code())
                .arg(&meta.uid)
                .arg(meta.epoch)
                .arg(chunk.len())
                .arg(&growth_arg)
                .arg(&now)
                .arg(roles.len());
            for (g, role) in &roles {
                let gen = &meta.gens[*g];
                if gen.layout.scheme.is_module() {
                    // A RedisBloom generation takes the items themselves.
                    cmd.arg(role.code().to_uppercase())
                        .arg(gen.seq)
                        .arg(0)
                        .arg(1);
                    for &i in chunk {
                        cmd.arg(self.items.get(i).map(Vec::as_slice).unwrap_or_default());
                    }
                    continue;
                }
                cmd.arg(role.code())
                    .arg(gen.seq)
                    .arg(gen.layout.hashes)
                    .arg(gen.layout.blocks);
                for &i in chunk {
                    let item = self.items.get(i).map(Vec::as_slice);
                    let (block, positions) = gen.layout.locate(&self.hashes[i], item);
                    cmd.arg(block);
                    for p in positions {
                        cmd.arg(p);
                    }
                }
            }
            req.script(&scripts::DATA, cmd);
            chunks.push(chunk.to_vec());
        }
        self.state = DataState::Sent(chunks);
        Ok(req)
    }

    /// Applies one chunk's reply; returns whether the view must be reloaded.
    fn absorb(
        &mut self,
        chunk: &[usize],
        reply: redis::RedisResult<Value>,
        done: &mut Vec<usize>,
    ) -> Result<After> {
        let v = reply?;
        let Value::Array(parts) = &v else {
            return Err(unexpected("data script", &v));
        };
        let (Some(status), Some(Value::Int(processed)), Some(flags), Some(Value::Int(fill))) = (
            parts.first().and_then(as_string),
            parts.get(1),
            parts.get(2).and_then(as_string),
            parts.get(3),
        ) else {
            return Err(unexpected("data script", &v));
        };
        if let Ok(fill) = u64::try_from(*fill) {
            self.fill = Some(self.fill.map_or(fill, |f| f.max(fill)));
        }
        let processed = usize::try_from(*processed).unwrap_or(0).min(chunk.len());
        let flags = flags.as_bytes();
        if flags.len() != processed {
            return Err(unexpected("data script flags", &v));
        }
        for (t, &i) in chunk[..processed].iter().enumerate() {
            self.out[i] = flags[t] == b'1';
            done.push(i);
        }
        if processed > 0 {
            self.progress = true;
        }
        match status.as_str() {
            "OK" => Ok(After::Continue),
            "STALE" | "EXPANDED" => Ok(After::Reload),
            "DUE" => Ok(After::Rotate),
            "LIMIT" => Err(Error::LimitReached {
                name: self.core.name().to_string(),
                limit: crate::expanding::limit_description(&self.core.view()),
            }),
            _ => Err(unexpected("data script status", &v)),
        }
    }

    fn fail(&mut self, e: Error) -> Result<Poll<DataOutput>> {
        if is_module_missing(&e) {
            return Err(Error::ModuleMissing {
                name: self.core.name().to_string(),
            });
        }
        if is_wrongtype(&e) {
            let meta = self.core.view();
            let mut keys = vec![(self.core.keys.meta().to_string(), "hash")];
            keys.extend(
                self.core
                    .all_block_keys(&meta)
                    .into_iter()
                    .map(|k| (k, "string")),
            );
            let req = type_probe(&keys);
            self.state = DataState::Probe(keys, Some(e));
            return Ok(Poll::Send(req));
        }
        Err(e)
    }
}

/// Per-item answers, and blocks to allocate ahead of need.
pub(crate) type DataOutput = (Vec<bool>, Vec<Block>);

impl Machine for DataMachine {
    type Output = DataOutput;

    fn allow_transactions(&mut self, yes: bool) {
        self.tx_ok = yes;
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<DataOutput>> {
        match std::mem::replace(&mut self.state, DataState::Idle) {
            DataState::Idle => {
                if self.pending.is_empty() {
                    return Ok(self.finish());
                }
                Ok(Poll::Send(self.build()?))
            }
            DataState::Sent(chunks) => {
                let replies = replies.unwrap_or_default();
                let mut done = Vec::new();
                let mut reload = false;
                let mut rotate = false;
                let mut first_err = None;
                for (chunk, reply) in chunks.iter().zip(replies) {
                    match self.absorb(chunk, reply, &mut done) {
                        Ok(After::Continue) => {}
                        Ok(After::Reload) => reload = true,
                        Ok(After::Rotate) => rotate = true,
                        Err(e) => {
                            first_err.get_or_insert(e);
                        }
                    }
                }
                if let Some(e) = first_err {
                    return self.fail(e);
                }
                if !done.is_empty() {
                    done.sort_unstable();
                    self.pending.retain(|i| done.binary_search(i).is_err());
                }
                if rotate {
                    return self.after_verdict(crate::txn::Verdict::Due);
                }
                if reload {
                    self.state = DataState::Reload;
                    return Ok(Poll::Send(hgetall(&self.core.keys)));
                }
                if self.pending.is_empty() {
                    return Ok(self.finish());
                }
                Ok(Poll::Send(self.build()?))
            }
            DataState::Reload => {
                let meta = match decode_meta(self.core.name(), take_one(replies)?) {
                    Ok(m) => m,
                    Err(e) => return self.fail(e),
                };
                self.core.accept(meta)?;
                if self.progress {
                    self.stalls = 0;
                    self.progress = false;
                } else {
                    self.shrink();
                    self.stalls += 1;
                    if self.stalls > self.core.max_retries {
                        return Err(Error::Contention {
                            name: self.core.name().to_string(),
                            retries: self.stalls,
                        });
                    }
                }
                if self.pending.is_empty() {
                    return Ok(self.finish());
                }
                Ok(Poll::Send(self.build()?))
            }
            DataState::Probe(keys, original) => {
                let original =
                    original.unwrap_or_else(|| Error::UnexpectedReply("type probe".into()));
                Err(type_verdict(&keys, replies, original))
            }
            DataState::FastRead(round, parts, local) => {
                self.on_fast_read(round, parts, local, replies.unwrap_or_default())
            }
            DataState::FastTx(round, subs, present) => {
                self.on_fast_tx(round, subs, present, replies.unwrap_or_default())
            }
            DataState::CommitVerdict(v) => {
                take_one(replies)??;
                self.next_after(v)
            }
            DataState::CommitThen(e) => {
                take_one(replies)??;
                self.fail(*e)
            }
            DataState::Commit => {
                // A failed count update loses no item; it is reported.
                take_one(replies)??;
                self.next_after(crate::txn::Verdict::Ok)
            }
            DataState::Rotate(mut m) => match m.step(replies)? {
                Poll::Send(req) => {
                    self.state = DataState::Rotate(m);
                    Ok(Poll::Send(req))
                }
                Poll::Ready(_) => {
                    // The rotation counts as progress: the filter moved on.
                    self.progress = true;
                    self.state = DataState::Reload;
                    Ok(Poll::Send(hgetall(&self.core.keys)))
                }
            },
        }
    }
}

// ---------------------------------------------------------------------------
// Loading the view

enum LoadState {
    Idle,
    Sent,
    Probe(Vec<(String, &'static str)>, Option<Error>),
}

/// Reads the metadata hash into a view.
pub(crate) struct LoadMachine {
    keys: Keys,
    state: LoadState,
}

impl LoadMachine {
    pub fn new(keys: Keys) -> LoadMachine {
        LoadMachine {
            keys,
            state: LoadState::Idle,
        }
    }
}

impl Machine for LoadMachine {
    type Output = Meta;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Meta>> {
        match std::mem::replace(&mut self.state, LoadState::Idle) {
            LoadState::Idle => {
                self.state = LoadState::Sent;
                Ok(Poll::Send(hgetall(&self.keys)))
            }
            LoadState::Sent => match decode_meta(self.keys.name().as_str(), take_one(replies)?) {
                Ok(m) => Ok(Poll::Ready(m)),
                Err(e) if is_wrongtype(&e) => {
                    let keys = vec![(self.keys.meta().to_string(), "hash")];
                    let req = type_probe(&keys);
                    self.state = LoadState::Probe(keys, Some(e));
                    Ok(Poll::Send(req))
                }
                Err(e) => Err(e),
            },
            LoadState::Probe(keys, original) => {
                let original =
                    original.unwrap_or_else(|| Error::UnexpectedReply("type probe".into()));
                Err(type_verdict(&keys, replies, original))
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Create-or-open

/// What a new filter looks like.
pub(crate) struct Blueprint {
    pub kind: Kind,
    /// The new instance's id (used only if this call creates the filter).
    pub uid: String,
    /// Existing bitmaps to move into the first generation's blocks:
    /// (source key, block index).
    pub adopt: Vec<(String, u32)>,
    /// Kind parameters: stored at creation, compared on open.
    pub params: Vec<(&'static str, String)>,
    /// Further fields stored at creation but not compared.
    pub extra: Vec<(String, String)>,
    /// The initial generations, oldest first: (layout, capacity).
    pub gens: Vec<(Layout, u64)>,
}

/// Whether create-or-open created the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opened {
    /// This call created the filter.
    Created,
    /// The filter existed, with matching parameters.
    Existing,
}

pub(crate) struct CreateMachine {
    keys: Keys,
    blueprint: Blueprint,
    sent: bool,
}

impl CreateMachine {
    pub fn new(keys: Keys, blueprint: Blueprint) -> CreateMachine {
        CreateMachine {
            keys,
            blueprint,
            sent: false,
        }
    }

    fn request(&self) -> Request {
        let bp = &self.blueprint;
        let uid = bp.uid.clone();
        let mut time_fields = vec![field::CREATED_AT.to_string()];
        let mut pairs: Vec<(String, String)> = vec![
            (
                field::FORMAT.into(),
                crate::metadata::FORMAT_VERSION.to_string(),
            ),
            (field::KIND.into(), bp.kind.as_str().into()),
            (field::UID.into(), uid.clone()),
            (field::EPOCH.into(), "0".into()),
            (field::NEXT_SEQ.into(), bp.gens.len().to_string()),
            (
                field::GENS.into(),
                (0..bp.gens.len())
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ];
        pairs.extend(bp.params.iter().map(|(f, v)| ((*f).to_string(), v.clone())));
        pairs.extend(bp.extra.iter().cloned());
        for (seq, (layout, cap)) in bp.gens.iter().enumerate() {
            pairs.extend(crate::metadata::generation_fields(seq as u64, layout, *cap));
            time_fields.push(field::gen(seq as u64, field::G_CREATED_AT));
        }
        let mut keys = vec![self.keys.meta().to_string()];
        keys.extend(bp.adopt.iter().map(|(src, _)| src.clone()));
        keys.extend(bp.adopt.iter().map(|(_, b)| self.keys.block(&uid, 0, *b)));
        keys.push(self.keys.fence());
        let mut cmd = scripts::CREATE.invoke(&keys);
        cmd.arg(bp.adopt.len()).arg(time_fields.len());
        for f in &time_fields {
            cmd.arg(f);
        }
        for (f, v) in &pairs {
            cmd.arg(f).arg(v);
        }
        let mut req = Request::new();
        req.script(&scripts::CREATE, cmd);
        req
    }
}

impl Machine for CreateMachine {
    type Output = (Meta, Opened);

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<(Meta, Opened)>> {
        if !self.sent {
            self.sent = true;
            return Ok(Poll::Send(self.request()));
        }
        let v = take_one(replies)??;
        let Value::Array(mut parts) = v else {
            return Err(unexpected("create script", &v));
        };
        if !(2..=3).contains(&parts.len()) {
            return Err(Error::UnexpectedReply("create script: wrong arity".into()));
        }
        let body = parts.pop().unwrap_or(Value::Nil);
        let status = parts.first().and_then(as_string).unwrap_or_default();
        let name = self.keys.name().as_str();
        match status.as_str() {
            "wrongtype" => Err(Error::WrongType {
                key: self.keys.meta().to_string(),
                found: as_string(&body).unwrap_or_default(),
                expected: "hash",
            }),
            "badsource" => Err(Error::WrongType {
                key: parts.get(1).and_then(as_string).unwrap_or_default(),
                found: as_string(&body).unwrap_or_default(),
                expected: "string (or no key, for an adoption target)",
            }),
            "created" | "exists" => {
                let meta = Meta::decode(name, decode_pairs(body)?)?;
                meta.check_kind(self.blueprint.kind)?;
                meta.check_params(&self.blueprint.params)?;
                let how = if status == "created" {
                    Opened::Created
                } else {
                    Opened::Existing
                };
                Ok(Poll::Ready((meta, how)))
            }
            other => Err(Error::UnexpectedReply(format!(
                "create script status {other:?}"
            ))),
        }
    }
}

// ---------------------------------------------------------------------------
// Guarded whole-filter scripts: clear and drop

/// Runs a script that needs every key of the filter, reloading the view and
/// retrying when another process changed the filter meanwhile.
pub(crate) struct GuardedMachine {
    core: Core,
    script: &'static scripts::LuaScript,
    state: GuardState,
    stalls: u32,
}

enum GuardState {
    Idle,
    Sent,
    Reload,
}

/// The outcome of a guarded script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guarded {
    Done,
    Gone,
}

impl GuardedMachine {
    pub fn clear(core: Core) -> GuardedMachine {
        GuardedMachine {
            core,
            script: &scripts::CLEAR,
            state: GuardState::Idle,
            stalls: 0,
        }
    }

    pub fn drop_filter(core: Core) -> GuardedMachine {
        GuardedMachine {
            core,
            script: &scripts::DROP,
            state: GuardState::Idle,
            stalls: 0,
        }
    }

    fn request(&mut self) -> Request {
        let meta = self.core.view();
        let mut keys = vec![self.core.keys.meta().to_string(), self.core.keys.fence()];
        keys.extend(self.core.all_block_keys(&meta));
        if std::ptr::eq(self.script, &scripts::DROP) {
            if let Some(pending) = pending_generation(&meta) {
                keys.extend(
                    self.core
                        .blocks_of(&meta, &[pending])
                        .into_iter()
                        .map(|(k, _, _)| k),
                );
            }
        }
        let mut cmd = self.script.invoke(&keys);
        cmd.arg(&meta.uid).arg(meta.epoch);
        if std::ptr::eq(self.script, &scripts::CLEAR) {
            cmd.arg(meta.gens.len());
            for g in &meta.gens {
                cmd.arg(g.seq);
            }
            for g in &meta.gens {
                for _ in 0..g.layout.blocks {
                    if g.layout.scheme.is_module() {
                        cmd.arg(format!(
                            "{}|{}",
                            crate::metadata::fmt_f64(g.layout.error_rate_at(g.capacity)),
                            g.capacity
                        ));
                    } else {
                        cmd.arg("");
                    }
                }
            }
        }
        let mut req = Request::new();
        req.script(self.script, cmd);
        self.state = GuardState::Sent;
        req
    }
}

impl Machine for GuardedMachine {
    type Output = Guarded;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Guarded>> {
        match std::mem::replace(&mut self.state, GuardState::Idle) {
            GuardState::Idle => Ok(Poll::Send(self.request())),
            GuardState::Sent => {
                let v = take_one(replies)??;
                match as_string(&v).as_deref() {
                    Some("OK") => Ok(Poll::Ready(Guarded::Done)),
                    Some("GONE") => Ok(Poll::Ready(Guarded::Gone)),
                    Some("STALE") => {
                        self.stalls += 1;
                        if self.stalls > self.core.max_retries {
                            return Err(Error::Contention {
                                name: self.core.name().to_string(),
                                retries: self.stalls,
                            });
                        }
                        self.state = GuardState::Reload;
                        Ok(Poll::Send(hgetall(&self.core.keys)))
                    }
                    _ => Err(unexpected("guarded script", &v)),
                }
            }
            GuardState::Reload => match decode_meta(self.core.name(), take_one(replies)?) {
                Ok(meta) => {
                    self.core.accept(meta)?;
                    Ok(Poll::Send(self.request()))
                }
                Err(Error::NotFound { .. }) => Ok(Poll::Ready(Guarded::Gone)),
                Err(e) => Err(e),
            },
        }
    }
}

// ---------------------------------------------------------------------------
// Opening handles, shared by every kind

fn initial_blocks(core: &Core) -> Vec<Block> {
    let meta = core.view();
    let gens: Vec<(u64, Layout, u64)> = meta
        .gens
        .iter()
        .map(|g| (g.seq, g.layout, g.capacity))
        .collect();
    core.blocks_of(&meta, &gens)
}

/// Opens an existing filter of `kind`.
pub(crate) fn open<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    name: &str,
    kind: Kind,
) -> Result<Core> {
    let keys = Keys::new(crate::FilterName::new(name)?);
    let meta = crate::exec::run(conn, LoadMachine::new(keys.clone()))?;
    meta.check_kind(kind)?;
    crate::exec::run(conn, ModuleMachine::probe(&keys, &meta))?;
    Ok(Core::new(keys, meta, Vec::new()))
}

/// Async [`open`].
pub(crate) async fn open_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    name: &str,
    kind: Kind,
) -> Result<Core> {
    let keys = Keys::new(crate::FilterName::new(name)?);
    let meta = crate::exec::run_async(conn, LoadMachine::new(keys.clone())).await?;
    meta.check_kind(kind)?;
    crate::exec::run_async(conn, ModuleMachine::probe(&keys, &meta)).await?;
    Ok(Core::new(keys, meta, Vec::new()))
}

/// Creates the filter, or opens it if it exists with the same kind and
/// parameters.
pub(crate) fn create<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    keys: Keys,
    bp: Blueprint,
) -> Result<(Core, Opened)> {
    let expect = bp.params.clone();
    let reserve = ModuleMachine::reserve(&keys, &bp);
    crate::exec::run(conn, reserve.clone())?;
    let (meta, how) = crate::exec::run(conn, CreateMachine::new(keys.clone(), bp))?;
    if how == Opened::Existing {
        // Someone else created it: the generations reserved for this
        // attempt's instance id are not part of it.
        crate::exec::run(conn, reserve.undo())?;
    }
    let core = Core::new(keys, meta, expect);
    if how == Opened::Created {
        // Best effort, like every allocation ahead of need.
        let _ = crate::exec::run(
            conn,
            PreallocMachine::new(core.clone(), initial_blocks(&core)),
        );
    }
    Ok((core, how))
}

/// Async [`create`].
pub(crate) async fn create_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    keys: Keys,
    bp: Blueprint,
) -> Result<(Core, Opened)> {
    let expect = bp.params.clone();
    let reserve = ModuleMachine::reserve(&keys, &bp);
    crate::exec::run_async(conn, reserve.clone()).await?;
    let (meta, how) = crate::exec::run_async(conn, CreateMachine::new(keys.clone(), bp)).await?;
    if how == Opened::Existing {
        crate::exec::run_async(conn, reserve.undo()).await?;
    }
    let core = Core::new(keys, meta, expect);
    if how == Opened::Created {
        let _ = crate::exec::run_async(
            conn,
            PreallocMachine::new(core.clone(), initial_blocks(&core)),
        )
        .await;
    }
    Ok((core, how))
}

// ---------------------------------------------------------------------------
// RedisBloom generations: reserving them, and checking the module is there

/// Whether an error says the server does not know the BF.* commands.
pub(crate) fn is_module_missing(e: &Error) -> bool {
    matches!(e, Error::Redis(r) if {
        let t = r.inner().to_string().to_ascii_lowercase();
        t.contains("unknown command") && t.contains("bf.")
    })
}

/// Reserves the RedisBloom generations of a blueprint before its filter is
/// created (a module generation must exist before any write, or BF.INSERT
/// NOCREATE refuses it), or probes that the module is loaded. Sends nothing
/// for a bitmap filter.
#[derive(Clone)]
pub(crate) struct ModuleMachine {
    name: String,
    cmds: Vec<redis::Cmd>,
    keys: Vec<String>,
    sent: bool,
}

impl ModuleMachine {
    pub fn reserve(keys: &Keys, bp: &Blueprint) -> ModuleMachine {
        let mut cmds = Vec::new();
        let mut reserved = Vec::new();
        for (seq, (layout, capacity)) in bp.gens.iter().enumerate() {
            if layout.scheme.is_module() {
                let key = keys.block(&bp.uid, seq as u64, 0);
                let mut cmd = redis::cmd("BF.RESERVE");
                cmd.arg(&key)
                    .arg(crate::metadata::fmt_f64(layout.error_rate_at(*capacity)))
                    .arg(*capacity)
                    .arg("NONSCALING");
                cmds.push(cmd);
                reserved.push(key);
            }
        }
        ModuleMachine {
            name: keys.name().to_string(),
            cmds,
            keys: reserved,
            sent: false,
        }
    }

    pub fn probe(keys: &Keys, meta: &Meta) -> ModuleMachine {
        let cmds = meta
            .gens
            .iter()
            .find(|g| g.layout.scheme.is_module())
            .map(|g| {
                let mut cmd = redis::cmd("BF.EXISTS");
                cmd.arg(keys.block(&meta.uid, g.seq, 0)).arg("");
                vec![cmd]
            })
            .unwrap_or_default();
        ModuleMachine {
            name: keys.name().to_string(),
            cmds,
            keys: Vec::new(),
            sent: false,
        }
    }

    /// Deletes what `reserve` reserved.
    pub fn undo(&self) -> ModuleMachine {
        let cmds = if self.keys.is_empty() {
            Vec::new()
        } else {
            let mut cmd = redis::cmd("UNLINK");
            for k in &self.keys {
                cmd.arg(k);
            }
            vec![cmd]
        };
        ModuleMachine {
            name: self.name.clone(),
            cmds,
            keys: Vec::new(),
            sent: false,
        }
    }
}

impl Machine for ModuleMachine {
    type Output = ();

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<()>> {
        if !self.sent {
            self.sent = true;
            if self.cmds.is_empty() {
                return Ok(Poll::Ready(()));
            }
            let mut req = Request::new();
            for c in self.cmds.drain(..) {
                req.push(c, None);
            }
            return Ok(Poll::Send(req));
        }
        for r in replies.unwrap_or_default() {
            if let Err(e) = r {
                let e: Error = e.into();
                if is_module_missing(&e) {
                    return Err(Error::ModuleMissing {
                        name: self.name.clone(),
                    });
                }
                return Err(e);
            }
        }
        Ok(Poll::Ready(()))
    }
}

// ---------------------------------------------------------------------------
// Allocating generations ahead of need

/// Grows blocks to their full size, one call per round trip, so Redis never
/// allocates a large string inside a data script and other clients' commands
/// run between the allocations. A block of a generation that no longer
/// exists is skipped.
pub(crate) struct PreallocMachine {
    core: Core,
    blocks: std::vec::IntoIter<Block>,
}

impl PreallocMachine {
    pub fn new(core: Core, blocks: Vec<Block>) -> PreallocMachine {
        PreallocMachine {
            core,
            blocks: blocks.into_iter(),
        }
    }
}

impl Machine for PreallocMachine {
    type Output = ();

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<()>> {
        if replies.is_some() && as_string(&take_one(replies)??).as_deref() == Some("STALE") {
            // The filter moved on (dropped, re-created, or rotated past).
            return Ok(Poll::Ready(()));
        }
        let Some((key, alloc, seq)) = self.blocks.next() else {
            return Ok(Poll::Ready(()));
        };
        let meta = self.core.view();
        let mut cmd = scripts::PREALLOC.invoke(&[self.core.keys.meta(), key.as_str()]);
        cmd.arg(&meta.uid).arg(seq);
        match alloc {
            Alloc::Bytes(bytes) => cmd.arg(bytes),
            Alloc::Module {
                error_rate,
                capacity,
            } => cmd
                .arg("bf")
                .arg(crate::metadata::fmt_f64(error_rate))
                .arg(capacity),
        };
        let mut req = Request::new();
        req.script(&scripts::PREALLOC, cmd);
        Ok(Poll::Send(req))
    }
}
