//! The mirror's policies (see `crate::cache`): how a store's frozen
//! generation is copied into memory ([`MirrorCopy`]) and how its copy is
//! read there ([`FrozenBits`]). Bitmap-like stores copy their blocks
//! `GETRANGE` by `GETRANGE` and read them as Redis bitmaps ([`blocks`]);
//! a module's store copies its own dump and reads it as the module would
//! (its own room, as `store::bf`). The cache and the fill drive them
//! without knowing which.

pub(crate) mod blocks;

use crate::error::Result;
use crate::hashing::ItemHash;
use crate::request::Request;
use crate::store::generation::Layout;
use redis::{RedisResult, Value};
use std::fmt;

/// One item as the mirror checks it: its hash (a store that places bits
/// needs it) and the item itself (a module or a legacy scheme needs it).
pub(crate) type Item<'a> = (Option<&'a ItemHash>, Option<&'a [u8]>);

/// What the lookups of one item share across generations: a store's own
/// hash values of it (a module hashes items itself: two values, in one of
/// two slots the store names, as RedisBloom's by hash width), and its
/// block and bit positions in the last bitmap layout it was placed in. The generations of a circular
/// filter all have one layout, so an item's positions are computed once
/// for all of them rather than once per generation.
#[derive(Clone, Debug, Default)]
pub(crate) struct Memo {
    own: [Option<[u64; 2]>; 2],
    placed: Option<(Layout, u32, Vec<u64>)>,
}

impl Memo {
    /// The item's own hash values in `slot` (0 or 1), made by `make` the
    /// first time they are asked for.
    pub(crate) fn own_hash(&mut self, slot: bool, make: impl FnOnce() -> [u64; 2]) -> [u64; 2] {
        *self.own[usize::from(slot)].get_or_insert_with(make)
    }

    /// The item's block and positions in a format-1 bitmap of `layout`.
    fn placed(&mut self, layout: Layout, h: &ItemHash) -> (u32, &[u64]) {
        if self.placed.as_ref().is_none_or(|(l, _, _)| *l != layout) {
            let (b, positions) = layout.locate(h, None);
            // Reuses the list of the layout before: no allocation per
            // generation once the item has its longest list.
            let mut list = match self.placed.take() {
                Some((_, _, list)) => list,
                None => Vec::new(),
            };
            list.clear();
            list.extend(positions);
            self.placed = Some((layout, b, list));
        }
        match &self.placed {
            Some((_, b, p)) => (*b, p.as_slice()),
            None => (0, &[]),
        }
    }
}

/// Where the `i`-th bit of an item is in one generation.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Probe {
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

/// A frozen generation's bits, copied into memory: the local answer to
/// whether it holds an item, and single bits for the passes of
/// `cache::holds_any`.
pub(crate) trait FrozenBits: Send + Sync + fmt::Debug {
    /// The memory it takes.
    fn bytes(&self) -> u64;

    /// Whether it holds the item, as the server would answer, keeping in
    /// `memo` what the item's checks against other generations can reuse.
    fn contains(&self, memo: &mut Memo, item: Item<'_>) -> bool;

    /// Where the `i`-th bit of the item is; reads the same bits as
    /// `contains`.
    fn probe(&self, memo: &mut Memo, item: Item<'_>, i: u32) -> Probe;

    /// Byte `byte` of part `part` (as `Probe::At` names them), if there.
    fn byte(&self, part: u32, byte: u64) -> Option<u8>;

    /// Whether a probe's bit is set, or may be (`Unprobed`); bytes past
    /// the end read 0.
    fn read(&self, p: Probe) -> bool {
        match p {
            Probe::At { part, byte, mask } => self.byte(part, byte).is_some_and(|v| v & mask != 0),
            Probe::Known(set) => set,
            Probe::Unprobed => true,
        }
    }

    /// `probe` for the items `todo` (indexes into `items` and `memo`),
    /// into `out`. One call per pass, so that the per-item calls within
    /// are static (and inlined) rather than dynamic.
    fn probe_each(
        &self,
        items: &[Item<'_>],
        memo: &mut [Memo],
        todo: &[usize],
        i: u32,
        out: &mut Vec<Probe>,
    ) {
        out.clear();
        out.extend(todo.iter().map(|&j| self.probe(&mut memo[j], items[j], i)));
    }

    /// Keeps of `todo` the items whose probe (in `probes`, in order) reads
    /// set: a loop of loads only, so that many are in flight at once.
    fn keep_set(&self, probes: &[Probe], todo: &mut Vec<usize>) {
        let set: Vec<bool> = probes.iter().map(|&p| self.read(p)).collect();
        let mut set = set.into_iter();
        todo.retain(|_| set.next().unwrap_or(true));
    }

    /// `contains` for the items `todo`, marking those held in `found`.
    fn contains_each(
        &self,
        items: &[Item<'_>],
        memo: &mut [Memo],
        todo: &[usize],
        found: &mut [bool],
    ) {
        for &j in todo {
            found[j] = self.contains(&mut memo[j], items[j]);
        }
    }
}

/// What a copy under way asks for next.
pub(crate) enum CopyStep {
    /// This request; its reply goes to `take`.
    Send(Request),
    /// Copied whole: the bits to keep.
    Done(Box<dyn FrozenBits>),
    /// The data is not all there (a block or key gone, as after a
    /// rotation that dropped it under the view): not mirrored, so the
    /// server answers for it and its checks say whether data was lost.
    Gone,
}

/// A frozen generation being copied, one round trip at a time.
pub(crate) trait MirrorCopy: Send {
    /// What to do next; after `Done` or `Gone`, nothing more.
    fn next(&mut self) -> CopyStep;

    /// Takes the reply to the last request sent. An error reply that
    /// says the data is gone makes the next step `Gone`; any other is
    /// returned.
    fn take(&mut self, reply: RedisResult<Value>) -> Result<()>;
}

#[cfg(test)]
pub(crate) mod testing;
