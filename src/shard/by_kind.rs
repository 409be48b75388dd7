//! What a sharded filter does by its kind: an `Any` handle's drop of a
//! half-made filter, conversion and typed views; a circular one's
//! rotations; an expanding one's growth. Each acts on every shard.

use super::root_io::read_meta;
use super::{build::ShardableBuilder, create, ShardedFilter};
use crate::error::{Error, Result};
use crate::handle::{Filter, FilterKind};
use crate::keys::{FilterName, Keys};
use crate::metadata::Kind;
use crate::proto::shard::root::Root;
use std::sync::Arc;

impl ShardedFilter<crate::kinds::Any> {
    /// Drops the sharded filter `name` whatever its state: one with a
    /// missing shard, one whose creation or drop died half-way (the
    /// shards that exist, then the root). `false` when `name` is not a
    /// sharded filter (nothing is done: drop it as an ordinary filter).
    pub fn drop_if_sharded<C: redis::ConnectionLike + ?Sized>(
        conn: &mut C,
        name: &str,
    ) -> Result<bool> {
        let keys = Keys::new(FilterName::existing(name)?);
        let fields = read_meta(conn, keys.meta())?;
        if !Root::is_root(&fields) {
            return Ok(false);
        }
        let root = Root::decode(name, &fields)?;
        create::drop_root(conn, &root)
    }

    /// Whether `name` is a sharded filter's root record, in any state
    /// (being created or dropped included). One round trip.
    pub fn has_root<C: redis::ConnectionLike + ?Sized>(conn: &mut C, name: &str) -> Result<bool> {
        let keys = Keys::new(FilterName::existing(name)?);
        Ok(Root::is_root(&read_meta(conn, keys.meta())?))
    }

    /// The kind of every shard.
    pub fn kind(&self) -> Result<crate::metadata::Kind> {
        self.shards
            .first()
            .map(|f| f.kind())
            .ok_or_else(|| Error::Internal(format!("filter {:?} has no shards", self.name)))
    }

