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

use crate::generation::{Generation, Layout};
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

/// What the lookups of one item share across generations: its RedisBloom
/// hash values (by `FORCE64` option), and its block and bit positions in
/// the last bitmap layout it was placed in. The generations of a circular
/// filter all have one layout, so an item's positions are computed once
/// for all of them rather than once per generation.
#[derive(Clone, Debug, Default)]
pub(crate) struct Memo {
    module: [Option<ModuleHash>; 2],
    placed: Option<(Layout, u32, Vec<u64>)>,
}

impl Memo {
    fn module_hash(&mut self, chain: &Chain, item: Option<&[u8]>) -> ModuleHash {
        *self.module[usize::from(chain.force64())]
            .get_or_insert_with(|| chain.hash(item.unwrap_or_default()))
    }

    /// The item's block and positions in a format-1 bitmap of `layout`.
    fn placed(&mut self, layout: Layout, h: &ItemHash) -> (u32, &[u64]) {
        if self.placed.as_ref().is_none_or(|(l, _, _)| *l != layout) {
            let (b, positions) = layout.locate(h, None);
            self.placed = Some((layout, b, positions.collect()));
        }
        match &self.placed {
            Some((_, b, p)) => (*b, p.as_slice()),
            None => (0, &[]),
        }
    }
}

/// Where the `i`-th bit of an item is in one generation.
#[derive(Clone, Copy)]
enum Probe {
    /// Byte `byte` of part `part` (a block, or a chain's only link), under
    /// `mask`.
    At { part: u32, byte: u64, mask: u8 },
    /// Known without a load: set (past the item's bits), clear (no hash,
    /// no such block).
    Known(bool),
    /// The scheme cannot be probed bit by bit (legacy schemes, chains of
    /// several links): only the full check answers.
    Unprobed,
}

impl Frozen {
    /// Whether the generation holds the item: all of its bits are set
    /// (bitmaps: Redis bit order, offset `o` is bit `7 - o % 8` of byte
    /// `o / 8`, bytes past the end read 0; RedisBloom: the module's test).
    /// A bitmap needs the item's hash (without it: false); RedisBloom, the
    /// item itself.
    #[cfg(test)]
    pub fn contains(&self, h: Option<&ItemHash>, item: Option<&[u8]>) -> bool {
        self.contains_with(h, item, &mut Memo::default())
    }

    /// As `contains`, keeping in `memo` what the item's checks against
    /// other generations can reuse.
    pub fn contains_with(
        &self,
        h: Option<&ItemHash>,
        item: Option<&[u8]>,
        memo: &mut Memo,
    ) -> bool {
        let (blocks, h) = match (&self.bits, h) {
            (Bits::Module(chain), _) => return chain.contains_hash(memo.module_hash(chain, item)),
            (Bits::Blocks(b), Some(h)) => (b, h),
            (Bits::Blocks(_), None) => return false,
        };
        let set = |block: &[u8], o: u64| {
            block
                .get((o / 8) as usize)
                .is_some_and(|v| v & (0x80 >> (o % 8)) != 0)
        };
        if self.gen.layout.store().positions_shared() {
            let (b, positions) = memo.placed(self.gen.layout, h);
            return blocks
                .get(b as usize)
                .is_some_and(|block| positions.iter().all(|&o| set(block, o)));
        }
        let (b, mut positions) = self.gen.layout.locate(h, item);
        blocks
            .get(b as usize)
            .is_some_and(|block| positions.all(|o| set(block, o)))
    }

    /// Where the `i`-th bit of the item is; reads the same bits as
    /// `contains_with`.
    fn probe(&self, h: Option<&ItemHash>, item: Option<&[u8]>, memo: &mut Memo, i: u32) -> Probe {
        match (&self.bits, h) {
            (Bits::Module(chain), _) => {
                match chain.probe(memo.module_hash(chain, item), u64::from(i)) {
                    Some(Ok(x)) => Probe::At {
                        part: 0,
                        byte: x / 8,
                        mask: 1 << (x % 8),
                    },
                    Some(Err(set)) => Probe::Known(set),
                    None => Probe::Unprobed,
                }
            }
            (Bits::Blocks(_), Some(h)) if self.gen.layout.store().positions_shared() => {
                let (b, positions) = memo.placed(self.gen.layout, h);
                match positions.get(i as usize) {
                    Some(&o) => Probe::At {
                        part: b,
                        byte: o / 8,
                        mask: 0x80 >> (o % 8),
                    },
                    None => Probe::Known(true),
                }
            }
            (Bits::Blocks(_), None) => Probe::Known(false),
            (Bits::Blocks(_), Some(_)) => Probe::Unprobed,
        }
    }

    /// Whether a probe's bit is set, or may be (`Unprobed`); bytes past
    /// the end read 0.
    fn read(&self, p: Probe) -> bool {
        match p {
            Probe::At { part, byte, mask } => {
                let bytes = match &self.bits {
                    Bits::Blocks(b) => b.get(part as usize).map(Vec::as_slice),
                    Bits::Module(chain) => chain.first_link_bits(),
                };
                bytes
                    .and_then(|b| b.get(byte as usize))
                    .is_some_and(|v| v & mask != 0)
            }
            Probe::Known(set) => set,
            Probe::Unprobed => true,
        }
    }
}

/// Passes of single probes before the full check in `holds_any`: at the
/// fill a generation is sized for, half of the items it does not hold
/// fail each probe, so two passes leave a quarter of them.
const PROBE_PASSES: u32 = 2;

/// Generations smaller than this (about a core's L2 cache) are checked
/// item by item: their probes hit the cache, and the passes' bookkeeping
/// would cost more than it saves (measured: 11 generations of 3 MB, 441
/// instead of 721 ns per item; of 300 kB, 269 instead of 232).
const PASSES_FROM_BYTES: u64 = 1 << 20;

