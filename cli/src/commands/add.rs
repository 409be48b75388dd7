//! `rotabloom add`: items from the arguments or standard input.

use crate::run::lines::Source;
use crate::run::pipeline::Run;
use crate::run::resume::flags::StateFlags;
use crate::run::resume::shell_words;
use crate::run::tally::{is_refusal, Writes};
use crate::shared::ctx::Ctx;
use crate::shared::output::Output;
use crate::show::values::count;
use serde_json::json;
use std::ffi::OsString;
use std::io;

pub fn run(
    ctx: &Ctx,
    name: &str,
    items: Vec<OsString>,
    output: Output,
    state: &StateFlags,
) -> anyhow::Result<u8> {
    let journal = state.journal(ctx.delivery, "add", name, |file| {
        let mut words = vec!["rotabloom", "add", name, "--resume", file];
        let args: Vec<String> = items
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        if !args.is_empty() {
            words.push("--");
            words.extend(args.iter().map(String::as_str));
        }
        shell_words(&words)
    })?;
    let (total, result) = crate::run::insert::insert_all(
        ctx,
        name,
        Source::new(items),
        Run {
            batch: 1000,
            what: "items",
            unit: "items",
            writes: Writes::Inserts,
            journal,
            window: state.window(),
            name,
        },
        None,
    );
    // Refused by a full filter: what was inserted before is said too.
    let refused = match result {
        Ok(()) => None,
        Err(e) if is_refusal(&e) => Some(e),
        Err(e) => return Err(e),
    };
    output.print(
        &mut io::stdout(),
        &format!(
            "{name}: added {}: {}",
            count(total.items, "item"),
            total.says()
        ),
        &json!({
            "name": name,
            "result": "inserted",
            "items": total.items,
            "new": total.new,
            "present": total.present(),
            "per_period": total.per_period,
            "unknown": total.unknown,
        }),
        false,
    )?;
    match refused {
        Some(e) => Err(e),
        None if total.unknown > 0 => Ok(crate::run::insert::EXIT_UNKNOWN),
        None => Ok(0),
    }
}
