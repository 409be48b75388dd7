//! `rotabloom load`: every line of a file inserted, with progress.

use crate::connect::Ctx;
use crate::errors::file_error;
use crate::lines::{for_each_batch, Batches};
use crate::Output;
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
) -> anyhow::Result<u8> {
    let reader: Box<dyn Read> = if file.as_os_str() == "-" {
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
    let mut conn = ctx.connect()?;
    let f = ctx.open_for_write(&mut conn, name)?;
    let mut progress = Progress::new(size, progress_every, !output.quiet);
    let mut total = 0u64;
    let what = file.display().to_string();
    let result = for_each_batch(
        &mut Batches::new(reader),
        batch_size,
        &what,
        |batch, bytes| {
            f.insert_many(&mut conn, batch)?;
            total += batch.len() as u64;
            progress.update(total, bytes);
            Ok(())
        },
    );
    progress.finish();
    result?;
    let secs = progress.start.elapsed().as_secs_f64();
    let rate = progress.rate(total);
    output.print(
        &mut io::stdout(),
        &format!("{name}: loaded {total} items in {secs:.1} s, {rate:.0} items/s"),
        &json!({ "name": name, "loaded": total, "seconds": secs, "items_per_second": rate }),
        false,
    )?;
    Ok(0)
}

/// Progress of `load`: a bar on a terminal, else a line every million items.
struct Progress {
    tty: bool,
    total_bytes: Option<u64>,
    start: Instant,
    last_draw: Instant,
    next_line: u64,
    every: u64,
    shown: bool,
}

impl Progress {
    fn new(total_bytes: Option<u64>, every: u64, shown: bool) -> Progress {
        let now = Instant::now();
        Progress {
            tty: io::stderr().is_terminal(),
            total_bytes: total_bytes.filter(|b| *b > 0),
            start: now,
            last_draw: now,
            next_line: every,
            every,
            shown,
        }
    }

    fn rate(&self, items: u64) -> f64 {
        items as f64 / self.start.elapsed().as_secs_f64().max(1e-3)
    }

    fn update(&mut self, items: u64, bytes: u64) {
        if !self.shown {
            return;
        }
        if self.tty {
            if self.last_draw.elapsed() < Duration::from_millis(200) {
                return;
            }
            self.last_draw = Instant::now();
            let elapsed = self.start.elapsed().as_secs_f64();
            let mut line = format!("{items} items, {:.0} items/s", self.rate(items));
            if let Some(total) = self.total_bytes {
                let frac = (bytes as f64 / total as f64).clamp(0.0, 1.0);
                let width = 24;
                let filled = (frac * width as f64) as usize;
                let eta = if frac > 0.0 {
                    elapsed * (1.0 - frac) / frac
                } else {
                    0.0
                };
                line = format!(
                    "[{}{}] {:>3.0}%  {line}, ETA {}",
                    "#".repeat(filled),
                    "-".repeat(width - filled),
                    frac * 100.0,
                    clock(eta)
                );
            }
            eprint!("\r\x1b[K{line}");
        } else if items >= self.next_line {
            while self.next_line <= items {
                self.next_line += self.every;
            }
            eprintln!("loaded {items} items, {:.0} items/s", self.rate(items));
        }
    }

    fn finish(&self) {
        if self.tty && self.shown {
            eprint!("\r\x1b[K");
        }
    }
}

fn clock(secs: f64) -> String {
    let s = secs.round().max(0.0) as u64;
    format!("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}
