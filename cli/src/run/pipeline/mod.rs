//! Several batches in flight: a reader thread cuts the input into batches,
//! workers (each with its own connection and handle) answer them, and the
//! answers are handed on in input order as soon as they are there. So the
//! server works on one batch while the client reads, hashes and writes the
//! others.
//!
//! Every line is sent: only the filter knows whether a line is new (it may
//! have been cleared, dropped and made again, or rotated since the line
//! was last sent). A line in two batches in flight together is answered
//! "new" in exactly one of them by the atomic check-and-insert, which may
//! be the later one.
//!
//! When a batch fails, the batches after it that were answered are still
//! handed on, and [`Tally`] says what is left; with a state file
//! ([`Journal`]), a resumed run gets the answers of the batches that were
//! sent and not handed on.
//!
//! What a run plugs in (its `Task` and `Sink`) is in `plug`; the reader
//! in `read`; a batch on its way, `Job`, in `job`.

pub mod job;
mod plug;
mod read;

pub use plug::{Handle, Sink, Task};

use crate::run::lines::Items;
use crate::run::resilient::Resilient;
use crate::run::resume::{fate, Fate, Journal, Plan};
use crate::run::stop::Stop;
use crate::run::tally::{Tally, Words, Writes};
use job::{Job, Progress, POLL};
use read::{read, Cut, Reading};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a run is: how its input is cut, what it is called, and what its
/// batches write.
pub struct Run<'a> {
    /// Lines per batch.
    pub batch: usize,
    /// The input, for messages ("standard input", a file name).
    pub what: &'a str,
    /// "lines" or "items".
    pub unit: &'static str,
    pub writes: Writes,
    /// The state file, for a run that can be resumed.
    pub journal: Option<Journal>,
    /// How long the server keeps the answers of each batch.
    pub window: Duration,
    /// The filter, whose records a resumed run looks for.
    pub name: &'a str,
}

/// How far the reader may run ahead of what was handed on, in batches.
/// Bounded, so a worker stuck retrying cannot leave an unbounded backlog
/// (nor a state file listing more than this many batches).
fn window(workers: usize) -> u64 {
    2 * workers as u64
}

