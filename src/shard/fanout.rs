//! A batch split by shard, its parts sent at once, the answers put back in
//! input order. Splitting, merging and grouping shards by master are pure
//! (`answers`, `placement::group_by_master`, the joint machine); the
//! sending is one scoped thread per master's group of shards, whose
//! machines run side by side in one pipeline (blocking), or one future per
//! shard (async).

use super::answers::{gather, split};
use super::placement;
use super::ShardedFilter;
use crate::engine::{operation, Core};
use crate::error::{Error, Result};
use crate::handle::FilterKind;
use crate::items::Items;
use crate::joint::Joint;
use crate::machine::Machine;
use crate::proto::script::DataOp;
use std::sync::{Arc, RwLock};

/// The batch operations a sharded filter fans out.
#[derive(Clone, Copy, Debug)]
pub(super) enum Op {
    Insert,
    Contains,
    CheckAndInsert,
}

/// Which shards each master serves, learned from `CLUSTER SLOTS` at a
/// handle's first fan-out over several connections and shared by its
/// clones. Only speed depends on it: every shard's request still goes
/// through a connection that routes it by its key (a cluster connection
/// follows MOVED and ASK), so a stale map after a resharding sends a part
/// on a busier connection, never to a wrong shard. Forgotten after any
/// error, so the next batch reads the cluster again.
#[derive(Debug)]
pub(super) struct NodeMap {
    /// Each shard's slot.
    slots: Vec<u16>,
    groups: RwLock<Option<Arc<Grouping>>>,
}

/// The shards of each master, and each group's master (`host:port`, none
/// for the group of shards no master serves, or outside a cluster).
#[derive(Debug)]
pub(super) struct Grouping {
    pub groups: Vec<Vec<usize>>,
    pub addrs: Vec<Option<String>>,
}

impl NodeMap {
    pub(super) fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> NodeMap {
        NodeMap {
            slots: names.into_iter().map(placement::slot_of_filter).collect(),
            groups: RwLock::new(None),
        }
    }

    /// The shards of each master (see `placement::group_by_master`), read
    /// on `conn` once and kept. A server that refuses `CLUSTER SLOTS` (an
    /// ACL, a proxy) gets one group per shard, spread over the connections
    /// given.
    pub(super) fn groups<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Arc<Grouping> {
        match self.groups.read().ok().and_then(|g| g.clone()) {
            Some(g) => g,
            None => self.read(conn),
        }
    }

    /// The shards of each master, read on `conn` now and kept.
    pub(super) fn read<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Arc<Grouping> {
        let grouping = Arc::new(match super::root_io::cluster_masters(conn) {
            Ok(masters) => {
                let groups = placement::group_by_master(&masters, &self.slots);
                let addrs = groups
                    .iter()
                    .map(|g| {
                        let slot = g.first().map(|&j| self.slots[j])?;
                        placement::master_of(&masters, slot).map(|m| m.addr.clone())
                    })
                    .collect();
                Grouping { groups, addrs }
            }
            Err(_) => Grouping {
                groups: (0..self.slots.len()).map(|j| vec![j]).collect(),
                addrs: vec![None; self.slots.len()],
            },
        });
        if let Ok(mut g) = self.groups.write() {
            *g = Some(Arc::clone(&grouping));
        }
        grouping
    }

    /// Forgets the groups: the next batch reads the cluster again.
    pub(super) fn forget(&self) {
        if let Ok(mut g) = self.groups.write() {
            *g = None;
        }
    }
}

/// What one connection's shards gave: each shard's result.
pub(super) type Served<T> = Vec<(usize, Result<T>)>;

/// Runs `work` for the shards of `todo` (shard indices), a master's group
/// of shards on one connection at once (`work` is given the list, and runs
/// the shards' machines side by side: see [`side_by_side`]): group `g` on
/// `conns[g % conns.len()]`, each connection in use in its own thread
/// (this one included). Returns every shard's result.
pub(super) fn by_master<C, T>(
    groups: &[Vec<usize>],
    todo: &[bool],
    conns: &mut [C],
    work: impl Fn(&[usize], &mut C) -> Served<T> + Sync,
) -> Served<T>
where
    C: redis::ConnectionLike + Send,
    T: Send,
{
    let n = conns.len().max(1);
    let mut lists: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (g, shards) in groups.iter().enumerate() {
        lists[g % n].extend(shards.iter().copied().filter(|&j| todo[j]));
    }
    let mut busy = conns.iter_mut().zip(&lists).filter(|(_, l)| !l.is_empty());
    let Some((own_conn, own_list)) = busy.next() else {
        return Vec::new();
    };
    std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = busy
            .map(|(conn, list)| (list, scope.spawn(move || work(list, conn))))
            .collect();
        // This thread serves one connection itself: one spawn fewer.
        let mut results = work(own_list, own_conn);
        for (list, h) in handles {
            match h.join() {
                Ok(r) => results.extend(r),
                // Its shards' requests may have gone: their fate is unknown.
                Err(_) => results.extend(list.iter().map(|&j| {
                    let e = Error::Internal("a shard's sending thread panicked".into());
                    (j, Err(e))
                })),
            }
        }
        results
    })
}

