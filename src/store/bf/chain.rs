//! A RedisBloom filter as `BF.SCANDUMP` hands it out, read in the client:
//! the chain header, the links' bits, and the module's own membership test,
//! so that a frozen generation on the RedisBloom backend can be mirrored
//! like a bitmap one.
//!
//! The layout is RedisBloom's dump format (module versions 2.x; also
//! Valkey's `BF.SCANDUMP`-compatible modules that keep it): the first chunk
//! is a packed little-endian header,
//!
//! ```text
//! u64 size, u32 nfilters, u32 options, u32 growth,
//! nfilters x { u64 bytes, u64 bits, u64 size, f64 error, f64 bpe,
//!              u32 hashes, u64 entries, u8 n2 }
//! ```
//!
//! and the later chunks are the links' bit arrays, in link order. An item
//! is in a link when the `hashes` bits `(a + i*b) mod m` are set, with
//! `(a, b)` two MurmurHash64A values of the item (seed `0xc6a4a7935bd1e995`,
//! then `a`) when the chain has option `FORCE64` (every `BF.RESERVE` since
//! RedisBloom 2.0), two 32-bit MurmurHash2 values (seed `0x9747b28c`, then
//! `a`) otherwise; `m` is `2^n2`, or `bits` when `n2` is 0; bit `x` is bit
//! `x % 8` (least significant first) of byte `x / 8`. This is written here,
//! not taken from a crate, because no crate reads RedisBloom's dumps; the
//! tests check it against the module itself (`tests/redisbloom.rs`).

use crate::error::{Error, Result};
use strength_reduce::StrengthReducedU64;

/// The most hash functions a link may have. The module sizes a tiny
/// filter at a low rate with many (78 for one item at 1e-4 was seen); a
/// header past this is damage, not a filter, and would make every probe
/// slow.
const MAX_LINK_HASHES: u32 = 1024;

/// Option bit of a chain whose items are hashed with 64-bit MurmurHash.
const OPT_FORCE64: u32 = 4;
const HEADER_BYTES: usize = 20;
const LINK_BYTES: usize = 53;
/// Seeds of the module's first hash.
const SEED64: u64 = 0xc6a4_a793_5bd1_e995;
const SEED32: u32 = 0x9747_b28c;

/// One filter of a chain: its modulus, hash count and (once read) bits.
#[derive(Debug, Clone)]
struct Link {
    bytes: u64,
    /// Every probe of every mirrored item takes a 64-bit remainder by it:
    /// a multiplication by a precomputed reciprocal is much cheaper than
    /// the division instruction.
    modulus: StrengthReducedU64,
    hashes: u32,
    bits: Vec<u8>,
}

impl Link {
    /// The module's `i`-th bit of an item of hash `h`: `(a + i·b) mod m`.
    fn position(&self, h: ModuleHash, i: u64) -> u64 {
        let ModuleHash(a, b) = h;
        a.wrapping_add(i.wrapping_mul(b)) % self.modulus
    }
}

/// A RedisBloom chain: the header read, the bits filled chunk by chunk.
#[derive(Debug, Clone)]
pub(crate) struct Chain {
    force64: bool,
    links: Vec<Link>,
}

fn bad(why: String) -> Error {
    Error::UnexpectedReply(format!("BF.SCANDUMP header: {why}"))
}

fn u64_at(b: &[u8], at: usize) -> Result<u64> {
    b.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| bad(format!("cut short at byte {at}")))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32> {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| bad(format!("cut short at byte {at}")))
}

