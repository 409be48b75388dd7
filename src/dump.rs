//! Dump and restore: a filter's metadata and bits in a versioned,
//! checksummed file (docs/FORMAT.md §10), read and written in steps of at
//! most 1 MiB so that the server is never held for long, and restorable
//! into another server, under another name, or into a Redis Cluster. Each
//! is one machine, driven by the blocking and the async functions alike.
//!
//! ```no_run
//! let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let mut file = std::fs::File::create("crawl.rbdump")?;
//! rotabloom::dump::dump(&mut conn, "crawl", &mut file)?;
//! let file = std::fs::File::open("crawl.rbdump")?;
//! rotabloom::dump::restore(&mut conn, file, Some("crawl-copy"))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::engine::load::LoadMachine;
use crate::error::{Error, Result};
use crate::exec::{self, Machine, Poll, Replies, Request};
use crate::keys::{FilterName, Keys};
use crate::metadata::{Fields, Kind};
use crate::proto::dump::{self as format, Record, CHUNK};
use crate::proto::take_one;
use crate::view::View;
use redis::Value;
use std::collections::BTreeSet;
use std::io::{Read, Write};

pub use crate::proto::dump::{DUMP_VERSION, MAGIC};

/// What a dump or a restore moved.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// The filter's name (for a restore, the name it was restored as).
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// Its generations.
    pub generations: usize,
    /// Its block keys.
    pub blocks: u64,
    /// Bytes of the blocks (all-zero stretches are not in the file).
    pub bytes: u64,
    /// Distinct items, as the metadata counts them.
    pub items: u64,
}

impl Summary {
    fn of(name: &str, view: &View) -> Summary {
        Summary {
            name: name.to_string(),
            kind: view.kind,
            generations: view.gens.len(),
            blocks: view.gens.iter().map(|g| u64::from(g.layout.blocks)).sum(),
            bytes: 0,
            items: view.count(),
        }
    }
}

fn io(what: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        what: what.to_string(),
        source,
    }
}

fn bad(reason: impl Into<String>) -> Error {
    Error::BadDump {
        reason: reason.into(),
    }
}

fn changed(name: &str) -> Error {
    Error::Contention {
        name: name.to_string(),
        retries: 1,
    }
}

fn int(reply: Option<Replies>, what: &str) -> Result<u64> {
    match take_one(reply)?? {
        Value::Int(n) => Ok(u64::try_from(n).unwrap_or(0)),
        v => Err(crate::proto::unexpected(what, &v)),
    }
}

fn one(cmd: &mut redis::Cmd) -> Request {
    Request::new().cmd(cmd.clone())
}

/// Writes filter `name` to `out`: its metadata, then each block of each
/// generation in slices of 1 MiB, one `GETRANGE` per round trip
/// (all-zero slices are left out). Items inserted while the dump runs
/// may or may not be in it; a structural change or a clear meanwhile
/// (rotation, expansion) fails it with [`Error::Contention`]: try again.
/// A filter kept in RedisBloom keys cannot be dumped
/// ([`Error::InvalidParameter`]).
pub fn dump<C: redis::ConnectionLike + ?Sized, W: Write>(
    conn: &mut C,
    name: &str,
    out: &mut W,
) -> Result<Summary> {
    exec::run(conn, DumpMachine::new(name, out)?, None)
}

#[cfg(feature = "async")]
/// Async [`dump`] (the writes to `out` block).
pub async fn dump_async<C: redis::aio::ConnectionLike + Send, W: Write + Send>(
    conn: &mut C,
    name: &str,
    out: &mut W,
) -> Result<Summary> {
    exec::run_async(conn, DumpMachine::new(name, out)?, None).await
}

