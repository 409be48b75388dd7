//! The operations every filter kind offers, written once. Each kind's
//! handle holds a [`Core`](crate::engine::Core) in a field named `core`; this
//! macro gives it the sync and async methods, which only hash the items and
//! run the shared state machines.

macro_rules! impl_filter_ops {
    ($ty:ident, $kind:expr, $example:literal) => {
        impl $ty {
            /// Opens an existing filter of this kind, whatever its
            /// parameters; a filter of another kind is
            /// [`Error::KindMismatch`]($crate::Error::KindMismatch).
            pub fn open<C: redis::ConnectionLike + ?Sized>(conn: &mut C, name: &str) -> $crate::Result<Self> {
                Ok(Self {
                    core: $crate::engine::open(conn, name, $kind)?,
                })
            }

            /// Async [`open`](Self::open).
            pub async fn open_async<C: redis::aio::ConnectionLike + Send>(conn: &mut C, name: &str) -> $crate::Result<Self> {
                Ok(Self {
                    core: $crate::engine::open_async(conn, name, $kind).await?,
                })
            }

            /// The filter's name.
            pub fn name(&self) -> &str {
                self.core.name()
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

            /// Inserts one item. Returns `true` when the write changed the
            /// filter (the item's bits were not all set in the generations
            /// written).
            #[doc = concat!("\n\n```no_run\n", $example, "\nassert!(f.insert(&mut conn, \"http://example.com/\")?);\n# Ok::<(), rotabloom::Error>(())\n```")]
            pub fn insert<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool> {
                self.run_one(conn, $crate::engine::DataOp::Add, item)
            }

            /// Whether an item may have been inserted (false positives
            /// possible, false negatives never).
            #[doc = concat!("\n\n```no_run\n", $example, "\nlet seen = f.contains(&mut conn, \"http://example.com/\")?;\n# Ok::<(), rotabloom::Error>(())\n```")]
            pub fn contains<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool> {
                self.run_one(conn, $crate::engine::DataOp::Has, item)
            }

            /// Inserts an item and returns `true` when it was new: the
            /// crawler's `request_seen`, negated, as one atomic step. Of any
            /// number of concurrent callers with the same item, exactly one
            /// sees `true`.
            #[doc = concat!("\n\n```no_run\n", $example, "\nif f.check_and_insert(&mut conn, \"http://example.com/\")? {\n    // first time: crawl it\n}\n# Ok::<(), rotabloom::Error>(())\n```")]
            pub fn check_and_insert<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool> {
                self.run_one(conn, $crate::engine::DataOp::CheckAdd, item)
            }

            /// [`insert`](Self::insert) for a batch: one round trip (very
            /// large inputs are cut into several), results in input order.
            pub fn insert_many<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::ConnectionLike + ?Sized,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.run_many(conn, $crate::engine::DataOp::Add, items)
            }

            /// [`contains`](Self::contains) for a batch, results in input order.
            pub fn contains_many<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::ConnectionLike + ?Sized,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.run_many(conn, $crate::engine::DataOp::Has, items)
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
                self.run_many(conn, $crate::engine::DataOp::CheckAdd, items)
            }

            /// Distinct insertions over all generations (items whose
            /// insertion set at least one bit; a false positive is not
            /// counted).
            pub fn count<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> $crate::Result<u64> {
                self.reload(conn).map(|m| m.count())
            }

            /// Parameters, fill ratio (BITCOUNT), current false-positive
            /// rate and memory of every generation.
            pub fn info<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> $crate::Result<$crate::Info> {
                $crate::exec::run(conn, $crate::info::InfoMachine::new(self.core.clone()))
            }

            /// Empties every generation; the filter and its parameters stay.
            pub fn clear<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> $crate::Result<()> {
                match $crate::exec::run(conn, $crate::engine::GuardedMachine::clear(self.core.clone()))? {
                    $crate::engine::Guarded::Done => Ok(()),
                    $crate::engine::Guarded::Gone => Err($crate::Error::NotFound { name: self.name().to_string() }),
                }
            }

            /// Deletes the filter: every generation and the metadata.
            /// Returns `false` when it was already gone.
            pub fn drop<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> $crate::Result<bool> {
                Ok($crate::exec::run(conn, $crate::engine::GuardedMachine::drop_filter(self.core.clone()))?
                    == $crate::engine::Guarded::Done)
            }

            /// Async [`insert`](Self::insert).
            pub async fn insert_async<C>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool>
            where
                C: redis::aio::ConnectionLike + Send,
            {
                self.run_one_async(conn, $crate::engine::DataOp::Add, item).await
            }

            /// Async [`contains`](Self::contains).
            pub async fn contains_async<C>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool>
            where
                C: redis::aio::ConnectionLike + Send,
            {
                self.run_one_async(conn, $crate::engine::DataOp::Has, item).await
            }

            /// Async [`check_and_insert`](Self::check_and_insert).
            pub async fn check_and_insert_async<C>(&self, conn: &mut C, item: impl AsRef<[u8]>) -> $crate::Result<bool>
            where
                C: redis::aio::ConnectionLike + Send,
            {
                self.run_one_async(conn, $crate::engine::DataOp::CheckAdd, item).await
            }

            /// Async [`insert_many`](Self::insert_many).
            pub async fn insert_many_async<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::aio::ConnectionLike + Send,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.run_many_async(conn, $crate::engine::DataOp::Add, items).await
            }

            /// Async [`contains_many`](Self::contains_many).
            pub async fn contains_many_async<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::aio::ConnectionLike + Send,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.run_many_async(conn, $crate::engine::DataOp::Has, items).await
            }

            /// Async [`check_and_insert_many`](Self::check_and_insert_many).
            pub async fn check_and_insert_many_async<C, I>(&self, conn: &mut C, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::aio::ConnectionLike + Send,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                self.run_many_async(conn, $crate::engine::DataOp::CheckAdd, items).await
            }

            /// Async [`count`](Self::count).
            pub async fn count_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C) -> $crate::Result<u64> {
                self.reload_async(conn).await.map(|m| m.count())
            }

            /// Async [`info`](Self::info).
            pub async fn info_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C) -> $crate::Result<$crate::Info> {
                $crate::exec::run_async(conn, $crate::info::InfoMachine::new(self.core.clone())).await
            }

            /// Async [`clear`](Self::clear).
            pub async fn clear_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C) -> $crate::Result<()> {
                match $crate::exec::run_async(conn, $crate::engine::GuardedMachine::clear(self.core.clone())).await? {
                    $crate::engine::Guarded::Done => Ok(()),
                    $crate::engine::Guarded::Gone => Err($crate::Error::NotFound { name: self.name().to_string() }),
                }
            }

            /// Async [`drop`](Self::drop).
            pub async fn drop_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C) -> $crate::Result<bool> {
                Ok($crate::exec::run_async(conn, $crate::engine::GuardedMachine::drop_filter(self.core.clone())).await?
                    == $crate::engine::Guarded::Done)
            }

            fn run_one<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C, op: $crate::engine::DataOp, item: impl AsRef<[u8]>) -> $crate::Result<bool> {
                Ok(self.run_many(conn, op, [item])?.first().copied().unwrap_or(false))
            }

            fn run_many<C, I>(&self, conn: &mut C, op: $crate::engine::DataOp, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::ConnectionLike + ?Sized,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                if self.core.cache.is_some() {
                    $crate::exec::run(conn, $crate::cache::FillMachine::new(self.core.clone())?)?;
                }
                let (out, prealloc) = $crate::exec::run(conn, $crate::engine::DataMachine::new(self.core.clone(), op, items))?;
                if !prealloc.is_empty() {
                    // Best effort: the items are in; a failed allocation is
                    // retried by the next writer that passes the mark.
                    let _ = $crate::exec::run(conn, $crate::engine::PreallocMachine::new(self.core.clone(), prealloc));
                }
                Ok(out)
            }

            async fn run_one_async<C>(&self, conn: &mut C, op: $crate::engine::DataOp, item: impl AsRef<[u8]>) -> $crate::Result<bool>
            where
                C: redis::aio::ConnectionLike + Send,
            {
                Ok(self.run_many_async(conn, op, [item]).await?.first().copied().unwrap_or(false))
            }

            async fn run_many_async<C, I>(&self, conn: &mut C, op: $crate::engine::DataOp, items: I) -> $crate::Result<Vec<bool>>
            where
                C: redis::aio::ConnectionLike + Send,
                I: IntoIterator,
                I::Item: AsRef<[u8]>,
            {
                if self.core.cache.is_some() {
                    $crate::exec::run_async(conn, $crate::cache::FillMachine::new(self.core.clone())?).await?;
                }
                let m = $crate::engine::DataMachine::new(self.core.clone(), op, items);
                let (out, prealloc) = $crate::exec::run_async(conn, m).await?;
                if !prealloc.is_empty() {
                    let _ = $crate::exec::run_async(conn, $crate::engine::PreallocMachine::new(self.core.clone(), prealloc)).await;
                }
                Ok(out)
            }

            fn reload<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> $crate::Result<std::sync::Arc<$crate::metadata::Meta>> {
                let meta = $crate::exec::run(conn, $crate::engine::LoadMachine::new(self.core.keys.clone()))?;
                self.core.accept(meta)?;
                Ok(self.core.view())
            }

            async fn reload_async<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C) -> $crate::Result<std::sync::Arc<$crate::metadata::Meta>> {
                let meta = $crate::exec::run_async(conn, $crate::engine::LoadMachine::new(self.core.keys.clone())).await?;
                self.core.accept(meta)?;
                Ok(self.core.view())
            }
        }
    };
}

pub(crate) use impl_filter_ops;
