//! `rotabloom add`: items from the arguments or standard input.

use crate::connect::Ctx;
use crate::lines::Source;
use crate::pipeline;
use crate::show::count;
use crate::Output;
use serde_json::json;
use std::ffi::OsString;
use std::io;

pub fn run(ctx: &Ctx, name: &str, items: Vec<OsString>, output: Output) -> anyhow::Result<u8> {
    let mut total = 0u64;
    pipeline::ordered(
        ctx,
        Source::new(items),
        1000,
        "items",
        "items",
        |conn| ctx.open_for_write(conn, name),
        |f, redis, job| {
            let mut once = f.idempotent_batch(job.sent());
            redis.run(job.first, job.lines.len(), |c| once.insert(c))
        },
        |lines, _, _| {
            total += lines.len() as u64;
            Ok(())
        },
    )?;
    output.print(
        &mut io::stdout(),
        &format!("{name}: added {}", count(total, "item")),
        &json!({ "name": name, "added": total }),
        false,
    )?;
    Ok(0)
}