/// Restores a dump read from `input` as filter `name` (default: the
/// dumped filter's name), under a fresh instance id: every block first,
/// one `SETRANGE` of at most 1 MiB per round trip, then the metadata and
/// fence in one atomic step, so no reader ever sees a half-restored
/// filter. A filter of that name is never overwritten
/// ([`Error::AlreadyExists`]); a damaged or truncated file is
/// [`Error::BadDump`]; a write the server refuses for memory is
/// [`Error::OutOfMemory`]. Then what was written is deleted again.
pub fn restore<C: redis::ConnectionLike + ?Sized, R: Read>(
    conn: &mut C,
    input: R,
    name: Option<&str>,
) -> Result<Summary> {
    exec::run(conn, RestoreMachine::new(input, name)?, None)
}

#[cfg(feature = "async")]
/// Async [`restore`] (the reads from `input` block).
pub async fn restore_async<C: redis::aio::ConnectionLike + Send, R: Read + Send>(
    conn: &mut C,
    input: R,
    name: Option<&str>,
) -> Result<Summary> {
    exec::run_async(conn, RestoreMachine::new(input, name)?, None).await
}

/// Copies the string at `from` to `to` (which must not exist), 1 MiB per
/// round trip, all-zero slices skipped; returns its length (0: `from` does
/// not exist, and nothing is written). Across cluster slots too: e.g. a
/// legacy bitmap into a filter's slot before
/// [`adopt_legacy`](crate::ExpandingBuilder::adopt_legacy), whose
/// `RENAME` cannot cross slots. Writes to `from` meanwhile may or may not
/// be copied.
pub fn copy_string<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    from: &str,
    to: &str,
) -> Result<u64> {
    exec::run(conn, CopyMachine::new(from, to), None)
}

#[cfg(feature = "async")]
/// Async [`copy_string`].
pub async fn copy_string_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    from: &str,
    to: &str,
) -> Result<u64> {
    exec::run_async(conn, CopyMachine::new(from, to), None).await
}

/// Walks a string key in slices of at most [`CHUNK`] bytes: the next
/// `GETRANGE`, and the slice its reply holds.
struct Slices {
    key: String,
    len: u64,
    offset: u64,
}

impl Slices {
    fn new(key: String, len: u64) -> Slices {
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
    fn next(&self) -> Option<Request> {
        (self.offset < self.len).then(|| format::read_request(&self.key, self.offset, self.want()))
    }

    /// The slice the reply holds, with its offset; `None` when the key
    /// turned out shorter than `len`. Moves past it.
    fn take(&mut self, replies: Option<Replies>) -> Result<Option<(u64, Vec<u8>)>> {
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

fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0)
}

enum DumpState {
    Load(LoadMachine),
    /// Waiting for the length of block `i` of the targets.
    Len(usize),
    /// Reading block `i`.
    Read(usize, Slices),
    /// Loading the view again, to see whether it changed meanwhile.
    Check(LoadMachine),
}

struct DumpMachine<'a, W> {
    name: String,
    keys: Keys,
    out: &'a mut W,
    records: u64,
    state: DumpState,
    view: Option<View>,
    targets: Vec<(u64, u32, String)>,
    summary: Option<Summary>,
}

impl<'a, W: Write> DumpMachine<'a, W> {
    fn new(name: &str, out: &'a mut W) -> Result<DumpMachine<'a, W>> {
        let keys = Keys::new(FilterName::new(name)?);
        Ok(DumpMachine {
            name: name.to_string(),
            state: DumpState::Load(LoadMachine::new(keys.clone(), crate::any::ACCEPT_ANY)),
            keys,
            out,
            records: 0,
            view: None,
            targets: Vec::new(),
            summary: None,
        })
    }

    fn raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(io("writing the dump"))
    }

    fn put(&mut self, r: Record) -> Result<()> {
        self.raw(&r.encode())?;
        self.records += 1;
        Ok(())
    }

