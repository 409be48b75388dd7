//! Where Redis is, connecting to it, and finding filters there.

use crate::any::{self, AnyFilter};
use crate::errors::{usage, Fail};
use rotabloom::config::{Config, FilterDef, RedisUrl, Secrets};
use rotabloom::connect::{Connection, TlsOptions};
use rotabloom::{Error, FilterName, Keys, KEY_PREFIX};
use std::collections::BTreeSet;
use std::path::Path;

const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// What every command starts from: the configuration, and the Redis URL.
pub struct Ctx {
    config: Option<Config>,
    /// Resolved at once, so that the password in use is known to every
    /// message; a bad URL is only an error for a command that connects.
    url: Result<RedisUrl, Fail>,
    tls: TlsOptions,
    secrets: Secrets,
}

impl Ctx {
    /// `tls` holds the TLS flags (and their environment variables); each
    /// one given replaces the configuration's.
    pub fn new(config: Option<&Path>, url: RedisUrlFrom, tls: TlsOptions) -> anyhow::Result<Ctx> {
        let config = config.map(Config::load).transpose()?;
        let url = redis_url(url, config.as_ref());
        let secrets = url.as_ref().map(RedisUrl::secrets).unwrap_or_default();
        let from_file = config.as_ref().map(Config::tls_options).unwrap_or_default();
        let tls = TlsOptions {
            ca_file: tls.ca_file.or(from_file.ca_file),
            cert_file: tls.cert_file.or(from_file.cert_file),
            key_file: tls.key_file.or(from_file.key_file),
            insecure: tls.insecure || from_file.insecure,
        };
        Ok(Ctx {
            config,
            url,
            tls,
            secrets,
        })
    }

    /// The secrets to scrub from every message.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    pub fn config(&self) -> Option<&Config> {
        self.config.as_ref()
    }

    /// Opens the connection: one server, a cluster, or the primary the
    /// Sentinels name. A failure is one line, exit code 3.
    pub fn connect(&self) -> anyhow::Result<Connection> {
        let url = self.url.clone()?;
        let target = url.target(self.tls.clone()).map_err(usage)?;
        if target.is_insecure() {
            eprintln!(
                "rotabloom: warning: insecure TLS: the server's certificate is not verified, \
                 anyone on the path can read and change the traffic"
            );
        }
        Ok(target.connect()?)
    }

    /// The configuration's definition of `name`, if any.
    pub fn def(&self, name: &str) -> Option<&FilterDef> {
        self.config.as_ref().and_then(|c| c.filter(name))
    }

    /// An error from creating `name` from the configuration: a parameter
    /// that differs from Redis is a configuration error at that key.
    pub fn create_error(&self, name: &str, e: Error) -> anyhow::Error {
        let key = match &e {
            Error::ParameterMismatch { field, .. } => Some(field.clone()),
            Error::KindMismatch { .. } => Some("kind".to_string()),
            _ => None,
        };
        match (key, &self.config) {
            (Some(key), Some(c)) if c.filter(name).is_some() => {
                anyhow::Error::new(c.error_at(name, &key, e.to_string()))
            }
            _ => anyhow::Error::new(e),
        }
    }

    /// For commands that write: create the filter from the configuration if
    /// it declares it (checking its parameters), else open it.
    pub fn open_for_write(&self, conn: &mut Connection, name: &str) -> anyhow::Result<AnyFilter> {
        match self.def(name) {
            Some(def) => any::create_or_open(conn, def)
                .map(|(f, _)| f)
                .map_err(|e| self.create_error(name, e)),
            None => open(conn, name),
        }
    }
}

/// Where clap found the Redis URL, if anywhere: the `--redis` flag or
/// the `REDIS_URL` environment variable (clap reads both, and shows the
/// variable in `--help`).
pub enum RedisUrlFrom {
    Flag(Option<String>),
    Env(Option<String>),
}

/// The first of `--redis`, the configuration's URL and `$REDIS_URL`, else
/// the default: what is named on this command line beats what is in the
/// environment.
fn redis_url(from: RedisUrlFrom, config: Option<&Config>) -> Result<RedisUrl, Fail> {
    let bad = |message: String| Fail { code: 2, message };
    let env = match from {
        RedisUrlFrom::Flag(Some(u)) => {
            return RedisUrl::new(u).map_err(|m| bad(format!("--redis: {m}")))
        }
        RedisUrlFrom::Flag(None) => None,
        RedisUrlFrom::Env(u) => u,
    };
    if let Some(c) = config {
        if let Some(u) = c.redis_url().map_err(|e| bad(e.to_string()))? {
            return Ok(u);
        }
    }
    match env {
        Some(u) if !u.trim().is_empty() => {
            RedisUrl::new(u).map_err(|m| bad(format!("$REDIS_URL: {m}")))
        }
        _ => RedisUrl::new(DEFAULT_URL).map_err(bad),
    }
}

/// Opens an existing filter, with a hint when it does not exist.
pub fn open(conn: &mut Connection, name: &str) -> anyhow::Result<AnyFilter> {
    match AnyFilter::open(conn, name) {
        Ok(f) => Ok(f),
        Err(Error::NotFound { .. }) => Err(usage(format!(
            "filter {name:?} does not exist (create it with `rotabloom create`)"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// The named filters, or every filter in the database when none is named.
pub fn names_or_all(conn: &mut Connection, names: Vec<String>) -> anyhow::Result<Vec<String>> {
    if !names.is_empty() {
        return Ok(names);
    }
    Ok(all_names(conn).map_err(Error::from)?)
}

/// Every filter name in the database (every primary of a cluster): SCAN
/// for `rotabloom:{*}:meta`. In a
/// SCAN pattern only `*`, `?`, `[`, `]` and `\` are special, so the braces
/// of the hash tag match themselves. The library's `Keys` gives the keys of
/// one named filter only, so the pattern and the name's place in a key are
/// spelled here.
fn all_names(conn: &mut Connection) -> redis::RedisResult<Vec<String>> {
    let prefix = format!("{KEY_PREFIX}:{{");
    let suffix = "}:meta";
    let pattern = format!("{prefix}*{suffix}");
    let mut names = BTreeSet::new();
    let keys = conn.scan_match(&pattern)?;
    for key in keys {
        let Ok(key) = String::from_utf8(key) else {
            continue;
        };
        let name = key
            .strip_prefix(&prefix)
            .and_then(|k| k.strip_suffix(suffix))
            .and_then(|n| FilterName::new(n).ok());
        // A key the pattern matches by accident (`rotabloom:{a}:b}:meta`)
        // is not the meta key of the name read from it.
        if let Some(name) = name.filter(|n| Keys::new(n.clone()).meta() == key) {
            names.insert(name.to_string());
        }
    }
    Ok(names.into_iter().collect())
}
