//! `rotabloom`: create, inspect, rotate and use rotabloom filters from the
//! shell. See `docs/CLI.md`.

#[path = "rotabloom/any.rs"]
mod any;
#[path = "rotabloom/lines.rs"]
mod lines;
#[path = "rotabloom/status.rs"]
mod status;

use any::AnyFilter;
use anyhow::{anyhow, Context as _};
use chrono::{DateTime, SecondsFormat, Utc};
use clap::{Args, Parser, Subcommand};
use redis::Connection;
use rotabloom::config::{self, Config, ConfigError, FilterDef, FilterParams, RedisUrl};
use rotabloom::{Error, Kind, Mode, Opened, Rotation, Schedule};
use std::ffi::OsString;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const EXIT_CODES: &str = "\
Exit codes:
  0  success (check: at least one item printed)
  1  negative answer (check: no item printed)
  2  usage or configuration error, including a filter that does not exist
     or exists with other parameters than the configuration asks for
  3  Redis error: connection, authentication, server, or the data in it

Redis URL: --redis, else the configuration's redis_url / redis_url_env,
else $REDIS_URL, else redis://127.0.0.1:6379. Passwords are never printed.";

const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// Bloom filters in Redis: create, inspect, rotate and use them from the shell.
#[derive(Parser, Debug)]
#[command(name = "rotabloom", version, after_help = EXIT_CODES)]
struct Cli {
    /// Configuration file declaring filters (TOML; see docs/CLI.md).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Redis URL, e.g. redis://127.0.0.1:6379/0 (prefer $REDIS_URL for one
    /// with a password: the command line is visible to other users).
    #[arg(long, global = true, value_name = "URL")]
    redis: Option<String>,

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
    },
    /// Rotate circular filters: by hand, or as the schedule says (cron).
    #[command(
        after_help = "With --if-due and no NAME, every circular filter with a schedule. \
Prints one line per filter: rotated, or not due. Exit 0 either way."
    )]
    Rotate {
        /// Filters to rotate.
        names: Vec<String>,
        /// Rotate only if the schedule says a rotation is due (safe to run
        /// from cron on many hosts: each period rotates once).
        #[arg(long)]
        if_due: bool,
        /// With --if-due: the time to use instead of the Redis server's
        /// clock (RFC 3339, e.g. 2026-05-01T00:00:00Z).
        #[arg(long, value_name = "RFC3339", requires = "if_due", value_parser = parse_now)]
        now: Option<DateTime<Utc>>,
    },
    /// Insert items (arguments, else one per line of standard input).
    Add { name: String, items: Vec<OsString> },
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
    },
    /// Insert every line of FILE ('-' for standard input), with progress.
    Load {
        name: String,
        file: PathBuf,
        /// Lines per round trip to Redis.
        #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        batch: u32,
        /// Items between two progress lines when standard error is not a
        /// terminal.
        #[arg(long, hide = true, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
        progress_every: u64,
    },
    /// Delete a filter and all its data.
    Drop {
        name: String,
        /// Really delete it.
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Args, Debug)]
struct CreateArgs {
    /// Filters to create (default: every filter of --config).
    names: Vec<String>,
    /// bloom, expanding or circular.
    #[arg(long, value_parser = parse_kind, help_heading = "Filter settings")]
    kind: Option<Kind>,
    /// Items (bloom), items of the first generation (expanding), items per
    /// period (circular).
    #[arg(long, help_heading = "Filter settings")]
    capacity: Option<u64>,
    /// False-positive rate of a query at capacity (default 0.01).
    #[arg(long, help_heading = "Filter settings")]
    error_rate: Option<f64>,
    /// Circular: generations, the window in periods (2 to 256).
    #[arg(long, help_heading = "Filter settings")]
    generations: Option<u32>,
    /// Circular: insert-newest-query-all (default) or insert-all-query-oldest.
    #[arg(long, value_parser = parse_mode, help_heading = "Filter settings")]
    mode: Option<Mode>,
    /// Circular: rotation schedule (30d, 6h, daily@03:00, weekly:mon@03:00,
    /// monthly:1@00:00, ...).
    #[arg(long, value_name = "SCHEDULE", value_parser = parse_schedule, help_heading = "Filter settings")]
    every: Option<Schedule>,
    /// Circular: rotate lazily, on the first operation after a boundary.
    #[arg(long, help_heading = "Filter settings")]
    lazy: bool,
    /// Expanding: capacity factor from one generation to the next (default 2).
    #[arg(long, help_heading = "Filter settings")]
    growth: Option<f64>,
    /// Expanding: error-rate factor from one generation to the next (default 0.5).
    #[arg(long, help_heading = "Filter settings")]
    tightening: Option<f64>,
    /// Expanding: most generations (default 32).
    #[arg(long, help_heading = "Filter settings")]
    max_generations: Option<u32>,
    /// Expanding: most bytes of all generations (e.g. 4GiB; default: no limit).
    #[arg(long, value_parser = config::parse_bytes, help_heading = "Filter settings")]
    max_bytes: Option<u64>,
    /// Bloom: explicit size in bits (with --hashes) instead of --capacity.
    #[arg(long, help_heading = "Filter settings")]
    bits: Option<u64>,
    /// Bloom: explicit number of hash functions (with --bits).
    #[arg(long, help_heading = "Filter settings")]
    hashes: Option<u32>,
    /// Largest generation allowed, in bits (default 2^37).
    #[arg(long, help_heading = "Filter settings")]
    max_bits: Option<u64>,
    /// Block size in bits (default 2^26).
    #[arg(long, help_heading = "Filter settings")]
    max_block_bits: Option<u64>,
}

