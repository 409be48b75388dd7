//! The expanding filter: frozen generations plus a newest one that takes the
//! writes; when the newest reaches its capacity a bigger one is added, in
//! the same atomic step as the write that filled it.
//!
//! Generation `i` holds `n0 * s^i` items at false-positive rate
//! `p * (1 - r) * r^i` (growth `s`, tightening `r`). A query checks every
//! generation and is a false positive if any of them says so, so its rate is
//! at most the sum `p (1 - r) (1 + r + r^2 + ...) = p`, however many
//! generations there are. With the default `r = 1/2`, generation `i` gets
//! `p / 2^(i+1)`.

use crate::engine::{self, Blueprint, Core, Growth, Opened};
use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies, Request};
use crate::generation::Layout;
use crate::keys::{FilterName, Keys};
use crate::metadata::{fmt_f64, Kind, Meta};
use crate::ops::impl_filter_ops;
use crate::params::{BloomParams, ErrorRate, DEFAULT_MAX_BITS, DEFAULT_MAX_BLOCK_BITS};
use crate::scripts;

/// The most generations a filter may be configured for.
pub const MAX_GENERATIONS: u32 = 1024;

/// A Bloom filter that grows without a rebuild: old generations are frozen,
/// new writes go to a bigger one, reads check all of them, and the total
/// false-positive rate stays at most the configured `p`.
///
/// Growth `s` trades memory for the number of generations: with `s = 2`
/// each generation is twice the previous one, so after `g` generations the
/// filter holds `n0 (2^g - 1)` items and a query checks `g` generations
/// (`log2` of the growth factor). Tightening `r` trades the newer
/// generations' size for the older ones': a smaller `r` gives the first
/// generation more of the error budget (`p (1 - r)`) and every later one
/// less, which costs about `log2(1/r) / ln 2` extra bits per item for each
/// step.
///
/// ```no_run
/// use rotabloom::ExpandingFilter;
/// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let f = ExpandingFilter::builder("crawl")
///     .capacity(1_000_000)      // n0, the first generation
///     .error_rate(0.001)        // bound on the whole filter
///     .create_or_open(&mut conn)?;
/// f.check_and_insert(&mut conn, "http://example.com/")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ExpandingFilter {
    core: Core,
}

impl_filter_ops!(
    ExpandingFilter,
    "# let mut conn = redis::Client::open(\"redis://127.0.0.1/\")?.get_connection()?;\nlet f = rotabloom::ExpandingFilter::builder(\"crawl\").capacity(1_000_000).error_rate(0.01).create_or_open(&mut conn)?;"
);

impl ExpandingFilter {
    /// Starts describing an expanding filter called `name`.
    pub fn builder(name: impl Into<String>) -> ExpandingBuilder {
        ExpandingBuilder {
            name: name.into(),
            capacity: 0,
            error_rate: 0.01,
            growth: 2.0,
            tightening: 0.5,
            max_generations: 32,
            max_bytes: 0,
            max_bits: DEFAULT_MAX_BITS,
            max_block_bits: DEFAULT_MAX_BLOCK_BITS,
        }
    }

    /// Opens an existing expanding filter.
    pub fn open<C: redis::ConnectionLike + ?Sized>(
        conn: &mut C,
        name: &str,
    ) -> Result<ExpandingFilter> {
        Ok(ExpandingFilter {
            core: engine::open(conn, name, Kind::Expanding)?,
        })
    }

    /// Async [`open`](Self::open).
    pub async fn open_async<C: redis::aio::ConnectionLike + Send>(
        conn: &mut C,
        name: &str,
    ) -> Result<ExpandingFilter> {
        Ok(ExpandingFilter {
            core: engine::open_async(conn, name, Kind::Expanding).await?,
        })
    }

    /// Generations, as last read from Redis (oldest first).
    pub fn generations(&self) -> Vec<crate::Generation> {
        self.core.view().gens.clone()
    }

    /// Freezes the newest generation now and adds the next one, if the
    /// filter has not changed since this handle last saw it (compare-and-set
    /// on the epoch). Returns `true` if this call expanded, `false` if
    /// another process changed the filter first (the handle then holds the
    /// new state). Of many concurrent calls with the same view, one expands.
    pub fn expand<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<bool> {
        crate::exec::run(conn, ExpandMachine::new(self.core.clone()))
    }

    /// Async [`expand`](Self::expand).
    pub async fn expand_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<bool> {
        crate::exec::run_async(conn, ExpandMachine::new(self.core.clone())).await
    }
}

/// Describes an [`ExpandingFilter`]; checked by [`spec`](Self::spec).
#[derive(Clone, Debug)]
#[must_use]
pub struct ExpandingBuilder {
    name: String,
    capacity: u64,
    error_rate: f64,
    growth: f64,
    tightening: f64,
    max_generations: u32,
    max_bytes: u64,
    max_bits: u64,
    max_block_bits: u64,
}

