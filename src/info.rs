//! A filter's state at a glance: parameters, fill, error rates, memory,
//! and what looks wrong with it.

use crate::metadata::Kind;
use std::fmt;

/// One generation's state.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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
    /// What looks wrong with the filter, from what the info request read
    /// (see [`WarningCode`]); empty when all is well.
    pub warnings: Vec<Warning>,
}

impl Info {
    /// The most severe level among the warnings, `None` without warnings.
    pub fn worst_level(&self) -> Option<Level> {
        self.warnings.iter().map(|w| w.level).max()
    }
}

/// How serious a [`Warning`] is. Ordered: `Info < Warn < Error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
pub enum Level {
    /// Worth knowing; nothing to do.
    Info,
    /// Needs attention soon.
    Warn,
    /// Answers are wrong, or about to be: items lost, false-positive rate
    /// above the target, writes failing.
    Error,
}

impl Level {
    /// `info`, `warn` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a [`Warning`] is about. New codes may be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize),
    serde(rename_all = "snake_case")
)]
#[non_exhaustive]
pub enum WarningCode {
    /// A bloom or circular filter's deciding generation holds its
    /// capacity, so writes of new items fail under
    /// [`WhenFull::Error`](crate::WhenFull::Error), the default (error); a
    /// generation taking writes holds more items than it was sized for
    /// (error); or nearly as many (warn, at 90%).
    OverCapacity,
    /// The false-positive rate of a query now, estimated from the bits
    /// set, is above the filter's target `error_rate`.
    FalsePositiveRateAboveTarget,
    /// An expanding filter's newest generation is full and no further
    /// generation may be appended (`max_generations`, `max_bytes`): writes
    /// of new items fail.
    AtLimit,
    /// A block of a listed generation is missing or shorter than its full
    /// size: its bits were lost (evicted, deleted).
    MissingBlock,
    /// A key of the filter holds another type of value. `info` fails with
    /// [`Error::WrongType`](crate::Error::WrongType) then, naming the key;
    /// `rotabloom status` reports that failure with this code.
    WrongKeyType,
    /// A circular filter's scheduled rotation is overdue.
    RotationOverdue,
    /// The server's `maxmemory-policy` may evict filter keys.
    EvictionPolicy,
    /// The server keeps no data across restarts.
    NoPersistence,
    /// Shards of a sharded filter disagree with its root's whole-filter
    /// targets (docs/FORMAT.md §11.8): an interrupted rotation, clear or
    /// conversion. An error: its answers are not one filter's until the
    /// change is run again.
    ShardsDisagree,
}

impl WarningCode {
    /// The code in snake case, as in JSON: `over_capacity`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::OverCapacity => "over_capacity",
            WarningCode::FalsePositiveRateAboveTarget => "false_positive_rate_above_target",
            WarningCode::AtLimit => "at_limit",
            WarningCode::MissingBlock => "missing_block",
            WarningCode::WrongKeyType => "wrong_key_type",
            WarningCode::RotationOverdue => "rotation_overdue",
            WarningCode::EvictionPolicy => "eviction_policy",
            WarningCode::NoPersistence => "no_persistence",
            WarningCode::ShardsDisagree => "shards_disagree",
        }
    }
}

impl fmt::Display for WarningCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something wrong, or about to be, with a filter or its server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Warning {
    /// What it is about.
    pub code: WarningCode,
    /// How serious it is.
    pub level: Level,
    /// One line for people.
    pub message: String,
}

impl Warning {
    /// A warning.
    pub fn new(code: WarningCode, level: Level, message: impl Into<String>) -> Warning {
        Warning {
            code,
            level,
            message: message.into(),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]: {}", self.level, self.code, self.message)
    }
}
