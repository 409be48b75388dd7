//! `rotabloom filter`: standard input to standard output without the lines
//! seen before, by this or any other process using the filter.

use crate::connect::Ctx;
use crate::lines::{write_kept, Batches};
use crate::pipeline;
use std::io;

pub fn run(ctx: &Ctx, name: &str, batch_size: usize) -> anyhow::Result<u8> {
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    pipeline::ordered(
        ctx,
        Batches::new(io::stdin()),
        batch_size,
        "standard input",
        "lines",
        |conn| ctx.open_for_write(conn, name),
        |f, redis, job| {
            // Idempotent: a batch whose reply was lost is answered again
            // as it was, so no new line is dropped and none is printed
            // twice.
            let mut once = f.idempotent_batch(job.sent());
            let new = redis.run(job.first, job.lines.len(), |c| once.check_and_insert(c))?;
            Ok(job.expand(new))
        },
        |lines, new, _| Ok(write_kept(&mut out, lines, new).map(|_| ())?),
    )?;
    Ok(0)
}
