//! Which master serves which shard, read from the cluster's slot map:
//! for the caller who gives the `*_on` batches one connection per master,
//! and for status. Apart from the handle's item and batch calls, which
//! only use the grouping it keeps.

use super::{placement, root_io, ShardedFilter};
use crate::error::Result;
use crate::handle::FilterKind;

impl<K: FilterKind> ShardedFilter<K> {
    /// The shards each master serves, from `CLUSTER SLOTS`: one group per
    /// master in use (shard indices ascending), one group of every shard
    /// outside a cluster. Read on the first call (or the first `*_on`
    /// batch) and kept by the handle and its clones until a batch fails;
    /// a server that refuses `CLUSTER SLOTS` gets one group per shard.
    /// How many connections the `*_on` methods can use at once.
    ///
    /// ```no_run
    /// # let client = redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:7000/"])?;
    /// # let mut conn = client.get_connection()?;
    /// let f = rotabloom::ShardedFilter::<rotabloom::kinds::Bloom>::open(&mut conn, "crawl")?;
    /// let masters = f.shards_by_master(&mut conn).len();
    /// let mut conns = (0..masters).map(|_| client.get_connection()).collect::<Result<Vec<_>, _>>()?;
    /// let new = f.check_and_insert_many_on(&mut conns, ["a", "b"])?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shards_by_master<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Vec<Vec<u32>> {
        if self.shards.len() == 1 {
            return vec![vec![0]];
        }
        self.nodes
            .groups(conn)
            .groups
            .iter()
            .map(|g| g.iter().map(|&j| j as u32).collect())
            .collect()
    }

    /// The master (`host:port`) of each group of shards, read from the
    /// cluster now (`CLUSTER SLOTS`: after a failover, the new masters) and
    /// kept for the `*_on` batches, which send group `g` on `conns[g]`:
    /// `None` for a group no master serves (outside a cluster, or when
    /// `CLUSTER SLOTS` is refused). Give the `*_on` methods a plain
    /// connection to each ([`Target::connect_to`](crate::connect::Target::connect_to)):
    /// each master's shards then go in one pipeline per step, where a
    /// cluster connection sends every command alone. A master that no
    /// longer serves a shard (after a resharding or a failover) refuses its
    /// part with `MOVED`, unapplied: a retryable error, after which the
    /// groups are read again.
    ///
    /// ```no_run
    /// # fn demo(target: &rotabloom::connect::Target) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut conn = target.connect()?;
    /// let f = rotabloom::ShardedFilter::<rotabloom::kinds::Bloom>::open(&mut conn, "crawl")?;
    /// let mut conns = Vec::new();
    /// for master in f.group_masters(&mut conn) {
    ///     conns.push(match master {
    ///         Some(addr) => target.connect_to(&addr)?,
    ///         None => target.connect()?,
    ///     });
    /// }
    /// let mut batch = f.idempotent_batch(["a", "b", "c"]);
    /// let new = batch.check_and_insert_on(&mut conns)?;
    /// # Ok(()) }
    /// ```
    pub fn group_masters<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Vec<Option<String>> {
        if self.shards.len() == 1 {
            return vec![None];
        }
        self.nodes.read(conn).addrs.clone()
    }

    /// The address (`host:port`) of the master serving each shard's slot,
    /// from `CLUSTER SLOTS`; `None` everywhere outside a cluster.
    pub fn masters<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<Vec<Option<String>>> {
        let masters = root_io::cluster_masters(conn)?;
        Ok(self
            .shards
            .iter()
            .map(|f| {
                placement::master_of(&masters, placement::slot_of_filter(f.name()))
                    .map(|m| m.addr.clone())
            })
            .collect())
    }
}
