//! `rotabloom`: create, inspect, rotate and use rotabloom filters from the
//! shell. See `docs/CLI.md`.
//!
//! This file holds the command line and sends each subcommand to its
//! module; `connect` and `errors` serve them all.

mod add;
mod alloc;
mod any;
mod check;
mod complete;
mod connect;
mod create;
mod disagree;
mod drop;
mod dump;
mod errors;
mod expanding;
mod filter;
mod generate;
mod globals;
mod help;
mod insert;
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
mod stop;
mod suggest;
mod tally;
mod term;
mod unanswered;
mod version;
mod warnings;
mod window;
mod words;
mod writer;

use chrono::{DateTime, Utc};
use clap::{Args, FromArgMatches, Parser, Subcommand};
use connect::Ctx;
use rotabloom::config::Secrets;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Bloom filters in Redis: create, inspect, rotate and use them from the shell.
#[derive(Parser, Debug)]
#[command(name = "rotabloom", version, arg_required_else_help = true)]
struct Cli {
    #[command(flatten)]
    globals: globals::Globals,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Create filters from the configuration or from flags (or check that
    /// they exist with the same parameters).
    ///
    /// Without NAME, creates every filter of --config. With flags, creates
    /// one filter from them (and the configuration must not declare it).
    /// Once a filter exists, its parameters in Redis are the truth: asking
    /// for others is refused, naming the one that differs.
    Create(CreateArgs),
    /// Show filters, their generations and warnings.
    Status {
        /// Filters to show (default: every filter in the database).
        #[arg(add = complete::filter_names())]
        names: Vec<String>,
        /// Print one JSON object (its fields: the CLI reference named in
        /// `rotabloom --help`).
        #[arg(long)]
        json: bool,
        /// Exit with code 4 when any filter has an error-level warning
        /// (for monitoring and cron).
        #[arg(long)]
        check: bool,
    },
    /// Rotate circular filters: by hand, or as the schedule says (cron).
    ///
    /// With --if-due and no NAME, every circular filter with a schedule.
    /// Prints one line per filter: rotated, or not due. Exit 0 either way.
    Rotate {
        /// Filters to rotate.
        #[arg(add = complete::filter_names())]
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
    /// Insert items (arguments, else one per line of standard input), and
    /// say how many were new and how many already present.
    Add {
        #[arg(add = complete::filter_names())]
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
        #[arg(add = complete::filter_names())]
        name: String,
        items: Vec<OsString>,
        /// Print the absent items instead.
        #[arg(long)]
        absent: bool,
    },
    /// Copy standard input to standard output, dropping lines seen before
    /// (by this or any other process using the filter).
    Filter {
        #[arg(add = complete::filter_names())]
        name: String,
        /// Lines per round trip to Redis (per shard of a sharded filter).
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        batch: u32,
        #[command(flatten)]
        state: resume::StateFlags,
    },
    /// Insert every line of FILE ('-' for standard input), with progress,
    /// and say how many were new and how many already present.
    Load {
        #[arg(add = complete::filter_names())]
        name: String,
        file: PathBuf,
        #[command(flatten)]
        output: Output,
        /// Lines per round trip to Redis (per shard of a sharded filter).
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
        #[arg(add = complete::filter_names())]
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
        #[arg(add = complete::filter_names())]
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
        #[arg(add = complete::filter_names())]
        name: String,
        #[command(flatten)]
        output: Output,
    },
    /// Turn a bloom filter into an expanding one, in place: its bits stay
    /// as generation 0, which takes writes until it holds its capacity.
    Convert {
        #[arg(add = complete::filter_names())]
        name: String,
        #[command(flatten)]
        growth: expanding::GrowthFlags,
        #[command(flatten)]
        output: Output,
    },
    /// Make a new expanding filter whose frozen first generation is a
    /// bitmap of a Python crawler: scrapy-redis-bloomfilter's, or the one
    /// of the 2016 blog code (MD5 and SimpleHash, keys PREFIX0, PREFIX1...).
    ///
    /// The bitmap is checked against the parameters given before anything
    /// moves, then renamed into place (in a cluster, copied first from
    /// another slot). New items go to the generations after it.
    Adopt(expanding::AdoptArgs),
    /// Write a filter's metadata and bits to FILE ('-': standard output),
    /// a slice at a time, in a versioned, checksummed format. A regular
    /// FILE is replaced whole once complete (through a symbolic link, its
    /// target); a FIFO or a device is written straight through.
    Dump {
        #[arg(add = complete::filter_names())]
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
        #[arg(add = complete::filter_names())]
        names: Vec<String>,
        /// Write to FILE (through a temporary file renamed over it, as
        /// the textfile collector needs; a FIFO or a device straight
        /// through) instead of standard output.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Print the completion script for SHELL: commands, flags, their
    /// values, and filter names asked of the server.
    ///
    /// The script calls rotabloom to complete (as `COMPLETE=SHELL
    /// rotabloom` would print it): filter names come from the Redis the
    /// words typed so far point to (--redis, --config, $REDIS_URL), within
    /// a second, else none.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff): rotabloom's, or a command's; with --dir,
    /// write them all there.
    Man {
        /// The command whose page to print, e.g. create (default: the
        /// page of rotabloom itself).
        #[arg(value_name = "COMMAND", conflicts_with = "dir")]
        command: Option<String>,
        /// Write every page (rotabloom.1, rotabloom-create.1, ...) into DIR.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
struct CreateArgs {
    /// Filters to create (default: every filter of --config).
    #[arg(add = complete::filter_names())]
    names: Vec<String>,
    #[command(flatten)]
    settings: create::SettingFlags,
    /// With --every INTERVAL (30d, 6h...): count the periods from WHEN
    /// instead of from 1970-01-01: `now` (the creation, by the Redis
    /// server's clock) or an RFC 3339 time. Stored as `30d from TIME`.
    #[arg(long, value_name = "WHEN", requires = "schedule", help_heading = "Filter settings", value_parser = create::parse_from)]
    from: Option<create::From>,
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
    /// Print one JSON object per line instead of text (fields: the CLI
    /// reference named in `rotabloom --help`).
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
    alloc::keep_batch_buffers();
    // Before anything is printed: --color decides how clap prints too.
    term::init(std::env::args_os());
    errors::install_panic_hook(Secrets::default());
    warnings::install();
    // `COMPLETE=bash rotabloom ...` (the completion script's call) answers
    // here and exits.
    clap_complete::CompleteEnv::with_factory(help::command).complete();
    let parsed = help::command()
        .try_get_matches()
        .and_then(|m| Ok((Cli::from_arg_matches(&m)?, m)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return errors::exit_clap(&e),
    };
    // These need neither a configuration nor Redis.
    let local = match &cli.command {
        Command::Completions { shell } => Some(generate::completions(*shell)),
        Command::Man { command, dir } => Some(generate::man(command.as_deref(), dir.as_deref())),
        _ => None,
    };
    if let Some(result) = local {
        return match result {
            Ok(code) => ExitCode::from(code),
            Err(e) => errors::exit(&e, &Secrets::default()),
        };
    }
    let ctx = match cli.globals.ctx(&matches) {
        Ok(ctx) => ctx,
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
        Command::Create(args) => create::run(
            ctx,
            &args.names,
            &args.settings,
            args.from,
            args.dry_run,
            args.output,
        ),
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
        Command::Man { command, dir } => generate::man(command.as_deref(), dir.as_deref()),
    }
}
