//! The command line as clap parses it: the commands, their flags, and
//! the global flags (`globals`); filter names completed from the server
//! (`complete`). Each command's own flags are defined beside it, under
//! `commands`.

mod complete;
mod globals;
#[cfg(test)]
mod tests;
mod values;

use crate::commands::create::flags::{parse_from, From, SettingFlags};
use crate::commands::expanding::adopt::AdoptArgs;
use crate::commands::expanding::GrowthFlags;
use crate::run::resume::flags::StateFlags;
use crate::shared::output::Output;
use crate::show::help;
use chrono::{DateTime, Utc};
use clap::{Args, CommandFactory, Parser, Subcommand};
use globals::Globals;
use std::ffi::OsString;
use std::path::PathBuf;
use values::parse_now;

/// The command line as it is parsed, completed and documented: the
/// global flags hidden in each command's help, which points to
/// `rotabloom --help` instead; each command's examples.
pub fn command() -> clap::Command {
    help::finish(Cli::command(), "rotabloom --help")
}

/// [`command`] for manual pages: without the `help` command, which has
/// none, each command's page pointing to rotabloom(1).
pub fn for_manual() -> clap::Command {
    help::finish(Cli::command().disable_help_subcommand(true), "rotabloom(1)")
}

/// Bloom filters in Redis: create, inspect, rotate and use them from the shell.
#[derive(Parser, Debug)]
#[command(name = "rotabloom", version, arg_required_else_help = true)]
pub struct Cli {
    #[command(flatten)]
    pub globals: Globals,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
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
        #[arg(add = complete::filter_names(command))]
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
        #[arg(add = complete::filter_names(command))]
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
        #[arg(add = complete::filter_names(command))]
        name: String,
        items: Vec<OsString>,
        #[command(flatten)]
        output: Output,
        #[command(flatten)]
        state: StateFlags,
    },
    /// Print the items that may be present (with --absent, those that are
    /// not), in input order. Exit 0 if any was printed, else 1.
    Check {
        #[arg(add = complete::filter_names(command))]
        name: String,
        items: Vec<OsString>,
        /// Print the absent items instead.
        #[arg(long)]
        absent: bool,
    },
    /// Copy standard input to standard output, dropping lines seen before
    /// (by this or any other process using the filter).
    Filter {
        #[arg(add = complete::filter_names(command))]
        name: String,
        /// Lines per round trip to Redis (per shard of a sharded filter).
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        batch: u32,
        #[command(flatten)]
        state: StateFlags,
    },
    /// Insert every line of FILE ('-' for standard input), with progress,
    /// and say how many were new and how many already present.
    Load {
        #[arg(add = complete::filter_names(command))]
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
        state: StateFlags,
    },
    /// Delete a filter and all its data.
    Drop {
        #[arg(add = complete::filter_names(command))]
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
        #[arg(add = complete::filter_names(command))]
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
        #[arg(add = complete::filter_names(command))]
        name: String,
        #[command(flatten)]
        output: Output,
    },
    /// Turn a bloom filter into an expanding one, in place: its bits stay
    /// as generation 0, which takes writes until it holds its capacity.
    Convert {
        #[arg(add = complete::filter_names(command))]
        name: String,
        #[command(flatten)]
        growth: GrowthFlags,
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
    Adopt(AdoptArgs),
    /// Write a filter's metadata and bits to FILE ('-': standard output),
    /// a slice at a time, in a versioned, checksummed format. A regular
    /// FILE is replaced whole once complete (through a symbolic link, its
    /// target); a FIFO or a device is written straight through.
    Dump {
        #[arg(add = complete::filter_names(command))]
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
        #[arg(add = complete::filter_names(command))]
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
pub struct CreateArgs {
    /// Filters to create (default: every filter of --config).
    #[arg(add = complete::filter_names(command))]
    pub names: Vec<String>,
    #[command(flatten)]
    pub settings: SettingFlags,
    /// With --every INTERVAL (30d, 6h...): count the periods from WHEN
    /// instead of from 1970-01-01: `now` (the creation, by the Redis
    /// server's clock) or an RFC 3339 time. Stored as `30d from TIME`.
    #[arg(long, value_name = "WHEN", requires = "schedule", help_heading = "Filter settings", value_parser = parse_from)]
    pub from: Option<From>,
    /// Print the generations it would make (bits, hashes, blocks, bytes)
    /// and whether they fit the server's maxmemory; create nothing. Exit
    /// 1 when they would not fit.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub output: Output,
}
