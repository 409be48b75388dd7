//! Reading the clock at an operation's edge: the caller's, or the
//! server's (`TIME`), once; the time then travels as an argument. This is
//! the only machine that asks the server the time.

use crate::error::Result;
use crate::machine::{Machine, Poll};
use crate::proto::{take_one, time};
use crate::request::Replies;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// The clock's `now`, or the server's.
pub(crate) struct Now {
    clock: Arc<dyn crate::clock::Clock>,
    sent: bool,
}

impl Now {
    pub fn new(clock: Arc<dyn crate::clock::Clock>) -> Now {
        Now { clock, sent: false }
    }
}

impl Machine for Now {
    type Output = DateTime<Utc>;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<DateTime<Utc>>> {
        if self.sent {
            return time::decode(take_one(replies)?).map(Poll::Ready);
        }
        if let Some(now) = self.clock.now() {
            return Ok(Poll::Ready(now));
        }
        self.sent = true;
        Ok(Poll::Send(time::request()))
    }
}

/// The Redis server's clock (`TIME`), as rotabloom reads it for schedules:
/// what a cron job compares a `--now` with, decoded in the one place the
/// library decodes it.
///
/// ```no_run
/// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let now = rotabloom::server_time(&mut conn)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn server_time<C: redis::ConnectionLike + ?Sized>(conn: &mut C) -> Result<DateTime<Utc>> {
    crate::exec::run(conn, Now::new(Arc::new(crate::clock::ServerClock)), None)
}

#[cfg(feature = "async")]
/// Async [`server_time`].
pub async fn server_time_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
) -> Result<DateTime<Utc>> {
    crate::exec::run_async(conn, Now::new(Arc::new(crate::clock::ServerClock)), None).await
}
