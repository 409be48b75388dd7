//! Format 1's own backend (`md5-edh`, docs/FORMAT.md §2, §3): blocks of
//! Redis strings used as bitmaps, made whole when their generation is,
//! an item placed by its MD5 with enhanced double hashing.

use super::positional::{self, Place};
use super::{Alloc, Held, ScriptShare, Store, TxCommand};
use crate::error::Result;
use crate::hashing::ItemHash;
use crate::items::Batch;
use crate::store::generation::{BlockCheck, ItemPositions, Layout, Scheme};
use redis::Value;

#[derive(Debug)]
pub(super) struct Bitmap;

fn place(l: &Layout, h: &ItemHash) -> Place {
    (
        h.block(l.blocks),
        ItemPositions::Edh(h.positions(l.block_bits(), l.hashes)),
    )
}

impl Store for Bitmap {
    fn scheme(&self) -> Scheme {
        Scheme::Md5Edh
    }

    fn fits(&self, _: &Layout) -> bool {
        true
    }

    fn block_check(&self, l: &Layout) -> BlockCheck {
        BlockCheck::AtLeast(l.block_bits().div_ceil(8))
    }

    fn alloc(&self, l: &Layout, _: u64) -> Option<Alloc> {
        Some(Alloc::Bytes(l.block_bits().div_ceil(8)))
    }

    fn zero(&self, l: &Layout, _: u64) -> Vec<String> {
        vec![l.block_bits().div_ceil(8).to_string()]
    }

    fn hashed(&self) -> bool {
        true
    }

    fn args_per_item(&self, l: &Layout) -> usize {
        1 + l.hashes as usize
    }

    fn script_share<'a>(&self, l: &Layout, batch: Batch<'a>, items: &[usize]) -> ScriptShare<'a> {
        positional::script_share(l, items, |i| batch.hash(i).map(|h| place(l, h)))
    }

    fn tx_commands(
        &self,
        l: &Layout,
        key: &dyn Fn(u32) -> String,
        batch: Batch<'_>,
        items: &[(usize, usize)],
        set: bool,
        per_command: usize,
    ) -> Vec<TxCommand> {
        positional::tx_commands(l, key, items, set, per_command, |i| {
            batch.hash(i).map(|h| place(l, h))
        })
    }

    fn tx_answers(&self, l: &Layout, _: bool, items: usize, reply: &Value) -> Result<Vec<bool>> {
        positional::tx_answers(l, items, reply)
    }

    fn info_commands(&self, l: &Layout, key: &str) -> Vec<(redis::Cmd, u64)> {
        positional::info_commands(l, key)
    }

    fn info_block(
        &self,
        l: &Layout,
        block: u32,
        replies: &mut dyn Iterator<Item = redis::RedisResult<Value>>,
        out: &mut Held,
    ) -> Result<()> {
        // Made at full size before it was listed: shorter is lost data.
        positional::info_block(l, block, replies, out, Some(l.block_bits().div_ceil(8)))
    }

    fn locate(&self, l: &Layout, h: &ItemHash, _: Option<&[u8]>) -> Option<Place> {
        Some(place(l, h))
    }

    fn positions_shared(&self) -> bool {
        true
    }

    fn backend(&self) -> Option<crate::store::generation::Backend> {
        Some(crate::store::generation::Backend::Bitmap)
    }

    fn new_layout(
        &self,
        params: crate::params::BloomParams,
        max_block_bits: u64,
    ) -> Result<Layout> {
        Ok(Layout::split(params, max_block_bits))
    }
}
