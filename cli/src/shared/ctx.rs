//! The context every command starts from: the configuration, where Redis
//! is (`url`), the flags that apply to every connection and write, and
//! connecting.

use super::fail::{describe, exit_code, usage, Fail};
use super::url::{redis_url, FromUrl, Origin, RedisUrlFrom};
use rotabloom::config::{Config, FilterDef, RedisUrl, Secrets};
use rotabloom::connect::{
    Connection, TlsOptions, DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESPONSE_TIMEOUT,
};
use rotabloom::{AnyFilter, Error, WaitReplicas};
use std::path::Path;
use std::time::Duration;

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
            // Through `log`, as the library's own warnings are: the
            // context sits below the terminal's printing, which
            // `show::warnings` does for both.
            INSECURE.call_once(|| {
                log::warn!(
                    "insecure TLS: the server's certificate is not verified, \
                     anyone on the path can read and change the traffic"
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
                code: exit_code(&e),
                message: format!("{}; {hint}", describe(&e, &self.secrets)),
            }),
        }
    }

    /// The configuration's definition of `name`, if any.
    pub fn def(&self, name: &str) -> Option<&FilterDef> {
        self.config.as_ref().and_then(|c| c.filter(name))
    }
    /// The replicas every write waits for, if any.
    pub fn wait(&self) -> Option<WaitReplicas> {
        self.wait
    }

    /// What writes do once a generation is full.
    pub fn when_full(&self) -> rotabloom::WhenFull {
        self.when_full
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