impl ExpandingBuilder {
    /// Items of the first generation (n0).
    pub fn capacity(mut self, n0: u64) -> Self {
        self.capacity = n0;
        self
    }
    /// Bound on the false-positive rate of the whole filter (p). Default 0.01.
    pub fn error_rate(mut self, p: f64) -> Self {
        self.error_rate = p;
        self
    }
    /// Capacity factor from one generation to the next (s >= 1). Default 2.
    pub fn growth(mut self, s: f64) -> Self {
        self.growth = s;
        self
    }
    /// Error-rate factor from one generation to the next (0 < r < 1).
    /// Default 0.5.
    pub fn tightening(mut self, r: f64) -> Self {
        self.tightening = r;
        self
    }
    /// Most generations (default 32); past it, writes that need a new
    /// generation fail with [`Error::LimitReached`].
    pub fn max_generations(mut self, n: u32) -> Self {
        self.max_generations = n;
        self
    }
    /// Most bytes of all generations together (0, the default, for no
    /// limit); past it, writes that need a new generation fail with
    /// [`Error::LimitReached`].
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
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

    /// Validates the description.
    pub fn spec(&self) -> Result<ExpandingSpec> {
        let name = FilterName::new(&self.name)?;
        let p = ErrorRate::new(self.error_rate)?.get();
        let invalid =
            |name: &'static str, reason: String| Err(Error::InvalidParameter { name, reason });
        if !(self.growth.is_finite() && (1.0..=16.0).contains(&self.growth)) {
            return invalid("growth", format!("{} is not between 1 and 16", self.growth));
        }
        if !(self.tightening.is_finite() && self.tightening > 0.0 && self.tightening < 1.0) {
            return invalid(
                "tightening",
                format!("{} is not strictly between 0 and 1", self.tightening),
            );
        }
        if self.max_generations == 0 || self.max_generations > MAX_GENERATIONS {
            return invalid(
                "max_generations",
                format!(
                    "{} is not between 1 and {MAX_GENERATIONS}",
                    self.max_generations
                ),
            );
        }
        let first = BloomParams::for_capacity_within(
            self.capacity,
            p * (1.0 - self.tightening),
            self.max_bits,
        )?;
        let layout = Layout::split(first, self.max_block_bits);
        if self.max_bytes > 0 && layout.bytes() > self.max_bytes {
            return invalid(
                "max_bytes",
                format!(
                    "{} is less than the first generation's {} bytes",
                    self.max_bytes,
                    layout.bytes()
                ),
            );
        }
        let params = vec![
            ("capacity", self.capacity.to_string()),
            ("error_rate", fmt_f64(p)),
            ("growth", fmt_f64(self.growth)),
            ("tightening", fmt_f64(self.tightening)),
            ("max_generations", self.max_generations.to_string()),
            ("max_bytes", self.max_bytes.to_string()),
            ("max_bits", self.max_bits.to_string()),
            (
                "max_block_bits",
                self.max_block_bits
                    .clamp(8, crate::MAX_BLOCK_BITS)
                    .to_string(),
            ),
        ];
        Ok(ExpandingSpec {
            name,
            params,
            first: layout,
            capacity: self.capacity,
        })
    }

    /// Creates the filter, or opens it when it exists with the same
    /// parameters.
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<ExpandingFilter> {
        self.spec()?.create_or_open(conn).map(|(f, _)| f)
    }

    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        self,
        conn: &mut C,
    ) -> Result<ExpandingFilter> {
        self.spec()?
            .create_or_open_async(conn)
            .await
            .map(|(f, _)| f)
    }
}

/// A validated [`ExpandingBuilder`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExpandingSpec {
    name: FilterName,
    params: Vec<(&'static str, String)>,
    first: Layout,
    capacity: u64,
}

impl ExpandingSpec {
    fn blueprint(&self) -> Blueprint {
        Blueprint {
            kind: Kind::Expanding,
            params: self.params.clone(),
            extra: Vec::new(),
            gens: vec![(self.first, self.capacity)],
        }
    }

    /// Creates or opens; also says which happened.
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<(ExpandingFilter, Opened)> {
        let (core, how) = engine::create(conn, Keys::new(self.name.clone()), self.blueprint())?;
        Ok((ExpandingFilter { core }, how))
    }

    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<(ExpandingFilter, Opened)> {
        let (core, how) =
            engine::create_async(conn, Keys::new(self.name.clone()), self.blueprint()).await?;
        Ok((ExpandingFilter { core }, how))
    }
}

