//! `rotabloom load`: every line of a file inserted, with progress.

use crate::run::lines::Batches;
use crate::run::pipeline::Run;
use crate::run::resume::flags::StateFlags;
use crate::run::resume::shell_words;
use crate::run::tally::{is_refusal, Writes};
use crate::shared::ctx::Ctx;
use crate::shared::fail::file_error;
use crate::shared::output::Output;
use crate::show::progress::Progress;
use crate::show::values::{count, elapsed, speed};
use serde_json::json;
use std::io::{self, Read};
use std::path::Path;

pub fn run(
    ctx: &Ctx,
    name: &str,
    file: &Path,
    batch_size: usize,
    progress_every: u64,
    output: Output,
    state: &StateFlags,
) -> anyhow::Result<u8> {
    let reader: Box<dyn Read + Send> = if file.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        let cannot = |why: String| file_error(format!("cannot read {}: {why}", file.display()));
        let f = std::fs::File::open(file).map_err(|e| {
            cannot(match e.kind() {
                io::ErrorKind::NotFound => "no such file".to_string(),
                _ => e.to_string(),
            })
        })?;
        if f.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(cannot("it is a directory".to_string()));
        }
        Box::new(f)
    };
    let size = std::fs::metadata(file)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    let what = file.display().to_string();
    let journal = state.journal(ctx.delivery, "load", name, |state_file| {
        shell_words(&["rotabloom", "load", name, &what, "--resume", state_file])
    })?;
    let mut progress = Progress::new(size, progress_every, !output.quiet);
    let (total, result) = crate::run::insert::insert_all(
        ctx,
        name,
        Batches::new(reader),
        Run {
            batch: batch_size,
            what: &what,
            unit: "lines",
            writes: Writes::Inserts,
            journal,
            window: state.window(),
            name,
        },
        Some(&mut progress),
    );
    progress.finish();
    // Refused by a full filter: what was inserted before is said too.
    let refused = match result {
        Ok(()) => None,
        Err(e) if is_refusal(&e) => Some(e),
        Err(e) => return Err(e),
    };
    let took = progress.start.elapsed();
    let rate = progress.rate(total.items);
    output.print(
        &mut io::stdout(),
        &format!(
            "{name}: loaded {} in {} ({} items/s): {}",
            count(total.items, "item"),
            elapsed(took),
            speed(rate),
            total.says()
        ),
        &json!({
            "name": name,
            "result": "loaded",
            "items": total.items,
            "new": total.new,
            "present": total.present(),
            "per_period": total.per_period,
            "unknown": total.unknown,
            "seconds": took.as_secs_f64(),
            "items_per_second": rate,
        }),
        false,
    )?;
    match refused {
        Some(e) => Err(e),
        None if total.unknown > 0 => Ok(crate::run::insert::EXIT_UNKNOWN),
        None => Ok(0),
    }
}
