//! `rotabloom filter`: standard input to standard output without the lines
//! seen before, by this or any other process using the filter.

use crate::connect::Ctx;
use crate::lines::{for_each_batch, write_kept, Batches};
use crate::resilient::Resilient;
use std::io;

pub fn run(ctx: &Ctx, name: &str, batch_size: usize) -> anyhow::Result<u8> {
    let mut redis = Resilient::connect(ctx, "lines")?;
    let f = ctx.open_for_write(redis.conn(), name)?;
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut input = Batches::new(io::stdin());
    for_each_batch(&mut input, batch_size, "standard input", |batch, _| {
        // Idempotent: a batch whose reply was lost is answered again as it
        // was, so no new line is dropped and none is printed twice.
        let mut once = f.idempotent_batch(batch.iter());
        let new = redis.run(batch.len(), |c| once.check_and_insert(c))?;
        write_kept(&mut out, batch, new)?;
        Ok(())
    })?;
    Ok(0)
}
