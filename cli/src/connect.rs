//! Where Redis is, connecting to it, and finding filters there.

use crate::any::{self, AnyFilter};
use crate::errors::{usage, Fail};
use rotabloom::config::{Config, FilterDef, RedisUrl, Secrets};
use rotabloom::connect::{
    Connection, TlsOptions, DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT,
};
use rotabloom::{Error, FilterName, Keys, WaitReplicas, KEY_PREFIX};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// What every command starts from: the configuration, and the Redis URL.
pub struct Ctx {
    config: Option<Config>,
    /// Resolved at once, so that the password in use is known to every
    /// message; a bad URL is only an error for a command that connects.
    url: Result<RedisUrl, Fail>,
    /// Where the URL came from, for a connection error to say.
    origin: Origin,
    tls: TlsOptions,
    secrets: Secrets,
    /// Replicas every write waits for (the flag, else the configuration).
    wait: Option<WaitReplicas>,
    /// Reconnections a long-running writer tries.
    pub retries: u32,
    /// What writes do once a generation is full.
    when_full: rotabloom::WhenFull,
    /// The budget of the mirror of frozen generations (0: none).
    mirror_bytes: u64,
    /// Batches in flight at once (`filter`, `add`, `load`).
    pub in_flight: usize,
    /// What a lost reply costs those batches.
    pub delivery: rotabloom::Delivery,
    /// How long to wait to connect, and for each reply.
    timeouts: (Duration, Duration),
}

/// The flags about surviving failures: replicas to wait for, reconnections.
pub struct Durability {
    pub wait_replicas: Option<u32>,
    pub wait_timeout_ms: Option<u64>,
    pub retries: u32,
    pub when_full: Option<rotabloom::WhenFull>,
    /// `--timeout`: how long to wait to connect and for each reply.
    pub timeout: Option<std::time::Duration>,
}

impl Ctx {
    /// `tls` holds the TLS flags (and their environment variables); each
    /// one given replaces the configuration's.
    pub fn new(
        config: Option<&Path>,
        url: RedisUrlFrom,
        tls: TlsOptions,
        durability: Durability,
    ) -> anyhow::Result<Ctx> {
        let config = config.map(Config::load).transpose()?;
        let wait = match (durability.wait_replicas, durability.wait_timeout_ms) {
            (Some(n), ms) => {
                let ms = ms.unwrap_or(rotabloom::DEFAULT_WAIT_TIMEOUT.as_millis() as u64);
                Some(
                    WaitReplicas::new(n, std::time::Duration::from_millis(ms))
                        .map_err(|e| usage(format!("--wait-replicas: {e}")))?,
                )
            }
            (None, Some(_)) => {
                return Err(usage(
                    "--wait-timeout-ms goes with --wait-replicas N: give both, or neither",
                ))
            }
            (None, None) => config.as_ref().and_then(Config::wait_replicas),
        };
        let (url, origin) = redis_url(url, config.as_ref());
        let secrets = url.as_ref().map(RedisUrl::secrets).unwrap_or_default();
        let from_file = config.as_ref().map(Config::tls_options).unwrap_or_default();
        let tls = TlsOptions {
            ca_file: tls.ca_file.or(from_file.ca_file),
            cert_file: tls.cert_file.or(from_file.cert_file),
            key_file: tls.key_file.or(from_file.key_file),
            insecure: tls.insecure || from_file.insecure,
        };
        let when_full = durability
            .when_full
            .or(config.as_ref().and_then(Config::when_full))
            .unwrap_or_default();
        Ok(Ctx {
            config,
            url,
            origin,
            tls,
            secrets,
            when_full,
            wait,
            retries: durability.retries,
            mirror_bytes: 0,
            in_flight: 1,
            delivery: rotabloom::Delivery::ExactlyOnce,
            timeouts: match durability.timeout {
                Some(t) => (t, t),
                None => (DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT),
            },
        })
    }

    /// Keeps `n` batches in flight (at least 1).
    pub fn with_in_flight(mut self, n: u32) -> Ctx {
        self.in_flight = (n as usize).max(1);
        self
    }

    /// Sends the batches of `filter`, `add` and `load` with `delivery`.
    pub fn with_delivery(mut self, delivery: rotabloom::Delivery) -> Ctx {
        self.delivery = delivery;
        self
    }

    /// Mirrors frozen generations up to `mib` MiB in the handles it gives.
    pub fn with_mirror(mut self, mib: u64) -> Ctx {
        self.mirror_bytes = mib.saturating_mul(1 << 20);
        self
    }

    /// `f`, checking the frozen generations it mirrors here.
    pub fn reader(&self, f: AnyFilter) -> AnyFilter {
        match self.mirror_bytes {
            0 => f,
            bytes => f.with_frozen_cache(bytes),
        }
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
        self.open(|t| t.connect())
    }

