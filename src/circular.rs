//! The circular filter: N generations rotated on a schedule, so items are
//! forgotten after a window (seed 003's "monthly re-crawl").
//!
//! # Windows
//!
//! Rotations happen at the schedule's boundaries `t_0 < t_1 < ...`; period
//! `j` is `[t_j, t_(j+1))`. In **both** modes an item inserted during period
//! `j` is reported present (false positives aside) until the rotation at
//! `t_(j+N)`, and absent from then on:
//!
//! - insert-newest-query-all: it went into the generation created at `t_j`,
//!   which is dropped at `t_(j+N)`;
//! - insert-all-query-oldest: it went into every live generation; queries
//!   ask the oldest, which holds it from `t_j` until the generation created
//!   at `t_j` is itself dropped at `t_(j+N)`.
//!
//! With a fixed interval `P`, an item inserted at time `t` is present at
//! least until `t + (N-1)P` and absent from `t + NP` on. A rotation runs
//! when `rotate_if_due` is called (cron) or, with lazy rotation, on the
//! first operation after the boundary; until then the window stays open.

use crate::clock::{Clock, ServerClock};
use crate::engine::{
    self, decode_meta, hgetall, take_one, Blueprint, Core, Opened, PreallocMachine,
};
use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies, Request};
use crate::generation::Layout;
use crate::keys::{FilterName, Keys};
use crate::metadata::{fmt_f64, Kind, Meta};
use crate::ops::impl_filter_ops;
use crate::params::{BloomParams, ErrorRate, DEFAULT_MAX_BITS, DEFAULT_MAX_BLOCK_BITS};
use crate::schedule::Schedule;
use crate::scripts;
use chrono::{DateTime, TimeZone, Utc};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// The most generations a circular filter may have.
pub const MAX_CIRCULAR_GENERATIONS: u32 = 256;

/// Where a circular filter writes and what it reads (seed 003's two modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Writes go to the newest generation; queries check all N. Cheap
    /// writes. Each generation holds one period of items at rate
    /// `1 - (1 - p)^(1/N)`, so a query over N of them has rate `p`.
    InsertNewestQueryAll,
    /// Writes go to all N generations; queries check only the oldest, which
    /// holds everything inserted since it was created. Cheap reads. Each
    /// generation holds N periods of items at rate `p`.
    InsertAllQueryOldest,
}

impl Mode {
    /// The name stored in the metadata (`mode` field).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::InsertNewestQueryAll => "insert-newest-query-all",
            Mode::InsertAllQueryOldest => "insert-all-query-oldest",
        }
    }

    pub(crate) fn from_meta(meta: &Meta) -> Result<Mode> {
        meta.param::<Mode>("mode")
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Mode> {
        match s {
            "insert-newest-query-all" | "query-all" => Ok(Mode::InsertNewestQueryAll),
            "insert-all-query-oldest" | "query-oldest" => Ok(Mode::InsertAllQueryOldest),
            _ => Err(Error::InvalidParameter {
                name: "mode",
                reason: format!("{s:?} is not insert-newest-query-all or insert-all-query-oldest"),
            }),
        }
    }
}

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

/// A Bloom filter over a sliding window of N generations.
///
/// ```no_run
/// use rotabloom::{CircularFilter, Mode};
/// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let f = CircularFilter::builder("recrawl")
///     .generations(4)                 // a window of 4 periods
///     .mode(Mode::InsertNewestQueryAll)
///     .capacity(10_000_000)          // items per period
///     .error_rate(0.001)             // of a query
///     .schedule("weekly:mon@03:00")
///     .create_or_open(&mut conn)?;
/// if f.check_and_insert(&mut conn, "http://example.com/")? {
///     // not seen in the last 3 to 4 weeks: crawl it
/// }
/// f.rotate_if_due(&mut conn)?; // from cron, on any number of hosts
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct CircularFilter {
    core: Core,
}

