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
    Kind::Expanding,
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

impl ExpandingBuilder {
    /// Creates the filter with a legacy bitmap as its frozen generation 0,
    /// moved into place (RENAME: no copy, no rebuild) in the same atomic
    /// step; new items go to generation 1 and later, sized by this builder.
    /// Calling it again once adopted just opens the filter. The legacy keys
    /// must be in the filter's slot in a cluster (RENAME cannot cross
    /// slots); on a standalone server any key works.
    ///
    /// ```no_run
    /// use rotabloom::{ExpandingFilter, Legacy};
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = ExpandingFilter::builder("myspider")
    ///     .capacity(10_000_000)
    ///     .error_rate(0.001)
    ///     .adopt_legacy(&mut conn, Legacy::ScrapyRedisBloomfilter {
    ///         key: "myspider:bloomfilter".into(), bit: 30, hashes: 6,
    ///     })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn adopt_legacy<C: redis::ConnectionLike + ?Sized>(
        self,
        conn: &mut C,
        legacy: Legacy,
    ) -> Result<ExpandingFilter> {
        let m = self.adopt_machine(legacy)?;
        let keys = m.keys.clone();
        let (meta, _) = crate::exec::run(conn, m)?;
        Ok(ExpandingFilter {
            core: Core::new(keys, meta, Vec::new()),
        })
    }

    /// Async [`adopt_legacy`](Self::adopt_legacy).
    pub async fn adopt_legacy_async<C: redis::aio::ConnectionLike + Send>(
        self,
        conn: &mut C,
        legacy: Legacy,
    ) -> Result<ExpandingFilter> {
        let m = self.adopt_machine(legacy)?;
        let keys = m.keys.clone();
        let (meta, _) = crate::exec::run_async(conn, m).await?;
        Ok(ExpandingFilter {
            core: Core::new(keys, meta, Vec::new()),
        })
    }

    fn adopt_machine(&self, legacy: Legacy) -> Result<AdoptMachine> {
        let mut b = self.clone();
        // The legacy generation does not count against the limit.
        b.max_generations = b.max_generations.saturating_add(1).min(MAX_GENERATIONS);
        let spec = b.spec()?;
        Ok(AdoptMachine {
            keys: Keys::new(spec.name.clone()),
            layout: legacy.layout()?,
            spec,
            legacy,
            state: AdoptState::Idle,
        })
    }

    /// Turns the existing base [`BloomFilter`](crate::BloomFilter) of this
    /// name into generation 0 of an expanding filter, in place: its bits
    /// stay where they are, it keeps taking writes until it holds its
    /// capacity, then the next generation is added. The bound of the whole
    /// filter is `p0 / (1 - r)` for the base filter's rate `p0`; capacity
    /// and error rate of this builder are taken from the base filter.
    /// Handles of the base filter refuse it afterwards. Calling it again
    /// once converted just opens the filter.
    pub fn convert_bloom<C: redis::ConnectionLike + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<ExpandingFilter> {
        let m = self.convert_machine()?;
        let keys = m.keys.clone();
        let meta = crate::exec::run(conn, m)?;
        Ok(ExpandingFilter {
            core: Core::new(keys, meta, Vec::new()),
        })
    }

    /// Async [`convert_bloom`](Self::convert_bloom).
    pub async fn convert_bloom_async<C: redis::aio::ConnectionLike + Send>(
        self,
        conn: &mut C,
    ) -> Result<ExpandingFilter> {
        let m = self.convert_machine()?;
        let keys = m.keys.clone();
        let meta = crate::exec::run_async(conn, m).await?;
        Ok(ExpandingFilter {
            core: Core::new(keys, meta, Vec::new()),
        })
    }

    fn convert_machine(&self) -> Result<ConvertMachine> {
        Ok(ConvertMachine {
            keys: Keys::new(FilterName::new(&self.name)?),
            builder: self.clone(),
            state: ConvertState::Load,
            params: Vec::new(),
        })
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
            uid: crate::uid::new_uid(),
            adopt: Vec::new(),
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
    if meta.gens.len() as u64 >= max_gens {
        return Ok(Growth::Limit);
    }
    // Adopted legacy generations sit outside the error budget: the first
    // generation rotabloom sizes is index 0.
    let legacy: usize = meta
        .fields
        .get("legacy_gens")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let i = meta.gens.len().saturating_sub(legacy);
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

/// A bitmap written by a legacy Python crawler, adopted as a frozen,
/// read-only generation read with its own hash scheme (see
/// `docs/LEGACY.md`). New items go to new-format generations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Legacy {
    /// The PyPI package `scrapy-redis-bloomfilter`: one key of `2^bit` bits
    /// (`BLOOMFILTER_BIT`, default 30) and `hashes` functions
    /// (`BLOOMFILTER_HASH_NUMBER`, default 6). Its dupefilter hashes request
    /// fingerprints (40 hex digits): query with those.
    ScrapyRedisBloomfilter {
        /// The bitmap's key, e.g. `myspider:bloomfilter`.
        key: String,
        /// `BLOOMFILTER_BIT`.
        bit: u32,
        /// `BLOOMFILTER_HASH_NUMBER`.
        hashes: u32,
    },
    /// Seed 000's layout: keys `PREFIX0`, `PREFIX1`, ... of 2^31 bits
    /// (`blockNum` of them), MD5 hex digest, seeds 5, 7, 11, 13, 31, 37, 61.
    Seed000 {
        /// The key prefix (`key` in the seed, default `bloomfilter`).
        prefix: String,
        /// `blockNum`.
        blocks: u32,
    },
}

