//! Frozen generations of each kind of bits, filled with noise, for the
//! tests of the passes that read them (`cache::holds_any`).

use super::blocks::Blocks;
use super::FrozenBits;
use crate::store::bf::copy::ChainBits;
use crate::store::generation::{Layout, Scheme};
use std::sync::Arc;

/// A deterministic byte stream (xorshift), about half of whose bits are
/// set.
pub(crate) fn noise(n: usize, mut x: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn blocks(
    scheme: Scheme,
    blocks: u32,
    bytes: usize,
    hashes: u32,
    seed: u64,
) -> Arc<dyn FrozenBits> {
    let layout = Layout {
        bits: (bytes * 8) as u64 * u64::from(blocks),
        hashes,
        blocks,
        scheme,
    };
    let bits = (0..blocks)
        .map(|b| noise(bytes, seed * 31 + u64::from(b) + 1))
        .collect();
    Arc::new(Blocks::new(layout, bits))
}

/// A format-1 bitmap generation of `blocks` blocks of `bytes` bytes.
pub(crate) fn bitmap(blocks_: u32, bytes: usize, hashes: u32, seed: u64) -> Arc<dyn FrozenBits> {
    blocks(Scheme::Md5Edh, blocks_, bytes, hashes, seed)
}

/// A legacy bitmap (placed by the item, not probed bit by bit).
pub(crate) fn legacy(bytes: usize, hashes: u32, seed: u64) -> Arc<dyn FrozenBits> {
    blocks(Scheme::ScrapyRedisBloomfilter, 1, bytes, hashes, seed)
}

/// A RedisBloom chain of `links` (bytes, hashes, growth) and `options`.
pub(crate) fn module(links: &[(u64, u32, u8)], options: u32, seed: u64) -> Arc<dyn FrozenBits> {
    let header = crate::store::bf::chain::dump_header(links, options);
    let mut chain = crate::store::bf::chain::Chain::from_header(&header).unwrap();
    chain
        .push_chunk(&noise(chain.bytes() as usize, seed))
        .unwrap();
    Arc::new(ChainBits(chain))
}