    /// The header and metadata, and the blocks to read.
    fn begin(&mut self, view: View) -> Result<Poll<Summary>> {
        if view.gens.iter().any(|g| g.layout.scheme.is_module()) {
            return Err(Error::InvalidParameter {
                name: "backend",
                reason: format!(
                    "filter {:?} keeps its generations in RedisBloom keys, which a dump cannot read in slices; \
                     use BF.SCANDUMP and BF.LOADCHUNK",
                    self.name
                ),
            });
        }
        self.raw(&MAGIC)?;
        self.put(Record::Header {
            version: DUMP_VERSION,
            format: crate::FORMAT_VERSION,
            name: self.name.clone(),
        })?;
        let fields = view
            .fields
            .raw
            .iter()
            .map(|(k, v)| (k.clone().into_bytes(), v.clone()))
            .collect();
        self.put(Record::Meta(fields))?;
        self.targets = view
            .gens
            .iter()
            .flat_map(|g| (0..g.layout.blocks).map(move |b| (g.seq, b)))
            .map(|(seq, b)| (seq, b, self.keys.block(&view.uid, seq, b)))
            .collect();
        self.summary = Some(Summary::of(&self.name, &view));
        self.view = Some(view);
        self.block(0)
    }

    /// Block `i`'s length, or (past the last) the check.
    fn block(&mut self, i: usize) -> Result<Poll<Summary>> {
        match self.targets.get(i) {
            Some((_, _, key)) => {
                let req = one(redis::cmd("STRLEN").arg(key));
                self.state = DumpState::Len(i);
                Ok(Poll::Send(req))
            }
            None => {
                self.state =
                    DumpState::Check(LoadMachine::new(self.keys.clone(), crate::any::ACCEPT_ANY));
                self.step(None)
            }
        }
    }

    fn read(&mut self, i: usize, slices: Slices) -> Result<Poll<Summary>> {
        match slices.next() {
            Some(req) => {
                self.state = DumpState::Read(i, slices);
                Ok(Poll::Send(req))
            }
            None => self.block(i + 1),
        }
    }

    /// The bits read belong to the metadata read first only if no
    /// structural change or clear happened in between.
    fn finish(&mut self, now: View) -> Result<Poll<Summary>> {
        let first = self.view.as_ref().map(|v| v.token());
        if first != Some(now.token()) {
            return Err(changed(&self.name));
        }
        let summary = self
            .summary
            .take()
            .ok_or_else(|| Error::Internal("dump: no summary".into()))?;
        self.put(Record::End {
            records: self.records,
            data_bytes: summary.bytes,
        })?;
        self.out.flush().map_err(io("writing the dump"))?;
        Ok(Poll::Ready(summary))
    }
}

impl<W: Write> Machine for DumpMachine<'_, W> {
    type Output = Summary;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Summary>> {
        match std::mem::replace(&mut self.state, DumpState::Len(usize::MAX)) {
            DumpState::Load(mut load) => match load.step(replies)? {
                Poll::Send(req) => {
                    self.state = DumpState::Load(load);
                    Ok(Poll::Send(req))
                }
                Poll::Ready(view) => self.begin(view),
            },
            DumpState::Len(i) => {
                let len = int(replies, "STRLEN")?;
                let (seq, block, key) = self.targets[i].clone();
                self.put(Record::Block { seq, block, len })?;
                self.read(i, Slices::new(key, len))
            }
            DumpState::Read(i, mut slices) => match slices.take(replies)? {
                // The key changed length under the dump: only a structural
                // change or a clear does that.
                None => Err(changed(&self.name)),
                Some((offset, bytes)) => {
                    if !all_zero(&bytes) {
                        if let Some(s) = &mut self.summary {
                            s.bytes += bytes.len() as u64;
                        }
                        self.put(Record::Data { offset, bytes })?;
                    }
                    self.read(i, slices)
                }
            },
            DumpState::Check(mut check) => match check.step(replies)? {
                Poll::Send(req) => {
                    self.state = DumpState::Check(check);
                    Ok(Poll::Send(req))
                }
                Poll::Ready(now) => self.finish(now),
            },
        }
    }
}

enum RestoreState {
    /// Whether a filter has the name already.
    Exists,
    /// A block allocated or written.
    Wrote,
    /// The metadata and fence.
    Publish,
    /// Deleting what was written (`i` of them so far), then failing.
    Undo(usize, Option<Error>),
}

