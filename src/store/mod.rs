//! The backends: where a generation's items live, as policies. Each scheme
//! of docs/FORMAT.md §4, §6.6 and §6.7 is one [`Store`]: how an item's
//! bits are found (or whether the store places items itself), what a data
//! call sends and reads back, how blocks are made, checked, emptied,
//! counted, mirrored and dumped, and what the server lacks when it cannot
//! serve it. The engine and the request builders ask the generation's
//! store and never name a scheme; adding a backend is a module here (or,
//! for another module of the BF.* dialect, a value in `bf/`), its names in
//! `names.rs` and one line in [`STORES`]. A generation's own types
//! (`generation.rs`) live here too, below the stores, which read them.

pub(crate) mod bf;
mod bitmap;
pub mod generation;
mod legacy;
mod methods;
pub(crate) mod mirror;
pub(crate) mod names;
mod positional;

use names::{Backend, Scheme};

pub(crate) use positional::COUNT_BYTES;

use crate::error::{Error, Result};
use crate::items::Batch;
use crate::store::generation::{BlockCheck, Layout};
use redis::Value;
use std::fmt;

/// How a block is made when its generation is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Alloc {
    /// Zero bytes up to this size.
    Bytes(u64),
    /// A module's empty filter: the allocation scripts' arguments, the
    /// module's tag first (docs/FORMAT.md §10), as its store words them.
    Reserve(Vec<String>),
}

/// One generation's share of a data script call (`lua/data.lua`): the
/// blocks its items touch (their keys are passed, ascending) and, per
/// item, what the group takes.
pub(crate) struct ScriptShare<'a> {
    /// Whether the store places the items itself: the script then calls
    /// a module (`bf/dialect.lua`), which it marks by the role letter's case.
    module: bool,
    /// k, as the group header gives it (0 for a module).
    pub k: u32,
    pub touched: Vec<u32>,
    body: Body<'a>,
}

/// Per item, in call order: its block and positions, or itself.
enum Body<'a> {
    Placed(Vec<(u32, crate::store::generation::ItemPositions)>),
    Items(Vec<&'a [u8]>),
}

impl<'a> ScriptShare<'a> {
    /// A positional store's share.
    pub(super) fn placed(
        k: u32,
        touched: Vec<u32>,
        located: Vec<(u32, crate::store::generation::ItemPositions)>,
    ) -> ScriptShare<'a> {
        ScriptShare {
            module: false,
            k,
            touched,
            body: Body::Placed(located),
        }
    }

    /// A share whose store takes the items themselves (a module, which
    /// places them), in one key.
    pub(super) fn items(items: Vec<&'a [u8]>) -> ScriptShare<'a> {
        ScriptShare {
            module: true,
            k: 0,
            touched: vec![0],
            body: Body::Items(items),
        }
    }

    /// The group's role letter (`code`) as the data script reads it.
    pub fn role(&self, code: &str) -> String {
        match self.module {
            true => code.to_uppercase(),
            false => code.to_string(),
        }
    }

    /// Appends the per-item arguments: each item's block (as its index
    /// among the keys passed) and positions, or the item itself. Numbers
    /// go straight into the command, with no string in between.
    pub fn write_args(self, cmd: &mut redis::Cmd) {
        match self.body {
            Body::Placed(located) => {
                for (block, positions) in located {
                    cmd.arg(self.touched.binary_search(&block).unwrap_or_default());
                    for p in positions {
                        cmd.arg(p);
                    }
                }
            }
            Body::Items(items) => {
                for item in items {
                    cmd.arg(item);
                }
            }
        }
    }
}

/// One command of a guarded transaction for one generation: the items it
/// covers (round positions, in order) and how to read its reply.
pub(crate) struct TxCommand {
    pub cmd: redis::Cmd,
    pub positions: Vec<usize>,
}

