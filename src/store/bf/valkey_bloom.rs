//! valkey-bloom (docs/FORMAT.md §6.7): Valkey's bloom module (Valkey 8.1
//! and later bundles; `libvalkey_bloom.so`). It speaks the same BF.* data
//! commands as RedisBloom but has no `BF.SCANDUMP` (so no generation of
//! it is mirrored or dumped), and refuses a filter whose object would pass
//! `bf.bloom-memory-usage-limit`, 128 MiB by default: such a generation is
//! refused at creation, in the same words whatever the server.
//!
//! Tested against the RedisBloom module, which speaks the same commands;
//! not against a valkey-bloom server, which this project's machines lack.

use super::Bf;
use crate::store::generation::{Backend, Scheme};

/// valkey-bloom's default object limit.
const MEMORY_USAGE_LIMIT: u64 = 128 << 20;

pub(in crate::store) static VALKEY_BLOOM: Bf = Bf {
    scheme: Scheme::ValkeyBloom,
    backend: Backend::ValkeyBloom,
    needs: "the valkey-bloom module (BF.* commands; libvalkey_bloom.so, bundled with Valkey 8.1 and later)",
    scandump: false,
    max_object: Some((MEMORY_USAGE_LIMIT, "bf.bloom-memory-usage-limit")),
};
