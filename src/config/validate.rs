//! From settings as written ([`FilterParams`]) to a validated filter
//! ([`FilterDef`]) holding the library's own spec, so that the library's
//! builders, not this module, decide what is a valid filter.

use super::error::{Location, ParamError};
use super::settings::{keys_of, FilterParams};
use crate::{
    any::AnyFilter, bloom::BloomFilter, bloom::BloomSpec, circular::CircularBuilder,
    circular::CircularFilter, circular::CircularSpec, error::Error, expanding::ExpandingBuilder,
    expanding::ExpandingFilter, expanding::ExpandingSpec, keys::FilterName, metadata::Kind,
    proto::create::Opened, wait::WaitReplicas,
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
    pub fn initial_generations(&self) -> Vec<(crate::store::generation::Layout, u64)> {
        match self {
            FilterSpec::Bloom(s) => s.initial_generations(),
            FilterSpec::Expanding(s) => s.initial_generations(),
            FilterSpec::Circular(s) => s.initial_generations(),
        }
    }

    /// Creates the filter, or opens it when it exists with the same
    /// parameters (see each kind's `create_or_open`), as an
    /// [`AnyFilter`]; the creation and the handle's writes wait for
    /// `wait`. Also says which happened.
    ///
    /// ```no_run
    /// use rotabloom::config::FilterParams;
    /// let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// let mut p = FilterParams::default();
    /// p.set("kind", "expanding")?;
    /// p.set("capacity", "10M")?;
    /// let (f, _how) = p.validate("crawl")?.spec().create_or_open(&mut conn, None)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        wait: Option<WaitReplicas>,
    ) -> crate::error::Result<(AnyFilter, Opened)> {
        Ok(match self.clone() {
            FilterSpec::Bloom(s) => {
                let (f, how) = s.with_wait_replicas(wait).create_or_open(conn)?;
                (f.into(), how)
            }
            FilterSpec::Expanding(s) => {
                let (f, how) = s.with_wait_replicas(wait).create_or_open(conn)?;
                (f.into(), how)
            }
            FilterSpec::Circular(s) => {
                let (f, how) = s.with_wait_replicas(wait).create_or_open(conn)?;
                (f.into(), how)
            }
        })
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

    /// Number of shards (`shards`, default 1: unsharded).
    pub fn shards(&self) -> u32 {
        self.params.shards.unwrap_or(1)
    }

    /// The definition of one shard of this filter, called `name`: the same
    /// settings, the capacity its share ([`shard_capacity`](crate::params::shard_capacity)),
    /// unsharded (docs/FORMAT.md §11.2).
    ///
    /// ```
    /// use rotabloom::config::FilterParams;
    /// let mut p = FilterParams::default();
    /// p.set("kind", "bloom").unwrap();
    /// p.set("capacity", "1000").unwrap();
    /// p.set("shards", "6").unwrap();
    /// let def = p.validate("crawl").unwrap();
    /// let shard = def.shard("crawl:shard:0:0a1b2c3d").unwrap();
    /// assert_eq!(shard.params().capacity, Some(167 + 78));
    /// assert_eq!(shard.shards(), 1);
    /// ```
    pub fn shard(&self, name: &str) -> Result<FilterDef, ParamError> {
        let mut p = self.params.clone();
        let shards = self.shards();
        p.capacity = p.capacity.map(|c| crate::params::shard_capacity(c, shards));
        p.shards = None;
        p.validate(name)
    }

    /// What creating this filter sharded makes (its `shards` > 1), for
    /// [`ShardedFilter::create_or_open_with`](crate::ShardedFilter::create_or_open_with)
    /// with each shard from [`shard`](Self::shard).
    ///
    /// ```
    /// use rotabloom::config::FilterParams;
    /// let mut p = FilterParams::default();
    /// p.set("kind", "bloom").unwrap();
    /// p.set("capacity", "1000").unwrap();
    /// p.set("shards", "6").unwrap();
    /// let plan = p.validate("crawl").unwrap().shard_plan();
    /// assert_eq!((plan.shards, plan.capacity), (6, 1000));
    /// ```
    pub fn shard_plan(&self) -> crate::shard::ShardPlan {
        crate::shard::ShardPlan {
            name: self.name().to_string(),
            shards: self.shards(),
            kind: self.kind(),
            capacity: self.params.capacity.unwrap_or(0),
            lease: crate::shard::DEFAULT_CREATE_LEASE,
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
            ParamError::at("kind", format!("missing (set kind to {})", Kind::choices()))
        })?;
        self.check_keys(kind)?;
        match self.shards {
            Some(s) if !(1..=crate::shard::MAX_SHARDS).contains(&s) => {
                return Err(ParamError::at(
                    "shards",
                    format!("{s} is not between 1 and {}", crate::shard::MAX_SHARDS),
                ))
            }
            Some(s) if s > 1 && self.bits.is_some() => {
                return Err(ParamError::at(
                    "shards",
                    "a shape given in bits and hashes cannot be divided between shards; give a capacity",
                ))
            }
            _ => {}
        }
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
                let b = self.expanding_builder_for(name.as_str())?;
                FilterSpec::Expanding(b.spec().map_err(from_lib)?)
            }
            Kind::Circular => {
                let b = self.circular_builder_for(name.as_str())?;
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

    /// The builder of the expanding filter `name` these settings describe
    /// (their kind unset or `expanding`), for what a validated spec does
    /// not offer: adopting a legacy bitmap. The builder's own `spec`
    /// checks the values.
    ///
    /// ```
    /// use rotabloom::config::FilterParams;
    /// let mut p = FilterParams::default();
    /// p.set("capacity", "10M").unwrap();
    /// p.set("growth", "4").unwrap();
    /// assert!(p.expanding_builder("crawl").is_ok());
    /// p.set("generations", "4").unwrap();
    /// assert_eq!(p.expanding_builder("crawl").unwrap_err().key, Some("generations"));
    /// ```
    pub fn expanding_builder(&self, name: &str) -> Result<ExpandingBuilder, ParamError> {
        self.check_kind(Kind::Expanding)?;
        self.expanding_builder_for(name)
    }

    /// The builder of the circular filter `name` these settings describe
    /// (their kind unset or `circular`), for what a validated spec does
    /// not offer: a [`Clock`](crate::Clock) of the caller's.
    ///
    /// ```
    /// use rotabloom::config::FilterParams;
    /// use rotabloom::{ManualClock, Clock};
    /// use std::sync::Arc;
    /// let mut p = FilterParams::default();
    /// for (k, v) in [("generations", "4"), ("capacity", "1M"), ("schedule", "7d")] {
    ///     p.set(k, v).unwrap();
    /// }
    /// let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(chrono::Utc::now()));
    /// assert!(p.circular_builder("recrawl").unwrap().clock(clock).spec().is_ok());
    /// ```
    pub fn circular_builder(&self, name: &str) -> Result<CircularBuilder, ParamError> {
        self.check_kind(Kind::Circular)?;
        self.circular_builder_for(name)
    }

    /// Refuses settings of another kind than `kind`.
    fn check_kind(&self, kind: Kind) -> Result<(), ParamError> {
        match self.kind {
            Some(k) if k != kind => Err(ParamError::at(
                "kind",
                format!("{k} given where a {kind} filter is built"),
            )),
            _ => self.check_keys(kind),
        }
    }

    fn expanding_builder_for(&self, name: &str) -> Result<ExpandingBuilder, ParamError> {
        let capacity = required(self.capacity, "capacity", "items of the first generation")?;
        Ok(given!(
            ExpandingFilter::builder(name).capacity(capacity),
            self,
            error_rate,
            growth,
            tightening,
            max_generations,
            max_bytes,
            max_bits,
            max_block_bits,
            backend,
        ))
    }

    fn circular_builder_for(&self, name: &str) -> Result<CircularBuilder, ParamError> {
        let generations = required(self.generations, "generations", "the window, in periods")?;
        let capacity = required(self.capacity, "capacity", "items per period")?;
        let mut b = given!(
            CircularFilter::builder(name)
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
        Ok(b)
    }

    /// Refuses a setting that does not belong to `kind`, listing those that
    /// do.
    fn check_keys(&self, kind: Kind) -> Result<(), ParamError> {
        let allowed = keys_of(kind);
        match self.keys_set().into_iter().find(|k| !allowed.contains(k)) {
            Some(key) => Err(ParamError::at(
                key,
                format!(
                    "not a setting of {} filter (its settings: {})",
                    kind.with_article(),
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