impl CreateArgs {
    fn params(&self) -> FilterParams {
        let mut p = FilterParams::default();
        p.kind = self.kind;
        p.capacity = self.capacity;
        p.error_rate = self.error_rate;
        p.generations = self.generations;
        p.mode = self.mode;
        p.schedule = self.every;
        p.lazy = self.lazy.then_some(true);
        p.growth = self.growth;
        p.tightening = self.tightening;
        p.max_generations = self.max_generations;
        p.max_bytes = self.max_bytes;
        p.bits = self.bits;
        p.hashes = self.hashes;
        p.max_bits = self.max_bits;
        p.max_block_bits = self.max_block_bits;
        p
    }
}

fn parse_kind(s: &str) -> Result<Kind, String> {
    config::parse_kind(s)
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse::<Mode>().map_err(|e| reason(&e))
}

fn parse_schedule(s: &str) -> Result<Schedule, String> {
    s.parse::<Schedule>().map_err(|e| reason(&e))
}

fn parse_now(s: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| format!("{s:?} is not an RFC 3339 time like 2026-05-01T00:00:00Z ({e})"))
}

/// The reason of an `InvalidParameter`, else the error's text.
fn reason(e: &Error) -> String {
    match e {
        Error::InvalidParameter { reason, .. } => reason.clone(),
        e => e.to_string(),
    }
}

// ---------------------------------------------------------------------------
// Errors and exit codes

/// An error with its exit code decided where it happened.
#[derive(Debug)]
struct Fail {
    code: u8,
    message: String,
}

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fail {}

fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Fail {
        code: 2,
        message: message.into(),
    })
}

/// The exit code of a library error: 2 for what the user asked (bad
/// parameters, names, a missing or different filter), 3 for Redis and the
/// data in it.
fn lib_code(e: &Error) -> u8 {
    match e {
        Error::InvalidParameter { .. }
        | Error::TooLarge { .. }
        | Error::InvalidName { .. }
        | Error::NotFound { .. }
        | Error::ParameterMismatch { .. }
        | Error::KindMismatch { .. } => 2,
        _ => 3,
    }
}

fn exit_code(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if let Some(f) = cause.downcast_ref::<Fail>() {
            return f.code;
        }
        if cause.downcast_ref::<ConfigError>().is_some() {
            return 2;
        }
        if let Some(e) = cause.downcast_ref::<Error>() {
            return lib_code(e);
        }
    }
    3
}

/// The password of the URL in use, to scrub it from any message.
static PASSWORD: OnceLock<String> = OnceLock::new();

/// `text` without any credentials.
fn scrub(text: &str) -> String {
    let mut out = config::redact(text);
    if let Some(pw) = PASSWORD.get() {
        if pw.len() >= 3 {
            out = out.replace(pw.as_str(), "***");
        }
    }
    out
}

