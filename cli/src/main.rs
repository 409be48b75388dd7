//! `rotabloom`: create, inspect, rotate and use rotabloom filters from the
//! shell. See `docs/CLI.md`.
//!
//! This file holds the command line and sends each subcommand to its
//! module; `connect` and `errors` serve them all.

mod add;
mod any;
mod check;
mod connect;
mod create;
mod drop;
mod dump;
mod errors;
mod expanding;
mod filter;
mod generate;
mod interrupt;
mod lines;
mod list;
mod load;
mod metrics;
mod outfile;
mod pipeline;
mod resilient;
mod resume;
mod rotate;
mod show;
mod statefile;
mod status;
mod tally;
mod warnings;

use chrono::{DateTime, Utc};
use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use connect::{Ctx, RedisUrlFrom};
use rotabloom::config::Secrets;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const EXIT_CODES: &str = "\
Exit codes:
  0  success (check: at least one item printed)
  1  negative answer (check: no item printed; create --dry-run: it would
     not fit the server's maxmemory)
  2  usage or configuration error, including a filter that does not exist,
     exists with other parameters than asked for, or exists already
     (restore)
  3  Redis error: connection, authentication, server, or the data in it;
     a full filter (filter, add, load: after what was inserted); retries
     run out (the message says how to resume)
  4  status --check: a filter has an error-level warning
  5  a local file cannot be read or written (load, dump, restore,
     metrics --output; dump's reader gone before the end), or a dump
     file is damaged, has bytes after its end, or is not a dump
  128+N  restore or dump FILE stopped by signal N (130: SIGINT) after
     cleaning up

Redis URL: --redis, else the configuration's redis_url / redis_url_env /
cluster_nodes / sentinels, else $REDIS_URL, else redis://127.0.0.1:6379
(the explicit beats the ambient).
Forms: redis://, rediss:// (TLS), unix://, redis+cluster://H:P,H:P,
redis+sentinel://H:P,H:P/MASTER (see docs/CLI.md). Passwords are never
printed.";

/// Bloom filters in Redis: create, inspect, rotate and use them from the shell.
#[derive(Parser, Debug)]
#[command(name = "rotabloom", version, after_help = EXIT_CODES)]
struct Cli {
    /// Configuration file declaring filters (TOML; see docs/CLI.md).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Redis URL, e.g. redis://127.0.0.1:6379/0 (prefer $REDIS_URL for one
    /// with a password: the command line is visible to other users). The
    /// flag wins over the configuration's URL, which wins over $REDIS_URL.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "REDIS_URL",
        hide_env_values = true
    )]
    redis: Option<String>,

    /// PEM file of the certificate authorities to trust for rediss://
    /// (default: the system's, which honours SSL_CERT_FILE / SSL_CERT_DIR).
    #[arg(long, global = true, value_name = "FILE", env = "ROTABLOOM_TLS_CA")]
    tls_ca: Option<PathBuf>,

    /// PEM file of a client certificate (mutual TLS; with --tls-key).
    #[arg(long, global = true, value_name = "FILE", env = "ROTABLOOM_TLS_CERT")]
    tls_cert: Option<PathBuf>,

    /// PEM file of the client certificate's private key.
    #[arg(long, global = true, value_name = "FILE", env = "ROTABLOOM_TLS_KEY")]
    tls_key: Option<PathBuf>,

    /// Do not verify the server's certificate (tests only; warns on every
    /// run).
    #[arg(long, global = true, env = "ROTABLOOM_TLS_INSECURE")]
    tls_insecure: bool,

    /// Acknowledge a write only once this many replicas have it (Redis
    /// WAIT); fewer in time is an error (exit 3). Overrides the
    /// configuration's wait_replicas.
    #[arg(long, global = true, value_name = "N", env = "ROTABLOOM_WAIT_REPLICAS")]
    wait_replicas: Option<u32>,

    /// How long a write waits for --wait-replicas, in milliseconds
    /// (default 1000).
    #[arg(
        long,
        global = true,
        value_name = "MS",
        env = "ROTABLOOM_WAIT_TIMEOUT_MS"
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
        env = "ROTABLOOM_WHEN_FULL"
    )]
    when_full: Option<rotabloom::WhenFull>,

    /// filter, check, load, add: reconnections to try, with backoff (0.1 s
    /// doubling to 5 s), after a lost connection or a failover before
    /// giving up (exit 3).
    #[arg(
        long,
        global = true,
        value_name = "N",
        default_value_t = 8,
        env = "ROTABLOOM_RETRIES"
    )]
    retries: u32,

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
        env = "ROTABLOOM_MIRROR_MIB"
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
        env = "ROTABLOOM_IN_FLIGHT"
    )]
    in_flight: u32,

    /// How long to wait for Redis, in seconds: to open a connection (the
    /// server's first answer included) and for each reply. Default: 10 to
    /// connect, 120 per reply.
    #[arg(
        long,
        global = true,
        value_name = "SECONDS",
        value_parser = parse_timeout,
        env = "ROTABLOOM_TIMEOUT"
    )]
    timeout: Option<Duration>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Create filters from the configuration or from flags (or check that
    /// they exist with the same parameters).
    #[command(
        after_help = "Without NAME, creates every filter of --config. With flags, creates one \
filter from them (and the configuration must not declare it)."
    )]
    Create(CreateArgs),
    /// Show filters, their generations and warnings.
    Status {
        /// Filters to show (default: every filter in the database).
        names: Vec<String>,
        /// Print JSON (schema in docs/CLI.md).
        #[arg(long)]
        json: bool,
        /// Exit with code 4 when any filter has an error-level warning
        /// (for monitoring and cron).
        #[arg(long)]
        check: bool,
    },
    /// Rotate circular filters: by hand, or as the schedule says (cron).
    #[command(
        after_help = "With --if-due and no NAME, every circular filter with a schedule. \
Prints one line per filter: rotated, or not due. Exit 0 either way."
    )]
    Rotate {
        /// Filters to rotate.
        names: Vec<String>,
        #[command(flatten)]
        output: Output,
        /// Rotate only if the schedule says a rotation is due (safe to run
        /// from cron on many hosts: each period rotates once).
        #[arg(long)]
        if_due: bool,
        /// With --if-due: the time to use instead of the Redis server's
        /// clock (RFC 3339, e.g. 2026-05-01T00:00:00Z). More than a minute
        /// ahead of the server's clock needs --force.
        #[arg(long, value_name = "RFC3339", requires = "if_due", value_parser = parse_now)]
        now: Option<DateTime<Utc>>,
        /// With --now: accept a time in the future (the schedule then
        /// counts the periods up to it as rotated).
        #[arg(long, requires = "now")]
        force: bool,
    },
    /// Insert items (arguments, else one per line of standard input).
    Add {
        name: String,
        items: Vec<OsString>,
        #[command(flatten)]
        output: Output,
        #[command(flatten)]
        state: resume::StateFlags,
    },
    /// Print the items that may be present (with --absent, those that are
    /// not), in input order. Exit 0 if any was printed, else 1.
    Check {
        name: String,
        items: Vec<OsString>,
        /// Print the absent items instead.
        #[arg(long)]
        absent: bool,
    },
    /// Copy standard input to standard output, dropping lines seen before
    /// (by this or any other process using the filter).
    Filter {
        name: String,
        /// Lines per round trip to Redis.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        batch: u32,
        #[command(flatten)]
        state: resume::StateFlags,
    },
    /// Insert every line of FILE ('-' for standard input), with progress.
    Load {
        name: String,
        file: PathBuf,
        #[command(flatten)]
        output: Output,
        /// Lines per round trip to Redis.
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        batch: u32,
        /// Items between two progress lines when standard error is not a
        /// terminal.
        #[arg(long, hide = true, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
        progress_every: u64,
        #[command(flatten)]
        state: resume::StateFlags,
    },
    /// Delete a filter and all its data.
    Drop {
        name: String,
        /// Really delete it.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        output: Output,
    },
    /// List the filters in the database, one name per line.
    List {
        /// Print one JSON object: {"filters": [{"name", "kind"}...]}.
        #[arg(long)]
        json: bool,
    },
    /// Empty every generation of a filter; the filter and its parameters
    /// stay.
    Clear {
        name: String,
        /// Really empty it.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        output: Output,
    },
    /// Freeze the newest generation of an expanding filter and add the
    /// next one now.
    Expand {
        name: String,
        #[command(flatten)]
        output: Output,
    },
    /// Turn a bloom filter into an expanding one, in place: its bits stay
    /// as generation 0, which takes writes until it holds its capacity.
    Convert {
        name: String,
        #[command(flatten)]
        growth: expanding::GrowthFlags,
        #[command(flatten)]
        output: Output,
    },
    /// Make a new expanding filter whose frozen first generation is a
    /// bitmap written by scrapy-redis-bloomfilter or seed 000's code
    /// (renamed into place; in a cluster, copied first from another slot;
    /// see docs/LEGACY.md).
    Adopt(expanding::AdoptArgs),
    /// Write a filter's metadata and bits to FILE ('-': standard output),
    /// a slice at a time (format in docs/FORMAT.md). A regular FILE is
    /// replaced whole once complete (through a symbolic link, its
    /// target); a FIFO or a device is written straight through.
    Dump {
        name: String,
        file: PathBuf,
        #[command(flatten)]
        output: Output,
    },
    /// Create a filter from a dump FILE ('-': standard input), on any
    /// server or cluster; never over an existing filter. Interrupted
    /// (SIGINT, SIGTERM, SIGHUP), it deletes what it wrote.
    Restore {
        file: PathBuf,
        /// The name to restore it as (default: the dumped filter's).
        #[arg(long = "as", value_name = "NAME")]
        as_name: Option<String>,
        #[command(flatten)]
        output: Output,
    },
    /// Print every filter's state in the Prometheus text format (for
    /// node_exporter's textfile collector).
    Metrics {
        /// Filters to export (default: every filter in the database).
        names: Vec<String>,
        /// Write to FILE (through a temporary file renamed over it, as
        /// the textfile collector needs; a FIFO or a device straight
        /// through) instead of standard output.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Print a completion script for SHELL, e.g.
    /// `rotabloom completions bash > /etc/bash_completion.d/rotabloom`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `rotabloom man > rotabloom.1`.
    Man,
}

