//! The shape of every operation: a pure state machine that says what to
//! send next, or what the result is. The I/O driver (`exec`) runs it on a
//! blocking or an async connection. It sits below the engine (which
//! builds machines), the views (whose codecs start one) and the driver,
//! so that none of them imports another for it.

use crate::error::Result;
use crate::request::{Replies, Request};

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

    /// Told before each step the driver's monotonic time, read at the edge:
    /// a machine that keeps a deadline (a restore's lease) reads no clock
    /// of its own, so its tests set the time. A machine that wraps one
    /// passes it on.
    fn at(&mut self, _now: std::time::Instant) {}
}

impl<M: Machine + ?Sized> Machine for Box<M> {
    type Output = M::Output;
    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<M::Output>> {
        (**self).step(replies)
    }
    fn allow_transactions(&mut self, yes: bool) {
        (**self).allow_transactions(yes)
    }
    fn at(&mut self, now: std::time::Instant) {
        (**self).at(now)
    }
}
