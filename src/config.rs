//! Configuration files: filters declared in TOML, validated at the edge.
//!
//! A file declares one or more filters and, optionally, where Redis is:
//!
//! ```toml
//! [defaults]
//! redis_url_env = "REDIS_URL"      # the URL is in this environment variable
//!
//! [filter.crawl]
//! kind = "bloom"
//! capacity = 100_000_000
//! error_rate = 0.001
//!
//! [filter.recrawl]
//! kind = "circular"
//! generations = 4
//! capacity = 10_000_000
//! schedule = "monthly:1@00:00"
//! ```
//!
//! [`Config::parse`] turns the text into validated values: every filter
//! becomes a [`FilterDef`] holding the library's own validated spec
//! ([`BloomSpec`], [`ExpandingSpec`] or [`CircularSpec`]), so a loaded
//! configuration cannot hold an invalid filter. Unknown keys and bad values
//! are rejected with one [`ConfigError`] naming the file, the line and the
//! key:
//!
//! ```
//! use rotabloom::config::Config;
//! let text = "[filter.recrawl]\nkind = \"circular\"\ngenerations = 1\ncapacity = 10\n";
//! let err = Config::parse(text, "rotabloom.toml").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "rotabloom.toml:3:1: filter.recrawl.generations: 1 is not between 2 and 256"
//! );
//! ```
//!
//! Once a filter exists, its metadata in Redis is the source of truth: a
//! configuration is only used to create filters (`create_or_open`, which
//! refuses a filter whose stored parameters differ) and never rewrites one.
//!
//! A Redis URL may hold a password. [`RedisUrl`] never shows it: its
//! `Display` and `Debug` redact it, and no error of this module contains it.

use crate::{
    BloomFilter, BloomSpec, CircularFilter, CircularSpec, Error, ExpandingFilter, ExpandingSpec,
    FilterName, Kind, Mode, Schedule,
};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

// ---------------------------------------------------------------------------
// Errors and locations

/// A position in a configuration file, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub column: usize,
}

impl Location {
    /// The location of byte `offset` of `text`.
    pub fn of_offset(text: &str, offset: usize) -> Location {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
        Location {
            line,
            column: text[line_start..offset].chars().count() + 1,
        }
    }
}

