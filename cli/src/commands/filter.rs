//! `rotabloom filter`: standard input to standard output without the lines
//! seen before, by this or any other process using the filter.

use crate::run::lines::Batches;
use crate::run::pipeline::{self, Run};
use crate::run::print::Print;
use crate::run::resume::flags::StateFlags;
use crate::run::resume::shell_words;
use crate::run::tally::Writes;
use crate::run::tasks::CheckAndInsert;
use crate::shared::ctx::Ctx;
use std::io;

pub fn run(ctx: &Ctx, name: &str, batch_size: usize, state: &StateFlags) -> anyhow::Result<u8> {
    let journal = state.journal(ctx.delivery, "filter", name, |file| {
        shell_words(&["rotabloom", "filter", name, "--resume", file])
    })?;
    let task = CheckAndInsert::new(name, ctx.delivery);
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
        &task,
        &mut Print::stdout(false),
    );
    // Said even when the run failed later: those lines were printed.
    let code = crate::run::insert::said_unknown(task.unknown(), "lines");
    result?;
    Ok(code)
}
