//! The filter handle: one type, [`Filter<K>`], whose methods every kind
//! shares, written once here. A kind adds its own methods to its own
//! `Filter<ItsKind>` (rotation for circular filters, expansion for
//! expanding ones) in its module; [`BloomFilter`](crate::BloomFilter),
//! [`ExpandingFilter`](crate::ExpandingFilter),
//! [`CircularFilter`](crate::CircularFilter) and
//! [`AnyFilter`](crate::AnyFilter) are its names for each kind.
//!
//! Each method runs one machine of `engine::operation`, blocking or async:
//! the two differ only in the driver. The async ones are in `async_calls`.

use crate::engine::operation::{self, many};
use crate::engine::Core;
use crate::error::Result;
use crate::proto::script::DataOp;
use std::fmt;
use std::marker::PhantomData;

#[cfg(feature = "async")]
mod async_calls;

pub(crate) mod sealed {
    /// What a kind marker tells the handle: the kinds it opens. Sealed: the
    /// kinds are this crate's.
    pub trait Sealed {
        #[doc(hidden)]
        fn accept() -> Opens;
    }

    /// The kinds a marker opens, opaque outside the crate.
    #[doc(hidden)]
    #[derive(Debug)]
    pub struct Opens(pub(crate) crate::view::Accept);
}

/// The kinds a [`Filter`] handle can be of: [`Bloom`](crate::kinds::Bloom),
/// [`Expanding`](crate::kinds::Expanding),
/// [`Circular`](crate::kinds::Circular), or [`Any`](crate::kinds::Any)
/// (whatever the filter stored in Redis is). Sealed.
pub trait FilterKind: sealed::Sealed + Send + Sync + 'static {}

/// A kind that is exactly one kind (not [`Any`](crate::kinds::Any)): an
/// [`AnyFilter`](crate::AnyFilter) converts to its handle when the filter
/// is of that kind.
pub trait OneKind: FilterKind {}

/// A handle on one filter in Redis, of kind `K`. Use it through its names:
/// [`BloomFilter`](crate::BloomFilter),
/// [`ExpandingFilter`](crate::ExpandingFilter),
/// [`CircularFilter`](crate::CircularFilter),
/// [`AnyFilter`](crate::AnyFilter).
///
/// The handle owns no connection: each call borrows one, blocking
/// (`redis::ConnectionLike`: `Connection`, `ClusterConnection`) or async
/// (`redis::aio::ConnectionLike`: `MultiplexedConnection`,
/// `ConnectionManager`, the async cluster connection). Handles are cheap to
/// clone and `Send + Sync`; clones share what the handle remembers of the
/// filter (its latest metadata, the mirror of frozen generations).
///
/// Code that works on every kind takes a `Filter<K>`:
///
/// ```no_run
/// use rotabloom::{Filter, FilterKind};
/// fn new_urls<K: FilterKind>(
///     f: &Filter<K>,
///     conn: &mut redis::Connection,
///     urls: &[&str],
/// ) -> rotabloom::Result<Vec<String>> {
///     let new = f.check_and_insert_many(conn, urls)?;
///     Ok(urls.iter().zip(new).filter(|(_, n)| *n).map(|(u, _)| u.to_string()).collect())
/// }
/// ```
pub struct Filter<K: FilterKind> {
    pub(crate) core: Core,
    kind: PhantomData<fn() -> K>,
}

impl<K: FilterKind> Clone for Filter<K> {
    fn clone(&self) -> Self {
        Filter::from_core(self.core.clone())
    }
}

impl<K: FilterKind> fmt::Debug for Filter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Filter")
            .field("kind", &std::any::type_name::<K>())
            .field("core", &self.core)
            .finish()
    }
}

impl<K: FilterKind> Filter<K> {
    /// A handle on the shared state `core`, reading the kinds `K` opens.
    pub(crate) fn from_core(mut core: Core) -> Self {
        core.accept = K::accept().0;
        Filter {
            core,
            kind: PhantomData,
        }
    }

