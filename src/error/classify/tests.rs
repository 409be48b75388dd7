//! Errors of the redis crate classified with made-up server replies: how
//! a common cause reads in words, which errors are worth retrying (said
//! again or not), and the command an ACL refusal in a script names.

#[test]
fn a_failure_said_again_is_as_retryable() {
    let io = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
    let cases = [
        super::Error::from(io),
        super::Error::ReplicasTimeout {
            acked: 0,
            wanted: 1,
            timeout_ms: 5,
        },
        super::Error::Contention {
            name: "f".into(),
            retries: 3,
        },
        super::Error::Internal("x".into()),
    ];
    for e in cases {
        assert_eq!(e.again().is_retryable(), e.is_retryable(), "{e}");
        assert!(e.again().to_string().contains(&e.to_string()), "{e}");
    }
}

use super::*;
use redis::{make_extension_error, ErrorKind};

fn server(code: &str, detail: &str) -> redis::RedisError {
    make_extension_error(code.to_string(), Some(detail.to_string()))
}

#[test]
fn common_causes_are_said_in_words() {
    let said = |e: redis::RedisError| Error::from(e).to_string();
    assert!(
        said(server("NOAUTH", "Authentication required.")).starts_with("authentication required")
    );
    assert!(said(server("WRONGPASS", "invalid username-password pair"))
        .starts_with("authentication failed"));
    let replica = server(
        "READONLY",
        "You can't write against a read only replica. script: 129dee4b, on @user_script:37.",
    );
    let e = Error::from(replica);
    assert!(
        e.to_string()
            .starts_with("the server is a read-only replica"),
        "{e}"
    );
    assert!(
        e.is_retryable(),
        "a failover turns a primary into a replica"
    );
    let parse = redis::RedisError::from((
        ErrorKind::Parse,
        "parse error",
        "Unexpected `84`".to_string(),
    ));
    assert_eq!(
        said(parse),
        "not a Redis server: its reply is not in the Redis protocol"
    );
    let timeout: redis::RedisError = std::io::Error::new(
        std::io::ErrorKind::WouldBlock,
        "Resource temporarily unavailable",
    )
    .into();
    assert_eq!(said(timeout), "timed out waiting for the server's reply");
    let oom = server(
        "OOM",
        "command not allowed when used memory > 'maxmemory'. script: 1280af8c, on @user_script:21.",
    );
    assert!(said(oom).starts_with("out of memory: "));
    // Anything else keeps the redis crate's words, after `redis: `.
    assert!(said(server("BUSY", "a script is running")).starts_with("redis: "));
}

#[test]
fn cluster_reconfiguration_is_retryable() {
    // The server's replies while a slot moves or a master fails over,
    // decoded as the redis crate decodes them off the wire.
    let reply = |wire: &str| -> Error {
        match redis::parse_redis_value(wire.as_bytes()) {
            Ok(redis::Value::ServerError(e)) => Error::from(redis::RedisError::from(e)),
            other => panic!("{wire:?} decoded as {other:?}"),
        }
    };
    for wire in [
        "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
        "-ASK 3999 127.0.0.1:6381\r\n",
        "-MOVED 3999 127.0.0.1:6381\r\n",
        "-CLUSTERDOWN The cluster is down\r\n",
        "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n",
        "-READONLY You can't write against a read only replica.\r\n",
    ] {
        let e = reply(wire);
        assert!(e.is_retryable(), "{wire:?}: {e:?}");
    }
    // A redirection says where the slot is, and which URL follows it.
    let moved = reply("-MOVED 3999 127.0.0.1:6381\r\n").to_string();
    assert!(
        moved.contains("slot 3999") && moved.contains("127.0.0.1:6381"),
        "{moved}"
    );
    assert!(moved.contains("redis+cluster://"), "{moved}");
    // A redirection says where the slot is, and which URL follows it.
    let moved = reply("-MOVED 3999 127.0.0.1:6381\r\n").to_string();
    assert!(
        moved.contains("slot 3999") && moved.contains("127.0.0.1:6381"),
        "{moved}"
    );
    assert!(moved.contains("redis+cluster://"), "{moved}");
    assert!(!reply("-CROSSSLOT Keys in request don't hash to the same slot\r\n").is_retryable());
    // The redis crate's cluster connection while a master is down.
    let lost =
        redis::RedisError::from((ErrorKind::ClusterConnectionNotFound, "No connections found"));
    assert!(Error::from(lost).is_retryable());
}

#[test]
fn an_acl_refusal_in_a_script_names_the_command_of_its_line() {
    let sha = crate::scripts::SWEEP.sha();
    let line = 1 + crate::scripts::SWEEP
        .source
        .lines()
        .position(|l| l.contains("redis.call('SCAN'"))
        .unwrap();
    let e = Error::from(server(
        "ERR",
        &format!(
            "The user executing the script can't run this command or subcommand script: {sha}, on @user_script:{line}."
        ),
    ));
    assert!(
        matches!(&e, Error::PermissionDenied { message } if message == "this user has no permissions to run the 'scan' command (a rotabloom script calls it)"),
        "{e:?}"
    );
    let e = Error::from(server(
        "NOPERM",
        "this user has no permissions to run the 'scan' command",
    ));
    assert!(
        matches!(&e, Error::PermissionDenied { message } if message == "this user has no permissions to run the 'scan' command"),
        "{e:?}"
    );
    // Valkey's words, with no script to look up.
    let e = Error::from(server(
        "ERR",
        "ACL failure in script: User u has no permissions to run the 'scan' command script: on @user_script:21.",
    ));
    assert!(
        matches!(&e, Error::PermissionDenied { message } if message == "this user has no permissions to run the 'scan' command (a rotabloom script calls it)"),
        "{e:?}"
    );
    // Another ERR is no refusal.
    assert!(matches!(
        Error::from(server("ERR", "syntax error")),
        Error::Redis(_)
    ));
}
