//! The sharded dump's container (docs/FORMAT.md §11.7) as the restore
//! reads it around the shards' own dumps: a shard's bytes taken out of the
//! `C` records that carry them, and the end record checked. Apart from the
//! restore machine so that it reads as the creation protocol it drives,
//! the framing here.

use crate::error::{Error, Result};
use crate::proto::dump::{Frame, Reader};
use std::io::Read;

pub(super) fn bad(reason: impl Into<String>) -> Error {
    Error::BadDump {
        reason: reason.into(),
    }
}

/// One shard's dump, read out of the `C` records that carry it: the
/// bytes end at its `Z` record, whose count is checked. A problem of the
/// container is kept to be reported as itself (the shard's restore only
/// sees its input fail). It owns the container's reader while the shard's
/// machine runs, and gives it back.
pub(super) struct ShardInput<R> {
    pub(super) outer: Reader<R>,
    buf: Vec<u8>,
    at: usize,
    bytes: u64,
    pub(super) ended: bool,
    pub(super) failure: Option<Error>,
}

impl<R: Read> ShardInput<R> {
    /// The input of a shard whose dump starts at `outer`'s next record.
    pub(super) fn new(outer: Reader<R>) -> ShardInput<R> {
        ShardInput {
            outer,
            buf: Vec::new(),
            at: 0,
            bytes: 0,
            ended: false,
            failure: None,
        }
    }

    fn next(&mut self) -> Result<bool> {
        let (tag, p) = self
            .outer
            .next_frame("the rest of a shard's dump, or its end record")?;
        self.outer.records += 1;
        match Frame::decode(tag, &p)? {
            Frame::Chunk(bytes) => {
                self.bytes += bytes.len() as u64;
                self.buf = bytes;
                self.at = 0;
                Ok(true)
            }
            Frame::ShardEnd { bytes } if bytes == self.bytes => {
                self.ended = true;
                Ok(false)
            }
            Frame::ShardEnd { bytes } => Err(bad(format!(
                "a shard's end record counts {bytes} bytes, its chunks {}",
                self.bytes
            ))),
            other => Err(bad(format!(
                "a shard's dump is interrupted by {}",
                other.what()
            ))),
        }
    }
}

impl<R: Read> Read for ShardInput<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.buf.len() {
            if self.ended || self.failure.is_some() {
                return Ok(0);
            }
            match self.next() {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(e) => {
                    let message = e.to_string();
                    self.failure = Some(e);
                    return Err(std::io::Error::other(message));
                }
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// `e`, met in shard `j`'s part of the file, naming it.
pub(super) fn in_shard(j: u32, shards: u32, e: Error) -> Error {
    match e {
        Error::BadDump { reason } => bad(format!("shard {j} of {shards}: {reason}")),
        other => other,
    }
}

/// Reads the end record: it must count what came before it, and nothing
/// may follow it.
pub(super) fn end<R: Read>(reader: &mut Reader<R>, shards: u32) -> Result<()> {
    let before = reader.records;
    let (tag, p) = reader.next_frame("the end record").map_err(|e| match e {
        Error::BadDump { reason } if !reason.contains("end record") => {
            bad(format!("the end record: {reason}"))
        }
        other => other,
    })?;
    match Frame::decode(tag, &p)? {
        Frame::End { records, shards: s } if records == before && s == shards => {
            reader.expect_end()
        }
        Frame::End { records, shards: s } => Err(bad(format!(
            "the end record counts {records} records and {s} shards, the file has {before} and {shards}"
        ))),
        other => Err(bad(format!(
            "more than {shards} shards, or no end record: found {}",
            other.what()
        ))),
    }
}
