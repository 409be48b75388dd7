//! What a sharded creation needs of a kind's builder: its name, and the
//! builder of one shard (same parameters, its own name, the capacity
//! divided). Sealed: the builders are this crate's.

use crate::error::Result;
use crate::handle::{Filter, OneKind};
use crate::proto::create::Opened;

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::bloom::BloomBuilder {}
    impl Sealed for crate::expanding::ExpandingBuilder {}
    impl Sealed for crate::circular::CircularBuilder {}
}

/// A kind's builder that [`ShardedBuilder`](crate::ShardedBuilder) can
/// divide into shards: [`BloomBuilder`](crate::BloomBuilder),
/// [`ExpandingBuilder`](crate::ExpandingBuilder),
/// [`CircularBuilder`](crate::CircularBuilder). Sealed.
pub trait ShardableBuilder: sealed::Sealed + Clone + Send + Sync + 'static {
    /// The kind of filter it builds.
    type Kind: OneKind;

    #[doc(hidden)]
    const KIND: crate::metadata::Kind;

    #[doc(hidden)]
    fn filter_name(&self) -> &str;

    #[doc(hidden)]
    fn shard_builder(&self, name: &str, shards: u32) -> Result<(Self, u64)>;

    #[doc(hidden)]
    type Spec: crate::creates::sealed::Creates<Kind = Self::Kind>;

    /// The validated spec of the filter it describes.
    #[doc(hidden)]
    fn kind_spec(&self) -> Result<Self::Spec>;

    #[doc(hidden)]
    fn create<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<(Filter<Self::Kind>, Opened)> {
        crate::creates::run(&self.kind_spec()?, conn)
    }

    #[cfg(feature = "async")]
    #[doc(hidden)]
    fn create_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> impl std::future::Future<Output = Result<(Filter<Self::Kind>, Opened)>> + Send {
        async move { crate::creates::run_async(&self.kind_spec()?, conn).await }
    }
}

// Each kind's side of the trait, and below its builder's `create_or_open`:
// what differs between kinds (types, how a shard's share is sized), the
// rest being the trait's own methods.

impl ShardableBuilder for crate::bloom::BloomBuilder {
    type Kind = crate::kinds::Bloom;
    const KIND: crate::metadata::Kind = crate::metadata::Kind::Bloom;
    type Spec = crate::bloom::BloomSpec;

    fn filter_name(&self) -> &str {
        self.name()
    }

    // The bloom builder divides by its own sizing (capacity or an
    // explicit shape).
    fn shard_builder(&self, name: &str, shards: u32) -> Result<(Self, u64)> {
        self.for_shard(name, shards)
    }

    fn kind_spec(&self) -> Result<Self::Spec> {
        self.spec()
    }
}

impl ShardableBuilder for crate::expanding::ExpandingBuilder {
    type Kind = crate::kinds::Expanding;
    const KIND: crate::metadata::Kind = crate::metadata::Kind::Expanding;
    type Spec = crate::expanding::ExpandingSpec;

    fn filter_name(&self) -> &str {
        self.name()
    }

    // Each shard's first generation holds its share.
    fn shard_builder(&self, name: &str, shards: u32) -> Result<(Self, u64)> {
        let mut b = self.clone();
        b.name = name.to_string();
        b.capacity = crate::params::shard_capacity(self.capacity, shards);
        Ok((b, self.capacity))
    }

    fn kind_spec(&self) -> Result<Self::Spec> {
        self.spec()
    }
}

impl ShardableBuilder for crate::circular::CircularBuilder {
    type Kind = crate::kinds::Circular;
    const KIND: crate::metadata::Kind = crate::metadata::Kind::Circular;
    type Spec = crate::circular::CircularSpec;

    fn filter_name(&self) -> &str {
        self.name()
    }

    // Each shard's generations hold its share of a period.
    fn shard_builder(&self, name: &str, shards: u32) -> Result<(Self, u64)> {
        let mut b = self.clone();
        b.name = name.to_string();
        b.capacity = crate::params::shard_capacity(self.capacity, shards);
        Ok((b, self.capacity))
    }

    fn kind_spec(&self) -> Result<Self::Spec> {
        self.spec()
    }
}

