//! `rotabloom filter`: standard input to standard output without the lines
//! seen before, by this or any other process using the filter.

use crate::connect::Ctx;
use crate::lines::{write_kept, Batches};
use crate::pipeline::{self, Run};
use crate::resume::{shell_words, StateFlags};
use crate::tally::Writes;
use std::io;

pub fn run(ctx: &Ctx, name: &str, batch_size: usize, state: &StateFlags) -> anyhow::Result<u8> {
    let journal = state.journal("filter", name, |file| {
        shell_words(&["rotabloom", "filter", name, "--resume", file])
    })?;
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    pipeline::ordered(
        ctx,
        Batches::new(io::stdin()),
        Run {
            batch: batch_size,
            what: "standard input",
            unit: "lines",
            writes: Writes::Answers,
            journal,
            window: state.window(),
            name,
        },
        |conn| ctx.open_for_write(conn, name),
        |f, redis, job| {
            // Idempotent: a batch whose reply was lost is answered again
            // as it was, so no new line is dropped and none is printed
            // twice.
            let mut once = job.prepare(f.idempotent_batch(&job.lines))?;
            redis.run(job.first, job.lines.len(), |c| once.check_and_insert(c))
        },
        |lines, new, _| Ok(write_kept(&mut out, lines, new).map(|_| ())?),
    )?;
    Ok(0)
}
