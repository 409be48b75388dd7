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

use crate::bloom::backend_of;
use crate::clock::{Clock, ServerClock};
use crate::engine::chain::MachineExt;
use crate::engine::create;
use crate::engine::now::Now;
use crate::engine::probe::probed;
use crate::engine::roll::{Decide, DueRotation, RollMachine, Rotation, Step};
use crate::error::{Error, Result};
use crate::generation::{Backend, Layout};
use crate::handle::{
    sealed::{Opens, Sealed},
    Filter, FilterKind, OneKind,
};
use crate::keys::{FilterName, Keys};
use crate::metadata::{field, fmt_f64, Common, Fields, Kind};
use crate::params::{BloomParams, ErrorRate, DEFAULT_MAX_BITS, DEFAULT_MAX_BLOCK_BITS};
use crate::proto::create::{Blueprint, Opened};
use crate::schedule::Schedule;
use crate::view::{Accept, Codec, Due, NewGen, Policy, Role, Roll, View};
use crate::wait::WaitReplicas;
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
pub type CircularFilter = Filter<Circular>;

/// The circular filter's kind: [`CircularFilter`] is `Filter<Circular>`.
#[derive(Debug)]
pub enum Circular {}

impl Sealed for Circular {
    fn accept() -> Opens {
        Opens(Accept::One(CODEC))
    }
}

impl FilterKind for Circular {}

impl OneKind for Circular {}

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
            backend: Backend::Bitmap,
            wait: None,
        }
    }

    /// The same filter, reading `now` from `clock` (for tests, backfills,
    /// or hosts that must use their own clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> CircularFilter {
        self.core.clock = clock;
        self
    }

    fn policy(&self) -> Option<CircularPolicy> {
        self.core
            .view()
            .policy
            .as_any()
            .downcast_ref::<CircularPolicy>()
            .cloned()
    }

    /// The rotation schedule, if the filter has one.
    pub fn schedule(&self) -> Option<Schedule> {
        self.policy().and_then(|p| p.schedule)
    }

    /// Rotations so far, as last read from Redis.
    pub fn epoch(&self) -> u64 {
        self.core.view().epoch
    }

    /// When the next scheduled rotation is due, as last read from Redis.
    pub fn next_rotation_at(&self) -> Option<DateTime<Utc>> {
        self.policy()
            .and_then(|p| p.state)
            .and_then(|s| Utc.timestamp_millis_opt(s.due_at).single())
    }

    /// Rotates once now, if the filter has not changed since this handle
    /// last saw it (compare-and-set on the epoch): of many concurrent calls
    /// with the same view, one rotates and the others get
    /// [`Rotation::Superseded`]. Leaves the schedule alone.
    pub fn rotate<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<Rotation> {
        self.core.run(conn, self.manual())
    }

    #[cfg(feature = "async")]
    /// Async [`rotate`](Self::rotate).
    pub async fn rotate_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<Rotation> {
        self.core.run_async(conn, self.manual()).await
    }

    /// Performs exactly the rotations owed by the schedule at the clock's
    /// `now`: none if this period's rotation is done, several after missed
    /// runs (at most N, which empties the window), and once per period
    /// however many processes or hosts call it at the same moment.
    pub fn rotate_if_due<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<Rotation> {
        self.core.run(conn, self.due(None))
    }

    #[cfg(feature = "async")]
    /// Async [`rotate_if_due`](Self::rotate_if_due).
    pub async fn rotate_if_due_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<Rotation> {
        self.core.run_async(conn, self.due(None)).await
    }

    /// [`rotate_if_due`](Self::rotate_if_due) at an explicit `now`.
    pub fn rotate_if_due_at<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        now: DateTime<Utc>,
    ) -> Result<Rotation> {
        self.core.run(conn, self.due(Some(now)))
    }

    #[cfg(feature = "async")]
    /// Async [`rotate_if_due_at`](Self::rotate_if_due_at).
    pub async fn rotate_if_due_at_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
        now: DateTime<Utc>,
    ) -> Result<Rotation> {
        self.core.run_async(conn, self.due(Some(now))).await
    }

    fn manual(&self) -> impl crate::exec::Machine<Output = Rotation> + Send {
        let epoch_seen = self.core.view().epoch;
        probed(
            &self.core,
            RollMachine::new(self.core.clone(), ManualRotation { epoch_seen }),
        )
    }

    fn due(
        &self,
        now: Option<DateTime<Utc>>,
    ) -> impl crate::exec::Machine<Output = Rotation> + Send {
        // The clock read once, here, at the operation's edge.
        let clock: Arc<dyn Clock> = match now {
            Some(at) => Arc::new(crate::clock::FixedClock(at)),
            None => Arc::clone(&self.core.clock),
        };
        let core = self.core.clone();
        let m = Now::new(clock).then(move |now| {
            Ok(RollMachine::with_view(
                core.clone(),
                core.view(),
                DueRotation::new(),
                Some(now),
            ))
        });
        probed(&self.core, m)
    }
}