/// Runs the machines of shards `list` (in that order) side by side on
/// `conn`, with `core`'s options: every round of theirs is one pipeline,
/// so a master's shards cost the round trips of one. Each shard keeps its
/// own result; an error of the connection itself is every shard's (each
/// may have been applied with its reply lost).
pub(super) fn side_by_side<M, C>(
    core: &Core,
    conn: &mut C,
    list: &[usize],
    machines: Vec<M>,
) -> Vec<(usize, Result<M::Output>)>
where
    M: Machine,
    C: redis::ConnectionLike + ?Sized,
{
    match core.run(conn, Joint::new(machines)) {
        Ok(results) => list.iter().copied().zip(results).collect(),
        Err(e) => list.iter().map(|&j| (j, Err(e.again()))).collect(),
    }
}

/// Each shard's result, its error named by `named` after its shard.
pub(super) fn served<T>(
    results: Vec<(usize, Result<T>)>,
    named: impl Fn(usize, Error) -> Error,
) -> Served<T> {
    results
        .into_iter()
        .map(|(j, r)| (j, r.map_err(|e| named(j, e))))
        .collect()
}

impl Op {
    fn data(self) -> DataOp {
        match self {
            Op::Insert => DataOp::Add,
            Op::Contains => DataOp::Has,
            Op::CheckAndInsert => DataOp::CheckAdd,
        }
    }
}

impl<K: FilterKind> ShardedFilter<K> {
    /// The parts of shard `j`.
    fn part<'a>(items: &'a Items, idx: &[usize]) -> Vec<&'a [u8]> {
        idx.iter()
            .map(|&i| items.get(i).unwrap_or_default())
            .collect()
    }

    /// Sends the batch: each master's shards' parts side by side on one
    /// connection (one pipeline a round), the masters at once (see
    /// [`by_master`]). A shard's failure leaves the others' answers (see
    /// [`gather`]).
    pub(super) fn fan<C, I>(&self, conns: &mut [C], op: Op, items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let items = Items::collect(items);
        let s = self.shards.len();
        let n = conns.len();
        let Some(first) = conns.first_mut() else {
            return Err(Error::InvalidParameter {
                name: "connections",
                reason: "no connection given".into(),
            });
        };
        let parts = split(&items, s as u32);
        let todo: Vec<bool> = parts.iter().map(|p| !p.is_empty()).collect();
        let groups = if n == 1 || s == 1 {
            // One connection: no need to know the masters.
            vec![(0..s).collect()]
        } else {
            self.nodes.groups(first).groups.clone()
        };
        let results = by_master(&groups, &todo, conns, |list, conn| {
            let machines = list
                .iter()
                .map(|&j| {
                    let part = Self::part(&items, &parts[j]);
                    operation::data(&self.shards[j].core, op.data(), part, None)
                })
                .collect();
            let core = &self.shards[list.first().copied().unwrap_or_default()].core;
            let results = side_by_side(core, conn, list, machines);
            served(results, |j, e| self.shard_error(j, e))
        });
        if results.iter().any(|(_, r)| r.is_err()) {
            self.nodes.forget();
        }
        let results = match conns.first_mut() {
            Some(conn) => super::gone::explain(conn, self.root.as_deref(), results),
            None => results,
        };
        gather(&self.name, items.len(), &parts, results)
    }
}

#[cfg(feature = "async")]
impl<K: FilterKind> ShardedFilter<K> {
    /// Sends every shard's part at once, each on its own clone of `conn`
    /// (a multiplexed or cluster connection: clones share its pipeline).
    async fn fan_async<C, I>(&self, conn: &C, op: Op, items: I) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let items = Items::collect(items);
        let s = self.shards.len() as u32;
        let parts = split(&items, s);
        let futures = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
            .map(|(j, idx)| {
                let mut conn = conn.clone();
                let part = Self::part(&items, idx);
                let f = &self.shards[j];
                async move {
                    let ans = match op {
                        Op::Insert => f.insert_many_async(&mut conn, part).await,
                        Op::Contains => f.contains_many_async(&mut conn, part).await,
                        Op::CheckAndInsert => f.check_and_insert_many_async(&mut conn, part).await,
                    };
                    (j, ans.map_err(|e| self.shard_error(j, e)))
                }
            });
        // Every shard's result, failed or not: one's failure leaves the
        // others' answers.
        let results = futures_util::future::join_all(futures).await;
        let results =
            super::gone::explain_async(&mut conn.clone(), self.root.as_deref(), results).await;
        gather(&self.name, items.len(), &parts, results)
    }

    /// Async [`insert_many`](Self::insert_many), every shard's part at once.
    pub async fn insert_many_async<C, I>(&self, conn: &C, items: I) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan_async(conn, Op::Insert, items).await
    }

    /// Async [`contains_many`](Self::contains_many), every shard's part at
    /// once.
    pub async fn contains_many_async<C, I>(&self, conn: &C, items: I) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan_async(conn, Op::Contains, items).await
    }

    /// Async [`check_and_insert_many`](Self::check_and_insert_many), every
    /// shard's part at once.
    pub async fn check_and_insert_many_async<C, I>(&self, conn: &C, items: I) -> Result<Vec<bool>>
    where
        C: redis::aio::ConnectionLike + Clone + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        self.fan_async(conn, Op::CheckAndInsert, items).await
    }
}
