//! A Redis user whose ACL denies `WATCH`: the guarded-transaction path
//! (batches of 16 items and more) must fail with a clear, non-retryable
//! error that names the denied command, and write nothing; the script path
//! (single items, small batches) needs no `WATCH` and works.

#[path = "support/harness.rs"]
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