/// What `in_flight` workers made of `items`, cut into batches as `run`
/// says: each worker gets a connection (`Resilient`) and `task`'s handle
/// (opened with the same retries as a batch), has `task` answer each of
/// its batches, and `sink` takes every batch's lines and answers in input
/// order.
pub fn ordered<T: Task, S: Sink>(
    ctx: &crate::shared::ctx::Ctx,
    items: impl Items + Send + 'static,
    run: Run<'_>,
    task: &T,
    sink: &mut S,
) -> anyhow::Result<()> {
    let workers = ctx.in_flight.max(1);
    let unit = run.unit;
    let journal = run.journal.map(Arc::new);
    let (links, plan) = match connect_all(ctx, unit, workers, task, journal.as_deref(), run.name) {
        Ok(ready) => ready,
        Err(e) => {
            // Nothing was sent: a new state file goes, a resumed one stays.
            if let Some(j) = &journal {
                let _ = j.finish();
            }
            return Err(e);
        }
    };
    let stop = Arc::new(Stop::default());
    // Bounded: at most `workers` batches wait besides those in flight.
    let (jobs_tx, jobs_rx) = sync_channel::<Job>(workers);
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    let (done_tx, done_rx) = channel::<(Job, anyhow::Result<Vec<bool>>, u64)>();
    let reading = Arc::new(Reading::default());
    let progress = Arc::new(Progress::default());
    // Not scoped: after a failure the reader may wait for input that never
    // comes (a pipe left open); the process must not wait for it.
    let reader = {
        let (stop, reading) = (Arc::clone(&stop), Arc::clone(&reading));
        let cut = Cut {
            batch: links
                .first()
                .map_or(run.batch, |(_, h)| h.batch(run.batch))
                .max(1),
            what: run.what.to_string(),
            journal: journal.clone(),
            window: run.window,
            progress: Arc::clone(&progress),
            ahead: window(workers),
        };
        std::thread::spawn(move || read(items, cut, plan, jobs_tx, &stop, &reading))
    };
    let words = Words {
        unit,
        writes: run.writes,
        journal: journal.clone(),
    };
    let tally = std::thread::scope(|s| {
        for (mut redis, handle) in links {
            let (jobs, done, stop, reading) = (&jobs_rx, done_tx.clone(), &*stop, &*reading);
            s.spawn(move || {
                while let Some(job) = next(jobs, stop) {
                    let result = task.answer(&handle, &mut redis, &job);
                    let read = reading.bytes.load(Ordering::Relaxed);
                    if done.send((job, result, read)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        in_order(done_rx, &stop, &progress, sink, &words)
    });
    let left = match &journal {
        Some(j) => j.finish()?,
        None => false,
    };
    tally.verdict(&words, left, reading.stopped_at())?;
    // Every batch was handed on: the reader ended at the end of the input,
    // or with an error reading it.
    reader
        .join()
        .map_err(|_| anyhow::anyhow!("the input reader panicked"))?
}

/// A connection and a handle per worker, and the plan of a resumed run.
#[allow(clippy::type_complexity)] // Each worker's pair, and the plan.
fn connect_all<'c, T: Task>(
    ctx: &'c crate::shared::ctx::Ctx,
    unit: &'static str,
    workers: usize,
    task: &T,
    journal: Option<&Journal>,
    name: &str,
) -> anyhow::Result<(Vec<(Resilient<'c>, T::Handle)>, Option<Plan>)> {
    // Connections first, in this thread: a failure to connect or to open
    // the filter is reported before anything is read.
    // One handle, cloned: clones share what the handle learns (the view,
    // a full generation, a warning already given).
    let mut first = Resilient::connect(ctx, unit)?;
    let handle = first.open(|c| task.open(ctx, c))?;
    let plan = match journal {
        Some(j) => Some(resumed(j, &mut first, name)?),
        None => None,
    };
    let mut links = vec![(first, handle.clone())];
    for _ in 1..workers {
        links.push((Resilient::connect(ctx, unit)?, handle.clone()));
    }
    Ok((links, plan))
}

/// The plan of a resumed run (nothing to run again for a new one): each
/// batch the interrupted run sent is judged by whether its record is still
/// on the server, and a record found is kept for another window, so that
/// it cannot expire before its batch runs again.
fn resumed(j: &Journal, redis: &mut Resilient, name: &str) -> anyhow::Result<Plan> {
    let plan = j.plan();
    let sent: Vec<_> = plan
        .batches
        .iter()
        .filter_map(|e| e.token.as_ref().map(|t| (e.first, t.clone(), e.window_ms)))
        .collect();
    if sent.is_empty() {
        return Ok(plan);
    }
    let keys = rotabloom::Keys::new(rotabloom::FilterName::existing(name)?);
    let kept: Vec<bool> = redis.open(|c| {
        sent.iter()
            .map(|(_, token, window_ms)| {
                let n: i64 = redis::cmd("PEXPIRE")
                    .arg(keys.record(token))
                    .arg(*window_ms)
                    .query(c)
                    .map_err(rotabloom::Error::from)?;
                Ok(n == 1)
            })
            .collect()
    })?;
    let now = crate::run::resume::now_ms();
    let fates: Vec<(u64, Fate)> = sent
        .iter()
        .zip(kept)
        .map(|((first, _, _), kept)| {
            let e = plan.batches.iter().find(|e| e.first == *first);
            (*first, e.map_or(Fate::NotApplied, |e| fate(e, kept, now)))
        })
        .collect();
    j.judged(&fates, now)?;
    Ok(j.plan())
}

/// The next batch for a worker; `None` once the input is done or the run
/// failed. After a refusal, only a resumed run's own batches go: a new
/// one taken then is left unsent (the state file lists it, as queued).
fn next(jobs: &Mutex<Receiver<Job>>, stop: &Stop) -> Option<Job> {
    let rx = match jobs.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    loop {
        if stop.failed() {
            return None;
        }
        match rx.recv_timeout(POLL) {
            Ok(job) if stop.lets(job.resumed) => return Some(job),
            Ok(_) => continue,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// Hands results on in input order, to `sink`, and tallies them; after a
/// failure, hands on the later successes too.
fn in_order(
    done: Receiver<(Job, anyhow::Result<Vec<bool>>, u64)>,
    stop: &Stop,
    progress: &Progress,
    sink: &mut impl Sink,
    words: &Words,
) -> Tally {
    let mut waiting: BTreeMap<u64, (Job, anyhow::Result<Vec<bool>>, u64)> = BTreeMap::new();
    let mut next_seq = 0u64;
    let mut tally = Tally::default();
    for (job, result, read) in done {
        waiting.insert(job.seq, (job, result, read));
        while let Some((job, result, read)) = waiting.remove(&next_seq) {
            next_seq += 1;
            progress.advance();
            tally.take(
                job.first,
                &job.lines,
                job.lost,
                result,
                words,
                |lines, answers| sink.take(lines, answers, read),
            );
            if tally.failing() {
                stop.fail();
            } else if tally.stopping() {
                stop.refuse();
            }
        }
    }
    // Batches after a gap (a failed one is never missing: it is sent as an
    // error) cannot be left: the channel only closes when every worker
    // ended.
    tally
}