    /// Opens a plain connection to the cluster node at `addr` (a master a
    /// sharded filter's shards lie on), as [`connect`](Self::connect)
    /// would; outside a cluster, the usual connection.
    pub fn connect_to(&self, addr: &str) -> anyhow::Result<Connection> {
        self.open(|t| t.connect_to(addr))
    }

    fn open(
        &self,
        how: impl FnOnce(&rotabloom::connect::Target) -> Result<Connection, Error>,
    ) -> anyhow::Result<Connection> {
        let url = self.url.clone()?;
        let target = url
            .target(self.tls.clone())
            .map_err(usage)?
            .with_timeouts(self.timeouts.0, self.timeouts.1);
        // Said once per run, however many connections it makes (one per
        // master of a sharded filter, new ones after each failure).
        static INSECURE: std::sync::Once = std::sync::Once::new();
        if target.is_insecure() {
            INSECURE.call_once(|| {
                crate::term::warning_line(
                    "insecure TLS: the server's certificate is not verified, \
                     anyone on the path can read and change the traffic",
                )
            });
        }
        how(&target).map_err(|e| match e {
            Error::Connect { .. } | Error::TimedOut { .. } => anyhow::Error::new(FromUrl {
                error: e,
                origin: self.origin.clone(),
            }),
            e => e.into(),
        })
    }

    /// `e`, and for a timeout which flag sets how long: the error line
    /// then says what to change.
    pub fn explain(&self, e: anyhow::Error) -> anyhow::Error {
        let hint = e.chain().find_map(|c| match c.downcast_ref::<Error>() {
            Some(Error::TimedOut { .. }) => {
                Some("--timeout SECONDS sets how long to wait".to_string())
            }
            Some(Error::Redis(r)) if r.inner().is_timeout() => Some(format!(
                "none came within {} s; --timeout SECONDS sets how long to wait",
                self.timeouts.1.as_secs_f64()
            )),
            _ => None,
        });
        match hint {
            None => e,
            Some(hint) => anyhow::Error::new(Fail {
                code: crate::errors::exit_code(&e),
                message: format!("{}; {hint}", crate::errors::describe(&e, &self.secrets)),
            }),
        }
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
    /// it declares it (checking its parameters), else open it, sharded or
    /// not; its writes wait for the replicas asked for.
    pub fn open_for_write(&self, conn: &mut Connection, name: &str) -> anyhow::Result<Sharded> {
        let f = match self.def(name) {
            Some(def) if def.shards() > 1 => self.create_sharded(conn, def)?.0,
            Some(def) => match any::create_or_open(conn, def, self.wait) {
                Ok((f, _)) => Sharded::single(f),
                // With `when_full = expand`, a base filter of the
                // configuration becomes an expanding one when it is full:
                // that is the filter the configuration made, grown.
                Err(rotabloom::Error::KindMismatch {
                    expected: "bloom",
                    found,
                    ..
                }) if found == "expanding" && self.when_full == rotabloom::WhenFull::Expand => {
                    open_sharded(conn, name)?
                }
                Err(e) => return Err(self.create_error(name, e)),
            },
            None => open_sharded(conn, name)?,
        };
        Ok(f.map_shards(|s| self.writer(s)))
    }

    /// Creates the sharded filter `def` describes, each shard from its
    /// definition with the capacity divided, or opens it.
    pub fn create_sharded(
        &self,
        conn: &mut Connection,
        def: &FilterDef,
    ) -> anyhow::Result<(Sharded, rotabloom::Opened)> {
        Sharded::create_or_open_with(conn, &def.shard_plan(), |c, sub| {
            let shard = def.shard(sub).map_err(|e| Error::InvalidParameter {
                name: "shards",
                reason: e.message,
            })?;
            any::create_or_open(c, &shard, self.wait)
        })
        .map_err(|e| self.create_error(def.name(), e))
    }

    /// The replicas every write waits for, if any.
    pub fn wait(&self) -> Option<WaitReplicas> {
        self.wait
    }

    /// `f`, its writes waiting for the replicas asked for.
    pub fn writer(&self, f: AnyFilter) -> AnyFilter {
        self.reader(f)
            .with_wait_replicas(self.wait)
            .with_when_full(self.when_full)
    }

    /// A description of the server for messages: the URL without
    /// credentials.
    pub fn describe(&self) -> String {
        match &self.url {
            Ok(u) => u.to_string(),
            Err(_) => "Redis".to_string(),
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

/// Where the Redis URL in use came from.
#[derive(Clone, Debug, PartialEq)]
enum Origin {
    Flag,
    Config(String),
    Env,
    Default,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag => f.write_str("the URL of --redis"),
            Origin::Config(file) => write!(f, "the URL of the configuration {file}"),
            Origin::Env => f.write_str("the URL of $REDIS_URL"),
            Origin::Default => {
                f.write_str("the default URL: no --redis, configuration or $REDIS_URL named one")
            }
        }
    }
}

/// A connection error, and where its URL came from: a URL nobody chose
/// (the default), or a $REDIS_URL left for another tool, is then plain.
/// The library's error stays in the chain, for the exit code and retries.
#[derive(Debug)]
struct FromUrl {
    error: Error,
    origin: Origin,
}

impl std::fmt::Display for FromUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.error, self.origin)
    }
}

