//! From settings as written ([`FilterParams`]) to a validated filter
//! ([`FilterDef`]) holding the library's own spec, so that the library's
//! builders, not this module, decide what is a valid filter.

use super::error::{Location, ParamError};
use super::settings::{keys_of, FilterParams};
use crate::{
    BloomFilter, BloomSpec, CircularFilter, CircularSpec, Error, ExpandingFilter, ExpandingSpec,
    FilterName, Kind,
};
use std::collections::BTreeMap;

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

impl FilterSpec {
    /// The generations a creation makes, each a layout and a capacity.
    pub fn initial_generations(&self) -> Vec<(crate::Layout, u64)> {
        match self {
            FilterSpec::Bloom(s) => s.initial_generations(),
            FilterSpec::Expanding(s) => s.initial_generations(),
            FilterSpec::Circular(s) => s.initial_generations(),
        }
    }
}

/// Where each key of a filter was set in its file.
pub(super) type Locations = BTreeMap<&'static str, Location>;

/// One validated filter: its name, its settings as given, and the
/// library's spec to create it with.
#[derive(Clone, Debug)]
pub struct FilterDef {
    name: FilterName,
    params: FilterParams,
    spec: FilterSpec,
    pub(super) header: Option<Location>,
    pub(super) locations: Locations,
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

/// Passes each setting that is given to the builder method of the same
/// name (every builder names its methods after the settings).
macro_rules! given {
    ($builder:expr, $params:expr, $($setting:ident),+ $(,)?) => {{
        let mut b = $builder;
        $(
            if let Some(v) = $params.$setting {
                b = b.$setting(v);
            }
        )+
        b
    }};
}

impl FilterParams {
    /// Checks the settings for a filter called `name` and builds the
    /// library's validated spec. Library defaults apply to settings left
    /// out (`error_rate` 0.01, `growth` 2, `tightening` 0.5,
    /// `max_generations` 32, `mode` insert-newest-query-all, ...).
    pub fn validate(&self, name: &str) -> Result<FilterDef, ParamError> {
        let name = FilterName::new(name).map_err(|e| ParamError::whole(e.to_string()))?;
        let kind = self.kind.ok_or_else(|| {
            ParamError::at("kind", "missing (set kind to bloom, expanding or circular)")
        })?;
        self.check_keys(kind)?;
        let from_lib = |e: Error| self.lib_error(e);
        let spec = match kind {
            Kind::Bloom => {
                let b = BloomFilter::builder(name.as_str());
                let b = match (self.bits, self.hashes) {
                    (Some(bits), Some(hashes)) => {
                        if let Some(key) = self.sized_by_capacity() {
                            return Err(ParamError::at(
                                key,
                                "give either capacity and error_rate, or bits and hashes, not both",
                            ));
                        }
                        b.bits_hashes(bits, hashes)
                    }
                    (Some(_), None) => {
                        return Err(ParamError::at("hashes", "missing (bits needs hashes)"))
                    }
                    (None, Some(_)) => {
                        return Err(ParamError::at("bits", "missing (hashes needs bits)"))
                    }
                    (None, None) => b.capacity(required(
                        self.capacity,
                        "capacity",
                        "or give bits and hashes",
                    )?),
                };
                let b = given!(b, self, error_rate, backend, max_bits, max_block_bits);
                FilterSpec::Bloom(b.spec().map_err(from_lib)?)
            }
            Kind::Expanding => {
                let capacity =
                    required(self.capacity, "capacity", "items of the first generation")?;
                let b = given!(
                    ExpandingFilter::builder(name.as_str()).capacity(capacity),
                    self,
                    error_rate,
                    growth,
                    tightening,
                    max_generations,
                    max_bytes,
                    max_bits,
                    max_block_bits,
                    backend,
                );
                FilterSpec::Expanding(b.spec().map_err(from_lib)?)
            }
            Kind::Circular => {
                let generations =
                    required(self.generations, "generations", "the window, in periods")?;
                let capacity = required(self.capacity, "capacity", "items per period")?;
                let mut b = given!(
                    CircularFilter::builder(name.as_str())
                        .generations(generations)
                        .capacity(capacity),
                    self,
                    error_rate,
                    mode,
                    lazy,
                    backend,
                    max_bits,
                    max_block_bits,
                );
                // The builder takes a schedule as text, and checks it again.
                if let Some(s) = &self.schedule {
                    b = b.schedule(s.to_string());
                }
                FilterSpec::Circular(Box::new(b.spec().map_err(from_lib)?))
            }
        };
        Ok(FilterDef {
            name,
            params: self.clone(),
            spec,
            header: None,
            locations: Locations::new(),
        })
    }

    /// Refuses a setting that does not belong to `kind`, listing those that
    /// do.
    fn check_keys(&self, kind: Kind) -> Result<(), ParamError> {
        let allowed = keys_of(kind);
        let article = if kind == Kind::Expanding { "an" } else { "a" };
        match self.keys_set().into_iter().find(|k| !allowed.contains(k)) {
            Some(key) => Err(ParamError::at(
                key,
                format!(
                    "not a setting of {article} {kind} filter (its settings: {})",
                    allowed.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// The first of capacity and error_rate that is set.
    fn sized_by_capacity(&self) -> Option<&'static str> {
        if self.capacity.is_some() {
            Some("capacity")
        } else if self.error_rate.is_some() {
            Some("error_rate")
        } else {
            None
        }
    }

    /// A library error, tied to the setting it is about.
    fn lib_error(&self, e: Error) -> ParamError {
        match e {
            Error::InvalidParameter { name, reason } => ParamError::at(name, reason),
            // Too large is about the size, which comes from one of two keys.
            Error::TooLarge { .. } => {
                let key = if self.bits.is_some() {
                    "bits"
                } else {
                    "capacity"
                };
                ParamError::at(key, format!("{e}; raise max_bits if this is intended"))
            }
            other => ParamError::whole(other.to_string()),
        }
    }
}

fn required<T>(value: Option<T>, key: &'static str, hint: &str) -> Result<T, ParamError> {
    value.ok_or_else(|| ParamError::at(key, format!("missing ({hint})")))
}
