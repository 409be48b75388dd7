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

use crate::engine::chain::MachineExt;
use crate::engine::probe::probed;
use crate::engine::roll::{Grow, RollMachine};
use crate::engine::{create, load::LoadMachine, Core};
use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies, Request};
use crate::generation::{Backend, Layout};
use crate::handle::{
    sealed::{Opens, Sealed},
    Filter, FilterKind, OneKind,
};
use crate::keys::{FilterName, Keys};
use crate::metadata::{field, fmt_f64, Common, Fields, Kind};
use crate::params::{BloomParams, ErrorRate, DEFAULT_MAX_BITS, DEFAULT_MAX_BLOCK_BITS};
use crate::proto::create::{Blueprint, Opened};
use crate::proto::{load, take_one};
use crate::scripts;
use crate::view::{Absorb, Accept, Codec, Growth, NewGen, Policy, Role, View};
use std::sync::Arc;

use crate::legacy::Adoption;

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
pub type ExpandingFilter = Filter<Expanding>;

/// The expanding filter's kind: [`ExpandingFilter`] is `Filter<Expanding>`.
#[derive(Debug)]
pub enum Expanding {}

impl Sealed for Expanding {
    fn accept() -> Opens {
        Opens(Accept::One(CODEC))
    }
}

impl FilterKind for Expanding {}

impl OneKind for Expanding {}

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
            backend: None,
            wait: None,
        }
    }

    /// Freezes the newest generation now and adds the next one, if the
    /// filter has not changed since this handle last saw it (compare-and-set
    /// on the epoch). Returns `true` if this call expanded, `false` if
    /// another process changed the filter first (the handle then holds the
    /// new state). Of many concurrent calls with the same view, one expands.
    pub fn expand<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<bool> {
        self.core.run(
            conn,
            probed(&self.core, RollMachine::new(self.core.clone(), Grow)),
        )
    }

    #[cfg(feature = "async")]
    /// Async [`expand`](Self::expand).
    pub async fn expand_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<bool> {
        self.core
            .run_async(
                conn,
                probed(&self.core, RollMachine::new(self.core.clone(), Grow)),
            )
            .await
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
    /// None: bitmap for a new filter; a converted base filter's own.
    backend: Option<Backend>,
    wait: Option<crate::WaitReplicas>,
}