/// A builder's filter, created or opened.
fn create_or_open<B: ShardableBuilder, C: redis::ConnectionLike + ?Sized>(
    b: &B,
    conn: &mut C,
) -> Result<Filter<B::Kind>> {
    b.create(conn).map(|(f, _)| f)
}

#[cfg(feature = "async")]
async fn create_or_open_async<B: ShardableBuilder, C: redis::aio::ConnectionLike + Send>(
    b: &B,
    conn: &mut C,
) -> Result<Filter<B::Kind>> {
    b.create_async(conn).await.map(|(f, _)| f)
}

// The `create_or_open` and `shards` methods of each builder live here, with
// what they make, so that the kinds' modules do not depend on this one.
impl crate::bloom::BloomBuilder {
    /// Creates the bloom filter, or opens it when it exists with the same
    /// parameters; another kind or parameter is an error
    /// ([`Error::ParameterMismatch`](crate::Error::ParameterMismatch)),
    /// never a silent reuse.
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let seen = rotabloom::BloomFilter::builder("urls")
    ///     .capacity(1_000_000)
    ///     .error_rate(0.001)
    ///     .create_or_open(&mut conn)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<crate::bloom::BloomFilter> {
        create_or_open(&self, conn)
    }

    #[cfg(feature = "async")]
    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        self,
        conn: &mut C,
    ) -> Result<crate::bloom::BloomFilter> {
        create_or_open_async(&self, conn).await
    }

    /// Splits the filter into `shards` filters over the masters of a Redis
    /// Cluster, each sized for its share of the items (see
    /// [`shard_capacity`](crate::params::shard_capacity) and
    /// [`ShardedFilter`](crate::ShardedFilter)); 1 is this filter.
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = rotabloom::BloomFilter::builder("crawl")
    ///     .capacity(60_000_000)
    ///     .shards(6)
    ///     .create_or_open(&mut conn)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shards(self, shards: u32) -> crate::shard::ShardedBuilder<Self> {
        crate::shard::ShardedBuilder::new(self, shards)
    }
}

impl crate::expanding::ExpandingBuilder {
    /// Creates the expanding filter (its first generation), or opens it
    /// when it exists with the same parameters; another kind or parameter
    /// is an error, never a silent reuse.
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let seen = rotabloom::ExpandingFilter::builder("urls")
    ///     .capacity(100_000)
    ///     .error_rate(0.001)
    ///     .create_or_open(&mut conn)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<crate::expanding::ExpandingFilter> {
        create_or_open(&self, conn)
    }

    #[cfg(feature = "async")]
    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        self,
        conn: &mut C,
    ) -> Result<crate::expanding::ExpandingFilter> {
        create_or_open_async(&self, conn).await
    }

    /// Splits the filter into `shards` filters over the masters of a Redis
    /// Cluster, each sized for its share of the items per first generation
    /// (see [`ShardedFilter`](crate::ShardedFilter)); 1 is this filter.
    pub fn shards(self, shards: u32) -> crate::shard::ShardedBuilder<Self> {
        crate::shard::ShardedBuilder::new(self, shards)
    }
}

impl crate::circular::CircularBuilder {
    /// Creates the circular filter (its generations), or opens it when it
    /// exists with the same parameters; another kind or parameter is an
    /// error, never a silent reuse.
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let recent = rotabloom::CircularFilter::builder("monthly")
    ///     .generations(4)
    ///     .capacity(1_000_000)
    ///     .schedule("monthly")
    ///     .create_or_open(&mut conn)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        self,
        conn: &mut C,
    ) -> Result<crate::circular::CircularFilter> {
        create_or_open(&self, conn)
    }

    #[cfg(feature = "async")]
    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        self,
        conn: &mut C,
    ) -> Result<crate::circular::CircularFilter> {
        create_or_open_async(&self, conn).await
    }

    /// Splits the filter into `shards` filters over the masters of a Redis
    /// Cluster, each sized for its share of the items per period
    /// (see [`ShardedFilter`](crate::ShardedFilter)); 1 is this filter.
    pub fn shards(self, shards: u32) -> crate::shard::ShardedBuilder<Self> {
        crate::shard::ShardedBuilder::new(self, shards)
    }
}
