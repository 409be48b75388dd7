//! The dump's machine: the metadata, then each block read slice by slice
//! and written out as records, then the metadata read again to see that
//! the bits belong to it.

use crate::engine::dump::slices::{all_zero, Slices};
use crate::engine::dump::summary::Summary;
use crate::engine::load::LoadMachine;
use crate::error::{Error, Result};
use crate::keys::{FilterName, Keys};
use crate::machine::{Machine, Poll};
use crate::proto::dump::{decode_int as int, Record, DUMP_VERSION, MAGIC};
use crate::request::Replies;
use crate::view::{Accept, View};
use std::io::Write;

fn io(what: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        what: what.to_string(),
        source,
    }
}

fn changed(name: &str) -> Error {
    Error::Contention {
        name: name.to_string(),
        retries: 1,
    }
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

pub(crate) struct DumpMachine<W> {
    name: String,
    keys: Keys,
    /// Owned, so that a sharded dump can hand each shard's machine its
    /// writer and take it back ([`into_out`](Self::into_out)); a caller
    /// that keeps its writer passes `&mut` it.
    out: W,
    records: u64,
    state: DumpState,
    view: Option<View>,
    targets: Vec<(u64, u32, String)>,
    /// Blocks found missing or shorter than their generation's size: lost
    /// data, said once the view is confirmed (a structural change under
    /// the dump deletes blocks too, and is said as such).
    short: Vec<String>,
    summary: Option<Summary>,
    accept: Accept,
}

impl<W: Write> DumpMachine<W> {
    /// `accept`: the kinds the dump may read (every kind this library
    /// knows, from the caller above the kinds).
    pub(crate) fn new(name: &str, out: W, accept: Accept) -> Result<DumpMachine<W>> {
        let keys = Keys::new(FilterName::new(name)?);
        Ok(DumpMachine {
            name: name.to_string(),
            state: DumpState::Load(LoadMachine::new(keys.clone(), accept)),
            keys,
            out,
            records: 0,
            view: None,
            targets: Vec::new(),
            short: Vec::new(),
            summary: None,
            accept,
        })
    }

    /// The writer back, once the machine is done with it.
    pub(crate) fn into_out(self) -> W {
        self.out
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
        if let Some(why) = view.gens.iter().find_map(|g| g.layout.store().undumpable()) {
            return Err(Error::InvalidParameter {
                name: "backend",
                reason: format!("filter {:?} cannot be dumped: {why}", self.name),
            });
        }
        self.raw(&MAGIC)?;
        self.put(Record::Header {
            version: DUMP_VERSION,
            format: crate::metadata::FORMAT_VERSION,
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
                let req = crate::proto::dump::length(key);
                self.state = DumpState::Len(i);
                Ok(Poll::Send(req))
            }
            None => {
                self.state = DumpState::Check(LoadMachine::new(self.keys.clone(), self.accept));
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
        if !self.short.is_empty() {
            return Err(Error::MissingData {
                name: self.name.clone(),
                keys: std::mem::take(&mut self.short),
            });
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

impl<W: Write> Machine for DumpMachine<W> {
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
                let check = self
                    .view
                    .as_ref()
                    .and_then(|v| v.gens.iter().find(|g| g.seq == seq))
                    .map(|g| g.layout.block_check());
                if let Some(crate::store::generation::BlockCheck::AtLeast(full)) = check {
                    if len < full {
                        self.short.push(key.clone());
                    }
                }
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