impl ExpandingBuilder {
    /// Makes the creation and every write of the handle wait for
    /// replicas (see [`WaitReplicas`](crate::WaitReplicas)).
    pub fn wait_replicas(mut self, wait: crate::WaitReplicas) -> Self {
        self.wait = Some(wait);
        self
    }

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
    /// Where the generations are kept (default
    /// [`Backend::Bitmap`](crate::Backend::Bitmap)); with
    /// [`Backend::RedisBloom`](crate::Backend::RedisBloom) each generation
    /// is one non-scaling RedisBloom filter, reserved at its own capacity
    /// and rate, and the filter grows as with bitmaps. A base filter
    /// converted in place keeps its own backend: asking for another one
    /// there is refused before anything is written.
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = Some(backend);
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
        let backend = self.backend.unwrap_or_default();
        let layout = backend.layout(first, self.max_block_bits);
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
        let policy = ExpandingPolicy {
            n0: self.capacity,
            p,
            s: self.growth,
            r: self.tightening,
            max_generations: self.max_generations,
            max_bytes: self.max_bytes,
            max_bits: self.max_bits,
            max_block_bits: self.max_block_bits.clamp(8, crate::MAX_BLOCK_BITS),
            legacy_gens: 0,
            backend,
        };
        Ok(ExpandingSpec {
            name,
            params: policy.params(),
            first: layout,
            capacity: self.capacity,
            wait: self.wait,
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

    #[cfg(feature = "async")]
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
    ///
    /// Before anything moves, the bitmap is checked against its parameters
    /// ([`Error::NotAdoptable`], [`Error::WrongType`], or
    /// [`Error::InvalidParameter`] naming `bit` or `blocks`; see
    /// `docs/LEGACY.md`), and with
    /// [`Legacy::verify`](crate::Legacy::verify) every item known to be in
    /// it is looked up where the legacy code put it. On any failure the
    /// legacy keys are where they were.
    ///
    /// Calling it again once adopted opens the filter if every parameter,
    /// the legacy ones included (scheme, key or prefix, bits, hashes,
    /// blocks), is the same, and fails with [`Error::ParameterMismatch`]
    /// otherwise. The legacy keys must be in the filter's slot in a cluster
    /// (RENAME cannot cross slots); on a standalone server any key works.
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
        legacy: impl Into<Adoption>,
    ) -> Result<ExpandingFilter> {
        crate::exec::run(conn, self.adopt_machine(legacy)?, self.wait)
    }

    #[cfg(feature = "async")]
    /// Async [`adopt_legacy`](Self::adopt_legacy).
    pub async fn adopt_legacy_async<C: redis::aio::ConnectionLike + Send>(
        self,
        conn: &mut C,
        legacy: impl Into<Adoption>,
    ) -> Result<ExpandingFilter> {
        crate::exec::run_async(conn, self.adopt_machine(legacy)?, self.wait).await
    }

    fn adopt_machine(
        &self,
        legacy: impl Into<Adoption>,
    ) -> Result<impl Machine<Output = ExpandingFilter> + Send> {
        let mut b = self.clone();
        // The legacy generation does not count against the limit.
        b.max_generations = b.max_generations.saturating_add(1).min(MAX_GENERATIONS);
        let spec = b.spec()?;
        let keys = Keys::new(spec.name.clone());
        let k = keys.clone();
        let mut bp = spec.blueprint();
        bp.params.push((field::LEGACY_GENS, "1".into()));
        let adopt =
            crate::legacy::adopt(keys, Accept::One(CODEC), bp, legacy.into(), self.error_rate)?;
        let wait = self.wait;
        Ok(adopt.map(move |(view, _)| {
            let mut core = Core::new(k, view, Accept::One(CODEC), Vec::new());
            core.wait = wait;
            Ok(ExpandingFilter::from_core(core))
        }))
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
        crate::exec::run(conn, self.convert_machine()?, self.wait)
    }

    #[cfg(feature = "async")]
    /// Async [`convert_bloom`](Self::convert_bloom).
    pub async fn convert_bloom_async<C: redis::aio::ConnectionLike + Send>(
        self,
        conn: &mut C,
    ) -> Result<ExpandingFilter> {
        crate::exec::run_async(conn, self.convert_machine()?, self.wait).await
    }

    fn convert_machine(&self) -> Result<impl Machine<Output = ExpandingFilter> + Send> {
        let keys = Keys::new(FilterName::new(&self.name)?);
        let k = keys.clone();
        let wait = self.wait;
        Ok(ConvertMachine {
            keys,
            builder: self.clone(),
            state: ConvertState::Load(LoadMachine::new(k.clone(), CONVERTIBLE)),
            stalls: 0,
            take_any: false,
        }
        .map(move |view| {
            let mut core = Core::new(k, view, Accept::One(CODEC), Vec::new());
            core.wait = wait;
            Ok(ExpandingFilter::from_core(core))
        }))
    }
}

/// What conversion reads: the base filter, or the expanding filter it
/// already became.
const CONVERTIBLE: Accept = Accept::Any(&[crate::bloom::CODEC, CODEC]);

/// A validated [`ExpandingBuilder`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExpandingSpec {
    name: FilterName,
    params: Vec<(&'static str, String)>,
    first: Layout,
    capacity: u64,
    wait: Option<crate::WaitReplicas>,
}

impl ExpandingSpec {
    /// The same spec, its creation and the handle's writes waiting for
    /// replicas (see [`WaitReplicas`](crate::WaitReplicas)).
    pub fn with_wait_replicas(mut self, wait: Option<crate::WaitReplicas>) -> Self {
        self.wait = wait;
        self
    }

    /// The generations a creation makes (the first), each a layout and a
    /// capacity.
    pub fn initial_generations(&self) -> Vec<(Layout, u64)> {
        vec![(self.first, self.capacity)]
    }

    fn blueprint(&self) -> Blueprint {
        Blueprint {
            uid: crate::uid::new_uid(),
            adopt: Vec::new(),
            kind: Kind::Expanding,
            params: self.params.clone(),
            extra: Vec::new(),
            gens: vec![(self.first, self.capacity)],
            leased: Vec::new(),
        }
    }