/// What is wrong with a configuration: one line, naming the file, the
/// position and the key when they are known.
///
/// `Display` gives `FILE:LINE:COLUMN: KEY: MESSAGE` (or the parts that are
/// known). It never contains a password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, as given to [`Config::load`] or [`Config::parse`].
    pub file: String,
    /// Where in the file, when known.
    pub location: Option<Location>,
    /// The dotted key (`filter.recrawl.generations`), when known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    fn new(file: &str, location: Option<Location>, key: Option<String>, message: String) -> Self {
        ConfigError {
            file: file.to_string(),
            location,
            key,
            message: crate::redact_urls(&message),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(l) = self.location {
            write!(f, ":{}:{}", l.line, l.column)?;
        }
        if let Some(k) = &self.key {
            write!(f, ": {k}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// A bad filter setting, before it is tied to a file: the setting's key
/// (`None` for the filter as a whole, e.g. its name) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The setting, as spelled in a configuration file (`error_rate`).
    pub key: Option<&'static str>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.key {
            Some(k) => write!(f, "{k}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ParamError {}

fn param_err(key: &'static str, message: impl Into<String>) -> ParamError {
    ParamError {
        key: Some(key),
        message: message.into(),
    }
}

// ---------------------------------------------------------------------------
// Redis URLs

/// A Redis URL whose password is never shown: `Display` and `Debug` print
/// it with the credentials replaced by `***`. Use
/// [`expose`](Self::expose) only to connect.
///
/// ```
/// use rotabloom::config::RedisUrl;
/// let url = RedisUrl::new("redis://:hunter2@db:6379/0").unwrap();
/// assert_eq!(url.to_string(), "redis://***@db:6379/0");
/// assert!(!format!("{url:?}").contains("hunter2"));
/// assert!(RedisUrl::new("http://db").is_err());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl(String);

impl RedisUrl {
    /// Checks that `url` is a URL the `redis` crate can connect to. The
    /// error message does not repeat the URL.
    pub fn new(url: impl Into<String>) -> Result<RedisUrl, String> {
        let url = url.into();
        let url = url.trim().to_string();
        match redis::IntoConnectionInfo::into_connection_info(url.as_str()) {
            Ok(_) => Ok(RedisUrl(url)),
            Err(_) => Err(
                "not a Redis URL (expected redis://HOST:PORT/DB, rediss://..., or unix:///PATH; a password goes before the host as :PASSWORD@)"
                    .to_string(),
            ),
        }
    }

    /// The URL with its password, to connect. Never print it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The password in the URL, if any (percent-decoding not applied), so
    /// a program can scrub it from text it did not produce itself.
    pub fn password(&self) -> Option<String> {
        let info = redis::IntoConnectionInfo::into_connection_info(self.0.as_str()).ok()?;
        info.redis_settings()
            .password()
            .map(str::to_string)
            .filter(|p| !p.is_empty())
    }
}

/// `text` with the credentials of every URL in it replaced by `***`,
/// including `pass=` / `password=` query parameters.
///
/// ```
/// use rotabloom::config::redact;
/// assert_eq!(redact("redis://u:pw@h/0"), "redis://***@h/0");
/// assert_eq!(redact("unix:///tmp/r.sock?db=1&pass=pw"), "unix:///tmp/r.sock?db=1&pass=***");
/// ```
pub fn redact(text: &str) -> String {
    let mut out = crate::redact_urls(text);
    for param in ["pass=", "password="] {
        let mut from = 0;
        while let Some(i) = out[from..].find(param) {
            let start = from + i;
            let preceded = start == 0 || matches!(out.as_bytes()[start - 1], b'?' | b'&');
            let value = start + param.len();
            if !preceded {
                from = value;
                continue;
            }
            let end = out[value..]
                .find(|c: char| c == '&' || c == '#' || c.is_whitespace() || c == '"' || c == '\'')
                .map(|j| value + j)
                .unwrap_or(out.len());
            out.replace_range(value..end, "***");
            from = value + 3;
        }
    }
    out
}

impl fmt::Display for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(&self.0))
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedisUrl({:?})", redact(&self.0))
    }
}

/// Where the configuration says Redis is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedisSetting {
    /// `redis_url`: the URL itself.
    Url(RedisUrl),
    /// `redis_url_env`: the name of an environment variable holding it.
    Env(String),
}

// ---------------------------------------------------------------------------
// Filter settings

/// The settings of one filter as a person writes them (a section of a
/// configuration file, or command-line flags), before validation.
///
/// Every field is optional; [`validate`](Self::validate) checks that the
/// ones given fit the kind and turns them into a [`FilterDef`].
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
    /// `max_bits`: the largest generation allowed, in bits.
    pub max_bits: Option<u64>,
    /// `max_block_bits`: the block size, in bits.
    pub max_block_bits: Option<u64>,
}

const COMMON_KEYS: &[&str] = &["kind", "max_bits", "max_block_bits"];
const BLOOM_KEYS: &[&str] = &["capacity", "error_rate", "bits", "hashes"];
const EXPANDING_KEYS: &[&str] = &[
    "capacity",
    "error_rate",
    "growth",
    "tightening",
    "max_generations",
    "max_bytes",
];
const CIRCULAR_KEYS: &[&str] = &[
    "capacity",
    "error_rate",
    "generations",
    "mode",
    "schedule",
    "lazy",
];

fn kind_keys(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Bloom => BLOOM_KEYS,
        Kind::Expanding => EXPANDING_KEYS,
        Kind::Circular => CIRCULAR_KEYS,
    }
}

/// Parses a kind name (`bloom`, `expanding`, `circular`).
pub fn parse_kind(s: &str) -> Result<Kind, String> {
    s.parse::<Kind>()
        .map_err(|_| format!("{s:?} is not a kind (bloom, expanding or circular)"))
}

/// Parses a size in bytes: a plain number, or a number with a unit
/// `B`, `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024) or `kB`, `MB`, `GB`,
/// `TB` (powers of 1000). Spaces between the number and the unit are
/// allowed; units are case-insensitive.
///
/// ```
/// use rotabloom::config::parse_bytes;
/// assert_eq!(parse_bytes("4GiB"), Ok(4 << 30));
/// assert_eq!(parse_bytes("1.5 MiB"), Ok(1_572_864));
/// assert_eq!(parse_bytes("2GB"), Ok(2_000_000_000));
/// assert_eq!(parse_bytes("1024"), Ok(1024));
/// assert!(parse_bytes("4 gigs").is_err());
/// ```
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num = num.replace('_', "");
    let bad = || format!("{s:?} is not a size like 4GiB, 512MiB or 1048576");
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(bad()),
    };
    if num.is_empty() {
        return Err(bad());
    }
    if let Ok(n) = num.parse::<u64>() {
        return n
            .checked_mul(mult)
            .ok_or_else(|| format!("{s:?} is too large"));
    }
    let f: f64 = num.parse().map_err(|_| bad())?;
    let v = (f * mult as f64).round();
    if !(v.is_finite() && v >= 0.0 && v < u64::MAX as f64) {
        return Err(format!("{s:?} is too large"));
    }
    Ok(v as u64)
}

