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
    fn create<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<(Filter<Self::Kind>, Opened)>;

    #[cfg(feature = "async")]
    #[doc(hidden)]
    fn create_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> impl std::future::Future<Output = Result<(Filter<Self::Kind>, Opened)>> + Send;
}

macro_rules! shardable {
    ($builder:ty, $kind:ty, $k:expr) => {
        impl ShardableBuilder for $builder {
            type Kind = $kind;
            const KIND: crate::metadata::Kind = $k;

            fn filter_name(&self) -> &str {
                self.name()
            }

            fn shard_builder(&self, name: &str, shards: u32) -> Result<(Self, u64)> {
                self.for_shard(name, shards)
            }

            fn create<C: redis::ConnectionLike + ?Sized>(
                &self,
                conn: &mut C,
            ) -> Result<(Filter<Self::Kind>, Opened)> {
                self.spec()?.create_or_open(conn)
            }

            #[cfg(feature = "async")]
            async fn create_async<C: redis::aio::ConnectionLike + Send>(
                &self,
                conn: &mut C,
            ) -> Result<(Filter<Self::Kind>, Opened)> {
                self.spec()?.create_or_open_async(conn).await
            }
        }
    };
}

shardable!(
    crate::bloom::BloomBuilder,
    crate::kinds::Bloom,
    crate::metadata::Kind::Bloom
);
shardable!(
    crate::expanding::ExpandingBuilder,
    crate::kinds::Expanding,
    crate::metadata::Kind::Expanding
);
shardable!(
    crate::circular::CircularBuilder,
    crate::kinds::Circular,
    crate::metadata::Kind::Circular
);

// The `shards` method of each builder lives here, with what it makes, so
// that the kinds' modules do not depend on this one.
impl crate::bloom::BloomBuilder {
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
    /// Splits the filter into `shards` filters over the masters of a Redis
    /// Cluster, each sized for its share of the items per first generation
    /// (see [`ShardedFilter`](crate::ShardedFilter)); 1 is this filter.
    pub fn shards(self, shards: u32) -> crate::shard::ShardedBuilder<Self> {
        crate::shard::ShardedBuilder::new(self, shards)
    }
}

impl crate::circular::CircularBuilder {
    /// Splits the filter into `shards` filters over the masters of a Redis
    /// Cluster, each sized for its share of the items per period
    /// (see [`ShardedFilter`](crate::ShardedFilter)); 1 is this filter.
    pub fn shards(self, shards: u32) -> crate::shard::ShardedBuilder<Self> {
        crate::shard::ShardedBuilder::new(self, shards)
    }
}
