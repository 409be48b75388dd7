//! Dumping a sharded filter (docs/FORMAT.md §11.7): the root's figures,
//! then every shard's own dump of §10 in chunks, then the end record. One
//! machine, which runs the ordinary dump's machine once per shard, driven
//! by the blocking and the async dump alike; the restore is `restore`'s.

use crate::engine::dump::summary::Summary;
use crate::engine::dump::write::DumpMachine;
use crate::error::{Error, Result};
use crate::keys::{FilterName, Keys};
use crate::machine::{Machine, Poll};
use crate::proto::dump::{Frame, CHUNK, SHARDED_DUMP_VERSION, SHARDED_MAGIC};
use crate::proto::shard::root::Root;
use crate::proto::shard::script;
use crate::request::Replies;
use std::io::Write;

fn written(source: std::io::Error) -> Error {
    Error::Io {
        what: "writing the dump".into(),
        source,
    }
}

/// Adds `s` into `total` (the whole filter's summary).
pub(super) fn add(total: &mut Summary, s: &Summary) {
    total.generations += s.generations;
    total.blocks = total.blocks.saturating_add(s.blocks);
    total.bytes = total.bytes.saturating_add(s.bytes);
    total.items = total.items.saturating_add(s.items);
}

/// The whole filter's summary before any shard is added.
pub(super) fn empty(name: &str, kind: crate::metadata::Kind) -> Summary {
    Summary {
        name: name.to_string(),
        kind,
        generations: 0,
        blocks: 0,
        bytes: 0,
        items: 0,
    }
}

/// Writes the records of the file to `out`, counting them.
struct Records<W> {
    out: W,
    records: u64,
}

impl<W: Write> Records<W> {
    fn put(&mut self, f: &Frame) -> Result<()> {
        self.out.write_all(&f.encode()).map_err(written)?;
        self.records += 1;
        Ok(())
    }
}

/// A shard's dump as `C` records of at most [`CHUNK`] bytes. It owns the
/// records' writer while the shard's machine runs, and gives it back.
struct Chunks<W> {
    records: Records<W>,
    buf: Vec<u8>,
    bytes: u64,
}

impl<W: Write> Chunks<W> {
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

impl<W: Write> Write for Chunks<W> {
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

enum State<W> {
    /// The root record asked for.
    Root(Records<W>),
    /// Shard `j` being dumped.
    Shard(usize, Box<DumpMachine<Chunks<W>>>),
    /// Done, or failed.
    Over,
}

/// The dump of the sharded filter `name` (see
/// [`dump`](crate::dump::dump)): its root read, then each shard dumped by
/// the ordinary dump's machine into the container.
pub(crate) struct ShardedDump<W> {
    name: String,
    meta: String,
    root: Option<Root>,
    total: Option<Summary>,
    state: State<W>,
}

impl<W: Write> ShardedDump<W> {
    /// Writes to `out` (pass `&mut` a writer to keep it).
    pub(crate) fn new(name: &str, out: W) -> Result<ShardedDump<W>> {
        let meta = Keys::new(FilterName::existing(name)?).meta().to_string();
        Ok(ShardedDump {
            name: name.to_string(),
            meta,
            root: None,
            total: None,
            state: State::Root(Records { out, records: 0 }),
        })
    }

    /// The container's head, from the root read.
    fn begin(&mut self, mut records: Records<W>, root: Root) -> Result<Poll<Summary>> {
        records.out.write_all(&SHARDED_MAGIC).map_err(written)?;
        records.put(&Frame::Root {
            version: SHARDED_DUMP_VERSION,
            shards: root.shards.len() as u32,
            kind: root.kind.as_str().to_string(),
            capacity: root.capacity,
            name: self.name.clone(),
        })?;
        self.total = Some(empty(&self.name, root.kind));
        self.root = Some(root);
        self.shard(0, records)
    }

    /// Shard `j`'s dump started, or (past the last) the end record.
    fn shard(&mut self, j: usize, mut records: Records<W>) -> Result<Poll<Summary>> {
        let root = self.root.as_ref().ok_or_else(no_root)?;
        let Some(sub) = root.shards.get(j) else {
            let shards = root.shards.len() as u32;
            let records_before = records.records;
            records.put(&Frame::End {
                records: records_before,
                shards,
            })?;
            records.out.flush().map_err(written)?;
            return self.total.take().map(Poll::Ready).ok_or_else(no_root);
        };
        records.put(&Frame::Shard {
            index: j as u32,
            name: sub.clone(),
        })?;
        let chunks = Chunks {
            records,
            buf: Vec::new(),
            bytes: 0,
        };
        let m = DumpMachine::new(sub, chunks, crate::any::ACCEPT_ANY)?;
        self.state = State::Shard(j, Box::new(m));
        self.step(None)
    }

