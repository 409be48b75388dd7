//! One filter split over the masters of a Redis Cluster (docs/FORMAT.md
//! §11): S ordinary filters ("shards") under their own hash tags, named
//! by a root record, each item in the shard its digest picks.
//!
//! The pure parts are in their own files: the routing rule
//! ([`ItemHash::shard`](crate::ItemHash::shard)), the root record
//! (`root`), placement on masters (`placement`), the root's atomic steps
//! (`script`). This file and `create` are the I/O: the handle, its fan-out
//! and its creation; opening it (`open`) and where its shards are served
//! (`masters`) have files of their own.

mod answers;
mod batch;
mod build;
mod by_kind;
mod create;
pub(crate) mod dump;
mod fanout;
mod gone;
mod masters;
mod open;
mod orphans;
pub(crate) mod placement;
pub(crate) mod restore;
mod root_io;
mod rotate;
mod snapshot;
mod whole;

use crate::proto::shard::root;
pub use crate::proto::shard::root::{MAX_SHARDS, ROOT_FORMAT as SHARDED_FORMAT};
pub use crate::proto::shard::target::{ShardDisagreement, ShardOff};
pub use batch::ShardedBatch;
pub use build::ShardableBuilder;
pub use create::{ShardPlan, ShardedBuilder, DEFAULT_CREATE_LEASE};

use crate::error::{Error, Result};
use crate::handle::{Filter, FilterKind};
use fanout::{NodeMap, Op};
use root::Root;
use std::sync::Arc;

/// A filter that may be split into shards: S ordinary [`Filter`]s over
/// the masters of a Redis Cluster, one name (docs/FORMAT.md §11). With
/// one shard it is exactly the ordinary filter of that name, so code that
/// takes a `ShardedFilter` works on every filter.
///
/// Each item lives in one shard, chosen from its digest
/// ([`ItemHash::shard`](crate::ItemHash::shard)); batches are split by
/// shard, sent shard by shard (or, with the `*_on` methods, each master's
/// shards on one connection of several, the masters at once), and
/// answered in input order.
///
/// ```no_run
/// # let client = redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:7000/"])?;
/// # let mut conn = client.get_connection()?;
/// let f = rotabloom::BloomFilter::builder("crawl")
///     .capacity(60_000_000)
///     .shards(6)
///     .create_or_open(&mut conn)?;
/// // One connection per master: the shards' parts of a batch go at once.
/// let mut conns = vec![client.get_connection()?, client.get_connection()?, client.get_connection()?];
/// let new = f.check_and_insert_many_on(&mut conns, ["a", "b", "c"])?;
/// assert_eq!(new.len(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ShardedFilter<K: FilterKind> {
    name: String,
    /// None for an unsharded filter.
    root: Option<Arc<Root>>,
    shards: Vec<Filter<K>>,
    /// Which shards each master serves, shared by the clones.
    nodes: Arc<NodeMap>,
}

impl<K: FilterKind> Clone for ShardedFilter<K> {
    fn clone(&self) -> Self {
        ShardedFilter {
            name: self.name.clone(),
            root: self.root.clone(),
            shards: self.shards.clone(),
            nodes: Arc::clone(&self.nodes),
        }
    }
}

impl<K: FilterKind> std::fmt::Debug for ShardedFilter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedFilter")
            .field("name", &self.name)
            .field("shards", &self.shard_names())
            .finish()
    }
}

impl<K: FilterKind> ShardedFilter<K> {
    /// An unsharded filter as a one-shard handle.
    pub fn single(filter: Filter<K>) -> Self {
        Self::from_parts(filter.name().to_string(), None, vec![filter])
    }

    fn from_parts(name: String, root: Option<Arc<Root>>, shards: Vec<Filter<K>>) -> Self {
        ShardedFilter {
            nodes: Arc::new(NodeMap::new(shards.iter().map(|f| f.name()))),
            name,
            root,
            shards,
        }
    }