    /// Turns a bloom filter, sharded or not, into an expanding one: every
    /// shard in turn, shard 0 first, as
    /// [`ExpandingBuilder::convert_bloom`](crate::ExpandingBuilder::convert_bloom)
    /// does (in place; the growth settings of `growth`, whose name and
    /// capacity are not used), then the root records the new kind
    /// (docs/FORMAT.md §11.6). Not atomic across the shards, which no one
    /// step can reach, but resumable: a run that stops half-way leaves
    /// some shards expanding, each a complete filter that answers as
    /// before, and running it again converts the rest (a shard already
    /// expanding is only opened). `each(j, converted)` is told after shard
    /// `j`: whether this call converted it. A circular shard is
    /// [`Error::KindMismatch`].
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// use rotabloom::{kinds::Any, ExpandingFilter, ShardedFilter};
    /// let f = ShardedFilter::<Any>::open(&mut conn, "crawl")?;
    /// let e = f.convert_bloom(&mut conn, &ExpandingFilter::builder("crawl"), |j, done| {
    ///     println!("shard {j}: {}", if done { "converted" } else { "already expanding" });
    /// })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn convert_bloom<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        growth: &crate::expanding::ExpandingBuilder,
        mut each: impl FnMut(u32, bool),
    ) -> Result<ShardedFilter<crate::kinds::Expanding>> {
        // Every shard checked before any is converted.
        for (j, f) in self.shards.iter().enumerate() {
            if f.kind() == crate::metadata::Kind::Circular {
                return Err(self.shard_error(
                    j,
                    Error::KindMismatch {
                        name: f.name().to_string(),
                        expected: "bloom",
                        found: f.kind().as_str().to_string(),
                    },
                ));
            }
        }
        // The target first: from here on the root says expanding, and
        // every reader sees the shards not converted yet as behind it.
        if self.root.is_some() {
            self.record_kind(conn, Kind::Expanding)?;
        }
        let count = self.shard_count();
        let convert = |_, f: &Filter<crate::kinds::Any>, c: &mut C| {
            let was_bloom = f.kind() == Kind::Bloom;
            let (b, _) = ShardableBuilder::shard_builder(growth, f.name(), count)?;
            b.convert_bloom(c).map(|_| was_bloom)
        };
        let done = self.converge(conn, "the conversion to expanding", convert)?;
        for (j, was_bloom) in done.into_iter().enumerate() {
            each(j as u32, was_bloom);
        }
        ShardedFilter::open(conn, &self.name)
    }

    /// Records `kind` as the root's kind (the conversion's target), unless
    /// it is recorded already.
    fn record_kind<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        kind: Kind,
    ) -> Result<()> {
        for _ in 0..super::whole::RETARGET_RETRIES {
            let now = self.snapshot(conn)?;
            if now.root.kind == kind {
                return Ok(());
            }
            let was = Some(now.root.kind.as_str().to_string());
            let set = [("kind".to_string(), kind.as_str().to_string())];
            if self.retarget(conn, &now, &[("kind", was)], &set)? {
                return Ok(());
            }
        }
        Err(Error::Contention {
            name: self.name.clone(),
            retries: super::whole::RETARGET_RETRIES,
        })
    }

    /// The same filter as a handle on circular shards, when it is one.
    pub fn circular(&self) -> Option<ShardedFilter<crate::kinds::Circular>> {
        self.typed(|f| f.circular())
    }

    /// The same filter as a handle on expanding shards, when it is one.
    pub fn expanding(&self) -> Option<ShardedFilter<crate::kinds::Expanding>> {
        self.typed(|f| f.expanding())
    }

    fn typed<T: FilterKind>(
        &self,
        as_t: impl Fn(&Filter<crate::kinds::Any>) -> Option<Filter<T>>,
    ) -> Option<ShardedFilter<T>> {
        Some(ShardedFilter {
            name: self.name.clone(),
            root: self.root.clone(),
            shards: self.shards.iter().map(as_t).collect::<Option<_>>()?,
            nodes: Arc::clone(&self.nodes),
        })
    }
}

impl ShardedFilter<crate::kinds::Expanding> {
    /// Appends a generation to every shard, as one change of the whole
    /// filter (docs/FORMAT.md §11.8): each shard's target (one past its
    /// epoch as this handle last saw it) is recorded in the root, then
    /// each shard grows to it. A run that finds an earlier expansion
    /// unfinished finishes it instead; a shard that grew since counts as
    /// grown, and when every shard did (another process expanded first)
    /// nothing is recorded. Whether this call grew each shard.
    pub fn expand<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<Vec<bool>> {
        if self.root.is_none() {
            return self.each(conn, |f, c| f.expand(c));
        }
        // As the handle last saw them: an expansion made since then by
        // another process is this call's, as one expand supersedes another.
        let seen: Vec<u64> = self
            .shards
            .iter()
            .map(|f| super::whole::facts(f).epoch)
            .collect();
        for _ in 0..super::whole::RETARGET_RETRIES {
            let now = self.snapshot(conn)?;
            self.refuse_astray(&now, "expand")?;
            let mut t = now.targets();
            if !now.expansion_pending() {
                t.expanded = seen
                    .iter()
                    .enumerate()
                    .map(|(j, e)| (j, e.saturating_add(1)))
                    .collect();
                let done = now.facts.iter().enumerate();
                if done
                    .clone()
                    .all(|(j, s)| t.expanded.get(&j).is_some_and(|&f| s.epoch >= f))
                {
                    return Ok(vec![false; now.facts.len()]);
                }
                let set = super::whole::Snapshot::to_record(&t);
                if !self.retarget(conn, &now, &[], &set)? {
                    continue;
                }
            }
            return self.expand_to(conn, &t);
        }
        Err(Error::Contention {
            name: self.name.clone(),
            retries: super::whole::RETARGET_RETRIES,
        })
    }
}