impl std::error::Error for FromUrl {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The first of `--redis`, the configuration's URL and `$REDIS_URL`, else
/// the default: what is named on this command line beats what is in the
/// environment. Also says which it was.
fn redis_url(from: RedisUrlFrom, config: Option<&Config>) -> (Result<RedisUrl, Fail>, Origin) {
    let bad = |message: String| Fail { code: 2, message };
    let env = match from {
        RedisUrlFrom::Flag(Some(u)) => {
            return (
                RedisUrl::new(u).map_err(|m| bad(format!("--redis: {m}"))),
                Origin::Flag,
            )
        }
        RedisUrlFrom::Flag(None) => None,
        RedisUrlFrom::Env(u) => u,
    };
    if let Some(c) = config {
        let origin = Origin::Config(c.file().to_string());
        match c.redis_url() {
            Ok(Some(u)) => return (Ok(u), origin),
            Ok(None) => {}
            Err(e) => return (Err(bad(e.to_string())), origin),
        }
    }
    match env {
        Some(u) if !u.trim().is_empty() => (
            RedisUrl::new(u).map_err(|m| bad(format!("$REDIS_URL: {m}"))),
            Origin::Env,
        ),
        _ => (RedisUrl::new(DEFAULT_URL).map_err(bad), Origin::Default),
    }
}

/// A filter, sharded or not (one shard).
pub type Sharded = rotabloom::ShardedFilter<rotabloom::kinds::Any>;

/// Opens an existing filter, with a hint when it does not exist (the
/// library's [`Error::NotFound`] stays in the chain: see [`is_gone`]). A
/// sharded filter is refused loudly: the commands that take one open it
/// with [`open_sharded`].
pub fn open(conn: &mut Connection, name: &str) -> anyhow::Result<AnyFilter> {
    match AnyFilter::open(conn, name) {
        Ok(f) => Ok(f),
        Err(e @ Error::NotFound { .. }) => Err(not_found(conn, name, e)),
        Err(e @ Error::UnsupportedFormat { .. }) if is_sharded(&e) => Err(anyhow::Error::new(e)
            .context(format!(
                "filter {name:?} is sharded: this command does not support sharded filters yet \
                 (create, status, list, drop, filter, add, load, check, rotate, expand, convert, dump and restore do)"
            ))),
        Err(e) => Err(e.into()),
    }
}

/// Whether `e` is the refusal of a sharded filter's root record.
fn is_sharded(e: &Error) -> bool {
    matches!(e, Error::UnsupportedFormat { found, .. } if found == rotabloom::SHARDED_FORMAT)
}

/// Opens an existing filter, sharded or not, with a hint when it does not
/// exist.
pub fn open_sharded(conn: &mut Connection, name: &str) -> anyhow::Result<Sharded> {
    let opened = Sharded::open(conn, name);
    or_hint(conn, name, opened)
}

/// [`open_sharded`] whatever its shards say (docs/FORMAT.md §11.8): for
/// the commands that finish an interrupted whole-filter change or report
/// it (rotate, clear, expand, convert, status, drop).
pub fn open_sharded_unconverged(conn: &mut Connection, name: &str) -> anyhow::Result<Sharded> {
    let opened = Sharded::open_unconverged(conn, name);
    or_hint(conn, name, opened)
}

fn or_hint(
    conn: &mut Connection,
    name: &str,
    opened: rotabloom::Result<Sharded>,
) -> anyhow::Result<Sharded> {
    match opened {
        Ok(f) => Ok(f),
        Err(e @ Error::NotFound { .. }) => Err(not_found(conn, name, e)),
        Err(e) => Err(e.into()),
    }
}

/// "Does not exist", with the filters there are for a name mistyped; a
/// SCAN that fails (an ACL without it) only loses the suggestion.
fn not_found(conn: &mut Connection, name: &str, e: Error) -> anyhow::Error {
    let names = all_names(conn).unwrap_or_default();
    let hint = match crate::suggest::did_you_mean(name, names.iter().map(String::as_str)) {
        Some(near) => format!("did you mean {near:?}? else create it with `rotabloom create`"),
        None => "create it with `rotabloom create`".to_string(),
    };
    anyhow::Error::new(e).context(format!("filter {name:?} does not exist ({hint})"))
}

/// Whether `e` says that the filter does not exist (any more).
pub fn is_gone(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<Error>(), Some(Error::NotFound { .. })))
}