impl Chain {
    /// Reads the header (the first `BF.SCANDUMP` chunk). A header that
    /// does not add up (wrong length, a modulus of 0 or past the link's
    /// bits, over 1024 hashes) is an error, never a filter that answers
    /// wrongly.
    pub fn from_header(h: &[u8]) -> Result<Chain> {
        let n = u32_at(h, 8)? as usize;
        let options = u32_at(h, 12)?;
        if n == 0 || h.len() != HEADER_BYTES + n * LINK_BYTES {
            return Err(bad(format!(
                "{} bytes for {n} links (expected {})",
                h.len(),
                HEADER_BYTES + n * LINK_BYTES
            )));
        }
        let mut links = Vec::with_capacity(n);
        for i in 0..n {
            let at = HEADER_BYTES + i * LINK_BYTES;
            let bytes = u64_at(h, at)?;
            let bits = u64_at(h, at + 8)?;
            let hashes = u32_at(h, at + 40)?;
            let n2 = h[at + 52];
            let modulus = match n2 {
                0 => bits,
                1..=63 => 1u64 << n2,
                _ => 0,
            };
            if modulus == 0
                || modulus > bits
                || bits != bytes.saturating_mul(8)
                || hashes > MAX_LINK_HASHES
            {
                return Err(bad(format!(
                    "link {i}: {bytes} bytes, {bits} bits, n2 {n2}, {hashes} hashes"
                )));
            }
            links.push(Link {
                bytes,
                modulus: StrengthReducedU64::new(modulus),
                hashes,
                bits: Vec::new(),
            });
        }
        Ok(Chain {
            force64: options & OPT_FORCE64 != 0,
            links,
        })
    }

    /// The bytes of bits the chain holds in all (what mirroring it costs).
    pub fn bytes(&self) -> u64 {
        // The sizes come from the server: no overflow panic on a bad one.
        self.links
            .iter()
            .fold(0u64, |sum, l| sum.saturating_add(l.bytes))
    }

    /// Appends a data chunk (the chunks come in link order). Bytes past
    /// the last link are an error.
    pub fn push_chunk(&mut self, mut chunk: &[u8]) -> Result<()> {
        for link in &mut self.links {
            let room = (link.bytes as usize).saturating_sub(link.bits.len());
            let take = room.min(chunk.len());
            link.bits.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.is_empty() {
            Ok(())
        } else {
            Err(Error::UnexpectedReply(format!(
                "BF.SCANDUMP sent {} bytes past the filter's end",
                chunk.len()
            )))
        }
    }

    /// Whether every link's bits have come.
    pub fn is_complete(&self) -> bool {
        self.links.iter().all(|l| l.bits.len() as u64 == l.bytes)
    }

    /// The module's two hash values of `item` for this chain's option.
    pub fn hash(&self, item: &[u8]) -> ModuleHash {
        module_hash(self.force64, item)
    }

    /// Whether the chain's option is `FORCE64` (which hash it takes).
    pub fn force64(&self) -> bool {
        self.force64
    }

    /// The module's answer to `BF.EXISTS` for an item of hash `h` (made
    /// with this chain's option).
    pub fn contains_hash(&self, h: ModuleHash) -> bool {
        // The module checks the newest link first; the answer is the same.
        self.links.iter().any(|l| {
            (0..u64::from(l.hashes)).all(|i| {
                let x = l.position(h, i);
                l.bits
                    .get((x / 8) as usize)
                    .is_some_and(|byte| byte & (1 << (x % 8)) != 0)
            })
        })
    }

    /// Where the `i`-th bit of an item of hash `h` is in a chain of one
    /// link (the generations rotabloom makes): `Ok(bit)`, or `Err(true)`
    /// past the item's bits; `None` for a chain of several links, where a
    /// clear bit in one link does not make the item absent.
    pub fn probe(&self, h: ModuleHash, i: u64) -> Option<std::result::Result<u64, bool>> {
        let [l] = self.links.as_slice() else {
            return None;
        };
        if i >= u64::from(l.hashes) {
            return Some(Err(true));
        }
        Some(Ok(l.position(h, i)))
    }

    /// The bits of the chain's first link.
    pub fn first_link_bits(&self) -> Option<&[u8]> {
        self.links.first().map(|l| l.bits.as_slice())
    }

    /// The module's answer to `BF.EXISTS` for `item`.
    #[cfg(test)]
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_hash(self.hash(item))
    }
}

/// RedisBloom's hash values `(a, b)` of an item. They depend only on the
/// item and the chain's `FORCE64` option, so one item is hashed once for
/// every generation it is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ModuleHash(u64, u64);

impl From<ModuleHash> for [u64; 2] {
    fn from(ModuleHash(a, b): ModuleHash) -> [u64; 2] {
        [a, b]
    }
}

impl From<[u64; 2]> for ModuleHash {
    fn from([a, b]: [u64; 2]) -> ModuleHash {
        ModuleHash(a, b)
    }
}