    /// Opens an existing filter of this kind, whatever its parameters; a
    /// filter of another kind is
    /// [`Error::KindMismatch`](crate::Error::KindMismatch), one that does
    /// not exist [`Error::NotFound`](crate::Error::NotFound). One round trip
    /// (two for a RedisBloom filter, whose module is checked).
    ///
    /// ```no_run
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = rotabloom::AnyFilter::open(&mut conn, "crawl")?;
    /// println!("{} is a {} filter", f.name(), f.kind());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open<C: redis::ConnectionLike + ?Sized>(conn: &mut C, name: &str) -> Result<Self> {
        let m = crate::engine::load::open(name, K::accept().0)?;
        crate::exec::run(conn, m, None).map(Self::from_core)
    }

    /// The filter's name.
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// Generations, as last read from Redis (oldest first): no round trip.
    pub fn generations(&self) -> Vec<crate::store::generation::Generation> {
        self.core.view().gens.clone()
    }

    /// Whether an insert writes only the newest generation while queries
    /// also read older ones (an expanding filter, a query-all circular
    /// filter): an item only an older generation holds is written again
    /// and answered new. In a window that is the point (the item is
    /// remembered for another period, so "new" means new this period); in
    /// a filter that [`grows`](Self::grows) it stores the item twice, and a
    /// caller that must not checks first with
    /// [`check_and_insert`](Self::check_and_insert). As last read from
    /// Redis: no round trip.
    ///
    /// ```no_run
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = rotabloom::AnyFilter::open(&mut conn, "crawl")?;
    /// let new = if f.grows() {
    ///     f.check_and_insert(&mut conn, "http://example.com/")?
    /// } else {
    ///     f.insert(&mut conn, "http://example.com/")?
    /// };
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn inserts_newest_only(&self) -> bool {
        self.core.view().roles.contains(&crate::view::Role::Query)
    }

    /// Whether the filter adds a generation when its newest one fills (an
    /// expanding filter, or one converted to it), rather than going past
    /// its capacity or refusing. As last read from Redis: no round trip.
    pub fn grows(&self) -> bool {
        self.core.view().growth.is_capped()
    }

    /// Mirrors generations that can no longer change (the frozen
    /// generations of an expanding or query-all circular filter) in this
    /// process, up to `max_bytes`, and checks them locally: a query then
    /// costs one server operation however many generations there are.
    /// Copies are made on first use (one GETRANGE of 4 MiB per round trip),
    /// shared by clones of the handle, and dropped when their generation is
    /// rotated away or the filter cleared. Answers are the same as without
    /// it.
    ///
    /// ```no_run
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = rotabloom::AnyFilter::open(&mut conn, "crawl")?.with_frozen_cache(256 << 20);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_frozen_cache(mut self, max_bytes: u64) -> Self {
        self.core.cache = Some(std::sync::Arc::new(crate::cache::FrozenCache::new(
            max_bytes,
        )));
        self
    }

    /// Whether batches may take the guarded-transaction path (`WATCH`,
    /// `MULTI`, `BITFIELD`, `EXEC`; default true). Turn it off for a
    /// connection type that does not send a pipeline to one server in one
    /// piece; every operation then uses the atomic script, which is correct
    /// everywhere and slower for big batches.
    pub fn with_transactions(mut self, enabled: bool) -> Self {
        self.core.transactions = enabled;
        self
    }

    /// A batch for one write that stays exactly once when run again after
    /// a lost reply; see [`IdempotentBatch`](crate::IdempotentBatch).
    pub fn idempotent_batch<I>(&self, items: I) -> crate::batch::IdempotentBatch
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let items = crate::items::Items::collect(items);
        crate::batch::IdempotentBatch::new(self.core.clone(), items)
    }

    /// What a write of this handle does once the generation it fills holds
    /// its capacity (base and circular filters; default
    /// [`WhenFull::Error`](crate::WhenFull::Error): refuse with
    /// [`Error::Full`](crate::Error::Full)). See
    /// [`WhenFull`](crate::WhenFull).
    ///
    /// ```no_run
    /// use rotabloom::{BloomFilter, WhenFull};
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = BloomFilter::open(&mut conn, "crawl")?.with_when_full(WhenFull::Expand);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_when_full(mut self, when_full: crate::full::WhenFull) -> Self {
        self.core.when_full = when_full;
        self
    }

    /// Makes every write of this handle (and its clones made after) wait
    /// until `wait` replicas acknowledged it (Redis `WAIT`); `None` stops
    /// waiting. See [`WaitReplicas`](crate::WaitReplicas) for what this
    /// promises and what it does not.
    pub fn with_wait_replicas(mut self, wait: Option<crate::wait::WaitReplicas>) -> Self {
        self.core.wait = wait;
        self
    }

    /// Inserts one item. Returns `true` when the write changed the filter
    /// (the item's bits were not all set in the generations written).
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = rotabloom::BloomFilter::builder("crawl").capacity(1_000_000).create_or_open(&mut conn)?;
    /// f.insert(&mut conn, "http://example.com/")?;
    /// # Ok::<(), rotabloom::Error>(())
    /// ```
    pub fn insert<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        self.core
            .run(conn, operation::one(&self.core, DataOp::Add, item))
    }

    /// Whether an item may have been inserted (false positives possible,
    /// false negatives never).
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = rotabloom::AnyFilter::open(&mut conn, "crawl")?;
    /// let seen = f.contains(&mut conn, "http://example.com/")?;
    /// # Ok::<(), rotabloom::Error>(())
    /// ```
    pub fn contains<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        self.core
            .run(conn, operation::one(&self.core, DataOp::Has, item))
    }

    /// Inserts an item and returns `true` when it was new: the crawler's
    /// `request_seen`, negated, as one atomic step. Of any number of
    /// concurrent callers with the same item, exactly one sees `true`.
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = rotabloom::AnyFilter::open(&mut conn, "crawl")?;
    /// if f.check_and_insert(&mut conn, "http://example.com/")? {
    ///     // first time: crawl it
    /// }
    /// # Ok::<(), rotabloom::Error>(())
    /// ```
    pub fn check_and_insert<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        self.core
            .run(conn, operation::one(&self.core, DataOp::CheckAdd, item))
    }

    /// [`insert`](Self::insert) for a batch: one round trip (very large
    /// inputs are cut into several), results in input order.
    pub fn insert_many<C, I>(&self, conn: &mut C, items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + ?Sized,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.core.run(conn, many(&self.core, DataOp::Add, items))
    }

    /// [`contains`](Self::contains) for a batch, results in input order.
    pub fn contains_many<C, I>(&self, conn: &mut C, items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + ?Sized,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.core.run(conn, many(&self.core, DataOp::Has, items))
    }

    /// [`check_and_insert`](Self::check_and_insert) for a batch, results in
    /// input order. An item repeated within the batch is new at most once.
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = rotabloom::AnyFilter::open(&mut conn, "crawl")?;
    /// let urls = ["http://a/", "http://b/", "http://a/"];
    /// let new = f.check_and_insert_many(&mut conn, urls)?;
    /// assert!(!new[2]);
    /// # Ok::<(), rotabloom::Error>(())
    /// ```
    pub fn check_and_insert_many<C, I>(&self, conn: &mut C, items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + ?Sized,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.core
            .run(conn, many(&self.core, DataOp::CheckAdd, items))
    }

    /// Distinct insertions over all generations (items whose insertion set
    /// at least one bit; a false positive is not counted).
    pub fn count<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<u64> {
        self.core.run(conn, operation::count(&self.core))
    }

    /// Parameters, fill ratio (BITCOUNT), current false-positive rate,
    /// memory and warnings of every generation.
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let info = rotabloom::AnyFilter::open(&mut conn, "crawl")?.info(&mut conn)?;
    /// for w in &info.warnings {
    ///     eprintln!("{}: {}", info.name, w.message);
    /// }
    /// # Ok::<(), rotabloom::Error>(())
    /// ```
    pub fn info<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<crate::info::Info> {
        self.core.run(conn, operation::info(&self.core))
    }

    /// Empties every generation; the filter and its parameters stay.
    pub fn clear<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<()> {
        self.core.run(conn, operation::clear(&self.core))
    }

    /// Deletes the filter: every generation and the metadata. Returns
    /// `false` when it was already gone.
    pub fn drop<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<bool> {
        self.core.run(conn, operation::drop_filter(&self.core))
    }
}
