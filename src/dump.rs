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
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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
/// one write of at most 1 MiB per round trip, each block with a time to
/// live (the lease, [`DEFAULT_LEASE`]) renewed as the restore goes on;
/// then the metadata and fence in one atomic step that makes the blocks
/// permanent, so no reader ever sees a half-restored filter, and a
/// restore that dies leaves nothing that outlives its lease
/// (docs/FORMAT.md §10.3). A filter of that name is never overwritten
/// ([`Error::AlreadyExists`]); a damaged or truncated file, or bytes after
/// its end record, are [`Error::BadDump`]; a write the server refuses for
/// memory is [`Error::OutOfMemory`]. Before it reports an error, it
/// deletes what it wrote (when the connection itself fails, the blocks
/// expire with their lease). See [`restore_with`] to cancel it.
pub fn restore<C: redis::ConnectionLike + ?Sized, R: Read>(
    conn: &mut C,
    input: R,
    name: Option<&str>,
) -> Result<Summary> {
    restore_with(conn, input, RestoreOptions::new().name(name))
}

/// [`restore`] with options: a flag that cancels it between two round
/// trips ([`Error::Cancelled`], after deleting what it wrote), and the
/// lease of its blocks.
///
/// ```no_run
/// use std::sync::atomic::AtomicBool;
/// use rotabloom::dump::{restore_with, RestoreOptions};
/// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
/// let stop = AtomicBool::new(false); // set from another thread to cancel
/// let file = std::fs::File::open("crawl.rbdump")?;
/// let options = RestoreOptions::new().name(Some("crawl-copy")).cancel_on(&stop);
/// restore_with(&mut conn, file, options)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn restore_with<C: redis::ConnectionLike + ?Sized, R: Read>(
    conn: &mut C,
    input: R,
    options: RestoreOptions<'_>,
) -> Result<Summary> {
    exec::run(conn, RestoreMachine::new(input, options)?, None)
}

#[cfg(feature = "async")]
/// Async [`restore`] (the reads from `input` block).
pub async fn restore_async<C: redis::aio::ConnectionLike + Send, R: Read + Send>(
    conn: &mut C,
    input: R,
    name: Option<&str>,
) -> Result<Summary> {
    restore_with_async(conn, input, RestoreOptions::new().name(name)).await
}

#[cfg(feature = "async")]
/// Async [`restore_with`] (the reads from `input` block).
pub async fn restore_with_async<C: redis::aio::ConnectionLike + Send, R: Read + Send>(
    conn: &mut C,
    input: R,
    options: RestoreOptions<'_>,
) -> Result<Summary> {
    exec::run_async(conn, RestoreMachine::new(input, options)?, None).await
}

/// How long the blocks of a restore in progress live unless renewed: a
/// restore that dies (killed, its connection lost) leaves them for at
/// most this long. Renewed every third of it, so only a pause of two
/// thirds of it between two steps (an input that stalls) loses them, and
/// then the restore fails ([`Error::RestoreExpired`]) rather than publish
/// a filter with holes.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15 * 60);

/// The shortest lease [`RestoreOptions::lease`] takes.
pub const MIN_LEASE: Duration = Duration::from_secs(1);

/// Options of [`restore_with`].
///
/// ```
/// use rotabloom::dump::RestoreOptions;
/// let o = RestoreOptions::new().name(Some("copy")).lease(std::time::Duration::from_secs(60));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct RestoreOptions<'a> {
    name: Option<&'a str>,
    cancel: Option<&'a AtomicBool>,
    lease: Duration,
}

impl Default for RestoreOptions<'_> {
    fn default() -> Self {
        RestoreOptions::new()
    }
}