impl_filter_ops!(
    CircularFilter,
    Kind::Circular,
    "# let mut conn = redis::Client::open(\"redis://127.0.0.1/\")?.get_connection()?;\nlet f = rotabloom::CircularFilter::builder(\"recrawl\").generations(4).capacity(1_000_000).schedule(\"7d\").create_or_open(&mut conn)?;"
);

impl CircularFilter {
    /// Starts describing a circular filter called `name`.
    pub fn builder(name: impl Into<String>) -> CircularBuilder {
        CircularBuilder {
            name: name.into(),
            generations: 0,
            mode: Mode::InsertNewestQueryAll,
            capacity: 0,
            error_rate: 0.01,
            schedule: None,
            lazy: false,
            max_bits: DEFAULT_MAX_BITS,
            max_block_bits: DEFAULT_MAX_BLOCK_BITS,
            clock: Arc::new(ServerClock),
            backend: crate::Backend::Bitmap,
        }
    }

    /// The same filter, reading `now` from `clock` (for tests, backfills,
    /// or hosts that must use their own clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> CircularFilter {
        self.core.clock = clock;
        self
    }

    /// The rotation schedule, if the filter has one.
    pub fn schedule(&self) -> Option<Schedule> {
        schedule_of(&self.core.view()).ok().flatten()
    }

    /// Rotations so far, as last read from Redis.
    pub fn epoch(&self) -> u64 {
        self.core.view().epoch
    }

    /// When the next scheduled rotation is due, as last read from Redis.
    pub fn next_rotation_at(&self) -> Option<DateTime<Utc>> {
        due_at(&self.core.view())
    }

    /// Rotates once now, if the filter has not changed since this handle
    /// last saw it (compare-and-set on the epoch): of many concurrent calls
    /// with the same view, one rotates and the others get
    /// [`Rotation::Superseded`]. Leaves the schedule alone.
    pub fn rotate<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<Rotation> {
        crate::exec::run(conn, RotateMachine::manual(self.core.clone()))
    }

    /// Async [`rotate`](Self::rotate).
    pub async fn rotate_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<Rotation> {
        crate::exec::run_async(conn, RotateMachine::manual(self.core.clone())).await
    }

    /// Performs exactly the rotations owed by the schedule at the clock's
    /// `now`: none if this period's rotation is done, several after missed
    /// runs (at most N, which empties the window), and once per period
    /// however many processes or hosts call it at the same moment.
    pub fn rotate_if_due<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<Rotation> {
        crate::exec::run(conn, RotateMachine::if_due(self.core.clone(), None))
    }

    /// Async [`rotate_if_due`](Self::rotate_if_due).
    pub async fn rotate_if_due_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<Rotation> {
        crate::exec::run_async(conn, RotateMachine::if_due(self.core.clone(), None)).await
    }

    /// [`rotate_if_due`](Self::rotate_if_due) at an explicit `now`.
    pub fn rotate_if_due_at<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        now: DateTime<Utc>,
    ) -> Result<Rotation> {
        crate::exec::run(conn, RotateMachine::if_due(self.core.clone(), Some(now)))
    }

    /// Async [`rotate_if_due_at`](Self::rotate_if_due_at).
    pub async fn rotate_if_due_at_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
        now: DateTime<Utc>,
    ) -> Result<Rotation> {
        crate::exec::run_async(conn, RotateMachine::if_due(self.core.clone(), Some(now))).await
    }
}

/// Describes a [`CircularFilter`]; checked by [`spec`](Self::spec).
#[derive(Clone, Debug)]
#[must_use]
pub struct CircularBuilder {
    name: String,
    generations: u32,
    mode: Mode,
    capacity: u64,
    error_rate: f64,
    schedule: Option<String>,
    lazy: bool,
    max_bits: u64,
    max_block_bits: u64,
    clock: Arc<dyn Clock>,
    backend: crate::Backend,
}

