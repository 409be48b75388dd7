//! A Redis user whose ACL denies `WATCH`: the guarded-transaction path
//! (batches of 16 items and more) must fail with a clear, non-retryable
//! error that names the denied command, and write nothing; the script path
//! (single items, small batches) needs no `WATCH` and works.

#[path = "../../tests/support/harness.rs"]
mod harness;

use harness::RedisServer;
use redis::Connection;
use rotabloom::{BloomFilter, CircularFilter};

/// Items in the batch: far above the 16 that take the transaction path.
const BATCH: usize = 200;

/// Runs the scenario on filter `$name` of type `$ty`, as `$user` (denied
/// WATCH) and `$admin` (the default user), and appends what went wrong to
/// `$problems`.
macro_rules! scenario {
    ($ty:ty, $name:expr, $admin:expr, $user:expr, $problems:expr) => {{
        let name: &str = $name;
        let (admin, user): (&mut Connection, &mut Connection) = ($admin, $user);
        let problems: &mut Vec<String> = $problems;
        let items: Vec<String> = (0..BATCH).map(|i| format!("{name}-item-{i}")).collect();
        // The guarded transaction: WATCH is refused.
        let f = <$ty>::open(user, name).unwrap();
        match f.check_and_insert_many(user, &items) {
            Ok(v) => problems.push(format!(
                "{name}: check_and_insert_many of {BATCH} items as a user denied WATCH returned \
                 Ok ({} reported new) instead of a permission error",
                v.iter().filter(|n| **n).count()
            )),
            Err(e) => {
                let text = e.to_string().to_lowercase();
                if e.is_retryable() {
                    problems.push(format!("{name}: the error is retryable: {e}"));
                }
                let denied = text.contains("permission") || text.contains("noperm");
                if !denied || !text.contains("watch") {
                    problems.push(format!(
                        "{name}: the error does not say that permission for WATCH was denied: {e}"
                    ));
                }
            }
        }
        // Nothing written, as the default user sees it.
        let seen = <$ty>::open(admin, name).unwrap();
        let count = seen.count(admin).unwrap();
        if count != 0 {
            problems.push(format!("{name}: count is {count} after the refused batch, not 0"));
        }
        let present = seen.contains_many(admin, &items).unwrap();
        let written = present.iter().filter(|p| **p).count();
        if written != 0 {
            problems.push(format!(
                "{name}: {written} of the {BATCH} items are present after the refused batch"
            ));
        }
        // The script path needs no WATCH: single items and small batches work.
        let small: Vec<String> = (0..4).map(|i| format!("{name}-small-{i}")).collect();
        let single = (
            f.check_and_insert(user, "single"),
            f.contains(user, "single"),
            f.insert(user, "single-2"),
            f.check_and_insert_many(user, &small),
        );
        match single {
            (Ok(true), Ok(true), Ok(true), Ok(v)) if v.iter().all(|n| *n) => {}
            other => problems.push(format!(
                "{name}: script-path calls as the user denied WATCH did not all succeed: {other:?}"
            )),
        }
    }};
}

#[test]
fn a_user_denied_watch_gets_a_clear_error_and_nothing_is_written() {
    let server = RedisServer::start();
    let mut admin = server.connection();
    redis::cmd("ACL")
        .arg(&[
            "SETUSER", "nowatch", "on", ">pw", "~*", "&*", "+@all", "-watch",
        ])
        .query::<()>(&mut admin)
        .unwrap();
    let url = format!("redis://nowatch:pw@127.0.0.1:{}/", server.port());
    let mut user = redis::Client::open(url).unwrap().get_connection().unwrap();
    // The restriction is what this test is about: make sure it holds.
    let denied = redis::cmd("WATCH")
        .arg("any")
        .query::<()>(&mut user)
        .unwrap_err();
    assert_eq!(denied.code(), Some("NOPERM"), "{denied}");

    BloomFilter::builder("acl-bloom")
        .capacity(10_000)
        .create_or_open(&mut admin)
        .unwrap();
    CircularFilter::builder("acl-circular")
        .generations(3)
        .capacity(10_000)
        .schedule("1h")
        .create_or_open(&mut admin)
        .unwrap();

    let mut problems = Vec::new();
    scenario!(
        BloomFilter,
        "acl-bloom",
        &mut admin,
        &mut user,
        &mut problems
    );
    scenario!(
        CircularFilter,
        "acl-circular",
        &mut admin,
        &mut user,
        &mut problems
    );
    assert!(
        problems.is_empty(),
        "a user denied WATCH:\n  {}",
        problems.join("\n  ")
    );
}