    /// The filter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether an insert writes only the newest generation while queries
    /// also read older ones (every shard is alike): see
    /// [`Filter::inserts_newest_only`].
    pub fn inserts_newest_only(&self) -> bool {
        self.shards.iter().all(|f| f.inserts_newest_only())
    }

    /// Whether the shards add a generation when their newest one fills:
    /// see [`Filter::grows`].
    pub fn grows(&self) -> bool {
        self.shards.iter().all(|f| f.grows())
    }

    /// Number of shards (1 for an unsharded filter).
    pub fn shard_count(&self) -> u32 {
        self.shards.len() as u32
    }

    /// Whether the filter is sharded (has a root record).
    pub fn is_sharded(&self) -> bool {
        self.root.is_some()
    }

    /// The shards' own filter names, shard 0 first (the filter's own name
    /// when unsharded).
    pub fn shard_names(&self) -> Vec<&str> {
        self.shards.iter().map(|f| f.name()).collect()
    }

    /// Shard `j`'s handle: everything an ordinary filter offers, on that
    /// shard alone.
    pub fn shard(&self, j: u32) -> Option<&Filter<K>> {
        self.shards.get(j as usize)
    }

    /// The shard that holds `item`.
    pub fn shard_of(&self, item: impl AsRef<[u8]>) -> u32 {
        crate::hashing::ItemHash::of(item).shard(self.shard_count())
    }

    /// Applies `f` to every shard handle (a setting: transactions, the
    /// frozen cache, when-full, replicas).
    pub fn map_shards(mut self, f: impl Fn(Filter<K>) -> Filter<K>) -> Self {
        self.shards = self.shards.into_iter().map(f).collect();
        self
    }

    /// Shard `j`'s error, with "not found" said as the missing shard it is.
    fn shard_error(&self, j: usize, e: Error) -> Error {
        match &self.root {
            Some(root) => missing(root, j, e),
            None => e,
        }
    }

    /// Shard `j`'s handle and the index to name it by in errors.
    fn holder(&self, item: &[u8]) -> Result<(usize, &Filter<K>)> {
        // Unsharded: no hashing, the one filter as before.
        let j = match self.shards.len() {
            1 => 0,
            _ => self.shard_of(item) as usize,
        };
        let f = self
            .shards
            .get(j)
            .ok_or_else(|| Error::Internal(format!("filter {:?} has no shard {j}", self.name)))?;
        Ok((j, f))
    }

