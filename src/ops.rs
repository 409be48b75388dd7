//! The operations every filter kind offers, written once: each is one
//! machine, and each public method a one-line wrapper that runs it on a
//! blocking or an async connection.

use crate::engine::chain::MachineExt;
use crate::engine::info::InfoMachine;
pub(crate) use crate::engine::operation::data;
use crate::engine::probe::probed;
use crate::engine::whole::{Which, WholeMachine};
use crate::engine::Core;
use crate::error::Error;
use crate::exec::Machine;
pub(crate) use crate::proto::script::DataOp;

/// One item's answer.
pub(crate) fn one(
    core: &Core,
    op: DataOp,
    item: impl AsRef<[u8]>,
) -> impl Machine<Output = bool> + Send {
    data(core, op, [item], None).map(|out| {
        out.first()
            .copied()
            .ok_or_else(|| Error::Internal("no answer for one item".into()))
    })
}

pub(crate) fn count(core: &Core) -> impl Machine<Output = u64> + Send {
    crate::engine::load::reload(core).map(|v| Ok(v.count()))
}

pub(crate) fn clear(core: &Core) -> impl Machine<Output = ()> + Send {
    let name = core.name().to_string();
    let m = WholeMachine::new(core.clone(), Which::Clear).map(move |there| match there {
        true => Ok(()),
        false => Err(Error::NotFound { name }),
    });
    probed(core, m)
}

/// The drop script, then what it leaves: the blocks in the trash and
/// every key still under the name (records of idempotent batches...).
/// The leftovers are removed even when the filter was gone already: a
/// drop interrupted after its script is finished by the next one.
pub(crate) fn drop_filter(core: &Core) -> impl Machine<Output = bool> + Send {
    let keys = core.keys.clone();
    let m = WholeMachine::new(core.clone(), Which::Drop)
        .then(move |there| Ok(crate::engine::trash::leftovers(keys).map(move |_| Ok(there))));
    probed(core, m)
}

pub(crate) fn info(core: &Core) -> impl Machine<Output = crate::Info> + Send {
    probed(core, InfoMachine::new(core.clone()))
}

