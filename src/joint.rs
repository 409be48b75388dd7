//! Several machines run as one: each round, the requests of every machine
//! still running go out as one pipeline, and the replies are handed back
//! to the machine that asked for them. A sharded filter sends a master's
//! shards this way, so that a batch costs one round trip per master and
//! step, not one per shard.
//!
//! Each machine keeps its own result: one that fails (its shard is
//! missing, full, stale past its retries) stops alone, and the others run
//! on. An error of the connection itself (I/O, a `WAIT` not acknowledged)
//! is the whole run's, as it is for one machine.

use crate::error::{Error, Result};
use crate::machine::{Machine, Poll};
use crate::request::{Replies, Request};

/// A machine still running, or its result.
enum Part<M: Machine> {
    Running(M),
    Done(Result<M::Output>),
}

/// Runs `machines` side by side; its output is each one's result, in the
/// order given.
pub(crate) struct Joint<M: Machine> {
    parts: Vec<Part<M>>,
    /// The machines that asked in the last request, with how many commands
    /// each put in it, in order.
    asked: Vec<(usize, usize)>,
}

impl<M: Machine> Joint<M> {
    pub fn new(machines: impl IntoIterator<Item = M>) -> Joint<M> {
        Joint {
            parts: machines.into_iter().map(Part::Running).collect(),
            asked: Vec::new(),
        }
    }

    /// Steps machine `i` with `replies`, keeping its next request (added to
    /// `next`) or its result.
    fn advance(&mut self, i: usize, replies: Option<Replies>, next: &mut Request) {
        let Part::Running(m) = &mut self.parts[i] else {
            return;
        };
        let done = match m.step(replies) {
            Ok(Poll::Send(req)) => {
                self.asked.push((i, req.len()));
                // The first part is taken as it is: a machine alone (every
                // unsharded batch) costs no copy of its commands.
                if next.len() == 0 {
                    *next = req;
                } else {
                    next.append(req);
                }
                return;
            }
            Ok(Poll::Ready(v)) => Ok(v),
            Err(e) => Err(e),
        };
        self.parts[i] = Part::Done(done);
    }
}

impl<M: Machine> Machine for Joint<M> {
    type Output = Vec<Result<M::Output>>;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Self::Output>> {
        // Writes (and waits for replicas) only if one of its parts does.
        let mut next = Request::new().read_only();
        let asked = std::mem::take(&mut self.asked);
        match replies {
            None => (0..self.parts.len()).for_each(|i| self.advance(i, None, &mut next)),
            Some(mut replies) => {
                let want: usize = asked.iter().map(|&(_, n)| n).sum();
                if replies.len() != want {
                    return Err(Error::Internal(format!(
                        "{} replies to {want} commands of a joint request",
                        replies.len()
                    )));
                }
                // Handed out front to back: each machine gets its own slice.
                let mut rest = replies.drain(..);
                for (i, n) in asked {
                    let own: Replies = rest.by_ref().take(n).collect();
                    self.advance(i, Some(own), &mut next);
                }
            }
        }
        if !self.asked.is_empty() {
            return Ok(Poll::Send(next));
        }
        let parts = std::mem::take(&mut self.parts);
        Ok(Poll::Ready(
            parts
                .into_iter()
                .map(|p| match p {
                    Part::Done(r) => r,
                    Part::Running(_) => Err(Error::Internal(
                        "a machine of a joint run neither asked nor answered".into(),
                    )),
                })
                .collect(),
        ))
    }

    /// A transaction's `WATCH` lasts from one request to the next on its
    /// connection, and another machine's `EXEC` in between would end it:
    /// side by side, machines use their scripts.
    fn allow_transactions(&mut self, yes: bool) {
        let alone = self.parts.len() == 1;
        for p in &mut self.parts {
            if let Part::Running(m) = p {
                m.allow_transactions(yes && alone);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    /// Asks `rounds` times for `width` PINGs, then answers the sum of the
    /// integers it was given; fails when a reply is an error.
    struct Counter {
        rounds: usize,
        width: usize,
        sum: i64,
        transactions: Option<bool>,
    }

    impl Machine for Counter {
        type Output = i64;
        fn step(&mut self, replies: Option<Replies>) -> Result<Poll<i64>> {
            for r in replies.into_iter().flatten() {
                match r? {
                    Value::Int(v) => self.sum += v,
                    v => return Err(Error::UnexpectedReply(format!("{v:?}"))),
                }
            }
            if self.rounds == 0 {
                return Ok(Poll::Ready(self.sum));
            }
            self.rounds -= 1;
            let mut req = Request::new();
            for _ in 0..self.width {
                req.push(redis::cmd("PING"), None);
            }
            Ok(Poll::Send(req))
        }
        fn allow_transactions(&mut self, yes: bool) {
            self.transactions = Some(yes);
        }
    }

    fn counter(rounds: usize, width: usize) -> Counter {
        Counter {
            rounds,
            width,
            sum: 0,
            transactions: None,
        }
    }

    fn send(j: &mut Joint<Counter>, replies: Option<Replies>) -> Request {
        match j.step(replies).unwrap() {
            Poll::Send(req) => req,
            Poll::Ready(_) => panic!("ready too early"),
        }
    }

    #[test]
    fn each_machine_gets_its_own_replies_and_one_that_fails_stops_alone() {
        // Machine 0: two rounds of 2 commands; 1: one round of 3; 2: fails
        // on its first reply.
        let mut j = Joint::new([counter(2, 2), counter(1, 3), counter(1, 1)]);
        let req = send(&mut j, None);
        assert_eq!(req.len(), 6, "every machine's commands in one request");
        let mut replies: Replies = (1..=5).map(|v| Ok(Value::Int(v))).collect();
        replies.push(Err(redis::RedisError::from((
            redis::ErrorKind::Client,
            "boom",
        ))));
        let req = send(&mut j, Some(replies));
        assert_eq!(req.len(), 2, "only machine 0 asks again");
        let out = match j.step(Some(vec![Ok(Value::Int(10)), Ok(Value::Int(20))])) {
            Ok(Poll::Ready(out)) => out,
            _ => panic!("all done"),
        };
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].as_ref().ok(), Some(&(1 + 2 + 10 + 20)));
        assert_eq!(out[1].as_ref().ok(), Some(&(3 + 4 + 5)));
        assert!(out[2].is_err(), "its error is its own");
    }

    #[test]
    fn replies_that_do_not_match_the_commands_are_an_error() {
        let mut j = Joint::new([counter(1, 2), counter(1, 1)]);
        send(&mut j, None);
        assert!(j.step(Some(vec![Ok(Value::Int(1))])).is_err());
    }

    #[test]
    fn side_by_side_machines_use_no_transaction() {
        let mut two = Joint::new([counter(0, 1), counter(0, 1)]);
        two.allow_transactions(true);
        let mut one = Joint::new([counter(0, 1)]);
        one.allow_transactions(true);
        let told = |j: &Joint<Counter>| -> Vec<Option<bool>> {
            j.parts
                .iter()
                .map(|p| match p {
                    Part::Running(m) => m.transactions,
                    Part::Done(_) => None,
                })
                .collect()
        };
        assert_eq!(told(&two), [Some(false), Some(false)]);
        assert_eq!(told(&one), [Some(true)]);
        // Machines ready at once: no request at all.
        assert!(matches!(two.step(None), Ok(Poll::Ready(v)) if v.len() == 2));
    }
}
