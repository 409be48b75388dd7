//! A filter's state at a glance: parameters, fill, error rates, memory.

use crate::metadata::Kind;

/// One generation's state.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GenerationInfo {
    /// Sequence number (unique within the filter instance).
    pub seq: u64,
    /// Bits (m).
    pub bits: u64,
    /// Hash functions (k).
    pub hashes: u32,
    /// Redis strings holding it.
    pub blocks: u32,
    /// Items it was sized for.
    pub capacity: u64,
    /// Distinct items inserted.
    pub count: u64,
    /// Creation time, ms since the Unix epoch (server clock).
    pub created_at_ms: i64,
    /// Bits set (BITCOUNT).
    pub set_bits: u64,
    /// `set_bits / bits`.
    pub fill_ratio: f64,
    /// False-positive rate now, from the fill ratio: `fill^k`.
    pub false_positive_rate: f64,
    /// Bytes Redis holds for it now (STRLEN of its blocks).
    pub memory_bytes: u64,
    /// Whether queries consult it.
    pub queried: bool,
    /// Whether writes go to it.
    pub written: bool,
}

/// A filter's state; see [`BloomFilter::info`](crate::BloomFilter::info).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Info {
    /// Filter name.
    pub name: String,
    /// Kind.
    pub kind: Kind,
    /// Structural changes so far (rotations of a circular filter,
    /// expansions of an expanding one).
    pub epoch: u64,
    /// Creation time, ms since the Unix epoch (server clock).
    pub created_at_ms: i64,
    /// Distinct insertions over all generations.
    pub count: u64,
    /// Generations, oldest first.
    pub generations: Vec<GenerationInfo>,
    /// False-positive rate of a query now: `1 - Π(1 - f_i)` over the
    /// generations a query consults.
    pub false_positive_rate: f64,
    /// Bytes Redis holds for all generations.
    pub memory_bytes: u64,
    /// Every metadata field, as stored.
    pub fields: std::collections::BTreeMap<String, String>,
}
