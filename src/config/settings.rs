//! The filter settings, in one table.
//!
//! Each row of [`SETTINGS`] names a setting once for every place it shows
//! up: the configuration key (also the metadata field the library stores
//! it under, so a mismatch reported by Redis maps back to the line that set
//! it), the `rotabloom create` flag, the kinds that accept it, its help
//! text, and the [`FilterParams`] field its value goes to. The file reader,
//! the kind check, the command-line flags and the documentation test all
//! read the table, so a new setting is a field of [`FilterParams`], a row
//! here, and the builder call in `validate.rs`.

use super::error::ParamError;
use super::slot::Slot;
use crate::{circular::Mode, metadata::Kind, schedule::Schedule, store::generation::Backend};

/// The settings of one filter as a person writes them (a section of a
/// configuration file, or command-line flags), before validation.
///
/// Every field is optional; [`validate`](Self::validate) checks that the
/// ones given fit the kind and turns them into a
/// [`FilterDef`](super::FilterDef).
///
/// ```
/// use rotabloom::config::FilterParams;
/// use rotabloom::Kind;
/// let mut p = FilterParams::default();
/// p.kind = Some(Kind::Bloom);
/// p.capacity = Some(1_000_000);
/// p.error_rate = Some(0.001);
/// let def = p.validate("crawl").unwrap();
/// assert_eq!(def.kind(), Kind::Bloom);
/// p.generations = Some(4);
/// assert_eq!(p.validate("crawl").unwrap_err().key, Some("generations"));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct FilterParams {
    /// `kind`: bloom, expanding or circular. Required.
    pub kind: Option<Kind>,
    /// `capacity`: items (bloom), items of the first generation
    /// (expanding), items per period (circular).
    pub capacity: Option<u64>,
    /// `error_rate`: the false-positive rate of a query at capacity.
    pub error_rate: Option<f64>,
    /// `bits` (bloom): explicit size, with `hashes`, instead of capacity.
    pub bits: Option<u64>,
    /// `hashes` (bloom): explicit number of hash functions, with `bits`.
    pub hashes: Option<u32>,
    /// `growth` (expanding).
    pub growth: Option<f64>,
    /// `tightening` (expanding).
    pub tightening: Option<f64>,
    /// `max_generations` (expanding).
    pub max_generations: Option<u32>,
    /// `max_bytes` (expanding); 0 for no limit.
    pub max_bytes: Option<u64>,
    /// `generations` (circular).
    pub generations: Option<u32>,
    /// `mode` (circular).
    pub mode: Option<Mode>,
    /// `schedule` (circular).
    pub schedule: Option<Schedule>,
    /// `lazy` (circular).
    pub lazy: Option<bool>,
    /// `backend`: where generations are kept.
    pub backend: Option<Backend>,
    /// `max_bits`: the largest generation allowed, in bits.
    pub max_bits: Option<u64>,
    /// `max_block_bits`: the block size, in bits.
    pub max_block_bits: Option<u64>,
    /// `shards`: split the filter over this many shards (docs/FORMAT.md
    /// §11); 1 (the default) is an unsharded filter.
    pub shards: Option<u32>,
}

const ALL: &[Kind] = Kind::ALL;

