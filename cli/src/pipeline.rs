//! Several batches in flight: a reader thread cuts the input into batches,
//! workers (each with its own connection and handle) answer them, and the
//! answers are handed on in input order as soon as they are there. So the
//! server works on one batch while the client reads, hashes and writes the
//! others.
//!
//! When a batch fails, the batches after it that were answered are still
//! handed on (their new lines are recorded as seen: dropping them would lose
//! them), and the error says from which line to run again; a rerun finds
//! those later lines seen.

use crate::errors::Fail;
use crate::lines::Items;
use crate::resilient::Resilient;
use std::collections::BTreeMap;
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};

/// One batch: its place in the input and its lines.
pub struct Job {
    seq: u64,
    /// Lines of the input before this batch.
    pub first: u64,
    pub lines: Vec<Vec<u8>>,
    /// Lines that an earlier batch still in the window holds too: they are
    /// seen by the time this batch comes, as they would be one batch at a
    /// time, so they are not sent (a concurrent batch must not win them).
    skip: Vec<bool>,
}

impl Job {
    /// The lines to send.
    pub fn sent(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.lines
            .iter()
            .zip(&self.skip)
            .filter(|(_, s)| !**s)
            .map(|(l, _)| l)
    }

    /// Answers for every line from the answers for the lines sent: a
    /// skipped line was seen.
    pub fn expand(&self, answers: Vec<bool>) -> Vec<bool> {
        let mut sent = answers.into_iter();
        self.skip
            .iter()
            .map(|&s| !s && sent.next().unwrap_or(false))
            .collect()
    }
}

/// How far the reader may run ahead of what was handed on, in batches.
/// Bounded, so a worker stuck retrying cannot leave an unbounded backlog,
/// and so the duplicate check needs only this many batches.
fn window(workers: usize) -> u64 {
    2 * workers as u64
}

/// The count of batches handed on, which the reader waits for.
#[derive(Default)]
struct Progress {
    emitted: Mutex<u64>,
    moved: Condvar,
}

impl Progress {
    fn advance(&self) {
        let mut n = match self.emitted.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *n += 1;
        self.moved.notify_all();
    }

