//! Long-running writers (`filter`, `load`, `add`) outlive a dropped
//! connection, a restarted server or a failover: each batch is an
//! idempotent batch of the library, run again on a new connection after a
//! retryable error, so every item is answered exactly once across the
//! failure. When the reconnections run out, the caller says what was done
//! and what is left (`pipeline`).

use crate::connect::Ctx;
use crate::errors::Fail;
use rotabloom::connect::Connection;
use std::time::Duration;

/// The first wait before reconnecting; it doubles up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A connection (or several, for a sharded filter's masters) replaced
/// when it fails.
pub struct Resilient<'a> {
    ctx: &'a Ctx,
    /// Never empty: the first is made by `connect`, the others when a run
    /// asks for them.
    conns: Vec<Connection>,
    /// What the lines are called in messages ("lines", "items").
    unit: &'static str,
}

impl<'a> Resilient<'a> {
    /// Connects (a first failure is not retried: it is usually the URL or
    /// the credentials).
    pub fn connect(ctx: &'a Ctx, unit: &'static str) -> anyhow::Result<Resilient<'a>> {
        Ok(Resilient {
            ctx,
            conns: vec![ctx.connect()?],
            unit,
        })
    }

    /// Runs one batch of `len` lines, the `first` lines of the input
    /// before it, until it succeeds: after a retryable error it reconnects,
    /// with backoff, up to the `--retries` limit, and runs it again (the
    /// batch must be idempotent: run twice, it answers as once). When the
    /// retries run out, the error is a [`GaveUp`]: the caller knows what
    /// the batch was, and says what is left.
    pub fn run<T>(
        &mut self,
        first: u64,
        len: usize,
        mut batch: impl FnMut(&mut Connection) -> rotabloom::Result<T>,
    ) -> anyhow::Result<T> {
        self.run_on(first, len, 1, |c| batch(&mut c[0]))
    }

    /// [`run`](Self::run) on `want` connections at once (a sharded
    /// filter's batch sends each master's shards on its own): they are
    /// made on first use, and all made again after a retryable error.
    pub fn run_on<T>(
        &mut self,
        first: u64,
        len: usize,
        want: usize,
        mut batch: impl FnMut(&mut [Connection]) -> rotabloom::Result<T>,
    ) -> anyhow::Result<T> {
        let what = format!(
            "the {len} {} from {} {}",
            self.unit,
            self.unit.trim_end_matches('s'),
            first + 1
        );
        self.retrying(&what, want, |c| batch(c).map_err(anyhow::Error::from))
    }

    /// Opens what the run works on (a filter handle), or runs another
    /// request that comes before the batches, with the same retries:
    /// reading a filter's metadata is a request like any other.
    pub fn open<H>(
        &mut self,
        mut open: impl FnMut(&mut Connection) -> anyhow::Result<H>,
    ) -> anyhow::Result<H> {
        self.retrying("opening the filter", 1, |c| open(&mut c[0]))
            .map_err(|e| match e.downcast::<GaveUp>() {
                Ok(g) => anyhow::Error::new(Fail {
                    code: 3,
                    message: format!("{g}; nothing was done"),
                }),
                Err(e) => e,
            })
    }

    /// Makes connections until there are `want` (at least the first).
    fn fill(&mut self, want: usize) -> anyhow::Result<()> {
        while self.conns.len() < want {
            self.conns.push(self.ctx.connect()?);
        }
        Ok(())
    }

    fn retrying<T>(
        &mut self,
        what: &str,
        want: usize,
        mut step: impl FnMut(&mut [Connection]) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let mut wait = FIRST_BACKOFF;
        let mut attempt = 0;
        let mut last = match self.fill(want) {
            // A connection more that cannot be made is a reconnection
            // that failed: retried like one.
            Err(e) => e.to_string(),
            Ok(()) => match step(&mut self.conns[..want.max(1)]) {
                Ok(v) => return Ok(v),
                Err(e) => retryable(e)?,
            },
        };
        while attempt < self.ctx.retries {
            attempt += 1;
            crate::term::warning_line(format_args!(
                "{}: {last}; retrying in {:.1} s ({attempt} of {}) {what}",
                self.ctx.describe(),
                wait.as_secs_f64(),
                self.ctx.retries,
            ));
            std::thread::sleep(wait);
            wait = (wait * 2).min(MAX_BACKOFF);
            match self.ctx.connect() {
                Ok(c) => self.conns = vec![c],
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            }
            if let Err(e) = self.fill(want) {
                last = e.to_string();
                continue;
            }
            match step(&mut self.conns[..want.max(1)]) {
                Ok(v) => return Ok(v),
                Err(e) => last = retryable(e)?,
            }
        }
        Err(anyhow::Error::new(GaveUp {
            message: format!(
                "{}: gave up after {} reconnection attempts: {last}",
                self.ctx.describe(),
                self.ctx.retries,
            ),
        }))
    }
}

/// The retries ran out: the server is gone, or unreachable, for longer
/// than `--retries` allows. What was sent may have been applied.
#[derive(Debug)]
pub struct GaveUp {
    pub message: String,
}

impl std::fmt::Display for GaveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GaveUp {}

/// The warning's reason for a retryable error; any other error as it is.
fn retryable(e: anyhow::Error) -> anyhow::Result<String> {
    match e.downcast_ref::<rotabloom::Error>() {
        Some(r) if r.is_retryable() => Ok(why(r)),
        _ => Err(e),
    }
}

/// Why a batch is retried, for the warning: a server that answers
/// `READONLY` is a replica now, after a failover (reconnecting finds the
/// primary through Sentinel), or because the URL names a replica.
fn why(e: &rotabloom::Error) -> String {
    match e {
        rotabloom::Error::Redis(r) if r.inner().code() == Some("READONLY") => {
            "the server is a read-only replica (a failover, or a URL that names a replica); \
             reconnecting to find the primary"
                .into()
        }
        e => e.to_string(),
    }
}
