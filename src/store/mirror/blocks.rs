//! The mirror of stores whose generations are blocks of Redis strings
//! used as bitmaps (format 1's own and the legacy schemes): copied
//! `GETRANGE` by `GETRANGE`, read in Redis bit order.

use super::{CopyStep, FrozenBits, Item, Memo, MirrorCopy, Probe};
use crate::error::Result;
use crate::request::Request;
use crate::store::generation::Layout;
use redis::{RedisResult, Value};

/// Bytes per GETRANGE when mirroring a block: copies stay short for the
/// server even for a legacy 256 MiB block.
const CHUNK: u64 = 4 << 20;

/// Bytes `start..=end` of a block.
fn range(key: &str, start: u64, end: u64) -> Request {
    Request::new()
        .read_only()
        .cmd(redis::cmd("GETRANGE").arg(key).arg(start).arg(end).clone())
}

/// A bitmap generation's blocks, as Redis holds them.
#[derive(Debug)]
pub(crate) struct Blocks {
    layout: Layout,
    /// Whether an item's positions depend only on its hash and the layout
    /// (`Store::positions_shared`): then one computation serves every
    /// generation of the layout.
    shared: bool,
    blocks: Vec<Vec<u8>>,
}

impl Blocks {
    pub(crate) fn new(layout: Layout, blocks: Vec<Vec<u8>>) -> Blocks {
        Blocks {
            shared: layout.store().positions_shared(),
            layout,
            blocks,
        }
    }
}

/// Whether bit offset `o` of `block` is set: Redis bit order (offset `o`
/// is bit `7 - o % 8` of byte `o / 8`), bytes past the end read 0.
fn set(block: &[u8], o: u64) -> bool {
    block
        .get((o / 8) as usize)
        .is_some_and(|v| v & (0x80 >> (o % 8)) != 0)
}

impl FrozenBits for Blocks {
    fn bytes(&self) -> u64 {
        self.blocks.iter().map(|b| b.len() as u64).sum()
    }

    /// All of the item's bits set. Needs the item's hash (without it:
    /// false), and the item itself where the scheme places by it.
    fn contains(&self, memo: &mut Memo, (h, item): Item<'_>) -> bool {
        let Some(h) = h else {
            return false;
        };
        if self.shared {
            let (b, positions) = memo.placed(self.layout, h);
            return self
                .blocks
                .get(b as usize)
                .is_some_and(|block| positions.iter().all(|&o| set(block, o)));
        }
        let (b, mut positions) = self.layout.locate(h, item);
        self.blocks
            .get(b as usize)
            .is_some_and(|block| positions.all(|o| set(block, o)))
    }

    fn probe(&self, memo: &mut Memo, (h, _): Item<'_>, i: u32) -> Probe {
        match h {
            Some(h) if self.shared => {
                let (b, positions) = memo.placed(self.layout, h);
                match positions.get(i as usize) {
                    Some(&o) => Probe::At {
                        part: b,
                        byte: o / 8,
                        mask: 0x80 >> (o % 8),
                    },
                    None => Probe::Known(true),
                }
            }
            Some(_) => Probe::Unprobed,
            None => Probe::Known(false),
        }
    }

    fn byte(&self, part: u32, byte: u64) -> Option<u8> {
        self.blocks.get(part as usize)?.get(byte as usize).copied()
    }
}

/// A bitmap generation being copied: its finished blocks, the current
/// one's bytes.
pub(crate) struct SliceCopy {
    layout: Layout,
    keys: Vec<String>,
    /// Whether every block was allocated whole (so a short one is gone),
    /// rather than grown as bits were set (a legacy bitmap).
    allocated: bool,
    done: Vec<Vec<u8>>,
    bytes: Vec<u8>,
    gone: bool,
}

impl SliceCopy {
    /// The copy of a generation of `layout` whose block `b` is `key(b)`.
    pub(crate) fn new(layout: Layout, key: &dyn Fn(u32) -> String, allocated: bool) -> SliceCopy {
        SliceCopy {
            keys: (0..layout.blocks).map(key).collect(),
            layout,
            allocated,
            done: Vec::new(),
            bytes: Vec::new(),
            gone: false,
        }
    }

