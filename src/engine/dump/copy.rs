//! The machine behind [`copy_string`](crate::dump::copy_string): a string
//! key copied slice by slice, across cluster slots too.

use crate::engine::dump::slices::{all_zero, Slices};
use crate::error::{Error, Result};
use crate::machine::{Machine, Poll};
use crate::proto::dump::{self as format, decode_int as int};
use crate::proto::take_one;
use crate::request::Replies;

/// [`copy_string`](crate::dump::copy_string): the target must not exist; the
/// source's length, the target allocated whole, then the slices that are
/// not all zeros.
pub(crate) struct CopyMachine {
    from: String,
    to: String,
    state: CopyState,
}

enum CopyState {
    Start,
    Exists,
    Len,
    Allocated(Slices),
    Read(Slices),
    Wrote(Slices),
}

impl CopyMachine {
    pub(crate) fn new(from: &str, to: &str) -> CopyMachine {
        CopyMachine {
            from: from.to_string(),
            to: to.to_string(),
            state: CopyState::Start,
        }
    }

    fn read(&mut self, slices: Slices) -> Result<Poll<u64>> {
        match slices.next() {
            Some(req) => {
                self.state = CopyState::Read(slices);
                Ok(Poll::Send(req))
            }
            None => Ok(Poll::Ready(slices.len)),
        }
    }
}

impl Machine for CopyMachine {
    type Output = u64;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<u64>> {
        match std::mem::replace(&mut self.state, CopyState::Start) {
            CopyState::Start => {
                self.state = CopyState::Exists;
                Ok(Poll::Send(crate::proto::dump::exists(&self.to)))
            }
            CopyState::Exists => {
                if int(replies, "EXISTS")? != 0 {
                    return Err(Error::InvalidParameter {
                        name: "key",
                        reason: format!("{:?} exists already", self.to),
                    });
                }
                self.state = CopyState::Len;
                Ok(Poll::Send(crate::proto::dump::length(&self.from)))
            }
            CopyState::Len => match int(replies, "STRLEN")? {
                0 => Ok(Poll::Ready(0)),
                len => {
                    self.state = CopyState::Allocated(Slices::new(self.from.clone(), len));
                    Ok(Poll::Send(format::write_request(&self.to, len - 1, b"\0")))
                }
            },
            CopyState::Allocated(slices) | CopyState::Wrote(slices) => {
                take_one(replies)??;
                self.read(slices)
            }
            CopyState::Read(mut slices) => match slices.take(replies)? {
                // Shorter than it was: copied as far as it goes.
                None => Ok(Poll::Ready(slices.offset)),
                Some((_, bytes)) if all_zero(&bytes) => self.read(slices),
                Some((offset, bytes)) => {
                    let req = format::write_request(&self.to, offset, &bytes);
                    self.state = CopyState::Wrote(slices);
                    Ok(Poll::Send(req))
                }
            },
        }
    }
}