#[derive(Args, Debug)]
struct CreateArgs {
    /// Filters to create (default: every filter of --config).
    names: Vec<String>,
    #[command(flatten)]
    settings: create::SettingFlags,
    /// Print the generations it would make (bits, hashes, blocks, bytes)
    /// and whether they fit the server's maxmemory; create nothing. Exit
    /// 1 when they would not fit.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    output: Output,
}

/// How a command that changes filters reports what it did.
#[derive(Args, Debug, Clone, Copy)]
pub struct Output {
    /// Print one JSON object per line instead of text (schema in
    /// docs/CLI.md).
    #[arg(long)]
    json: bool,
    /// Print only lines about a change (a filter created, rotated,
    /// cleared, converted...: nothing for add, load or "not due"), and no
    /// progress; errors are still printed.
    #[arg(long, short = 'q', conflicts_with = "json")]
    quiet: bool,
}

impl Output {
    /// Prints `text` or `json`, as asked; `changed` says whether `--quiet`
    /// still prints it.
    pub fn print(
        &self,
        out: &mut impl std::io::Write,
        text: &str,
        json: &serde_json::Value,
        changed: bool,
    ) -> std::io::Result<()> {
        if self.json {
            writeln!(out, "{json}")?;
        } else if !self.quiet || changed {
            writeln!(out, "{text}")?;
        }
        out.flush()
    }
}

