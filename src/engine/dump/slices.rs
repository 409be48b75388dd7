//! A string key read in slices of at most [`CHUNK`] bytes, so that no
//! read holds the server for long: the dump and the string copy walk
//! their keys with it.

use crate::error::Result;
use crate::proto::dump::{self as format, CHUNK};
use crate::proto::take_one;
use crate::request::{Replies, Request};

/// Walks a string key in slices of at most [`CHUNK`] bytes: the next
/// `GETRANGE`, and the slice its reply holds.
pub(crate) struct Slices {
    key: String,
    pub(crate) len: u64,
    pub(crate) offset: u64,
}

impl Slices {
    pub(crate) fn new(key: String, len: u64) -> Slices {
        Slices {
            key,
            len,
            offset: 0,
        }
    }

    fn want(&self) -> u64 {
        CHUNK.min(self.len - self.offset)
    }

    /// The read of the next slice, or `None` at the end.
    pub(crate) fn next(&self) -> Option<Request> {
        (self.offset < self.len).then(|| format::read_request(&self.key, self.offset, self.want()))
    }

    /// The slice the reply holds, with its offset; `None` when the key
    /// turned out shorter than `len`. Moves past it.
    pub(crate) fn take(&mut self, replies: Option<Replies>) -> Result<Option<(u64, Vec<u8>)>> {
        let want = self.want();
        let bytes = format::decode_bytes(take_one(replies)??)?;
        if bytes.len() as u64 != want {
            return Ok(None);
        }
        let offset = self.offset;
        self.offset += want;
        Ok(Some((offset, bytes)))
    }
}

pub(crate) fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0)
}