impl Legacy {
    fn layout(&self) -> Result<Layout> {
        let bad =
            |name: &'static str, reason: String| Err(Error::InvalidParameter { name, reason });
        match self {
            Legacy::ScrapyRedisBloomfilter { bit, hashes, .. } => {
                if !(3..=32).contains(bit) {
                    return bad("bit", format!("{bit} is not between 3 and 32"));
                }
                if *hashes == 0 || *hashes > crate::MAX_HASHES {
                    return bad(
                        "hashes",
                        format!("{hashes} is not between 1 and {}", crate::MAX_HASHES),
                    );
                }
                Ok(Layout {
                    bits: 1 << bit,
                    hashes: *hashes,
                    blocks: 1,
                    scheme: crate::Scheme::ScrapyRedisBloomfilter,
                })
            }
            Legacy::Seed000 { blocks, .. } => {
                if !(1..=256).contains(blocks) {
                    return bad("blocks", format!("{blocks} is not between 1 and 256"));
                }
                Ok(Layout {
                    bits: u64::from(*blocks) << 31,
                    hashes: 7,
                    blocks: *blocks,
                    scheme: crate::Scheme::Seed000,
                })
            }
        }
    }

    fn keys(&self) -> Vec<String> {
        match self {
            Legacy::ScrapyRedisBloomfilter { key, .. } => vec![key.clone()],
            Legacy::Seed000 { prefix, blocks } => {
                (0..*blocks).map(|b| format!("{prefix}{b}")).collect()
            }
        }
    }
}

enum AdoptState {
    Idle,
    Probe,
    Create(Box<engine::CreateMachine>),
}

/// Adoption of a legacy bitmap: measure it, then create the filter moving
/// the bitmap into place in the same atomic step.
struct AdoptMachine {
    keys: Keys,
    spec: ExpandingSpec,
    legacy: Legacy,
    layout: Layout,
    state: AdoptState,
}

impl Machine for AdoptMachine {
    type Output = (Meta, Opened);

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<(Meta, Opened)>> {
        match std::mem::replace(&mut self.state, AdoptState::Idle) {
            AdoptState::Idle => {
                let mut req = Request::new();
                for k in self.legacy.keys() {
                    req.push(redis::cmd("STRLEN").arg(&k).clone(), None);
                    req.push(redis::cmd("BITCOUNT").arg(&k).clone(), None);
                }
                self.state = AdoptState::Probe;
                Ok(Poll::Send(req))
            }
            AdoptState::Probe => {
                let mut replies = replies.unwrap_or_default().into_iter();
                let block_bits = self.layout.block_bits();
                let mut items = 0f64;
                let mut sources = Vec::new();
                for (b, key) in self.legacy.keys().into_iter().enumerate() {
                    let mut int = |what: &str| -> Result<u64> {
                        match replies.next() {
                            Some(Ok(redis::Value::Int(i))) => Ok(u64::try_from(i).unwrap_or(0)),
                            Some(Err(e)) if engine::is_wrongtype(&e.clone().into()) => {
                                Err(Error::WrongType {
                                    key: key.clone(),
                                    found: "not a string".into(),
                                    expected: "string",
                                })
                            }
                            Some(Err(e)) => Err(e.into()),
                            other => Err(Error::UnexpectedReply(format!("{what}: {other:?}"))),
                        }
                    };
                    let len = int("STRLEN")?;
                    let set = int("BITCOUNT")?;
                    if len * 8 > block_bits {
                        return Err(Error::InvalidParameter {
                            name: "bit",
                            reason: format!(
                                "{key:?} holds {len} bytes, more than the {block_bits} bits its parameters allow: \
                                 check BLOOMFILTER_BIT / the block count"
                            ),
                        });
                    }
                    items += crate::params::estimate_items(block_bits, self.layout.hashes, set);
                    sources.push((key, b as u32));
                }
                if sources.is_empty() {
                    return Err(Error::InvalidParameter {
                        name: "legacy",
                        reason: "no keys to adopt".into(),
                    });
                }
                let count = if items.is_finite() {
                    items.ceil() as u64
                } else {
                    u64::MAX / 2
                };
                let mut bp = self.spec.blueprint();
                bp.params.push(("legacy_gens", "1".into()));
                bp.gens.insert(0, (self.layout, count.max(1)));
                bp.adopt = sources;
                let mut m = Box::new(engine::CreateMachine::new(self.keys.clone(), bp));
                match m.step(None)? {
                    Poll::Send(req) => {
                        self.state = AdoptState::Create(m);
                        Ok(Poll::Send(req))
                    }
                    Poll::Ready(v) => Ok(Poll::Ready(v)),
                }
            }
            AdoptState::Create(mut m) => {
                let out = m.step(replies)?;
                if let Poll::Send(_) = out {
                    self.state = AdoptState::Create(m);
                }
                Ok(out)
            }
        }
    }
}

