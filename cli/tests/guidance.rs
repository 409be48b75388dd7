//! Messages that guide: a misspelt filter name gets the near one, a
//! connection error says where its URL came from, `create` says what a
//! schedule does in dates and anchors an interval at the creation with
//! `--from now`, numbers read one way, and no document names a path of a
//! development machine.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;

use bin::{rb, rotabloom};
use harness::RedisServer;
use serde_json::Value;

/// The one error line of `run`, which exited with `code` (`status` still
/// prints the server's warnings on standard output).
fn error_line(run: &bin::Run, code: i32) -> &str {
    assert_eq!(run.code, code, "{run:?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{run:?}");
    lines[0]
}

/// `rotabloom --redis URL ARGS`.
fn at(url: &str, args: &[&str]) -> bin::Run {
    let mut all = vec!["--redis", url];
    all.extend_from_slice(args);
    rb(&all)
}

#[test]
fn a_misspelt_filter_name_gets_the_near_one() {
    let server = RedisServer::start();
    let url = server.url();
    for name in ["crawl", "recrawl", "myspider:dupefilter"] {
        at(
            &url,
            &["create", name, "--kind", "bloom", "--capacity", "100"],
        )
        .ok();
    }
    for (args, near) in [
        (&["status", "crwal"][..], "crawl"),
        (&["add", "recrwal", "x"], "recrawl"),
        (&["check", "myspider:dupfilter", "x"], "myspider:dupefilter"),
    ] {
        let run = at(&url, args);
        let wrong = args[1];
        assert_eq!(
            error_line(&run, 2),
            format!(
                "rotabloom: filter {wrong:?} does not exist (did you mean {near:?}? else create \
                 it with `rotabloom create`)"
            ),
            "{args:?}"
        );
    }
    // A drop has nothing to create.
    assert_eq!(
        error_line(&at(&url, &["drop", "Crawl", "--yes"]), 2),
        "rotabloom: filter \"Crawl\" does not exist (did you mean \"crawl\"?)"
    );
    // Nothing near: the plain hint.
    assert_eq!(
        error_line(&at(&url, &["status", "zebra"]), 2),
        "rotabloom: filter \"zebra\" does not exist (create it with `rotabloom create`)"
    );
}

