//! Bitmaps written by legacy Python crawlers, adopted read-only as the
//! oldest generation of an expanding filter (docs/FORMAT.md §4,
//! docs/LEGACY.md): never allocated, never written; blocks their crawler
//! never wrote are absent and read as zeros.

use super::positional::{self, Place};
use super::{Alloc, Held, ScriptShare, Store, TxCommand};
use crate::error::Result;
use crate::hashing::{hex, legacy_poly, ItemHash};
use crate::items::Batch;
use crate::store::generation::{BlockCheck, ItemPositions, Layout, Scheme};
use redis::Value;

/// The PyPI package `scrapy-redis-bloomfilter`: one key of `2^bit` bits, k
/// polynomial hashes with multipliers 1..=k over the item's code points.
#[derive(Debug)]
pub(super) struct ScrapyRedisBloomfilter;

/// The 2016 blog code's layout: MD5 hex digest, seeds 5, 7, 11, 13, 31,
/// 37, 61, blocks of 2^31 bits chosen by the digest's first byte.
#[derive(Debug)]
pub(super) struct Seed000;

const SEED000_SEEDS: [u64; 7] = [5, 7, 11, 13, 31, 37, 61];

fn scrapy_place(l: &Layout, item: Option<&[u8]>) -> Place {
    let mask = l.block_bits().wrapping_sub(1);
    let text = String::from_utf8_lossy(item.unwrap_or_default());
    let list: Vec<u64> = (1..=u64::from(l.hashes))
        .map(|mult| legacy_poly(text.chars(), mult) & mask)
        .collect();
    (0, ItemPositions::List(list.into_iter()))
}

fn seed000_place(l: &Layout, h: &ItemHash) -> Place {
    let mask = l.block_bits().wrapping_sub(1);
    let digest = h.digest();
    let hexd = hex(&digest);
    let block = u32::from(digest[0]) % l.blocks.max(1);
    let list: Vec<u64> = SEED000_SEEDS
        .iter()
        .take(l.hashes as usize)
        .map(|seed| legacy_poly(hexd.chars(), seed + 1) & mask)
        .collect();
    (block, ItemPositions::List(list.into_iter()))
}

/// What both legacy schemes do alike: everything but placing an item.
macro_rules! frozen_bitmap {
    () => {
        fn writable(&self) -> bool {
            false
        }

        fn block_check(&self, _: &Layout) -> BlockCheck {
            BlockCheck::MayBeAbsent
        }

        fn alloc(&self, _: &Layout, _: u64) -> Option<Alloc> {
            None
        }

        // A clear deletes an adopted block: it is never made again.
        fn zero(&self, _: &Layout, _: u64) -> Vec<String> {
            vec![String::new()]
        }

        fn args_per_item(&self, l: &Layout) -> usize {
            1 + l.hashes as usize
        }

        fn tx_answers(
            &self,
            l: &Layout,
            _: bool,
            items: usize,
            reply: &Value,
        ) -> Result<Vec<bool>> {
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
            // Grown as bits were set: any length is what it is.
            positional::info_block(l, block, replies, out, None)
        }

        // Legacy bitmaps are adopted as their crawler wrote them, never
        // made: a layout of their parameters, unsplit.
        fn new_layout(&self, params: crate::params::BloomParams, _: u64) -> Result<Layout> {
            Ok(Layout {
                bits: params.bits(),
                hashes: params.hashes(),
                blocks: 1,
                scheme: self.scheme(),
            })
        }
    };
}

impl Store for ScrapyRedisBloomfilter {
    frozen_bitmap!();

    fn scheme(&self) -> Scheme {
        Scheme::ScrapyRedisBloomfilter
    }

    fn fits(&self, l: &Layout) -> bool {
        l.blocks == 1 && l.bits.is_power_of_two()
    }

    fn hashed(&self) -> bool {
        false
    }

    fn script_share<'a>(&self, l: &Layout, batch: Batch<'a>, items: &[usize]) -> ScriptShare<'a> {
        positional::script_share(l, items, |i| Some(scrapy_place(l, batch.item(i))))
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
            Some(scrapy_place(l, batch.item(i)))
        })
    }

    fn locate(&self, l: &Layout, _: &ItemHash, item: Option<&[u8]>) -> Option<Place> {
        Some(scrapy_place(l, item))
    }
}

impl Store for Seed000 {
    frozen_bitmap!();

    fn scheme(&self) -> Scheme {
        Scheme::Seed000
    }

    fn fits(&self, l: &Layout) -> bool {
        l.block_bits() == 1 << 31 && l.blocks <= 256 && l.hashes <= 7
    }

    fn hashed(&self) -> bool {
        true
    }

    fn script_share<'a>(&self, l: &Layout, batch: Batch<'a>, items: &[usize]) -> ScriptShare<'a> {
        positional::script_share(l, items, |i| batch.hash(i).map(|h| seed000_place(l, h)))
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
            batch.hash(i).map(|h| seed000_place(l, h))
        })
    }

    fn locate(&self, l: &Layout, h: &ItemHash, _: Option<&[u8]>) -> Option<Place> {
        Some(seed000_place(l, h))
    }
}
