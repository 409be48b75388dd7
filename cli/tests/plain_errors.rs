//! The errors a user meets first, each one plain line naming its cause,
//! with real peers: a server that wants a password, an ACL that refuses a
//! command, a read-only replica, a TCP peer that is not Redis (it answers
//! HTTP, or echoes), one that never answers, and a time RFC 3339 cannot
//! write.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;

use bin::{rb, Run};
use harness::RedisServer;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// `rotabloom --redis URL --retries 0 ARGS`.
fn run(url: &str, args: &[&str]) -> Run {
    let mut all = vec!["--redis", url, "--retries", "0"];
    all.extend_from_slice(args);
    rb(&all)
}

/// The one error line of `out`, which must have exited with `code`.
fn line(out: &Run, code: i32) -> String {
    assert_eq!(out.code, code, "{out:?}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{out:?}");
    lines[0].to_string()
}

/// Waits until `done` holds, or fails after a generous deadline.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_missing_or_wrong_password_says_so() {
    let server = RedisServer::start();
    redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "s3cret"])
        .exec(&mut server.connection())
        .unwrap();
    let port = server.port();
    let none = format!("redis://127.0.0.1:{port}/");
    let wrong = format!("redis://:wrong-pw@127.0.0.1:{port}/");
    for args in [&["status"][..], &["list"], &["add", "f", "a"]] {
        assert_eq!(
            line(&run(&none, args), 3),
            format!(
                "rotabloom: cannot connect to {none}: authentication required: the server wants a \
                 password and none was given (in the URL, :PASSWORD@ goes before the host; \
                 USER:PASSWORD@ for an ACL user) (the URL of --redis)"
            ),
            "{args:?}"
        );
        assert_eq!(
            line(&run(&wrong, args), 3),
            format!(
                "rotabloom: cannot connect to redis://***@127.0.0.1:{port}/: authentication \
                 failed: the server refused the user name or password (the URL of --redis)"
            ),
            "{args:?}"
        );
    }
}

#[test]
fn an_acl_refusal_names_the_command() {
    let server = RedisServer::start();
    let mut admin = server.connection();
    run(
        &server.url(),
        &["create", "f", "--kind", "bloom", "--capacity", "100"],
    )
    .ok();
    let port = server.port();
    let mut user = |name: &str, minus: &str| {
        redis::cmd("ACL")
            .arg(&["SETUSER", name, "on", ">pw", "~*", "&*", "+@all", minus])
            .exec(&mut admin)
            .unwrap();
        format!("redis://{name}:pw@127.0.0.1:{port}/")
    };
    let denied = |command: &str, script: bool| {
        format!(
            "rotabloom: permission denied by the Redis server: this user has no permissions to run \
             the '{command}' command{}",
            if script { " (a rotabloom script calls it)" } else { "" }
        )
    };
    // A command the client sends: the server's words, which Valkey begins
    // with the user's name instead of "this user".
    let denied_to = |user: &str, command: &str| {
        [
            denied(command, false),
            denied(command, false).replace("this user", &format!("User {user}")),
        ]
    };
    // SCAN, which lists the filters: sent by the client.
    let no_scan = user("noscan", "-scan");
    for args in [&["status"][..], &["list"][..]] {
        let said = line(&run(&no_scan, args), 3);
        assert!(denied_to("noscan", "scan").contains(&said), "{said}");
    }
    // No scripts at all.
    let no_scripts = user("noscripts", "-@scripting");
    let said = line(&run(&no_scripts, &["add", "f", "a"]), 3);
    assert!(denied_to("noscripts", "evalsha").contains(&said), "{said}");
    // A command a script calls: Redis 7.0 does not name it, its line does;
    // Valkey names it, and the same words say so.
    // (`add` then says what of its input was done.)
    let no_bitfield = user("nobitfield", "-bitfield");
    let said = line(&run(&no_bitfield, &["add", "f", "a"]), 3);
    assert!(
        said.starts_with(&format!("{}; ", denied("bitfield", true))),
        "{said}"
    );
}

