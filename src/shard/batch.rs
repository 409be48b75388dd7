//! An idempotent batch of a sharded filter: one
//! [`IdempotentBatch`] per shard, each under a token derived from the
//! batch's, so that the batch, run again under its token (after a lost
//! reply, in this process or after a restart), is answered again by every
//! shard's record: exactly once per shard.

use super::answers::{gather, split};
use super::fanout::{by_master, served, side_by_side, NodeMap, Served};
use super::ShardedFilter;
use crate::batch::IdempotentBatch;
use crate::error::{Error, Result};
use crate::handle::FilterKind;
use crate::items::Items;
use crate::proto::script::DataOp;
use crate::proto::shard::root::Root;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The longest token a sharded batch takes: its shards' tokens add
/// `-<shard>`, at most 4 bytes, to the 64 an ordinary batch allows.
const MAX_TOKEN: usize = 60;

/// A batch for one write of a [`ShardedFilter`] that stays exactly once
/// when run again after a lost reply; see
/// [`IdempotentBatch`](crate::IdempotentBatch), whose methods it mirrors.
#[derive(Debug)]
pub struct ShardedBatch {
    /// The filter's name, for a partial outcome.
    name: String,
    token: String,
    len: usize,
    parts: Vec<Vec<usize>>,
    /// Each shard's batch (None for a shard with no item of this batch).
    batches: Vec<Option<IdempotentBatch>>,
    /// Each shard's answers, once it gave them: a run again after an error
    /// sends only to the shards that did not answer.
    answers: Vec<Option<Vec<bool>>>,
    /// The root, to name a missing shard.
    root: Option<Arc<Root>>,
    /// The filter's shards by master, for the `*_on` runs.
    nodes: Arc<NodeMap>,
    /// What every shard's batch was made with: an empty batch, with no
    /// shard's batch, still answers it.
    delivery: crate::batch::Delivery,
}

/// Each shard's batch behind a lock, so that the one thread that runs it
/// can take it: the lock is never contended, it only hands the batch over.
fn cells(batches: &mut [Option<IdempotentBatch>]) -> Vec<Mutex<Option<&mut IdempotentBatch>>> {
    batches.iter_mut().map(|b| Mutex::new(b.as_mut())).collect()
}

/// Runs the batches of shards `list` side by side on `conn` (one pipeline
/// a round); each shard's result is settled by its own batch (at least
/// once, a lost reply makes it count its items unknown).
fn serve<C: redis::ConnectionLike + ?Sized>(
    cells: &[Mutex<Option<&mut IdempotentBatch>>],
    root: &Option<Arc<Root>>,
    list: &[usize],
    conn: &mut C,
    op: DataOp,
) -> Served<Vec<bool>> {
    let named = |j, e| ShardedBatch::shard_error(root, j, e);
    // The shards whose machine is made are sent; any other fails alone,
    // unsent.
    let mut failed: Served<Vec<bool>> = Vec::new();
    let mut held = Vec::with_capacity(list.len());
    let mut sent = Vec::with_capacity(list.len());
    let mut machines = Vec::with_capacity(list.len());
    for &j in list {
        let mut g = match cells[j].lock() {
            Ok(g) if g.is_some() => g,
            _ => {
                let e = Error::Internal(format!("shard {j} has no part to send"));
                failed.push((j, Err(e)));
                continue;
            }
        };
        match g.as_mut().map(|b| b.machine(op)) {
            Some(Ok(m)) => {
                machines.push(m);
                held.push(g);
                sent.push(j);
            }
            Some(Err(e)) => failed.push((j, Err(e))),
            None => failed.push((j, Err(Error::Internal(format!("shard {j} has no batch"))))),
        }
    }
    let core = held
        .first()
        .and_then(|g| g.as_ref())
        .map(|b| b.core().clone());
    if let Some(core) = core {
        let results = side_by_side(&core, conn, &sent, machines);
        failed.extend(results.into_iter().zip(held.iter_mut()).map(
            |((j, r), g)| match g.as_mut() {
                Some(b) => (j, b.settle(op, r)),
                None => (j, r),
            },
        ));
    }
    served(failed, named)
}

/// Shard `j`'s token of a batch under `token`.
fn shard_token(token: &str, j: usize) -> String {
    format!("{token}-{j}")
}