impl CircularBuilder {
    /// Number of generations, N >= 2: the window is N periods.
    pub fn generations(mut self, n: u32) -> Self {
        self.generations = n;
        self
    }
    /// Where writes go and what queries read. Default insert-newest-query-all.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }
    /// Distinct items expected per period.
    pub fn capacity(mut self, per_period: u64) -> Self {
        self.capacity = per_period;
        self
    }
    /// The false-positive rate a query may have at full load. Default 0.01.
    pub fn error_rate(mut self, p: f64) -> Self {
        self.error_rate = p;
        self
    }
    /// The rotation schedule, in [`Schedule`]'s text form (`30d`,
    /// `monthly:1@00:00`, ...). Without one, only [`CircularFilter::rotate`]
    /// rotates.
    pub fn schedule(mut self, schedule: impl Into<String>) -> Self {
        self.schedule = Some(schedule.into());
        self
    }
    /// Let ordinary operations perform a rotation that has come due, so a
    /// deployment without cron still expires items on time.
    pub fn lazy(mut self, lazy: bool) -> Self {
        self.lazy = lazy;
        self
    }
    /// Most bits of one generation (default 2^37).
    pub fn max_bits(mut self, bits: u64) -> Self {
        self.max_bits = bits;
        self
    }
    /// Block size in bits (default 2^26; at most 2^32).
    pub fn max_block_bits(mut self, bits: u64) -> Self {
        self.max_block_bits = bits;
        self
    }
    /// Where the generations are kept (default
    /// [`Backend::Bitmap`](crate::Backend::Bitmap)).
    pub fn backend(mut self, backend: crate::Backend) -> Self {
        self.backend = backend;
        self
    }
    /// Where `now` comes from (default: the Redis server's clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Validates the description.
    pub fn spec(&self) -> Result<CircularSpec> {
        let name = FilterName::new(&self.name)?;
        let n = self.generations;
        if !(2..=MAX_CIRCULAR_GENERATIONS).contains(&n) {
            return Err(Error::InvalidParameter {
                name: "generations",
                reason: format!("{n} is not between 2 and {MAX_CIRCULAR_GENERATIONS}"),
            });
        }
        let p = ErrorRate::new(self.error_rate)?.get();
        let schedule = match &self.schedule {
            Some(s) => Some(s.parse::<Schedule>()?),
            None => {
                if self.lazy {
                    return Err(Error::InvalidParameter {
                        name: "lazy",
                        reason: "lazy rotation needs a schedule".into(),
                    });
                }
                None
            }
        };
        let (gen_capacity, gen_rate) = generation_sizing(self.mode, n, self.capacity, p)?;
        let params = BloomParams::for_capacity_within(gen_capacity, gen_rate, self.max_bits)?;
        let layout = self.backend.layout(params, self.max_block_bits);
        let stored = vec![
            ("generations", n.to_string()),
            ("mode", self.mode.as_str().to_string()),
            ("capacity", self.capacity.to_string()),
            ("error_rate", fmt_f64(p)),
            (
                "schedule",
                schedule.map(|s| s.to_string()).unwrap_or_default(),
            ),
            ("lazy", if self.lazy { "1" } else { "0" }.to_string()),
            ("backend", self.backend.as_str().to_string()),
            ("max_bits", self.max_bits.to_string()),
            (
                "max_block_bits",
                self.max_block_bits
                    .clamp(8, crate::MAX_BLOCK_BITS)
                    .to_string(),
            ),
        ];
        Ok(CircularSpec {
            name,
            params: stored,
            layout,
            gen_capacity,
            n,
            schedule,
            clock: self.clock.clone(),
        })
    }

    /// Creates the filter, or opens it when it exists with the same
    /// parameters.
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<CircularFilter> {
        self.spec()?.create_or_open(conn).map(|(f, _)| f)
    }

    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        self,
        conn: &mut C,
    ) -> Result<CircularFilter> {
        self.spec()?
            .create_or_open_async(conn)
            .await
            .map(|(f, _)| f)
    }
}