    fn machine(&self) -> impl Machine<Output = (ExpandingFilter, Opened)> + Send {
        let wait = self.wait;
        create::create_or_open(
            Keys::new(self.name.clone()),
            Accept::One(CODEC),
            self.blueprint(),
        )
        .map(move |(mut core, how)| {
            core.wait = wait;
            Ok((ExpandingFilter::from_core(core), how))
        })
    }

    /// Creates or opens; also says which happened.
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<(ExpandingFilter, Opened)> {
        crate::exec::run(conn, self.machine(), self.wait)
    }

    #[cfg(feature = "async")]
    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<(ExpandingFilter, Opened)> {
        crate::exec::run_async(conn, self.machine(), self.wait).await
    }
}

/// An expanding filter's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ExpandingPolicy {
    n0: u64,
    p: f64,
    s: f64,
    r: f64,
    max_generations: u32,
    max_bytes: u64,
    max_bits: u64,
    max_block_bits: u64,
    legacy_gens: u32,
    /// Where new generations go. A base filter on RedisBloom converted to
    /// an expanding one keeps its backend.
    backend: Backend,
}

impl ExpandingPolicy {
    fn limit(&self, c: &Common) -> String {
        format!(
            "{} generations (max_generations = {}, max_bytes = {}); the newest is full",
            c.gens.len(),
            self.max_generations,
            self.max_bytes
        )
    }

    /// The generation to append when the newest fills up, or why none may be.
    fn next(&self, c: &Common) -> std::result::Result<NewGen, String> {
        if c.gens.len() >= self.max_generations as usize {
            return Err(self.limit(c));
        }
        // Adopted legacy generations sit outside the error budget: the
        // first generation rotabloom sizes is index 0.
        let i = c.gens.len().saturating_sub(self.legacy_gens as usize);
        let i = i32::try_from(i).unwrap_or(i32::MAX);
        let cap = (self.n0 as f64 * self.s.powi(i)).ceil();
        let rate = self.p * (1.0 - self.r) * self.r.powi(i);
        if !(cap.is_finite() && cap >= 1.0 && cap < u64::MAX as f64) {
            return Err(self.limit(c));
        }
        let params =
            BloomParams::for_capacity_within(cap as u64, rate, self.max_bits).map_err(|e| {
                format!(
                    "{}: the next generation cannot be sized ({e})",
                    self.limit(c)
                )
            })?;
        let layout = self.backend.layout(params, self.max_block_bits);
        let used: u64 = c
            .gens
            .iter()
            .map(|g| g.layout.bytes())
            .fold(0, u64::saturating_add);
        if self.max_bytes > 0 && used.saturating_add(layout.bytes()) > self.max_bytes {
            return Err(self.limit(c));
        }
        Ok(NewGen {
            seq: c.next_seq,
            layout,
            capacity: cap as u64,
        })
    }
}

impl Policy for ExpandingPolicy {
    fn kind(&self) -> Kind {
        Kind::Expanding
    }

    fn params(&self) -> Vec<(&'static str, String)> {
        let mut p = vec![
            (field::CAPACITY, self.n0.to_string()),
            (field::ERROR_RATE, fmt_f64(self.p)),
            (field::GROWTH, fmt_f64(self.s)),
            (field::TIGHTENING, fmt_f64(self.r)),
            (field::MAX_GENERATIONS, self.max_generations.to_string()),
            (field::MAX_BYTES, self.max_bytes.to_string()),
            (field::MAX_BITS, self.max_bits.to_string()),
            (field::MAX_BLOCK_BITS, self.max_block_bits.to_string()),
        ];
        if self.legacy_gens > 0 {
            p.push((field::LEGACY_GENS, self.legacy_gens.to_string()));
        }
        // Stored absent (filters made before expanding filters had a
        // backend) means bitmap; compared on open either way.
        p.push((field::BACKEND, self.backend.as_str().to_string()));
        p
    }

    fn roles(&self, c: &Common) -> Vec<Role> {
        let n = c.gens.len();
        (0..n)
            .map(|i| {
                if i + 1 == n {
                    Role::Decide
                } else {
                    Role::Query
                }
            })
            .collect()
    }