/// What a generation's blocks held when read for `info`.
#[derive(Debug, Default)]
pub(crate) struct Held {
    pub set_bits: u64,
    pub memory_bytes: u64,
    /// The count the store keeps itself, when it does (`own_count`).
    pub items: Option<u64>,
    /// (block, bytes held) of missing or short blocks.
    pub short: Vec<(u32, u64)>,
    /// A missing block is lost data even if the generation's count is 0:
    /// the store makes its blocks with the generation (a module's key),
    /// not on the first write (a bitmap's), and keeps the count in them.
    pub gone: bool,
}

/// A backend's policy for one generation.
pub(crate) trait Store: Send + Sync + fmt::Debug {
    /// The scheme it stores, as the metadata names it.
    fn scheme(&self) -> Scheme;

    /// Whether a stored layout is one this scheme can have (§6.4).
    fn fits(&self, l: &Layout) -> bool;

    /// Whether rotabloom writes it (legacy bitmaps are frozen).
    fn writable(&self) -> bool {
        true
    }

    /// What a call checks of each block before it reads it, in the same
    /// atomic step.
    fn block_check(&self, l: &Layout) -> BlockCheck;

    /// How each block is made when its generation is; `None`: never (an
    /// adopted bitmap is taken as it is).
    fn alloc(&self, l: &Layout, capacity: u64) -> Option<Alloc>;

    /// Whether a generation must exist before a roll lists it (a module
    /// filter takes no item before it is reserved), rather than being
    /// made lazily on first write.
    fn made_before_listed(&self) -> bool {
        false
    }

    /// How a clear empties one block: the arguments of `lua/zero.lua`.
    fn zero(&self, l: &Layout, capacity: u64) -> Vec<String>;

    /// Whether the store itself refuses items past capacity, so writes
    /// stop there whatever the handle's `when_full` says.
    fn caps_itself(&self) -> bool {
        false
    }

    /// The command that reads the generation's count from block `key`,
    /// for a store that keeps it itself, exactly and in the same atomic
    /// step as its writes (a module's own count, docs/FORMAT.md §6.6):
    /// its writers then keep no count in the metadata, reserve no room
    /// and commit nothing after a transaction. `None`: the count is the
    /// metadata's `gen.<seq>.count`.
    fn own_count(&self, _key: &str) -> Option<redis::Cmd> {
        None
    }