/// The generation to add when the newest fills up, or `Limit` when a limit
/// forbids it. Pure.
pub(crate) fn growth(meta: &Meta) -> Result<Growth> {
    let n0: f64 = meta.param::<u64>("capacity")? as f64;
    let p: f64 = meta.param("error_rate")?;
    let s: f64 = meta.param("growth")?;
    let r: f64 = meta.param("tightening")?;
    let max_gens: u64 = meta.param("max_generations")?;
    let max_bytes: u64 = meta.param("max_bytes")?;
    let max_bits: u64 = meta.param("max_bits")?;
    let max_block_bits: u64 = meta.param("max_block_bits")?;
    let i = meta.gens.len();
    if i as u64 >= max_gens {
        return Ok(Growth::Limit);
    }
    let cap = (n0 * s.powi(i as i32)).ceil();
    let rate = p * (1.0 - r) * r.powi(i as i32);
    if !(cap.is_finite() && cap >= 1.0 && cap < u64::MAX as f64) {
        return Ok(Growth::Limit);
    }
    let Ok(params) = BloomParams::for_capacity_within(cap as u64, rate, max_bits) else {
        return Ok(Growth::Limit);
    };
    let layout = Layout::split(params, max_block_bits);
    let used: u64 = meta.gens.iter().map(|g| g.layout.bytes()).sum();
    if max_bytes > 0 && used.saturating_add(layout.bytes()) > max_bytes {
        return Ok(Growth::Limit);
    }
    Ok(Growth::Next {
        seq: meta.next_seq,
        layout,
        capacity: cap as u64,
    })
}

/// Human words for the limit an expanding filter reached.
pub(crate) fn limit_description(meta: &Meta) -> String {
    let gens = meta.gens.len();
    let max_gens = meta
        .fields
        .get("max_generations")
        .map(String::as_str)
        .unwrap_or("?");
    let max_bytes = meta
        .fields
        .get("max_bytes")
        .map(String::as_str)
        .unwrap_or("0");
    format!("{gens} generations (max_generations = {max_gens}, max_bytes = {max_bytes}); the newest is full")
}

enum ExpandState {
    Idle,
    Prealloc,
    Sent,
    Reload,
}

/// Manual expansion: allocate the next generation, then compare-and-set.
struct ExpandMachine {
    core: Core,
    state: ExpandState,
    prealloc: Option<engine::PreallocMachine>,
    expanded: bool,
}

impl ExpandMachine {
    fn new(core: Core) -> ExpandMachine {
        ExpandMachine {
            core,
            state: ExpandState::Idle,
            prealloc: None,
            expanded: false,
        }
    }

    fn cas(&mut self) -> Result<Poll<bool>> {
        let meta = self.core.view();
        let Growth::Next {
            seq,
            layout,
            capacity,
        } = growth(&meta)?
        else {
            return Err(Error::LimitReached {
                name: self.core.name().to_string(),
                limit: limit_description(&meta),
            });
        };
        let mut cmd = scripts::EXPAND.invoke(&[self.core.keys.meta()]);
        cmd.arg(&meta.uid)
            .arg(meta.epoch)
            .arg(seq)
            .arg(layout.bits)
            .arg(layout.hashes)
            .arg(layout.blocks)
            .arg(capacity)
            .arg(layout.scheme.as_str());
        let mut req = Request::new();
        req.script(&scripts::EXPAND, cmd);
        self.state = ExpandState::Sent;
        Ok(Poll::Send(req))
    }
}

impl Machine for ExpandMachine {
    type Output = bool;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<bool>> {
        match std::mem::replace(&mut self.state, ExpandState::Idle) {
            ExpandState::Idle => {
                let meta = self.core.view();
                let blocks = match engine::pending_generation(&meta) {
                    Some(pending) => self.core.blocks_of(&meta, &[pending]),
                    None => Vec::new(),
                };
                self.prealloc = Some(engine::PreallocMachine::new(self.core.clone(), blocks));
                self.state = ExpandState::Prealloc;
                self.step(None)
            }
            ExpandState::Prealloc => {
                let Some(p) = self.prealloc.as_mut() else {
                    return self.cas();
                };
                match p.step(replies)? {
                    Poll::Send(req) => {
                        self.state = ExpandState::Prealloc;
                        Ok(Poll::Send(req))
                    }
                    Poll::Ready(()) => self.cas(),
                }
            }
            ExpandState::Sent => {
                // An integer is the new epoch; STALE means someone else
                // changed the filter first. Either way the view is reloaded.
                self.expanded = matches!(engine::take_one(replies)??, redis::Value::Int(_));
                self.state = ExpandState::Reload;
                Ok(Poll::Send(engine::hgetall(&self.core.keys)))
            }
            ExpandState::Reload => {
                let meta = engine::decode_meta(self.core.name(), engine::take_one(replies)?)?;
                self.core.accept(meta)?;
                Ok(Poll::Ready(self.expanded))
            }
        }
    }
}
