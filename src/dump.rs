//! Dump and restore: a filter's metadata and bits in a versioned,
//! checksummed file (docs/FORMAT.md §10), read and written in steps of at
//! most 1 MiB so that the server is never held for long, and restorable
//! into another server, under another name, or into a Redis Cluster.
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
use crate::view::View;
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

/// One request, its replies returned as they are.
struct Once(Option<Request>);

impl Machine for Once {
    type Output = Replies;
    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Replies>> {
        Ok(match self.0.take() {
            Some(req) => Poll::Send(req),
            None => Poll::Ready(replies.unwrap_or_default()),
        })
    }
}

fn one<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    req: Request,
) -> Result<redis::RedisResult<redis::Value>> {
    crate::proto::take_one(Some(exec::run(conn, Once(Some(req)))?))
}

fn io(what: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        what: what.to_string(),
        source,
    }
}

fn load<C: redis::ConnectionLike + ?Sized>(conn: &mut C, keys: &Keys) -> Result<View> {
    exec::run(conn, LoadMachine::new(keys.clone(), crate::any::ACCEPT_ANY))
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
    let keys = Keys::new(FilterName::new(name)?);
    let view = load(conn, &keys)?;
    if view.gens.iter().any(|g| g.layout.scheme.is_module()) {
        return Err(Error::InvalidParameter {
            name: "backend",
            reason: format!(
                "filter {name:?} keeps its generations in RedisBloom keys, which a dump cannot read in slices; \
                 use BF.SCANDUMP and BF.LOADCHUNK"
            ),
        });
    }
    let mut summary = Summary::of(name, &view);
    let mut out = Sink { out, records: 0 };
    out.raw(&MAGIC)?;
    out.put(Record::Header {
        version: DUMP_VERSION,
        format: crate::FORMAT_VERSION,
        name: name.to_string(),
    })?;
    let fields = view
        .fields
        .raw
        .iter()
        .map(|(k, v)| (k.clone().into_bytes(), v.clone()))
        .collect();
    out.put(Record::Meta(fields))?;
    for g in &view.gens {
        for b in 0..g.layout.blocks {
            let key = keys.block(&view.uid, g.seq, b);
            let len = strlen(conn, &key)?;
            out.put(Record::Block {
                seq: g.seq,
                block: b,
                len,
            })?;
            let complete = read_slices(conn, &key, len, |_, offset, bytes| {
                summary.bytes += bytes.len() as u64;
                out.put(Record::Data { offset, bytes })
            })?;
            if !complete {
                // The key changed length under the dump: only a
                // structural change or a clear does that.
                return Err(changed(name));
            }
        }
    }
    // The bits read belong to the metadata read first only if no
    // structural change or clear happened in between.
    let now = load(conn, &keys)?;
    if now.token() != view.token() {
        return Err(changed(name));
    }
    out.put(Record::End {
        records: out.records,
        data_bytes: summary.bytes,
    })?;
    out.out.flush().map_err(io("writing the dump"))?;
    Ok(summary)
}

/// The dump file being written, and how many records it holds.
struct Sink<'a, W> {
    out: &'a mut W,
    records: u64,
}

impl<W: Write> Sink<'_, W> {
    fn raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(io("writing the dump"))
    }

    fn put(&mut self, r: Record) -> Result<()> {
        self.raw(&r.encode())?;
        self.records += 1;
        Ok(())
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
    if one(
        conn,
        Request::new().cmd(redis::cmd("EXISTS").arg(to).clone()),
    )?? == redis::Value::Int(1)
    {
        return Err(Error::InvalidParameter {
            name: "key",
            reason: format!("{to:?} exists already"),
        });
    }
    let len = strlen(conn, from)?;
    if len == 0 {
        return Ok(0);
    }
    one(conn, format::write_request(to, len - 1, b"\0"))??;
    read_slices(conn, from, len, |conn, offset, bytes| {
        one(conn, format::write_request(to, offset, &bytes))??;
        Ok(())
    })?;
    Ok(len)
}

