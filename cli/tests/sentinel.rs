//! Sentinel: a primary, a replica and three Sentinels on loopback; the
//! library and the command line reach the primary by its master name.

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;
#[path = "../../tests/support/suite.rs"]
mod suite;

use bin::rb;
use harness::{RedisServer, SentinelSet};
use rotabloom::connect::{Connection, Target, TlsOptions};

fn role(conn: &mut Connection) -> String {
    let info: String = redis::cmd("INFO").arg("replication").query(conn).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("role:"))
        .unwrap_or("?")
        .trim()
        .to_string()
}

#[test]
fn library_and_command_line_reach_the_primary_by_name() {
    let set = SentinelSet::start("rbmaster");
    let url = set.url();
    let target = Target::parse(&url, TlsOptions::default()).unwrap();
    assert_eq!(target.kind(), "sentinel");
    assert_eq!(role(&mut target.connect().unwrap()), "master");
    suite::suites_over(&target, "sentinel");

    // The command line, by URL and by configuration keys; what it wrote is
    // on the primary.
    rb(&[
        "--redis",
        &url,
        "create",
        "s",
        "--kind",
        "bloom",
        "--capacity",
        "100",
    ])
    .ok();
    rb(&["--redis", &url, "add", "s", "one"]).ok();
    let dir = set.primary.dir().join("cfg");
    std::fs::create_dir_all(&dir).unwrap();
    let sentinels: Vec<String> = set
        .sentinels
        .iter()
        .map(|s| format!("\"127.0.0.1:{}\"", s.port()))
        .collect();
    let toml = format!(
        "[defaults]\nsentinels = [{}]\nsentinel_master = \"rbmaster\"\n",
        sentinels.join(", ")
    );
    let out = bin::with_config(&dir, &toml, &["check", "s", "one", "two"]).ok();
    assert_eq!(out.stdout, "one\n");
    let n: i64 = redis::cmd("EXISTS")
        .arg(rotabloom::Keys::new(rotabloom::FilterName::new("s").unwrap()).meta())
        .query(&mut set.primary.connection())
        .unwrap();
    assert_eq!(n, 1);

    // A master name the Sentinels do not know; no Sentinel reachable.
    let wrong = url.replace("/rbmaster", "/nosuchmaster");
    let out = rb(&["--redis", &wrong, "status"]);
    let line = out.failed(3);
    assert!(
        line.starts_with("rotabloom: cannot connect to redis+sentinel://"),
        "{line}"
    );
    let dead = RedisServer::start();
    let port = dead.port();
    drop(dead);
    let out = rb(&[
        "--redis",
        &format!("redis+sentinel://127.0.0.1:{port}/rbmaster"),
        "status",
    ]);
    out.failed(3);
    // A password never shows.
    let out = rb(&[
        "--redis",
        &format!("redis+sentinel://:s3cretpw@127.0.0.1:{port}/rbmaster?sentinel_password=s3cretsp"),
        "status",
    ]);
    let line = out.failed(3);
    assert!(!line.contains("s3cret"), "{line}");
    assert!(line.contains("sentinel_password=***: "), "{line}");
}