pub(crate) fn module_hash(force64: bool, item: &[u8]) -> ModuleHash {
    if force64 {
        let a = murmur2::murmur64a(item, SEED64);
        ModuleHash(a, murmur2::murmur64a(item, a))
    } else {
        let a = murmur2::murmur2(item, SEED32);
        ModuleHash(u64::from(a), u64::from(murmur2::murmur2(item, a)))
    }
}

/// A `BF.SCANDUMP` header of `links` (bytes, hashes, n2) with `options`.
#[cfg(test)]
pub(crate) fn dump_header(links: &[(u64, u32, u8)], options: u32) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&0u64.to_le_bytes());
    h.extend_from_slice(&(links.len() as u32).to_le_bytes());
    h.extend_from_slice(&options.to_le_bytes());
    h.extend_from_slice(&2u32.to_le_bytes());
    for &(bytes, hashes, n2) in links {
        h.extend_from_slice(&bytes.to_le_bytes());
        h.extend_from_slice(&(bytes * 8).to_le_bytes());
        h.extend_from_slice(&0u64.to_le_bytes());
        h.extend_from_slice(&0.01f64.to_le_bytes());
        h.extend_from_slice(&9.6f64.to_le_bytes());
        h.extend_from_slice(&hashes.to_le_bytes());
        h.extend_from_slice(&100u64.to_le_bytes());
        h.push(n2);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(links: &[(u64, u32, u8)], options: u32) -> Vec<u8> {
        dump_header(links, options)
    }

    #[test]
    fn a_header_is_read_and_the_chunks_fill_the_links_in_order() {
        let mut c = Chain::from_header(&header(&[(8, 7, 0), (16, 8, 6)], 4 | 8)).unwrap();
        assert_eq!(c.bytes(), 24);
        assert!(c.force64);
        assert_eq!(
            (c.links[0].modulus.get(), c.links[1].modulus.get()),
            (64, 64)
        );
        c.push_chunk(&[0; 6]).unwrap();
        assert!(!c.is_complete());
        assert!(!c.contains(b"anything"));
        c.push_chunk(&[0; 2]).unwrap();
        c.push_chunk(&[0xff; 16]).unwrap();
        assert!(c.is_complete());
        assert_eq!(c.links[0].bits, [0; 8]);
        // Link 1 (modulus 64: its first 8 bytes) is all ones: every item
        // is in, through it.
        assert!(c.contains(b"anything"));
        assert!(c.push_chunk(&[0]).is_err(), "past the end");
    }

    #[test]
    fn an_empty_chain_holds_nothing() {
        let mut c = Chain::from_header(&header(&[(8, 7, 0)], 4)).unwrap();
        c.push_chunk(&[0; 8]).unwrap();
        assert!(!c.contains(b"x"));
        let mut c = Chain::from_header(&header(&[(8, 7, 0)], 0)).unwrap();
        c.push_chunk(&[0xff; 8]).unwrap();
        assert!(c.contains(b"x"), "32-bit hashing, all bits set");
    }

    #[test]
    fn a_header_that_does_not_add_up_is_an_error() {
        let good = header(&[(8, 7, 0)], 4);
        assert!(Chain::from_header(&good[..good.len() - 1]).is_err());
        assert!(Chain::from_header(&good[..12]).is_err());
        assert!(Chain::from_header(&header(&[], 4)).is_err());
        // n2 = 7 is 128 bits, past the link's 64.
        assert!(Chain::from_header(&header(&[(8, 7, 7)], 4)).is_err());
        assert!(Chain::from_header(&header(&[(0, 7, 0)], 4)).is_err());
        assert!(Chain::from_header(&header(&[(8, 1025, 0)], 4)).is_err());
        // The module gives tiny filters at low rates many hashes.
        assert!(Chain::from_header(&header(&[(8, 78, 0)], 4)).is_ok());
        // Sizes that add up past u64 saturate rather than panic.
        let big = u64::MAX / 8;
        let c = Chain::from_header(&header(&[(big, 7, 0); 9], 4)).unwrap();
        assert_eq!(c.bytes(), u64::MAX);
    }
}
