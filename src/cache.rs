//! Frozen generations mirrored in process memory (opt-in).
//!
//! A generation that is only queried (an expanding filter's older
//! generations, a query-all circular filter's older generations) can never
//! change again: every write is checked against the epoch, and the epoch
//! moved on when the generation was frozen. So it can be copied once and
//! checked locally, and a query costs one server operation however many
//! generations there are. Entries are keyed by filter instance and
//! generation, dropped when their generation leaves the view, and all
//! dropped when the filter is cleared (`cleared` in the metadata).

use crate::generation::Generation;
use crate::hashing::ItemHash;
use crate::metadata::Meta;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One cached generation: its blocks' bytes, as Redis holds them.
#[derive(Debug)]
pub(crate) struct Frozen {
    gen: Generation,
    blocks: Vec<Vec<u8>>,
}

impl Frozen {
    /// Whether all of the item's bits are set (Redis bit order: offset `o`
    /// is bit `7 - o % 8` of byte `o / 8`; bytes past the end read 0).
    pub fn contains(&self, h: &ItemHash, item: Option<&[u8]>) -> bool {
        let (b, positions) = self.gen.layout.locate(h, item);
        let Some(block) = self.blocks.get(b as usize) else {
            return false;
        };
        positions.into_iter().all(|o| {
            let byte = (o / 8) as usize;
            block.get(byte).is_some_and(|v| v & (0x80 >> (o % 8)) != 0)
        })
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// (uid, seq) -> generation, for the `cleared` count it was read at.
    gens: HashMap<(String, u64), (u64, Arc<Frozen>)>,
    bytes: u64,
}

/// The mirror, shared by a handle and its clones.
#[derive(Debug)]
pub(crate) struct FrozenCache {
    max_bytes: u64,
    inner: Mutex<Inner>,
}

fn cleared(meta: &Meta) -> u64 {
    meta.fields
        .get("cleared")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl FrozenCache {
    pub fn new(max_bytes: u64) -> FrozenCache {
        FrozenCache {
            max_bytes,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Drops what the view no longer lists (or lists as cleared since).
    pub fn retain(&self, meta: &Meta) {
        let c = cleared(meta);
        let mut inner = self.lock();
        let before = inner.gens.len();
        inner.gens.retain(|(uid, seq), (at, _)| {
            *uid == meta.uid && *at == c && meta.gens.iter().any(|g| g.seq == *seq)
        });
        if inner.gens.len() != before {
            inner.bytes = inner
                .gens
                .values()
                .map(|(_, f)| f.blocks.iter().map(|b| b.len() as u64).sum::<u64>())
                .sum();
        }
    }

    /// The cached copy of generation `seq`, if any.
    pub fn get(&self, meta: &Meta, seq: u64) -> Option<Arc<Frozen>> {
        let inner = self.lock();
        inner
            .gens
            .get(&(meta.uid.clone(), seq))
            .filter(|(at, _)| *at == cleared(meta))
            .map(|(_, f)| Arc::clone(f))
    }

    /// Whether a generation of `bytes` fits the budget now.
    pub fn fits(&self, bytes: u64) -> bool {
        self.lock().bytes.saturating_add(bytes) <= self.max_bytes
    }

    pub fn insert(&self, meta: &Meta, gen: Generation, blocks: Vec<Vec<u8>>) {
        let size: u64 = blocks.iter().map(|b| b.len() as u64).sum();
        let mut inner = self.lock();
        if inner.bytes.saturating_add(size) > self.max_bytes {
            return;
        }
        inner.bytes += size;
        let seq = gen.seq;
        inner.gens.insert(
            (meta.uid.clone(), seq),
            (cleared(meta), Arc::new(Frozen { gen, blocks })),
        );
    }
}

/// Bytes per GETRANGE when mirroring a block: copies stay short for the
/// server even for a legacy 256 MiB block.
const CHUNK: u64 = 4 << 20;

/// Copies the query-only generations that are not mirrored yet and fit the
/// budget, one GETRANGE per round trip. Does nothing, and sends nothing,
/// when the mirror is complete.
pub(crate) struct FillMachine {
    core: crate::engine::Core,
    meta: Arc<Meta>,
    todo: Vec<Generation>,
    /// The generation being copied, its finished blocks, and the current
    /// block's bytes so far.
    current: Option<(Generation, Vec<Vec<u8>>, Vec<u8>)>,
}

impl FillMachine {
    pub fn new(core: crate::engine::Core) -> crate::Result<FillMachine> {
        let meta = core.view();
        let mut todo = Vec::new();
        if let Some(cache) = &core.cache {
            let mut budget = 0u64;
            for (g, role) in crate::engine::roles(&meta)? {
                let gen = &meta.gens[g];
                // A RedisBloom generation's bits are the module's business.
                if role == crate::engine::Role::Query
                    && !gen.layout.scheme.is_module()
                    && cache.get(&meta, gen.seq).is_none()
                {
                    budget += gen.layout.bytes();
                    if cache.fits(budget) {
                        todo.push(gen.clone());
                    }
                }
            }
        }
        Ok(FillMachine {
            core,
            meta,
            todo,
            current: None,
        })
    }

    fn next_request(&mut self) -> Option<crate::exec::Request> {
        loop {
            let (gen, done, bytes) = match self.current.take() {
                Some(c) => c,
                None => {
                    let gen = self.todo.pop()?;
                    (gen, Vec::new(), Vec::new())
                }
            };
            let block = done.len() as u32;
            if block >= gen.layout.blocks {
                if let Some(cache) = &self.core.cache {
                    cache.insert(&self.meta, gen, done);
                }
                continue;
            }
            let size = gen.layout.block_bits().div_ceil(8);
            let start = bytes.len() as u64;
            let key = self.core.keys.block(&self.meta.uid, gen.seq, block);
            let req = crate::exec::Request::new().cmd(
                redis::cmd("GETRANGE")
                    .arg(key)
                    .arg(start)
                    .arg((start + CHUNK).min(size).saturating_sub(1))
                    .clone(),
            );
            self.current = Some((gen, done, bytes));
            return Some(req);
        }
    }
}

impl crate::exec::Machine for FillMachine {
    type Output = ();

    fn step(
        &mut self,
        replies: Option<crate::exec::Replies>,
    ) -> crate::Result<crate::exec::Poll<()>> {
        if replies.is_some() {
            let chunk = match crate::engine::take_one(replies)?? {
                redis::Value::BulkString(b) => b,
                redis::Value::Nil => Vec::new(),
                v => return Err(crate::Error::UnexpectedReply(format!("GETRANGE: {v:?}"))),
            };
            if let Some((gen, mut done, mut bytes)) = self.current.take() {
                let size = gen.layout.block_bits().div_ceil(8);
                let short = (chunk.len() as u64) < CHUNK.min(size - bytes.len() as u64);
                bytes.extend_from_slice(&chunk);
                // A short read is the end of the string: the rest reads 0,
                // and `Frozen::contains` treats missing bytes as 0.
                if short || bytes.len() as u64 >= size {
                    done.push(bytes);
                    self.current = Some((gen, done, Vec::new()));
                } else {
                    self.current = Some((gen, done, bytes));
                }
            }
        }
        Ok(match self.next_request() {
            Some(req) => crate::exec::Poll::Send(req),
            None => crate::exec::Poll::Ready(()),
        })
    }
}