/// The error and its causes, each said once: a cause whose text its
/// parent already includes is left out.
fn describe(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    scrub(&parts.join(": ").replace('\n', " "))
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        eprintln!("rotabloom: internal error: {}", scrub(&msg));
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let text = scrub(&e.render().to_string());
            if e.use_stderr() {
                let _ = io::stderr().write_all(text.as_bytes());
            } else {
                let _ = io::stdout().write_all(text.as_bytes());
            }
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rotabloom: {}", describe(&e));
            ExitCode::from(exit_code(&e))
        }
    }
}

// ---------------------------------------------------------------------------
// Connection

struct Ctx {
    config: Option<Config>,
    url_flag: Option<String>,
}

impl Ctx {
    fn url(&self) -> anyhow::Result<RedisUrl> {
        let url = if let Some(u) = &self.url_flag {
            RedisUrl::new(u.as_str()).map_err(|m| usage(format!("--redis: {m}")))?
        } else if let Some(u) = match &self.config {
            Some(c) => c.redis_url()?,
            None => None,
        } {
            u
        } else {
            match std::env::var("REDIS_URL") {
                Ok(u) if !u.trim().is_empty() => {
                    RedisUrl::new(u).map_err(|m| usage(format!("$REDIS_URL: {m}")))?
                }
                _ => RedisUrl::new(DEFAULT_URL).map_err(usage)?,
            }
        };
        if let Some(pw) = url.password() {
            let _ = PASSWORD.set(pw);
        }
        Ok(url)
    }

    fn connect(&self) -> anyhow::Result<Connection> {
        let url = self.url()?;
        let fail = |e: redis::RedisError| {
            anyhow::Error::new(Fail {
                code: 3,
                message: format!("cannot connect to {url}: {}", scrub(&e.to_string())),
            })
        };
        let client = redis::Client::open(url.expose()).map_err(fail)?;
        let conn = client
            .get_connection_with_timeout(Duration::from_secs(10))
            .map_err(fail)?;
        conn.set_read_timeout(Some(Duration::from_secs(120)))
            .map_err(fail)?;
        conn.set_write_timeout(Some(Duration::from_secs(120)))
            .map_err(fail)?;
        Ok(conn)
    }

    /// The configuration's definition of `name`, if any.
    fn def(&self, name: &str) -> Option<&FilterDef> {
        self.config.as_ref().and_then(|c| c.filter(name))
    }