impl<'a> RestoreOptions<'a> {
    /// The dumped name, no cancel flag, [`DEFAULT_LEASE`].
    pub fn new() -> RestoreOptions<'a> {
        RestoreOptions {
            name: None,
            cancel: None,
            lease: DEFAULT_LEASE,
        }
    }

    /// The name to restore as (`None`: the dumped filter's).
    pub fn name(mut self, name: Option<&'a str>) -> RestoreOptions<'a> {
        self.name = name;
        self
    }

    /// Cancels the restore once `flag` is true: it stops before its next
    /// write, deletes what it wrote and fails with [`Error::Cancelled`].
    /// A restore already published stays. Set it from a signal handler or
    /// another thread; an input that blocks a read is the caller's to
    /// interrupt (the `rotabloom` CLI reads it on a thread of its own).
    pub fn cancel_on(mut self, flag: &'a AtomicBool) -> RestoreOptions<'a> {
        self.cancel = Some(flag);
        self
    }

    /// The time to live of the blocks until the restore publishes them
    /// (at least [`MIN_LEASE`]; default [`DEFAULT_LEASE`]).
    pub fn lease(mut self, lease: Duration) -> RestoreOptions<'a> {
        self.lease = lease;
        self
    }
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
        if view.gens.iter().any(|g| !g.layout.store().dumpable()) {
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
    /// The lease of every block written renewed.
    Renewed,
    /// The metadata and fence.
    Publish,
    /// Deleting what was written (`i` of them so far), then failing.
    Undo(usize, Option<Error>),
}

// Why a lease rather than keys that `list` and `drop` would find: the
// blocks of an unfinished restore belong to no filter (a filter of that
// name may exist, or be created meanwhile, and its `drop` must not take
// them), and a restore killed with SIGKILL or cut off from the server
// runs no undo. A time to live set in the same atomic step as every write
// (src/lua/restore_write.lua) needs nobody to come back: the server
// deletes them. The publish step (src/lua/restore.lua) removes it from
// every block in the step that writes the metadata naming them.

struct RestoreMachine<'a, R> {
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
    cancel: Option<&'a AtomicBool>,
    lease: Duration,
    /// When the leases were last renewed (or the restore began).
    renewed: Instant,
}

impl<'a, R: Read> RestoreMachine<'a, R> {
    /// Reads and checks the header and the metadata, before any Redis.
    fn new(input: R, options: RestoreOptions<'a>) -> Result<RestoreMachine<'a, R>> {
        if options.lease < MIN_LEASE {
            return Err(Error::InvalidParameter {
                name: "lease",
                reason: format!(
                    "{} ms is shorter than the {} s a restore's blocks must live between two steps",
                    options.lease.as_millis(),
                    MIN_LEASE.as_secs()
                ),
            });
        }
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
        let name = FilterName::new(options.name.unwrap_or(&dumped_name))?;
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
        if view.gens.iter().any(|g| !g.layout.store().dumpable()) {
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
            cancel: options.cancel,
            lease: options.lease,
            renewed: Instant::now(),
        })
    }