    /// Why a dump cannot copy its blocks as bytes, if it cannot.
    fn undumpable(&self) -> Option<&'static str> {
        None
    }

    /// What the server lacks, when `e` says it lacks the module this
    /// store needs (in words for [`Error::ModuleMissing`]).
    fn lacks(&self, _e: &Error) -> Option<&'static str> {
        None
    }

    /// Whether an item's MD5 hash places it (so the operation hashes).
    fn hashed(&self) -> bool;

    /// Arguments one item takes in a data request.
    fn args_per_item(&self, l: &Layout) -> usize;

    /// The generation's share of one data script call over `items`
    /// (indexes into `batch`).
    fn script_share<'a>(&self, l: &Layout, batch: Batch<'a>, items: &[usize]) -> ScriptShare<'a>;

    /// The commands of a guarded transaction reading (`set` false) or
    /// writing `items` (round position, batch index) of the generation
    /// whose block `b` is `key(b)`, at most `per_command` items each.
    fn tx_commands(
        &self,
        l: &Layout,
        key: &dyn Fn(u32) -> String,
        batch: Batch<'_>,
        items: &[(usize, usize)],
        set: bool,
        per_command: usize,
    ) -> Vec<TxCommand>;

    /// Per item of a command, from its reply: whether the item was
    /// (already) all there.
    fn tx_answers(&self, l: &Layout, set: bool, items: usize, reply: &Value) -> Result<Vec<bool>>;

    /// The commands that read block `key` for `info`, each with its cost
    /// in bytes counted (so that a round trip of them stays short).
    fn info_commands(&self, l: &Layout, key: &str) -> Vec<(redis::Cmd, u64)>;

    /// What one block held, from the replies to its `info_commands`.
    fn info_block(
        &self,
        l: &Layout,
        block: u32,
        replies: &mut dyn Iterator<Item = redis::RedisResult<Value>>,
        out: &mut Held,
    ) -> Result<()>;

    /// The copy into memory (the mirror) of frozen generation `gen`, whose
    /// block `b` is `key(b)`; `None`: never mirrored. By default its
    /// blocks are bitmaps, copied `GETRANGE` by `GETRANGE`; a short block
    /// is gone if `block_check` wants it whole, and otherwise ends there
    /// (grown as bits were set: the rest reads 0).
    fn mirror(
        &self,
        gen: &crate::store::generation::Generation,
        key: &dyn Fn(u32) -> String,
    ) -> Option<Box<dyn mirror::MirrorCopy>> {
        let whole = self.block_check(&gen.layout) != BlockCheck::MayBeAbsent;
        Some(Box::new(mirror::blocks::SliceCopy::new(
            gen.layout, key, whole,
        )))
    }

    /// Where an item's bits are in a block: its block and positions, for
    /// stores that place bits themselves (`None`: the store places items).
    fn locate(
        &self,
        l: &Layout,
        h: &crate::hashing::ItemHash,
        item: Option<&[u8]>,
    ) -> Option<(u32, crate::store::generation::ItemPositions)>;

    /// Whether an item's positions depend only on its hash and the
    /// layout, so that one computation serves every generation of that
    /// layout (the mirror shares it between them).
    fn positions_shared(&self) -> bool {
        false
    }

    /// The public backend that makes generations of this store, if any
    /// (legacy bitmaps are only adopted).
    fn backend(&self) -> Option<crate::store::generation::Backend> {
        None
    }

    /// The layout of a new generation of `params` (a store that splits a
    /// generation into blocks does it here), or why the store cannot hold
    /// one so big.
    fn new_layout(&self, params: crate::params::BloomParams, max_block_bits: u64)
        -> Result<Layout>;

    /// A command that fails unless the server can serve this store (a
    /// module's command on an existing key), if it needs more than Redis.
    fn presence_probe(&self, _key: &str) -> Option<redis::Cmd> {
        None
    }
}

/// Every backend, one per scheme: the one list a new backend joins.
static STORES: [&dyn Store; 5] = [
    &bitmap::Bitmap,
    &bf::REDISBLOOM,
    &bf::VALKEY_BLOOM,
    &legacy::ScrapyRedisBloomfilter,
    &legacy::Seed000,
];

/// The store of format 1's own generations: where a view without one
/// (never the case of a decoded view) falls back.
pub(crate) fn bitmap() -> &'static dyn Store {
    &bitmap::Bitmap
}

/// The store of `scheme`.
pub(crate) fn of(scheme: Scheme) -> &'static dyn Store {
    STORES
        .iter()
        .copied()
        .find(|s| s.scheme() == scheme)
        .unwrap_or(&bitmap::Bitmap)
}

/// `e`, or when one of `stores` says it means the server lacks that
/// store's module, [`Error::ModuleMissing`] for filter `name`.
pub(crate) fn missing_module(
    name: &str,
    mut stores: impl Iterator<Item = &'static dyn Store>,
    e: Error,
) -> Error {
    match stores.find_map(|s| s.lacks(&e)) {
        Some(needs) => Error::ModuleMissing {
            name: name.to_string(),
            needs,
        },
        None => e,
    }
}

/// The store that makes the generations of `backend`.
pub(crate) fn for_backend(backend: Backend) -> &'static dyn Store {
    STORES
        .iter()
        .copied()
        .find(|s| s.backend() == Some(backend))
        .unwrap_or(&bitmap::Bitmap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheme_has_exactly_one_store() {
        for &scheme in Scheme::ALL {
            let n = STORES.iter().filter(|s| s.scheme() == scheme).count();
            assert_eq!(n, 1, "{scheme:?}");
            assert_eq!(of(scheme).scheme(), scheme);
        }
        for &backend in Backend::ALL {
            assert_eq!(for_backend(backend).backend(), Some(backend));
        }
    }
}