/// Capacity and false-positive rate of each generation so that a query in
/// `mode` over `n` generations meets rate `p` at `per_period` items per
/// period. Pure.
///
/// ```
/// use rotabloom::{circular_generation_sizing, Mode};
/// let (cap, rate) = circular_generation_sizing(Mode::InsertAllQueryOldest, 4, 1000, 0.01).unwrap();
/// assert_eq!((cap, rate), (4000, 0.01));
/// let (cap, rate) = circular_generation_sizing(Mode::InsertNewestQueryAll, 4, 1000, 0.01).unwrap();
/// assert_eq!(cap, 1000);
/// assert!((1.0 - (1.0 - rate).powi(4) - 0.01).abs() < 1e-12);
/// ```
pub fn generation_sizing(mode: Mode, n: u32, per_period: u64, p: f64) -> Result<(u64, f64)> {
    if per_period == 0 {
        return Err(Error::InvalidParameter {
            name: "capacity",
            reason: "must be at least 1 item per period".into(),
        });
    }
    Ok(match mode {
        Mode::InsertNewestQueryAll => (per_period, 1.0 - (1.0 - p).powf(1.0 / f64::from(n.max(1)))),
        Mode::InsertAllQueryOldest => (per_period.saturating_mul(u64::from(n)), p),
    })
}

/// A validated [`CircularBuilder`].
#[derive(Clone, Debug)]
pub struct CircularSpec {
    name: FilterName,
    params: Vec<(&'static str, String)>,
    layout: Layout,
    gen_capacity: u64,
    n: u32,
    schedule: Option<Schedule>,
    clock: Arc<dyn Clock>,
}

impl CircularSpec {
    fn blueprint(&self, now: DateTime<Utc>) -> Blueprint {
        let extra = match self.schedule {
            Some(s) => {
                let p = s.period(now);
                vec![
                    ("period".to_string(), p.to_string()),
                    (
                        "due_at".to_string(),
                        s.boundary(p + 1).timestamp_millis().to_string(),
                    ),
                ]
            }
            None => vec![
                ("period".to_string(), String::new()),
                ("due_at".to_string(), String::new()),
            ],
        };
        Blueprint {
            uid: crate::uid::new_uid(),
            adopt: Vec::new(),
            kind: Kind::Circular,
            params: self.params.clone(),
            extra,
            gens: vec![(self.layout, self.gen_capacity); self.n as usize],
        }
    }

