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
use crate::rbchain::{Chain, ModuleHash};
use crate::view::View;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The bits of a cached generation, as Redis holds them.
#[derive(Debug)]
pub(crate) enum Bits {
    /// A bitmap generation's blocks.
    Blocks(Vec<Vec<u8>>),
    /// A RedisBloom generation, as `BF.SCANDUMP` gave it.
    Module(Chain),
}

impl Bits {
    fn bytes(&self) -> u64 {
        match self {
            Bits::Blocks(b) => b.iter().map(|b| b.len() as u64).sum(),
            Bits::Module(c) => c.bytes(),
        }
    }
}

/// One cached generation.
#[derive(Debug)]
pub(crate) struct Frozen {
    gen: Generation,
    bits: Bits,
}

impl Frozen {
    /// Whether the generation holds the item: all of its bits are set
    /// (bitmaps: Redis bit order, offset `o` is bit `7 - o % 8` of byte
    /// `o / 8`, bytes past the end read 0; RedisBloom: the module's test).
    /// A bitmap needs the item's hash (without it: false); RedisBloom, the
    /// item itself.
    #[cfg(test)]
    pub fn contains(&self, h: Option<&ItemHash>, item: Option<&[u8]>) -> bool {
        self.contains_with(h, item, &mut [None, None])
    }

    /// As `contains`, keeping the item's RedisBloom hash values (by
    /// `FORCE64` option) in `memo` for the next generation checked.
    pub fn contains_with(
        &self,
        h: Option<&ItemHash>,
        item: Option<&[u8]>,
        memo: &mut [Option<ModuleHash>; 2],
    ) -> bool {
        let (blocks, h) = match (&self.bits, h) {
            (Bits::Module(chain), _) => {
                let slot = &mut memo[usize::from(chain.force64())];
                let mh = *slot.get_or_insert_with(|| chain.hash(item.unwrap_or_default()));
                return chain.contains_hash(mh);
            }
            (Bits::Blocks(b), Some(h)) => (b, h),
            (Bits::Blocks(_), None) => return false,
        };
        let (b, positions) = self.gen.layout.locate(h, item);
        let Some(block) = blocks.get(b as usize) else {
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
    pub fn retain(&self, view: &View) {
        let c = view.cleared;
        let mut inner = self.lock();
        let before = inner.gens.len();
        inner.gens.retain(|(uid, seq), (at, _)| {
            *uid == view.uid && *at == c && view.gens.iter().any(|g| g.seq == *seq)
        });
        if inner.gens.len() != before {
            inner.bytes = inner.gens.values().map(|(_, f)| f.bits.bytes()).sum();
        }
    }

    /// The cached copy of generation `seq`, if any.
    pub fn get(&self, view: &View, seq: u64) -> Option<Arc<Frozen>> {
        let inner = self.lock();
        inner
            .gens
            .get(&(view.uid.clone(), seq))
            .filter(|(at, _)| *at == view.cleared)
            .map(|(_, f)| Arc::clone(f))
    }

    /// Whether a generation of `bytes` fits the budget now.
    pub fn fits(&self, bytes: u64) -> bool {
        self.lock().bytes.saturating_add(bytes) <= self.max_bytes
    }

    pub fn insert(&self, view: &View, gen: Generation, bits: Bits) {
        let size = bits.bytes();
        let mut inner = self.lock();
        if inner.bytes.saturating_add(size) > self.max_bytes {
            return;
        }
        inner.bytes += size;
        let seq = gen.seq;
        inner.gens.insert(
            (view.uid.clone(), seq),
            (view.cleared, Arc::new(Frozen { gen, bits })),
        );
    }
}