#[test]
fn a_replica_says_it_is_one() {
    let primary = RedisServer::start();
    let of = primary.port().to_string();
    let replica = RedisServer::start_with(&["--replicaof", "127.0.0.1", &of]);
    let create = "create f --kind circular --generations 2 --capacity 100";
    run(&primary.url(), &create.split(' ').collect::<Vec<_>>()).ok();
    let mut conn = replica.connection();
    wait_for("the filter on the replica", || {
        redis::cmd("EXISTS")
            .arg("rotabloom:{f}:meta")
            .query::<bool>(&mut conn)
            .unwrap()
    });
    let said =
        "rotabloom: the server is a read-only replica: writes go to its primary (connect to \
                the primary, or use a redis+sentinel:// URL, which follows failovers)";
    let url = replica.url();
    // A plain command, and scripts (the error comes from inside them).
    for args in [
        &["create", "g", "--kind", "bloom", "--capacity", "100"][..],
        &["clear", "f", "--yes"],
        &["rotate", "f"],
        &["drop", "f", "--yes"],
    ] {
        assert_eq!(line(&run(&url, args), 3), said, "{args:?}");
    }
}

/// A TCP peer on a free loopback port that treats each connection with
/// `serve`, on a thread of its own, for the rest of the test.
fn peer(serve: fn(TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "redis://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || serve(conn));
        }
    });
    url
}

#[test]
fn a_peer_that_is_not_redis_is_named_so() {
    let http = peer(|mut c| {
        let mut buf = [0u8; 4096];
        let _ = c.read(&mut buf);
        let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let echo = peer(|mut c| {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = c.read(&mut buf) {
            if c.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
    for args in [&["status"][..], &["add", "f", "a"]] {
        assert_eq!(
            line(&run(&http, args), 3),
            format!(
                "rotabloom: cannot connect to {http}: not a Redis server: its reply is not in the \
                 Redis protocol (the URL of --redis)"
            )
        );
        assert_eq!(
            line(&run(&echo, args), 3),
            format!(
                "rotabloom: cannot connect to {echo}: not a Redis server: it answered PING with \
                 something else than PONG (the URL of --redis)"
            )
        );
    }
}

#[test]
fn a_peer_that_never_answers_times_out_as_the_flag_says() {
    let silent = peer(|mut c| {
        // Reads what comes and never answers, until the client leaves.
        let mut buf = [0u8; 4096];
        while let Ok(1..) = c.read(&mut buf) {}
    });
    let started = Instant::now();
    let out = rb(&["--redis", &silent, "--timeout", "0.5", "status"]);
    let took = started.elapsed();
    assert_eq!(
        line(&out, 3),
        format!(
            "rotabloom: cannot connect to {silent}: timed out: the server did not answer within \
             0.5 s (the URL of --redis); --timeout SECONDS sets how long to wait"
        )
    );
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[test]
fn a_time_past_year_9999_is_refused() {
    let server = RedisServer::start();
    let url = server.url();
    let create = "create far --kind circular --generations 3 --capacity 100 --every 7d";
    run(&url, &create.split(' ').collect::<Vec<_>>()).ok();
    let rotate_at = |now: &str| {
        run(
            &url,
            &["rotate", "far", "--if-due", "--now", now, "--force"],
        )
    };
    // RFC 3339 has four-digit years.
    let out = rotate_at("+10000-01-01T00:00:00Z");
    assert!(line(&out, 2).contains("is not an RFC 3339 time"), "{out:?}");
    // A time RFC 3339 writes, whose next rotation it does not.
    assert_eq!(
        line(&rotate_at("9999-12-31T00:00:00Z"), 2),
        "rotabloom: far: --now 9999-12-31T00:00:00Z: the schedule's next rotation after it falls \
         after year 9999, which RFC 3339 cannot write; give an earlier --now"
    );
    // Nothing was rotated, and every date shown is RFC 3339.
    let out = run(&url, &["status", "--json", "far"]).ok();
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let f = &doc["filters"][0];
    assert_eq!(f["epoch"], 0, "{f}");
    let next = f["next_rotation_at"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(next).is_ok(), "{next}");
}
