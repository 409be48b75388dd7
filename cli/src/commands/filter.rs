//! `rotabloom filter`: standard input to standard output without the lines
//! seen before, by this or any other process using the filter.

use crate::run::lines::{write_kept, Batches};
use crate::run::pipeline::{self, Run};
use crate::run::resume::flags::StateFlags;
use crate::run::resume::shell_words;
use crate::run::tally::Writes;
use crate::run::writer::Writer;
use crate::shared::ctx::Ctx;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

pub fn run(ctx: &Ctx, name: &str, batch_size: usize, state: &StateFlags) -> anyhow::Result<u8> {
    let journal = state.journal(ctx.delivery, "filter", name, |file| {
        shell_words(&["rotabloom", "filter", name, "--resume", file])
    })?;
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let unknown = AtomicU64::new(0);
    let result = pipeline::ordered(
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
        |conn| Writer::open(ctx, conn, name),
        |w, redis, job| {
            // Exactly once: a batch whose reply was lost is answered again
            // as it was, so no new line is dropped and none is printed
            // twice. At least once: its lines are all printed, and counted.
            let batch = w.f.idempotent_batch(&job.lines).with_delivery(ctx.delivery);
            let mut once = job.prepare(batch)?;
            let done = w.run(redis, job, &mut once, |b, c| b.check_and_insert_on(c));
            unknown.fetch_add(once.unknown() as u64, Ordering::Relaxed);
            done
        },
        |lines, new, _| Ok(write_kept(&mut out, lines, new).map(|_| ())?),
    );
    // Said even when the run failed later: those lines were printed.
    let code = crate::run::insert::said_unknown(unknown.into_inner(), "lines");
    result?;
    Ok(code)
}
