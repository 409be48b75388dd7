//! `rotabloom filter` on a sharded filter through a master failover: a
//! local cluster of 3 masters with a replica each, two `filter` processes
//! with `--wait-replicas 1` fed the same lines, the master of one shard
//! killed (`kill -9`) mid-stream, its replica promoted, a new replica
//! added. Every line is printed once across both processes, none twice,
//! and every printed line is in the filter after. Figures on standard
//! error (`--nocapture`).

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;
#[path = "support/stream.rs"]
mod stream;

use harness::{RedisCluster, RedisServer};
use std::time::Instant;
use stream::Filter;

fn lines(tag: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("https://{tag}.example/{i}"))
        .collect()
}

fn role(node: &RedisServer) -> Vec<redis::Value> {
    redis::cmd("ROLE")
        .query(&mut node.connection())
        .unwrap_or_default()
}

fn is_master(node: &RedisServer) -> bool {
    role(node).first() == Some(&redis::Value::BulkString(b"master".to_vec()))
}

#[test]
fn filter_through_a_master_failover_prints_each_line_once() {
    let mut cluster = RedisCluster::start_with(3, 1, 1500);
    let seeds: Vec<String> = cluster
        .nodes()
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port()))
        .collect();
    let url = format!("redis+cluster://{}", seeds.join(","));
    // Roomy (1M at 1e-6): no line is taken for another.
    bin::create_roomy_with(&url, "acked", &["--shards", "6"]);
    // The master of shard 0: the node whose keys hold it.
    let victim = cluster
        .nodes()
        .iter()
        .position(|n| {
            is_master(n)
                && !harness::scan(&mut n.connection(), "rotabloom:{acked:shard:0:*").is_empty()
        })
        .unwrap();
    let victim_port = i64::from(cluster.nodes()[victim].port());
    let heir = cluster
        .nodes()
        .iter()
        .position(|n| role(n).get(2) == Some(&redis::Value::Int(victim_port)))
        .unwrap();
    let heir_id: String = redis::cmd("CLUSTER")
        .arg("MYID")
        .query(&mut cluster.nodes()[heir].connection())
        .unwrap();

    let chunks: Vec<Vec<String>> = (0..6).map(|c| lines(&format!("c{c}"), 1000)).collect();
    let extra = ["--wait-replicas", "1", "--retries", "30"];
    let mut writers = [
        Filter::start(&url, &extra, "acked"),
        Filter::start(&url, &extra, "acked"),
    ];
    for c in &chunks[..2] {
        for w in &mut writers {
            w.feed(c);
        }
    }
    let printed = |writers: &mut [Filter; 2]| writers.iter_mut().map(Filter::drain).sum::<usize>();
    bin::wait_until(60, "2,000 lines printed", || printed(&mut writers) >= 2000);
    // Two more chunks in flight, and the master dies under them.
    for c in &chunks[2..4] {
        for w in &mut writers {
            w.feed(c);
        }
    }
    let before = printed(&mut writers);
    let t = Instant::now();
    cluster.kill9(victim);
    bin::wait_until(30, "the replica promoted", || {
        is_master(&cluster.nodes()[heir])
    });
    let failover = t.elapsed();
    cluster.add_replica(&heir_id);
    let healed = t.elapsed();
    for c in &chunks[4..] {
        for w in &mut writers {
            w.feed(c);
        }
    }
    let [a, b] = writers;
    let (a, a_err, a_code) = a.finish();
    let (b, b_err, b_code) = b.finish();
    assert_eq!((a_code, b_code), (0, 0), "{a_err}\n{b_err}");
    eprintln!(
        "killed a master with {before} of 6,000 lines printed; its replica master {failover:?} later, a new replica in sync {healed:?} later; printed {} + {} lines",
        a.len(),
        b.len()
    );
    let retried = a_err
        .lines()
        .chain(b_err.lines())
        .filter(|l| l.contains("retrying"))
        .count();
    eprintln!("{retried} retry warnings");
    assert!(
        retried > 0,
        "the writers met the failover:\n{a_err}\n{b_err}"
    );

    let mut all: Vec<String> = a.into_iter().chain(b).collect();
    all.sort();
    let total = all.len();
    all.dedup();
    assert_eq!(total - all.len(), 0, "lines printed twice");
    let mut want: Vec<String> = chunks.concat();
    want.sort();
    assert_eq!(all, want, "every line printed once");

    // Every printed line is in the filter after the failover.
    let mut input = want.join("\n");
    input.push('\n');
    let run = bin::rotabloom(
        &["--redis", &url, "check", "acked", "--absent"],
        &[],
        input.as_bytes(),
    );
    assert!(
        (run.code == 0 || run.code == 1) && run.stderr.is_empty(),
        "{run:?}"
    );
    assert_eq!(run.stdout.lines().count(), 0, "printed lines lost: {run:?}");
}
