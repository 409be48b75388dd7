//! Long-running writers (`filter`, `load`, `add`) outlive a dropped
//! connection, a restarted server or a failover: each batch is an
//! idempotent batch of the library, run again on a new connection after a
//! retryable error, so every item is answered exactly once across the
//! failure. When the reconnections run out, the error says how many lines
//! were done.

use crate::connect::Ctx;
use crate::errors::Fail;
use rotabloom::connect::Connection;
use std::time::Duration;

/// The first wait before reconnecting; it doubles up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A connection that is replaced when it fails, and the count of lines
/// done through it.
pub struct Resilient<'a> {
    ctx: &'a Ctx,
    conn: Connection,
    /// Lines whose batch was confirmed.
    pub done: u64,
    /// What the lines are called in messages ("lines", "items").
    unit: &'static str,
}

impl<'a> Resilient<'a> {
    /// Connects (a first failure is not retried: it is usually the URL or
    /// the credentials).
    pub fn connect(ctx: &'a Ctx, unit: &'static str) -> anyhow::Result<Resilient<'a>> {
        Ok(Resilient {
            ctx,
            conn: ctx.connect()?,
            done: 0,
            unit,
        })
    }

    pub fn conn(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// Runs one batch of `len` lines until it succeeds: after a retryable
    /// error it reconnects, with backoff, up to the `--retries` limit, and
    /// runs it again (the batch must be idempotent: run twice, it answers as
    /// once).
    pub fn run<T>(
        &mut self,
        len: usize,
        mut batch: impl FnMut(&mut Connection) -> rotabloom::Result<T>,
    ) -> anyhow::Result<T> {
        let mut wait = FIRST_BACKOFF;
        let mut attempt = 0;
        let mut last = match batch(&mut self.conn) {
            Ok(v) => return self.confirmed(len, v),
            Err(e) if e.is_retryable() => why(&e),
            Err(e) => return Err(e.into()),
        };
        while attempt < self.ctx.retries {
            attempt += 1;
            eprintln!(
                "rotabloom: warning: {}: {last}; retrying in {:.1} s ({attempt} of {}), {} {} done so far",
                self.ctx.describe(),
                wait.as_secs_f64(),
                self.ctx.retries,
                self.done,
                self.unit,
            );
            std::thread::sleep(wait);
            wait = (wait * 2).min(MAX_BACKOFF);
            match self.ctx.connect() {
                Ok(c) => self.conn = c,
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            }
            match batch(&mut self.conn) {
                Ok(v) => return self.confirmed(len, v),
                Err(e) if e.is_retryable() => last = why(&e),
                Err(e) => return Err(e.into()),
            }
        }
        Err(anyhow::Error::new(Fail {
            code: 3,
            message: format!(
                "{}: gave up after {} reconnection attempts: {last}; {} {} were done, the next {len} are not confirmed (run again from {} {})",
                self.ctx.describe(),
                self.ctx.retries,
                self.done,
                self.unit,
                self.unit.trim_end_matches('s'),
                self.done + 1,
            ),
        }))
    }

    fn confirmed<T>(&mut self, len: usize, v: T) -> anyhow::Result<T> {
        self.done += len as u64;
        Ok(v)
    }
}

/// Why a batch is retried, for the warning: a server that answers
/// `READONLY` was a primary and is a replica now, which is a failover, not
/// an error of the user's.
fn why(e: &rotabloom::Error) -> String {
    match e {
        rotabloom::Error::Redis(r) if r.inner().code() == Some("READONLY") => {
            "the server became a replica (failover); reconnecting to the primary".into()
        }
        e => e.to_string(),
    }
}