/// The filters a command goes over: named on its command line, or every
/// filter found in the database.
pub struct Names {
    pub list: Vec<String>,
    /// Whether the user named them.
    pub named: bool,
}

impl Names {
    /// Whether the error of one filter is no error at all: a filter found
    /// in the database that was dropped before the command got to it is
    /// simply not there, and one dropped and created again between its
    /// open and its read is another filter than the one listed (the next
    /// run sees it). A filter the user named must exist.
    pub fn vanished(&self, e: &anyhow::Error) -> bool {
        let replaced = e
            .chain()
            .any(|c| matches!(c.downcast_ref::<Error>(), Some(Error::Recreated { .. })));
        !self.named && (is_gone(e) || replaced)
    }
}

/// The named filters, or every filter in the database when none is named.
pub fn names_or_all(conn: &mut Connection, names: Vec<String>) -> anyhow::Result<Names> {
    if !names.is_empty() {
        return Ok(Names {
            list: names,
            named: true,
        });
    }
    Ok(Names {
        list: all_names(conn)?,
        named: false,
    })
}

/// Every filter name in the database (every primary of a cluster): SCAN
/// for `rotabloom:{*}:meta`. In a
/// SCAN pattern only `*`, `?`, `[`, `]` and `\` are special, so the braces
/// of the hash tag match themselves. The library's `Keys` gives the keys of
/// one named filter only, so the pattern and the name's place in a key are
/// spelled here.
pub fn all_names(conn: &mut Connection) -> rotabloom::Result<Vec<String>> {
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
            .and_then(|n| FilterName::existing(n).ok());
        // A key the pattern matches by accident (`rotabloom:{a}:b}:meta`)
        // is not the meta key of the name read from it.
        if let Some(name) = name.filter(|n| Keys::new(n.clone()).meta() == key) {
            names.insert(name.to_string());
        }
    }
    // A sharded filter's shards are part of it, not filters of their own.
    let shards: Vec<String> = names
        .iter()
        .filter(|n| shard_root(n).is_some_and(|root| names.contains(root)))
        .cloned()
        .collect();
    for s in shards {
        names.remove(&s);
    }
    Ok(names.into_iter().collect())
}

/// The root's name of a name shaped like a shard's (`ROOT:shard:J:TAG`,
/// docs/FORMAT.md §11.2).
fn shard_root(name: &str) -> Option<&str> {
    let (rest, tag) = name.rsplit_once(':')?;
    let (rest, j) = rest.rsplit_once(':')?;
    let root = rest.strip_suffix(":shard")?;
    let hex = tag.len() == 8 && tag.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (hex && !j.is_empty() && j.bytes().all(|b| b.is_ascii_digit())).then_some(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names_point_at_their_root() {
        assert_eq!(shard_root("crawl:shard:3:0a1b2c3d"), Some("crawl"));
        assert_eq!(shard_root("a:b:shard:12:00000000"), Some("a:b"));
        assert_eq!(shard_root("crawl:shard:x:0a1b2c3d"), None);
        assert_eq!(shard_root("crawl:shard:3:0A1B2C3D"), None);
        assert_eq!(shard_root("crawl"), None);
    }

    #[test]
    fn the_url_says_where_it_came_from() {
        let (url, origin) = redis_url(RedisUrlFrom::Flag(None), None);
        assert!(url.is_ok());
        assert_eq!(origin, Origin::Default);
        assert_eq!(
            origin.to_string(),
            "the default URL: no --redis, configuration or $REDIS_URL named one"
        );
        let from_env = |v: &str| redis_url(RedisUrlFrom::Env(Some(v.into())), None).1;
        assert_eq!(from_env("redis://h:1/"), Origin::Env);
        // An empty variable is no URL.
        assert_eq!(from_env("  "), Origin::Default);
        let (_, origin) = redis_url(RedisUrlFrom::Flag(Some("redis://h:1/".into())), None);
        assert_eq!(origin.to_string(), "the URL of --redis");
        let e = FromUrl {
            error: Error::Connect {
                target: "redis://127.0.0.1:6379".into(),
                reason: "Connection refused".into(),
            },
            origin: Origin::Default,
        };
        assert_eq!(
            e.to_string(),
            "cannot connect to redis://127.0.0.1:6379: Connection refused (the default URL: \
             no --redis, configuration or $REDIS_URL named one)"
        );
    }
}
