//! `rotabloom check`: the items that may be present (or, with `--absent`,
//! those that are not), like grep: exit 0 if any is printed, else 1.

use crate::connect::{self, Ctx};
use crate::lines::{for_each_batch, write_kept, Source};
use std::ffi::OsString;
use std::io;

pub fn run(ctx: &Ctx, name: &str, items: Vec<OsString>, absent: bool) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let f = ctx.reader(connect::open(&mut conn, name)?);
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut printed = 0;
    for_each_batch(&mut Source::new(items), 1000, "items", |batch, _| {
        let present = f.contains_many(&mut conn, batch)?;
        printed += write_kept(&mut out, batch, present.into_iter().map(|p| p != absent))?;
        Ok(())
    })?;
    Ok(if printed > 0 { 0 } else { 1 })
}