fn strlen<C: redis::ConnectionLike + ?Sized>(conn: &mut C, key: &str) -> Result<u64> {
    match one(
        conn,
        Request::new().cmd(redis::cmd("STRLEN").arg(key).clone()),
    )?? {
        redis::Value::Int(n) => Ok(u64::try_from(n).unwrap_or(0)),
        v => Err(crate::proto::unexpected("STRLEN", &v)),
    }
}

/// Reads the `len` bytes of `key` 1 MiB per round trip, handing each
/// slice that is not all zeros to `each` with the connection and its
/// offset. `false` when the
/// key turned out shorter than `len`.
fn read_slices<C: redis::ConnectionLike + ?Sized>(
    conn: &mut C,
    key: &str,
    len: u64,
    mut each: impl FnMut(&mut C, u64, Vec<u8>) -> Result<()>,
) -> Result<bool> {
    let mut offset = 0;
    while offset < len {
        let want = CHUNK.min(len - offset);
        let bytes = format::decode_bytes(one(conn, format::read_request(key, offset, want))??)?;
        if bytes.len() as u64 != want {
            return Ok(false);
        }
        if bytes.iter().any(|&x| x != 0) {
            each(conn, offset, bytes)?;
        }
        offset += want;
    }
    Ok(true)
}

fn changed(name: &str) -> Error {
    Error::Contention {
        name: name.to_string(),
        retries: 1,
    }
}

/// What a restore has written so far, deleted again if it fails.
struct Written(Vec<String>);

impl Written {
    fn undo<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) {
        // One key per call: UNLINK frees a big string in the background,
        // but each call still holds the server a little.
        for k in &self.0 {
            let _ = one(
                conn,
                Request::new().cmd(redis::cmd("UNLINK").arg(k).clone()),
            );
        }
    }
}

/// Restores a dump read from `input` as filter `name` (default: the
/// dumped filter's name), under a fresh instance id: every block first,
/// one `SETRANGE` of at most 1 MiB per round trip, then the metadata and
/// fence in one atomic step, so no reader ever sees a half-restored
/// filter. A filter of that name is never overwritten
/// ([`Error::AlreadyExists`]); a damaged or truncated file is
/// [`Error::BadDump`]. Either way, nothing is left behind.
pub fn restore<C: redis::ConnectionLike + ?Sized, R: Read>(
    conn: &mut C,
    input: R,
    name: Option<&str>,
) -> Result<Summary> {
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
    let uid = crate::uid::new_uid();
    let mut raw = std::collections::BTreeMap::new();
    for (k, v) in fields {
        let k = String::from_utf8(k).map_err(|_| bad("a metadata field name is not UTF-8"))?;
        raw.insert(k, v);
    }
    raw.insert("uid".into(), uid.clone().into_bytes());
    let view = View::decode(
        Fields {
            name: name.to_string(),
            raw,
        },
        None,
        &keys.fence(),
        crate::any::ACCEPT_ANY,
    )
    .map_err(|e| bad(format!("its metadata is not valid: {e}")))?;
    if view.gens.iter().any(|g| g.layout.scheme.is_module()) {
        return Err(bad(
            "it lists RedisBloom generations, which a dump cannot hold",
        ));
    }
    let exists = one(
        conn,
        Request::new().cmd(redis::cmd("EXISTS").arg(keys.meta()).clone()),
    )??;
    if exists == redis::Value::Int(1) {
        return Err(Error::AlreadyExists {
            name: name.to_string(),
        });
    }
    let mut written = Written(Vec::new());
    // A write the server refuses for memory is OutOfMemory with the size
    // of the whole filter, as at creation.
    let size = view
        .gens
        .iter()
        .map(|g| g.layout.bytes())
        .fold(0, u64::saturating_add);
    let result = restore_blocks(conn, &mut reader, &keys, &view, &mut written)
        .map_err(|e| crate::engine::create::out_of_memory(name.as_str(), size, e))
        .and_then(|bytes| {
            let fields: Vec<(Vec<u8>, Vec<u8>)> = view
                .fields
                .raw
                .iter()
                .map(|(k, v)| (k.clone().into_bytes(), v.clone()))
                .collect();
            let req = format::publish_request(&keys, &view.token(), &fields);
            if format::decode_publish(name.as_str(), one(conn, req)?)? {
                Ok(bytes)
            } else {
                Err(Error::AlreadyExists {
                    name: name.to_string(),
                })
            }
        });
    match result {
        Ok(bytes) => {
            let mut s = Summary::of(name.as_str(), &view);
            s.bytes = bytes;
            Ok(s)
        }
        Err(e) => {
            written.undo(conn);
            Err(e)
        }
    }
}

