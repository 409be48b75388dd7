//! The handle `filter`, `add` and `load` write with: the filter, and how
//! many masters its shards lie on. A sharded filter's batch is cut so that
//! each shard's part is about `--batch` lines, and goes over one
//! connection per master, the masters at once: a batch costs the round
//! trips of its busiest master, not those of every shard.

use crate::connect::{Ctx, Sharded};
use crate::pipeline::{Handle, Job};
use crate::resilient::Resilient;
use rotabloom::connect::Connection;
use rotabloom::ShardedBatch;

/// A filter to write to, and the connections a batch of it goes over.
#[derive(Clone)]
pub struct Writer {
    pub f: Sharded,
    /// Masters the shards lie on (1 when unsharded or outside a cluster).
    masters: usize,
}

impl Writer {
    /// Opens (or creates, from the configuration) the filter `name`, and
    /// reads which masters serve its shards.
    pub fn open(ctx: &Ctx, conn: &mut Connection, name: &str) -> anyhow::Result<Writer> {
        let f = ctx.open_for_write(conn, name)?;
        let masters = if f.is_sharded() {
            f.shards_by_master(conn).len().max(1)
        } else {
            1
        };
        Ok(Writer { f, masters })
    }

    /// Runs `batch` (the job's lines, prepared) until it succeeds or the
    /// retries run out: `op` on the batch over one connection per master.
    pub fn run(
        &self,
        redis: &mut Resilient,
        job: &Job,
        batch: &mut ShardedBatch,
        op: fn(&mut ShardedBatch, &mut [Connection]) -> rotabloom::Result<Vec<bool>>,
    ) -> anyhow::Result<Vec<bool>> {
        redis.run_on(job.first, job.lines.len(), self.masters, |c| op(batch, c))
    }
}

impl Handle for Writer {
    fn batch(&self, asked: usize) -> usize {
        self.f.batch(asked)
    }
}

impl Handle for Sharded {
    /// `asked` lines per shard: a part of about `asked` lines per shard
    /// keeps each round trip as full as an unsharded filter's.
    fn batch(&self, asked: usize) -> usize {
        asked.saturating_mul(self.shard_count() as usize)
    }
}
