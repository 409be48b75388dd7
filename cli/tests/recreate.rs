//! Issue 28, points 3 and 4 against a private redis-server: a filter that
//! refuses writes is an error in `status` and the library's `Info`, for
//! every kind, sharded or not; a run whose filter is dropped and created
//! again stops in words and leaves nothing of the old instance.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;
#[path = "support/stream.rs"]
mod stream;

use bin::{create, rb, rotabloom};
use harness::RedisServer;
use rotabloom::{kinds, Level, ShardedFilter};

fn lines(tag: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("https://{tag}.example/{i}"))
        .collect()
}

/// Every key under `pattern`.
fn keys(server: &RedisServer, pattern: &str) -> Vec<String> {
    harness::scan(&mut server.connection(), pattern)
}

/// A full filter of each kind, unsharded and with 3 shards: `add` past
/// its capacity fails (exit 3), and then `status` calls it an error (text
/// and JSON), `status --check` exits 4, and the library's `Info` holds an
/// error-level warning (a sharded filter's: in the full shard's).
#[test]
fn a_filter_that_refuses_writes_is_an_error_for_every_kind() {
    let server = RedisServer::start();
    let url = server.url();
    let kinds: [(&str, &[&str], &str); 3] = [
        ("bloom", &["--kind", "bloom"], "over_capacity"),
        (
            "circular",
            &["--kind", "circular", "--generations", "2", "--every", "7d"],
            "over_capacity",
        ),
        (
            "expanding",
            &["--kind", "expanding", "--max-generations", "1"],
            "at_limit",
        ),
    ];
    for (kind, settings, code) in kinds {
        for shards in ["1", "3"] {
            let name = format!("full-{kind}-{shards}");
            let mut s = settings.to_vec();
            s.extend_from_slice(&["--capacity", "300", "--shards", shards]);
            create(&url, &name, &s);
            rb(&["--redis", &url, "status", "--check", &name]).ok();
            let input = lines(&name, 2_000).join("\n");
            let out = rotabloom(&["--redis", &url, "add", &name], &[], input.as_bytes());
            assert_eq!(out.code, 3, "{name}: writes are refused: {out:?}");

            let out = rb(&["--redis", &url, "status", "--check", &name]);
            assert_eq!(out.code, 4, "{name}: {out:?}");
            assert!(
                out.stdout.contains("  error: ") && out.stdout.contains(&format!("[{code}]")),
                "{name}: {out:?}"
            );
            let out = rb(&["--redis", &url, "status", "--check", "--json", &name]);
            assert_eq!(out.code, 4, "{name}: {out:?}");
            let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
            let errors: Vec<&serde_json::Value> = doc["filters"][0]["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|w| w["level"] == "error" && w["code"] == code)
                .collect();
            assert!(!errors.is_empty(), "{name}: {doc}");
            if shards == "3" {
                assert!(
                    errors.iter().all(|w| w["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("shard "))),
                    "{name}: the full shard is named: {doc}"
                );
            }

            let mut conn = server.connection();
            let f = ShardedFilter::<kinds::Any>::open(&mut conn, &name).unwrap();
            let infos = f.info(&mut conn).unwrap();
            assert!(
                infos.iter().any(|i| i.worst_level() == Some(Level::Error)
                    && i.warnings.iter().any(|w| w.code.as_str() == code)),
                "{name}: {infos:?}"
            );
        }
    }
}

/// Reproduction 4 of issue 28: a standalone `g` with a `filter
/// --delivery at-least-once` run open, then `drop g` and `create g
/// --shards 3`. The run stops with the error in words (exit 2), having
/// written nothing of the old instance after the drop; a drop then
/// leaves no key under the name.
#[test]
fn a_run_across_a_drop_and_a_sharded_re_create_stops_in_words() {
    let server = RedisServer::start();
    let url = server.url();
    // An unsharded run across a sharded re-create, and a sharded run
    // across an unsharded one.
    let cases = [
        ("at-least-once", false),
        ("exactly-once", false),
        ("exactly-once", true),
    ];
    for (delivery, sharded_before) in cases {
        let settings = ["--kind", "bloom", "--capacity", "100k"];
        let (old, new): (&[&str], &[&str]) = match sharded_before {
            false => (&[], &["--shards", "3"]),
            true => (&["--shards", "3"], &[]),
        };
        create(&url, "g", &[&settings[..], old].concat());
        let mut run = stream::Filter::start(&url, &["--delivery", delivery], "g");
        let first = lines("first", 500);
        run.feed(&first);
        run.printed_at_least(first.len());
        rb(&["--redis", &url, "drop", "g", "--yes"]).ok();
        assert!(keys(&server, "rotabloom:{g*").is_empty());
        create(&url, "g", &[&settings[..], new].concat());
        let before = keys(&server, "rotabloom:{g}:*");
        run.feed(&lines("second", 500));
        let (printed, stderr, code) = run.finish();
        assert_eq!(code, 2, "{delivery}: {stderr}");
        assert!(
            stderr.contains("filter \"g\" was dropped and created again (another instance)")
                && !stderr.contains("user_script"),
            "{delivery}: {stderr}"
        );
        // Refused before any write: said so, not "may have been applied".
        assert!(
            stderr.contains("were not applied") && !stderr.contains("may have been"),
            "{delivery}: {stderr}"
        );
        assert_eq!(
            printed.len(),
            first.len(),
            "{delivery}: nothing more printed"
        );
        assert_eq!(
            keys(&server, "rotabloom:{g}:*"),
            before,
            "{delivery}: no key of the old instance written"
        );
        let mut conn = server.connection();
        let g = ShardedFilter::<kinds::Any>::open(&mut conn, "g").unwrap();
        assert_eq!(g.count(&mut conn).unwrap(), 0, "{delivery}");
        rb(&["--redis", &url, "drop", "g", "--yes"]).ok();
        let left: Vec<String> = keys(&server, "rotabloom:{g*");
        assert!(left.is_empty(), "{delivery}: {left:?}");
    }
}