/// A manual rotation: drop the oldest generation, append a copy of the
/// newest's shape.
struct ManualRotation {
    epoch_seen: u64,
}

impl Decide for ManualRotation {
    type Output = Rotation;

    fn decide(&mut self, view: &View, _: Option<DateTime<Utc>>) -> Result<Step<Rotation>> {
        Ok(Step::Roll(rotation(view, 1, Vec::new(), Vec::new())))
    }

    fn settle(&mut self, view: &View, rolled: bool) -> Result<Option<Rotation>> {
        Ok(match rolled {
            true => Some(Rotation::Rotated {
                rotations: 1,
                epoch: view.epoch,
                next_at: None,
            }),
            // Another process changed the filter first; a handle whose
            // view was old in a way that left the epoch tries again.
            false if view.epoch != self.epoch_seen => {
                Some(Rotation::Superseded { epoch: view.epoch })
            }
            false => None,
        })
    }
}

/// `k` rotations: the `k` oldest generations go, `k` new ones of the
/// newest's shape come, every one allocated before the roll (a block that
/// does not exist later is lost data).
fn rotation(
    c: &Common,
    k: u32,
    expect: Vec<(&'static str, String)>,
    set: Vec<(&'static str, String)>,
) -> Roll {
    let newest = c.newest();
    Roll {
        drop: k as usize,
        add: (0..u64::from(k))
            .map(|i| NewGen {
                seq: c.next_seq.saturating_add(i),
                layout: newest.layout,
                capacity: newest.capacity,
            })
            .collect(),
        expect,
        set,
        allocate: k as usize,
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
    backend: Backend,
    wait: Option<WaitReplicas>,
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
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }
    /// Makes the creation and every write of the handle wait for
    /// replicas (see [`WaitReplicas`](crate::WaitReplicas)).
    pub fn wait_replicas(mut self, wait: crate::WaitReplicas) -> Self {
        self.wait = Some(wait);
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
        let policy = CircularPolicy {
            n,
            mode: self.mode,
            capacity: self.capacity,
            error_rate: p,
            schedule,
            lazy: self.lazy,
            state: None,
            max_bits: self.max_bits,
            max_block_bits: self.max_block_bits.clamp(8, crate::MAX_BLOCK_BITS),
            backend: self.backend,
        };
        Ok(CircularSpec {
            name,
            params: policy.params(),
            layout,
            gen_capacity,
            n,
            schedule,
            clock: self.clock.clone(),
            wait: self.wait,
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

    #[cfg(feature = "async")]
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
    wait: Option<WaitReplicas>,
}

impl CircularSpec {
    /// The same spec, its creation and the handle's writes waiting for
    /// replicas (see [`WaitReplicas`](crate::WaitReplicas)).
    pub fn with_wait_replicas(mut self, wait: Option<crate::WaitReplicas>) -> Self {
        self.wait = wait;
        self
    }

    /// The generations a creation makes (all N), each a layout and a
    /// capacity.
    pub fn initial_generations(&self) -> Vec<(Layout, u64)> {
        vec![(self.layout, self.gen_capacity); self.n as usize]
    }

    fn blueprint(&self, now: DateTime<Utc>) -> Result<Blueprint> {
        let extra = match self.schedule {
            Some(s) => {
                let state = ScheduleState::at(&s, s.period(now)).ok_or_else(|| {
                    Error::InvalidParameter {
                        name: "schedule",
                        reason: format!(
                            "its next boundary after {now} is not a representable time"
                        ),
                    }
                })?;
                state.fields()
            }
            None => vec![
                (field::PERIOD, String::new()),
                (field::DUE_AT, String::new()),
            ],
        };
        Ok(Blueprint {
            uid: crate::uid::new_uid(),
            adopt: Vec::new(),
            kind: Kind::Circular,
            params: self.params.clone(),
            extra,
            gens: self.initial_generations(),
            leased: Vec::new(),
        })
    }

    fn machine(&self) -> impl crate::exec::Machine<Output = (CircularFilter, Opened)> + Send {
        let spec = self.clone();
        Now::new(self.clock.clone()).then(move |now| {
            let bp = spec.blueprint(now)?;
            let clock = spec.clock.clone();
            let wait = spec.wait;
            Ok(
                create::create_or_open(Keys::new(spec.name.clone()), Accept::One(CODEC), bp).map(
                    move |(mut core, how)| {
                        core.clock = clock;
                        core.wait = wait;
                        Ok((CircularFilter::from_core(core), how))
                    },
                ),
            )
        })
    }

    /// Creates or opens; also says which happened.
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<(CircularFilter, Opened)> {
        crate::exec::run(conn, self.machine(), self.wait)
    }

    #[cfg(feature = "async")]
    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<(CircularFilter, Opened)> {
        crate::exec::run_async(conn, self.machine(), self.wait).await
    }
}

/// Where a schedule stands: the period of the last scheduled rotation (or
/// of the creation) and when the next one is due, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScheduleState {
    period: i64,
    due_at: i64,
}

impl ScheduleState {
    /// The state in period `p`; `None` when the next boundary is not a
    /// representable time.
    fn at(s: &Schedule, p: i64) -> Option<ScheduleState> {
        let next = s.checked_boundary(p.checked_add(1)?)?;
        Some(ScheduleState {
            period: p,
            due_at: next.timestamp_millis(),
        })
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            (field::PERIOD, self.period.to_string()),
            (field::DUE_AT, self.due_at.to_string()),
        ]
    }
}

/// A circular filter's parameters and schedule state.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CircularPolicy {
    n: u32,
    mode: Mode,
    capacity: u64,
    error_rate: f64,
    schedule: Option<Schedule>,
    lazy: bool,
    /// With a schedule: where it stands.
    state: Option<ScheduleState>,
    max_bits: u64,
    max_block_bits: u64,
    backend: Backend,
}

impl Policy for CircularPolicy {
    fn kind(&self) -> Kind {
        Kind::Circular
    }

    fn params(&self) -> Vec<(&'static str, String)> {
        vec![
            (field::GENERATIONS, self.n.to_string()),
            (field::MODE, self.mode.as_str().to_string()),
            (field::CAPACITY, self.capacity.to_string()),
            (field::ERROR_RATE, fmt_f64(self.error_rate)),
            (
                field::SCHEDULE,
                self.schedule.map(|s| s.to_string()).unwrap_or_default(),
            ),
            (field::LAZY, if self.lazy { "1" } else { "0" }.to_string()),
            (field::BACKEND, self.backend.as_str().to_string()),
            (field::MAX_BITS, self.max_bits.to_string()),
            (field::MAX_BLOCK_BITS, self.max_block_bits.to_string()),
        ]
    }

    fn roles(&self, c: &Common) -> Vec<Role> {
        let n = c.gens.len();
        match self.mode {
            Mode::InsertNewestQueryAll => (0..n)
                .map(|i| {
                    if i + 1 == n {
                        Role::Decide
                    } else {
                        Role::Query
                    }
                })
                .collect(),
            Mode::InsertAllQueryOldest => (0..n)
                .map(|i| if i == 0 { Role::Decide } else { Role::Write })
                .collect(),
        }
    }

    fn pending(&self, c: &Common, _: &crate::view::Growth) -> Option<NewGen> {
        rotation(c, 1, Vec::new(), Vec::new()).add.first().copied()
    }

    fn lazy_due_at(&self) -> Option<i64> {
        self.state.filter(|_| self.lazy).map(|s| s.due_at)
    }

    fn due(&self, c: &Common, now: DateTime<Utc>) -> Result<Due> {
        let (Some(schedule), Some(state)) = (self.schedule, self.state) else {
            return Ok(Due::Unscheduled);
        };
        let p = schedule.period(now);
        let unrepresentable = || Error::InvalidParameter {
            name: "now",
            reason: format!("{now} is too far from the schedule's periods"),
        };
        if p <= state.period {
            let next = ScheduleState::at(&schedule, state.period).ok_or_else(unrepresentable)?;
            return Ok(Due::Later {
                next_at: Utc
                    .timestamp_millis_opt(next.due_at)
                    .single()
                    .ok_or_else(unrepresentable)?,
            });
        }
        let owed = u32::try_from(p.saturating_sub(state.period))
            .unwrap_or(u32::MAX)
            .min(self.n);
        let next = ScheduleState::at(&schedule, p).ok_or_else(unrepresentable)?;
        let next_at = Utc
            .timestamp_millis_opt(next.due_at)
            .single()
            .ok_or_else(unrepresentable)?;
        Ok(Due::Owed {
            roll: rotation(
                c,
                owed,
                vec![(field::PERIOD, state.period.to_string())],
                next.fields(),
            ),
            rotations: owed,
            next_at,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn decode(f: &Fields, c: &Common) -> Result<Arc<dyn Policy>> {
    let n = f.u64_in(field::GENERATIONS, 2, u64::from(MAX_CIRCULAR_GENERATIONS))? as u32;
    if c.gens.len() != n as usize {
        return Err(f.corrupt(
            field::GENS,
            format!("lists {} generations, but the filter has {n}", c.gens.len()),
        ));
    }
    let schedule = match f.str(field::SCHEDULE)? {
        "" => None,
        _ => Some(f.parsed::<Schedule>(field::SCHEDULE)?),
    };
    let lazy = match f.str(field::LAZY)? {
        "0" => false,
        "1" => true,
        other => return Err(f.corrupt(field::LAZY, format!("{other:.40?} is not 0 or 1"))),
    };
    let state = match schedule {
        None => {
            if lazy {
                return Err(f.corrupt(field::LAZY, "lazy rotation without a schedule"));
            }
            for fld in [field::PERIOD, field::DUE_AT] {
                if !f.str(fld)?.is_empty() {
                    return Err(f.corrupt(fld, "set, but the filter has no schedule"));
                }
            }
            None
        }
        Some(s) => {
            let period = f.i64(field::PERIOD)?;
            let due_at = f.i64(field::DUE_AT)?;
            let state = ScheduleState::at(&s, period).ok_or_else(|| {
                f.corrupt(
                    field::PERIOD,
                    format!("period {period} has no representable end"),
                )
            })?;
            // The deadline is derived from the period; one that disagrees
            // would make lazy rotation wait for a rotation never owed.
            if state.due_at != due_at {
                return Err(f.corrupt(
                    field::DUE_AT,
                    format!(
                        "{due_at} is not the end of period {period}, {}",
                        state.due_at
                    ),
                ));
            }
            Some(state)
        }
    };
    Ok(Arc::new(CircularPolicy {
        n,
        mode: f.parsed(field::MODE)?,
        capacity: f.u64_in(field::CAPACITY, 1, u64::MAX)?,
        error_rate: f.rate(field::ERROR_RATE)?,
        schedule,
        lazy,
        state,
        max_bits: f.u64_in(field::MAX_BITS, crate::MIN_BITS, u64::MAX)?,
        max_block_bits: f.u64_in(field::MAX_BLOCK_BITS, 8, crate::MAX_BLOCK_BITS)?,
        backend: backend_of(f, c)?,
    }))
}

/// How circular filters are read from their metadata.
pub(crate) const CODEC: Codec = Codec {
    kind: Kind::Circular,
    decode,
    absorb: None,
};
