//! The `rotabloom` binary, driven as a user would, against private
//! redis-servers.

#[path = "../../tests/support/harness.rs"]
mod harness;

use harness::RedisServer;
use rotabloom::config::settings;
use rotabloom::{FilterName, Keys, KEY_PREFIX};
use serde_json::Value;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_rotabloom");

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// The one error line on stderr.
    fn error_line(&self) -> &str {
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line on stderr: {:?}", self.stderr);
        assert!(lines[0].starts_with("rotabloom: "), "{:?}", lines[0]);
        lines[0]
    }
}

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

fn command(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env_remove("REDIS_URL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn finish(child: Child) -> Out {
    let o = child.wait_with_output().expect("wait for rotabloom");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Runs the binary with `args`, feeding `stdin`.
fn run_cmd(mut c: Command, stdin: &[u8]) -> Out {
    c.stdin(Stdio::piped());
    let mut child = c.spawn().expect("spawn rotabloom");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = finish(child);
    writer.join().unwrap();
    out
}

/// `rotabloom --redis URL ARGS...`
fn rb(url: &str, args: &[&str]) -> Out {
    rb_in(url, args, b"")
}

fn rb_in(url: &str, args: &[&str], stdin: &[u8]) -> Out {
    let mut all = vec!["--redis", url];
    all.extend_from_slice(args);
    run_cmd(command(&all), stdin)
}

/// The keys of filter `name`, as the library names them.
fn keys(name: &str) -> Keys {
    Keys::new(FilterName::new(name).unwrap())
}

/// `rotabloom --redis URL create NAME SETTINGS...`, which must succeed.
fn create(url: &str, name: &str, settings: &[&str]) -> Out {
    let mut args = vec!["create", name];
    args.extend_from_slice(settings);
    ok(rb(url, &args))
}

/// A usage error: exit code 2, nothing on standard output, one error line
/// starting with `want`.
fn usage_error(out: Out, want: &str) {
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(out.error_line().starts_with(want), "{want}: {out:?}");
}

fn ok(out: Out) -> Out {
    assert_eq!(out.code, 0, "{out:?}");
    out
}

fn json(url: &str, names: &[&str]) -> Value {
    let mut args = vec!["status", "--json"];
    args.extend_from_slice(names);
    let out = ok(rb(url, &args));
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "rotabloom-cli-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const CONFIG: &str = r#"# test configuration
[filter.crawl]
kind = "bloom"
capacity = 100_000
error_rate = 0.001

[filter.growing]
kind = "expanding"
capacity = 1000
error_rate = 0.01
max_bytes = "1MiB"

[filter.recrawl]
kind = "circular"
generations = 4
capacity = 1000
error_rate = 0.01
schedule = "monthly:1@00:00"
"#;

#[test]
fn help_version_and_usage_errors() {
    let out = run_cmd(command(&["--help"]), b"");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("Exit codes:"), "{out:?}");
    for sub in [
        "create", "status", "rotate", "add", "check", "filter", "load", "drop",
    ] {
        assert!(out.stdout.contains(sub), "{sub} in help");
    }
    let out = run_cmd(command(&["--version"]), b"");
    assert_eq!(out.code, 0);
    assert!(out.stdout.starts_with("rotabloom "), "{out:?}");
    // Usage errors: exit 2, before any connection is attempted.
    for args in [
        &["frobnicate"][..],
        &["rotate", "x", "--now", "2030-01-01T00:00:00Z"],
        &["rotate", "x", "--if-due", "--now", "yesterday"],
        &["create", "x", "--kind", "bloomy"],
        &[
            "create",
            "x",
            "--kind",
            "circular",
            "--every",
            "fortnightly",
        ],
        &["filter", "x", "--batch", "0"],
    ] {
        let out = run_cmd(command(args), b"");
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
    }
}

#[test]
fn create_status_and_kind_dispatch_for_all_kinds() {
    let server = RedisServer::start();
    let url = server.url();
    let dir = TempDir::new("create");
    let cfg = dir.file("rotabloom.toml", CONFIG);

    let out = ok(rb(&url, &["--config", &cfg, "create"]));
    // One line per filter, and the circular one's schedule in dates.
    let heads: Vec<&str> = out.stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(heads.len(), 3, "{out:?}");
    let first = out
        .stdout
        .split("schedule monthly:1@00:00: first rotation ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no first rotation: {out:?}"));
    assert!(first.ends_with("-01T00:00:00Z"), "{out:?}");
    assert!(
        out.stdout
            .contains("\n  window: an item inserted now is forgotten at ")
            && out
                .stdout
                .contains("-01T00:00:00Z (4 rotations on; every item is kept 3 to 4 periods"),
        "{out:?}"
    );
    assert!(out.stdout.contains("crawl: created (bloom"), "{out:?}");
    assert!(
        out.stdout.contains("growing: created (expanding"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("recrawl: created (circular, 4 generations"),
        "{out:?}"
    );
    let out = ok(rb(&url, &["--config", &cfg, "create", "crawl"]));
    assert!(
        out.stdout.contains("crawl: exists, same parameters"),
        "{out:?}"
    );

    // From flags.
    ok(rb(
        &url,
        &[
            "create", "explicit", "--kind", "bloom", "--bits", "8192", "--hashes", "3",
        ],
    ));
    ok(rb(
        &url,
        &[
            "create",
            "window",
            "--kind",
            "circular",
            "--generations",
            "3",
            "--capacity",
            "100",
            "--mode",
            "insert-all-query-oldest",
            "--every",
            "7d",
            "--lazy",
        ],
    ));
    let out = rb(
        &url,
        &[
            "create",
            "bad",
            "--kind",
            "circular",
            "--generations",
            "1",
            "--capacity",
            "5",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.error_line(),
        "rotabloom: create bad: --generations: 1 is not between 2 and 256"
    );
    let out = rb(
        &url,
        &["--config", &cfg, "create", "crawl", "--kind", "bloom"],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.error_line().contains("not both"), "{out:?}");
    let out = rb(&url, &["create", "nothing"]);
    assert_eq!(out.code, 2, "{out:?}");

    // Every kind takes items, answers queries and filters lines.
    for name in ["crawl", "growing", "recrawl", "explicit", "window"] {
        ok(rb(&url, &["add", name, "a", "b"]));
        let out = rb(&url, &["check", name, "a", "zz", "b"]);
        assert_eq!((out.code, out.stdout.as_str()), (0, "a\nb\n"), "{name}");
        let out = rb_in(&url, &["filter", name], b"b\nc\nc\nd\n");
        assert_eq!((out.code, out.stdout.as_str()), (0, "c\nd\n"), "{name}");
    }
    // Past its first generation's capacity, the expanding filter grows
    // (3,200 items: past 1,000 + 2,000 even with a few false positives
    // answered present by the older generations).
    let lines: String = (0..3200).map(|i| format!("item-{i}\n")).collect();
    ok(rb_in(&url, &["add", "growing"], lines.as_bytes()));

    let doc = json(&url, &[]);
    let filters = doc["filters"].as_array().unwrap();
    let by_name = |n: &str| {
        filters
            .iter()
            .find(|f| f["name"] == n)
            .unwrap_or_else(|| panic!("{n} in {doc}"))
    };
    assert_eq!(filters.len(), 5, "{doc}");
    let crawl = by_name("crawl");
    assert_eq!(crawl["kind"], "bloom");
    assert_eq!(crawl["epoch"], 0);
    assert_eq!(crawl["items"], 4);
    assert_eq!(crawl["generations"].as_array().unwrap().len(), 1);
    assert!(crawl["next_rotation_at"].is_null());
    let g = &crawl["generations"][0];
    for key in [
        "seq",
        "created_at",
        "items",
        "capacity",
        "fill",
        "fill_ratio",
        "false_positive_rate",
        "memory_bytes",
        "queried",
        "written",
    ] {
        assert!(!g[key].is_null(), "{key} in {g}");
    }
    let growing = by_name("growing");
    assert_eq!(growing["kind"], "expanding");
    assert!(
        growing["generations"].as_array().unwrap().len() >= 3,
        "{growing}"
    );
    let recrawl = by_name("recrawl");
    assert_eq!(recrawl["kind"], "circular");
    assert_eq!(recrawl["generations"].as_array().unwrap().len(), 4);
    assert!(recrawl["next_rotation_at"].is_string(), "{recrawl}");
    assert_eq!(recrawl["parameters"]["schedule"], "monthly:1@00:00");
    // The harness's servers have no persistence: a server warning.
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w["code"] == "no_persistence" && w["level"] == "warn"),
        "{doc}"
    );

    let out = ok(rb(&url, &["status", "recrawl", "crawl"]));
    assert!(out.stdout.starts_with("recrawl: circular"), "{out:?}");
    assert!(out.stdout.contains("next rotation: "), "{out:?}");
    assert!(out.stdout.contains("\ncrawl: bloom"), "{out:?}");
    let out = rb(&url, &["status", "nope"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.error_line().contains("\"nope\" does not exist"),
        "{out:?}"
    );
    // One unreadable filter does not hide the others.
    let _: () = redis::cmd("SET")
        .arg(keys("broken").meta())
        .arg("x")
        .query(&mut server.connection())
        .unwrap();
    let out = rb(&url, &["status", "--json"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.error_line().contains("broken"), "{out:?}");
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let filters = doc["filters"].as_array().unwrap();
    assert_eq!(filters.len(), 6, "{doc}");
    assert!(filters
        .iter()
        .any(|f| f["name"] == "broken" && f["error"].is_string()));
}

#[test]
fn bad_config_files_are_one_line_and_exit_2() {
    let dir = TempDir::new("badcfg");
    // No server at all: configuration errors come first.
    let url = "redis://127.0.0.1:1/";
    let cases = [
        (
            "[filter.crawl]\nkind = \"bloom\"\ncapacity = 10\nbogus = 1\n",
            ":4:1: filter.crawl.bogus: unknown field `bogus`",
        ),
        (
            "[filter.recrawl]\nkind = \"circular\"\ncapacity = 10\n\ngenerations = 1\n",
            ":5:1: filter.recrawl.generations: 1 is not between 2 and 256",
        ),
        (
            "[filter.crawl]\nkind = \"bloom\"\ncapacity = 10\nerror_rate = 0\n",
            ":4:1: filter.crawl.error_rate: 0 is not strictly between 0 and 1",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let cfg = dir.file(&format!("c{i}.toml"), text);
        for args in [&["create"][..], &["status"], &["add", "crawl", "x"]] {
            let mut all = vec!["--config", cfg.as_str()];
            all.extend_from_slice(args);
            let out = rb(url, &all);
            assert_eq!(out.code, 2, "{out:?}");
            let line = out.error_line();
            assert!(
                line.starts_with(&format!("rotabloom: {cfg}{want}")),
                "{line:?} should start with {cfg}{want}"
            );
        }
    }
    let missing = dir.path().join("missing.toml");
    let missing = missing.to_string_lossy();
    let out = rb(url, &["--config", &missing, "status"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.error_line(),
        format!("rotabloom: {missing}: cannot read the configuration: no such file")
    );
}

#[test]
fn a_config_that_mismatches_redis_is_a_config_error() {
    let server = RedisServer::start();
    let url = server.url();
    let dir = TempDir::new("mismatch");
    ok(rb(
        &url,
        &[
            "create",
            "crawl",
            "--kind",
            "bloom",
            "--capacity",
            "1000",
            "--error-rate",
            "0.01",
        ],
    ));
    let cfg = dir.file(
        "m.toml",
        "[filter.crawl]\nkind = \"bloom\"\n# bigger now\ncapacity = 2000\nerror_rate = 0.01\n",
    );
    for args in [
        &["create"][..],
        &["add", "crawl", "x"],
        &["filter", "crawl"],
    ] {
        let mut all = vec!["--config", cfg.as_str()];
        all.extend_from_slice(args);
        let out = rb(&url, &all);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert_eq!(
            out.error_line(),
            format!(
                "rotabloom: {cfg}:4:1: filter.crawl.capacity: filter \"crawl\" exists with capacity = 1000, but 2000 was requested"
            )
        );
    }
    let cfg = dir.file(
        "k.toml",
        "[filter.crawl]\nkind = \"expanding\"\ncapacity = 1000\n",
    );
    let out = rb(&url, &["--config", &cfg, "create"]);
    assert_eq!(out.code, 2, "{out:?}");
    let line = out.error_line();
    assert!(
        line.starts_with(&format!("rotabloom: {cfg}:2:1: filter.crawl.kind: ")),
        "{line}"
    );
    // Nothing was changed.
    let doc = json(&url, &["crawl"]);
    assert_eq!(doc["filters"][0]["parameters"]["capacity"], 1000);
    assert_eq!(doc["filters"][0]["items"], 0);
}

#[test]
fn add_and_check_exit_codes() {
    let server = RedisServer::start();
    let url = server.url();
    ok(rb(
        &url,
        &["create", "seen", "--kind", "bloom", "--capacity", "10000"],
    ));
    let out = ok(rb(&url, &["add", "seen", "apple", "pear"]));
    assert_eq!(
        out.stdout,
        "seen: added 2 items: 2 new, 0 already present\n"
    );
    let out = ok(rb_in(&url, &["add", "seen"], b"plum\r\npear\n\xff\xfe\n"));
    // pear was there already.
    assert_eq!(
        out.stdout,
        "seen: added 3 items: 2 new, 1 already present\n"
    );

    let out = rb_in(
        &url,
        &["check", "seen"],
        b"kiwi\npear\nfig\napple\n\xff\xfe\n",
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "pear\napple\n\u{fffd}\u{fffd}\n");
    let out = rb(&url, &["check", "seen", "kiwi", "fig"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (1, "", "")
    );
    let out = rb(&url, &["check", "seen", "--absent", "kiwi", "plum", "fig"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "kiwi\nfig\n"));
    let out = rb(&url, &["check", "seen", "--absent", "plum"]);
    assert_eq!((out.code, out.stdout.as_str()), (1, ""));
    let out = rb_in(&url, &["check", "seen"], b"");
    assert_eq!(out.code, 1, "{out:?}");

    let out = rb(&url, &["check", "nope", "x"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.error_line(),
        "rotabloom: filter \"nope\" does not exist (create it with `rotabloom create`)"
    );
    let out = rb(&url, &["add", "bad{name}", "x"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.error_line().contains("invalid filter name"), "{out:?}");
}

#[test]
fn filter_is_exactly_once_across_concurrent_processes() {
    let server = RedisServer::start();
    let url = server.url();
    ok(rb(
        &url,
        &[
            "create",
            "dedup",
            "--kind",
            "bloom",
            "--capacity",
            "1000000",
            "--error-rate",
            "0.001",
        ],
    ));
    const PROCS: usize = 4;
    const LINES: usize = 100_000;
    const STEP: usize = 50_000;
    let children: Vec<_> = (0..PROCS)
        .map(|p| {
            let mut c = command(&["--redis", &url, "filter", "dedup"]);
            c.stdin(Stdio::piped());
            let mut child = c.spawn().unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let writer = std::thread::spawn(move || {
                let mut buf = String::with_capacity(LINES * 16);
                for i in p * STEP..p * STEP + LINES {
                    buf.push_str(&format!("line-{i}\n"));
                }
                stdin.write_all(buf.as_bytes()).unwrap();
            });
            (child, writer)
        })
        .collect();
    let mut seen = HashSet::new();
    for (p, (child, writer)) in children.into_iter().enumerate() {
        let out = finish(child);
        writer.join().unwrap();
        assert_eq!((out.code, out.stderr.as_str()), (0, ""), "process {p}");
        let mut last = None;
        for line in out.stdout.lines() {
            let i: usize = line.strip_prefix("line-").unwrap().parse().unwrap();
            assert!((p * STEP..p * STEP + LINES).contains(&i), "{line} from {p}");
            assert!(last < Some(i), "input order in process {p}");
            last = Some(i);
            assert!(seen.insert(i), "{line} printed twice");
        }
    }
    let distinct = (PROCS - 1) * STEP + LINES;
    let missed = distinct - seen.len();
    // A line is missed only when it is a false positive: at most 0.1 % of
    // the distinct lines (far fewer at a quarter of the capacity).
    assert!(
        missed <= distinct / 1000,
        "{missed} of {distinct} lines never printed"
    );
}

#[test]
fn filter_streams_and_stops_quietly_on_a_closed_pipe() {
    let server = RedisServer::start();
    let url = server.url();
    ok(rb(
        &url,
        &["create", "f", "--kind", "bloom", "--capacity", "1000000"],
    ));
    let mut c = command(&["--redis", &url, "filter", "f"]);
    c.stdin(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A slow writer: the first line must come out before the input ends.
    stdin.write_all(b"first\n").unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "first\n");
    // The reader goes away (like `| head -1`); the writer keeps going.
    drop(stdout);
    let writer = std::thread::spawn(move || {
        for i in 0..200_000 {
            if writeln!(stdin, "line-{i}").is_err() {
                break;
            }
        }
    });
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    writer.join().unwrap();
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));
}

#[test]
fn rotate_if_due_rotates_once_per_period() {
    let server = RedisServer::start();
    let url = server.url();
    ok(rb(
        &url,
        &[
            "create",
            "recrawl",
            "--kind",
            "circular",
            "--generations",
            "3",
            "--capacity",
            "100",
            "--every",
            "monthly:1@00:00",
        ],
    ));
    ok(rb(
        &url,
        &["create", "plain", "--kind", "bloom", "--capacity", "100"],
    ));
    ok(rb(
        &url,
        &[
            "create",
            "manual",
            "--kind",
            "circular",
            "--generations",
            "2",
            "--capacity",
            "100",
        ],
    ));
    ok(rb(&url, &["add", "recrawl", "old-item"]));

    let first = ok(rb(
        &url,
        &[
            "rotate",
            "recrawl",
            "--if-due",
            "--now",
            "2031-03-05T10:00:00Z",
            "--force",
        ],
    ));
    assert_eq!(
        first.stdout,
        "recrawl: rotated (3 rotations, epoch 3, next 2031-04-01T00:00:00Z)\n"
    );
    let second = ok(rb(
        &url,
        &[
            "rotate",
            "recrawl",
            "--if-due",
            "--now",
            "2031-03-20T10:00:00Z",
            "--force",
        ],
    ));
    assert_eq!(
        second.stdout,
        "recrawl: not due (next 2031-04-01T00:00:00Z)\n"
    );
    assert_eq!(json(&url, &["recrawl"])["filters"][0]["epoch"], 3);
    let out = rb(&url, &["check", "recrawl", "old-item"]);
    assert_eq!(out.code, 1, "forgotten after a full window: {out:?}");

    // Without names: every circular filter with a schedule; others are
    // left alone.
    let out = ok(rb(
        &url,
        &[
            "rotate",
            "--if-due",
            "--now",
            "2031-04-01T00:00:00Z",
            "--force",
        ],
    ));
    assert_eq!(
        out.stdout,
        "recrawl: rotated (1 rotation, epoch 4, next 2031-05-01T00:00:00Z)\n"
    );

    // By hand.
    let out = ok(rb(&url, &["rotate", "manual"]));
    assert!(
        out.stdout
            .starts_with("manual: rotated by hand (epoch 1): forgot generation 0 (created "),
        "{out:?}"
    );
    for args in [
        &["rotate", "plain"][..],
        &["rotate", "manual", "--if-due"],
        &["rotate"],
    ] {
        let out = rb(&url, args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        out.error_line();
    }
}

#[test]
fn drop_needs_yes() {
    let server = RedisServer::start();
    let url = server.url();
    ok(rb(
        &url,
        &["create", "gone", "--kind", "expanding", "--capacity", "100"],
    ));
    let out = rb(&url, &["drop", "gone"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.error_line(),
        "rotabloom: drop deletes filter \"gone\" and all its data: add --yes to confirm"
    );
    ok(rb(&url, &["status", "gone"]));
    let out = ok(rb(&url, &["drop", "gone", "--yes"]));
    assert_eq!(out.stdout, "gone: dropped\n");
    assert_eq!(rb(&url, &["status", "gone"]).code, 2);
    assert_eq!(rb(&url, &["drop", "gone", "--yes"]).code, 2);
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{KEY_PREFIX}:*"))
        .query(&mut server.connection())
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn load_reports_progress_and_totals() {
    let server = RedisServer::start();
    let url = server.url();
    let dir = TempDir::new("load");
    let text: String = (0..25_000).map(|i| format!("url-{i}\n")).collect();
    let file = dir.file("urls.txt", &text);
    ok(rb(
        &url,
        &[
            "create",
            "bulk",
            "--kind",
            "expanding",
            "--capacity",
            "5000",
        ],
    ));
    let out = ok(rb(
        &url,
        &[
            "load",
            "bulk",
            &file,
            "--batch",
            "1000",
            "--progress-every",
            "10000",
        ],
    ));
    let progress: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(progress.len(), 2, "{out:?}");
    assert!(progress[0].starts_with("loaded 10,000 items, "), "{out:?}");
    assert!(progress[0].ends_with(" items/s"), "{out:?}");
    assert!(progress[1].starts_with("loaded 20,000 items, "), "{out:?}");
    assert!(
        out.stdout.starts_with("bulk: loaded 25,000 items in "),
        "{out:?}"
    );
    // New and present (false positives of an expanding filter) add up,
    // and new is what the filter counted.
    let (new, present) = out
        .stdout
        .trim_end()
        .rsplit_once(" items/s): ")
        .and_then(|(_, tail)| tail.split_once(" new, "))
        .map(|(n, p)| {
            (
                n.replace(',', ""),
                p.trim_end_matches(" already present").replace(',', ""),
            )
        })
        .unwrap_or_else(|| panic!("{out:?}"));
    let (new, present): (u64, u64) = (new.parse().unwrap(), present.parse().unwrap());
    assert_eq!(new + present, 25_000, "{out:?}");
    assert_eq!(json(&url, &["bulk"])["filters"][0]["items"], new, "{out:?}");
    let out = rb_in(&url, &["check", "bulk", "--absent"], text.as_bytes());
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (1, ""),
        "no false negatives"
    );
    // From standard input.
    let out = ok(rb_in(&url, &["load", "bulk", "-"], b"a\nurl-1\n"));
    assert!(
        out.stdout.starts_with("bulk: loaded 2 items in "),
        "{out:?}"
    );
    assert!(
        out.stdout.ends_with(": 1 new, 1 already present\n"),
        "{out:?}"
    );
    let out = rb(&url, &["check", "bulk", "a", "url-1"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "a\nurl-1\n"));
    let missing = dir.path().join("nope.txt");
    let out = rb(&url, &["load", "bulk", &missing.to_string_lossy()]);
    assert_eq!(out.code, 5, "{out:?}");
    assert!(
        out.error_line().ends_with("nope.txt: no such file"),
        "{out:?}"
    );
}

#[test]
fn status_warns_about_eviction_and_missing_generations() {
    let server = RedisServer::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    let url = server.url();
    ok(rb(
        &url,
        &["create", "w", "--kind", "bloom", "--capacity", "1000"],
    ));
    ok(rb(&url, &["add", "w", "a", "b", "c"]));
    let out = ok(rb(&url, &["status"]));
    assert!(
        out.stdout
            .contains("warning: server: maxmemory-policy is allkeys-lru"),
        "{out:?}"
    );
    assert!(!out.stdout.contains("missing_block"), "{out:?}");
    // Lose the bitmap, as an eviction would.
    let mut conn = server.connection();
    let w = keys("w");
    let mut bitmaps: Vec<String> = redis::cmd("KEYS")
        .arg(w.pattern())
        .query(&mut conn)
        .unwrap();
    bitmaps.retain(|k| k != w.meta() && *k != w.fence());
    assert!(!bitmaps.is_empty());
    let _: i64 = redis::cmd("DEL").arg(&bitmaps).query(&mut conn).unwrap();
    let doc = json(&url, &["w"]);
    let w = doc["filters"][0]["warnings"].as_array().unwrap();
    assert!(
        w.iter().any(|w| w["code"] == "missing_block"
            && w["level"] == "error"
            && w["message"].as_str().unwrap().contains("(3 items)")),
        "{doc}"
    );
    let server_warnings = doc["warnings"].as_array().unwrap();
    assert_eq!(server_warnings.len(), 2, "{doc}");
    assert_eq!(doc["server"]["maxmemory_policy"], "allkeys-lru");
    assert_eq!(doc["server"]["persistence"], false);
}

#[test]
fn redis_errors_exit_3() {
    let out = rb("redis://127.0.0.1:1/", &["status"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.error_line()
            .starts_with("rotabloom: cannot connect to redis://127.0.0.1:1/: "),
        "{out:?}"
    );
    let out = rb("http://127.0.0.1:1/", &["status"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out
        .error_line()
        .starts_with("rotabloom: --redis: not a Redis URL"));
    // The key exists but is not a filter.
    let server = RedisServer::start();
    let _: () = redis::cmd("SET")
        .arg(keys("str").meta())
        .arg("x")
        .query(&mut server.connection())
        .unwrap();
    let out = rb(&server.url(), &["check", "str", "x"]);
    assert_eq!(out.code, 3, "{out:?}");
    out.error_line();
}

#[test]
fn passwords_never_appear_in_any_output() {
    const PW: &str = "s3cret-pw";
    let mut server = RedisServer::start();
    // The harness waits for an unauthenticated PING, so the password is set
    // once the server is up.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg(PW)
        .query(&mut server.connection())
        .unwrap();
    let port = server.port();
    let good = format!("redis://:{PW}@127.0.0.1:{port}/");
    let wrong = format!("redis://:wrong-{PW}@127.0.0.1:{port}/");
    let none = format!("redis://127.0.0.1:{port}/");
    let refused = format!("redis://:{PW}@127.0.0.1:1/");
    let dir = TempDir::new("pw");
    let cfg_url = dir.file(
        "url.toml",
        &format!(
            "[defaults]\nredis_url = \"{good}\"\n\n[filter.f]\nkind = \"bloom\"\ncapacity = 1000\n"
        ),
    );
    let cfg_env = dir.file(
        "env.toml",
        "[defaults]\nredis_url_env = \"ROTABLOOM_PW_TEST_URL\"\n\n[filter.f]\nkind = \"bloom\"\ncapacity = 2000\n",
    );
    let cfg_bad = dir.file(
        "bad.toml",
        &format!("[defaults]\nredis_url = \"{good}\"\nbogus = 1\n"),
    );
    let cfg_badurl = dir.file(
        "badurl.toml",
        &format!("[defaults]\nredis_url = \"http://:{PW}@127.0.0.1/\"\n"),
    );

    let mut outputs = Vec::new();
    let mut expect = |out: Out, code: i32| {
        assert_eq!(out.code, code, "{out:?}");
        outputs.push(out.all());
    };
    // Through the configuration file.
    expect(run_cmd(command(&["--config", &cfg_url, "create"]), b""), 0);
    expect(
        run_cmd(command(&["--config", &cfg_url, "add", "f", "x"]), b""),
        0,
    );
    expect(run_cmd(command(&["--config", &cfg_url, "status"]), b""), 0);
    expect(
        run_cmd(command(&["--config", &cfg_url, "status", "--json"]), b""),
        0,
    );
    expect(run_cmd(command(&["--config", &cfg_bad, "status"]), b""), 2);
    expect(
        run_cmd(command(&["--config", &cfg_badurl, "status"]), b""),
        2,
    );
    // A mismatch with Redis, with the URL from an environment variable.
    let mut c = command(&["--config", &cfg_env, "create"]);
    c.env("ROTABLOOM_PW_TEST_URL", &good);
    expect(run_cmd(c, b""), 2);
    // Through $REDIS_URL.
    let mut c = command(&["check", "f", "x"]);
    c.env("REDIS_URL", &good);
    expect(run_cmd(c, b""), 0);
    let mut c = command(&["check", "nope", "x"]);
    c.env("REDIS_URL", &good);
    expect(run_cmd(c, b""), 2);
    // Through --redis, good and bad.
    expect(rb(&good, &["filter", "f"]), 0);
    expect(rb(&good, &["drop", "f"]), 2);
    expect(rb(&good, &["bogus-subcommand"]), 2);
    expect(rb(&wrong, &["status"]), 3);
    expect(rb(&wrong, &["check", "f", "x"]), 3);
    expect(rb(&none, &["status"]), 3);
    expect(rb(&none, &["check", "f", "x"]), 3);
    expect(rb(&refused, &["status"]), 3);
    let mut c = command(&["status"]);
    c.env("REDIS_URL", format!("ftp://:{PW}@h/"));
    expect(run_cmd(c, b""), 2);

    for out in &outputs {
        assert!(!out.contains(PW), "password leaked: {out}");
    }
    let joined = outputs.join("\n");
    assert!(joined.contains("redis://***@127.0.0.1"), "{joined}");
    server.stop();
}

#[test]
fn usage_errors_are_one_line() {
    for (args, want) in [
        (
            &["frobnicate"][..],
            "rotabloom: unrecognized subcommand 'frobnicate'",
        ),
        (
            &["add"],
            "rotabloom: the following required arguments were not provided: <NAME>",
        ),
        (
            &["create", "x", "--kind", "bloomy"],
            "rotabloom: invalid value 'bloomy' for '--kind <KIND>': \"bloomy\" is not a kind",
        ),
        (
            &["create", "x", "--capacity", "lots"],
            "rotabloom: invalid value 'lots' for '--capacity <N>': \"lots\" is not a whole number",
        ),
    ] {
        usage_error(run_cmd(command(args), b""), want);
    }
}

#[test]
fn create_has_a_flag_for_every_setting() {
    let out = ok(run_cmd(command(&["create", "-h"]), b""));
    for s in settings() {
        let flag = match s.value_name() {
            Some(v) => format!("--{} <{v}>", s.flag()),
            None => format!("--{} ", s.flag()),
        };
        assert!(out.stdout.contains(&flag), "{flag} in {out:?}");
    }
    assert!(
        out.stdout
            .contains("--backend <BACKEND>    Where generations are kept"),
        "{out:?}"
    );
}

#[test]
fn backend_from_flags_and_configuration() {
    let server = RedisServer::start();
    let url = server.url();
    let bloom = ["--kind", "bloom", "--capacity", "1000"];
    create(&url, "b", &[&bloom[..], &["--backend", "bitmap"]].concat());
    let circular = ["--kind=circular", "--generations=2", "--capacity=100"];
    create(&url, "c", &[&circular[..], &["--backend=bitmap"]].concat());
    let doc = json(&url, &["b", "c"]);
    for f in doc["filters"].as_array().unwrap() {
        assert_eq!(f["parameters"]["backend"], "bitmap", "{f}");
    }
    // The same filter from a configuration: same parameters.
    let dir = TempDir::new("backend");
    let cfg = dir.file(
        "b.toml",
        "[filter.b]\nkind = \"bloom\"\ncapacity = 1000\nbackend = \"bitmap\"\n",
    );
    let out = ok(rb(&url, &["--config", &cfg, "create"]));
    assert!(
        out.stdout.starts_with("b: exists, same parameters"),
        "{out:?}"
    );

    usage_error(
        rb(&url, &[&["create", "x"], &bloom[..], &["--backend", "disk"]].concat()),
        "rotabloom: invalid value 'disk' for '--backend <BACKEND>': \"disk\" is not bitmap, redisbloom or valkey-bloom",
    );
    // Expanding filters have a backend too.
    let expanding = ["--kind", "expanding", "--capacity", "5"];
    create(
        &url,
        "e",
        &[&expanding[..], &["--backend", "bitmap"]].concat(),
    );
    usage_error(
        rb(
            &url,
            &[&["create", "x"], &circular[..], &["--growth", "2"]].concat(),
        ),
        "rotabloom: create x: --growth: not a setting of a circular filter (its settings: ",
    );
    assert_eq!(json(&url, &[])["filters"].as_array().unwrap().len(), 3);
}

#[test]
fn status_lists_only_keys_that_are_filters() {
    let server = RedisServer::start();
    let url = server.url();
    create(&url, "real", &["--kind", "bloom", "--capacity", "10"]);
    let mut conn = server.connection();
    // Keys the SCAN pattern matches but no filter name can produce.
    for key in [
        format!("{KEY_PREFIX}:{{a b}}:meta"),
        format!("{KEY_PREFIX}:{{x}}:y}}:meta"),
    ] {
        let _: () = redis::cmd("HSET")
            .arg(&key)
            .arg("kind")
            .arg("bloom")
            .query(&mut conn)
            .unwrap();
    }
    let doc = json(&url, &[]);
    let names: Vec<&str> = doc["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["real"], "{doc}");
}

/// A private server holding filter `name`, created from `settings`, and
/// its URL.
fn server_with(name: &str, settings: &[&str]) -> (RedisServer, String) {
    let server = RedisServer::start();
    let url = server.url();
    create(&url, name, settings);
    (server, url)
}

/// The keys of `name`'s blocks, sorted.
fn block_keys(server: &RedisServer, name: &str) -> Vec<String> {
    let k = keys(name);
    let mut blocks: Vec<String> = redis::cmd("KEYS")
        .arg(k.pattern())
        .query(&mut server.connection())
        .unwrap();
    // Blocks only: not the metadata, the fence, nor the answers kept for
    // retries of the last batches.
    blocks.retain(|b| b.contains(":gen:"));
    blocks.sort();
    blocks
}

/// The warnings of filter `name` in `status --json`, as (code, level).
fn warning_codes(url: &str, name: &str) -> Vec<(String, String)> {
    let doc = json(url, &[name]);
    doc["filters"][0]["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("warnings in {doc}"))
        .iter()
        .map(|w| {
            assert!(w["message"].is_string(), "{w}");
            (
                w["code"].as_str().unwrap().to_string(),
                w["level"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn has(warnings: &[(String, String)], code: &str, level: &str) -> bool {
    warnings.iter().any(|(c, l)| c == code && l == level)
}

#[test]
fn status_check_fails_on_an_overfull_filter() {
    let (_server, url) = server_with("small", &["--kind", "bloom", "--capacity", "10000"]);
    create(&url, "fine", &["--kind", "bloom", "--capacity", "10000"]);
    ok(rb(&url, &["add", "fine", "a", "b"]));
    let out = ok(rb(&url, &["status", "--check", "small", "fine"]));
    assert!(!out.stdout.contains("error: "), "{out:?}");

    let lines: String = (0..50_000).map(|i| format!("line-{i}\n")).collect();
    let out = ok(rb_in(
        &url,
        &["--when-full", "warn", "filter", "small"],
        lines.as_bytes(),
    ));
    let new = out.stdout.lines().count();
    assert!(new > 20_000, "{new} lines kept: well past capacity");
    let w = warning_codes(&url, "small");
    assert!(has(&w, "over_capacity", "error"), "{w:?}");
    assert!(
        has(&w, "false_positive_rate_above_target", "error"),
        "{w:?}"
    );
    assert!(warning_codes(&url, "fine").is_empty());

    let out = rb(&url, &["status", "--check"]);
    assert_eq!(out.code, 4, "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
    assert!(
        out.stdout.contains("  error: generation 0 holds ")
            && out.stdout.contains("[over_capacity]"),
        "{out:?}"
    );
    // Without --check, warnings do not change the exit code; a healthy
    // filter passes the check.
    ok(rb(&url, &["status", "small"]));
    ok(rb(&url, &["status", "--check", "fine"]));
    let out = rb(&url, &["status", "--check", "--json", "small"]);
    assert_eq!(out.code, 4, "{out:?}");
}

#[test]
fn status_reports_missing_blocks_and_wrong_types() {
    // 2^16 bits in blocks of 2^13: 8 blocks.
    let split = "--kind bloom --bits 65536 --hashes 4 --max-block-bits 8192";
    let split: Vec<&str> = split.split(' ').collect();
    let (server, url) = server_with("split", &split);
    let items: String = (0..500).map(|i| format!("i{i}\n")).collect();
    ok(rb_in(&url, &["add", "split"], items.as_bytes()));
    assert!(warning_codes(&url, "split").is_empty());
    let blocks = block_keys(&server, "split");
    assert_eq!(blocks.len(), 8, "{blocks:?}");
    let mut conn = server.connection();
    let _: i64 = redis::cmd("DEL").arg(&blocks[3]).query(&mut conn).unwrap();
    let w = warning_codes(&url, "split");
    assert_eq!(w, [("missing_block".into(), "error".into())]);
    let out = rb(&url, &["status", "--check", "split"]);
    assert_eq!(out.code, 4, "{out:?}");
    assert!(out.stdout.contains("[missing_block]"), "{out:?}");

    // A block of another type.
    let _: i64 = redis::cmd("DEL").arg(&blocks[5]).query(&mut conn).unwrap();
    let _: i64 = redis::cmd("HSET")
        .arg(&blocks[5])
        .arg("a")
        .arg("b")
        .query(&mut conn)
        .unwrap();
    let out = rb(&url, &["status", "--json", "--check", "split"]);
    assert_eq!(out.code, 3, "the filter cannot be read: {out:?}");
    assert!(out.error_line().contains("holds a Redis hash"), "{out:?}");
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    let f = &doc["filters"][0];
    assert!(f["error"].is_string(), "{doc}");
    assert_eq!(f["warnings"][0]["code"], "wrong_key_type", "{doc}");
    assert_eq!(f["warnings"][0]["level"], "error", "{doc}");
}

#[test]
fn status_warns_of_an_expanding_filter_at_its_limit() {
    let capped = [
        "--kind",
        "expanding",
        "--capacity",
        "100",
        "--max-generations",
        "1",
    ];
    let (_server, url) = server_with("capped", &capped);
    let items: String = (0..90).map(|i| format!("i{i}\n")).collect();
    ok(rb_in(&url, &["add", "capped"], items.as_bytes()));
    let w = warning_codes(&url, "capped");
    assert!(has(&w, "at_limit", "warn"), "{w:?}");
    ok(rb(&url, &["status", "--check", "capped"]));
    let items: String = (0..200).map(|i| format!("j{i}\n")).collect();
    let out = rb_in(&url, &["add", "capped"], items.as_bytes());
    assert_eq!(out.code, 3, "writes past the limit fail: {out:?}");
    let w = warning_codes(&url, "capped");
    assert!(has(&w, "at_limit", "error"), "{w:?}");
    assert_eq!(rb(&url, &["status", "--check", "capped"]).code, 4);
}

#[test]
fn status_json_parameters_are_typed() {
    let typed = "--kind circular --generations 3 --capacity 1000 --every 7d --lazy";
    let typed: Vec<&str> = typed.split(' ').collect();
    let (_server, url) = server_with("typed", &typed);
    let doc = json(&url, &["typed"]);
    let p = &doc["filters"][0]["parameters"];
    assert_eq!(p["capacity"], 1000, "{p}");
    assert_eq!(p["generations"], 3, "{p}");
    assert_eq!(p["lazy"], true, "{p}");
    assert!(p["error_rate"].is_f64(), "{p}");
    assert!(p["due_at"].is_u64(), "{p}");
    assert_eq!(p["schedule"], "7d", "{p}");
    assert_eq!(p["mode"], "insert-newest-query-all", "{p}");
    let g = &doc["filters"][0]["generations"][0];
    assert!(g["items"].is_u64() && g["queried"].is_boolean(), "{g}");
}

#[test]
fn local_file_errors_have_their_own_exit_code() {
    let (_server, url) = server_with("f", &["--kind", "bloom", "--capacity", "100"]);
    let dir = TempDir::new("files");
    let out = rb(&url, &["load", "f", &dir.path().to_string_lossy()]);
    assert_eq!(out.code, 5, "{out:?}");
    assert!(out.error_line().ends_with(": it is a directory"), "{out:?}");
    let out = rb(
        &url,
        &["load", "f", &dir.path().join("no").to_string_lossy()],
    );
    assert_eq!(out.code, 5, "{out:?}");
}

#[test]
fn inputs_as_people_write_them() {
    let words =
        "--kind circular --generations 2 --capacity 10k --error-rate 0.1% --schedule monthly";
    let words: Vec<&str> = words.split(' ').collect();
    let (_server, url) = server_with("words", &words);
    let doc = json(&url, &["words"]);
    let p = &doc["filters"][0]["parameters"];
    assert_eq!(p["capacity"], 10_000, "{p}");
    assert_eq!(p["error_rate"], 0.001, "{p}");
    assert_eq!(p["schedule"], "monthly:1@00:00", "{p}");
    // The same filter spelled the long way is the same filter.
    let long = "--kind circular --generations 2 --capacity 10_000 --error-rate 1e-3 --every monthly:1@00:00";
    let long: Vec<&str> = long.split(' ').collect();
    let out = create(&url, "words", &long);
    assert!(out.stdout.contains("exists, same parameters"), "{out:?}");
    create(&url, "big", &["--kind", "bloom", "--capacity", "1e6"]);
    assert_eq!(json(&url, &["big"])["filters"][0]["capacity"], 1_000_000);
    let out = rb(
        &url,
        &["create", "x", "--kind", "bloom", "--capacity", "1.5"],
    );
    usage_error(out, "rotabloom: invalid value '1.5' for '--capacity <N>'");
    let out = rb(
        &url,
        &[
            "create",
            "x",
            "--kind",
            "circular",
            "--generations",
            "2",
            "--every",
            "weekly",
        ],
    );
    usage_error(out, "rotabloom: create x: ");
}

#[test]
fn json_and_quiet_output_of_commands_that_change_filters() {
    let server = RedisServer::start();
    let url = server.url();
    let j: Vec<&str> = "create j --kind circular --generations 2 --capacity 100 --every monthly"
        .split(' ')
        .collect();
    let out = ok(rb(&url, &[&j[..], &["--json"]].concat()));
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["name"], "j");
    assert_eq!(doc["result"], "created");
    assert_eq!(doc["kind"], "circular");
    assert_eq!(doc["generations"], 2);
    assert!(doc["memory_bytes"].is_u64(), "{doc}");
    // Its schedule in dates: the first rotation, and when an item
    // inserted now is forgotten (two monthly rotations on).
    assert_eq!(doc["schedule"], "monthly:1@00:00", "{doc}");
    let next = doc["next_rotation_at"].as_str().unwrap_or_default();
    let gone = doc["forgotten_at"].as_str().unwrap_or_default();
    assert!(
        next.ends_with("-01T00:00:00Z") && gone.ends_with("-01T00:00:00Z"),
        "{doc}"
    );
    assert!(gone > next, "{doc}");
    let out = ok(rb(&url, &[&j[..], &["--quiet"]].concat()));
    assert_eq!(out.stdout, "", "{out:?}");

    let out = ok(rb(&url, &["add", "j", "a", "b", "--json"]));
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (doc["name"].as_str(), doc["result"].as_str()),
        (Some("j"), Some("inserted"))
    );
    assert_eq!(
        (
            doc["items"].as_u64(),
            doc["new"].as_u64(),
            doc["present"].as_u64()
        ),
        (Some(2), Some(2), Some(0)),
        "{doc}"
    );
    let out = ok(rb(&url, &["add", "j", "a", "b", "w", "--json"]));
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (
            doc["items"].as_u64(),
            doc["new"].as_u64(),
            doc["present"].as_u64()
        ),
        (Some(3), Some(1), Some(2)),
        "{doc}"
    );
    assert_eq!(ok(rb(&url, &["add", "j", "c", "-q"])).stdout, "");

    let dir = TempDir::new("json");
    let file = dir.file("items.txt", "x\ny\nz\n");
    let out = ok(rb(&url, &["load", "j", &file, "--json"]));
    assert!(out.stderr.is_empty(), "{out:?}");
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["result"], "loaded");
    assert_eq!(
        (doc["items"].as_u64(), doc["new"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(doc["present"], 0);
    assert!(doc["seconds"].is_f64() && doc["items_per_second"].is_number());
    let out = ok(rb(
        &url,
        &["load", "j", &file, "--quiet", "--progress-every", "1"],
    ));
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));

    let at = |t: &str, extra: &[&str]| {
        let mut args = vec!["rotate", "--if-due", "--now", t, "--force"];
        args.extend_from_slice(extra);
        ok(rb(&url, &args))
    };
    let out = at("2031-03-05T10:00:00Z", &["--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["result"], "rotated", "{doc}");
    assert_eq!(doc["rotations"], 2, "{doc}");
    assert_eq!(doc["next_rotation_at"], "2031-04-01T00:00:00Z");
    let out = at("2031-03-06T10:00:00Z", &["--json"]);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["result"], "not_due", "{doc}");
    // Every key, as the Python package's rotation results.
    assert_eq!(
        (doc["rotations"].as_u64(), doc["epoch"].as_u64()),
        (Some(0), Some(2)),
        "{doc}"
    );
    assert_eq!(doc["next_rotation_at"], "2031-04-01T00:00:00Z");
    // Quiet: nothing when nothing rotated, the rotation when one did.
    assert_eq!(at("2031-03-07T10:00:00Z", &["--quiet"]).stdout, "");
    let out = at("2031-04-01T00:00:00Z", &["--quiet"]);
    assert!(out.stdout.starts_with("j: rotated (1 rotation"), "{out:?}");
    let out = rb(&url, &["rotate", "--if-due", "--json", "--quiet"]);
    assert_eq!(out.code, 2, "{out:?}");
}

/// What the completion script gets back for the command line `words`
/// (the word at `index` being completed), as the bash script asks it.
fn complete(words: &[&str], index: usize) -> Vec<String> {
    let mut args = vec!["--", "rotabloom"];
    args.extend_from_slice(words);
    let mut c = command(&args);
    c.env("COMPLETE", "bash")
        .env("_CLAP_COMPLETE_INDEX", (index + 1).to_string());
    let out = run_cmd(c, b"");
    assert_eq!(out.code, 0, "{words:?}: {out:?}");
    out.stdout.lines().map(str::to_string).collect()
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run_cmd(command(&["completions", shell]), b"");
        assert_eq!(out.code, 0, "{out:?}");
        // The script calls rotabloom back to complete (dynamic completion).
        assert!(out.stdout.contains("rotabloom"), "{shell}");
        assert!(out.stdout.contains("COMPLETE"), "{shell}: {out:?}");
    }
    let out = run_cmd(command(&["completions", "tcsh"]), b"");
    assert_eq!(out.code, 2, "{out:?}");

    // Commands, and the words of the flags that take words.
    assert!(complete(&["st"], 0).contains(&"status".to_string()));
    let values = |flag: &str| {
        let mut v = complete(&["create", "x", flag, ""], 3);
        v.sort();
        v
    };
    assert_eq!(values("--kind"), ["bloom", "circular", "expanding"]);
    assert_eq!(
        values("--mode"),
        ["insert-all-query-oldest", "insert-newest-query-all"]
    );
    assert_eq!(
        values("--backend"),
        ["bitmap", "redisbloom", "valkey-bloom"]
    );
    assert_eq!(values("--when-full"), ["error", "expand", "warn"]);
    assert!(values("--every").contains(&"monthly".to_string()));

    // Filter names, asked of the server the line points to, and those the
    // configuration declares; none (and quickly) when Redis is not there.
    let server = RedisServer::start();
    let url = server.url();
    for name in ["crawl", "crawl:old", "recrawl"] {
        create(&url, name, &["--kind", "bloom", "--capacity", "10"]);
    }
    let mut got = complete(&["--redis", &url, "add", "cr"], 3);
    got.sort();
    assert_eq!(got, ["crawl", "crawl:old"]);
    assert_eq!(complete(&["status", "--redis", &url, "re"], 3), ["recrawl"]);
    let dir = TempDir::new("complete");
    let cfg = dir.file(
        "c.toml",
        &format!(
            "[defaults]\nredis_url = \"{url}\"\n[filter.declared]\nkind = \"bloom\"\ncapacity = 10\n"
        ),
    );
    // An empty word: the command's flags, then the names.
    let names = |words: &[&str], index| {
        let mut got = complete(words, index);
        got.retain(|w| !w.starts_with('-'));
        got.sort();
        got
    };
    let got = names(&["--config", &cfg, "create", ""], 3);
    assert_eq!(got, ["crawl", "crawl:old", "declared", "recrawl"]);
    let started = std::time::Instant::now();
    assert_eq!(
        names(&["--redis", "redis://127.0.0.1:1", "add", ""], 3),
        Vec::<String>::new()
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));

    // Manual pages: rotabloom's, one command's, or all of them.
    let out = run_cmd(command(&["man"]), b"");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains(".TH rotabloom 1"), "{out:?}");
    let out = run_cmd(command(&["man", "create"]), b"");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains(".TH rotabloom-create 1"), "{out:?}");
    assert!(out.stdout.contains("\\-\\-every"), "{out:?}");
    assert!(out.stdout.contains("Examples:"), "{out:?}");
    usage_error(
        run_cmd(command(&["man", "craete"]), b""),
        "rotabloom: man: no command \"craete\" (did you mean \"create\"?)",
    );
    let pages = TempDir::new("man");
    let out = run_cmd(
        command(&["man", "--dir", pages.path().to_str().unwrap()]),
        b"",
    );
    assert_eq!(out.code, 0, "{out:?}");
    let mut written: Vec<String> = std::fs::read_dir(pages.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert!(written.contains(&"rotabloom.1".to_string()), "{written:?}");
    for sub in [
        "create", "status", "rotate", "add", "filter", "load", "adopt", "man",
    ] {
        assert!(
            written.contains(&format!("rotabloom-{sub}.1")),
            "{sub}: {written:?}"
        );
    }
    assert!(!written.iter().any(|f| f.contains("help")), "{written:?}");
    // Neither needs a readable configuration.
    let out = run_cmd(command(&["--config", "/nonexistent.toml", "man"]), b"");
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn names_may_hold_colons_but_not_glob_characters() {
    let (server, url) = server_with(
        "myspider:dupefilter",
        &["--kind", "bloom", "--capacity", "1000"],
    );
    ok(rb(&url, &["add", "myspider:dupefilter", "https://a/"]));
    let out = rb(
        &url,
        &["check", "myspider:dupefilter", "https://a/", "https://b/"],
    );
    assert_eq!(out.stdout, "https://a/\n", "{out:?}");
    let doc = json(&url, &[]);
    assert_eq!(doc["filters"][0]["name"], "myspider:dupefilter", "{doc}");

    for name in ["a*", "a?", "a[b]", "a\\b"] {
        let out = rb(
            &url,
            &["create", name, "--kind", "bloom", "--capacity", "10"],
        );
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.error_line().contains("ACL key pattern"), "{out:?}");
    }
    // A filter an earlier version made with such a name: still usable,
    // and it can be dropped.
    create(&url, "ab", &["--kind", "bloom", "--capacity", "100"]);
    ok(rb(&url, &["add", "ab", "x"]));
    let mut conn = server.connection();
    let old = keys("ab");
    let keys_of_ab: Vec<String> = redis::cmd("KEYS")
        .arg(old.pattern())
        .query(&mut conn)
        .unwrap();
    for k in keys_of_ab {
        let to = k.replacen("{ab}", "{a*}", 1);
        let _: () = redis::cmd("RENAME")
            .arg(&k)
            .arg(&to)
            .query(&mut conn)
            .unwrap();
    }
    let out = rb(&url, &["check", "a*", "x", "y"]);
    assert_eq!(out.stdout, "x\n", "{out:?}");
    ok(rb(&url, &["drop", "a*", "--yes"]));
    let left: Vec<String> = redis::cmd("KEYS")
        .arg("rotabloom:{a\\*}:*")
        .query(&mut conn)
        .unwrap();
    // Only the answers kept for retries of the last batches are left, and
    // they expire.
    for k in &left {
        assert!(k.contains(":done:"), "{left:?}");
        let ttl: i64 = redis::cmd("PTTL").arg(k).query(&mut conn).unwrap();
        assert!(ttl > 0, "{k} never expires");
    }
}

/// The server's count of calls of `cmd` so far.
fn calls(url: &str, cmd: &str) -> u64 {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    harness::command_calls(&mut conn, cmd)
}

#[test]
fn the_mirror_answers_frozen_generations_in_the_process() {
    let server = RedisServer::start();
    let url = server.url();
    let window = [
        "--kind",
        "circular",
        "--generations",
        "4",
        "--capacity",
        "10000",
        "--mode",
        "insert-newest-query-all",
    ];
    create(&url, "w", &window);
    let mut known = Vec::new();
    for g in 0..4 {
        let lines: Vec<String> = (0..300)
            .map(|i| format!("https://g{g}.example/{i}"))
            .collect();
        ok(rb_in(&url, &["add", "w"], lines.join("\n").as_bytes()));
        known.extend(lines);
        if g < 3 {
            ok(rb(&url, &["rotate", "w"]));
        }
    }
    let probes: Vec<String> = known
        .iter()
        .cloned()
        .chain((0..300).map(|i| format!("https://new.example/{i}")))
        .collect();
    let input = probes.join("\n");
    // Single items too (`check` of a few arguments takes the script).
    let run = |mib: &str| {
        let before = calls(&url, "bitfield_ro");
        let out = ok(rb_in(
            &url,
            &["--mirror-mib", mib, "check", "w"],
            input.as_bytes(),
        ));
        let one = ok(rb(
            &url,
            &["--mirror-mib", mib, "check", "w", &known[5], &known[700]],
        ));
        (out.stdout, one.stdout, calls(&url, "bitfield_ro") - before)
    };
    let (plain, plain_one, plain_reads) = run("0");
    let (mirrored, mirrored_one, mirrored_reads) = run("64");
    assert_eq!(plain, mirrored, "the same answers");
    assert_eq!(plain_one, mirrored_one);
    assert!(
        plain.lines().count() >= 1_200,
        "every known line is present"
    );
    assert!(
        mirrored_reads * 2 < plain_reads,
        "{mirrored_reads} BITFIELD_RO with the mirror, {plain_reads} without"
    );
    eprintln!("check of 1,500 lines and of 2 arguments, 4 generations: {plain_reads} BITFIELD_RO on the server without the mirror, {mirrored_reads} with");
}

#[test]
fn batches_in_flight_print_each_new_line_once_in_input_order() {
    let server = RedisServer::start();
    let url = server.url();
    for name in ["fl", "fl1"] {
        create(
            &url,
            name,
            &[
                "--kind",
                "bloom",
                "--capacity",
                "1M",
                "--error-rate",
                "0.000001",
            ],
        );
    }
    // 20,000 lines over 3,000 distinct values, repeats spread across many
    // batches of 100, four of them in flight at once.
    let mut x = 88_172_645_463_325_252u64;
    let lines: Vec<String> = (0..20_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("https://fl.example/{}", x % 3_000)
        })
        .collect();
    let mut seen = HashSet::new();
    let expected: Vec<&str> = lines
        .iter()
        .filter(|l| seen.insert(l.as_str()))
        .map(String::as_str)
        .collect();
    let out = ok(rb_in(
        &url,
        &["--in-flight", "4", "filter", "fl", "--batch", "100"],
        lines.join("\n").as_bytes(),
    ));
    let printed: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(printed.len(), expected.len(), "missing or doubled lines");
    let distinct: HashSet<&str> = printed.iter().copied().collect();
    assert_eq!(distinct.len(), expected.len(), "a line printed twice");
    // Every line is sent and the filter decides: of two batches in flight
    // holding one line, the one the server ran first prints it, so a
    // repeated line may come at a later place of its; the output is still
    // the input in order, less lines.
    let mut at = lines.iter();
    for line in &printed {
        assert!(at.any(|l| l == line), "{line} printed out of input order");
    }
    // One batch at a time: first occurrences, exactly.
    let out = ok(rb_in(
        &url,
        &["--in-flight", "1", "filter", "fl1", "--batch", "100"],
        lines.join("\n").as_bytes(),
    ));
    let printed: Vec<&str> = out.stdout.lines().collect();
    assert!(
        printed == expected,
        "not the first occurrences in input order"
    );
    for bad in ["0", "17"] {
        usage_error(
            rb(&url, &["--in-flight", bad, "filter", "fl"]),
            "rotabloom: invalid value",
        );
    }
}
