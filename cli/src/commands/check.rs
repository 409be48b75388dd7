//! `rotabloom check`: the items that may be present (or, with `--absent`,
//! those that are not), like grep: exit 0 if any is printed, else 1.

use crate::run::lines::{write_kept, Source};
use crate::run::open;
use crate::run::pipeline::{self, Run};
use crate::run::tally::Writes;
use crate::shared::ctx::Ctx;
use std::ffi::OsString;
use std::io;

pub fn run(ctx: &Ctx, name: &str, items: Vec<OsString>, absent: bool) -> anyhow::Result<u8> {
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut printed = 0;
    pipeline::ordered(
        ctx,
        Source::new(items),
        Run {
            batch: 1000,
            what: "items",
            unit: "items",
            writes: Writes::None,
            journal: None,
            window: rotabloom::DEFAULT_RETRY_WINDOW,
            name,
        },
        |conn| Ok(open::open_sharded(conn, name)?.map_shards(|s| ctx.reader(s))),
        // Every line is asked: a query of a repeated line is answered
        // alike wherever it stands.
        |f, redis, job| {
            redis.run(job.first, job.lines.len(), |c| {
                f.contains_many(c, &job.lines)
            })
        },
        |lines, present, _| {
            printed += write_kept(&mut out, lines, present.into_iter().map(|p| p != absent))?;
            Ok(())
        },
    )?;
    Ok(if printed > 0 { 0 } else { 1 })
}
