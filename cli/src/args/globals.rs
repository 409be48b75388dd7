//! The global flags: where Redis is, TLS, how writes are acknowledged,
//! throughput and colour; and the context every command starts from.

use super::values::parse_timeout;
use crate::shared::ctx::{Ctx, Durability};
use crate::shared::url::RedisUrlFrom;
use crate::show::{help, words};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args};
use std::path::PathBuf;
use std::time::Duration;

/// The flags every command takes, before or after its name; `rotabloom
/// --help` shows them, each command's help points there.
#[derive(Args, Debug, Clone)]
pub struct Globals {
    /// Configuration file declaring filters and where Redis is (TOML).
    #[arg(long, global = true, value_name = "FILE", help_heading = help::CONNECTION)]
    config: Option<PathBuf>,

    /// Redis URL, e.g. redis://127.0.0.1:6379/0 (prefer $REDIS_URL for one
    /// with a password: the command line is visible to other users). The
    /// flag wins over the configuration's URL, which wins over $REDIS_URL.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "REDIS_URL",
        hide_env_values = true,
        help_heading = help::CONNECTION
    )]
    redis: Option<String>,

    /// How long to wait for Redis, in seconds: to open a connection (the
    /// server's first answer included) and for each reply. Default: 10 to
    /// connect, 120 per reply.
    #[arg(
        long,
        global = true,
        value_name = "SECONDS",
        value_parser = parse_timeout,
        env = "ROTABLOOM_TIMEOUT",
        hide_env_values = true,
        help_heading = help::CONNECTION
    )]
    timeout: Option<Duration>,

    /// filter, check, load, add: reconnections to try, with backoff (0.1 s
    /// doubling to 5 s), after a lost connection or a failover before
    /// giving up (exit 3).
    #[arg(
        long,
        global = true,
        value_name = "N",
        default_value_t = 8,
        env = "ROTABLOOM_RETRIES",
        hide_env_values = true,
        help_heading = help::CONNECTION
    )]
    retries: u32,

    /// PEM file of the certificate authorities to trust for rediss://
    /// (default: the system's, which honours SSL_CERT_FILE / SSL_CERT_DIR).
    #[arg(long, global = true, value_name = "FILE", env = "ROTABLOOM_TLS_CA",
        hide_env_values = true, help_heading = help::TLS)]
    tls_ca: Option<PathBuf>,

    /// PEM file of a client certificate (mutual TLS; with --tls-key).
    #[arg(long, global = true, value_name = "FILE", env = "ROTABLOOM_TLS_CERT",
        hide_env_values = true, help_heading = help::TLS)]
    tls_cert: Option<PathBuf>,

    /// PEM file of the client certificate's private key.
    #[arg(long, global = true, value_name = "FILE", env = "ROTABLOOM_TLS_KEY",
        hide_env_values = true, help_heading = help::TLS)]
    tls_key: Option<PathBuf>,

    /// Do not verify the server's certificate (tests only; warns on every
    /// run).
    #[arg(long, global = true, env = "ROTABLOOM_TLS_INSECURE",
        hide_env_values = true, help_heading = help::TLS)]
    tls_insecure: bool,

    /// Acknowledge a write only once this many replicas have it (Redis
    /// WAIT); fewer in time is an error (exit 3). Overrides the
    /// configuration's wait_replicas.
    #[arg(
        long,
        global = true,
        value_name = "N",
        env = "ROTABLOOM_WAIT_REPLICAS",
        hide_env_values = true,
        help_heading = help::WRITES
    )]
    wait_replicas: Option<u32>,

    /// How long a write waits for --wait-replicas, in milliseconds
    /// (default 1000).
    #[arg(
        long,
        global = true,
        value_name = "MS",
        env = "ROTABLOOM_WAIT_TIMEOUT_MS",
        hide_env_values = true,
        help_heading = help::WRITES
    )]
    wait_timeout_ms: Option<u64>,

    /// What writes do once a filter's generation holds its capacity: error
    /// (refuse, exit 3; the default), warn (write on, warn once) or expand
    /// (a base filter becomes an expanding one, warns once, and goes on).
    /// Overrides the configuration's when_full.
    #[arg(
        long,
        global = true,
        value_name = "POLICY",
        env = "ROTABLOOM_WHEN_FULL",
        hide_env_values = true,
        help_heading = help::WRITES,
        add = words::when_full()
    )]
    when_full: Option<rotabloom::WhenFull>,

    /// filter, add, load: what a lost reply costs. exactly-once (the
    /// default): the server keeps each batch's answers, so a batch sent
    /// again after a dropped connection is answered as it was; nothing is
    /// lost or doubled. at-least-once: nothing is kept (pipelined
    /// transactions, faster); after a lost reply its lines are inserted
    /// again and `filter` prints them all, so a line seen before may be
    /// printed again, and `add`/`load` may count some as new that were
    /// not. Those lines are counted, reported on standard error and in
    /// --json ("unknown"), and the exit code is 6. No --state/--resume.
    #[arg(
        long,
        global = true,
        value_name = "HOW",
        default_value = "exactly-once",
        env = "ROTABLOOM_DELIVERY",
        hide_env_values = true,
        help_heading = help::WRITES,
        add = words::delivery()
    )]
    delivery: rotabloom::Delivery,

    /// filter, check, add, load: copy the frozen generations of expanding
    /// and query-all circular filters into this process, up to this many
    /// MiB, and check them here (the server then reads only the newest); 0
    /// turns it off. The copies are made once per run, 4 MiB per round
    /// trip.
    #[arg(
        long,
        global = true,
        value_name = "MIB",
        default_value_t = 64,
        env = "ROTABLOOM_MIRROR_MIB",
        hide_env_values = true,
        help_heading = help::THROUGHPUT
    )]
    mirror_mib: u64,

    /// filter, check, add, load: batches in flight at once, each on its own
    /// connection, so that the server and this process work at the same
    /// time; output stays in input order.
    #[arg(
        long,
        global = true,
        value_name = "N",
        default_value_t = 2,
        value_parser = clap::value_parser!(u32).range(1..=16),
        env = "ROTABLOOM_IN_FLIGHT",
        hide_env_values = true,
        help_heading = help::THROUGHPUT
    )]
    in_flight: u32,

    /// Colour errors, warnings, help and status on a terminal: auto (when
    /// the output is a terminal, unless $NO_COLOR is set; $CLICOLOR_FORCE
    /// forces it), always or never. Never into a pipe or a file on auto.
    #[arg(
        long,
        global = true,
        value_name = "WHEN",
        default_value = "auto",
        help_heading = help::OUTPUT
    )]
    pub color: clap::ColorChoice,
}

