//! Dumping and restoring a sharded filter (docs/FORMAT.md §11.7): the
//! root's figures, then every shard's own dump of §10 in chunks. A
//! restore re-creates the filter by the sharded creation's protocol
//! (claim, make every shard, publish; undo on a failure), each shard made
//! by the ordinary restore of its part of the file, and publishes only
//! once the file's end record is checked: all or nothing.

use super::{ShardPlan, ShardedFilter};
use crate::engine::dump::{options::RestoreOptions, summary::Summary};
use crate::error::{Error, Result};
use crate::kinds::Any;
use crate::proto::create::Opened;
use crate::proto::dump::{Frame, Reader, CHUNK, SHARDED_DUMP_VERSION, SHARDED_MAGIC};
use std::io::{Read, Write};

fn bad(reason: impl Into<String>) -> Error {
    Error::BadDump {
        reason: reason.into(),
    }
}

fn written(source: std::io::Error) -> Error {
    Error::Io {
        what: "writing the dump".into(),
        source,
    }
}

/// Adds `s` into `total` (the whole filter's summary).
fn add(total: &mut Summary, s: &Summary) {
    total.generations += s.generations;
    total.blocks = total.blocks.saturating_add(s.blocks);
    total.bytes = total.bytes.saturating_add(s.bytes);
    total.items = total.items.saturating_add(s.items);
}

/// Writes the records of the file to `out`, counting them.
struct Records<'a, W> {
    out: &'a mut W,
    records: u64,
}

impl<W: Write> Records<'_, W> {
    fn put(&mut self, f: &Frame) -> Result<()> {
        self.out.write_all(&f.encode()).map_err(written)?;
        self.records += 1;
        Ok(())
    }
}

/// A shard's dump as `C` records of at most [`CHUNK`] bytes.
struct Chunks<'a, 'b, W> {
    records: &'a mut Records<'b, W>,
    buf: Vec<u8>,
    bytes: u64,
}

impl<W: Write> Chunks<'_, '_, W> {
    fn emit(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Frame::Chunk(std::mem::take(&mut self.buf));
        self.records.put(&chunk).map_err(|e| match e {
            Error::Io { source, .. } => source,
            other => std::io::Error::other(other.to_string()),
        })
    }
}

impl<W: Write> Write for Chunks<'_, '_, W> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = CHUNK as usize - self.buf.len();
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        self.bytes += n as u64;
        if self.buf.len() == CHUNK as usize {
            self.emit()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.emit()
    }
}

/// Dumps the sharded filter `name` to `out` (see [`crate::dump::dump`]).
pub(crate) fn dump<C: redis::ConnectionLike + ?Sized, W: Write>(
    conn: &mut C,
    name: &str,
    out: &mut W,
) -> Result<Summary> {
    let f = ShardedFilter::<Any>::open(conn, name)?;
    let Some(root) = f.root.clone() else {
        return Err(Error::Internal(format!("{name:?} is not sharded")));
    };
    out.write_all(&SHARDED_MAGIC).map_err(written)?;
    let mut records = Records { out, records: 0 };
    records.put(&Frame::Root {
        version: SHARDED_DUMP_VERSION,
        shards: f.shard_count(),
        kind: root.kind.as_str().to_string(),
        capacity: root.capacity,
        name: name.to_string(),
    })?;
    let mut total = Summary {
        name: name.to_string(),
        kind: root.kind,
        generations: 0,
        blocks: 0,
        bytes: 0,
        items: 0,
    };
    for (j, sub) in root.shards.iter().enumerate() {
        records.put(&Frame::Shard {
            index: j as u32,
            name: sub.clone(),
        })?;
        let mut chunks = Chunks {
            records: &mut records,
            buf: Vec::new(),
            bytes: 0,
        };
        let s = crate::engine::dump::dump_unsharded(conn, sub, &mut chunks, crate::any::ACCEPT_ANY)
            .map_err(|e| super::missing(&root, j, e))?;
        chunks.flush().map_err(written)?;
        let bytes = chunks.bytes;
        records.put(&Frame::ShardEnd { bytes })?;
        add(&mut total, &s);
    }
    let end = Frame::End {
        records: records.records,
        shards: f.shard_count(),
    };
    records.put(&end)?;
    records.out.flush().map_err(written)?;
    Ok(total)
}

/// One shard's dump, read out of the `C` records that carry it: the
/// bytes end at its `Z` record, whose count is checked. A problem of the
/// container is kept to be reported as itself (the shard's restore only
/// sees its input fail).
struct ShardInput<'a, R> {
    outer: &'a mut Reader<R>,
    buf: Vec<u8>,
    at: usize,
    bytes: u64,
    ended: bool,
    failure: Option<Error>,
}