    /// Creates or opens; also says which happened.
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<(CircularFilter, Opened)> {
        let now = match self.clock.now() {
            Some(t) => t,
            None => crate::exec::run(conn, TimeMachine::default())?,
        };
        let (mut core, how) =
            engine::create(conn, Keys::new(self.name.clone()), self.blueprint(now))?;
        core.clock = self.clock.clone();
        Ok((CircularFilter { core }, how))
    }

    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<(CircularFilter, Opened)> {
        let now = match self.clock.now() {
            Some(t) => t,
            None => crate::exec::run_async(conn, TimeMachine::default()).await?,
        };
        let (mut core, how) =
            engine::create_async(conn, Keys::new(self.name.clone()), self.blueprint(now)).await?;
        core.clock = self.clock.clone();
        Ok((CircularFilter { core }, how))
    }
}

fn schedule_of(meta: &Meta) -> Result<Option<Schedule>> {
    match meta.fields.get("schedule").map(String::as_str) {
        None | Some("") => Ok(None),
        Some(s) => s.parse().map(Some).map_err(|_| Error::CorruptMetadata {
            name: meta.name.clone(),
            field: "schedule".into(),
            reason: format!("{s:?} is not a schedule"),
        }),
    }
}

fn due_at(meta: &Meta) -> Option<DateTime<Utc>> {
    let ms: i64 = meta.fields.get("due_at")?.parse().ok()?;
    Utc.timestamp_millis_opt(ms).single()
}

/// Reads the Redis server's clock (`TIME`).
#[derive(Default)]
pub(crate) struct TimeMachine {
    sent: bool,
}

impl Machine for TimeMachine {
    type Output = DateTime<Utc>;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<DateTime<Utc>>> {
        if !self.sent {
            self.sent = true;
            return Ok(Poll::Send(Request::new().cmd(redis::cmd("TIME"))));
        }
        let v = take_one(replies)??;
        let (secs, micros): (i64, i64) =
            redis::from_redis_value(v).map_err(|e| Error::UnexpectedReply(format!("TIME: {e}")))?;
        Utc.timestamp_opt(secs, (micros.clamp(0, 999_999) * 1000) as u32)
            .single()
            .map(Poll::Ready)
            .ok_or_else(|| Error::UnexpectedReply("TIME out of range".into()))
    }
}

enum RotateState {
    Start,
    Time,
    Prealloc(Box<PreallocMachine>, Request, u32),
    Sent(u32),
    Reload(Option<u32>),
}

/// Rotations: manual (compare-and-set on the epoch) or scheduled
/// (compare-and-set on the epoch and the period).
pub(crate) struct RotateMachine {
    core: Core,
    scheduled: bool,
    now: Option<DateTime<Utc>>,
    state: RotateState,
    stalls: u32,
    epoch_seen: u64,
}

impl RotateMachine {
    pub(crate) fn manual(core: Core) -> RotateMachine {
        let epoch_seen = core.view().epoch;
        RotateMachine {
            core,
            scheduled: false,
            now: None,
            state: RotateState::Start,
            stalls: 0,
            epoch_seen,
        }
    }

    pub(crate) fn if_due(core: Core, now: Option<DateTime<Utc>>) -> RotateMachine {
        let epoch_seen = core.view().epoch;
        RotateMachine {
            core,
            scheduled: true,
            now,
            state: RotateState::Start,
            stalls: 0,
            epoch_seen,
        }
    }

    /// From the current view and `now`, either the answer or the rotation
    /// to attempt (after allocating the first new generation's blocks).
    fn decide(&mut self) -> Result<Poll<Rotation>> {
        let meta = self.core.view();
        let n = meta.gens.len() as u32;
        let (k, period, due) = if self.scheduled {
            let Some(schedule) = schedule_of(&meta)? else {
                return Err(Error::InvalidParameter {
                    name: "schedule",
                    reason: format!("filter {:?} has no schedule; use rotate()", meta.name),
                });
            };
            let now = self
                .now
                .ok_or_else(|| Error::UnexpectedReply("no time".into()))?;
            let p = schedule.period(now);
            let last: i64 = meta.param("period")?;
            if p <= last {
                return Ok(Poll::Ready(Rotation::NotDue {
                    next_at: schedule.boundary(last.max(p) + 1),
                }));
            }
            let owed = u32::try_from(p - last).unwrap_or(u32::MAX).min(n);
            (
                owed,
                Some((last, p)),
                schedule.boundary(p + 1).timestamp_millis().to_string(),
            )
        } else {
            (1, None, String::new())
        };
        let newest = meta.newest();
        let oldest = &meta.gens[..k as usize];
        let mut keys = vec![self.core.keys.meta().to_string(), self.core.keys.fence()];
        for g in oldest {
            keys.extend((0..g.layout.blocks).map(|b| self.core.keys.block(&meta.uid, g.seq, b)));
        }
        let mut cmd = scripts::ROTATE.invoke(&keys);
        cmd.arg(&meta.uid).arg(meta.epoch);
        match period {
            Some((last, p)) => cmd.arg(last).arg(p),
            None => cmd.arg("").arg(""),
        };
        cmd.arg(&due).arg(k);
        for i in 0..u64::from(k) {
            let l = newest.layout;
            cmd.arg(format!(
                "{}|{}|{}|{}|{}|{}",
                meta.next_seq + i,
                l.bits,
                l.hashes,
                l.blocks,
                newest.capacity,
                l.scheme.as_str()
            ));
        }
        let mut req = Request::new();
        req.script(&scripts::ROTATE, cmd);
        // Only the generation that starts taking writes now is allocated
        // ahead: after missed runs the others fill lazily. A RedisBloom
        // generation must exist before use, so all of them are reserved.
        let ahead = if newest.layout.scheme.is_module() {
            u64::from(k)
        } else {
            1
        };
        let gens: Vec<(u64, Layout, u64)> = (0..ahead)
            .map(|i| (meta.next_seq + i, newest.layout, newest.capacity))
            .collect();
        let blocks = self.core.blocks_of(&meta, &gens);
        let mut pre = Box::new(PreallocMachine::new(self.core.clone(), blocks));
        match pre.step(None)? {
            Poll::Send(r) => {
                self.state = RotateState::Prealloc(pre, req, k);
                Ok(Poll::Send(r))
            }
            Poll::Ready(()) => {
                self.state = RotateState::Sent(k);
                Ok(Poll::Send(req))
            }
        }
    }

