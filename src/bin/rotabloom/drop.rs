//! `rotabloom drop`: a filter and all its data deleted, once confirmed.

use crate::connect::{self, Ctx};
use crate::errors::usage;
use std::io::{self, Write};

pub fn run(ctx: &Ctx, name: &str, yes: bool) -> anyhow::Result<u8> {
    if !yes {
        return Err(usage(format!(
            "drop deletes filter {name:?} and all its data: add --yes to confirm"
        )));
    }
    let mut conn = ctx.connect()?;
    let f = connect::open(&mut conn, name)?;
    if f.drop(&mut conn)? {
        writeln!(io::stdout(), "{name}: dropped")?;
        Ok(0)
    } else {
        // Dropped by another process between the open and the drop.
        Err(usage(format!("filter {name:?} does not exist")))
    }
}
