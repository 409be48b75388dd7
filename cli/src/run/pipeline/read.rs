//! The pipeline's reader: the input cut into batches, each written down in
//! the state file before any worker can send it; first, in a resumed run,
//! the batches the interrupted run listed, checked to be the same lines.

use super::job::{Job, Progress};
use crate::run::lines::Items;
use crate::run::resume::{digest, Journal, Plan};
use crate::run::stop::Stop;
use crate::shared::fail::{file_error, usage};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How far the reader got.
#[derive(Default)]
pub struct Reading {
    /// Bytes of input read (for progress).
    pub bytes: std::sync::atomic::AtomicU64,
    /// Lines cut into batches.
    pub lines: std::sync::atomic::AtomicU64,
    /// The input ended.
    pub ended: AtomicBool,
}

impl Reading {
    /// The lines cut so far, unless the input ended: what a refusal says
    /// was not read after.
    pub fn stopped_at(&self) -> Option<u64> {
        (!self.ended.load(Ordering::Relaxed)).then(|| self.lines.load(Ordering::Relaxed))
    }
}

/// How the reader cuts the input.
pub struct Cut {
    pub batch: usize,
    pub what: String,
    pub journal: Option<Arc<Journal>>,
    pub window: Duration,
    pub progress: Arc<Progress>,
    /// How far it may run ahead of what was handed on, in batches.
    pub ahead: u64,
}

/// The reader: batches into `jobs` until the input ends or `stop` is set;
/// first, in a resumed run, the batches of `plan`.
pub fn read(
    mut items: impl Items,
    cut: Cut,
    plan: Option<Plan>,
    jobs: std::sync::mpsc::SyncSender<Job>,
    stop: &Stop,
    reading: &Reading,
) -> anyhow::Result<()> {
    let send = |seq: u64, first: u64, lines: Vec<Vec<u8>>, plan: Option<(Option<String>, bool)>| {
        let resumed = plan.is_some();
        let (token, lost) = plan.unwrap_or_default();
        let job = Job {
            seq,
            first,
            lines,
            resumed,
            token,
            lost,
            journal: cut.journal.clone(),
            window: cut.window,
        };
        jobs.send(job).is_ok()
    };
    let read_error = |e: std::io::Error| file_error(format!("reading {}: {e}", cut.what));
    let (mut seq, mut first) = (0u64, 0u64);
    if let Some(plan) = plan {
        // A refusal does not stop these (see `Stop`).
        for e in plan.batches {
            cut.progress.wait_for(seq, cut.ahead, || stop.failed());
            if stop.failed() {
                return Ok(());
            }
            skip(&mut items, e.first.saturating_sub(first), first, &cut.what)?;
            let mut lines = Vec::new();
            let got = take(&mut items, &mut lines, e.len).map_err(read_error)?;
            if got < e.len || digest(&lines) != e.digest {
                return Err(usage(format!(
                    "{}: lines {} are not those of the interrupted run ({}): resume needs the same input",
                    cut.what,
                    e.range(),
                    if got < e.len { "the input ends before" } else { "they differ" }
                )));
            }
            reading.bytes.store(items.bytes_read(), Ordering::Relaxed);
            first = e.first + e.len;
            reading.lines.store(first, Ordering::Relaxed);
            if !send(seq, e.first, lines, Some((e.token, e.lost))) {
                return Ok(());
            }
            seq += 1;
        }
        skip(
            &mut items,
            plan.read.saturating_sub(first),
            first,
            &cut.what,
        )?;
        first = first.max(plan.read);
        // What a stop says was not read starts after the interrupted run's.
        reading.lines.store(first, Ordering::Relaxed);
    }
    loop {
        cut.progress.wait_for(seq, cut.ahead, || stop.any());
        if stop.any() {
            return Ok(());
        }
        let mut lines = Vec::with_capacity(cut.batch.min(1 << 16));
        let more = items
            .next_batch(&mut lines, cut.batch)
            .map_err(read_error)?;
        if !more {
            reading.ended.store(true, Ordering::Relaxed);
            return Ok(());
        }
        let n = lines.len() as u64;
        reading.bytes.store(items.bytes_read(), Ordering::Relaxed);
        reading.lines.store(first + n, Ordering::Relaxed);
        // Written down before any worker can send it.
        if let Some(j) = &cut.journal {
            j.queued(first, &lines)?;
        }
        if !send(seq, first, lines, None) {
            return Ok(());
        }
        seq += 1;
        first += n;
    }
}

/// Reads exactly `n` lines into `lines` (fewer only at the end of the
/// input); returns how many.
fn take(items: &mut impl Items, lines: &mut Vec<Vec<u8>>, n: u64) -> std::io::Result<u64> {
    let mut part = Vec::new();
    while (lines.len() as u64) < n {
        let want = usize::try_from(n - lines.len() as u64).unwrap_or(usize::MAX);
        if !items.next_batch(&mut part, want.min(1 << 16))? {
            break;
        }
        lines.append(&mut part);
    }
    Ok(lines.len() as u64)
}

/// Passes over `n` lines that the interrupted run handed on, the input
/// being at line `at`.
fn skip(items: &mut impl Items, n: u64, at: u64, what: &str) -> anyhow::Result<()> {
    let mut part = Vec::new();
    let mut left = n;
    while left > 0 {
        part.clear();
        let got = take(items, &mut part, left.min(1 << 16))
            .map_err(|e| file_error(format!("reading {what}: {e}")))?;
        if got == 0 {
            return Err(usage(format!(
                "{what}: the input ends at line {}, before the lines the interrupted run handed on (to line {}): resume needs the same input",
                at + n - left,
                at + n
            )));
        }
        left -= got;
    }
    Ok(())
}
