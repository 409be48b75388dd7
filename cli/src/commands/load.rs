//! `rotabloom load`: every line of a file inserted, with progress.

use crate::run::insert::Inserted;
use crate::run::lines::Batches;
use crate::run::pipeline::Run;
use crate::run::resume::flags::StateFlags;
use crate::run::resume::shell_words;
use crate::run::tally::{is_refusal, Writes};
use crate::shared::ctx::Ctx;
use crate::shared::fail::file_error;
use crate::shared::output::Output;
use crate::show::values::{count, elapsed, speed};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use std::io::{self, IsTerminal, Read};
use std::path::Path;
use std::time::{Duration, Instant};

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
    let mut total = Inserted::default();
    let result = crate::run::insert::insert_all(
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
        |so_far, bytes| {
            total = so_far;
            progress.update(so_far.items, bytes)
        },
    );
    progress.finish();
    // Refused by a full filter: what was inserted before is said too.
    let refused = match result {
        Ok(_) => None,
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

/// Progress of `load`: a bar on a terminal, else a line every million items.
struct Progress {
    /// The bar, on a terminal (and unless `--quiet`).
    bar: Option<ProgressBar>,
    start: Instant,
    next_line: u64,
    every: u64,
    shown: bool,
}

impl Progress {
    fn new(total_bytes: Option<u64>, every: u64, shown: bool) -> Progress {
        let bar =
            (shown && io::stderr().is_terminal()).then(|| bar(total_bytes.filter(|b| *b > 0)));
        Progress {
            bar,
            start: Instant::now(),
            next_line: every,
            every,
            shown,
        }
    }

    fn rate(&self, items: u64) -> f64 {
        items as f64 / self.start.elapsed().as_secs_f64().max(1e-3)
    }

    fn update(&mut self, items: u64, bytes: u64) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{}, {} items/s",
                count(items, "item"),
                speed(self.rate(items))
            ));
            if bar.length().is_some() {
                bar.set_position(bytes);
            }
        } else if self.shown && items >= self.next_line {
            while self.next_line <= items {
                self.next_line += self.every;
            }
            eprintln!(
                "loaded {}, {} items/s",
                count(items, "item"),
                speed(self.rate(items))
            );
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The bar over the file's bytes, or a spinner when its size is unknown
/// (standard input).
fn bar(total_bytes: Option<u64>) -> ProgressBar {
    let (bar, template) = match total_bytes {
        Some(total) => (
            ProgressBar::new(total),
            "[{bar:24}] {percent:>3}%  {msg}, ETA {eta}",
        ),
        None => (ProgressBar::new_spinner(), "{spinner} {msg}"),
    };
    let style = ProgressStyle::with_template(template)
        .map(|s| s.progress_chars("#>-"))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(5));
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
