//! The only code that talks to Redis: it runs what the pure core built, on a
//! blocking or an async connection, and turns NOSCRIPT into a transparent
//! re-send. Everything else is decided by [`Machine`]s.

use crate::error::Result;
use crate::machine::{Machine, Poll};
use crate::request::{Replies, Request};
use crate::wait::WaitReplicas;
use redis::Value;

/// How many times one request is re-sent after NOSCRIPT. One is enough
/// unless the script cache is flushed again in between.
const NOSCRIPT_RETRIES: usize = 3;

fn merge(replies: &mut Replies, idx: Vec<usize>, again: Replies) {
    for (i, r) in idx.into_iter().zip(again) {
        replies[i] = r;
    }
}

/// Appends the `WAIT` a write request owes; returns whether it did.
fn add_wait(req: &mut Request, wait: Option<WaitReplicas>) -> Option<WaitReplicas> {
    let wait = wait.filter(|_| req.writes())?;
    req.push(wait.command(), None);
    Some(wait)
}

/// Takes the `WAIT` reply off the end of the replies and checks it.
fn strip_wait(replies: &mut Replies, wait: Option<WaitReplicas>) -> Result<()> {
    let Some(wait) = wait else {
        return Ok(());
    };
    let reply = replies.pop().ok_or_else(|| {
        crate::error::Error::Internal("no reply to the WAIT of a write request".into())
    })?;
    wait.check(reply)
}

/// Sends a request on a blocking connection.
fn query_sync<C: redis::ConnectionLike + ?Sized>(conn: &mut C, req: &Request) -> Result<Replies> {
    let n = req.len();
    if !conn.supports_pipelining() {
        // The blocking cluster connection cannot pipeline, and folds any
        // error of a packed pipeline into one, hiding which commands ran;
        // so each command goes alone and keeps its own reply.
        let mut out = Vec::with_capacity(n);
        for cmd in req.pipe().cmd_iter() {
            out.push(match conn.req_command(cmd) {
                Ok(Value::ServerError(e)) => Err(e.into()),
                Ok(v) => Ok(v),
                Err(e) if e.code().is_some() => Err(e),
                Err(e) => return Err(e.into()),
            });
        }
        return Ok(out);
    }
    let values = conn.req_packed_commands(&req.pipe().get_packed_pipeline(), 0, n)?;
    counted(req, values.len())?;
    Ok(values
        .into_iter()
        .map(|v| match v {
            Value::ServerError(e) => Err(e.into()),
            v => Ok(v),
        })
        .collect())
}

/// A reply per command, or the request's replies cannot be matched to its
/// commands: an error rather than answers given to the wrong items.
fn counted(req: &Request, replies: usize) -> Result<()> {
    let n = req.len();
    if replies != n {
        return Err(crate::error::Error::UnexpectedReply(format!(
            "{replies} replies to {n} commands"
        )));
    }
    Ok(())
}

// A write's `WAIT` rides in the same pipeline, after its commands (and
// again after a NOSCRIPT re-send, whose scripts write only then): no extra
// round trip, and it covers exactly the writes of this connection so far.
// Its verdict is checked after the replies are merged, so a failed WAIT
// never hides an error reply of the request itself.

fn send_sync<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    mut req: Request,
    wait: Option<WaitReplicas>,
) -> Result<Replies> {
    let waited = add_wait(&mut req, wait);
    let mut replies = query_sync(conn, &req)?;
    let mut verdict = strip_wait(&mut replies, waited);
    for _ in 0..NOSCRIPT_RETRIES {
        let Some((idx, mut retry)) = req.retry_noscript(&replies) else {
            break;
        };
        let waited = add_wait(&mut retry, wait);
        let mut again = query_sync(conn, &retry)?;
        verdict = strip_wait(&mut again, waited);
        merge(&mut replies, idx, again);
    }
    verdict.map(|()| replies)
}

// A multiplexed connection is written by a task of its own: a request
// handed to it waits in a channel until that task runs. An operation's
// step (hashing and packing a batch of 1,000 items takes about a
// millisecond) holds the thread while it runs, so a request that another
// future on the same thread (a task of a current-thread runtime, or a
// branch of the same `join!`) has just handed over would reach the server
// only after the step, and the server would idle meanwhile: two batches in
// flight on one shared connection then ran no faster than one. So before
// each step an async operation yields until no request was handed over
// during its last yield (the connection's task has written what it was
// given), at most `MAX_YIELDS` times so that a busy process never starves
// it. A blocking connection writes in the caller's own thread: no need.

/// Requests handed to async connections by this process so far.
#[cfg(feature = "async")]
static HANDED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Yields before a step at most this many times.
#[cfg(feature = "async")]
const MAX_YIELDS: usize = 4;

#[cfg(feature = "async")]
fn handing_over() {
    HANDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Lets the tasks that write requests already handed over run before this
/// one takes the thread for a step (see above).
#[cfg(feature = "async")]
async fn let_writers_run() {
    use std::sync::atomic::Ordering::Relaxed;
    let mut seen = HANDED.load(Relaxed);
    for _ in 0..MAX_YIELDS {
        // tokio's own yield goes behind the tasks already woken (the
        // connection's among them), where a self-wake may jump ahead.
        tokio::task::yield_now().await;
        let now = HANDED.load(Relaxed);
        if now == seen {
            return;
        }
        seen = now;
    }
}

#[cfg(feature = "async")]
async fn send_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    mut req: Request,
    wait: Option<WaitReplicas>,
) -> Result<Replies> {
    let waited = add_wait(&mut req, wait);
    handing_over();
    let mut replies: Replies = req.pipe().query_async(conn).await?;
    counted(&req, replies.len())?;
    let mut verdict = strip_wait(&mut replies, waited);
    for _ in 0..NOSCRIPT_RETRIES {
        let Some((idx, mut retry)) = req.retry_noscript(&replies) else {
            break;
        };
        let waited = add_wait(&mut retry, wait);
        handing_over();
        let mut again: Replies = retry.pipe().query_async(conn).await?;
        counted(&retry, again.len())?;
        verdict = strip_wait(&mut again, waited);
        merge(&mut replies, idx, again);
    }
    verdict.map(|()| replies)
}

/// Runs a machine to completion on a blocking connection; with `wait`,
/// every request that writes waits for that many replicas.
pub(crate) fn run<M: Machine, C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    mut m: M,
    wait: Option<WaitReplicas>,
) -> Result<M::Output> {
    m.allow_transactions(conn.supports_pipelining());
    let mut replies = None;
    loop {
        m.at(std::time::Instant::now());
        match m.step(replies.take())? {
            Poll::Ready(v) => return Ok(v),
            Poll::Send(req) => replies = Some(send_sync(conn, req, wait)?),
        }
    }
}

#[cfg(feature = "async")]
/// Runs a machine to completion on an async connection (see [`run`]).
pub(crate) async fn run_async<M: Machine, C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    mut m: M,
    wait: Option<WaitReplicas>,
) -> Result<M::Output> {
    // Every async connection of the redis crate sends a pipeline in one
    // piece to one server (the cluster connection routes it by its keys,
    // which share the filter's slot), so a guarded transaction runs as
    // written; a handle can still turn the path off explicitly
    // (`with_transactions(false)`).
    m.allow_transactions(true);
    let mut replies = None;
    loop {
        let_writers_run().await;
        m.at(std::time::Instant::now());
        match m.step(replies.take())? {
            Poll::Ready(v) => return Ok(v),
            Poll::Send(req) => replies = Some(send_async(conn, req, wait).await?),
        }
    }
}