/// A timeout in seconds, like `10` or `0.5`: at least a millisecond, at
/// most a day.
fn parse_timeout(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds like 10 or 0.5"))?;
    if !(0.001..=86_400.0).contains(&secs) {
        return Err(format!("{s:?}: a timeout is 0.001 to 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_now(s: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("{s:?} is not an RFC 3339 time like 2026-05-01T00:00:00Z ({e})"))
}

fn main() -> ExitCode {
    errors::install_panic_hook(Secrets::default());
    warnings::install();
    let parsed = Cli::command().try_get_matches().and_then(|m| {
        let cli = Cli::from_arg_matches(&m)?;
        // An explicit flag beats the configuration; the ambient
        // environment variable does not (docs/CLI.md, "Global options").
        let url = match m.value_source("redis") {
            Some(ValueSource::EnvVariable) => RedisUrlFrom::Env(cli.redis.clone()),
            _ => RedisUrlFrom::Flag(cli.redis.clone()),
        };
        Ok((cli, url))
    });
    let (cli, url) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return errors::exit_clap(&e),
    };
    // These need neither a configuration nor Redis.
    let local = match cli.command {
        Command::Completions { shell } => Some(generate::completions(shell)),
        Command::Man => Some(generate::man()),
        _ => None,
    };
    if let Some(result) = local {
        return match result {
            Ok(code) => ExitCode::from(code),
            Err(e) => errors::exit(&e, &Secrets::default()),
        };
    }
    let tls = rotabloom::connect::TlsOptions {
        ca_file: cli.tls_ca,
        cert_file: cli.tls_cert,
        key_file: cli.tls_key,
        insecure: cli.tls_insecure,
    };
    let durability = connect::Durability {
        wait_replicas: cli.wait_replicas,
        wait_timeout_ms: cli.wait_timeout_ms,
        retries: cli.retries,
        when_full: cli.when_full,
        timeout: cli.timeout,
    };
    let ctx = match Ctx::new(cli.config.as_deref(), url, tls, durability) {
        Ok(ctx) => ctx
            .with_mirror(cli.mirror_mib)
            .with_in_flight(cli.in_flight),
        Err(e) => return errors::exit(&e, &Secrets::default()),
    };
    errors::install_panic_hook(ctx.secrets().clone());
    match run(&ctx, cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(e) => errors::exit(&ctx.explain(e), ctx.secrets()),
    }
}

fn run(ctx: &Ctx, command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Create(args) => {
            create::run(ctx, &args.names, &args.settings, args.dry_run, args.output)
        }
        Command::Status { names, json, check } => status::run(ctx, names, json, check),
        Command::Rotate {
            names,
            output,
            if_due,
            now,
            force,
        } => rotate::run(ctx, names, if_due, now, force, output),
        Command::Add {
            name,
            items,
            output,
            state,
        } => add::run(ctx, &name, items, output, &state),
        Command::Check {
            name,
            items,
            absent,
        } => check::run(ctx, &name, items, absent),
        Command::Filter { name, batch, state } => filter::run(ctx, &name, batch as usize, &state),
        Command::Load {
            name,
            file,
            output,
            batch,
            progress_every,
            state,
        } => load::run(
            ctx,
            &name,
            &file,
            batch as usize,
            progress_every,
            output,
            &state,
        ),
        Command::Drop { name, yes, output } => drop::run(ctx, &name, yes, output),
        Command::List { json } => list::run(ctx, json),
        Command::Clear { name, yes, output } => drop::clear(ctx, &name, yes, output),
        Command::Expand { name, output } => expanding::expand(ctx, &name, output),
        Command::Convert {
            name,
            growth,
            output,
        } => expanding::convert(ctx, &name, &growth, output),
        Command::Adopt(args) => expanding::adopt(ctx, &args),
        Command::Dump { name, file, output } => dump::dump(ctx, &name, &file, output),
        Command::Restore {
            file,
            as_name,
            output,
        } => dump::restore(ctx, &file, as_name.as_deref(), output),
        Command::Metrics { names, output } => metrics::run(ctx, names, output.as_deref()),
        Command::Completions { shell } => generate::completions(shell),
        Command::Man => generate::man(),
    }
}