impl Globals {
    /// The context of a command: the configuration read, the URL chosen
    /// (`m`, the matches these flags came from, says whether $REDIS_URL
    /// or the flag gave it), the flags applied.
    pub fn ctx(&self, m: &ArgMatches) -> anyhow::Result<Ctx> {
        // An explicit flag beats the configuration; the ambient
        // environment variable does not (docs/CLI.md, "Global options").
        let url = match m.value_source("redis") {
            Some(ValueSource::EnvVariable) => RedisUrlFrom::Env(self.redis.clone()),
            _ => RedisUrlFrom::Flag(self.redis.clone()),
        };
        let tls = rotabloom::connect::TlsOptions {
            ca_file: self.tls_ca.clone(),
            cert_file: self.tls_cert.clone(),
            key_file: self.tls_key.clone(),
            insecure: self.tls_insecure,
        };
        let durability = Durability {
            wait_replicas: self.wait_replicas,
            wait_timeout_ms: self.wait_timeout_ms,
            retries: self.retries,
            when_full: self.when_full,
            timeout: self.timeout,
        };
        Ok(Ctx::new(self.config.as_deref(), url, tls, durability)?
            .with_mirror(self.mirror_mib)
            .with_in_flight(self.in_flight)
            .with_delivery(self.delivery))
    }

    /// The same flags with `timeout` to wait for Redis, and no retries: for
    /// completion, which must answer at once or not at all.
    pub fn hasty(mut self, timeout: Duration) -> Globals {
        self.timeout = Some(timeout);
        self.retries = 0;
        self
    }
}