impl<K: FilterKind> ShardedFilter<K> {
    /// A batch for one write that stays exactly once when run again after
    /// a lost reply, shard by shard.
    pub fn idempotent_batch<I>(&self, items: I) -> ShardedBatch
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let items = Items::collect(items);
        let parts = split(&items, self.shard_count());
        // What a shard's batch is made with (the handle's setting).
        let delivery = self
            .shards
            .first()
            .map(|f| f.idempotent_batch(std::iter::empty::<&[u8]>()).delivery())
            .unwrap_or_default();
        let token = crate::uid::new_uid();
        let batches = parts
            .iter()
            .enumerate()
            .map(|(j, idx)| {
                (!idx.is_empty()).then(|| {
                    let b = self.shards[j]
                        .idempotent_batch(idx.iter().map(|&i| items.get(i).unwrap_or_default()));
                    if self.shards.len() == 1 {
                        b
                    } else {
                        // A derived token is valid: 16 hex digits and "-j".
                        b.with_token(&shard_token(&token, j)).unwrap_or_else(|_| {
                            unreachable!("a derived token is 1 to 64 valid characters")
                        })
                    }
                })
            })
            .collect();
        let mut batch = ShardedBatch {
            name: self.name.clone(),
            token,
            len: items.len(),
            answers: vec![None; parts.len()],
            parts,
            batches,
            root: self.root.clone(),
            nodes: Arc::clone(&self.nodes),
            delivery,
        };
        if self.shards.len() == 1 {
            if let Some(Some(b)) = batch.batches.first() {
                batch.token = b.token().to_string();
            }
        }
        batch
    }
}

impl ShardedBatch {
    /// How the batch's answers survive a lost reply, for every shard (see
    /// [`IdempotentBatch::with_delivery`]).
    pub fn with_delivery(mut self, delivery: crate::batch::Delivery) -> ShardedBatch {
        self.batches = self
            .batches
            .into_iter()
            .map(|b| b.map(|b| b.with_delivery(delivery)))
            .collect();
        self.delivery = delivery;
        self
    }

    /// How the batch's answers survive a lost reply (an empty batch's
    /// too: what it was made with).
    pub fn delivery(&self) -> crate::batch::Delivery {
        self.delivery
    }

    /// At least once: how many items had their answers lost with a reply,
    /// over every shard (see [`IdempotentBatch::unknown`]).
    pub fn unknown(&self) -> usize {
        self.batches
            .iter()
            .flatten()
            .map(IdempotentBatch::unknown)
            .sum()
    }

    /// How long the server keeps the answers (see
    /// [`IdempotentBatch::with_retry_window`]).
    pub fn with_retry_window(mut self, window: Duration) -> ShardedBatch {
        self.batches = self
            .batches
            .into_iter()
            .map(|b| b.map(|b| b.with_retry_window(window)))
            .collect();
        self
    }

    /// The same batch under `token` (see [`IdempotentBatch::with_token`]);
    /// at most 60 characters when the filter has more than one shard.
    pub fn with_token(mut self, token: &str) -> Result<ShardedBatch> {
        let sharded = self.parts.len() > 1;
        if sharded && token.len() > MAX_TOKEN {
            return Err(Error::InvalidParameter {
                name: "token",
                reason: format!("a sharded filter's batch token is at most {MAX_TOKEN} characters"),
            });
        }
        let mut out = Vec::with_capacity(self.batches.len());
        for (j, b) in self.batches.into_iter().enumerate() {
            out.push(match b {
                Some(b) if sharded => Some(b.with_token(&shard_token(token, j))?),
                Some(b) => Some(b.with_token(token)?),
                None => None,
            });
        }
        self.batches = out;
        self.token = token.to_string();
        Ok(self)
    }

    /// The batch's token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// How many items the batch holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch holds no item.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Shard `j`'s error, "not found" said as the missing shard it is.
    fn shard_error(root: &Option<Arc<Root>>, j: usize, e: Error) -> Error {
        match root {
            Some(root) => super::missing(root, j, e),
            None => e,
        }
    }

    /// The shards with a part that has not answered yet.
    fn todo(&self) -> Vec<bool> {
        self.batches
            .iter()
            .zip(&self.answers)
            .map(|(b, a)| b.is_some() && a.is_none())
            .collect()
    }

