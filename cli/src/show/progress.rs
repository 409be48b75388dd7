//! The progress of `load` on standard error: a bar on a terminal, else a
//! line every so many items.

use crate::show::values::{count, speed};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{self, IsTerminal};
use std::time::{Duration, Instant};

/// Progress of `load`: a bar on a terminal, else a line every million items.
pub struct Progress {
    /// The bar, on a terminal (and unless `--quiet`).
    bar: Option<ProgressBar>,
    pub start: Instant,
    next_line: u64,
    every: u64,
    shown: bool,
}

impl Progress {
    pub fn new(total_bytes: Option<u64>, every: u64, shown: bool) -> Progress {
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

    pub fn rate(&self, items: u64) -> f64 {
        items as f64 / self.start.elapsed().as_secs_f64().max(1e-3)
    }

    pub fn update(&mut self, items: u64, bytes: u64) {
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

    pub fn finish(&self) {
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
