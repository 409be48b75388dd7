//! The help a person reads: the global flags under their headings, shown
//! once in `rotabloom --help` (each command's help points there instead of
//! repeating them), and every command's examples, taken from real use.

use super::{term, version};

pub const CONNECTION: &str = "Connection";
pub const TLS: &str = "TLS";
pub const WRITES: &str = "Writes";
pub const THROUGHPUT: &str = "Throughput";
pub const OUTPUT: &str = "Output";

/// The command line `cmd`, built: its global flags hidden in each
/// command's help, which points to `globals_at` for them instead; each
/// command's examples.
pub fn finish(cmd: clap::Command, globals_at: &str) -> clap::Command {
    let mut cmd = cmd
        .styles(term::styles())
        .long_version(version::long())
        .after_help(styled(TOP));
    // Built first, so that the global flags are copied into every command
    // (as clap does when it parses), to be hidden there.
    cmd.build();
    let globals: Vec<clap::Id> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.get_id().clone())
        .collect();
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .filter(|n| n != "help")
        .collect();
    let pointer =
        format!("Global options (where Redis is, TLS, writes, throughput, colour): {globals_at}");
    for name in names {
        cmd = cmd.mut_subcommand(&name, |sc| {
            // In place (`mut_arg` would move them, and the built command
            // finds its flags by position).
            let sc = sc.mut_args(|a| match globals.contains(a.get_id()) {
                true => a.hide(true),
                false => a,
            });
            match examples(&name) {
                Some(text) => sc.after_help(styled(&format!("{pointer}\n\n{text}"))),
                None => sc,
            }
        });
    }
    cmd
}

/// `text` with its headings (lines ending with `:`, not indented) and
/// comments (`# ...`) styled; clap strips the styles where colour is off.
/// Each line's newline goes inside its style: clap's wrapping starts
/// counting a line's width afresh only at a newline inside a span.
fn styled(text: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let style = if !line.starts_with(' ') && line.ends_with(':') {
            term::HEADER
        } else if line.trim_start().starts_with("# ") {
            term::COMMENT
        } else {
            anstyle::Style::new()
        };
        let newline = if i == 0 { "" } else { "\n" };
        out.push_str(&format!("{style}{newline}{line}{style:#}"));
    }
    out
}

pub const TOP: &str = "\
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
  6  --delivery at-least-once (filter, add, load): every line handled,
     but the answers of some were lost with a reply; they were inserted
     again and taken as new (a line may be printed twice)
  128+N  restore or dump FILE stopped by signal N (130: SIGINT) after
     cleaning up

Where Redis is:
  --redis, else the configuration's redis_url / redis_url_env /
  cluster_nodes / sentinels, else $REDIS_URL, else redis://127.0.0.1:6379
  (the explicit beats the ambient). Forms: redis://, rediss:// (TLS),
  unix://, redis+cluster://H:P,H:P, redis+sentinel://H:P,H:P/MASTER.
  Passwords are never printed.

Examples:
  # Create the filters a configuration declares (or check them: safe at every deploy)
  rotabloom --config /etc/rotabloom.toml create
  # Only the URLs never seen before, by this or any other host
  cat urls.txt | rotabloom filter crawl > new-urls.txt
  # From cron on every crawler host: each period rotates once
  */5 * * * *  rotabloom --config /etc/rotabloom.toml rotate --if-due --quiet
  rotabloom status

Each command has its own help and examples: rotabloom help create.
Manual pages: rotabloom man --dir /usr/local/share/man/man1.
Reference (as published with the crate):
https://docs.rs/crate/rotabloom/latest/source/docs/CLI.md";