    /// Runs every shard's batch that has not answered on `conn`, side by
    /// side (one pipeline a round).
    fn run<C: redis::ConnectionLike + ?Sized>(
        &mut self,
        conn: &mut C,
        op: DataOp,
    ) -> Result<Vec<bool>> {
        let todo = self.todo();
        let list: Vec<usize> = (0..todo.len()).filter(|&j| todo[j]).collect();
        let cells = cells(&mut self.batches);
        let served = serve(&cells, &self.root, &list, conn, op);
        drop(cells);
        let served = super::gone::explain(conn, self.root.as_deref(), served);
        self.keep(served)
    }

    /// [`run`](Self::run) over several connections, each master's shards
    /// side by side on one of them, the masters at once. A shard that
    /// answered keeps its answers whatever another did: a run again sends
    /// only to those that did not.
    fn run_on<C: redis::ConnectionLike + Send>(
        &mut self,
        conns: &mut [C],
        op: DataOp,
    ) -> Result<Vec<bool>> {
        let n = conns.len();
        let Some(first) = conns.first_mut() else {
            return Err(Error::InvalidParameter {
                name: "connections",
                reason: "no connection given".into(),
            });
        };
        if n == 1 || self.parts.len() == 1 {
            return self.run(first, op);
        }
        let groups = self.nodes.groups(first);
        let todo = self.todo();
        let cells = cells(&mut self.batches);
        let root = &self.root;
        let served = by_master(&groups.groups, &todo, conns, |list, conn| {
            serve(&cells, root, list, conn, op)
        });
        drop(cells);
        let served = match conns.first_mut() {
            Some(conn) => super::gone::explain(conn, self.root.as_deref(), served),
            None => served,
        };
        self.keep(served)
    }

    /// Keeps the answers of the shards that gave them, and puts every
    /// shard's answers (this run's or kept) in input order: a shard that
    /// failed leaves the others' (see [`Error::Partial`]). After an error,
    /// the masters are read again by the next run.
    fn keep(&mut self, served: Served<Vec<bool>>) -> Result<Vec<bool>> {
        let mut results = Vec::with_capacity(self.parts.len());
        for (j, r) in served {
            match r {
                Ok(a) => self.answers[j] = Some(a),
                Err(e) => results.push((j, Err(e))),
            }
        }
        if !results.is_empty() {
            self.nodes.forget();
        }
        results.extend(
            self.answers
                .iter()
                .enumerate()
                .filter_map(|(j, a)| a.clone().map(|a| (j, Ok(a)))),
        );
        gather(&self.name, self.len, &self.parts, results)
    }

    /// Check-and-insert of every item, shard by shard: true for the new
    /// ones, in order. Run again after an error, every shard answers as it
    /// first did.
    pub fn check_and_insert<C: redis::ConnectionLike + ?Sized>(
        &mut self,
        conn: &mut C,
    ) -> Result<Vec<bool>> {
        self.run(conn, DataOp::CheckAdd)
    }

    /// Insert of every item, shard by shard (see
    /// [`check_and_insert`](Self::check_and_insert)).
    pub fn insert<C: redis::ConnectionLike + ?Sized>(&mut self, conn: &mut C) -> Result<Vec<bool>> {
        self.run(conn, DataOp::Add)
    }

    /// [`check_and_insert`](Self::check_and_insert) over several
    /// connections at once: each master's shards on one connection, back
    /// to back, the masters in parallel (see
    /// [`ShardedFilter::check_and_insert_many_on`]). After an error, run
    /// it again (on new connections after a retryable one): the shards
    /// that answered keep their answers, the others answer as their first
    /// run did, if it ran.
    ///
    /// ```no_run
    /// # fn demo(f: &rotabloom::ShardedFilter<rotabloom::kinds::Bloom>,
    /// #         conns: &mut [redis::cluster::ClusterConnection]) -> rotabloom::Result<()> {
    /// let mut batch = f.idempotent_batch(["a", "b", "c"]);
    /// let new = batch.check_and_insert_on(conns)?;
    /// assert_eq!(new.len(), 3);
    /// # Ok(()) }
    /// ```
    pub fn check_and_insert_on<C: redis::ConnectionLike + Send>(
        &mut self,
        conns: &mut [C],
    ) -> Result<Vec<bool>> {
        self.run_on(conns, DataOp::CheckAdd)
    }

    /// [`insert`](Self::insert) over several connections at once (see
    /// [`check_and_insert_on`](Self::check_and_insert_on)).
    pub fn insert_on<C: redis::ConnectionLike + Send>(
        &mut self,
        conns: &mut [C],
    ) -> Result<Vec<bool>> {
        self.run_on(conns, DataOp::Add)
    }
}
