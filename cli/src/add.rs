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
    let total = pipeline::insert_all(
        ctx,
        name,
        Source::new(items),
        1000,
        "items",
        "items",
        |_, _| {},
    )?;
    output.print(
        &mut io::stdout(),
        &format!("{name}: added {}", count(total, "item")),
        &json!({ "name": name, "added": total }),
        false,
    )?;
    Ok(0)
}
