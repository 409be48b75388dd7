//! What `status --json` and `metrics` hold while they report many
//! filters: one filter at a time, so that 10,000 filters keep the process
//! under 64 MiB (when every report was held until the end, `status
//! --json` of 10,000 filters peaked at 160 MB). A file of its own: the
//! peak is read with `getrusage(RUSAGE_CHILDREN)`, over every child this
//! process has waited for, so no other test's commands may run beside;
//! and a child counts the memory of this process while it is being
//! spawned (it shares it until it runs the command), so this test keeps
//! its own small: it counts what was printed without holding a parse.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;

use harness::RedisServer;
use nix::sys::resource::{getrusage, UsageWho};
use rotabloom::BloomFilter;

const FILTERS: usize = 10_000;

/// The largest peak resident size of the commands run so far, in KiB
/// (Linux reports `ru_maxrss` in KiB).
fn peak_kib() -> i64 {
    getrusage(UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage")
        .max_rss()
}

#[test]
fn status_json_and_metrics_of_ten_thousand_filters_stay_under_64_mib() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    for i in 0..FILTERS {
        BloomFilter::builder(format!("m{i}"))
            .capacity(1_000)
            .create_or_open(&mut conn)
            .unwrap();
    }
    let url = server.url();
    let before = peak_kib();
    for args in [&["status", "--json"][..], &["metrics"][..]] {
        let mut all = vec!["--redis", url.as_str()];
        all.extend_from_slice(args);
        let run = bin::rotabloom(&all, &[], b"");
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        // Every filter reported, so that the peak is that of all of them.
        let reported = match args[0] {
            "status" => {
                #[derive(serde::Deserialize)]
                struct Doc {
                    filters: Vec<serde::de::IgnoredAny>,
                }
                let doc: Doc = serde_json::from_str(&run.stdout).unwrap();
                doc.filters.len()
            }
            _ => run
                .stdout
                .lines()
                .filter(|l| l.starts_with("rotabloom_filter_up{"))
                .count(),
        };
        assert_eq!(reported, FILTERS, "{args:?}");
        drop(run);
        let peak = peak_kib();
        assert!(
            peak < 64 * 1024,
            "{args:?}: the largest command so far peaked at {peak} KiB (before: {before} KiB)"
        );
    }
}