impl<R: Read> ShardInput<'_, R> {
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

impl<R: Read> Read for ShardInput<'_, R> {
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

/// Restores a sharded dump (see [`crate::dump::restore_with`]).
pub(crate) fn restore<C: redis::ConnectionLike + ?Sized, R: Read>(
    conn: &mut C,
    input: R,
    options: RestoreOptions<'_>,
) -> Result<Summary> {
    let mut reader = Reader::with_magic(input, SHARDED_MAGIC);
    let (tag, p) = reader.next_frame("the root record")?;
    reader.records += 1;
    let Frame::Root {
        version,
        shards,
        kind,
        capacity,
        name: dumped,
    } = Frame::decode(tag, &p)?
    else {
        return Err(bad("the root record is not first"));
    };
    if version != SHARDED_DUMP_VERSION {
        return Err(bad(format!(
            "sharded dump version {version}: this reader knows {SHARDED_DUMP_VERSION}"
        )));
    }
    let kind: crate::metadata::Kind = kind
        .parse()
        .map_err(|_| bad(format!("the root's kind {kind:.40?} is not a kind")))?;
    let name = options.target().map_or(dumped, str::to_string);
    // Restoring never overwrites: a taken name fails before anything is
    // written (the claim below would only find it again).
    let keys = crate::keys::Keys::new(crate::keys::FilterName::new(&name)?);
    let exists: i64 = crate::proto::shard::script::query(
        conn,
        &crate::proto::shard::script::exists(keys.meta()),
    )?;
    if exists != 0 {
        return Err(Error::AlreadyExists { name });
    }
    let plan = ShardPlan {
        name: name.clone(),
        shards,
        kind,
        capacity,
        lease: super::DEFAULT_CREATE_LEASE,
    };
    let mut total = Summary {
        name: name.clone(),
        kind,
        generations: 0,
        blocks: 0,
        bytes: 0,
        items: 0,
    };
    let mut next = 0u32;
    ShardedFilter::<Any>::create_or_open_with(conn, &plan, |conn, sub| {
        let j = next;
        next += 1;
        let s = restore_shard(conn, &mut reader, j, shards, sub, options)?;
        if s.kind != kind {
            return Err(bad(format!(
                "shard {j} is {}, the root says {kind}",
                s.kind.with_article()
            )));
        }
        add(&mut total, &s);
        let f = crate::any::AnyFilter::open(conn, sub)?;
        if j + 1 == shards {
            // The last shard: the end record checked, and nothing after
            // it, before the creation publishes the root. The creation
            // undoes the shards it was given; this one it was not.
            if let Err(e) = end(&mut reader, shards) {
                f.drop(conn)?;
                return Err(e);
            }
        }
        Ok((f, Opened::Created))
    })?;
    Ok(total)
}

/// Restores shard `j` of `shards` from the reader as the filter `sub`.
fn restore_shard<C: redis::ConnectionLike + ?Sized, R: Read>(
    conn: &mut C,
    reader: &mut Reader<R>,
    j: u32,
    shards: u32,
    sub: &str,
    options: RestoreOptions<'_>,
) -> Result<Summary> {
    let (tag, p) = reader
        .next_frame(&format!("shard {j} of {shards}"))
        .map_err(|e| in_shard(j, shards, e))?;
    reader.records += 1;
    match Frame::decode(tag, &p)? {
        Frame::Shard { index, .. } if index == j => {}
        other => {
            return Err(bad(format!(
                "shard {j} of {shards} missing: found {}",
                other.what()
            )))
        }
    }
    let mut input = ShardInput {
        outer: reader,
        buf: Vec::new(),
        at: 0,
        bytes: 0,
        ended: false,
        failure: None,
    };
    let restored = crate::engine::dump::restore_unsharded(
        conn,
        &mut input,
        options.name(Some(sub)),
        crate::any::ACCEPT_ANY,
    );
    let failure = input.failure.take();
    let ended = input.ended;
    match (restored, failure) {
        (_, Some(e)) => Err(in_shard(j, shards, e)),
        (Err(e), None) => Err(in_shard(j, shards, e)),
        (Ok(_), None) if !ended => Err(bad(format!(
            "shard {j} of {shards}: its end record missing after its dump"
        ))),
        (Ok(s), None) => Ok(s),
    }
}

/// `e`, met in shard `j`'s part of the file, naming it.
fn in_shard(j: u32, shards: u32, e: Error) -> Error {
    match e {
        Error::BadDump { reason } => bad(format!("shard {j} of {shards}: {reason}")),
        other => other,
    }
}

/// Reads the end record: it must count what came before it, and nothing
/// may follow it.
fn end<R: Read>(reader: &mut Reader<R>, shards: u32) -> Result<()> {
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
