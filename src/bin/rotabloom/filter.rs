//! `rotabloom filter`: standard input to standard output without the lines
//! seen before, by this or any other process using the filter.

use crate::connect::Ctx;
use crate::lines::{for_each_batch, write_kept, Batches};
use std::io;

pub fn run(ctx: &Ctx, name: &str, batch_size: usize) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let f = ctx.open_for_write(&mut conn, name)?;
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut input = Batches::new(io::stdin());
    for_each_batch(&mut input, batch_size, "standard input", |batch, _| {
        let new = f.check_and_insert_many(&mut conn, batch)?;
        write_kept(&mut out, batch, new)?;
        Ok(())
    })?;
    Ok(0)
}