enum ConvertState {
    Load,
    Convert,
    Reload,
}

/// In-place conversion of a base filter into generation 0 of an expanding
/// filter.
struct ConvertMachine {
    keys: Keys,
    builder: ExpandingBuilder,
    state: ConvertState,
    params: Vec<(&'static str, String)>,
}

impl Machine for ConvertMachine {
    type Output = Meta;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Meta>> {
        match self.state {
            ConvertState::Load if replies.is_none() => Ok(Poll::Send(engine::hgetall(&self.keys))),
            ConvertState::Load => {
                let meta =
                    engine::decode_meta(self.keys.name().as_str(), engine::take_one(replies)?)?;
                if meta.kind == Kind::Expanding {
                    // Already converted (by this or another process): the
                    // parameters this builder controls must agree.
                    let b = &self.builder;
                    meta.check_params(&[
                        ("growth", fmt_f64(b.growth)),
                        ("tightening", fmt_f64(b.tightening)),
                        ("max_generations", b.max_generations.to_string()),
                        ("max_bytes", b.max_bytes.to_string()),
                        ("max_bits", b.max_bits.to_string()),
                    ])?;
                    return Ok(Poll::Ready(meta));
                }
                meta.check_kind(Kind::Bloom)?;
                let g = &meta.gens[0];
                let r = self.builder.tightening;
                let p0 = match meta
                    .fields
                    .get("error_rate")
                    .and_then(|v| v.parse::<f64>().ok())
                {
                    Some(p) => p,
                    None => crate::false_positive_rate(g.layout.bits, g.layout.hashes, g.capacity),
                };
                let mut b = self.builder.clone();
                b.capacity = g.capacity;
                b.error_rate = (p0 / (1.0 - r)).min(0.999_999);
                b.max_block_bits = g.layout.block_bits().max(8);
                let spec = b.spec()?;
                self.params = spec.params.clone();
                let mut cmd =
                    scripts::CONVERT.invoke(&[self.keys.meta().to_string(), self.keys.fence()]);
                cmd.arg(&meta.uid).arg(meta.epoch).arg(Kind::Bloom.as_str());
                cmd.arg("kind").arg(Kind::Expanding.as_str());
                for (f, v) in &spec.params {
                    cmd.arg(*f).arg(v);
                }
                let mut req = Request::new();
                req.script(&scripts::CONVERT, cmd);
                self.state = ConvertState::Convert;
                Ok(Poll::Send(req))
            }
            ConvertState::Convert => {
                // Converted by us, or STALE (changed meanwhile): either way
                // read what is there now and decide from that.
                engine::take_one(replies)??;
                self.state = ConvertState::Reload;
                Ok(Poll::Send(engine::hgetall(&self.keys)))
            }
            ConvertState::Reload => {
                let meta =
                    engine::decode_meta(self.keys.name().as_str(), engine::take_one(replies)?)?;
                meta.check_kind(Kind::Expanding)?;
                Ok(Poll::Ready(meta))
            }
        }
    }
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
        let mut cmd =
            scripts::EXPAND.invoke(&[self.core.keys.meta().to_string(), self.core.keys.fence()]);
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
