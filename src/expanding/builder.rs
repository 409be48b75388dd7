use super::*;

/// Describes an [`ExpandingFilter`]; checked by [`spec`](Self::spec).
#[derive(Clone, Debug)]
#[must_use]
pub struct ExpandingBuilder {
    pub(crate) name: String,
    pub(crate) capacity: u64,
    pub(super) error_rate: f64,
    pub(super) growth: f64,
    pub(super) tightening: f64,
    pub(super) max_generations: u32,
    pub(super) max_bytes: u64,
    pub(super) max_bits: u64,
    pub(super) max_block_bits: u64,
    /// None: bitmap for a new filter; a converted base filter's own.
    pub(super) backend: Option<Backend>,
    pub(super) wait: Option<crate::wait::WaitReplicas>,
}

impl ExpandingBuilder {
    /// Makes the creation and every write of the handle wait for
    /// replicas (see [`WaitReplicas`](crate::WaitReplicas)).
    pub fn wait_replicas(mut self, wait: crate::wait::WaitReplicas) -> Self {
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

    /// The filter's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
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
        let layout = backend.layout(first, self.max_block_bits)?;
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
            max_block_bits: self.max_block_bits.clamp(8, crate::params::MAX_BLOCK_BITS),
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
        let legacy = legacy.into();
        let key = legacy.legacy().key().to_string();
        crate::exec::run(conn, self.adopt_machine(legacy)?, self.wait)
            .map_err(|e| self.not_into_shards(&key, e))
    }

    #[cfg(feature = "async")]
    /// Async [`adopt_legacy`](Self::adopt_legacy).
    pub async fn adopt_legacy_async<C: redis::aio::ConnectionLike + Send>(
        self,
        conn: &mut C,
        legacy: impl Into<Adoption>,
    ) -> Result<ExpandingFilter> {
        let legacy = legacy.into();
        let key = legacy.legacy().key().to_string();
        crate::exec::run_async(conn, self.adopt_machine(legacy)?, self.wait)
            .await
            .map_err(|e| self.not_into_shards(&key, e))
    }

    /// A sharded filter's root under the name, said for what it is: the
    /// legacy bits sit where the legacy hashes put them, while a sharded
    /// filter looks for each item in the shard its digest picks.
    fn not_into_shards(&self, key: &str, e: crate::error::Error) -> crate::error::Error {
        match e {
            crate::error::Error::UnsupportedFormat { found, .. }
                if found == crate::metadata::SHARDED_FORMAT =>
            {
                crate::error::Error::NotAdoptable {
                    key: key.to_string(),
                    reason: format!(
                        "{:?} is a sharded filter, and a legacy bitmap cannot be adopted into \
                         one (its bits cannot be re-routed to the shards item by item): adopt \
                         it under a new name, unsharded",
                        self.name
                    ),
                }
            }
            other => other,
        }
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
        let adopt = crate::engine::adopt::adopt(
            keys,
            Accept::One(CODEC),
            bp,
            legacy.into(),
            self.error_rate,
        )?;
        let wait = self.wait;
        Ok(adopt.map(move |(view, _)| {
            let mut core = Core::new(k, view, Accept::One(CODEC));
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
        let plan = ToExpanding {
            builder: self.clone(),
            take_any: false,
        };
        // No handle yet whose retry limit would apply: the library's.
        let max_retries = crate::engine::DEFAULT_MAX_RETRIES;
        Ok(
            convert(keys, CONVERTIBLE, plan, max_retries).map(move |view| {
                let mut core = Core::new(k, view, Accept::One(CODEC));
                core.wait = wait;
                Ok(ExpandingFilter::from_core(core))
            }),
        )
    }
}

/// What conversion reads: the base filter, or the expanding filter it
/// already became.
pub(super) const CONVERTIBLE: Accept = Accept::Any(&[crate::bloom::CODEC, CODEC]);

/// A validated [`ExpandingBuilder`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExpandingSpec {
    pub(super) name: FilterName,
    pub(super) params: Vec<(&'static str, String)>,
    pub(super) first: Layout,
    pub(super) capacity: u64,
    pub(super) wait: Option<crate::wait::WaitReplicas>,
}

impl ExpandingSpec {
    /// The same spec, its creation and the handle's writes waiting for
    /// replicas (see [`WaitReplicas`](crate::WaitReplicas)).
    pub fn with_wait_replicas(mut self, wait: Option<crate::wait::WaitReplicas>) -> Self {
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
}

// Sealed (`creates::sealed`): the machine it names is the crate's own.
#[allow(private_interfaces)]
impl crate::creates::Creates for ExpandingSpec {
    type Kind = super::Expanding;

    fn wait(&self) -> Option<crate::wait::WaitReplicas> {
        self.wait
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
}

impl ExpandingSpec {
    /// Creates or opens; also says which happened.
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<(ExpandingFilter, Opened)> {
        crate::creates::run(self, conn)
    }

    #[cfg(feature = "async")]
    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<(ExpandingFilter, Opened)> {
        crate::creates::run_async(self, conn).await
    }
}
