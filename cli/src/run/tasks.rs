//! What each run over items does to a batch, as a pipeline [`Task`]:
//! `filter` checks and inserts, `add` and `load` insert, `check` asks.

use crate::run::open;
use crate::run::pipeline::job::Job;
use crate::run::pipeline::Task;
use crate::run::resilient::Resilient;
use crate::run::writer::Writer;
use crate::shared::any::Sharded;
use crate::shared::ctx::Ctx;
use rotabloom::connect::Connection;
use rotabloom::{Delivery, ShardedBatch};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// `filter`: each line checked and inserted at once, answered new or not.
pub struct CheckAndInsert<'a> {
    name: &'a str,
    delivery: Delivery,
    /// At least once: lines whose answers were lost with a reply.
    unknown: AtomicU64,
}

impl<'a> CheckAndInsert<'a> {
    pub fn new(name: &'a str, delivery: Delivery) -> Self {
        CheckAndInsert {
            name,
            delivery,
            unknown: AtomicU64::new(0),
        }
    }

    /// Lines whose answers were lost with a reply, so far.
    pub fn unknown(&self) -> u64 {
        self.unknown.load(Ordering::Relaxed)
    }
}

impl Task for CheckAndInsert<'_> {
    type Handle = Writer;

    fn open(&self, ctx: &Ctx, conn: &mut Connection) -> anyhow::Result<Writer> {
        Writer::open(ctx, conn, self.name)
    }

    /// Exactly once: a batch whose reply was lost is answered again as it
    /// was, so no new line is dropped and none is printed twice. At least
    /// once: its lines are all printed, and counted.
    fn answer(&self, w: &Writer, redis: &mut Resilient, job: &Job) -> anyhow::Result<Vec<bool>> {
        send(w, redis, job, self.delivery, &self.unknown, |b, c| {
            b.check_and_insert_on(c)
        })
    }
}

/// `add` and `load`: each item inserted, answered new to the filter or not.
pub struct Insert<'a> {
    name: &'a str,
    delivery: Delivery,
    /// At least once: items whose answers were lost with a reply.
    unknown: AtomicU64,
    /// The answers say so of the current period only (see `Inserted`).
    per_period: AtomicBool,
}

impl<'a> Insert<'a> {
    pub fn new(name: &'a str, delivery: Delivery) -> Self {
        Insert {
            name,
            delivery,
            unknown: AtomicU64::new(0),
            per_period: AtomicBool::new(false),
        }
    }

    /// Items whose answers were lost with a reply, so far.
    pub fn unknown(&self) -> u64 {
        self.unknown.load(Ordering::Relaxed)
    }

    /// Whether the answers say so of the current period only.
    pub fn per_period(&self) -> bool {
        self.per_period.load(Ordering::Relaxed)
    }
}

impl Task for Insert<'_> {
    type Handle = Writer;

    fn open(&self, ctx: &Ctx, conn: &mut Connection) -> anyhow::Result<Writer> {
        let w = Writer::open(ctx, conn, self.name)?;
        self.per_period
            .store(w.f.inserts_newest_only() && !w.f.grows(), Ordering::Relaxed);
        Ok(w)
    }

    fn answer(&self, w: &Writer, redis: &mut Resilient, job: &Job) -> anyhow::Result<Vec<bool>> {
        // A growing filter's insert writes its newest generation whatever
        // the older ones hold; checked first, an item they hold is not
        // written again (nor counted twice) and is answered present.
        // Queries answer the same either way.
        let (delivery, unknown) = (self.delivery, &self.unknown);
        if w.f.inserts_newest_only() && w.f.grows() {
            send(w, redis, job, delivery, unknown, |b, c| {
                b.check_and_insert_on(c)
            })
        } else {
            send(w, redis, job, delivery, unknown, |b, c| b.insert_on(c))
        }
    }
}

/// `job`'s lines as an idempotent batch sent with `delivery`, `op` on it,
/// the answers lost with a reply added to `unknown` (even when it failed).
fn send(
    w: &Writer,
    redis: &mut Resilient,
    job: &Job,
    delivery: Delivery,
    unknown: &AtomicU64,
    op: fn(&mut ShardedBatch, &mut [Connection]) -> rotabloom::Result<Vec<bool>>,
) -> anyhow::Result<Vec<bool>> {
    let batch = w.f.idempotent_batch(&job.lines).with_delivery(delivery);
    let mut once = job.prepare(batch)?;
    let done = w.run(redis, job, &mut once, op);
    unknown.fetch_add(once.unknown() as u64, Ordering::Relaxed);
    done
}

/// `check`: each item asked, answered maybe present or not.
pub struct Query<'a> {
    pub name: &'a str,
}

impl Task for Query<'_> {
    type Handle = Sharded;

    fn open(&self, ctx: &Ctx, conn: &mut Connection) -> anyhow::Result<Sharded> {
        Ok(open::open_sharded(conn, self.name)?.map_shards(|s| ctx.reader(s)))
    }

    /// Every line is asked: a query of a repeated line is answered alike
    /// wherever it stands.
    fn answer(&self, f: &Sharded, redis: &mut Resilient, job: &Job) -> anyhow::Result<Vec<bool>> {
        redis.run(job.first, job.lines.len(), |c| {
            f.contains_many(c, &job.lines)
        })
    }
}
