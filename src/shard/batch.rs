//! An idempotent batch of a sharded filter: one
//! [`IdempotentBatch`] per shard, each under a token derived from the
//! batch's, so that the batch, run again under its token (after a lost
//! reply, in this process or after a restart), is answered again by every
//! shard's record: exactly once per shard.

use super::answers::{gather, split, Split};
use super::fanout::{assign, named, send, side_by_side, Load, NodeMap, Served};
use super::ShardedFilter;
use crate::batch::IdempotentBatch;
use crate::error::{Error, Result};
use crate::handle::FilterKind;
use crate::machine::Machine;
use crate::proto::script::DataOp;
use crate::proto::shard::root::Root;
use std::sync::Arc;
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
        let Split { items, parts, len } = split(items, self.shard_count());
        // What a shard's batch is made with.
        let delivery = crate::batch::Delivery::default();
        let token = crate::uid::new_uid();
        let batches = items
            .into_iter()
            .zip(&parts)
            .enumerate()
            .map(|(j, (part, idx))| {
                (!idx.is_empty()).then(|| {
                    let b = IdempotentBatch::new(self.shards[j].core.clone(), part);
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
            len,
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
        let (loads, unsent) = self.loads(vec![list], op);
        let sent = loads
            .into_iter()
            .flatten()
            .flat_map(|load| side_by_side(conn, load))
            .collect();
        self.finish(Some(conn), op, sent, unsent)
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
        let (loads, unsent) = self.loads(assign(&groups.groups, &self.todo(), n), op);
        let sent = send(conns, loads);
        self.finish(conns.first_mut(), op, sent, unsent)
    }

    /// The machines of the shards of `lists` (one list per connection),
    /// each connection's as one load; a shard whose machine cannot be made
    /// fails alone, unsent.
    #[allow(clippy::type_complexity)] // Each connection's load, and the rest.
    fn loads(
        &mut self,
        lists: Vec<Vec<usize>>,
        op: DataOp,
    ) -> (
        Vec<Option<Load<impl Machine<Output = Vec<bool>> + Send>>>,
        Served<Vec<bool>>,
    ) {
        let mut unsent: Served<Vec<bool>> = Vec::new();
        let mut loads = Vec::with_capacity(lists.len());
        for list in lists {
            let mut load = None;
            for j in list {
                let Some(b) = self.batches.get_mut(j).and_then(Option::as_mut) else {
                    let e = Error::Internal(format!("shard {j} has no part to send"));
                    unsent.push((j, Err(e)));
                    continue;
                };
                match b.machine(op) {
                    Ok(m) => load
                        .get_or_insert_with(|| Load::new(b.core().clone()))
                        .push(j, m),
                    Err(e) => unsent.push((j, Err(e))),
                }
            }
            loads.push(load);
        }
        (loads, unsent)
    }

    /// This run's results: each sent shard's settled by its own batch (at
    /// least once, a lost reply makes it count its items unknown), every
    /// one named after its shard, a missing shard said as what it is (read
    /// on `conn`), then kept.
    fn finish<C: redis::ConnectionLike + ?Sized>(
        &mut self,
        conn: Option<&mut C>,
        op: DataOp,
        sent: Served<Vec<bool>>,
        mut results: Served<Vec<bool>>,
    ) -> Result<Vec<bool>> {
        for (j, r) in sent {
            let r = match self.batches.get_mut(j).and_then(Option::as_mut) {
                Some(b) => b.settle(op, r),
                None => r,
            };
            results.push((j, r));
        }
        let results = named(self.root.as_deref(), results);
        let results = match conn {
            Some(conn) => super::gone::explain(conn, self.root.as_deref(), results),
            None => results,
        };
        self.keep(results)
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