    /// An error from creating `name` from the configuration: a parameter
    /// that differs from Redis is a configuration error at that key.
    fn create_error(&self, name: &str, e: Error) -> anyhow::Error {
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
    fn open_for_write(&self, conn: &mut Connection, name: &str) -> anyhow::Result<AnyFilter> {
        match self.def(name) {
            Some(def) => AnyFilter::create_or_open(conn, def)
                .map(|(f, _)| f)
                .map_err(|e| self.create_error(name, e)),
            None => open(conn, name),
        }
    }
}

/// Opens an existing filter, with a hint when it does not exist.
fn open(conn: &mut Connection, name: &str) -> anyhow::Result<AnyFilter> {
    match AnyFilter::open(conn, name) {
        Ok(f) => Ok(f),
        Err(Error::NotFound { .. }) => Err(usage(format!(
            "filter {name:?} does not exist (create it with `rotabloom create`)"
        ))),
        Err(e) => Err(e.into()),
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let config = match &cli.config {
        Some(path) => Some(Config::load(path)?),
        None => None,
    };
    let ctx = Ctx {
        config,
        url_flag: cli.redis,
    };
    match cli.command {
        Command::Create(args) => create(&ctx, args),
        Command::Status { names, json } => status_cmd(&ctx, names, json),
        Command::Rotate { names, if_due, now } => rotate(&ctx, names, if_due, now),
        Command::Add { name, items } => add(&ctx, &name, items),
        Command::Check {
            name,
            items,
            absent,
        } => check(&ctx, &name, items, absent),
        Command::Filter { name, batch } => filter(&ctx, &name, batch as usize),
        Command::Load {
            name,
            file,
            batch,
            progress_every,
        } => load(&ctx, &name, &file, batch as usize, progress_every),
        Command::Drop { name, yes } => drop_cmd(&ctx, &name, yes),
    }
}

// ---------------------------------------------------------------------------
// Commands

fn create(ctx: &Ctx, args: CreateArgs) -> anyhow::Result<u8> {
    let params = args.params();
    let flags = !params.keys_set().is_empty();
    let mut defs: Vec<FilterDef> = Vec::new();
    if flags {
        let [name] = args.names.as_slice() else {
            return Err(usage(
                "create: settings given as flags describe one filter: give exactly one NAME",
            ));
        };
        if let (Some(c), Some(_)) = (&ctx.config, ctx.def(name)) {
            return Err(usage(format!(
                "create: {name:?} is declared in {}; give either its section or flags, not both",
                c.file()
            )));
        }
        let def = params.validate(name).map_err(|e| match e.key {
            Some(key) => {
                let flag = if key == "schedule" {
                    "every".to_string()
                } else {
                    key.replace('_', "-")
                };
                usage(format!("create {name}: --{flag}: {}", e.message))
            }
            None => usage(format!("create: {}", e.message)),
        })?;
        defs.push(def);
    } else if args.names.is_empty() {
        match &ctx.config {
            Some(c) if !c.filters().is_empty() => defs.extend(c.filters().iter().cloned()),
            Some(c) => return Err(usage(format!("create: {} declares no filter", c.file()))),
            None => return Err(usage(
                "create: give a NAME and its settings (--kind, --capacity, ...), or --config FILE",
            )),
        }
    } else {
        for name in &args.names {
            match (ctx.def(name), &ctx.config) {
                (Some(def), _) => defs.push(def.clone()),
                (None, Some(c)) => {
                    return Err(usage(format!(
                        "create: {} declares no filter {name:?}; declare it, or give --kind and its settings",
                        c.file()
                    )))
                }
                (None, None) => {
                    return Err(usage(format!(
                        "create {name}: give its settings (--kind, --capacity, ...) or --config FILE"
                    )))
                }
            }
        }
    }
    let mut conn = ctx.connect()?;
    let mut out = io::stdout().lock();
    for def in &defs {
        let (f, how) = AnyFilter::create_or_open(&mut conn, def)
            .map_err(|e| ctx.create_error(def.name(), e))?;
        let info = f.info(&mut conn)?;
        let bytes: u64 = info.generations.iter().map(|g| g.bits.div_ceil(8)).sum();
        let gens = info.generations.len();
        let shape = format!(
            "{}, {gens} generation{}, {}",
            f.kind(),
            if gens == 1 { "" } else { "s" },
            status::bytes(bytes)
        );
        match how {
            Opened::Created => writeln!(out, "{}: created ({shape})", def.name())?,
            Opened::Existing => writeln!(out, "{}: exists, same parameters ({shape})", def.name())?,
        }
    }
    Ok(0)
}

fn status_cmd(ctx: &Ctx, names: Vec<String>, json: bool) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let names = if names.is_empty() {
        status::all_names(&mut conn).map_err(Error::from)?
    } else {
        names
    };
    let server = status::Server::read(&mut conn).map_err(Error::from)?;
    // A filter that cannot be read (gone, corrupt, another format) is
    // reported and skipped; losing Redis ends the command.
    let mut reports = Vec::new();
    let mut failed = Vec::new();
    let mut worst = 0;
    for name in &names {
        let report = open(&mut conn, name).and_then(|f| {
            let info = f.info(&mut conn)?;
            Ok(status::Report::new(&f, info, &server))
        });
        match report {
            Ok(r) => reports.push(r),
            Err(e) => {
                if e.chain()
                    .any(|c| matches!(c.downcast_ref::<Error>(), Some(Error::Redis(_))))
                {
                    return Err(e);
                }
                worst = worst.max(exit_code(&e));
                let text = describe(&e);
                eprintln!("rotabloom: {text}");
                failed.push(serde_json::json!({ "name": name, "error": text }));
            }
        }
    }
    let warnings = server.warnings();
    let mut out = io::stdout().lock();
    if json {
        let mut filters: Vec<serde_json::Value> =
            reports.iter().map(status::Report::json).collect();
        filters.extend(failed);
        let doc = serde_json::json!({
            "server": status::server_json(&server),
            "warnings": warnings,
            "filters": filters,
        });
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
    } else {
        if names.is_empty() {
            writeln!(out, "no filters")?;
        }
        for r in &reports {
            out.write_all(r.text(&server).as_bytes())?;
        }
        for w in &warnings {
            writeln!(out, "warning: server: {w}")?;
        }
    }
    out.flush()?;
    Ok(worst)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn rotate(
    ctx: &Ctx,
    names: Vec<String>,
    if_due: bool,
    now: Option<DateTime<Utc>>,
) -> anyhow::Result<u8> {
    if names.is_empty() && !if_due {
        return Err(usage(
            "rotate: name the filters to rotate now, or use --if-due to rotate every filter that is due",
        ));
    }
    let mut conn = ctx.connect()?;
    let explicit = !names.is_empty();
    let names = if explicit {
        names
    } else {
        status::all_names(&mut conn).map_err(Error::from)?
    };
    let mut out = io::stdout().lock();
    let mut worst = 0u8;
    for name in &names {
        let result = (|| -> anyhow::Result<Option<String>> {
            let f = open(&mut conn, name)?;
            let Some(c) = f.circular() else {
                if explicit {
                    return Err(usage(format!(
                        "{name}: a {} filter does not rotate (only circular filters do)",
                        f.kind()
                    )));
                }
                return Ok(None);
            };
            if if_due && c.schedule().is_none() {
                if explicit {
                    return Err(usage(format!(
                        "{name}: has no schedule, so it is never due; rotate it without --if-due"
                    )));
                }
                return Ok(None);
            }
            let line = match AnyFilter::rotate(c, &mut conn, if_due, now)? {
                Rotation::Rotated {
                    rotations,
                    epoch,
                    next_at,
                } => {
                    let next = next_at
                        .map(|t| format!(", next {}", rfc3339(t)))
                        .unwrap_or_default();
                    format!(
                        "{name}: rotated ({rotations} rotation{}, epoch {epoch}{next})",
                        if rotations == 1 { "" } else { "s" }
                    )
                }
                Rotation::NotDue { next_at } => {
                    format!("{name}: not due (next {})", rfc3339(next_at))
                }
                Rotation::Superseded { epoch } => {
                    format!("{name}: not rotated: another process changed it first (epoch {epoch})")
                }
            };
            Ok(Some(line))
        })();
        match result {
            Ok(Some(line)) => {
                writeln!(out, "{line}")?;
                out.flush()?;
            }
            Ok(None) => {}
            Err(e) => {
                worst = worst.max(exit_code(&e));
                eprintln!("rotabloom: {}", describe(&e));
            }
        }
    }
    Ok(worst)
}

fn add(ctx: &Ctx, name: &str, items: Vec<OsString>) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let f = ctx.open_for_write(&mut conn, name)?;
    let mut source = lines::Source::new(items);
    let mut batch = Vec::new();
    let mut total = 0u64;
    while source
        .next_batch(&mut batch, 1000)
        .context("reading items")?
    {
        f.insert_many(&mut conn, &batch)?;
        total += batch.len() as u64;
    }
    writeln!(
        io::stdout(),
        "{name}: added {total} item{}",
        if total == 1 { "" } else { "s" }
    )?;
    Ok(0)
}

fn check(ctx: &Ctx, name: &str, items: Vec<OsString>, absent: bool) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let f = open(&mut conn, name)?;
    let mut source = lines::Source::new(items);
    let mut batch = Vec::new();
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut printed = false;
    while source
        .next_batch(&mut batch, 1000)
        .context("reading items")?
    {
        let res = f.contains_many(&mut conn, &batch)?;
        for (item, present) in batch.iter().zip(res) {
            if present != absent {
                out.write_all(item)?;
                out.write_all(b"\n")?;
                printed = true;
            }
        }
        out.flush()?;
    }
    Ok(if printed { 0 } else { 1 })
}

