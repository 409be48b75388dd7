//! A batch split by shard, its parts sent at once, the answers put back in
//! input order. Splitting, merging and grouping shards by master are pure
//! (`answers`, `placement::group_by_master`, the joint machine); the
//! sending is one scoped thread per master's group of shards, whose
//! machines run side by side in one pipeline (blocking), or one future per
//! shard (async).

use super::answers::{gather, split, Split};
use super::placement;
use super::ShardedFilter;
use crate::engine::{operation, Core};
use crate::error::{Error, Result};
use crate::handle::FilterKind;
use crate::items::Items;
use crate::joint::Joint;
use crate::machine::Machine;
use crate::proto::script::DataOp;
use crate::proto::shard::root::Root;
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

/// What one connection sends: the machines of shards `shards` (in that
/// order), side by side, with the options of `core` (its first shard's).
pub(super) struct Load<M> {
    pub core: Core,
    pub shards: Vec<usize>,
    pub machines: Vec<M>,
}

impl<M> Load<M> {
    pub(super) fn new(core: Core) -> Load<M> {
        Load {
            core,
            shards: Vec::new(),
            machines: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, shard: usize, machine: M) {
        self.shards.push(shard);
        self.machines.push(machine);
    }
}

/// The shards of `todo` (by shard index) each of `n` connections sends, a
/// master's group of shards on one connection: group `g` on connection
/// `g % n`.
pub(super) fn assign(groups: &[Vec<usize>], todo: &[bool], n: usize) -> Vec<Vec<usize>> {
    let mut lists: Vec<Vec<usize>> = vec![Vec::new(); n.max(1)];
    for (g, shards) in groups.iter().enumerate() {
        lists[g % n.max(1)].extend(shards.iter().copied().filter(|&j| todo[j]));
    }
    lists
}

/// Sends load `i` on `conns[i]` (none for an idle connection), each
/// connection in use in its own thread (this one included). Returns every
/// shard's result.
pub(super) fn send<C, M>(conns: &mut [C], loads: Vec<Option<Load<M>>>) -> Served<M::Output>
where
    C: redis::ConnectionLike + Send,
    M: Machine + Send,
    M::Output: Send,
{
    let mut busy = conns
        .iter_mut()
        .zip(loads)
        .filter_map(|(conn, load)| Some((conn, load?)));
    let Some((own_conn, own_load)) = busy.next() else {
        return Vec::new();
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = busy
            .map(|(conn, load)| {
                let shards = load.shards.clone();
                (shards, scope.spawn(move || side_by_side(conn, load)))
            })
            .collect();
        // This thread serves one connection itself: one spawn fewer.
        let mut results = side_by_side(own_conn, own_load);
        for (shards, h) in handles {
            match h.join() {
                Ok(r) => results.extend(r),
                // Its shards' requests may have gone: their fate is unknown.
                Err(_) => results.extend(shards.iter().map(|&j| {
                    let e = Error::Internal("a shard's sending thread panicked".into());
                    (j, Err(e))
                })),
            }
        }
        results
    })
}

/// Runs `load`'s machines side by side on `conn`: every round of theirs is
/// one pipeline, so a master's shards cost the round trips of one. Each
/// shard keeps its own result; an error of the connection itself is every
/// shard's (each may have been applied with its reply lost).
pub(super) fn side_by_side<M, C>(conn: &mut C, load: Load<M>) -> Served<M::Output>
where
    M: Machine,
    C: redis::ConnectionLike + ?Sized,
{
    let Load {
        core,
        shards,
        machines,
    } = load;
    match core.run(conn, Joint::new(machines)) {
        Ok(results) => shards.into_iter().zip(results).collect(),
        Err(e) => shards.into_iter().map(|j| (j, Err(e.again()))).collect(),
    }
}

/// Each shard's result, "not found" said as the missing shard of `root`
/// it is.
pub(super) fn named<T>(root: Option<&Root>, results: Served<T>) -> Served<T> {
    let Some(root) = root else {
        return results;
    };
    results
        .into_iter()
        .map(|(j, r)| (j, r.map_err(|e| super::missing(root, j, e))))
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
    /// Sends the batch: each master's shards' parts side by side on one
    /// connection (one pipeline a round), the masters at once (see
    /// [`send`]). A shard's failure leaves the others' answers (see
    /// [`gather`]).
    pub(super) fn fan<C, I>(&self, conns: &mut [C], op: Op, items: I) -> Result<Vec<bool>>
    where
        C: redis::ConnectionLike + Send,
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let s = self.shards.len();
        let n = conns.len();
        let Some(first) = conns.first_mut() else {
            return Err(Error::InvalidParameter {
                name: "connections",
                reason: "no connection given".into(),
            });
        };
        let Split { items, parts, len } = split(items, s as u32);
        let todo: Vec<bool> = parts.iter().map(|p| !p.is_empty()).collect();
        let groups = if n == 1 || s == 1 {
            // One connection: no need to know the masters.
            vec![(0..s).collect()]
        } else {
            self.nodes.groups(first).groups.clone()
        };
        let items: Vec<Arc<Items>> = items.into_iter().map(Arc::new).collect();
        let loads = assign(&groups, &todo, n)
            .into_iter()
            .map(|list| {
                let mut load = Load::new(self.shards[*list.first()?].core.clone());
                for j in list {
                    let core = &self.shards[j].core;
                    let part = Arc::clone(&items[j]);
                    load.push(j, operation::data(core, op.data(), part, None));
                }
                Some(load)
            })
            .collect();
        let results = named(self.root.as_deref(), send(conns, loads));
        if results.iter().any(|(_, r)| r.is_err()) {
            self.nodes.forget();
        }
        let results = match conns.first_mut() {
            Some(conn) => super::gone::explain(conn, self.root.as_deref(), results),
            None => results,
        };
        gather(&self.name, len, &parts, results)
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
        let Split { items, parts, len } = split(items, self.shards.len() as u32);
        let futures = items
            .into_iter()
            .zip(&parts)
            .enumerate()
            .filter(|(_, (_, idx))| !idx.is_empty())
            .map(|(j, (part, _))| {
                let mut conn = conn.clone();
                let core = &self.shards[j].core;
                let m = operation::data(core, op.data(), Arc::new(part), None);
                async move {
                    let ans = core.run_async(&mut conn, m).await;
                    (j, ans.map_err(|e| self.shard_error(j, e)))
                }
            });
        // Every shard's result, failed or not: one's failure leaves the
        // others' answers.
        let results = futures_util::future::join_all(futures).await;
        let results =
            super::gone::explain_async(&mut conn.clone(), self.root.as_deref(), results).await;
        gather(&self.name, len, &parts, results)
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
