//! `rotabloom drop` and `rotabloom clear`: a filter deleted, or emptied,
//! once confirmed.

use crate::run::open;
use crate::shared::any::Sharded;
use crate::shared::ctx::Ctx;
use crate::shared::fail::usage;
use crate::shared::output::Output;
use rotabloom::AnyFilter;
use serde_json::json;
use std::io;

/// Whether opening failed on metadata that cannot be read.
fn is_unreadable(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<rotabloom::Error>(),
            Some(
                rotabloom::Error::CorruptMetadata { .. }
                    | rotabloom::Error::UnsupportedFormat { .. }
            )
        )
    })
}

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
    if Sharded::drop_if_sharded(&mut conn, name)? {
        let doc = json!({ "name": name, "result": "dropped" });
        output.print(&mut io::stdout(), &format!("{name}: dropped"), &doc, true)?;
        return Ok(0);
    }
    let dropped = match open::open(&mut conn, name) {
        Ok(f) => f.drop(&mut conn)?,
        // No filter: maybe a drop was interrupted after its first step,
        // which leaves blocks and records without metadata; finish it.
        Err(e) if open::is_gone(&e) => false,
        // Metadata nobody can read: dropping it is the way out.
        Err(e) if is_unreadable(&e) => {
            let why = crate::shared::fail::describe(&e, ctx.secrets());
            AnyFilter::drop_unreadable(&mut conn, name)?;
            let doc = json!({ "name": name, "result": "dropped", "unreadable": why });
            let text = format!("{name}: dropped (its metadata could not be read: {why})");
            output.print(&mut io::stdout(), &text, &doc, true)?;
            return Ok(0);
        }
        Err(e) => return Err(e),
    };
    if dropped {
        let doc = json!({ "name": name, "result": "dropped" });
        output.print(&mut io::stdout(), &format!("{name}: dropped"), &doc, true)?;
        return Ok(0);
    }
    // Gone before this drop (another process's, or an interrupted one):
    // what it left under the name goes now.
    match AnyFilter::remove_leftovers(&mut conn, name)? {
        // A sharded filter whose root a master lost (restarted without
        // persistence): its shards on the other masters go.
        0 => match Sharded::drop_orphans(&mut conn, name)? {
            lost if lost.is_empty() => {
                let names = open::all_names(&mut conn).unwrap_or_default();
                let near =
                    crate::show::suggest::did_you_mean(name, names.iter().map(String::as_str))
                        .map(|n| format!(" (did you mean {n:?}?)"))
                        .unwrap_or_default();
                Err(usage(format!("filter {name:?} does not exist{near}")))
            }
            lost => {
                let doc = json!({ "name": name, "result": "orphans_dropped", "shards": lost });
                let text = format!(
                    "{name}: no such filter; dropped {} its lost root had listed: {}",
                    crate::show::values::count(lost.len() as u64, "shard"),
                    lost.join(", ")
                );
                output.print(&mut io::stdout(), &text, &doc, true)?;
                Ok(0)
            }
        },
        n => {
            let doc = json!({ "name": name, "result": "leftovers_removed", "keys": n });
            let text = format!(
                "{name}: no such filter; removed {} an interrupted drop left",
                crate::show::values::count(n, "key")
            );
            output.print(&mut io::stdout(), &text, &doc, true)?;
            Ok(0)
        }
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
    // Unconverged: this run is what finishes an interrupted clear.
    let f = open::open_sharded_unconverged(&mut conn, name)?.map_shards(|s| ctx.writer(s));
    f.clear(&mut conn)?;
    let doc = json!({ "name": name, "result": "cleared" });
    output.print(&mut io::stdout(), &format!("{name}: cleared"), &doc, true)?;
    Ok(0)
}
