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

/// A kind's share of the items: the builder of the shard `name` of
/// `shards`, and the whole filter's capacity. Expanding and circular
/// builders divide their `capacity` field (per first generation, per
/// period); the bloom builder has its own, for its sizings.
macro_rules! share_capacity {
    () => {
        fn shard_builder(&self, name: &str, shards: u32) -> Result<(Self, u64)> {
            let mut b = self.clone();
            b.name = name.to_string();
            b.capacity = crate::params::shard_capacity(self.capacity, shards);
            Ok((b, self.capacity))
        }
    };
    (own) => {
        fn shard_builder(&self, name: &str, shards: u32) -> Result<(Self, u64)> {
            self.for_shard(name, shards)
        }
    };
}

/// The trait, and the builder's own `create_or_open` and
/// `create_or_open_async`, written once for every kind.
macro_rules! shardable {
    ($builder:ty, $kind:ty, $filter:ty, $k:expr, $($share:tt)?) => {
        impl $builder {
            /// Creates the filter, or opens it when it exists with the same
            /// parameters; a different kind or parameter is an error, never a
            /// silent reuse.
            pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
                self,
                conn: &mut C,
            ) -> Result<$filter> {
                ShardableBuilder::create(&self, conn).map(|(f, _)| f)
            }

            #[cfg(feature = "async")]
            /// Async [`create_or_open`](Self::create_or_open).
            pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
                self,
                conn: &mut C,
            ) -> Result<$filter> {
                ShardableBuilder::create_async(&self, conn)
                    .await
                    .map(|(f, _)| f)
            }
        }

        impl ShardableBuilder for $builder {
            type Kind = $kind;
            const KIND: crate::metadata::Kind = $k;

            fn filter_name(&self) -> &str {
                self.name()
            }

            share_capacity!($($share)?);

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
    crate::bloom::BloomFilter,
    crate::metadata::Kind::Bloom,
    own
);
shardable!(
    crate::expanding::ExpandingBuilder,
    crate::kinds::Expanding,
    crate::expanding::ExpandingFilter,
    crate::metadata::Kind::Expanding,
);
shardable!(
    crate::circular::CircularBuilder,
    crate::kinds::Circular,
    crate::circular::CircularFilter,
    crate::metadata::Kind::Circular,
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