    /// Shard `j`'s dump done: its end record, then the next shard.
    fn shard_done(
        &mut self,
        j: usize,
        m: DumpMachine<Chunks<W>>,
        s: Summary,
    ) -> Result<Poll<Summary>> {
        let root = self.root.as_ref().ok_or_else(no_root)?;
        if s.kind != root.kind {
            // A conversion that did not reach this shard (§11.8): a file of
            // it is one no restore takes.
            return Err(Error::ShardsDisagree {
                name: self.name.clone(),
                shards: vec![j as u32],
                what: format!(
                    "cannot dump: shard {j} is {}, the root says {}: a conversion did not \
                     reach it; run it again, then dump",
                    s.kind, root.kind
                ),
            });
        }
        let mut chunks = m.into_out();
        chunks.flush().map_err(written)?;
        let mut records = chunks.records;
        records.put(&Frame::ShardEnd {
            bytes: chunks.bytes,
        })?;
        if let Some(total) = &mut self.total {
            add(total, &s);
        }
        self.shard(j + 1, records)
    }
}

fn no_root() -> Error {
    Error::Internal("sharded dump: no root".into())
}

impl<W: Write> Machine for ShardedDump<W> {
    type Output = Summary;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Summary>> {
        match std::mem::replace(&mut self.state, State::Over) {
            State::Root(records) if replies.is_none() => {
                let req = script::read_record(&self.meta);
                self.state = State::Root(records);
                Ok(Poll::Send(req))
            }
            State::Root(records) => {
                let fields = script::decode_record(&self.meta, replies.unwrap_or_default())?;
                let root = super::open::ready_root(&self.name, &fields)?;
                self.begin(records, root)
            }
            State::Shard(j, mut m) => match m.step(replies) {
                Ok(Poll::Send(req)) => {
                    self.state = State::Shard(j, m);
                    Ok(Poll::Send(req))
                }
                Ok(Poll::Ready(s)) => self.shard_done(j, *m, s),
                Err(e) => Err(match &self.root {
                    Some(root) => super::missing(root, j, e),
                    None => e,
                }),
            },
            State::Over => Err(Error::Internal(
                "a finished sharded dump was stepped".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(pairs: &[(&str, &str)]) -> Option<Replies> {
        let items = pairs
            .iter()
            .flat_map(|(k, v)| [k, v])
            .map(|t| redis::Value::BulkString(t.as_bytes().to_vec()))
            .collect();
        Some(vec![Ok(redis::Value::Array(items))])
    }

    fn root(state: &str) -> Vec<(&str, &str)> {
        vec![
            ("format", "sharded-1"),
            ("uid", "0123456789abcdef"),
            ("shards", "2"),
            ("kind", "bloom"),
            ("capacity", "1000"),
            ("state", state),
            ("created_at", "1700000000000"),
            ("deadline", "1700000600000"),
            ("shard.0", "crawl:shard:0:0a1b2c3d"),
            ("shard.1", "crawl:shard:1:00000007"),
        ]
    }

    /// Reads the root, then answers `reply`: the error, with nothing written.
    fn refused(reply: Option<Replies>) -> Error {
        let mut out = Vec::new();
        let mut m = ShardedDump::new("crawl", &mut out).unwrap();
        let Ok(Poll::Send(req)) = m.step(None) else {
            panic!("the root is read first")
        };
        assert_eq!(req.args(0), ["HGETALL", "rotabloom:{crawl}:meta"]);
        let Err(e) = m.step(reply) else {
            panic!("dumped")
        };
        drop(m);
        assert!(out.is_empty(), "nothing written before the root is usable");
        e
    }

    #[test]
    fn a_root_not_ready_or_gone_is_refused_before_any_byte() {
        let e = refused(hash(&root("creating")));
        assert!(matches!(e, Error::ShardedBusy { .. }), "{e}");
        let e = refused(hash(&[]));
        assert!(matches!(e, Error::NotFound { .. }), "{e}");
    }

    #[test]
    fn a_ready_root_starts_the_container_and_shard_0() {
        let mut out = Vec::new();
        let mut m = ShardedDump::new("crawl", &mut out).unwrap();
        m.step(None).unwrap();
        // Shard 0's own dump starts: its metadata read.
        let Ok(Poll::Send(req)) = m.step(hash(&root("ready"))) else {
            panic!("shard 0 is dumped next")
        };
        assert!(
            (0..req.len()).any(|i| req
                .args(i)
                .iter()
                .any(|a| a.contains("crawl:shard:0:0a1b2c3d"))),
            "shard 0's keys are read first"
        );
        drop(m);
        assert!(out.starts_with(&SHARDED_MAGIC));
    }
}