#[test]
fn a_connection_error_says_where_its_url_came_from() {
    let down = "redis://127.0.0.1:1";
    let run = rotabloom(&["--retries", "0", "status"], &[("REDIS_URL", down)], b"");
    let line = run.failed(3);
    assert!(
        line.starts_with("rotabloom: cannot connect to redis://127.0.0.1:1"),
        "{line}"
    );
    assert!(line.ends_with(" (the URL of $REDIS_URL)"), "{line}");

    let dir = std::env::temp_dir().join(format!("rotabloom-guidance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = bin::with_config(
        &dir,
        &format!("[defaults]\nredis_url = \"{down}\"\n"),
        &["--retries", "0", "status"],
    );
    let cfg = dir.join("rotabloom.toml");
    assert!(
        run.failed(3).ends_with(&format!(
            " (the URL of the configuration {})",
            cfg.display()
        )),
        "{run:?}"
    );
    // The configuration beats an ambient $REDIS_URL, and says so.
    let run = rotabloom(
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--retries",
            "0",
            "status",
        ],
        &[("REDIS_URL", "redis://127.0.0.1:2")],
        b"",
    );
    assert!(run.failed(3).contains("127.0.0.1:1"), "{run:?}");
    let run = at(down, &["--retries", "0", "list"]);
    assert!(run.failed(3).ends_with(" (the URL of --redis)"), "{run:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The one object of `status --json NAME`'s filter.
fn status_of(url: &str, name: &str) -> Value {
    let run = at(url, &["status", "--json", name]).ok();
    // One object on one line, as every command's JSON.
    assert_eq!(run.stdout.lines().count(), 1, "{run:?}");
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    doc["filters"][0].clone()
}

#[test]
fn an_interval_counted_from_the_creation() {
    let server = RedisServer::start();
    let url = server.url();
    let args = |name: &'static str, from: &'static str| {
        vec![
            "create",
            name,
            "--kind",
            "circular",
            "--generations",
            "4",
            "--capacity",
            "100",
            "--every",
            "30d",
            "--from",
            from,
        ]
    };
    let run = at(&url, &[&args("w", "now")[..], &["--json"]].concat()).ok();
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["result"], "created", "{doc}");
    let schedule = doc["schedule"].as_str().unwrap().to_string();
    let origin = schedule
        .strip_prefix("30d from ")
        .unwrap_or_else(|| panic!("{doc}"));
    // The origin is the creation: the server's clock read in the request
    // just before the one that creates (so at most its round trip
    // earlier; both shown to the second), the first rotation one whole
    // period later, and an item inserted now is kept four.
    let f = status_of(&url, "w");
    let created = f["created_at"].as_str().unwrap();
    let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap();
    let lag = t(created) - t(origin);
    assert!(
        lag >= chrono::TimeDelta::zero() && lag <= chrono::TimeDelta::seconds(1),
        "{doc} {f}"
    );
    let next = t(doc["next_rotation_at"].as_str().unwrap());
    assert_eq!(next - t(origin), chrono::TimeDelta::days(30), "{doc}");
    assert_eq!(
        t(doc["forgotten_at"].as_str().unwrap()) - t(origin),
        chrono::TimeDelta::days(120),
        "{doc}"
    );
    assert_eq!(f["next_rotation_at"], doc["next_rotation_at"]);
    assert_eq!(f["parameters"]["schedule"], schedule.as_str());

    // The same command again opens it: the origin kept is the first one.
    let run = at(&url, &args("w", "now")).ok();
    assert!(
        run.stdout
            .starts_with("w: exists, same parameters (circular")
            && run
                .stdout
                .contains(&format!("schedule {schedule}: next rotation ")),
        "{run:?}"
    );
    // So do several at once: one creates, the others open it.
    let runs: Vec<bin::Run> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(|| at(&url, &args("race", "now"))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let created = runs
        .iter()
        .filter(|r| {
            assert_eq!(r.code, 0, "{r:?}");
            r.stdout.starts_with("race: created")
        })
        .count();
    assert_eq!(created, 1, "{runs:?}");

    // An explicit origin; calendar schedules have theirs.
    let run = at(&url, &args("fixed", "2026-01-01T06:00:00Z")).ok();
    assert!(
        run.stdout
            .contains("schedule 30d from 2026-01-01T06:00:00Z: first rotation "),
        "{run:?}"
    );
    let run = at(
        &url,
        &[
            "create",
            "cal",
            "--kind",
            "circular",
            "--generations",
            "2",
            "--capacity",
            "10",
            "--every",
            "monthly",
            "--from",
            "now",
        ],
    );
    assert!(
        run.failed(2)
            .contains("monthly:1@00:00 is a calendar schedule"),
        "{run:?}"
    );
    let run = at(
        &url,
        &[
            "create",
            "x",
            "--kind",
            "bloom",
            "--capacity",
            "10",
            "--from",
            "now",
        ],
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--every"), "{run:?}");
    // Without --from the periods count from 1970, and create says so.
    let run = at(
        &url,
        &[
            "create",
            "epoch",
            "--kind",
            "circular",
            "--generations",
            "2",
            "--capacity",
            "10",
            "--every",
            "30d",
        ],
    )
    .ok();
    assert!(
        run.stdout
            .contains("its periods count from 1970-01-01T00:00:00Z"),
        "{run:?}"
    );
}

#[test]
fn numbers_read_one_way() {
    let server = RedisServer::start();
    let url = server.url();
    at(
        &url,
        &[
            "create",
            "big",
            "--kind",
            "expanding",
            "--capacity",
            "2000",
            "--max-bytes",
            "4GiB",
        ],
    )
    .ok();
    let items: String = (0..1500).map(|i| format!("n{i}\n")).collect();
    let run = rotabloom(&["--redis", &url, "add", "big"], &[], items.as_bytes()).ok();
    assert!(
        run.stdout.starts_with("big: added 1,500 items: "),
        "{run:?}"
    );
    let run = at(&url, &["status", "big"]).ok();
    // Thousands separators, a size by its unit, a rate to three figures.
    assert!(run.stdout.contains(", max_bytes 4 GiB,"), "{run:?}");
    assert!(run.stdout.contains("\n  1,"), "{run:?}");
    assert!(run.stdout.contains("     2,000  "), "{run:?}");
    let rate = run
        .stdout
        .split("false-positive rate ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap();
    let figures = rate
        .trim_start_matches(['0', '.'])
        .split('e')
        .next()
        .unwrap();
    assert_eq!(figures.replace('.', "").len(), 3, "{rate}: {run:?}");
}

#[test]
fn no_document_names_a_path_of_a_development_machine() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![root.join("README.md"), root.join("config/rotabloom.toml")];
    for dir in ["docs", "python"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for bad in ["/home/", "/work/", "/root/", "/Users/"] {
            assert!(!text.contains(bad), "{} names {bad}", f.display());
        }
    }
}