/// Every filter setting, in the order of the documentation.
static SETTINGS: &[Setting] = &[
    Setting {
        key: "kind",
        flag: "kind",
        kinds: ALL,
        value_name: "KIND",
        help: "bloom, expanding or circular",
        slot: |p| Slot::Word(&mut p.kind),
    },
    Setting {
        key: "capacity",
        flag: "capacity",
        kinds: ALL,
        value_name: "N",
        help: "Items (bloom), items of the first generation (expanding), items per period (circular)",
        slot: |p| Slot::Count(&mut p.capacity),
    },
    Setting {
        key: "error_rate",
        flag: "error-rate",
        kinds: ALL,
        value_name: "P",
        help: "False-positive rate of a query at capacity (default 0.01)",
        slot: |p| Slot::Number(&mut p.error_rate),
    },
    Setting {
        key: "bits",
        flag: "bits",
        kinds: &[Kind::Bloom],
        value_name: "M",
        help: "Explicit size in bits (with --hashes) instead of --capacity",
        slot: |p| Slot::Count(&mut p.bits),
    },
    Setting {
        key: "hashes",
        flag: "hashes",
        kinds: &[Kind::Bloom],
        value_name: "K",
        help: "Explicit number of hash functions (with --bits)",
        slot: |p| Slot::Small(&mut p.hashes),
    },
    Setting {
        key: "growth",
        flag: "growth",
        kinds: &[Kind::Expanding],
        value_name: "S",
        help: "Capacity factor from one generation to the next (default 2)",
        slot: |p| Slot::Number(&mut p.growth),
    },
    Setting {
        key: "tightening",
        flag: "tightening",
        kinds: &[Kind::Expanding],
        value_name: "R",
        help: "Error-rate factor from one generation to the next (default 0.5)",
        slot: |p| Slot::Number(&mut p.tightening),
    },
    Setting {
        key: "max_generations",
        flag: "max-generations",
        kinds: &[Kind::Expanding],
        value_name: "N",
        help: "Most generations (default 32)",
        slot: |p| Slot::Small(&mut p.max_generations),
    },
    Setting {
        key: "max_bytes",
        flag: "max-bytes",
        kinds: &[Kind::Expanding],
        value_name: "SIZE",
        help: "Most bytes of all generations (e.g. 4GiB; default: no limit)",
        slot: |p| Slot::Bytes(&mut p.max_bytes),
    },
    Setting {
        key: "generations",
        flag: "generations",
        kinds: &[Kind::Circular],
        value_name: "N",
        help: "Number of generations, the window in periods (2 to 256)",
        slot: |p| Slot::Small(&mut p.generations),
    },
    Setting {
        key: "mode",
        flag: "mode",
        kinds: &[Kind::Circular],
        value_name: "MODE",
        help: "insert-newest-query-all (default) or insert-all-query-oldest",
        slot: |p| Slot::Word(&mut p.mode),
    },
    Setting {
        key: "schedule",
        flag: "every",
        kinds: &[Kind::Circular],
        value_name: "SCHEDULE",
        help: "Rotation schedule (30d, 6h, daily@03:00, weekly:mon@03:00, monthly:1@00:00, ...)",
        slot: |p| Slot::Word(&mut p.schedule),
    },
    Setting {
        key: "lazy",
        flag: "lazy",
        kinds: &[Kind::Circular],
        value_name: "",
        help: "Rotate lazily, on the first operation after a boundary",
        slot: |p| Slot::Switch(&mut p.lazy),
    },
    Setting {
        key: "backend",
        flag: "backend",
        kinds: ALL,
        value_name: "BACKEND",
        help: "Where generations are kept: bitmap (Redis strings, default), or a bloom module's keys: redisbloom (RedisBloom) or valkey-bloom (Valkey's module)",
        slot: |p| Slot::Word(&mut p.backend),
    },
    Setting {
        key: "max_bits",
        flag: "max-bits",
        kinds: ALL,
        value_name: "M",
        help: "Largest generation allowed, in bits (default 2^37)",
        slot: |p| Slot::Count(&mut p.max_bits),
    },
    Setting {
        key: "max_block_bits",
        flag: "max-block-bits",
        kinds: ALL,
        value_name: "B",
        help: "Block size in bits (default 2^26)",
        slot: |p| Slot::Count(&mut p.max_block_bits),
    },
    Setting {
        key: "shards",
        flag: "shards",
        kinds: ALL,
        value_name: "S",
        help: "Split the filter over S shards, spread over the masters of a Redis Cluster, each sized for its share of capacity (default 1: unsharded)",
        slot: |p| Slot::Small(&mut p.shards),
    },
];

/// One filter setting: a row of the table behind configuration files,
/// `rotabloom create`'s flags and their documentation.
#[derive(Debug)]
pub struct Setting {
    key: &'static str,
    flag: &'static str,
    kinds: &'static [Kind],
    value_name: &'static str,
    help: &'static str,
    slot: fn(&mut FilterParams) -> Slot<'_>,
}