fn filter(ctx: &Ctx, name: &str, batch_size: usize) -> anyhow::Result<u8> {
    let mut conn = ctx.connect()?;
    let f = ctx.open_for_write(&mut conn, name)?;
    let mut input = lines::Batches::new(io::stdin());
    let mut batch = Vec::with_capacity(batch_size);
    let mut out = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    while input
        .next_batch(&mut batch, batch_size)
        .context("reading standard input")?
    {
        let new = f.check_and_insert_many(&mut conn, &batch)?;
        for (line, new) in batch.iter().zip(new) {
            if new {
                out.write_all(line)?;
                out.write_all(b"\n")?;
            }
        }
        out.flush()?;
    }
    Ok(0)
}

/// Progress of `load`: a bar on a terminal, else a line every million items.
struct Progress {
    tty: bool,
    total_bytes: Option<u64>,
    start: Instant,
    last_draw: Instant,
    next_line: u64,
    every: u64,
}

impl Progress {
    fn new(total_bytes: Option<u64>, every: u64) -> Progress {
        let now = Instant::now();
        Progress {
            tty: io::stderr().is_terminal(),
            total_bytes: total_bytes.filter(|b| *b > 0),
            start: now,
            last_draw: now,
            next_line: every,
            every,
        }
    }

    fn rate(&self, items: u64) -> f64 {
        items as f64 / self.start.elapsed().as_secs_f64().max(1e-3)
    }