    fn growth(&self, c: &Common) -> Growth {
        Growth::Capped(self.next(c))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn decode(f: &Fields, c: &Common) -> Result<Arc<dyn Policy>> {
    let growth = f.f64(field::GROWTH)?;
    if !(1.0..=16.0).contains(&growth) {
        return Err(f.corrupt(field::GROWTH, format!("{growth} is not between 1 and 16")));
    }
    let legacy_gens = f.opt_u64(field::LEGACY_GENS)?.unwrap_or(0);
    if legacy_gens > 1 || legacy_gens as usize > c.gens.len() {
        return Err(f.corrupt(
            field::LEGACY_GENS,
            format!(
                "{legacy_gens} legacy generations cannot be among {}",
                c.gens.len()
            ),
        ));
    }
    let backend = match f.opt_str(field::BACKEND)? {
        None => Backend::Bitmap,
        Some(b) => b.parse::<Backend>().map_err(|_| {
            f.corrupt(
                field::BACKEND,
                format!("{b:.40?} is not bitmap or redisbloom"),
            )
        })?,
    };
    // The backend's generations, and bitmap ones always (a converted
    // filter grew on bitmaps before expanding filters had a backend); an
    // adopted legacy generation only where adoption puts it.
    View::check_schemes(f, c, |i, g| match i < legacy_gens as usize {
        true => !g.layout.store().writable(),
        false => g.layout.scheme == backend.scheme() || g.layout.scheme == Backend::Bitmap.scheme(),
    })?;
    Ok(Arc::new(ExpandingPolicy {
        n0: f.u64_in(field::CAPACITY, 1, u64::MAX)?,
        p: f.rate(field::ERROR_RATE)?,
        s: growth,
        r: f.rate(field::TIGHTENING)?,
        max_generations: f.u64_in(field::MAX_GENERATIONS, 1, u64::from(MAX_GENERATIONS))? as u32,
        max_bytes: f.u64(field::MAX_BYTES)?,
        max_bits: f.u64_in(field::MAX_BITS, crate::MIN_BITS, u64::MAX)?,
        max_block_bits: f.u64_in(field::MAX_BLOCK_BITS, 8, crate::MAX_BLOCK_BITS)?,
        legacy_gens: legacy_gens as u32,
        backend,
    }))
}

/// How expanding filters are read from their metadata.
pub(crate) const CODEC: Codec = Codec {
    kind: Kind::Expanding,
    decode,
    absorb: Some(Absorb {
        from: Kind::Bloom,
        start: absorb_full,
    }),
};

/// The conversion a full base filter undergoes when its handle says
/// `when_full = expand`: this builder's defaults; an expanding filter found
/// instead (converted by another writer, whatever its parameters) is taken
/// as it is.
fn absorb_full(keys: &Keys) -> Box<dyn Machine<Output = View> + Send> {
    Box::new(ConvertMachine {
        keys: keys.clone(),
        builder: ExpandingFilter::builder(keys.name().as_str()),
        state: ConvertState::Load(LoadMachine::new(keys.clone(), CONVERTIBLE)),
        stalls: 0,
        take_any: true,
    })
}

enum ConvertState {
    Load(LoadMachine),
    Convert,
    Reload,
}

/// In-place conversion of a base filter into generation 0 of an expanding
/// filter.
struct ConvertMachine {
    keys: Keys,
    builder: ExpandingBuilder,
    state: ConvertState,
    stalls: u32,
    /// An expanding filter found is taken whatever its parameters, rather
    /// than checked against the builder's.
    take_any: bool,
}

impl ConvertMachine {
    /// The conversion of `view` (a bloom filter), or the expanding filter
    /// it already is.
    fn decide(&mut self, view: View) -> Result<Poll<View>> {
        let b = &self.builder;
        if view.kind == Kind::Expanding && self.take_any {
            return Ok(Poll::Ready(view));
        }
        if view.kind == Kind::Expanding {
            // Already converted (by this or another process): the
            // parameters this builder controls must agree.
            view.check_params(&[
                (field::GROWTH, fmt_f64(b.growth)),
                (field::TIGHTENING, fmt_f64(b.tightening)),
                (field::MAX_GENERATIONS, b.max_generations.to_string()),
                (field::MAX_BYTES, b.max_bytes.to_string()),
                (field::MAX_BITS, b.max_bits.to_string()),
            ])?;
            return Ok(Poll::Ready(view));
        }
        let g = view.newest();
        let r = b.tightening;
        let p0 = view
            .policy
            .params()
            .iter()
            .find(|(k, _)| *k == field::ERROR_RATE)
            .and_then(|(_, v)| v.parse::<f64>().ok())
            .unwrap_or_else(|| {
                crate::false_positive_rate(g.layout.bits, g.layout.hashes, g.capacity)
            });
        // Generation 0 stays what it is, on its backend: the new ones grow
        // on the same one.
        let backend = view
            .policy
            .params()
            .iter()
            .find(|(k, _)| *k == field::BACKEND)
            .and_then(|(_, v)| v.parse::<Backend>().ok())
            .unwrap_or_default();
        if let Some(asked) = b.backend.filter(|&asked| asked != backend) {
            return Err(Error::ParameterMismatch {
                name: view.name.clone(),
                field: field::BACKEND.to_string(),
                stored: backend.as_str().to_string(),
                requested: asked.as_str().to_string(),
            });
        }
        let mut nb = b.clone();
        nb.capacity = g.capacity;
        nb.error_rate = (p0 / (1.0 - r)).min(0.999_999);
        nb.max_block_bits = g.layout.block_bits().max(8);
        nb.backend = Some(backend);
        let spec = nb.spec()?;
        // What the filter will say once converted must read back as an
        // expanding filter: checked here, before anything is written, so a
        // conversion never leaves a filter nobody can open.
        let mut after = view.fields.clone();
        after
            .raw
            .insert(field::KIND.into(), Kind::Expanding.as_str().into());
        for (f, v) in &spec.params {
            after.raw.insert((*f).into(), v.clone().into_bytes());
        }
        View::decode(after, None, "", Accept::One(CODEC)).map_err(|e| Error::Internal(format!(
            "converting filter {:?} would leave metadata that cannot be read ({e}); nothing was written",
            view.name
        )))?;
        let epoch = view
            .epoch
            .checked_add(1)
            .ok_or_else(|| Error::LimitReached {
                name: view.name.clone(),
                limit: "the epoch cannot grow further".into(),
            })?;
        let mut cmd = scripts::CONVERT.invoke(&[self.keys.meta().to_string(), self.keys.fence()]);
        cmd.arg(&view.uid)
            .arg(view.epoch)
            .arg(view.cleared)
            .arg(Kind::Bloom.as_str())
            .arg(epoch);
        cmd.arg(field::KIND).arg(Kind::Expanding.as_str());
        for (f, v) in &spec.params {
            cmd.arg(*f).arg(v);
        }
        let mut req = Request::new();
        req.script(&scripts::CONVERT, cmd);
        self.state = ConvertState::Convert;
        Ok(Poll::Send(req))
    }
}

impl Machine for ConvertMachine {
    type Output = View;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<View>> {
        match std::mem::replace(&mut self.state, ConvertState::Reload) {
            ConvertState::Load(mut m) => match m.step(replies)? {
                Poll::Send(req) => {
                    self.state = ConvertState::Load(m);
                    Ok(Poll::Send(req))
                }
                Poll::Ready(view) => self.decide(view),
            },
            ConvertState::Convert => {
                // Converted by us, or STALE (changed meanwhile): either way
                // read what is there now and decide from that.
                take_one(replies)?.map_err(|e| Error::from_script(self.keys.name().as_str(), e))?;
                self.state = ConvertState::Reload;
                Ok(Poll::Send(load::request(&self.keys)))
            }
            ConvertState::Reload => {
                // Converted (by us or another process), or changed under
                // the conversion and still a base filter: decide again.
                let view = load::decode(&self.keys, CONVERTIBLE, take_one(replies)?)?;
                self.stalls += 1;
                if view.kind != Kind::Expanding && self.stalls > crate::engine::DEFAULT_MAX_RETRIES
                {
                    return Err(Error::Contention {
                        name: view.name.clone(),
                        retries: self.stalls,
                    });
                }
                self.decide(view)
            }
        }
    }
}