    fn block_bytes(&self) -> u64 {
        self.layout.block_bits().div_ceil(8)
    }
}

impl MirrorCopy for SliceCopy {
    fn next(&mut self) -> CopyStep {
        if self.gone {
            return CopyStep::Gone;
        }
        let Some(key) = self.keys.get(self.done.len()) else {
            let blocks = std::mem::take(&mut self.done);
            return CopyStep::Done(Box::new(Blocks::new(self.layout, blocks)));
        };
        let start = self.bytes.len() as u64;
        let end = start
            .saturating_add(CHUNK)
            .min(self.block_bytes())
            .saturating_sub(1);
        CopyStep::Send(range(key, start, end))
    }

    /// Takes a GETRANGE reply into the block being copied.
    fn take(&mut self, reply: RedisResult<Value>) -> Result<()> {
        let chunk = match reply? {
            Value::BulkString(b) => b,
            Value::Nil => Vec::new(),
            v => return Err(crate::error::unexpected("GETRANGE", &v)),
        };
        let size = self.block_bytes();
        let left = size.saturating_sub(self.bytes.len() as u64);
        let short = (chunk.len() as u64) < CHUNK.min(left);
        self.bytes.extend_from_slice(&chunk);
        if short && self.allocated {
            // Every block of such a generation is allocated whole, so a
            // short read is a block gone: not mirrored.
            self.gone = true;
            return Ok(());
        }
        // A short read of a legacy bitmap is the end of its string: the
        // rest reads 0, and `Blocks` reads missing bytes as 0.
        if short || self.bytes.len() as u64 >= size {
            self.done.push(std::mem::take(&mut self.bytes));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::generation::Scheme;

    fn copy(allocated: bool) -> SliceCopy {
        let layout = Layout {
            bits: 2 * 8 * 100,
            hashes: 2,
            blocks: 2,
            scheme: Scheme::Md5Edh,
        };
        SliceCopy::new(layout, &|b| format!("block{b}"), allocated)
    }

    fn sent(step: CopyStep) -> Vec<String> {
        match step {
            CopyStep::Send(req) => req.args(0),
            CopyStep::Done(_) => vec!["done".into()],
            CopyStep::Gone => vec!["gone".into()],
        }
    }

    #[test]
    fn a_short_block_grown_as_bits_were_set_ends_there_and_reads_0_after() {
        let mut c = copy(false);
        assert_eq!(sent(c.next()), ["GETRANGE", "block0", "0", "99"]);
        c.take(Ok(Value::BulkString(vec![0xff; 10]))).unwrap();
        // The next block, from its start.
        assert_eq!(sent(c.next()), ["GETRANGE", "block1", "0", "99"]);
        c.take(Ok(Value::Nil)).unwrap();
        let CopyStep::Done(bits) = c.next() else {
            panic!("copied");
        };
        assert_eq!(bits.bytes(), 10);
        assert!(bits.read(Probe::At {
            part: 0,
            byte: 9,
            mask: 1
        }));
        assert!(!bits.read(Probe::At {
            part: 0,
            byte: 10,
            mask: 0x80
        }));
        assert!(!bits.read(Probe::At {
            part: 1,
            byte: 0,
            mask: 0x80
        }));
    }

    #[test]
    fn a_short_block_made_whole_is_gone_and_an_error_reply_is_returned() {
        let mut c = copy(true);
        c.next();
        c.take(Ok(Value::BulkString(vec![0xff; 10]))).unwrap();
        assert!(matches!(c.next(), CopyStep::Gone));
        let mut c = copy(true);
        c.next();
        let e = crate::testkit::server_error("WRONGTYPE not a string");
        assert!(c.take(Err(e)).is_err());
        assert!(matches!(
            c.take(Ok(Value::Int(1))),
            Err(crate::error::Error::UnexpectedReply(_))
        ));
    }
}
