//! A request: the commands of one round trip, as the pure core builds
//! them, with what the I/O driver needs to send them (the scripts to
//! re-send after NOSCRIPT, whether it waits for replicas); and the replies
//! it gets back.

use crate::scripts::LuaScript;
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

    /// Adds `other`'s commands after these, as one round trip (a joint
    /// request of several machines); it writes if either does.
    pub fn append(&mut self, other: Request) {
        for (cmd, script) in other.pipe.cmd_iter().zip(other.scripts) {
            self.pipe.add_command(cmd.clone());
            self.scripts.push(script);
        }
        self.writes |= other.writes;
    }

    /// How many commands the request holds.
    pub fn len(&self) -> usize {
        self.scripts.len()
    }

    /// The pipeline to send.
    pub fn pipe(&self) -> &Pipeline {
        &self.pipe
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
    pub fn retry_noscript(&self, replies: &[RedisResult<Value>]) -> Option<(Vec<usize>, Request)> {
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
