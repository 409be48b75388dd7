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

use crate::store::mirror::{FrozenBits, Item, Memo, Probe};
use crate::view::View;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One cached generation: its bits, read as its store reads them.
pub(crate) type Frozen = dyn FrozenBits;

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
/// `FrozenBits::contains` answers.
///
/// Mirrored generations are far bigger than the CPU caches, so most
/// probes miss them, and item by item each probe waits for the one before
/// (the next bit is only looked at if this one was set). So each
/// generation is probed pass by pass: where the first bit of every
/// undecided item is, then those bits, in a loop so short that the
/// processor has many of its loads in flight at once; then the second bit
/// of the items that passed. Only the items that pass both get the full
/// check.
pub(crate) fn holds_any(gens: &[Arc<Frozen>], items: &[Item<'_>]) -> Vec<bool> {
    holds_any_from(gens, items, PASSES_FROM_BYTES)
}

/// `holds_any`, with passes for the generations of `min_bytes` or more.
fn holds_any_from(gens: &[Arc<Frozen>], items: &[Item<'_>], min_bytes: u64) -> Vec<bool> {
    let mut found = vec![false; items.len()];
    let mut memo = vec![Memo::default(); items.len()];
    let mut todo = Vec::with_capacity(items.len());
    let mut probes: Vec<Probe> = Vec::with_capacity(items.len());
    for f in gens {
        todo.clear();
        todo.extend((0..items.len()).filter(|&j| !found[j]));
        let passes = match f.bytes() >= min_bytes {
            true => PROBE_PASSES,
            false => 0,
        };
        for i in 0..passes {
            f.probe_each(items, &mut memo, &todo, i, &mut probes);
            f.keep_set(&probes, &mut todo);
        }
        f.contains_each(items, &mut memo, &todo, &mut found);
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
            inner.bytes = inner.gens.values().map(|(_, f)| f.bytes()).sum();
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

    /// Keeps the bits of generation `seq`, if they fit the budget.
    pub fn insert(&self, view: &View, seq: u64, bits: Box<Frozen>) {
        let size = bits.bytes();
        let mut inner = self.lock();
        if inner.bytes.saturating_add(size) > self.max_bytes {
            return;
        }
        inner.bytes += size;
        inner
            .gens
            .insert((view.uid.clone(), seq), (view.cleared, Arc::from(bits)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hashing::ItemHash;
    use crate::store::mirror::testing::{bitmap, legacy, module};

    #[test]
    fn pass_by_pass_answers_as_item_by_item() {
        // Dense bits and few hashes, so that both answers occur; schemes
        // that can be probed and ones that cannot (legacy, several links);
        // generations sharing a layout and not.
        let gens = [
            bitmap(3, 64, 2, 1),
            module(&[(48, 2, 0)], 4 | 8, 2),
            module(&[(32, 2, 0)], 8, 3),
            legacy(64, 2, 4),
            module(&[(16, 3, 0), (64, 2, 9)], 4, 5),
            // The layout of the first generation again (positions reused),
            // then another one (positions placed anew), then the first.
            bitmap(3, 64, 2, 6),
            bitmap(2, 40, 3, 7),
            bitmap(3, 64, 2, 8),
        ];
        let texts: Vec<String> = (0..3000)
            .map(|i| format!("https://example.com/{i}"))
            .collect();
        let hashes: Vec<ItemHash> = texts.iter().map(ItemHash::of).collect();
        let items: Vec<Item<'_>> = hashes
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
                .map(|&item| {
                    gens[..n]
                        .iter()
                        .any(|f| f.contains(&mut Memo::default(), item))
                })
                .collect();
            let got = holds_any_from(&gens[..n], &items, 0);
            assert_eq!(got, expect, "{n} generations, pass by pass");
            assert_eq!(holds_any(&gens[..n], &items), expect, "{n} generations");
            let yes = got.iter().filter(|&&y| y).count();
            assert!(yes > 0 && yes < items.len(), "{n} generations: {yes} held");
        }
    }
}
