//! Tests for the real-Redis test harness itself (tests/support/harness.rs).

#[path = "support/harness.rs"]
mod harness;

use harness::{Redis, RedisCluster, RedisServer};
use redis::Commands;

#[test]
fn private_server_answers_ping() {
    let server = RedisServer::start();
    assert_ne!(server.port(), 6379);
    assert_eq!(
        server.url(),
        format!("redis://127.0.0.1:{}/", server.port())
    );
    let mut con = server.connection();
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");

    // Private configuration: no persistence, loopback only.
    let save: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("save")
        .query(&mut con)
        .unwrap();
    assert_eq!(save, vec!["save".to_string(), String::new()]);
    let bind: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("bind")
        .query(&mut con)
        .unwrap();
    assert_eq!(bind[1], "127.0.0.1");
}

#[test]
fn servers_get_different_ports_and_are_cleaned_up() {
    let a = RedisServer::start();
    let b = RedisServer::start();
    assert_ne!(a.port(), b.port());

    let mut ca = a.connection();
    let mut cb = b.connection();
    let _: () = ca.set("k", "a").unwrap();
    let _: () = cb.set("k", "b").unwrap();
    assert_eq!(ca.get::<_, String>("k").unwrap(), "a");
    assert_eq!(cb.get::<_, String>("k").unwrap(), "b");

    let dir = a.dir().to_path_buf();
    let url = a.url();
    assert!(dir.is_dir());
    drop(ca);
    drop(a);
    assert!(!dir.exists(), "temp dir should be removed on drop");
    assert!(
        redis::Client::open(url)
            .unwrap()
            .get_connection_with_timeout(std::time::Duration::from_millis(500))
            .is_err(),
        "server should be stopped on drop"
    );
}

#[test]
fn start_with_extra_args() {
    let server = RedisServer::start_with(&["--maxmemory", "12345678"]);
    let mut con = server.connection();
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .query(&mut con)
        .unwrap();
    assert_eq!(v[1], "12345678");
}

#[test]
fn restart_loses_data_and_script_cache() {
    let mut server = RedisServer::start();
    let port = server.port();
    let pid = server.pid();
    let mut con = server.connection();
    let _: () = con.set("before", 1).unwrap();
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 1")
        .query(&mut con)
        .unwrap();
    drop(con);

    server.restart();
    assert_eq!(server.port(), port, "restart keeps the port");
    assert_ne!(server.pid(), pid, "restart runs a new process");

    let mut con = server.connection();
    let v: Option<i64> = con.get("before").unwrap();
    assert_eq!(v, None, "no persistence: data is gone after restart");
    let exists: Vec<bool> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(&sha)
        .query(&mut con)
        .unwrap();
    assert_eq!(exists, vec![false], "script cache is empty after restart");
}

#[test]
fn redis_enum_private_and_external() {
    let r = harness::external_or_private();
    let mut con = r.connection();
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");

    // External pointing at some server behaves the same.
    let server = RedisServer::start();
    let ext = Redis::External(server.url());
    assert!(!ext.is_private());
    let key = format!("{}k", harness::unique_prefix("enum"));
    let _: () = ext.connection().set(&key, "v").unwrap();
    assert_eq!(server.connection().get::<_, String>(&key).unwrap(), "v");
}

#[test]
fn cluster_sync_and_async() {
    let cluster = RedisCluster::start();
    let urls = cluster.urls();
    assert_eq!(urls.len(), 3);
    assert!(urls.iter().all(|u| u.starts_with("redis://127.0.0.1:")));

    // Sync cluster connection, hash-tagged keys (same slot).
    let mut con = cluster.client().get_connection().unwrap();
    let _: () = con.set("{x}:sync", "s").unwrap();
    let _: () = con.set("{x}:other", "o").unwrap();
    assert_eq!(con.get::<_, String>("{x}:sync").unwrap(), "s");
    let both: Vec<String> = con.mget(&["{x}:sync", "{x}:other"]).unwrap();
    assert_eq!(both, vec!["s", "o"]);
    // Keys spread over different slots/nodes still work one at a time.
    for i in 0..20 {
        let _: () = con.set(format!("k{i}"), i).unwrap();
        assert_eq!(con.get::<_, i64>(format!("k{i}")).unwrap(), i);
    }
    drop(con);

    // Async cluster connection.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use redis::AsyncCommands;
        let mut con = cluster.client().get_async_connection().await.unwrap();
        let _: () = con.set("{x}:async", "a").await.unwrap();
        let a: String = con.get("{x}:async").await.unwrap();
        assert_eq!(a, "a");
        let s: String = con.get("{x}:sync").await.unwrap();
        assert_eq!(s, "s");
    });
    drop(rt);
}

#[test]
#[should_panic(expected = "exited early")]
fn bad_arguments_panic_with_log_tail() {
    let _ = RedisServer::start_with(&["--no-such-option", "1"]);
}
