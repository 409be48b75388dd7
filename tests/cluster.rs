//! The functional suites on a local 3-master Redis Cluster, blocking and
//! async: every key of a filter shares one hash tag, so every script and
//! pipeline lands on one node.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/suite.rs"]
mod suite;

use harness::RedisCluster;

#[test]
fn cluster_suites() {
    let cluster = RedisCluster::start();
    let mut conn = cluster.connection();
    suite::sync_suite(&mut conn, "csync");
    // SCAN cannot be routed in a cluster: list keys node by node.
    let keys = |name: &str| -> Vec<String> {
        let mut all: Vec<String> = cluster
            .nodes()
            .iter()
            .flat_map(|n| suite::keys_of(&mut n.connection(), name))
            .collect();
        all.sort();
        all
    };
    suite::expanding_suite(&mut conn, "csync", &keys);
    suite::circular_suite(&mut conn, "csync", &keys);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut aconn = cluster.client().get_async_connection().await.unwrap();
        suite::async_suite(&mut aconn, "casync").await;
        suite::expanding_suite_async(&mut aconn, "casync").await;
        suite::circular_suite_async(&mut aconn, "casync").await;
    });

    // A multi-chunk batch right after every node lost its script cache:
    // the NOSCRIPT replies are re-sent, nothing runs twice.
    let flush = |cluster: &RedisCluster| {
        for node in cluster.nodes() {
            let _: () = redis::cmd("SCRIPT")
                .arg("FLUSH")
                .query(&mut node.connection())
                .unwrap();
        }
    };
    let f = rotabloom::BloomFilter::builder("flushed")
        .capacity(50_000)
        .error_rate(0.001)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..9_000).map(|i| format!("u{i}")).collect();
    flush(&cluster);
    let new = f.check_and_insert_many(&mut conn, &items[..4_500]).unwrap();
    assert!(new.iter().all(|&b| b));
    flush(&cluster);
    rt.block_on(async {
        let mut aconn = cluster.client().get_async_connection().await.unwrap();
        let new = f
            .check_and_insert_many_async(&mut aconn, &items)
            .await
            .unwrap();
        assert!(new[..4_500].iter().all(|&b| !b));
        assert!(new[4_500..].iter().all(|&b| b));
    });
    assert_eq!(f.count(&mut conn).unwrap(), 9_000);

    // Filters with different names spread over the nodes; each one's keys
    // stay in its own slot.
    let mut slots = std::collections::BTreeSet::new();
    for i in 0..12 {
        let name = format!("spread{i}");
        let f = rotabloom::BloomFilter::builder(&name)
            .capacity(1000)
            .error_rate(0.01)
            .create_or_open(&mut conn)
            .unwrap();
        assert!(f.check_and_insert(&mut conn, "x").unwrap());
        let info = f.info(&mut conn).unwrap();
        let gen_key = format!("rotabloom:{{{name}}}:gen:{}-0:0", info.fields["uid"]);
        let a: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&gen_key)
            .query(&mut conn)
            .unwrap();
        let b: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("rotabloom:{{{name}}}:meta"))
            .query(&mut conn)
            .unwrap();
        assert_eq!(a, b);
        slots.insert(a / (16384 / 3 + 1));
    }
    assert!(slots.len() > 1, "all filters landed on one node");
}
