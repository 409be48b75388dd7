//! One generation: a Bloom filter's worth of bits in one or more Redis
//! strings. This is the storage seam every filter kind shares: a kind decides
//! *which* generations an operation reads and writes; a generation decides
//! *where* an item's bits are.

use crate::params::{BloomParams, MAX_BLOCK_BITS};

pub use super::names::{Backend, Scheme};

/// Bit positions of one item in one generation.
#[derive(Clone, Debug)]
pub enum ItemPositions {
    /// Computed on the fly (format version 1).
    Edh(crate::hashing::Positions),
    /// Computed up front (legacy schemes).
    List(std::vec::IntoIter<u64>),
}

impl Iterator for ItemPositions {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        match self {
            ItemPositions::Edh(p) => p.next(),
            ItemPositions::List(p) => p.next(),
        }
    }
}

/// The shape of one generation's storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Total bits, `blocks * block_bits`.
    pub bits: u64,
    /// Hash functions per item.
    pub hashes: u32,
    /// Number of Redis strings.
    pub blocks: u32,
    /// The hashing scheme.
    pub scheme: Scheme,
}

impl Layout {
    /// Splits `params` into blocks of at most `max_block_bits` bits (never
    /// more than one Redis string). A split generation is rounded up to a
    /// multiple of the block count, by fewer than `blocks` bits.
    pub fn split(params: BloomParams, max_block_bits: u64) -> Layout {
        let max = max_block_bits.clamp(8, MAX_BLOCK_BITS);
        let m = params.bits();
        let mut blocks = m.div_ceil(max);
        // Blocks of fewer than 8 bits are not a valid layout (§6.4 of
        // docs/FORMAT.md): a tiny generation with a tiny limit (a base
        // filter converted with its own block size) takes fewer, a little
        // over the limit. Every layout that was valid stays as it was.
        if m.div_ceil(blocks) < 8 {
            blocks = (m / 8).max(1);
        }
        let block_bits = m.div_ceil(blocks);
        Layout {
            bits: block_bits * blocks,
            hashes: params.hashes(),
            blocks: blocks.min(u64::from(u32::MAX)) as u32,
            scheme: Scheme::Md5Edh,
        }
    }

    /// Bits in each block.
    pub fn block_bits(&self) -> u64 {
        self.bits / u64::from(self.blocks.max(1))
    }

    /// The false-positive rate the generation was sized for at `capacity`
    /// (what `BF.RESERVE` is given for a module generation).
    pub fn error_rate_at(&self, capacity: u64) -> f64 {
        crate::params::false_positive_rate(self.bits, self.hashes, capacity)
    }

    /// Bytes of memory when every block is full-sized.
    pub fn bytes(&self) -> u64 {
        u64::from(self.blocks) * self.block_bits().div_ceil(8)
    }

    /// What a data call checks of each block before it answers, in the
    /// same atomic step: rotabloom allocates every block of a generation it
    /// makes at its full size, so a missing or shorter one is lost data
    /// (§8.12 of docs/FORMAT.md).
    pub(crate) fn block_check(&self) -> BlockCheck {
        self.store().block_check(self)
    }
}

/// What must hold of a generation's block keys before a call reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockCheck {
    /// An adopted legacy bitmap: blocks its crawler never wrote are absent.
    MayBeAbsent,
    /// A key the module manages: it must exist; its length means nothing.
    Exists,
    /// A bitmap block: it must exist and hold at least this many bytes.
    AtLeast(u64),
}

impl BlockCheck {
    /// The data script's `must` argument (src/lua/data.lua).
    pub fn script_arg(self) -> String {
        match self {
            BlockCheck::MayBeAbsent => "0".into(),
            BlockCheck::Exists => "1".into(),
            BlockCheck::AtLeast(n) => format!("={n}"),
        }
    }

    /// The guard's size argument for a key it checks (src/lua/guard.lua).
    pub fn guard_arg(self) -> String {
        match self {
            BlockCheck::AtLeast(n) => n.to_string(),
            BlockCheck::MayBeAbsent | BlockCheck::Exists => String::new(),
        }
    }
}

/// One generation as recorded in the metadata hash.
#[derive(Clone, Debug, PartialEq)]
pub struct Generation {
    /// Sequence number, unique and never reused within a filter instance.
    pub seq: u64,
    /// Where its bits are.
    pub layout: Layout,
    /// Distinct items it was sized for.
    pub capacity: u64,
    /// Distinct items inserted so far (items whose insertion set a bit).
    pub count: u64,
    /// Creation time, milliseconds since the Unix epoch (Redis server clock).
    pub created_at_ms: i64,
}

impl Generation {
    /// Expected false-positive rate at the current count.
    pub fn expected_false_positive_rate(&self) -> f64 {
        crate::params::false_positive_rate(self.layout.bits, self.layout.hashes, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_small_generations_whole() {
        let p = BloomParams::from_bits_hashes(1000, 3).unwrap();
        let l = Layout::split(p, MAX_BLOCK_BITS);
        assert_eq!((l.bits, l.blocks, l.block_bits()), (1000, 1, 1000));
    }

    #[test]
    fn split_rounds_up_by_less_than_block_count() {
        let p = BloomParams::from_bits_hashes(10_001, 3).unwrap();
        let l = Layout::split(p, 1000);
        assert_eq!(l.blocks, 11);
        assert_eq!(l.block_bits(), 910);
        assert!(l.bits >= 10_001 && l.bits - 10_001 < 11);
        let big = BloomParams::from_bits_hashes(5 << 32, 7).unwrap();
        let l = Layout::split(big, MAX_BLOCK_BITS);
        assert_eq!((l.blocks, l.block_bits()), (5, 1 << 32));
    }
}