impl FilterParams {
    /// The keys that are set, as spelled in a configuration file.
    pub fn keys_set(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        let mut add = |k: &'static str, set: bool| {
            if set {
                keys.push(k)
            }
        };
        add("kind", self.kind.is_some());
        add("capacity", self.capacity.is_some());
        add("error_rate", self.error_rate.is_some());
        add("bits", self.bits.is_some());
        add("hashes", self.hashes.is_some());
        add("growth", self.growth.is_some());
        add("tightening", self.tightening.is_some());
        add("max_generations", self.max_generations.is_some());
        add("max_bytes", self.max_bytes.is_some());
        add("generations", self.generations.is_some());
        add("mode", self.mode.is_some());
        add("schedule", self.schedule.is_some());
        add("lazy", self.lazy.is_some());
        add("max_bits", self.max_bits.is_some());
        add("max_block_bits", self.max_block_bits.is_some());
        keys
    }

    /// Checks the settings for a filter called `name` and builds the
    /// library's validated spec. Library defaults apply to settings left
    /// out (`error_rate` 0.01, `growth` 2, `tightening` 0.5,
    /// `max_generations` 32, `mode` insert-newest-query-all, ...).
    pub fn validate(&self, name: &str) -> Result<FilterDef, ParamError> {
        FilterName::new(name).map_err(|e| ParamError {
            key: None,
            message: e.to_string(),
        })?;
        let kind = self.kind.ok_or_else(|| {
            param_err("kind", "missing (set kind to bloom, expanding or circular)")
        })?;
        let allowed = kind_keys(kind);
        for key in self.keys_set() {
            if !COMMON_KEYS.contains(&key) && !allowed.contains(&key) {
                let mut all: Vec<&str> = COMMON_KEYS.iter().chain(allowed).copied().collect();
                all.sort_unstable();
                return Err(param_err(
                    key,
                    format!(
                        "not a setting of a {kind} filter (its settings: {})",
                        all.join(", ")
                    ),
                ));
            }
        }
        let from_lib = |e: Error| -> ParamError {
            match e {
                Error::InvalidParameter { name, reason } => ParamError {
                    key: Some(name),
                    message: reason,
                },
                Error::TooLarge { .. } => {
                    let key = if self.bits.is_some() {
                        "bits"
                    } else {
                        "capacity"
                    };
                    param_err(key, format!("{e}; raise max_bits if this is intended"))
                }
                other => ParamError {
                    key: None,
                    message: other.to_string(),
                },
            }
        };
        let spec = match kind {
            Kind::Bloom => {
                let mut b = BloomFilter::builder(name);
                match (self.bits, self.hashes) {
                    (Some(bits), Some(hashes)) => {
                        if self.capacity.is_some() || self.error_rate.is_some() {
                            let key = if self.capacity.is_some() {
                                "capacity"
                            } else {
                                "error_rate"
                            };
                            return Err(param_err(
                                key,
                                "give either capacity and error_rate, or bits and hashes, not both",
                            ));
                        }
                        b = b.bits_hashes(bits, hashes);
                    }
                    (Some(_), None) => {
                        return Err(param_err("hashes", "missing (bits needs hashes)"))
                    }
                    (None, Some(_)) => {
                        return Err(param_err("bits", "missing (hashes needs bits)"))
                    }
                    (None, None) => {
                        let capacity = self.capacity.ok_or_else(|| {
                            param_err("capacity", "missing (or give bits and hashes)")
                        })?;
                        b = b.capacity(capacity);
                        if let Some(p) = self.error_rate {
                            b = b.error_rate(p);
                        }
                    }
                }
                if let Some(m) = self.max_bits {
                    b = b.max_bits(m);
                }
                if let Some(m) = self.max_block_bits {
                    b = b.max_block_bits(m);
                }
                FilterSpec::Bloom(b.spec().map_err(from_lib)?)
            }
            Kind::Expanding => {
                let capacity = self.capacity.ok_or_else(|| {
                    param_err("capacity", "missing (items of the first generation)")
                })?;
                let mut b = ExpandingFilter::builder(name).capacity(capacity);
                if let Some(p) = self.error_rate {
                    b = b.error_rate(p);
                }
                if let Some(v) = self.growth {
                    b = b.growth(v);
                }
                if let Some(v) = self.tightening {
                    b = b.tightening(v);
                }
                if let Some(v) = self.max_generations {
                    b = b.max_generations(v);
                }
                if let Some(v) = self.max_bytes {
                    b = b.max_bytes(v);
                }
                if let Some(m) = self.max_bits {
                    b = b.max_bits(m);
                }
                if let Some(m) = self.max_block_bits {
                    b = b.max_block_bits(m);
                }
                FilterSpec::Expanding(b.spec().map_err(from_lib)?)
            }
            Kind::Circular => {
                let generations = self
                    .generations
                    .ok_or_else(|| param_err("generations", "missing (the window, in periods)"))?;
                let capacity = self
                    .capacity
                    .ok_or_else(|| param_err("capacity", "missing (items per period)"))?;
                let mut b = CircularFilter::builder(name)
                    .generations(generations)
                    .capacity(capacity);
                if let Some(p) = self.error_rate {
                    b = b.error_rate(p);
                }
                if let Some(m) = self.mode {
                    b = b.mode(m);
                }
                if let Some(s) = self.schedule {
                    b = b.schedule(s.to_string());
                }
                if let Some(l) = self.lazy {
                    b = b.lazy(l);
                }
                if let Some(m) = self.max_bits {
                    b = b.max_bits(m);
                }
                if let Some(m) = self.max_block_bits {
                    b = b.max_block_bits(m);
                }
                FilterSpec::Circular(Box::new(b.spec().map_err(from_lib)?))
            }
        };
        Ok(FilterDef {
            name: FilterName::new(name).map_err(|e| ParamError {
                key: None,
                message: e.to_string(),
            })?,
            params: self.clone(),
            spec,
            header: None,
            locations: BTreeMap::new(),
        })
    }
}