    fn lease_ms(&self) -> u64 {
        u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX)
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::SeqCst))
    }

    fn expired(&self, keys: Vec<String>) -> Error {
        Error::RestoreExpired {
            name: self.name.to_string(),
            keys,
            lease_secs: self.lease.as_secs(),
        }
    }

    /// The next record's write, or the publication after the end record.
    fn next(&mut self) -> Result<Poll<Summary>> {
        let lease = self.lease_ms();
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
                        return Ok(Poll::Send(format::restore_write_request(
                            &key,
                            true,
                            len - 1,
                            b"\0",
                            lease,
                        )));
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
                    return Ok(Poll::Send(format::restore_write_request(
                        key, false, offset, &bytes, lease,
                    )));
                }
                Record::End {
                    records,
                    data_bytes,
                } => {
                    self.end(before, records, data_bytes)?;
                    self.reader.expect_end()?;
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
                        &self.written,
                    )));
                }
                Record::Header { .. } | Record::Meta(_) => {
                    return Err(bad("a second header or metadata record"));
                }
            }
        }
    }

    /// After a write: the leases of all blocks renewed when a third of
    /// the lease has passed (each write renews its own block's), else the
    /// next record.
    fn renew_or_next(&mut self) -> Result<Poll<Summary>> {
        if !self.written.is_empty() && self.renewed.elapsed() >= self.lease / 3 {
            self.renewed = Instant::now();
            self.state = RestoreState::Renewed;
            return Ok(Poll::Send(format::refresh_request(
                &self.written,
                self.lease_ms(),
            )));
        }
        self.next()
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
        let exact = g.layout.block_check() != crate::generation::BlockCheck::MayBeAbsent;
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
    /// as at creation; any error once the flag is set (the input's read
    /// cut short by the canceller, say) is the cancellation.
    fn fail(&mut self, e: Error) -> Result<Poll<Summary>> {
        let e = if self.cancelled() {
            Error::Cancelled {
                name: self.name.to_string(),
            }
        } else {
            let size = self
                .view
                .gens
                .iter()
                .map(|g| g.layout.bytes())
                .fold(0, u64::saturating_add);
            crate::engine::create::out_of_memory(self.name.as_str(), size, e)
        };
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

impl<R: Read> Machine for RestoreMachine<'_, R> {
    type Output = Summary;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Summary>> {
        let state = std::mem::replace(&mut self.state, RestoreState::Publish);
        // A cancelled restore stops before its next write, whatever the
        // reply; the publish step's reply and an undo run to their end.
        if self.cancelled()
            && matches!(
                state,
                RestoreState::Exists | RestoreState::Wrote | RestoreState::Renewed
            )
        {
            return self.fail(Error::Internal("cancelled".into()));
        }
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
                .and_then(format::decode_restore_write)
                .and_then(|wrote| match wrote {
                    format::Wrote::Len(_) => self.renew_or_next(),
                    format::Wrote::Gone => {
                        let key = self.current.as_ref().map(|c| c.0.clone());
                        Err(self.expired(key.into_iter().collect()))
                    }
                    format::Wrote::Exists => Err(Error::Internal(
                        "a block key of the restore's fresh uid exists already".into(),
                    )),
                }),
            RestoreState::Renewed => replies
                .ok_or_else(|| Error::Internal("a request's reply is missing".into()))
                .and_then(|r| format::decode_refresh(&self.written, r))
                .and_then(|gone| match gone.is_empty() {
                    true => self.next(),
                    false => Err(self.expired(gone)),
                }),
            RestoreState::Publish => {
                match format::decode_publish(self.name.as_str(), take_one(replies)?) {
                    Ok(format::Published::Done) => {
                        let mut s = Summary::of(self.name.as_str(), &self.view);
                        s.bytes = self.data_bytes;
                        return Ok(Poll::Ready(s));
                    }
                    Ok(format::Published::Exists) => Err(Error::AlreadyExists {
                        name: self.name.to_string(),
                    }),
                    Ok(format::Published::Gone(keys)) => Err(self.expired(keys)),
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

    /// The same dump, whole: with its end record.
    fn whole_dump() -> Vec<u8> {
        let mut file = truncated_dump();
        file.extend(
            Record::End {
                records: 4,
                data_bytes: 1,
            }
            .encode(),
        );
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

    fn machine<'a>(file: &'a [u8], options: RestoreOptions<'a>) -> RestoreMachine<'a, &'a [u8]> {
        RestoreMachine::new(file, options).unwrap()
    }

    /// Steps through the existence check and the block's allocation;
    /// returns the block's key.
    fn allocate(m: &mut RestoreMachine<'_, &[u8]>) -> String {
        assert_eq!(
            send(m.step(None).unwrap()),
            ["EXISTS", "rotabloom:{copy}:meta"]
        );
        let alloc = send(m.step(ok(Value::Int(0))).unwrap());
        assert_eq!(alloc[0], "EVALSHA");
        assert_eq!(alloc[1], crate::scripts::RESTORE_WRITE.sha());
        // One key, allocated at its full length, with the lease in ms.
        assert_eq!(alloc[2], "1");
        assert_eq!(&alloc[4..], ["NEW", "124", "\0", "900000"]);
        alloc[3].clone()
    }

    #[test]
    fn a_truncated_restore_deletes_what_it_wrote() {
        let file = truncated_dump();
        let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
        let key = allocate(&mut m);
        assert!(
            key.starts_with("rotabloom:{copy}:gen:") && key.ends_with("-0:0"),
            "{key}"
        );
        assert!(
            !key.contains("0123456789abcdef"),
            "a fresh uid, not the dumped one"
        );
        let data = send(m.step(ok(Value::Int(125))).unwrap());
        assert_eq!(data[3..6], [key.clone(), "MORE".into(), "3".into()]);
        // The file ends there: the block is deleted, then the error.
        let undo = send(m.step(ok(Value::Int(125))).unwrap());
        assert_eq!(undo, ["UNLINK".to_string(), key]);
        let e = m.step(ok(Value::Int(1))).err();
        assert!(matches!(e, Some(Error::BadDump { .. })), "{e:?}");
    }

    #[test]
    fn the_publish_step_names_every_block_written() {
        let file = whole_dump();
        let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
        let key = allocate(&mut m);
        send(m.step(ok(Value::Int(125))).unwrap());
        let publish = send(m.step(ok(Value::Int(125))).unwrap());
        assert_eq!(publish[1], crate::scripts::RESTORE.sha());
        assert_eq!(
            publish[2..6],
            ["3", "rotabloom:{copy}:meta", "rotabloom:{copy}:fence", &key]
        );
        let gone = Value::Array(vec![
            Value::BulkString(b"GONE".to_vec()),
            Value::BulkString(key.clone().into_bytes()),
        ]);
        // The block expired before it: undone, and said.
        let undo = send(m.step(ok(gone)).unwrap());
        assert_eq!(undo, ["UNLINK".to_string(), key.clone()]);
        let e = m.step(ok(Value::Int(0))).err();
        assert!(
            matches!(&e, Some(Error::RestoreExpired { keys, lease_secs: 900, .. }) if keys == &[key]),
            "{e:?}"
        );
    }

    #[test]
    fn bytes_after_the_end_record_restore_nothing() {
        let mut file = whole_dump();
        file.push(b'\n');
        let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
        let key = allocate(&mut m);
        send(m.step(ok(Value::Int(125))).unwrap());
        // No publish: the block is deleted, then the error.
        let undo = send(m.step(ok(Value::Int(125))).unwrap());
        assert_eq!(undo, ["UNLINK".to_string(), key]);
        let e = m.step(ok(Value::Int(1))).err();
        assert!(
            matches!(&e, Some(Error::BadDump { reason }) if reason.contains("follow the end record")),
            "{e:?}"
        );
    }

    #[test]
    fn a_cancelled_restore_stops_before_its_next_write_and_undoes() {
        let file = whole_dump();
        let stop = AtomicBool::new(false);
        let options = RestoreOptions::new().name(Some("copy")).cancel_on(&stop);
        let mut m = machine(&file, options);
        let key = allocate(&mut m);
        stop.store(true, Ordering::SeqCst);
        let undo = send(m.step(ok(Value::Int(125))).unwrap());
        assert_eq!(undo, ["UNLINK".to_string(), key]);
        let e = m.step(ok(Value::Int(1))).err();
        assert!(matches!(e, Some(Error::Cancelled { .. })), "{e:?}");

        // Cancelled before anything: nothing sent at all.
        let mut m = machine(&file, options);
        let e = m.step(None).err();
        assert!(matches!(e, Some(Error::Cancelled { .. })), "{e:?}");
    }

    #[test]
    fn leases_are_renewed_and_a_vanished_block_fails_the_restore() {
        let file = whole_dump();
        let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
        // A lease of 0: every write is followed by the renewal.
        m.lease = Duration::ZERO;
        assert_eq!(send(m.step(None).unwrap())[0], "EXISTS");
        let key = send(m.step(ok(Value::Int(0))).unwrap())[3].clone();
        let renew = send(m.step(ok(Value::Int(125))).unwrap());
        assert_eq!(renew, ["PEXPIRE".to_string(), key.clone(), "0".into()]);
        // PEXPIRE found no key: it expired, the restore fails.
        let undo = send(m.step(ok(Value::Int(0))).unwrap());
        assert_eq!(undo, ["UNLINK".to_string(), key.clone()]);
        let e = m.step(ok(Value::Int(0))).err();
        assert!(matches!(e, Some(Error::RestoreExpired { .. })), "{e:?}");

        // A data write that finds its block gone fails it too.
        let mut m = machine(&file, RestoreOptions::new().name(Some("copy")));
        let key = allocate(&mut m);
        send(m.step(ok(Value::Int(125))).unwrap());
        let undo = send(m.step(ok(Value::SimpleString("GONE".into()))).unwrap());
        assert_eq!(undo, ["UNLINK".to_string(), key]);
        let e = m.step(ok(Value::Int(0))).err();
        assert!(matches!(e, Some(Error::RestoreExpired { .. })), "{e:?}");
    }

    #[test]
    fn a_lease_under_a_second_is_refused() {
        let file = whole_dump();
        let options = RestoreOptions::new().lease(Duration::from_millis(999));
        let e = RestoreMachine::new(&file[..], options).err();
        assert!(
            matches!(e, Some(Error::InvalidParameter { name: "lease", .. })),
            "{e:?}"
        );
    }

    #[test]
    fn an_existing_filter_is_never_overwritten() {
        let file = truncated_dump();
        let mut m = machine(&file, RestoreOptions::new());
        assert_eq!(
            send(m.step(None).unwrap()),
            ["EXISTS", "rotabloom:{t}:meta"]
        );
        let e = m.step(ok(Value::Int(1))).err();
        assert!(matches!(e, Some(Error::AlreadyExists { .. })), "{e:?}");
    }
}
