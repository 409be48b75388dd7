//! Long-running writers (`filter`, `load`, `add`) outlive a dropped
//! connection, a restarted server or a failover: each batch is an
//! idempotent batch of the library, run again on a new connection after a
//! retryable error, so every item is answered exactly once across the
//! failure. When the reconnections run out, the caller says what was done
//! and what is left (`pipeline`).

use crate::shared::ctx::Ctx;
use crate::shared::fail::Fail;
use rotabloom::connect::Connection;
use std::time::Duration;

/// The first wait before reconnecting; it doubles up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A connection (and, for a sharded filter, one to each master its
/// shards lie on) replaced when it fails.
pub struct Resilient<'a> {
    ctx: &'a Ctx,
    /// The connection everything but a sharded batch goes over.
    conn: Connection,
    /// A sharded batch's connections, made by its [`Links`] on first use
    /// and made again after any reconnection (the masters may have
    /// changed).
    links: Option<Vec<Connection>>,
    /// What the lines are called in messages ("lines", "items").
    unit: &'static str,
}

/// How a batch's connections are made, given the first (which it may ask
/// where the masters are).
pub type Links<'l> = &'l dyn Fn(&Ctx, &mut Connection) -> anyhow::Result<Vec<Connection>>;

impl<'a> Resilient<'a> {
    /// Connects (a first failure is not retried: it is usually the URL or
    /// the credentials).
    pub fn connect(ctx: &'a Ctx, unit: &'static str) -> anyhow::Result<Resilient<'a>> {
        Ok(Resilient {
            ctx,
            conn: ctx.connect()?,
            links: None,
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
        self.run_on(first, len, None, |c| batch(&mut c[0]))
    }

    /// [`run`](Self::run) on the connections `links` makes (a sharded
    /// filter's batch sends each master's shards on its own), or on the
    /// one connection without: they are made on first use, and all made
    /// again after a retryable error.
    pub fn run_on<T>(
        &mut self,
        first: u64,
        len: usize,
        links: Option<Links>,
        mut batch: impl FnMut(&mut [Connection]) -> rotabloom::Result<T>,
    ) -> anyhow::Result<T> {
        let what = format!(
            "the {len} {} from {} {}",
            self.unit,
            self.unit.trim_end_matches('s'),
            first + 1
        );
        self.retrying(&what, links, |c| batch(c).map_err(anyhow::Error::from))
    }

    /// Opens what the run works on (a filter handle), or runs another
    /// request that comes before the batches, with the same retries:
    /// reading a filter's metadata is a request like any other.
    pub fn open<H>(
        &mut self,
        mut open: impl FnMut(&mut Connection) -> anyhow::Result<H>,
    ) -> anyhow::Result<H> {
        self.retrying("opening the filter", None, |c| open(&mut c[0]))
            .map_err(|e| match e.downcast::<GaveUp>() {
                Ok(g) => anyhow::Error::new(Fail {
                    code: 3,
                    message: format!("{g}; nothing was done"),
                }),
                Err(e) => e,
            })
    }

    /// Runs `step` on the connections it asks for: `links`' (made if
    /// they are not), or the one connection. Returns the reason to retry
    /// for a retryable failure.
    fn attempt<T>(
        &mut self,
        links: Option<Links>,
        step: &mut impl FnMut(&mut [Connection]) -> anyhow::Result<T>,
    ) -> anyhow::Result<Result<T, String>> {
        let conns = match (links, &mut self.links) {
            (None, _) => std::slice::from_mut(&mut self.conn),
            (Some(_), Some(made)) => made.as_mut_slice(),
            (Some(make), made) => match make(self.ctx, &mut self.conn) {
                Ok(conns) => made.insert(conns).as_mut_slice(),
                // A connection of the batch that cannot be made is a
                // reconnection that failed: retried like one.
                Err(e) => return Ok(Err(e.to_string())),
            },
        };
        match step(conns) {
            Ok(v) => Ok(Ok(v)),
            Err(e) => retryable(e).map(Err),
        }
    }

    fn retrying<T>(
        &mut self,
        what: &str,
        links: Option<Links>,
        mut step: impl FnMut(&mut [Connection]) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let mut wait = FIRST_BACKOFF;
        let mut attempt = 0;
        // A batch's connection that cannot be made is a reconnection that
        // failed: retried like one.
        let mut last = match self.attempt(links, &mut step)? {
            Ok(v) => return Ok(v),
            Err(why) => why,
        };
        while attempt < self.ctx.retries {
            attempt += 1;
            crate::show::term::warning_line(format_args!(
                "{}: {last}; retrying in {:.1} s ({attempt} of {}) {what}",
                self.ctx.describe(),
                wait.as_secs_f64(),
                self.ctx.retries,
            ));
            std::thread::sleep(wait);
            wait = (wait * 2).min(MAX_BACKOFF);
            self.links = None;
            match self.ctx.connect() {
                Ok(c) => self.conn = c,
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            }
            match self.attempt(links, &mut step)? {
                Ok(v) => return Ok(v),
                Err(why) => last = why,
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