struct RestoreMachine<R> {
    reader: format::Reader<R>,
    name: FilterName,
    keys: Keys,
    view: View,
    state: RestoreState,
    /// Block keys written so far, deleted again on failure.
    written: Vec<String>,
    seen: BTreeSet<(u64, u32)>,
    /// The block being written: key, its length, the next offset allowed.
    current: Option<(String, u64, u64)>,
    data_bytes: u64,
}

impl<R: Read> RestoreMachine<R> {
    /// Reads and checks the header and the metadata, before any Redis.
    fn new(input: R, name: Option<&str>) -> Result<RestoreMachine<R>> {
        let mut reader = format::Reader::new(input);
        let dumped_name = match reader.next_record()? {
            Record::Header {
                version: DUMP_VERSION,
                format: crate::FORMAT_VERSION,
                name,
            } => name,
            Record::Header {
                version, format, ..
            } => {
                return Err(bad(format!(
                    "dump version {version} of storage format {format}; this library reads dump version \
                     {DUMP_VERSION} of format {}",
                    crate::FORMAT_VERSION
                )))
            }
            _ => return Err(bad("the first record is not the header")),
        };
        let name = FilterName::new(name.unwrap_or(&dumped_name))?;
        let keys = Keys::new(name.clone());
        let Record::Meta(fields) = reader.next_record()? else {
            return Err(bad("the second record is not the metadata"));
        };
        let mut raw = std::collections::BTreeMap::new();
        for (k, v) in fields {
            let k = String::from_utf8(k).map_err(|_| bad("a metadata field name is not UTF-8"))?;
            raw.insert(k, v);
        }
        // A new instance: its own uid, so that no key of another instance
        // is ever reused (docs/FORMAT.md §5).
        raw.insert("uid".into(), crate::uid::new_uid().into_bytes());
        let fields = Fields {
            name: name.to_string(),
            raw,
        };
        let view = View::decode(fields, None, &keys.fence(), crate::any::ACCEPT_ANY)
            .map_err(|e| bad(format!("its metadata is not valid: {e}")))?;
        if view.gens.iter().any(|g| g.layout.scheme.is_module()) {
            return Err(bad(
                "it lists RedisBloom generations, which a dump cannot hold",
            ));
        }
        Ok(RestoreMachine {
            reader,
            name,
            keys,
            view,
            state: RestoreState::Exists,
            written: Vec::new(),
            seen: BTreeSet::new(),
            current: None,
            data_bytes: 0,
        })
    }

    /// The next record's write, or the publication after the end record.
    fn next(&mut self) -> Result<Poll<Summary>> {
        loop {
            let before = self.reader.records;
            match self.reader.next_record()? {
                Record::Block { seq, block, len } => {
                    let key = self.block(seq, block, len)?;
                    self.current = Some((key.clone(), len, 0));
                    if len > 0 {
                        // Allocated whole first, as at creation: the data
                        // records then overwrite in place.
                        self.written.push(key.clone());
                        self.state = RestoreState::Wrote;
                        return Ok(Poll::Send(format::write_request(&key, len - 1, b"\0")));
                    }
                }
                Record::Data { offset, bytes } => {
                    let Some((key, len, next)) = &mut self.current else {
                        return Err(bad("data before any block"));
                    };
                    let end = offset.checked_add(bytes.len() as u64);
                    if offset < *next || end.is_none_or(|e| e > *len) || bytes.len() as u64 > CHUNK
                    {
                        return Err(bad(format!("data at offset {offset} is out of place")));
                    }
                    *next = offset + bytes.len() as u64;
                    self.data_bytes += bytes.len() as u64;
                    self.state = RestoreState::Wrote;
                    return Ok(Poll::Send(format::write_request(key, offset, &bytes)));
                }
                Record::End {
                    records,
                    data_bytes,
                } => {
                    self.end(before, records, data_bytes)?;
                    let fields: Vec<(Vec<u8>, Vec<u8>)> = self
                        .view
                        .fields
                        .raw
                        .iter()
                        .map(|(k, v)| (k.clone().into_bytes(), v.clone()))
                        .collect();
                    self.state = RestoreState::Publish;
                    return Ok(Poll::Send(format::publish_request(
                        &self.keys,
                        &self.view.token(),
                        &fields,
                    )));
                }
                Record::Header { .. } | Record::Meta(_) => {
                    return Err(bad("a second header or metadata record"));
                }
            }
        }
    }

