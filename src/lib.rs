#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod any;
mod batch;
mod bloom;
mod cache;
mod circular;
mod clock;
pub mod config;
pub mod connect;
mod creates;
pub mod dump;
mod engine;
mod error;
mod exec;
mod expanding;
mod full;
mod handle;
mod hashing;
mod info;
mod items;
mod joint;
mod keys;
pub mod kinds;
mod legacy;
mod machine;
mod metadata;
mod params;
mod poison;
mod proto;
mod redact;
mod request;
mod schedule;
mod scripts;
mod shard;
mod store;
#[cfg(test)]
mod testkit;
mod uid;
mod view;
mod wait;
mod words;

pub use any::AnyFilter;
pub use batch::{Delivery, IdempotentBatch, DEFAULT_RETRY_WINDOW};
pub use bloom::{BloomBuilder, BloomFilter, BloomSpec};
pub use circular::{
    generation_sizing as circular_generation_sizing, CircularBuilder, CircularFilter, CircularSpec,
    Mode, MAX_CIRCULAR_GENERATIONS,
};
pub use clock::{Clock, ManualClock, ServerClock, SystemClock};
pub use engine::now::server_time;
#[cfg(feature = "async")]
pub use engine::now::server_time_async;
pub use engine::roll::Rotation;
pub use error::{Error, Fate, Partial, RedisError, Result, ShardFailure};
pub use expanding::{ExpandingBuilder, ExpandingFilter, ExpandingSpec, MAX_GENERATIONS};
pub use full::WhenFull;
pub use handle::{Filter, FilterKind, OneKind};
pub use hashing::{ItemHash, Positions};
pub use info::{GenerationInfo, Info, Level, Warning, WarningCode};
pub use keys::{FilterName, Keys, KEY_PREFIX};
pub use legacy::{Adoption, Legacy};
pub use metadata::{Kind, FORMAT_VERSION};
pub use params::{
    current_false_positive_rate, estimate_items, false_positive_rate, optimal_bits,
    optimal_bits_per_item, optimal_hashes, shard_capacity, BloomParams, ErrorRate,
    DEFAULT_MAX_BITS, DEFAULT_MAX_BLOCK_BITS, MAX_BLOCK_BITS, MAX_HASHES, MIN_BITS, MIN_SIZED_BITS,
};
pub use proto::create::Opened;
pub use redact::redact_urls;
pub use schedule::{Every, Schedule};
pub use shard::{
    ShardDisagreement, ShardOff, ShardPlan, ShardableBuilder, ShardedBatch, ShardedBuilder,
    ShardedFilter, DEFAULT_CREATE_LEASE, MAX_SHARDS, SHARDED_FORMAT,
};
pub use store::generation::{Backend, Generation, ItemPositions, Layout, Scheme};
pub use wait::{WaitReplicas, DEFAULT_WAIT_TIMEOUT};