    fn update(&mut self, items: u64, bytes: u64) {
        if self.tty {
            if self.last_draw.elapsed() < Duration::from_millis(200) {
                return;
            }
            self.last_draw = Instant::now();
            let elapsed = self.start.elapsed().as_secs_f64();
            let mut line = format!("{items} items, {:.0} items/s", self.rate(items));
            if let Some(total) = self.total_bytes {
                let frac = (bytes as f64 / total as f64).clamp(0.0, 1.0);
                let width = 24;
                let filled = (frac * width as f64) as usize;
                let eta = if frac > 0.0 {
                    elapsed * (1.0 - frac) / frac
                } else {
                    0.0
                };
                line = format!(
                    "[{}{}] {:>3.0}%  {line}, ETA {}",
                    "#".repeat(filled),
                    "-".repeat(width - filled),
                    frac * 100.0,
                    clock(eta)
                );
            }
            eprint!("\r\x1b[K{line}");
        } else if items >= self.next_line {
            while self.next_line <= items {
                self.next_line += self.every;
            }
            eprintln!("loaded {items} items, {:.0} items/s", self.rate(items));
        }
    }

    fn finish(&self) {
        if self.tty {
            eprint!("\r\x1b[K");
        }
    }
}

fn clock(secs: f64) -> String {
    let s = secs.round().max(0.0) as u64;
    format!("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
}

fn load(
    ctx: &Ctx,
    name: &str,
    file: &std::path::Path,
    batch_size: usize,
    progress_every: u64,
) -> anyhow::Result<u8> {
    let reader: Box<dyn io::Read> = if file.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        Box::new(std::fs::File::open(file).map_err(|e| {
            usage(format!(
                "cannot open {}: {}",
                file.display(),
                match e.kind() {
                    io::ErrorKind::NotFound => "no such file".to_string(),
                    _ => e.to_string(),
                }
            ))
        })?)
    };
    let size = std::fs::metadata(file)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    let mut conn = ctx.connect()?;
    let f = ctx.open_for_write(&mut conn, name)?;
    let mut input = lines::Batches::new(reader);
    let mut batch = Vec::with_capacity(batch_size);
    let mut progress = Progress::new(size, progress_every);
    let mut total = 0u64;
    let result = (|| -> anyhow::Result<()> {
        while input
            .next_batch(&mut batch, batch_size)
            .with_context(|| format!("reading {}", file.display()))?
        {
            f.insert_many(&mut conn, &batch)?;
            total += batch.len() as u64;
            progress.update(total, input.bytes);
        }
        Ok(())
    })();
    progress.finish();
    result?;
    let secs = progress.start.elapsed().as_secs_f64();
    writeln!(
        io::stdout(),
        "{name}: loaded {total} items in {secs:.1} s, {:.0} items/s",
        progress.rate(total)
    )?;
    Ok(0)
}

fn drop_cmd(ctx: &Ctx, name: &str, yes: bool) -> anyhow::Result<u8> {
    if !yes {
        return Err(usage(format!(
            "drop deletes filter {name:?} and all its data: add --yes to confirm"
        )));
    }
    let mut conn = ctx.connect()?;
    let f = open(&mut conn, name)?;
    if f.drop_filter(&mut conn)? {
        writeln!(io::stdout(), "{name}: dropped")?;
        Ok(0)
    } else {
        Err(anyhow!(Fail {
            code: 2,
            message: format!("filter {name:?} does not exist"),
        }))
    }
}