    fn reload(&mut self, rotated: Option<u32>) -> Result<Poll<Rotation>> {
        self.state = RotateState::Reload(rotated);
        Ok(Poll::Send(hgetall(&self.core.keys)))
    }
}

impl Machine for RotateMachine {
    type Output = Rotation;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Rotation>> {
        match std::mem::replace(&mut self.state, RotateState::Start) {
            RotateState::Start => {
                if self.scheduled && self.now.is_none() {
                    self.now = self.core.clock.now();
                    if self.now.is_none() {
                        self.state = RotateState::Time;
                        return Ok(Poll::Send(Request::new().cmd(redis::cmd("TIME"))));
                    }
                }
                self.decide()
            }
            RotateState::Time => {
                let mut t = TimeMachine { sent: true };
                match t.step(replies)? {
                    Poll::Ready(now) => self.now = Some(now),
                    Poll::Send(_) => return Err(Error::UnexpectedReply("TIME".into())),
                }
                self.decide()
            }
            RotateState::Prealloc(mut pre, req, k) => match pre.step(replies)? {
                Poll::Send(r) => {
                    self.state = RotateState::Prealloc(pre, req, k);
                    Ok(Poll::Send(r))
                }
                Poll::Ready(()) => {
                    self.state = RotateState::Sent(k);
                    Ok(Poll::Send(req))
                }
            },
            RotateState::Sent(k) => match take_one(replies)?? {
                redis::Value::Int(_) => self.reload(Some(k)),
                _ => {
                    self.stalls += 1;
                    if self.stalls > self.core.max_retries {
                        return Err(Error::Contention {
                            name: self.core.name().to_string(),
                            retries: self.stalls,
                        });
                    }
                    self.reload(None)
                }
            },
            RotateState::Reload(rotated) => {
                let meta = decode_meta(self.core.name(), take_one(replies)?)?;
                self.core.accept(meta)?;
                let meta = self.core.view();
                match rotated {
                    Some(k) => Ok(Poll::Ready(Rotation::Rotated {
                        rotations: k,
                        epoch: meta.epoch,
                        next_at: if self.scheduled { due_at(&meta) } else { None },
                    })),
                    None if !self.scheduled => {
                        if meta.epoch != self.epoch_seen {
                            Ok(Poll::Ready(Rotation::Superseded { epoch: meta.epoch }))
                        } else {
                            // The filter was re-created or its view was
                            // old in a way that left the epoch: try again.
                            self.decide()
                        }
                    }
                    None => self.decide(),
                }
            }
        }
    }
}