/// For each item (its hash, and the item where a RedisBloom or legacy
/// generation needs it), whether one of `gens` holds it, as
/// `Frozen::contains_with` answers.
///
/// Mirrored generations are far bigger than the CPU caches, so most
/// probes miss them, and item by item each probe waits for the one before
/// (the next bit is only looked at if this one was set). So each
/// generation is probed pass by pass: where the first bit of every
/// undecided item is, then those bits, in a loop so short that the
/// processor has many of its loads in flight at once; then the second bit
/// of the items that passed. Only the items that pass both get the full
/// check.
pub(crate) fn holds_any(
    gens: &[Arc<Frozen>],
    items: &[(Option<&ItemHash>, Option<&[u8]>)],
) -> Vec<bool> {
    holds_any_from(gens, items, PASSES_FROM_BYTES)
}

/// `holds_any`, with passes for the generations of `min_bytes` or more.
fn holds_any_from(
    gens: &[Arc<Frozen>],
    items: &[(Option<&ItemHash>, Option<&[u8]>)],
    min_bytes: u64,
) -> Vec<bool> {
    let mut found = vec![false; items.len()];
    let mut memo = vec![Memo::default(); items.len()];
    for f in gens {
        let mut todo: Vec<usize> = (0..items.len()).filter(|&j| !found[j]).collect();
        let passes = match f.bits.bytes() >= min_bytes {
            true => PROBE_PASSES,
            false => 0,
        };
        for i in 0..passes {
            let probes: Vec<Probe> = todo
                .iter()
                .map(|&j| {
                    let (h, item) = items[j];
                    f.probe(h, item, &mut memo[j], i)
                })
                .collect();
            let set: Vec<bool> = probes.iter().map(|&p| f.read(p)).collect();
            todo = todo
                .into_iter()
                .zip(set)
                .filter(|(_, s)| *s)
                .map(|(j, _)| j)
                .collect();
        }
        for j in todo {
            let (h, item) = items[j];
            found[j] = f.contains_with(h, item, &mut memo[j]);
        }
    }
    found
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
        crate::poison::lock(&self.inner)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generation::Scheme;

    /// A deterministic byte stream (xorshift), about half of whose bits
    /// are set.
    fn noise(n: usize, mut x: u64) -> Vec<u8> {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn frozen(scheme: Scheme, blocks: u32, bytes: usize, hashes: u32, seed: u64) -> Arc<Frozen> {
        let gen = Generation {
            seq: seed,
            layout: Layout {
                bits: (bytes * 8) as u64 * u64::from(blocks),
                hashes,
                blocks,
                scheme,
            },
            capacity: 1000,
            count: 0,
            created_at_ms: 0,
        };
        let bits = Bits::Blocks(
            (0..blocks)
                .map(|b| noise(bytes, seed * 31 + u64::from(b) + 1))
                .collect(),
        );
        Arc::new(Frozen { gen, bits })
    }

    fn module(links: &[(u64, u32, u8)], options: u32, seed: u64) -> Arc<Frozen> {
        let mut chain = Chain::from_header(&crate::rbchain::dump_header(links, options)).unwrap();
        chain
            .push_chunk(&noise(chain.bytes() as usize, seed))
            .unwrap();
        let gen = Generation {
            seq: seed,
            layout: Layout {
                bits: chain.bytes() * 8,
                hashes: 0,
                blocks: 1,
                scheme: Scheme::RedisBloom,
            },
            capacity: 1000,
            count: 0,
            created_at_ms: 0,
        };
        Arc::new(Frozen {
            gen,
            bits: Bits::Module(chain),
        })
    }

    #[test]
    fn pass_by_pass_answers_as_item_by_item() {
        // Dense bits and few hashes, so that both answers occur; schemes
        // that can be probed and ones that cannot (legacy, several links);
        // generations sharing a layout and not.
        let gens = [
            frozen(Scheme::Md5Edh, 3, 64, 2, 1),
            module(&[(48, 2, 0)], 4 | 8, 2),
            module(&[(32, 2, 0)], 8, 3),
            frozen(Scheme::ScrapyRedisBloomfilter, 1, 64, 2, 4),
            module(&[(16, 3, 0), (64, 2, 9)], 4, 5),
            // The layout of the first generation again (positions reused),
            // then another one (positions placed anew), then the first.
            frozen(Scheme::Md5Edh, 3, 64, 2, 6),
            frozen(Scheme::Md5Edh, 2, 40, 3, 7),
            frozen(Scheme::Md5Edh, 3, 64, 2, 8),
        ];
        let texts: Vec<String> = (0..3000)
            .map(|i| format!("https://example.com/{i}"))
            .collect();
        let hashes: Vec<ItemHash> = texts.iter().map(ItemHash::of).collect();
        let items: Vec<(Option<&ItemHash>, Option<&[u8]>)> = hashes
            .iter()
            .zip(&texts)
            .enumerate()
            // Some items come without their hash (a RedisBloom filter's).
            .map(|(i, (h, t))| ((i % 7 != 0).then_some(h), Some(t.as_bytes())))
            .collect();
        for n in 1..=gens.len() {
            let expect: Vec<bool> = items
                .iter()
                // Each generation on its own: nothing shared between them.
                .map(|&(h, item)| gens[..n].iter().any(|f| f.contains(h, item)))
                .collect();
            let got = holds_any_from(&gens[..n], &items, 0);
            assert_eq!(got, expect, "{n} generations, pass by pass");
            assert_eq!(holds_any(&gens[..n], &items), expect, "{n} generations");
            let yes = got.iter().filter(|&&y| y).count();
            assert!(yes > 0 && yes < items.len(), "{n} generations: {yes} held");
        }
    }
}