    /// Inserts `item` into its shard; `true` when it was not present
    /// before. One round trip.
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let f = rotabloom::ShardedFilter::<rotabloom::kinds::Any>::open(&mut conn, "crawl")?;
    /// let new = f.insert(&mut conn, "https://example.com/")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        let (j, f) = self.holder(item.as_ref())?;
        let r = f.insert(conn, item).map_err(|e| self.shard_error(j, e));
        self.said(conn, j, r)
    }

    /// Whether `item` may be present (asked of its shard alone).
    pub fn contains<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        let (j, f) = self.holder(item.as_ref())?;
        let r = f.contains(conn, item).map_err(|e| self.shard_error(j, e));
        self.said(conn, j, r)
    }

    /// Atomically in its shard: `true` when `item` was new and is now
    /// inserted.
    pub fn check_and_insert<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        item: impl AsRef<[u8]>,
    ) -> Result<bool> {
        let (j, f) = self.holder(item.as_ref())?;
        let r = f
            .check_and_insert(conn, item)
            .map_err(|e| self.shard_error(j, e));
        self.said(conn, j, r)
    }

    /// One shard's result, a missing shard said as what it is (the whole
    /// filter dropped or re-created, see `gone`).
    fn said<C: redis::ConnectionLike + ?Sized, T>(
        &self,
        conn: &mut C,
        j: usize,
        r: Result<T>,
    ) -> Result<T> {
        let explained = gone::explain(conn, self.root.as_deref(), vec![(j, r)]);
        match explained.into_iter().next() {
            Some((_, r)) => r,
            None => Err(Error::Internal("a shard's result was lost".into())),
        }
    }

    /// Inserts `items`; `true` for each that was not present before.
    pub fn insert_many<C, I>(&self, conn: &mut C, items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan(std::slice::from_mut(conn), Op::Insert, items)
    }

    /// Whether each of `items` may be present.
    pub fn contains_many<C, I>(&self, conn: &mut C, items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan(std::slice::from_mut(conn), Op::Contains, items)
    }

    /// Inserts `items` atomically per item and per shard (not as a
    /// whole); `true` for each that was new. When a shard fails (full,
    /// missing, its reply lost) and others answered, the error is
    /// [`Error::Partial`]: every answer given, and the items of each
    /// failed shard named, refused or unknown. So do the other batch
    /// calls; an [`idempotent_batch`](Self::idempotent_batch) run again
    /// answers from its records and sends only the rest.
    pub fn check_and_insert_many<C, I>(&self, conn: &mut C, items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan(std::slice::from_mut(conn), Op::CheckAndInsert, items)
    }

    /// [`insert_many`](Self::insert_many) over several connections at
    /// once: the shards are grouped by the master that serves them
    /// ([`shards_by_master`](Self::shards_by_master), read once per handle),
    /// each master's parts go on one connection side by side (group `g` on
    /// `conns[g % conns.len()]`), each connection in use in its own thread.
    /// Give a plain connection to each master
    /// ([`group_masters`](Self::group_masters)): a batch then costs one
    /// pipeline per master and step, the masters at once. On cluster
    /// connections every command goes alone.
    pub fn insert_many_on<C, I>(&self, conns: &mut [C], items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan(conns, Op::Insert, items)
    }

    /// [`contains_many`](Self::contains_many) over several connections at
    /// once (see [`insert_many_on`](Self::insert_many_on)).
    pub fn contains_many_on<C, I>(&self, conns: &mut [C], items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan(conns, Op::Contains, items)
    }

    /// [`check_and_insert_many`](Self::check_and_insert_many) over several
    /// connections at once (see [`insert_many_on`](Self::insert_many_on)).
    pub fn check_and_insert_many_on<C, I>(&self, conns: &mut [C], items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan(conns, Op::CheckAndInsert, items)
    }

    /// Items inserted, summed over the shards.
    pub fn count<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<u64> {
        let mut total = 0u64;
        for (j, f) in self.shards.iter().enumerate() {
            total = total.saturating_add(f.count(conn).map_err(|e| self.shard_error(j, e))?);
        }
        Ok(total)
    }

    /// Every shard's [`Info`](crate::Info), shard 0 first.
    pub fn info<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<Vec<crate::info::Info>> {
        self.each(conn, |f, c| f.info(c))
    }

    /// Empties every shard, as one change of the whole filter
    /// (docs/FORMAT.md §11.8): recorded in the root, then each shard
    /// cleared to it; a rerun finishes an interrupted clear.
    pub fn clear<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<()> {
        match self.root {
            None => self.each(conn, |f, c| f.clear(c)).map(drop),
            Some(_) => self.clear_whole(conn),
        }
    }

    /// Runs `op` on every shard in turn, each error naming its shard.
    fn each<C: redis::ConnectionLike + ?Sized, T>(
        &self,
        conn: &mut C,
        op: impl Fn(&Filter<K>, &mut C) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.shards
            .iter()
            .enumerate()
            .map(|(j, f)| op(f, conn).map_err(|e| self.shard_error(j, e)))
            .collect()
    }

    /// Drops the filter, every shard and the root (docs/FORMAT.md §11.4):
    /// `false` when it did not exist.
    pub fn drop<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<bool> {
        match &self.root {
            None => match self.shards.first() {
                Some(f) => f.drop(conn),
                None => Ok(false),
            },
            Some(root) => create::drop_root(conn, root),
        }
    }
}

/// Shard `j` of `root`'s error: "not found" is the shard missing.
fn missing(root: &Root, j: usize, e: Error) -> Error {
    match e {
        Error::NotFound { .. } => Error::ShardMissing {
            name: root.name.clone(),
            shard: j as u32,
            shard_name: root.shards[j].clone(),
        },
        other => other,
    }
}
