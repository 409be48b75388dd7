//! The handle `filter`, `add` and `load` write with: the filter, and how
//! many masters its shards lie on. A sharded filter's batch is cut so that
//! each shard's part is about `--batch` lines, and goes over a plain
//! connection to each master, its shards' parts side by side in one
//! pipeline, the masters at once: a batch costs one round trip per master
//! and step, not one per shard.

use crate::run::pipeline::job::Job;
use crate::run::pipeline::Handle;
use crate::run::resilient::{Links, Resilient};
use crate::shared::any::Sharded;
use crate::shared::ctx::Ctx;
use rotabloom::connect::Connection;
use rotabloom::ShardedBatch;

/// A filter to write to.
#[derive(Clone)]
pub struct Writer {
    pub f: Sharded,
}

impl Writer {
    /// Opens (or creates, from the configuration) the filter `name`.
    pub fn open(ctx: &Ctx, conn: &mut Connection, name: &str) -> anyhow::Result<Writer> {
        Ok(Writer {
            f: ctx.open_for_write(conn, name)?,
        })
    }

    /// Runs `batch` (the job's lines, prepared) until it succeeds or the
    /// retries run out: `op` on the batch, over a connection to each
    /// master when the filter is sharded.
    pub fn run(
        &self,
        redis: &mut Resilient,
        job: &Job,
        batch: &mut ShardedBatch,
        op: fn(&mut ShardedBatch, &mut [Connection]) -> rotabloom::Result<Vec<bool>>,
    ) -> anyhow::Result<Vec<bool>> {
        let links = |ctx: &Ctx, conn: &mut Connection| self.links(ctx, conn);
        let links: Links = &links;
        let links = self.f.is_sharded().then_some(links);
        redis.run_on(job.first, job.lines.len(), links, |c| op(batch, c))
    }

    /// A plain connection to each master the shards lie on, in the order
    /// of the filter's groups (read on `conn` when the filter does not
    /// know them: at first, and after a failed batch).
    fn links(&self, ctx: &Ctx, conn: &mut Connection) -> anyhow::Result<Vec<Connection>> {
        self.f
            .group_masters(conn)
            .iter()
            .map(|master| match master {
                Some(addr) => ctx.connect_to(addr),
                None => ctx.connect(),
            })
            .collect()
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