/// A validated filter spec of any kind.
#[derive(Clone, Debug)]
pub enum FilterSpec {
    /// A [`BloomFilter`].
    Bloom(BloomSpec),
    /// An [`ExpandingFilter`].
    Expanding(ExpandingSpec),
    /// A [`CircularFilter`].
    Circular(Box<CircularSpec>),
}

/// One validated filter: its name, its settings as given, and the
/// library's spec to create it with.
#[derive(Clone, Debug)]
pub struct FilterDef {
    name: FilterName,
    params: FilterParams,
    spec: FilterSpec,
    header: Option<Location>,
    locations: BTreeMap<&'static str, Location>,
}

impl FilterDef {
    /// The filter's name.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The filter's kind.
    pub fn kind(&self) -> Kind {
        match self.spec {
            FilterSpec::Bloom(_) => Kind::Bloom,
            FilterSpec::Expanding(_) => Kind::Expanding,
            FilterSpec::Circular(_) => Kind::Circular,
        }
    }

    /// The settings, as given.
    pub fn params(&self) -> &FilterParams {
        &self.params
    }

    /// The validated spec.
    pub fn spec(&self) -> &FilterSpec {
        &self.spec
    }

    /// Where `key` of this filter was set in the file, if it came from one.
    pub fn location(&self, key: &str) -> Option<Location> {
        self.locations.get(key).copied()
    }

    /// Where the filter's section starts in the file, if it came from one.
    pub fn header(&self) -> Option<Location> {
        self.header
    }
}

// ---------------------------------------------------------------------------
// The file