    /// Waits until batch `seq` is within `window` of what was handed on,
    /// or `stop`.
    fn wait_for(&self, seq: u64, window: u64, stop: &AtomicBool) {
        let mut n = match self.emitted.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        while seq >= *n + window && !stop.load(Ordering::Relaxed) {
            n = match self.moved.wait_timeout(n, POLL) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}

/// What `in_flight` workers made of `items`, cut into batches of `batch`:
/// each worker gets a connection (`Resilient`) and `open`'s handle (opened
/// with the same retries as a batch), runs
/// `work` on each of its batches, and `emit` gets every batch's lines and
/// result in input order, with the bytes of input read so far.
#[allow(clippy::too_many_arguments)] // Each is one setting of the run.
pub fn ordered<H, T>(
    ctx: &crate::connect::Ctx,
    items: impl Items + Send + 'static,
    batch: usize,
    what: &str,
    unit: &'static str,
    open: impl Fn(&mut rotabloom::connect::Connection) -> anyhow::Result<H>,
    work: impl Fn(&H, &mut Resilient, &Job) -> anyhow::Result<T> + Sync,
    mut emit: impl FnMut(&[Vec<u8>], T, u64) -> anyhow::Result<()>,
) -> anyhow::Result<()>
where
    H: Clone + Send,
    T: Send,
{
    let workers = ctx.in_flight.max(1);
    // Connections first, in this thread: a failure to connect or to open
    // the filter is reported before anything is read.
    // One handle, cloned: clones share what the handle learns (the view,
    // a full generation, a warning already given).
    let mut first = Resilient::connect(ctx, unit)?;
    let handle = first.open(&open)?;
    let mut links = vec![(first, handle.clone())];
    for _ in 1..workers {
        links.push((Resilient::connect(ctx, unit)?, handle.clone()));
    }
    let stop = Arc::new(AtomicBool::new(false));
    // Bounded: at most `workers` batches wait besides those in flight.
    let (jobs_tx, jobs_rx) = sync_channel::<Job>(workers);
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    let (done_tx, done_rx) = channel::<(Job, anyhow::Result<T>, u64)>();
    let bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let progress = Arc::new(Progress::default());
    // Not scoped: after a failure the reader may wait for input that never
    // comes (a pipe left open); the process must not wait for it.
    let reader = {
        let (stop, bytes, what) = (Arc::clone(&stop), Arc::clone(&bytes), what.to_string());
        let (progress, window) = (Arc::clone(&progress), window(workers));
        std::thread::spawn(move || {
            let ahead = Ahead {
                progress: &progress,
                window,
            };
            read(items, batch, &what, jobs_tx, &stop, &bytes, ahead)
        })
    };
    let emitted = std::thread::scope(|s| {
        for (mut redis, handle) in links {
            let (jobs, done, work, stop, bytes) =
                (&jobs_rx, done_tx.clone(), &work, &*stop, &*bytes);
            s.spawn(move || {
                while let Some(job) = next(jobs, stop) {
                    let result = work(&handle, &mut redis, &job);
                    let read = bytes.load(Ordering::Relaxed);
                    if done.send((job, result, read)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        in_order(done_rx, &stop, &progress, &mut emit, unit)
    });
    emitted?;
    // Every batch was handed on: the reader ended at the end of the input,
    // or with an error reading it.
    reader
        .join()
        .map_err(|_| anyhow::anyhow!("the input reader panicked"))?
}

/// How often a waiting worker looks at the stop flag.
const POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Inserts every item of `items` into filter `name` (`add`, `load`), in
/// idempotent batches; `done` gets the count inserted so far and the bytes
/// read, batch by batch.
pub fn insert_all(
    ctx: &crate::connect::Ctx,
    name: &str,
    items: impl Items + Send + 'static,
    batch: usize,
    what: &str,
    unit: &'static str,
    mut done: impl FnMut(u64, u64),
) -> anyhow::Result<u64> {
    let mut total = 0u64;
    ordered(
        ctx,
        items,
        batch,
        what,
        unit,
        |conn| ctx.open_for_write(conn, name),
        |f, redis, job| {
            let mut once = f.idempotent_batch(job.sent());
            redis.run(job.first, job.lines.len(), |c| once.insert(c))
        },
        |lines, _, bytes| {
            total += lines.len() as u64;
            done(total, bytes);
            Ok(())
        },
    )?;
    Ok(total)
}

/// The next batch for a worker; `None` once the input is done or the run
/// stopped.
fn next(jobs: &Mutex<Receiver<Job>>, stop: &AtomicBool) -> Option<Job> {
    let rx = match jobs.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        match rx.recv_timeout(POLL) {
            Ok(job) => return Some(job),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// How far the reader may run ahead of what was handed on.
struct Ahead<'a> {
    progress: &'a Progress,
    window: u64,
}

/// The reader: batches into `jobs` until the input ends or `stop` is set.
fn read(
    mut items: impl Items,
    batch: usize,
    what: &str,
    jobs: std::sync::mpsc::SyncSender<Job>,
    stop: &AtomicBool,
    bytes: &std::sync::atomic::AtomicU64,
    ahead: Ahead<'_>,
) -> anyhow::Result<()> {
    let (mut seq, mut first) = (0u64, 0u64);
    // The lines of the batches that may still be at work.
    let mut recent: VecDeque<HashSet<Vec<u8>>> = VecDeque::new();
    loop {
        ahead.progress.wait_for(seq, ahead.window, stop);
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut lines = Vec::with_capacity(batch.min(1 << 16));
        let more = items
            .next_batch(&mut lines, batch)
            .map_err(|e| crate::errors::file_error(format!("reading {what}: {e}")))?;
        if !more {
            return Ok(());
        }
        bytes.store(items.bytes_read(), Ordering::Relaxed);
        let n = lines.len() as u64;
        let skip = lines
            .iter()
            .map(|l| recent.iter().any(|set| set.contains(l)))
            .collect();
        if recent.len() as u64 >= ahead.window {
            recent.pop_front();
        }
        recent.push_back(lines.iter().cloned().collect());
        let job = Job {
            seq,
            first,
            lines,
            skip,
        };
        if jobs.send(job).is_err() {
            return Ok(());
        }
        seq += 1;
        first += n;
    }
}

/// Hands results on in input order; after a failure, hands on the later
/// successes too and returns the first failure (in input order), saying
/// how many later lines were done.
fn in_order<T>(
    done: Receiver<(Job, anyhow::Result<T>, u64)>,
    stop: &AtomicBool,
    progress: &Progress,
    emit: &mut impl FnMut(&[Vec<u8>], T, u64) -> anyhow::Result<()>,
    unit: &str,
) -> anyhow::Result<()> {
    let mut waiting: BTreeMap<u64, (Job, anyhow::Result<T>, u64)> = BTreeMap::new();
    let mut next_seq = 0u64;
    let mut failed: Option<anyhow::Error> = None;
    let mut later = 0u64;
    for (job, result, read) in done {
        waiting.insert(job.seq, (job, result, read));
        while let Some((job, result, read)) = waiting.remove(&next_seq) {
            next_seq += 1;
            progress.advance();
            match (result, failed.is_some()) {
                (Ok(v), false) => {
                    if let Err(e) = emit(&job.lines, v, read) {
                        stop.store(true, Ordering::Relaxed);
                        failed = Some(e);
                    }
                }
                (Ok(v), true) => {
                    later += job.lines.len() as u64;
                    let _ = emit(&job.lines, v, read);
                }
                (Err(e), false) => {
                    stop.store(true, Ordering::Relaxed);
                    failed = Some(e);
                }
                (Err(_), true) => {}
            }
        }
    }
    // Batches after a gap (a failed one is never missing: it is sent as an
    // error) cannot be left: the channel only closes when every worker
    // ended.
    match failed {
        None => Ok(()),
        Some(e) if later == 0 => Err(e),
        Some(e) => match e.downcast::<Fail>() {
            Ok(f) => Err(anyhow::Error::new(Fail {
                code: f.code,
                message: format!(
                    "{}; {later} {unit} after those were done too (a rerun finds them seen)",
                    f.message
                ),
            })),
            Err(e) => Err(e),
        },
    }
}