/// The examples at the end of `name`'s help.
pub fn examples(name: &str) -> Option<&'static str> {
    Some(match name {
        "create" => "\
Examples:
  # Every filter the configuration declares (an existing one is checked, never changed)
  rotabloom --config /etc/rotabloom.toml create
  # 100 million URLs at a 0.1% false-positive rate (about 171 MiB)
  rotabloom create crawl --kind bloom --capacity 100M --error-rate 0.1%
  # Re-crawl: a URL is skipped for 4 to 5 weeks after it is let through
  rotabloom create recrawl --kind circular --generations 5 --every 7d --from now --capacity 2M
  # Monthly periods, rotating on the 1st at midnight UTC
  rotabloom create monthly --kind circular --generations 4 --every monthly --capacity 10M
  # Sizes, and whether they fit the server's maxmemory; creates nothing
  rotabloom create huge --kind bloom --capacity 1G --dry-run",
        "status" => "\
Examples:
  rotabloom status
  rotabloom status crawl --json | jq '.filters[0].items'
  # From cron: mail the state when a filter is unhealthy (exit 4)
  0 * * * *  rotabloom status --check > /tmp/rb.txt || mail -s rotabloom ops < /tmp/rb.txt",
        "rotate" => "\
Examples:
  # From cron on every crawler host: each period rotates exactly once
  */5 * * * *  rotabloom --config /etc/rotabloom.toml rotate --if-due --quiet
  # Forget the oldest generation now (the schedule stays as it was)
  rotabloom rotate recrawl
  # Backfill: the rotations due at a past time
  rotabloom rotate --if-due recrawl --now 2026-05-01T00:00:00Z",
        "add" => "\
Examples:
  rotabloom add crawl https://example.com/a https://example.com/b
  grep -oh 'https://[^\" ]*' pages/*.html | rotabloom add crawl
  # {\"name\":\"crawl\",\"result\":\"inserted\",\"items\":1,\"new\":0,\"present\":1,\"per_period\":false}
  rotabloom add crawl --json https://example.com/a",
        "check" => "\
Examples:
  rotabloom check crawl https://example.com/ && echo seen
  # The candidates not seen yet, in order (inserts nothing)
  rotabloom check --absent crawl < candidates.txt > to-fetch.txt",
        "filter" => "\
Examples:
  # Only never-seen lines, in input order; any number of hosts can share the filter
  cat urls.txt | rotabloom filter crawl > new-urls.txt
  tail -F discovered.log | rotabloom filter crawl | xargs -n 100 curl -sO
  # Resumable across a lost Redis: rerun with --resume crawl.state
  rotabloom filter crawl --state crawl.state < urls.txt > new-urls.txt
  # Faster; after a lost reply a seen line may be printed again (counted, exit 6)
  rotabloom --delivery at-least-once filter crawl < urls.txt > new-urls.txt",
        "load" => "\
Examples:
  rotabloom load crawl seen-urls.txt
  zcat urls.txt.gz | rotabloom load crawl -
  # Scrapy migration: scrapy-redis's fingerprints (a Redis set) into a filter
  redis-cli --raw SMEMBERS myspider:dupefilter | rotabloom load myspider:dupefilter -",
        "drop" => "\
Examples:
  rotabloom drop crawl --yes
  # Finish a drop that was interrupted: removes the keys it left
  rotabloom drop crawl --yes",
        "list" => "\
Examples:
  rotabloom list
  # Back up every filter
  rotabloom list | while read -r f; do rotabloom dump \"$f\" \"backup/$f.rbdump\"; done
  rotabloom list --json | jq -r '.filters[] | select(.kind == \"circular\") | .name'",
        "clear" => "\
Examples:
  # Forget every item, keep the filter, its parameters and its memory
  rotabloom clear crawl --yes",
        "expand" => "\
Examples:
  # Add the next generation now, before a burst of writes
  rotabloom expand growing",
        "convert" => "\
Examples:
  # A base filter near its capacity grows instead of refusing writes
  rotabloom convert crawl
  rotabloom convert crawl --growth 4 --max-bytes 4GiB",
        "adopt" => "\
Examples:
  # Scrapy migration: take over scrapy-redis-bloomfilter's bitmap, checked
  # first with fingerprints from the old crawler's logs
  rotabloom adopt myspider --scrapy-redis-bloomfilter myspider:bloomfilter \\
      --bit 30 --hash-number 6 --capacity 10M --verify fingerprints.txt
  # The bitmaps of the 2016 blog code: keys bloomfilter0, bloomfilter1, ...
  rotabloom adopt crawl --seed000 bloomfilter --block-num 2 --capacity 10M",
        "dump" => "\
Examples:
  rotabloom dump crawl crawl.rbdump
  # Move a filter to another server or cluster
  rotabloom --redis redis://old:6379 dump crawl - |
      rotabloom --redis redis+cluster://new1:7000 restore -",
        "restore" => "\
Examples:
  rotabloom restore crawl.rbdump
  rotabloom restore crawl.rbdump --as crawl-before-migration
  zcat crawl.rbdump.gz | rotabloom restore -",
        "metrics" => "\
Examples:
  # From cron, for node_exporter's textfile collector
  * * * * *  rotabloom metrics --output /var/lib/node_exporter/textfile/rotabloom.prom",
        "completions" => "\
Examples:
  echo 'source <(rotabloom completions bash)' >> ~/.bashrc
  rotabloom completions zsh > \"${fpath[1]}/_rotabloom\"
  rotabloom completions fish > ~/.config/fish/completions/rotabloom.fish",
        "man" => "\
Examples:
  rotabloom man --dir /usr/local/share/man/man1
  rotabloom man create | man -l -",
        _ => return None,
    })
}
