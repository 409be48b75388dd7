//! The only code that talks to Redis: it runs what the pure core built, on a
//! blocking or an async connection, and turns NOSCRIPT into a transparent
//! re-send. Everything else is decided by [`Machine`]s.

use crate::error::Result;
use crate::scripts::LuaScript;
use crate::wait::WaitReplicas;
use redis::{Cmd, Pipeline, RedisResult, Value};

/// One round trip: commands sent as one pipeline.
pub(crate) struct Request {
    pipe: Pipeline,
    /// For each command, the script it calls by SHA1, if any.
    scripts: Vec<Option<&'static LuaScript>>,
    /// Whether the request may change data: only then is it followed by
    /// `WAIT` when the handle waits for replicas. Requests are writes
    /// unless their builder says otherwise, so a forgotten mark costs a
    /// `WAIT` too many, never one too few.
    writes: bool,
}

impl Request {
    pub fn new() -> Request {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        Request {
            pipe,
            scripts: Vec::new(),
            writes: true,
        }
    }

    /// Marks the request as one that changes nothing.
    pub fn read_only(mut self) -> Request {
        self.writes = false;
        self
    }

    /// Marks a write that waits for no replica itself: what it writes is
    /// nothing until a later write of the same operation publishes it (the
    /// blocks of a filter being created), and that write's `WAIT` covers
    /// every earlier write of the connection. So a creation that no replica
    /// acknowledges fails at its publishing step, with nothing published,
    /// not at its first block.
    pub fn unwaited(mut self) -> Request {
        self.writes = false;
        self
    }

    /// Whether the request may change data.
    #[cfg(test)]
    pub fn writes(&self) -> bool {
        self.writes
    }

    pub fn cmd(mut self, cmd: Cmd) -> Request {
        self.push(cmd, None);
        self
    }

    pub fn push(&mut self, cmd: Cmd, script: Option<&'static LuaScript>) {
        self.pipe.add_command(cmd);
        self.scripts.push(script);
    }

    pub fn script(&mut self, script: &'static LuaScript, cmd: Cmd) {
        self.push(cmd, Some(script));
    }

    /// How many commands the request holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.scripts.len()
    }

    /// The arguments of command `i`, as text (tests read requests).
    #[cfg(test)]
    pub fn args(&self, i: usize) -> Vec<String> {
        self.pipe
            .cmd_iter()
            .nth(i)
            .map(|c| {
                c.args_iter()
                    .filter_map(|a| match a {
                        redis::Arg::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The commands whose reply was NOSCRIPT, re-built as EVAL.
    fn retry_noscript(&self, replies: &[RedisResult<Value>]) -> Option<(Vec<usize>, Request)> {
        let mut idx = Vec::new();
        let mut retry = Request::new();
        retry.writes = self.writes;
        for ((i, r), cmd) in replies.iter().enumerate().zip(self.pipe.cmd_iter()) {
            if let (Err(e), Some(script)) = (r, self.scripts[i]) {
                if e.code() == Some("NOSCRIPT") {
                    idx.push(i);
                    retry.push(script.as_eval(cmd), None);
                }
            }
        }
        (!idx.is_empty()).then_some((idx, retry))
    }
}

/// Replies, one per command of the request, in order.
pub(crate) type Replies = Vec<RedisResult<Value>>;

/// What a machine wants next.
pub(crate) enum Poll<T> {
    Send(Request),
    Ready(T),
}

/// A pure state machine for one operation: it is handed the replies to its
/// last request (None at the start) and says what to send next or what the
/// result is. Sync and async callers drive the same machine.
pub(crate) trait Machine {
    type Output;
    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Self::Output>>;

    /// Told once, before the first step, whether the connection can run a
    /// pipelined `WATCH ... EXEC` transaction.
    fn allow_transactions(&mut self, _yes: bool) {}
}

impl<M: Machine + ?Sized> Machine for Box<M> {
    type Output = M::Output;
    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<M::Output>> {
        (**self).step(replies)
    }
    fn allow_transactions(&mut self, yes: bool) {
        (**self).allow_transactions(yes)
    }
}

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
    let wait = wait.filter(|_| req.writes)?;
    req.push(wait.command(), None);
    Some(wait)
}

/// Takes the `WAIT` reply off the end of the replies and checks it.
fn strip_wait(replies: &mut Replies, wait: Option<WaitReplicas>) -> Result<()> {
    let Some(wait) = wait else {
        return Ok(());
    };
    let reply = replies
        .pop()
        .ok_or_else(|| crate::Error::Internal("no reply to the WAIT of a write request".into()))?;
    wait.check(reply)
}

/// Sends a request on a blocking connection.
fn query_sync<C: redis::ConnectionLike + ?Sized>(conn: &mut C, req: &Request) -> Result<Replies> {
    let n = req.scripts.len();
    if !conn.supports_pipelining() {
        // The blocking cluster connection cannot pipeline, and folds any
        // error of a packed pipeline into one, hiding which commands ran;
        // so each command goes alone and keeps its own reply.
        let mut out = Vec::with_capacity(n);
        for cmd in req.pipe.cmd_iter() {
            out.push(match conn.req_command(cmd) {
                Ok(Value::ServerError(e)) => Err(e.into()),
                Ok(v) => Ok(v),
                Err(e) if e.code().is_some() => Err(e),
                Err(e) => return Err(e.into()),
            });
        }
        return Ok(out);
    }
    let values = conn.req_packed_commands(&req.pipe.get_packed_pipeline(), 0, n)?;
    if values.len() != n {
        return Err(crate::Error::UnexpectedReply(format!(
            "{} replies to {n} commands",
            values.len()
        )));
    }
    Ok(values
        .into_iter()
        .map(|v| match v {
            Value::ServerError(e) => Err(e.into()),
            v => Ok(v),
        })
        .collect())
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

#[cfg(feature = "async")]
async fn send_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    mut req: Request,
    wait: Option<WaitReplicas>,
) -> Result<Replies> {
    let waited = add_wait(&mut req, wait);
    let mut replies: Replies = req.pipe.query_async(conn).await?;
    let mut verdict = strip_wait(&mut replies, waited);
    for _ in 0..NOSCRIPT_RETRIES {
        let Some((idx, mut retry)) = req.retry_noscript(&replies) else {
            break;
        };
        let waited = add_wait(&mut retry, wait);
        let mut again: Replies = retry.pipe.query_async(conn).await?;
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
        match m.step(replies.take())? {
            Poll::Ready(v) => return Ok(v),
            Poll::Send(req) => replies = Some(send_async(conn, req, wait).await?),
        }
    }
}
