//! RedisBloom (docs/FORMAT.md §6.6): the module of Redis Stack, built into
//! Redis 8. It hands its filters out in chunks (`BF.SCANDUMP`), so frozen
//! generations are mirrored; it sets no size limit of its own.

use super::Bf;
use crate::store::generation::{Backend, Scheme};

pub(in crate::store) static REDISBLOOM: Bf = Bf {
    scheme: Scheme::RedisBloom,
    backend: Backend::RedisBloom,
    needs: "the RedisBloom module (BF.* commands; redisbloom.so, built into Redis 8)",
    scandump: true,
    max_object: None,
};
