//! Allocation ahead of need, and a module backend's generations: reserving
//! them, deleting a reservation that lost a creation race. How a block is
//! made is its store's word ([`Alloc`]).

use crate::keys::Keys;
use crate::request::Request;
use crate::scripts;
use crate::view::NewGen;

pub(crate) use crate::store::Alloc;

/// A block to allocate: its key and how.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Block {
    pub key: String,
    pub alloc: Alloc,
}

/// The blocks of the given generations of instance `uid`.
pub(crate) fn blocks_of(keys: &Keys, uid: &str, gens: &[NewGen]) -> Vec<Block> {
    gens.iter()
        .flat_map(|g| {
            // A store that makes no block (an adopted bitmap) has none
            // to allocate.
            let alloc = g.layout.store().alloc(&g.layout, g.capacity);
            alloc.into_iter().flat_map(move |alloc| {
                (0..g.layout.blocks).map(move |b| Block {
                    key: keys.block(uid, g.seq, b),
                    alloc: alloc.clone(),
                })
            })
        })
        .collect()
}

/// How long a block of an instance being created lives before the create
/// script makes it permanent: a creation that dies leaves nothing longer.
/// A creation allocates one block per round trip (about a millisecond per
/// 8 MiB block), so even a filter of hundreds of GiB is published well
/// within it.
pub(crate) const CREATE_LEASE_MS: u64 = 15 * 60 * 1000;

/// One block of an instance being created, with its lease
/// (`lua/alloc_new.lua`).
pub(crate) fn alloc_new_request(block: &Block) -> Request {
    let mut cmd = scripts::ALLOC_NEW.invoke(&[block.key.as_str()]);
    cmd.arg(CREATE_LEASE_MS);
    match block.alloc {
        Alloc::Bytes(bytes) => cmd.arg("bytes").arg(bytes.max(1)),
        Alloc::Reserve(ref args) => cmd.arg(args),
    };
    let mut req = Request::new().unwaited();
    req.script(&scripts::ALLOC_NEW, cmd);
    req
}

/// One block, while the view `uid`/`epoch` is current.
pub(crate) fn prealloc_request(keys: &Keys, uid: &str, epoch: u64, block: &Block) -> Request {
    let mut cmd = scripts::PREALLOC.invoke(&[keys.meta(), block.key.as_str()]);
    cmd.arg(uid).arg(epoch);
    match block.alloc {
        Alloc::Bytes(bytes) => cmd.arg(bytes),
        Alloc::Reserve(ref args) => cmd.arg(args),
    };
    let mut req = Request::new();
    req.script(&scripts::PREALLOC, cmd);
    req
}

/// Deletes the given blocks (none: no command).
pub(crate) fn unlink(blocks: &[Block]) -> Vec<redis::Cmd> {
    if blocks.is_empty() {
        return Vec::new();
    }
    let mut cmd = redis::cmd("UNLINK");
    for b in blocks {
        cmd.arg(&b.key);
    }
    vec![cmd]
}
