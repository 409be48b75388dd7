//! `rotabloom drop` and `rotabloom clear`: a filter deleted, or emptied,
//! once confirmed.

use crate::connect::{self, Ctx};
use crate::errors::usage;
use crate::Output;
use serde_json::json;
use std::io;

/// Refuses to go on without `--yes`.
fn confirm(yes: bool, command: &str, what: &str) -> anyhow::Result<()> {
    if yes {
        return Ok(());
    }
    Err(usage(format!("{command} {what}: add --yes to confirm")))
}

pub fn run(ctx: &Ctx, name: &str, yes: bool, output: Output) -> anyhow::Result<u8> {
    confirm(
        yes,
        "drop",
        &format!("deletes filter {name:?} and all its data"),
    )?;
    let mut conn = ctx.connect()?;
    let f = connect::open(&mut conn, name)?;
    if f.drop(&mut conn)? {
        let doc = json!({ "name": name, "result": "dropped" });
        output.print(&mut io::stdout(), &format!("{name}: dropped"), &doc, true)?;
        Ok(0)
    } else {
        // Dropped by another process between the open and the drop.
        Err(usage(format!("filter {name:?} does not exist")))
    }
}

/// `rotabloom clear NAME --yes`: every generation emptied, one block per
/// step; the filter and its parameters stay.
pub fn clear(ctx: &Ctx, name: &str, yes: bool, output: Output) -> anyhow::Result<u8> {
    confirm(
        yes,
        "clear",
        &format!("empties filter {name:?}: every item in it is forgotten"),
    )?;
    let mut conn = ctx.connect()?;
    let f = ctx.writer(connect::open(&mut conn, name)?);
    f.clear(&mut conn)?;
    let doc = json!({ "name": name, "result": "cleared" });
    output.print(&mut io::stdout(), &format!("{name}: cleared"), &doc, true)?;
    Ok(0)
}
