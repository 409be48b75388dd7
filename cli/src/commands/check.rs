//! `rotabloom check`: the items that may be present (or, with `--absent`,
//! those that are not), like grep: exit 0 if any is printed, else 1.

use crate::run::lines::Source;
use crate::run::pipeline::{self, Run};
use crate::run::print::Print;
use crate::run::tally::Writes;
use crate::run::tasks::Query;
use crate::shared::ctx::Ctx;
use std::ffi::OsString;

pub fn run(ctx: &Ctx, name: &str, items: Vec<OsString>, absent: bool) -> anyhow::Result<u8> {
    let mut out = Print::stdout(absent);
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
        &Query { name },
        &mut out,
    )?;
    Ok(if out.printed > 0 { 0 } else { 1 })
}
