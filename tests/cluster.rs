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

    // The records of idempotent batches go with a drop: the sweep runs on
    // the node of the filter's slot.
    let f = rotabloom::BloomFilter::builder("recorded")
        .capacity(1000)
        .create_or_open(&mut conn)
        .unwrap();
    for i in 0..3 {
        f.idempotent_batch([format!("r{i}")])
            .check_and_insert(&mut conn)
            .unwrap();
    }
    let records = keys("recorded")
        .iter()
        .filter(|k| k.contains(":done:"))
        .count();
    assert_eq!(records, 3);
    assert!(f.drop(&mut conn).unwrap());
    assert_eq!(keys("recorded"), Vec::<String>::new());

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

/// The node id of `node`.
fn node_id(node: &harness::RedisServer) -> String {
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query(&mut node.connection())
        .unwrap()
}

#[test]
fn live_resharding_under_four_writers_loses_and_doubles_nothing() {
    use rotabloom::BloomFilter;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    let cluster = RedisCluster::start();
    let mut conn = cluster.connection();
    // Many blocks, so that the slot is half moved for a while.
    let f = BloomFilter::builder("resh")
        .capacity(200_000)
        .error_rate(1e-6)
        .max_block_bits(1 << 18)
        .create_or_open(&mut conn)
        .unwrap();
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg("resh")
        .query(&mut conn)
        .unwrap();
    let owns = |n: &harness::RedisServer| -> bool {
        let keys: i64 = redis::cmd("CLUSTER")
            .arg("COUNTKEYSINSLOT")
            .arg(slot)
            .query(&mut n.connection())
            .unwrap();
        keys > 0
    };
    let nodes = cluster.nodes();
    let from = nodes.iter().position(owns).expect("the slot's node");
    let to = (from + 1) % nodes.len();
    let (src, dst) = (&nodes[from], &nodes[to]);

    // Four writers over the same 20,000 items in different orders, each
    // batch retried (as an idempotent batch) after a retryable error.
    let items: Vec<String> = (0..20_000).map(|i| format!("https://r/{i}")).collect();
    let done = Arc::new(AtomicUsize::new(0));
    let stop_early = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let f = f.clone();
            let client = cluster.client();
            let mut mine = items.clone();
            mine.rotate_left(w * 5_000);
            let done = Arc::clone(&done);
            let stop = Arc::clone(&stop_early);
            std::thread::spawn(move || {
                let mut conn = client.get_connection().unwrap();
                let mut new = Vec::new();
                let mut retried = 0;
                for chunk in mine.chunks(100) {
                    let mut batch = f.idempotent_batch(chunk);
                    let answers = loop {
                        match batch.check_and_insert(&mut conn) {
                            Ok(a) => break a,
                            Err(e) if e.is_retryable() && !stop.load(Ordering::SeqCst) => {
                                retried += 1;
                                conn = client.get_connection().unwrap();
                            }
                            Err(e) => panic!("writer {w}: {e}"),
                        }
                    };
                    new.extend(
                        chunk
                            .iter()
                            .zip(answers)
                            .filter(|(_, n)| *n)
                            .map(|(i, _)| i.clone()),
                    );
                    done.fetch_add(1, Ordering::SeqCst);
                }
                (new, retried)
            })
        })
        .collect();

    // Move the slot key by key while they write.
    while done.load(Ordering::SeqCst) < 40 {
        std::thread::yield_now();
    }
    let (src_id, dst_id) = (node_id(src), node_id(dst));
    let setslot = |n: &harness::RedisServer, how: &str, id: &str| {
        let _: () = redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(how)
            .arg(id)
            .query(&mut n.connection())
            .unwrap();
    };
    setslot(dst, "IMPORTING", &src_id);
    setslot(src, "MIGRATING", &dst_id);
    let started = done.load(Ordering::SeqCst);
    let mut moved = 0;
    loop {
        let keys: Vec<String> = redis::cmd("CLUSTER")
            .arg("GETKEYSINSLOT")
            .arg(slot)
            .arg(1)
            .query(&mut src.connection())
            .unwrap();
        let Some(key) = keys.first() else { break };
        let _: () = redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(dst.port())
            .arg(key)
            .arg(0)
            .arg(5000)
            .query(&mut src.connection())
            .unwrap();
        moved += 1;
        // Let the writers meet the half-moved slot.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for n in nodes {
        setslot(n, "NODE", &dst_id);
    }
    let at_end = done.load(Ordering::SeqCst);
    let during = at_end - started;

    let mut reported = std::collections::HashMap::new();
    let mut retries = 0;
    for w in writers {
        let (new, retried) = w.join().unwrap();
        retries += retried;
        for i in new {
            *reported.entry(i).or_insert(0) += 1;
        }
    }
    let twice = reported.values().filter(|&&n| n > 1).count();
    assert_eq!(twice, 0, "items reported new by more than one writer");
    assert_eq!(reported.len(), items.len(), "items never reported new");
    let mut conn = cluster.connection();
    let present = f.contains_many(&mut conn, &items).unwrap();
    assert!(present.iter().all(|&p| p), "acknowledged items lost");
    assert!(owns(dst) && !owns(src), "the slot did not move");
    // The writers were at work from before the move began until after it
    // ended (their calls meet MOVED, ASK and TRYAGAIN meanwhile).
    assert!(
        started < 800 && at_end < 800,
        "the writers were not running throughout the move"
    );
    eprintln!(
        "live resharding: {moved} keys moved under 4 running writers ({during} batches finished during the move, the others waited through MOVED/ASK/TRYAGAIN); 20,000 items new exactly once, 0 lost, {retries} errors reached the writers"
    );
}
