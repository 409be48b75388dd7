//! The generation types' questions that only a backend can answer. They
//! live here, not in `generation`, so that the types stay plain data and
//! the stores may use them without an import cycle.

use super::Store;
use crate::hashing::ItemHash;
use crate::params::BloomParams;
use crate::store::generation::{Backend, ItemPositions, Layout, Scheme};

impl Scheme {
    /// Whether rotabloom may write with this scheme (legacy ones are frozen).
    pub fn writable(self) -> bool {
        super::of(self).writable()
    }

    /// Whether the generation is a module's key rather than a bitmap.
    pub fn is_module(self) -> bool {
        // A bitmap's blocks are bytes a dump copies; a module's key is not.
        super::of(self).undumpable().is_some()
    }
}

impl Backend {
    /// The layout of a generation of `params` on this backend, or why the
    /// backend cannot hold one so big.
    pub(crate) fn layout(
        self,
        params: BloomParams,
        max_block_bits: u64,
    ) -> crate::error::Result<Layout> {
        super::for_backend(self).new_layout(params, max_block_bits)
    }

    /// The scheme of the generations this backend makes.
    pub(crate) fn scheme(self) -> Scheme {
        super::for_backend(self).scheme()
    }
}

impl Layout {
    /// The backend policy of this layout's scheme.
    pub(crate) fn store(&self) -> &'static dyn Store {
        super::of(self.scheme)
    }

    /// The arguments one item takes in a data request: its block and its
    /// bit positions, or for a RedisBloom generation the item itself.
    pub(crate) fn args_per_item(&self) -> usize {
        self.store().args_per_item(self)
    }

    /// Where an item's bits are: its block and its positions in that block.
    /// `item` is needed only by schemes whose `needs_item` is true; without
    /// it they place the item as if it were empty.
    pub fn locate(&self, h: &ItemHash, item: Option<&[u8]>) -> (u32, ItemPositions) {
        // A store that places items itself has no positions to give.
        self.store()
            .locate(self, h, item)
            .unwrap_or((0, ItemPositions::List(Vec::new().into_iter())))
    }
}
