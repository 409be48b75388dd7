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
use crate::handle::{
    sealed::{Opens, Sealed},
    Filter, FilterKind, OneKind,
};
use crate::keys::{FilterName, Keys};
use crate::metadata::{field, fmt_f64, Common, Fields, Kind};
use crate::params::{BloomParams, ErrorRate, DEFAULT_MAX_BITS, DEFAULT_MAX_BLOCK_BITS};
use crate::proto::create::{Blueprint, Opened};
use crate::schedule::Schedule;
use crate::store::generation::{Backend, Layout};
use crate::view::{Accept, Codec, Due, NewGen, Policy, Role, Roll, View};
use crate::wait::WaitReplicas;
use chrono::{DateTime, TimeZone, Utc};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

// The handle and its kind are here; the modes, what builds one, its manual
// rotation and what its metadata means each have their file.
mod builder;
mod mode;
mod policy;
mod rotation;

pub use builder::{generation_sizing, CircularBuilder, CircularSpec};
pub use mode::Mode;
pub(crate) use policy::{CircularPolicy, ScheduleState, CODEC};
use rotation::{rotation, ManualRotation, RotateTo};

/// The most generations a circular filter may have.
pub const MAX_CIRCULAR_GENERATIONS: u32 = 256;

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

    /// Rotates until the epoch is `epoch`, none when it is there: how a
    /// shard converges to its root's target (docs/FORMAT.md §11.8), the
    /// same however many runs do it at once. With `period`, records that
    /// scheduled period as the scheduled rotation does.
    pub(crate) fn rotate_to<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        epoch: u64,
        period: Option<i64>,
    ) -> Result<Rotation> {
        let m = RollMachine::new(self.core.clone(), RotateTo::new(epoch, period));
        self.core.run(conn, probed(&self.core, m))
    }

    fn manual(&self) -> impl crate::machine::Machine<Output = Rotation> + Send {
        // One snapshot: the epoch the rotation was asked from is the
        // epoch of the view it decides on.
        let view = self.core.view();
        let epoch_seen = view.epoch;
        probed(
            &self.core,
            RollMachine::with_view(self.core.clone(), view, ManualRotation { epoch_seen }, None),
        )
    }

    fn due(
        &self,
        now: Option<DateTime<Utc>>,
    ) -> impl crate::machine::Machine<Output = Rotation> + Send {
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
