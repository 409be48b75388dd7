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
//! ([`BloomSpec`](crate::BloomSpec), [`ExpandingSpec`](crate::ExpandingSpec) or
//! [`CircularSpec`](crate::CircularSpec)), so a loaded configuration
//! cannot hold an invalid filter. Unknown keys and bad values are rejected
//! with one [`ConfigError`] naming the file, the line and the key:
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
//!
//! Every filter setting is a row of one table ([`settings()`]): the keys a
//! file may use, the kinds that take each, and `rotabloom create`'s flags
//! all come from it.

mod error;
mod file;
mod locate;
mod parameters;
mod settings;
mod slot;
mod url;
mod validate;
mod values;

pub use crate::redact::Secrets;
pub use error::{ConfigError, Location, ParamError};
pub use parameters::{parameters, Typed};
pub use settings::{settings, FilterParams, Setting};
pub use url::{redact, RedisSetting, RedisUrl};
pub use validate::{FilterDef, FilterSpec};
pub use values::{parse_bytes, parse_count, parse_kind, parse_number};

use std::path::Path;

/// A loaded, validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    file: String,
    redis: Option<file::RedisAt>,
    tls: file::RawTls,
    wait: Option<crate::wait::WaitReplicas>,
    when_full: Option<crate::full::WhenFull>,
    filters: Vec<FilterDef>,
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
    /// When the file has several mistakes, the first filter's (in file
    /// order) is reported.
    pub fn parse(text: &str, file: impl Into<String>) -> Result<Config, ConfigError> {
        let file = file.into();
        let raw = file::read(text, &file)?;
        let (redis, tls, wait, when_full) = match raw.defaults {
            Some(mut d) => {
                let tls = d.take_tls();
                let wait = d.take_wait(text, &file)?;
                let when_full = d.take_when_full(text, &file)?;
                (file::defaults(text, &file, d)?, tls, wait, when_full)
            }
            None => (None, file::RawTls::default(), None, None),
        };
        let mut sections: Vec<_> = raw
            .filter
            .into_iter()
            .map(|(name, section)| {
                let header = locate::find_filter_header(text, &name)
                    .unwrap_or_else(|| Location::of_offset(text, section.span().start));
                (header, name, section.into_inner())
            })
            .collect();
        sections.sort_by_key(|(header, _, _)| *header);
        let mut filters = Vec::new();
        for (header, name, section) in sections {
            let err = |loc: Location, key: Option<&str>, message: String| {
                let key = match key {
                    Some(k) => format!("filter.{name}.{k}"),
                    None => format!("filter.{name}"),
                };
                ConfigError::new(&file, Some(loc), Some(key), message)
            };
            let (params, locations) = file::lower(text, section)
                .map_err(|(loc, key, message)| err(loc, Some(&key), message))?;
            let mut def = params.validate(&name).map_err(|e| {
                let loc = e.key.and_then(|k| locations.get(k).copied());
                err(loc.unwrap_or(header), e.key, e.message)
            })?;
            def.header = Some(header);
            def.locations = locations;
            filters.push(def);
        }
        Ok(Config {
            file,
            redis,
            tls,
            wait,
            when_full,
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
        setting.resolve().map(Some).map_err(|m| {
            ConfigError::new(&self.file, Some(*loc), Some(format!("defaults.{key}")), m)
        })
    }

    /// The TLS settings of `[defaults]` (`tls_ca_file`, `tls_cert_file`,
    /// `tls_key_file`, `tls_insecure`). A relative file name is relative
    /// to the configuration file's directory.
    pub fn tls_options(&self) -> crate::connect::TlsOptions {
        let dir = Path::new(&self.file).parent().unwrap_or(Path::new(""));
        let path = |p: &Option<String>| p.as_ref().map(|p| dir.join(p));
        crate::connect::TlsOptions {
            ca_file: path(&self.tls.ca_file),
            cert_file: path(&self.tls.cert_file),
            key_file: path(&self.tls.key_file),
            insecure: self.tls.insecure,
        }
    }

    /// `[defaults]` `wait_replicas` (and `wait_timeout_ms`): the replicas
    /// every write waits for, if any.
    ///
    /// ```
    /// use rotabloom::config::Config;
    /// let c = Config::parse("[defaults]\nwait_replicas = 1\nwait_timeout_ms = 250\n", "r.toml").unwrap();
    /// let w = c.wait_replicas().unwrap();
    /// assert_eq!((w.replicas(), w.timeout().as_millis()), (1, 250));
    /// let e = Config::parse("[defaults]\nwait_replicas = 0\n", "r.toml").unwrap_err();
    /// assert!(e.to_string().starts_with("r.toml:2:1: defaults.wait_replicas: must be at least 1"), "{e}");
    /// ```
    pub fn wait_replicas(&self) -> Option<crate::wait::WaitReplicas> {
        self.wait
    }

    /// `[defaults]` `when_full`: what writes do once a generation is full.
    ///
    /// ```
    /// use rotabloom::{config::Config, WhenFull};
    /// let c = Config::parse("[defaults]\nwhen_full = \"warn\"\n", "r.toml").unwrap();
    /// assert_eq!(c.when_full(), Some(WhenFull::Warn));
    /// assert!(Config::parse("[defaults]\nwhen_full = \"grow\"\n", "r.toml").is_err());
    /// ```
    pub fn when_full(&self) -> Option<crate::full::WhenFull> {
        self.when_full
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