    /// Checks a block record against the metadata; returns its key under
    /// the new uid.
    fn block(&mut self, seq: u64, block: u32, len: u64) -> Result<String> {
        let g = self
            .view
            .gens
            .iter()
            .find(|g| g.seq == seq)
            .ok_or_else(|| {
                bad(format!(
                    "a block of generation {seq}, which the metadata does not list"
                ))
            })?;
        let full = g.layout.block_bits().div_ceil(8);
        let exact = g.layout.scheme.always_allocated();
        if block >= g.layout.blocks || !self.seen.insert((seq, block)) {
            return Err(bad(format!(
                "block {block} of generation {seq} is out of place"
            )));
        }
        if len > full || (exact && len != full) {
            return Err(bad(format!(
                "block {block} of generation {seq} holds {len} bytes; its generation's blocks hold {full}"
            )));
        }
        Ok(self.keys.block(&self.view.uid, seq, block))
    }

    /// Checks the end record against what was read.
    fn end(&self, before: u64, records: u64, total: u64) -> Result<()> {
        if records != before || total != self.data_bytes {
            return Err(bad(format!(
                "the end record counts {records} records and {total} bytes; the file has {before} and {}",
                self.data_bytes
            )));
        }
        let listed: u64 = self
            .view
            .gens
            .iter()
            .map(|g| u64::from(g.layout.blocks))
            .sum();
        if self.seen.len() as u64 != listed {
            return Err(bad(format!(
                "it holds {} of the {listed} blocks its metadata lists",
                self.seen.len()
            )));
        }
        Ok(())
    }

    /// Fails with `e` once what was written is deleted again, one key per
    /// call. A refusal for memory is OutOfMemory with the filter's size,
    /// as at creation.
    fn fail(&mut self, e: Error) -> Result<Poll<Summary>> {
        let size = self
            .view
            .gens
            .iter()
            .map(|g| g.layout.bytes())
            .fold(0, u64::saturating_add);
        let e = crate::engine::create::out_of_memory(self.name.as_str(), size, e);
        self.undo(0, Some(e))
    }

    fn undo(&mut self, i: usize, e: Option<Error>) -> Result<Poll<Summary>> {
        match self.written.get(i) {
            Some(key) => {
                let req = one(redis::cmd("UNLINK").arg(key));
                self.state = RestoreState::Undo(i + 1, e);
                Ok(Poll::Send(req))
            }
            None => Err(e.unwrap_or_else(|| Error::Internal("restore: no error to report".into()))),
        }
    }
}

impl<R: Read> Machine for RestoreMachine<R> {
    type Output = Summary;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Summary>> {
        let state = std::mem::replace(&mut self.state, RestoreState::Publish);
        let result = match state {
            RestoreState::Exists if replies.is_none() => {
                self.state = RestoreState::Exists;
                return Ok(Poll::Send(one(redis::cmd("EXISTS").arg(self.keys.meta()))));
            }
            RestoreState::Exists => match int(replies, "EXISTS")? {
                0 => self.next(),
                _ => {
                    return Err(Error::AlreadyExists {
                        name: self.name.to_string(),
                    })
                }
            },
            RestoreState::Wrote => take_one(replies)
                .and_then(|r| Ok(r?))
                .and_then(|_| self.next()),
            RestoreState::Publish => {
                match format::decode_publish(self.name.as_str(), take_one(replies)?) {
                    Ok(true) => {
                        let mut s = Summary::of(self.name.as_str(), &self.view);
                        s.bytes = self.data_bytes;
                        return Ok(Poll::Ready(s));
                    }
                    Ok(false) => Err(Error::AlreadyExists {
                        name: self.name.to_string(),
                    }),
                    Err(e) => Err(e),
                }
            }
            RestoreState::Undo(i, e) => return self.undo(i, e),
        };
        result.or_else(|e| self.fail(e))
    }
}

