//! Monitoring while filters come and go: `status`, `list` and `metrics`
//! over every filter of a real, private redis-server while another client
//! drops and re-creates filters. A filter dropped while they run is simply
//! not listed: no error, no exit code, no `rotabloom_filter_up 0`.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;

use bin::{rb, Run};
use harness::RedisServer;
use rotabloom::{BloomFilter, CircularFilter, ExpandingFilter};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FILTERS: usize = 300;

fn name(i: usize) -> String {
    format!("f{i}")
}

/// Filter `i`: of each kind in turn, some of several blocks (a drop of
/// those takes several round trips).
fn create(conn: &mut redis::Connection, i: usize) {
    let n = name(i);
    match i % 3 {
        0 => drop(
            BloomFilter::builder(&n)
                .capacity(2_000)
                .max_block_bits(1 << 12)
                .create_or_open(conn)
                .unwrap(),
        ),
        1 => drop(
            CircularFilter::builder(&n)
                .generations(3)
                .capacity(500)
                .create_or_open(conn)
                .unwrap(),
        ),
        _ => drop(
            ExpandingFilter::builder(&n)
                .capacity(500)
                .create_or_open(conn)
                .unwrap(),
        ),
    }
}

fn run(url: &str, args: &[&str]) -> Run {
    let mut all = vec!["--redis", url];
    all.extend_from_slice(args);
    rb(&all)
}

#[test]
fn status_list_and_metrics_skip_filters_dropped_while_they_run() {
    let server = RedisServer::start();
    let url = server.url();
    let mut conn = server.connection();
    for i in 0..FILTERS {
        create(&mut conn, i);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let drops = Arc::new(AtomicU64::new(0));
    // Drops filters one after another, re-creating each right away, so
    // that every command below runs while filters disappear.
    let dropper = {
        let (stop, drops) = (Arc::clone(&stop), Arc::clone(&drops));
        let mut conn = server.connection();
        std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let f = rotabloom::AnyFilter::open(&mut conn, &name(i)).unwrap();
                assert!(f.drop(&mut conn).unwrap());
                drops.fetch_add(1, Ordering::Relaxed);
                create(&mut conn, i);
                i = (i + 7) % FILTERS;
            }
        })
    };
    let commands: [&[&str]; 4] = [
        &["status", "--check"],
        &["status", "--json"],
        &["list", "--json"],
        &["metrics"],
    ];
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut problems = Vec::new();
    for round in 0..5 {
        for args in commands {
            let before = drops.load(Ordering::Relaxed);
            let out = run(&url, args);
            let during = drops.load(Ordering::Relaxed) - before;
            let down = out
                .stdout
                .lines()
                .filter(|l| l.starts_with("rotabloom_filter_up{") && l.ends_with(" 0"))
                .count();
            let missing = out.stdout.matches("missing_block").count();
            if out.code != 0 || !out.stderr.is_empty() || down > 0 || missing > 0 {
                problems.push(format!(
                    "round {round}, {args:?}: exit {}, {down} filters down, {missing} missing \
                     blocks, {during} filters dropped while it ran; stderr: {}",
                    out.code,
                    out.stderr.lines().take(3).collect::<Vec<_>>().join(" | ")
                ));
            }
            if during == 0 {
                problems.push(format!(
                    "round {round}, {args:?}: no filter was dropped while it ran (the test proves nothing)"
                ));
            }
            assert!(Instant::now() < deadline, "the commands took too long");
        }
    }
    stop.store(true, Ordering::Relaxed);
    dropper.join().unwrap();
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));

    // A filter named on the command line must exist: that stays an error.
    let out = run(&url, &["status", "--check", "no-such-filter"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr,
        "rotabloom: filter \"no-such-filter\" does not exist (create it with `rotabloom create`)\n"
    );
    let out = run(&url, &["metrics", "no-such-filter"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stdout
            .contains("rotabloom_filter_up{filter=\"no-such-filter\"} 0"),
        "{out:?}"
    );
}