impl Setting {
    /// The key in a configuration file, which is also the field the
    /// filter's metadata stores it under (`error_rate`).
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// The long command-line flag, without `--` (`error-rate`).
    pub fn flag(&self) -> &'static str {
        self.flag
    }

    /// The kinds of filter that take this setting.
    pub fn kinds(&self) -> &'static [Kind] {
        self.kinds
    }

    /// Whether a filter of `kind` takes this setting.
    pub fn accepts(&self, kind: Kind) -> bool {
        self.kinds.contains(&kind)
    }

    /// One line of help, for `--help`.
    pub fn help(&self) -> &'static str {
        self.help
    }

    /// The placeholder of its value in help (`P`), or `None` for a switch,
    /// a flag that takes no value on the command line.
    pub fn value_name(&self) -> Option<&'static str> {
        let switch = matches!((self.slot)(&mut FilterParams::default()), Slot::Switch(_));
        (!switch).then_some(self.value_name)
    }

    /// The words the setting takes (`kind`, `mode`, `backend`), or
    /// examples where they are open-ended (`schedule`); empty for a
    /// number, a size or a switch.
    ///
    /// ```
    /// let backend = rotabloom::config::settings().iter().find(|s| s.key() == "backend").unwrap();
    /// assert_eq!(backend.words(), ["bitmap", "redisbloom", "valkey-bloom"]);
    /// ```
    pub fn words(&self) -> Vec<&'static str> {
        match (self.slot)(&mut FilterParams::default()) {
            Slot::Word(w) => w.words(),
            _ => Vec::new(),
        }
    }

    /// Whether the value is a size in bytes (written `4GiB`, shown so).
    pub fn is_size(&self) -> bool {
        matches!((self.slot)(&mut FilterParams::default()), Slot::Bytes(_))
    }

    /// Whether only some kinds take the setting: a parameter of the kind,
    /// shown beside it.
    pub fn is_of_some_kinds(&self) -> bool {
        self.kinds.len() < Kind::ALL.len()
    }

    pub(super) fn slot<'a>(&self, params: &'a mut FilterParams) -> Slot<'a> {
        (self.slot)(params)
    }
}

/// Every filter setting, in a stable order (the documentation's).
pub fn settings() -> &'static [Setting] {
    SETTINGS
}

/// The setting spelled `key` in a configuration file.
pub(super) fn setting(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// The keys a filter of `kind` takes, sorted, for messages.
pub(super) fn keys_of(kind: Kind) -> Vec<&'static str> {
    let mut keys: Vec<_> = SETTINGS
        .iter()
        .filter(|s| s.accepts(kind))
        .map(|s| s.key)
        .collect();
    keys.sort_unstable();
    keys
}

impl FilterParams {
    /// The keys that are set, as spelled in a configuration file, in the
    /// order of [`settings`].
    pub fn keys_set(&self) -> Vec<&'static str> {
        // The table reaches fields through `&mut` only (one accessor per
        // row serves reading and writing), hence the scratch copy.
        let mut scratch = self.clone();
        SETTINGS
            .iter()
            .filter(|s| s.slot(&mut scratch).is_set())
            .map(|s| s.key)
            .collect()
    }

    /// Takes every setting `other` has (its value replaces this one's).
    ///
    /// ```
    /// use rotabloom::config::FilterParams;
    /// let mut p = FilterParams::default();
    /// p.set("capacity", "1000").unwrap();
    /// let mut q = FilterParams::default();
    /// q.set("error_rate", "0.01").unwrap();
    /// p.merge(q);
    /// assert_eq!((p.capacity, p.error_rate), (Some(1000), Some(0.01)));
    /// ```
    pub fn merge(&mut self, mut other: FilterParams) {
        for s in SETTINGS {
            s.slot(self).take_from(s.slot(&mut other));
        }
    }

    /// Sets the setting spelled `key` in a configuration file from `value`
    /// as written on a command line (`"0.001"`, `"4GiB"`, `"true"`).
    /// Whether the kind takes it is checked by [`validate`](Self::validate).
    ///
    /// ```
    /// use rotabloom::config::FilterParams;
    /// let mut p = FilterParams::default();
    /// p.set("max_bytes", "4GiB").unwrap();
    /// assert_eq!(p.max_bytes, Some(4 << 30));
    /// let e = p.set("kind", "bloomy").unwrap_err();
    /// assert_eq!(e.to_string(), "kind: \"bloomy\" is not a kind (bloom, expanding or circular)");
    /// ```
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ParamError> {
        let s = setting(key).ok_or_else(|| ParamError::whole(format!("no setting {key:?}")))?;
        s.slot(self)
            .set_text(value)
            .map_err(|m| ParamError::at(s.key, m))
    }
}

#[cfg(test)]
mod tests;