/// [`copy_string`]: the target must not exist; the source's length, the
/// target allocated whole, then the slices that are not all zeros.
struct CopyMachine {
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
    fn new(from: &str, to: &str) -> CopyMachine {
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
                Ok(Poll::Send(one(redis::cmd("EXISTS").arg(&self.to))))
            }
            CopyState::Exists => {
                if int(replies, "EXISTS")? != 0 {
                    return Err(Error::InvalidParameter {
                        name: "key",
                        reason: format!("{:?} exists already", self.to),
                    });
                }
                self.state = CopyState::Len;
                Ok(Poll::Send(one(redis::cmd("STRLEN").arg(&self.from))))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A dump of the test fixture's one-generation bloom filter (1000
    /// bits: one block of 125 bytes), without its end record.
    fn truncated_dump() -> Vec<u8> {
        let fields = crate::testkit::fields("bloom", 1, 0);
        let mut file = MAGIC.to_vec();
        for r in [
            Record::Header {
                version: DUMP_VERSION,
                format: crate::FORMAT_VERSION,
                name: "t".into(),
            },
            Record::Meta(
                fields
                    .raw
                    .into_iter()
                    .map(|(k, v)| (k.into_bytes(), v))
                    .collect(),
            ),
            Record::Block {
                seq: 0,
                block: 0,
                len: 125,
            },
            Record::Data {
                offset: 3,
                bytes: vec![0xff],
            },
        ] {
            file.extend(r.encode());
        }
        file
    }

    fn command(req: &Request) -> Vec<String> {
        assert_eq!(req.len(), 1, "one command per round trip");
        req.args(0)
    }

    fn send(p: Poll<Summary>) -> Vec<String> {
        match p {
            Poll::Send(req) => command(&req),
            Poll::Ready(s) => panic!("done early: {s:?}"),
        }
    }

    fn ok(v: Value) -> Option<Replies> {
        Some(vec![Ok(v)])
    }

    #[test]
    fn a_truncated_restore_deletes_what_it_wrote() {
        let file = truncated_dump();
        let mut m = RestoreMachine::new(&file[..], Some("copy")).unwrap();
        assert_eq!(
            send(m.step(None).unwrap()),
            ["EXISTS", "rotabloom:{copy}:meta"]
        );
        let alloc = send(m.step(ok(Value::Int(0))).unwrap());
        assert_eq!(alloc[0], "SETRANGE");
        assert_eq!(&alloc[2..], ["124", "\0"]);
        let key = alloc[1].clone();
        assert!(
            key.starts_with("rotabloom:{copy}:gen:") && key.ends_with("-0:0"),
            "{key}"
        );
        assert!(
            !key.contains("0123456789abcdef"),
            "a fresh uid, not the dumped one"
        );
        let data = send(m.step(ok(Value::Int(125))).unwrap());
        assert_eq!(data[..3], ["SETRANGE".to_string(), key.clone(), "3".into()]);
        // The file ends there: the block is deleted, then the error.
        let undo = send(m.step(ok(Value::Int(125))).unwrap());
        assert_eq!(undo, ["UNLINK".to_string(), key]);
        let e = m.step(ok(Value::Int(1))).err();
        assert!(matches!(e, Some(Error::BadDump { .. })), "{e:?}");
    }

    #[test]
    fn an_existing_filter_is_never_overwritten() {
        let file = truncated_dump();
        let mut m = RestoreMachine::new(&file[..], None).unwrap();
        assert_eq!(
            send(m.step(None).unwrap()),
            ["EXISTS", "rotabloom:{t}:meta"]
        );
        let e = m.step(ok(Value::Int(1))).err();
        assert!(matches!(e, Some(Error::AlreadyExists { .. })), "{e:?}");
    }
}