fn bad(reason: impl Into<String>) -> Error {
    Error::BadDump {
        reason: reason.into(),
    }
}

/// The block records up to the end record, each written under the new
/// instance's keys; returns the data bytes.
fn restore_blocks<C: redis::ConnectionLike + ?Sized, R: Read>(
    conn: &mut C,
    reader: &mut format::Reader<R>,
    keys: &Keys,
    view: &View,
    written: &mut Written,
) -> Result<u64> {
    let mut seen = BTreeSet::new();
    // The block being written: key, its length, the next offset allowed.
    let mut current: Option<(String, u64, u64)> = None;
    let mut data_bytes = 0u64;
    loop {
        let before = reader.records;
        match reader.next_record()? {
            Record::Block { seq, block, len } => {
                let g = view.gens.iter().find(|g| g.seq == seq).ok_or_else(|| {
                    bad(format!(
                        "a block of generation {seq}, which the metadata does not list"
                    ))
                })?;
                let full = g.layout.block_bits().div_ceil(8);
                let exact = g.layout.scheme.always_allocated();
                if block >= g.layout.blocks || !seen.insert((seq, block)) {
                    return Err(bad(format!(
                        "block {block} of generation {seq} is out of place"
                    )));
                }
                if len > full || (exact && len != full) {
                    return Err(bad(format!(
                        "block {block} of generation {seq} holds {len} bytes; its generation's blocks hold {full}"
                    )));
                }
                let key = keys.block(&view.uid, seq, block);
                if len > 0 {
                    // Allocated whole first, as at creation: the data
                    // records then overwrite in place.
                    written.0.push(key.clone());
                    one(conn, format::write_request(&key, len - 1, b"\0"))??;
                }
                current = Some((key, len, 0));
            }
            Record::Data { offset, bytes } => {
                let Some((key, len, next)) = &mut current else {
                    return Err(bad("data before any block"));
                };
                let end = offset.checked_add(bytes.len() as u64);
                if offset < *next || end.is_none_or(|e| e > *len) || bytes.len() as u64 > CHUNK {
                    return Err(bad(format!("data at offset {offset} is out of place")));
                }
                one(conn, format::write_request(key, offset, &bytes))??;
                *next = offset + bytes.len() as u64;
                data_bytes += bytes.len() as u64;
            }
            Record::End {
                records,
                data_bytes: total,
            } => {
                if records != before || total != data_bytes {
                    return Err(bad(format!(
                        "the end record counts {records} records and {total} bytes; the file has {before} and {data_bytes}"
                    )));
                }
                let listed: u64 = view.gens.iter().map(|g| u64::from(g.layout.blocks)).sum();
                if seen.len() as u64 != listed {
                    return Err(bad(format!(
                        "it holds {} of the {listed} blocks its metadata lists",
                        seen.len()
                    )));
                }
                return Ok(data_bytes);
            }
            Record::Header { .. } | Record::Meta(_) => {
                return Err(bad("a second header or metadata record"));
            }
        }
    }
}