#[path = "support/bin.rs"]
mod bin;

/// The commands rotabloom sends for one filter of any kind on bitmaps
/// (docs/ACL.md): the scripts' commands are checked against the user too.
const COMMANDS: &str = "+evalsha +eval +watch +unwatch +multi +exec +ping +time +wait \
    +bitfield +bitfield_ro +bitcount +getrange +setrange +strlen +get +set +exists +type \
    +unlink +del +pexpire +rpush +lindex +lrem +hget +hmget +hgetall +hset +hdel +hexists +hincrby \
    +persist +zadd +zrange +zrem +zremrangebyscore +zscore";

/// `ACL SETUSER name on >pw resetkeys ~rotabloom:{filter}:* -@all COMMANDS`.
fn restricted_user(admin: &mut Connection, name: &str, filter: &str) {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("SETUSER")
        .arg(name)
        .arg("reset")
        .arg("on")
        .arg(">pw")
        .arg(format!("~rotabloom:{{{filter}}}:*"))
        .arg("-@all");
    for c in COMMANDS.split_whitespace() {
        cmd.arg(c);
    }
    cmd.query::<()>(admin).unwrap();
}

#[test]
fn a_user_with_the_documented_acl_does_everything_with_its_filter_and_nothing_with_another() {
    let server = RedisServer::start();
    let mut admin = server.connection();
    let port = server.port();
    let run = |user: &str, args: &[&str], input: &str| {
        let url = format!("redis://{user}:pw@127.0.0.1:{port}/");
        let mut all = vec!["--redis", url.as_str()];
        all.extend_from_slice(args);
        bin::rotabloom(&all, &[], input.as_bytes())
    };
    let lines: String = (0..300).map(|i| format!("https://x/{i}\n")).collect();
    let kinds: [(&str, &[&str]); 3] = [
        ("bloom", &["--capacity", "10000"]),
        (
            "expanding",
            &["--capacity", "100", "--max-generations", "8"],
        ),
        (
            "circular",
            &["--generations", "3", "--capacity", "10000", "--every", "1h"],
        ),
    ];
    for (kind, settings) in kinds {
        let name = format!("acl-{kind}");
        let user = format!("u-{kind}");
        restricted_user(&mut admin, &user, &name);
        let mut create = vec![
            "create",
            name.as_str(),
            "--kind",
            kind,
            "--error-rate",
            "0.000001",
        ];
        create.extend_from_slice(settings);
        run(&user, &create, "").ok();
        run(&user, &["add", &name, "a", "b"], "").ok();
        let out = run(&user, &["check", &name, "a", "z"], "").ok();
        assert_eq!(out.stdout, "a\n");
        // 300 lines: the guarded transaction, WATCH and all; the expanding
        // filter grows past its first generation of 100.
        let out = run(&user, &["filter", &name], &lines).ok();
        assert_eq!(out.stdout.lines().count(), 300, "{kind}: {out:?}");
        run(&user, &["load", &name, "-"], &lines).ok();
        let out = run(&user, &["status", "--json", &name], "").ok();
        assert!(out.stdout.contains(&name), "{out:?}");
        if kind == "circular" {
            run(&user, &["rotate", &name], "").ok();
        }
        let out = run(
            &user,
            &[
                "--wait-replicas",
                "1",
                "--wait-timeout-ms",
                "10",
                "--retries",
                "0",
                "add",
                &name,
                "w",
            ],
            "",
        );
        // No replica: the write is refused by the count, not by the ACL.
        assert!(out.stderr.contains("replicas acknowledged"), "{out:?}");
        // Without +scan the drop cannot find the records of the batches
        // above: it says so, and they expire on their own.
        let out = run(&user, &["drop", &name, "--yes"], "").ok();
        assert!(out.stderr.contains("left to expire"), "{out:?}");
        let left: Vec<String> = redis::cmd("KEYS")
            .arg(format!("rotabloom:{{{name}}}:*"))
            .query(&mut admin)
            .unwrap();
        assert!(left.iter().all(|k| k.contains("}:done:")), "{left:?}");
    }

    // With +scan and +pttl (docs/ACL.md), nothing is left.
    let user = "u-scan";
    restricted_user(&mut admin, user, "acl-scan");
    redis::cmd("ACL")
        .arg(&["SETUSER", user, "+scan", "+pttl"])
        .exec(&mut admin)
        .unwrap();
    run(
        user,
        &["create", "acl-scan", "--kind", "bloom", "--capacity", "100"],
        "",
    )
    .ok();
    run(user, &["filter", "acl-scan"], "a\nb\n").ok();
    let out = run(user, &["drop", "acl-scan", "--yes"], "").ok();
    assert_eq!(out.stderr, "");
    let left: Vec<String> = redis::cmd("KEYS")
        .arg("rotabloom:{acl-scan}:*")
        .query(&mut admin)
        .unwrap();
    assert!(left.is_empty(), "{left:?}");

    // A sharded filter (docs/ACL.md): the shards' pattern besides the
    // root's, and CLUSTER SLOTS for the placement.
    let user = "u-sharded";
    restricted_user(&mut admin, user, "acl-sh");
    let create: Vec<&str> = "create acl-sh --kind bloom --capacity 3000 --shards 3"
        .split(' ')
        .collect();
    redis::cmd("ACL")
        .arg(&["SETUSER", user, "~rotabloom:{acl-sh:shard:*"])
        .exec(&mut admin)
        .unwrap();
    let out = run(user, &create, "");
    assert_eq!(out.code, 3, "without +cluster|slots: {out:?}");
    assert!(out.stderr.contains("permission denied"), "{out:?}");
    let left: Vec<String> = redis::cmd("KEYS")
        .arg("rotabloom:*acl-sh*")
        .query(&mut admin)
        .unwrap();
    assert!(left.is_empty(), "nothing written: {left:?}");
    redis::cmd("ACL")
        .arg(&["SETUSER", user, "+cluster|slots"])
        .exec(&mut admin)
        .unwrap();
    run(user, &create, "").ok();
    let out = run(user, &["filter", "acl-sh"], &lines).ok();
    assert_eq!(out.stdout.lines().count(), 300, "{out:?}");
    let out = run(user, &["status", "--json", "acl-sh"], "").ok();
    assert!(out.stdout.contains("\"shards\":3"), "{out:?}");
    let file = server.dir().join("acl-sh.dump");
    let file = file.to_str().unwrap();
    run(user, &["dump", "acl-sh", file], "").ok();
    run(user, &["drop", "acl-sh", "--yes"], "").ok();
    run(user, &["restore", file], "").ok();
    let out = run(user, &["check", "acl-sh", "https://x/1", "nope"], "").ok();
    assert_eq!(out.stdout, "https://x/1\n");
    run(user, &["drop", "acl-sh", "--yes"], "").ok();

    // A user for another filter's keys: a permission error, exit 3,
    // nothing written.
    BloomFilter::builder("mine")
        .capacity(1000)
        .create_or_open(&mut admin)
        .unwrap();
    restricted_user(&mut admin, "other", "theirs");
    for args in [
        &["check", "mine", "a"][..],
        &["add", "mine", "a"][..],
        &["status", "mine"][..],
    ] {
        let out = run("other", args, "");
        let line = out.failed(3);
        assert!(line.contains("permission denied"), "{out:?}");
        assert!(!line.contains("pw"), "{out:?}");
    }
    let out = run("other", &["filter", "mine"], "a\nb\n");
    assert_eq!(out.code, 3, "{out:?}");
    let f = BloomFilter::open(&mut admin, "mine").unwrap();
    assert_eq!(f.count(&mut admin).unwrap(), 0);
    assert!(!f.contains(&mut admin, "a").unwrap());
}

/// Every command a script calls is in the documented list, or in one of
/// docs/ACL.md's rows for what not every user needs: a script that starts
/// calling a new command fails every user made from the documentation.
#[test]
fn the_documented_commands_cover_every_command_a_script_calls() {
    let optional = [
        "bf.reserve",
        "bf.insert",
        "bf.mexists",
        "bf.exists",
        "bf.card",
        "bf.info",
        "rename",
        "scan",
        "pttl",
    ];
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../src");
    let mut missing = Vec::new();
    // The scripts' files, and the sharded filters' root steps (inline).
    let files = std::fs::read_dir(src.join("lua"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .chain([src.join("proto/shard/script.rs")]);
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for call in text
            .split("redis.call(")
            .chain(text.split("redis.pcall("))
            .skip(1)
        {
            let Some(name) = call.strip_prefix('\'').and_then(|c| c.split('\'').next()) else {
                continue;
            };
            let name = name.to_lowercase();
            let listed = COMMANDS.split_whitespace().any(|c| c == format!("+{name}"));
            if !listed && !optional.contains(&name.as_str()) {
                missing.push(format!("{name} ({})", path.display()));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "not in docs/ACL.md: {missing:?}");
}
