//! How an item becomes bit positions: format version 1, fixed forever.
//!
//! The item's bytes are hashed once with MD5. The 16-byte digest is read as
//! two unsigned 64-bit integers in little-endian order, `h1` (bytes 0..8) and
//! `h2` (bytes 8..16). For a block of `b` bits and `k` hash functions the
//! positions are produced by *enhanced double hashing*
//! (Dillinger & Manolios, 2004):
//!
//! ```text
//! x = h1 mod b
//! y = h2 mod b
//! for i in 0..k:
//!     position[i] = x
//!     x = (x + y) mod b
//!     y = (y + i + 1) mod b
//! ```
//!
//! which is `position[i] = (h1 + i*h2 + (i^3 - i)/6) mod b`. A generation
//! larger than one Redis string is split into `B` equal blocks; an item lives
//! entirely in block `floor(h2 * B / 2^64)`, so all its bits are in one key
//! and one command touches it atomically. With `B = 1` the block is 0.
//!
//! `docs/FORMAT.md` is the normative description; `tests/golden.rs` pins it.

use md5::{Digest, Md5};

/// The 128-bit fingerprint of one item, from which all positions in every
/// generation are derived. Computing it once per item lets a query over many
/// generations hash the item only once.
///
/// ```
/// use rotabloom::ItemHash;
/// let h = ItemHash::of(b"http://example.com/");
/// let positions: Vec<u64> = h.positions(1000, 3).collect();
/// assert_eq!(positions.len(), 3);
/// assert!(positions.iter().all(|&p| p < 1000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItemHash {
    h1: u64,
    h2: u64,
}

impl ItemHash {
    /// Hashes an item's bytes.
    pub fn of(item: impl AsRef<[u8]>) -> ItemHash {
        let digest = Md5::digest(item.as_ref());
        let mut lo = [0u8; 8];
        let mut hi = [0u8; 8];
        lo.copy_from_slice(&digest[..8]);
        hi.copy_from_slice(&digest[8..]);
        ItemHash {
            h1: u64::from_le_bytes(lo),
            h2: u64::from_le_bytes(hi),
        }
    }

    /// The two 64-bit halves of the MD5 digest, `(h1, h2)`.
    pub fn halves(&self) -> (u64, u64) {
        (self.h1, self.h2)
    }

    /// The 16 bytes of the MD5 digest.
    pub fn digest(&self) -> [u8; 16] {
        let mut d = [0u8; 16];
        d[..8].copy_from_slice(&self.h1.to_le_bytes());
        d[8..].copy_from_slice(&self.h2.to_le_bytes());
        d
    }

    /// The `k` bit positions of the item in a block of `block_bits` bits.
    ///
    /// `block_bits` must be at least 1; a zero is treated as 1 so this never
    /// panics (validated parameters never produce it).
    pub fn positions(&self, block_bits: u64, k: u32) -> Positions {
        let b = block_bits.max(1);
        Positions {
            x: self.h1 % b,
            y: self.h2 % b,
            b,
            i: 0,
            k,
        }
    }

    /// The shard, out of `shards`, of a sharded filter that holds the item
    /// (docs/FORMAT.md §11.3): a strong mix of `h1 XOR h2` (splitmix64's
    /// finalizer), multiplied high by `shards`. The mix is there so that
    /// the shard tells nothing about the bit positions or the block, which
    /// use `h1`, `h2` and the top bits of `h2`; without it the items of a
    /// shard would crowd some bits of its filter.
    ///
    /// ```
    /// use rotabloom::ItemHash;
    /// assert_eq!(ItemHash::of("http://example.com/").shard(6), 2);
    /// assert_eq!(ItemHash::of("anything").shard(1), 0);
    /// ```
    pub fn shard(&self, shards: u32) -> u32 {
        ((u128::from(self.shard_mix()) * u128::from(shards.max(1))) >> 64) as u32
    }

    /// The 64-bit value [`shard`](Self::shard) maps onto the shards; the
    /// golden vectors of docs/FORMAT.md §11.3 list it.
    pub fn shard_mix(&self) -> u64 {
        let mut x = self.h1 ^ self.h2;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }

    /// The block, out of `blocks`, that holds the item's bits.
    pub fn block(&self, blocks: u32) -> u32 {
        // Multiply-high maps h2 uniformly onto 0..blocks without a modulo
        // bias, and uses its high bits, which `h2 mod b` barely depends on.
        ((u128::from(self.h2) * u128::from(blocks.max(1))) >> 64) as u32
    }
}

/// Iterator over an item's bit positions; see [`ItemHash::positions`].
#[derive(Clone, Debug)]
pub struct Positions {
    x: u64,
    y: u64,
    b: u64,
    i: u32,
    k: u32,
}

impl Iterator for Positions {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.i >= self.k {
            return None;
        }
        let out = self.x;
        self.i += 1;
        // x, y < b <= 2^63 (validated), so the sums cannot overflow.
        self.x = add_mod(self.x, self.y, self.b);
        self.y = add_mod(self.y, u64::from(self.i) % self.b, self.b);
        Some(out)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.k - self.i) as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Positions {}

/// The legacy Python crawlers' hash: `ret += seed * ret + ord(c)` over the
/// code points of a string, i.e. the base-`multiplier` polynomial
/// `Σ cp(c_i) * multiplier^(n-1-i)`, in 64-bit wrapping arithmetic (exact
/// modulo 2^64, hence exact in its low `bit` bits for any `bit <= 64`; see
/// `docs/LEGACY.md`).
pub(crate) fn legacy_poly(chars: impl Iterator<Item = char>, multiplier: u64) -> u64 {
    chars.fold(0u64, |h, c| {
        h.wrapping_mul(multiplier).wrapping_add(u64::from(c))
    })
}

/// Lower-case hex of a digest, as Python's `hexdigest()`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn add_mod(a: u64, b: u64, m: u64) -> u64 {
    let s = a.wrapping_add(b);
    // a, b < m; if the sum wrapped or reached m, one subtraction fixes it.
    if s < a || s >= m {
        s.wrapping_sub(m)
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_closed_form() {
        for item in ["a", "http://example.com/x", ""] {
            let h = ItemHash::of(item);
            let (h1, h2) = h.halves();
            for &b in &[7u64, 1000, 143_775_876, (1 << 32) - 5] {
                let got: Vec<u64> = h.positions(b, 12).collect();
                let want: Vec<u64> = (0..12u64)
                    .map(|i| {
                        let v = u128::from(h1)
                            + u128::from(i) * u128::from(h2)
                            + u128::from((i * i * i - i) / 6);
                        (v % u128::from(b)) as u64
                    })
                    .collect();
                assert_eq!(got, want, "item {item:?} b {b}");
            }
        }
    }

    #[test]
    fn huge_block_sizes_do_not_overflow() {
        let h = ItemHash::of("x");
        let b = (1u64 << 63) + 12345;
        assert!(h.positions(b, 64).all(|p| p < b));
    }

    #[test]
    fn block_is_in_range_and_spread() {
        let mut hist = [0u32; 5];
        for i in 0..10_000 {
            let blk = ItemHash::of(format!("item{i}")).block(5);
            hist[blk as usize] += 1;
        }
        assert!(hist.iter().all(|&c| (1800..2200).contains(&c)), "{hist:?}");
        assert_eq!(ItemHash::of("x").block(1), 0);
        assert_eq!(ItemHash::of("x").block(0), 0);
    }

    #[test]
    fn zero_block_bits_does_not_panic() {
        assert_eq!(
            ItemHash::of("x").positions(0, 3).collect::<Vec<_>>(),
            vec![0, 0, 0]
        );
    }
}
