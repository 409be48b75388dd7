//! Combinators that make one machine of several steps, so that every public
//! operation is one machine and its sync and async forms are one-line
//! wrappers over `exec::run` / `exec::run_async`.

use crate::error::Result;
use crate::machine::{Machine, Poll};
use crate::request::Replies;

/// A machine that is already done.
pub(crate) struct Ready<T>(pub Option<T>);

impl<T> Machine for Ready<T> {
    type Output = T;
    fn step(&mut self, _: Option<Replies>) -> Result<Poll<T>> {
        self.0
            .take()
            .map(Poll::Ready)
            .ok_or_else(|| crate::error::Error::Internal("a finished machine was stepped".into()))
    }
}

enum ThenState<A, B> {
    First(A),
    Second(B),
}

/// `a`, then the machine `f` makes of its output.
pub(crate) struct Then<A: Machine, B, F> {
    state: ThenState<A, B>,
    f: Option<F>,
    tx: bool,
}

impl<A, B, F> Machine for Then<A, B, F>
where
    A: Machine,
    B: Machine,
    F: FnOnce(A::Output) -> Result<B>,
{
    type Output = B::Output;

    fn allow_transactions(&mut self, yes: bool) {
        self.tx = yes;
        match &mut self.state {
            ThenState::First(a) => a.allow_transactions(yes),
            ThenState::Second(b) => b.allow_transactions(yes),
        }
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<B::Output>> {
        if let ThenState::First(a) = &mut self.state {
            match a.step(replies)? {
                Poll::Send(req) => return Ok(Poll::Send(req)),
                Poll::Ready(out) => {
                    let f = self
                        .f
                        .take()
                        .ok_or_else(|| crate::error::Error::Internal("a chain ran twice".into()))?;
                    let mut b = f(out)?;
                    b.allow_transactions(self.tx);
                    self.state = ThenState::Second(b);
                    // The second machine starts without replies.
                    return self.step(None);
                }
            }
        }
        match &mut self.state {
            ThenState::Second(b) => b.step(replies),
            ThenState::First(_) => Err(crate::error::Error::Internal(
                "a chain lost its step".into(),
            )),
        }
    }
}

/// Chaining and mapping for every machine.
pub(crate) trait MachineExt: Machine + Sized {
    fn then<B: Machine, F: FnOnce(Self::Output) -> Result<B>>(self, f: F) -> Then<Self, B, F> {
        Then {
            state: ThenState::First(self),
            f: Some(f),
            tx: false,
        }
    }

    fn map<T, F: FnOnce(Self::Output) -> Result<T>>(self, f: F) -> Map<Self, F> {
        Map {
            m: self,
            f: Some(f),
        }
    }

    fn or_undo<U: Machine>(self, undo: U) -> OrUndo<Self, U> {
        OrUndo {
            m: self,
            undo: Some(undo),
            failed: None,
        }
    }
}

impl<M: Machine> MachineExt for M {}

/// A machine whose output is transformed.
pub(crate) struct Map<M, F> {
    m: M,
    f: Option<F>,
}

impl<M, T, F> Machine for Map<M, F>
where
    M: Machine,
    F: FnOnce(M::Output) -> Result<T>,
{
    type Output = T;

    fn allow_transactions(&mut self, yes: bool) {
        self.m.allow_transactions(yes);
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<T>> {
        match self.m.step(replies)? {
            Poll::Send(req) => Ok(Poll::Send(req)),
            Poll::Ready(out) => {
                let f = self.f.take().ok_or_else(|| {
                    crate::error::Error::Internal("a mapped machine ran twice".into())
                })?;
                f(out).map(Poll::Ready)
            }
        }
    }
}

/// Runs `m`; if it fails, runs `undo` (whose own outcome is dropped) and
/// then fails with `m`'s error. For steps that must not leave half a
/// result behind.
pub(crate) struct OrUndo<M, U> {
    m: M,
    undo: Option<U>,
    failed: Option<crate::error::Error>,
}

impl<M: Machine, U: Machine> Machine for OrUndo<M, U> {
    type Output = M::Output;

    fn allow_transactions(&mut self, yes: bool) {
        self.m.allow_transactions(yes);
        if let Some(u) = &mut self.undo {
            u.allow_transactions(yes);
        }
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<M::Output>> {
        if let Some(e) = self.failed.take() {
            // Undoing: go on until it is done, whatever it says.
            return match self.undo.as_mut().map(|u| u.step(replies)) {
                Some(Ok(Poll::Send(req))) => {
                    self.failed = Some(e);
                    Ok(Poll::Send(req))
                }
                _ => Err(e),
            };
        }
        match self.m.step(replies) {
            Err(e) => match self.undo.as_mut().map(|u| u.step(None)) {
                Some(Ok(Poll::Send(req))) => {
                    self.failed = Some(e);
                    Ok(Poll::Send(req))
                }
                _ => Err(e),
            },
            other => other,
        }
    }
}

/// A machine whose error is transformed.
pub(crate) struct MapErr<M, F> {
    m: M,
    f: F,
}

impl<M, F> MapErr<M, F> {
    pub fn new(m: M, f: F) -> MapErr<M, F> {
        MapErr { m, f }
    }
}

impl<M: Machine, F: Fn(crate::error::Error) -> crate::error::Error> Machine for MapErr<M, F> {
    type Output = M::Output;

    fn allow_transactions(&mut self, yes: bool) {
        self.m.allow_transactions(yes);
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<M::Output>> {
        self.m.step(replies).map_err(&self.f)
    }
}

/// Runs `m` for its effect only: its error is dropped. For work whose
/// failure changes no answer (allocation ahead of need, which the writes
/// redo when they need it).
pub(crate) struct BestEffort<M>(pub M);

impl<M: Machine> Machine for BestEffort<M> {
    type Output = ();

    fn allow_transactions(&mut self, yes: bool) {
        self.0.allow_transactions(yes);
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<()>> {
        match self.0.step(replies) {
            Ok(Poll::Send(req)) => Ok(Poll::Send(req)),
            Ok(Poll::Ready(_)) | Err(_) => Ok(Poll::Ready(())),
        }
    }
}

/// One request, then its replies made into the output by `f`.
pub(crate) struct Ask<F> {
    req: Option<crate::request::Request>,
    f: Option<F>,
}

impl<F> Ask<F> {
    pub fn new(req: crate::request::Request, f: F) -> Ask<F> {
        Ask {
            req: Some(req),
            f: Some(f),
        }
    }
}

impl<T, F: FnOnce(Replies) -> Result<T>> Machine for Ask<F> {
    type Output = T;
    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<T>> {
        if let Some(req) = self.req.take() {
            return Ok(Poll::Send(req));
        }
        let f = self.f.take().ok_or_else(|| {
            crate::error::Error::Internal("a finished request was stepped".into())
        })?;
        f(replies.unwrap_or_default()).map(Poll::Ready)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Request;

    /// Sends one PING, then returns the number it was made with.
    struct Ping(u32, bool);

    impl Machine for Ping {
        type Output = u32;
        fn step(&mut self, replies: Option<Replies>) -> Result<Poll<u32>> {
            if !self.1 {
                self.1 = true;
                return Ok(Poll::Send(
                    Request::new().read_only().cmd(redis::cmd("PING")),
                ));
            }
            assert!(replies.is_some());
            Ok(Poll::Ready(self.0))
        }
    }

    fn drive<M: Machine>(mut m: M) -> (usize, M::Output) {
        let mut sent = 0;
        let mut replies = None;
        loop {
            match m.step(replies.take()).unwrap() {
                Poll::Ready(v) => return (sent, v),
                Poll::Send(req) => {
                    sent += 1;
                    replies = Some(vec![Ok(redis::Value::Okay); req.len()]);
                }
            }
        }
    }

    #[test]
    fn steps_chain_in_order_and_map() {
        let m = Ping(1, false)
            .then(|a| Ok(Ping(a + 1, false)))
            .map(|b| Ok(b * 10));
        assert_eq!(drive(m), (2, 20));
        let m = Ready(Some(5)).then(|a| Ok(Ping(a, false)));
        assert_eq!(drive(m), (1, 5));
        let m = Ping(1, false).then(|_| Ok(Ready(Some(7))));
        assert_eq!(drive(m), (1, 7));
    }
}