/// A loaded, validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    file: String,
    redis: Option<(RedisSetting, Location, &'static str)>,
    filters: Vec<FilterDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    defaults: Option<RawDefaults>,
    #[serde(default)]
    filter: BTreeMap<String, Spanned<RawFilter>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    redis_url: Option<Spanned<String>>,
    redis_url_env: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFilter {
    kind: Option<Spanned<String>>,
    capacity: Option<Spanned<i64>>,
    error_rate: Option<Spanned<f64>>,
    bits: Option<Spanned<i64>>,
    hashes: Option<Spanned<i64>>,
    growth: Option<Spanned<f64>>,
    tightening: Option<Spanned<f64>>,
    max_generations: Option<Spanned<i64>>,
    max_bytes: Option<Spanned<IntOrString>>,
    generations: Option<Spanned<i64>>,
    mode: Option<Spanned<String>>,
    schedule: Option<Spanned<String>>,
    lazy: Option<Spanned<bool>>,
    max_bits: Option<Spanned<i64>>,
    max_block_bits: Option<Spanned<i64>>,
}

enum IntOrString {
    Int(i64),
    Str(String),
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IntOrString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a string like \"4GiB\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IntOrString, E> {
                Ok(IntOrString::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IntOrString, E> {
                i64::try_from(v)
                    .map(IntOrString::Int)
                    .map_err(|_| E::custom(format!("{v} is too large")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IntOrString, E> {
                Ok(IntOrString::Str(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Converts raw values to [`FilterParams`], remembering where each key was.
struct Lowering<'a> {
    text: &'a str,
    locations: Locations,
}

impl Lowering<'_> {
    /// The location of a key whose value spans `span`: the start of the key
    /// when it is on the same line, else the value's.
    fn locate(&self, key: &'static str, span: &Range<usize>) -> Location {
        key_location(self.text, key, span)
    }

    fn take<T, U>(
        &mut self,
        key: &'static str,
        v: Option<Spanned<T>>,
        convert: impl FnOnce(T) -> Result<U, String>,
    ) -> Result<Option<U>, KeyError> {
        let Some(v) = v else { return Ok(None) };
        let loc = self.locate(key, &v.span());
        self.locations.insert(key, loc);
        convert(v.into_inner()).map(Some).map_err(|m| (key, m))
    }
}

/// The location of `key` whose value spans `span`: the start of the key
/// when it is on the value's line, else the start of the value.
fn key_location(text: &str, key: &str, span: &Range<usize>) -> Location {
    let mut start = span.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let line_start = text[..start].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let offset = match text[line_start..start].rfind(key) {
        Some(i) => line_start + i,
        None => start,
    };
    Location::of_offset(text, offset)
}

fn non_negative(v: i64) -> Result<u64, String> {
    u64::try_from(v).map_err(|_| format!("{v} is negative"))
}

fn small(v: i64) -> Result<u32, String> {
    if v < 0 {
        return Err(format!("{v} is negative"));
    }
    u32::try_from(v).map_err(|_| format!("{v} is too large"))
}

/// Where each key of a filter was set.
type Locations = BTreeMap<&'static str, Location>;

/// A bad value: the key and what is wrong with it.
type KeyError = (&'static str, String);

fn lower(text: &str, raw: RawFilter) -> (Locations, Result<FilterParams, KeyError>) {
    let mut l = Lowering {
        text,
        locations: BTreeMap::new(),
    };
    let lib_reason = |e: Error| match e {
        Error::InvalidParameter { reason, .. } => reason,
        e => e.to_string(),
    };
    let result = (|| {
        Ok(FilterParams {
            kind: l.take("kind", raw.kind, |s| parse_kind(&s))?,
            capacity: l.take("capacity", raw.capacity, non_negative)?,
            error_rate: l.take("error_rate", raw.error_rate, Ok)?,
            bits: l.take("bits", raw.bits, non_negative)?,
            hashes: l.take("hashes", raw.hashes, small)?,
            growth: l.take("growth", raw.growth, Ok)?,
            tightening: l.take("tightening", raw.tightening, Ok)?,
            max_generations: l.take("max_generations", raw.max_generations, small)?,
            max_bytes: l.take("max_bytes", raw.max_bytes, |v| match v {
                IntOrString::Int(i) => non_negative(i),
                IntOrString::Str(s) => parse_bytes(&s),
            })?,
            generations: l.take("generations", raw.generations, small)?,
            mode: l.take("mode", raw.mode, |s| s.parse::<Mode>().map_err(lib_reason))?,
            schedule: l.take("schedule", raw.schedule, |s| {
                s.parse::<Schedule>().map_err(lib_reason)
            })?,
            lazy: l.take("lazy", raw.lazy, Ok)?,
            max_bits: l.take("max_bits", raw.max_bits, non_negative)?,
            max_block_bits: l.take("max_block_bits", raw.max_block_bits, non_negative)?,
        })
    })();
    (l.locations, result)
}

/// The dotted key at byte `offset` of a TOML document: the table header
/// above it plus the key on its line (a best effort, for error messages of
/// the TOML parser, which give a span but no key).
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let mut table = String::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let line_end = line_start + line.len();
        let t = line.trim();
        let on_this_line = offset >= line_start && (offset < line_end || line_end == text.len());
        if t.starts_with('[') {
            let inner = t.trim_start_matches('[');
            let inner = inner.split(']').next().unwrap_or("");
            let header: String = inner
                .split('.')
                .map(|p| p.trim().trim_matches('"').trim_matches('\''))
                .collect::<Vec<_>>()
                .join(".");
            if on_this_line {
                return Some(header);
            }
            table = header;
        } else if on_this_line {
            if let Some((k, _)) = line.split_once('=') {
                let k = k.trim().trim_matches('"');
                if !k.is_empty() && !k.starts_with('#') {
                    return Some(if table.is_empty() {
                        k.to_string()
                    } else {
                        format!("{table}.{k}")
                    });
                }
            }
            return (!table.is_empty()).then_some(table);
        }
        line_start = line_end;
    }
    (!table.is_empty()).then_some(table)
}

/// Locates the `[filter.NAME]` header (or the `NAME = {` / `filter.NAME.`
/// key) of a filter in the text.
fn find_filter_header(text: &str, name: &str) -> Option<Location> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('[') {
            let inner = rest.split(']').next().unwrap_or("");
            let parts: Vec<String> = inner
                .split('.')
                .map(|p| p.trim().trim_matches('"').trim_matches('\'').to_string())
                .collect();
            if parts.len() == 2 && parts[0] == "filter" && parts[1] == name {
                return Some(Location::of_offset(text, offset + (line.len() - t.len())));
            }
        }
        offset += line.len();
    }
    None
}

impl Config {
    /// Reads and validates the file at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let label = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            let what = match e.kind() {
                std::io::ErrorKind::NotFound => "no such file".to_string(),
                std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                std::io::ErrorKind::InvalidData => "not UTF-8 text".to_string(),
                _ => e.to_string(),
            };
            ConfigError::new(
                &label,
                None,
                None,
                format!("cannot read the configuration: {what}"),
            )
        })?;
        Config::parse(&text, label)
    }

    /// Validates configuration `text`; `file` names it in error messages.
    pub fn parse(text: &str, file: impl Into<String>) -> Result<Config, ConfigError> {
        let file = file.into();
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let (loc, key) = match e.span() {
                Some(span) => (
                    Some(Location::of_offset(text, span.start)),
                    key_at(text, span.start),
                ),
                None => (None, None),
            };
            let message = e.message().trim().replace('\n', "; ");
            ConfigError::new(&file, loc, key, message)
        })?;

        let err = |loc: Option<Location>, key: String, message: String| {
            ConfigError::new(&file, loc, Some(key), message)
        };

        let mut redis = None;
        if let Some(d) = raw.defaults {
            let at = |s: &Spanned<String>, key: &str| key_location(text, key, &s.span());
            match (d.redis_url, d.redis_url_env) {
                (Some(u), Some(_)) => {
                    return Err(err(
                        Some(at(&u, "redis_url")),
                        "defaults.redis_url".into(),
                        "set either redis_url or redis_url_env, not both".into(),
                    ))
                }
                (Some(u), None) => {
                    let loc = at(&u, "redis_url");
                    let url = RedisUrl::new(u.into_inner())
                        .map_err(|m| err(Some(loc), "defaults.redis_url".into(), m))?;
                    redis = Some((RedisSetting::Url(url), loc, "redis_url"));
                }
                (None, Some(v)) => {
                    let loc = at(&v, "redis_url_env");
                    let name = v.into_inner();
                    if name.is_empty() || name.contains(['=', '\0']) {
                        return Err(err(
                            Some(loc),
                            "defaults.redis_url_env".into(),
                            format!("{name:?} is not an environment variable name"),
                        ));
                    }
                    redis = Some((RedisSetting::Env(name), loc, "redis_url_env"));
                }
                (None, None) => {}
            }
        }

        let mut filters = Vec::new();
        for (name, section) in raw.filter {
            let span = section.span();
            let header = find_filter_header(text, &name)
                .unwrap_or_else(|| Location::of_offset(text, span.start));
            let (locations, lowered) = lower(text, section.into_inner());
            let at_key = |key: Option<&str>| -> (Option<Location>, String) {
                match key {
                    Some(k) => (
                        Some(locations.get(k).copied().unwrap_or(header)),
                        format!("filter.{name}.{k}"),
                    ),
                    None => (Some(header), format!("filter.{name}")),
                }
            };
            let params = lowered.map_err(|(k, m)| {
                let (loc, key) = at_key(Some(k));
                err(loc, key, m)
            })?;
            let mut def = params.validate(&name).map_err(|e| {
                let (loc, key) = at_key(e.key);
                err(loc, key, e.message)
            })?;
            def.header = Some(header);
            def.locations = locations;
            filters.push(def);
        }
        filters.sort_by_key(|d| d.header);
        Ok(Config {
            file,
            redis,
            filters,
        })
    }

    /// The file name used in messages.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Every filter, in file order.
    pub fn filters(&self) -> &[FilterDef] {
        &self.filters
    }

    /// The filter called `name`, if the file declares it.
    pub fn filter(&self, name: &str) -> Option<&FilterDef> {
        self.filters.iter().find(|d| d.name() == name)
    }

    /// Where the file says Redis is, if it does.
    pub fn redis_setting(&self) -> Option<&RedisSetting> {
        self.redis.as_ref().map(|(s, _, _)| s)
    }

    /// The Redis URL of the file (`redis_url`, or the environment variable
    /// named by `redis_url_env`), if it gives one. An `redis_url_env` naming
    /// an unset variable, or one holding something else than a Redis URL,
    /// is an error.
    pub fn redis_url(&self) -> Result<Option<RedisUrl>, ConfigError> {
        let Some((setting, loc, key)) = &self.redis else {
            return Ok(None);
        };
        match setting {
            RedisSetting::Url(u) => Ok(Some(u.clone())),
            RedisSetting::Env(var) => {
                let fail = |m: String| {
                    ConfigError::new(&self.file, Some(*loc), Some(format!("defaults.{key}")), m)
                };
                match std::env::var(var) {
                    Ok(v) if !v.trim().is_empty() => RedisUrl::new(v).map(Some).map_err(|m| {
                        fail(format!(
                            "environment variable {var} holds a value that is {m}"
                        ))
                    }),
                    Ok(_) => Err(fail(format!("environment variable {var} is empty"))),
                    Err(std::env::VarError::NotPresent) => {
                        Err(fail(format!("environment variable {var} is not set")))
                    }
                    Err(std::env::VarError::NotUnicode(_)) => {
                        Err(fail(format!("environment variable {var} is not UTF-8")))
                    }
                }
            }
        }
    }

    /// An error about `key` of filter `name` (for example a parameter that
    /// differs from the filter stored in Redis), located where the file
    /// sets it, or at the filter's section when it does not.
    pub fn error_at(&self, name: &str, key: &str, message: impl Into<String>) -> ConfigError {
        let def = self.filter(name);
        let (loc, key) = match def.and_then(|d| d.location(key)) {
            Some(loc) => (Some(loc), format!("filter.{name}.{key}")),
            None => (def.and_then(|d| d.header()), format!("filter.{name}")),
        };
        ConfigError::new(&self.file, loc, Some(key), message.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        let t = "ab\ncdé\nf";
        assert_eq!(Location::of_offset(t, 0), Location { line: 1, column: 1 });
        assert_eq!(Location::of_offset(t, 3), Location { line: 2, column: 1 });
        assert_eq!(Location::of_offset(t, 7), Location { line: 2, column: 4 });
        assert_eq!(Location::of_offset(t, 9), Location { line: 3, column: 2 });
    }

    #[test]
    fn keys_at_offsets() {
        let t = "[defaults]\nredis_url = 1\n\n[filter.a]\nkind = 2\n";
        assert_eq!(key_at(t, 12).as_deref(), Some("defaults.redis_url"));
        assert_eq!(key_at(t, 40).as_deref(), Some("filter.a.kind"));
        assert_eq!(key_at(t, 28).as_deref(), Some("filter.a"));
    }

    #[test]
    fn redaction() {
        assert_eq!(redact("x password=abc&y"), "x password=abc&y");
        assert_eq!(redact("u?password=abc&y"), "u?password=***&y");
        assert_eq!(
            format!("{:?}", RedisUrl::new("redis://:pw@h:1/").unwrap()),
            "RedisUrl(\"redis://***@h:1/\")"
        );
    }
}