/// Gives a filter handle type (a struct with a `core: Core` field) every
/// operation all kinds share.
macro_rules! impl_filter_ops {
    ($ty:ident, $accept:expr, $example:literal) => {
        impl $ty {
            /// A handle on the shared state `core`, reading its kinds.
            #[allow(dead_code)]
            pub(crate) fn from_core(core: $crate::engine::Core) -> Self {
                Self { core }
            }

            /// Opens an existing filter of this kind, whatever its
            /// parameters; a filter of another kind is
            /// [`Error::KindMismatch`]($crate::Error::KindMismatch). One round
            /// trip (two for a RedisBloom filter, whose module is checked).
            pub fn open<C: redis::ConnectionLike + ?Sized>(conn: &mut C, name: &str) -> $crate::Result<Self> {
                $crate::exec::run(conn, $crate::engine::load::open(name, $accept)?, None).map(Self::from_core)
            }

            #[cfg(feature = "async")]
            /// Async [`open`](Self::open).
            pub async fn open_async<C: redis::aio::ConnectionLike + Send>(conn: &mut C, name: &str) -> $crate::Result<Self> {
                $crate::exec::run_async(conn, $crate::engine::load::open(name, $accept)?, None).await.map(Self::from_core)
            }

            /// The filter's name.
            pub fn name(&self) -> &str {
                self.core.name()
            }

            /// Generations, as last read from Redis (oldest first): no
            /// round trip.
            pub fn generations(&self) -> Vec<$crate::Generation> {
                self.core.view().gens.clone()
            }

            /// Mirrors generations that can no longer change (the frozen
            /// generations of an expanding or query-all circular filter) in
            /// this process, up to `max_bytes`, and checks them locally: a
            /// query then costs one server operation however many
            /// generations there are. Copies are made on first use (one
            /// GETRANGE of 4 MiB per round trip), shared by clones of the
            /// handle, and dropped when their generation is rotated away or
            /// the filter cleared. Answers are the same as without it.
            pub fn with_frozen_cache(mut self, max_bytes: u64) -> Self {
                self.core.cache = Some(std::sync::Arc::new($crate::cache::FrozenCache::new(max_bytes)));
                self
            }

            /// Whether batches may take the guarded-transaction path
            /// (`WATCH`, `MULTI`, `BITFIELD`, `EXEC`; default true). Turn it
            /// off for a connection type that does not send a pipeline to
            /// one server in one piece; every operation then uses the
            /// atomic script, which is correct everywhere and slower for
            /// big batches.
            pub fn with_transactions(mut self, enabled: bool) -> Self {
                self.core.transactions = enabled;
                self
            }

            /// A batch for one write that stays exactly once when run again
            /// after a lost reply; see [`IdempotentBatch`]($crate::IdempotentBatch).
            pub fn idempotent_batch<I>(&self, items: I) -> $crate::IdempotentBatch
            where
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                $crate::batch::IdempotentBatch::new(self.core.clone(), items)
            }

            /// What a write of this handle does once the generation it fills
            /// holds its capacity (base and circular filters; default
            /// [`WhenFull::Error`]($crate::WhenFull::Error): refuse with
            /// [`Error::Full`]($crate::Error::Full)). See [`WhenFull`]($crate::WhenFull).
            pub fn with_when_full(mut self, when_full: $crate::WhenFull) -> Self {
                self.core.when_full = when_full;
                self
            }

            /// Makes every write of this handle (and its clones made after)
            /// wait until `wait` replicas acknowledged it (Redis `WAIT`);
            /// `None` stops waiting. See [`WaitReplicas`]($crate::WaitReplicas)
            /// for what this promises and what it does not.
            pub fn with_wait_replicas(mut self, wait: Option<$crate::WaitReplicas>) -> Self {
                self.core.wait = wait;
                self
            }

            /// Inserts one item. Returns `true` when the write changed the
            /// filter (the item's bits were not all set in the generations
            /// written).
            #[doc = concat!("\n\n```no_run\n", $example, "\nassert!(f.insert(&mut conn, \"http://example.com/\")?);\n# Ok::<(), rotabloom::Error>(())\n```")]
            pub fn insert<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool> {
                self.core.run(conn, $crate::ops::one(&self.core, $crate::ops::DataOp::Add, item))
            }

            /// Whether an item may have been inserted (false positives
            /// possible, false negatives never).
            #[doc = concat!("\n\n```no_run\n", $example, "\nlet seen = f.contains(&mut conn, \"http://example.com/\")?;\n# Ok::<(), rotabloom::Error>(())\n```")]
            pub fn contains<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool> {
                self.core.run(conn, $crate::ops::one(&self.core, $crate::ops::DataOp::Has, item))
            }

            /// Inserts an item and returns `true` when it was new: the
            /// crawler's `request_seen`, negated, as one atomic step. Of any
            /// number of concurrent callers with the same item, exactly one
            /// sees `true`.
            #[doc = concat!("\n\n```no_run\n", $example, "\nif f.check_and_insert(&mut conn, \"http://example.com/\")? {\n    // first time: crawl it\n}\n# Ok::<(), rotabloom::Error>(())\n```")]
            pub fn check_and_insert<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool> {
                self.core.run(conn, $crate::ops::one(&self.core, $crate::ops::DataOp::CheckAdd, item))
            }

            /// [`insert`](Self::insert) for a batch: one round trip (very
            /// large inputs are cut into several), results in input order.
            pub fn insert_many<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::ConnectionLike + ?Sized,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.core.run(conn, $crate::ops::data(&self.core, $crate::ops::DataOp::Add, items, None))
            }

            /// [`contains`](Self::contains) for a batch, results in input order.
            pub fn contains_many<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::ConnectionLike + ?Sized,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.core.run(conn, $crate::ops::data(&self.core, $crate::ops::DataOp::Has, items, None))
            }

            /// [`check_and_insert`](Self::check_and_insert) for a batch,
            /// results in input order. An item repeated within the batch is
            /// new at most once.
            #[doc = concat!("\n\n```no_run\n", $example, "\nlet urls = [\"http://a/\", \"http://b/\", \"http://a/\"];\nlet new = f.check_and_insert_many(&mut conn, urls)?;\nassert!(!new[2]);\n# Ok::<(), rotabloom::Error>(())\n```")]
            pub fn check_and_insert_many<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::ConnectionLike + ?Sized,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.core.run(conn, $crate::ops::data(&self.core, $crate::ops::DataOp::CheckAdd, items, None))
            }

            /// Distinct insertions over all generations (items whose
            /// insertion set at least one bit; a false positive is not
            /// counted).
            pub fn count<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> $crate::Result<u64> {
                self.core.run(conn, $crate::ops::count(&self.core))
            }

            /// Parameters, fill ratio (BITCOUNT), current false-positive
            /// rate and memory of every generation.
            pub fn info<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> $crate::Result<$crate::Info> {
                self.core.run(conn, $crate::ops::info(&self.core))
            }

            /// Empties every generation; the filter and its parameters stay.
            pub fn clear<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> $crate::Result<()> {
                self.core.run(conn, $crate::ops::clear(&self.core))
            }

            /// Deletes the filter: every generation and the metadata.
            /// Returns `false` when it was already gone.
            pub fn drop<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> $crate::Result<bool> {
                self.core.run(conn, $crate::ops::drop_filter(&self.core))
            }

            #[cfg(feature = "async")]
            /// Async [`insert`](Self::insert).
            pub async fn insert_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool> {
                self.core.run_async(conn, $crate::ops::one(&self.core, $crate::ops::DataOp::Add, item)).await
            }

            #[cfg(feature = "async")]
            /// Async [`contains`](Self::contains).
            pub async fn contains_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool> {
                self.core.run_async(conn, $crate::ops::one(&self.core, $crate::ops::DataOp::Has, item)).await
            }

            #[cfg(feature = "async")]
            /// Async [`check_and_insert`](Self::check_and_insert).
            pub async fn check_and_insert_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool> {
                self.core.run_async(conn, $crate::ops::one(&self.core, $crate::ops::DataOp::CheckAdd, item)).await
            }

            #[cfg(feature = "async")]
            /// Async [`insert_many`](Self::insert_many).
            pub async fn insert_many_async<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::aio::ConnectionLike + Send,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.core.run_async(conn, $crate::ops::data(&self.core, $crate::ops::DataOp::Add, items, None)).await
            }

            #[cfg(feature = "async")]
            /// Async [`contains_many`](Self::contains_many).
            pub async fn contains_many_async<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::aio::ConnectionLike + Send,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.core.run_async(conn, $crate::ops::data(&self.core, $crate::ops::DataOp::Has, items, None)).await
            }

            #[cfg(feature = "async")]
            /// Async [`check_and_insert_many`](Self::check_and_insert_many).
            pub async fn check_and_insert_many_async<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::aio::ConnectionLike + Send,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.core.run_async(conn, $crate::ops::data(&self.core, $crate::ops::DataOp::CheckAdd, items, None)).await
            }

            #[cfg(feature = "async")]
            /// Async [`count`](Self::count).
            pub async fn count_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C) -> $crate::Result<u64> {
                self.core.run_async(conn, $crate::ops::count(&self.core)).await
            }

            #[cfg(feature = "async")]
            /// Async [`info`](Self::info).
            pub async fn info_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C) -> $crate::Result<$crate::Info> {
                self.core.run_async(conn, $crate::ops::info(&self.core)).await
            }

            #[cfg(feature = "async")]
            /// Async [`clear`](Self::clear).
            pub async fn clear_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C) -> $crate::Result<()> {
                self.core.run_async(conn, $crate::ops::clear(&self.core)).await
            }

            #[cfg(feature = "async")]
            /// Async [`drop`](Self::drop).
            pub async fn drop_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C) -> $crate::Result<bool> {
                self.core.run_async(conn, $crate::ops::drop_filter(&self.core)).await
            }
        }
    };
}

pub(crate) use impl_filter_ops;
