//! `rotabloom add`: items from the arguments or standard input.

use crate::connect::Ctx;
use crate::lines::{for_each_batch, Source};
use crate::resilient::Resilient;
use crate::show::count;
use crate::Output;
use serde_json::json;
use std::ffi::OsString;
use std::io;

pub fn run(ctx: &Ctx, name: &str, items: Vec<OsString>, output: Output) -> anyhow::Result<u8> {
    let mut redis = Resilient::connect(ctx, "items")?;
    let f = ctx.open_for_write(redis.conn(), name)?;
    let mut total = 0u64;
    for_each_batch(&mut Source::new(items), 1000, "items", |batch, _| {
        let mut once = f.idempotent_batch(batch.iter());
        redis.run(batch.len(), |c| once.insert(c))?;
        total += batch.len() as u64;
        Ok(())
    })?;
    output.print(
        &mut io::stdout(),
        &format!("{name}: added {}", count(total, "item")),
        &json!({ "name": name, "added": total }),
        false,
    )?;
    Ok(0)
}
