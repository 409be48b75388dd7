//! A sharded filter is only as good as its routing: placement picks a
//! master per shard once, and after that every access goes by key, so a
//! resharding that moves a shard's slot mid-stream must cost nothing but
//! redirections (MOVED, ASK, TRYAGAIN). Here four `rotabloom filter`
//! writers are fed the same lines in four orders while `redis-cli
//! --cluster reshard` moves every slot of one master (two of the six
//! shards) to another, and then, after a fourth master joins, while
//! `redis-cli --cluster rebalance` spreads the slots onto it. The
//! input is released chunk by chunk as the slots move, so first inserts
//! race each other and the migration: across the four outputs every line
//! must be printed exactly once, every writer must end well, and the
//! filter must hold every line after. Figures on standard error
//! (`--nocapture`).

#[path = "support/bin.rs"]
mod bin;
#[path = "../../tests/support/harness.rs"]
mod harness;
#[path = "support/stream.rs"]
mod stream;

use harness::{RedisCluster, RedisServer};
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::process::Command;
use std::time::{Duration, Instant};
use stream::Filter;

/// Distinct lines fed to every writer. The filter is made for a million
/// at 1e-6: with 60,000 of them in it, a line not yet inserted is taken
/// for present with a probability below 1e-20, so a line printed by no
/// writer is a lost line, not a false positive.
const LINES: usize = 60_000;
/// Each writer's input, cut in as many chunks (a divisor of `LINES / 2`):
/// the first half released as the reshard moves its slots, the second as
/// the rebalance moves its own.
const CHUNKS: usize = 40;
const WRITERS: u64 = 4;
const SHARDS: usize = 6;

/// The node id of `node`.
fn node_id(node: &RedisServer) -> String {
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query(&mut node.connection())
        .expect("CLUSTER MYID")
}

/// `CLUSTER NODES` as `node` sees it: each node's id, flags and slots.
fn view(node: &RedisServer) -> Vec<(String, String, usize)> {
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(&mut node.connection())
        .expect("CLUSTER NODES");
    // `a-b`, `a`, or `[a->-id]` / `[a-<-id]` (a slot on the move).
    let count = |range: &str| match range.split_once('-') {
        _ if range.starts_with('[') => 0,
        Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
        None => 1,
    };
    let parse = |line: &str| {
        let f: Vec<&str> = line.split(' ').collect();
        (
            f[0].into(),
            f[2].into(),
            f[8..].iter().map(|r| count(r)).sum(),
        )
    };
    nodes.lines().map(parse).collect()
}

/// Whether `node` says it is a master, and how many slots it serves.
fn mine(node: &RedisServer) -> (bool, usize) {
    let me = view(node).into_iter().find(|n| n.1.contains("myself"));
    me.map(|n| (n.1.contains("master"), n.2)).unwrap()
}

fn slots(node: &RedisServer) -> usize {
    mine(node).1
}

/// Waits until every one of `nodes` knows them all, all say the same of
/// who serves how many slots (as `redis-cli --cluster` checks) and all
/// say the cluster is up (a master that just joined waits a moment first,
/// and refuses the keys migrated to it meanwhile: CLUSTERDOWN).
fn settled(nodes: &[&RedisServer]) {
    let said = |n: &&RedisServer| {
        let mut v: Vec<(String, usize)> = view(n).into_iter().map(|n| (n.0, n.2)).collect();
        v.sort();
        v
    };
    let ok = |n: &&RedisServer| {
        let info: String = redis::cmd("CLUSTER")
            .arg("INFO")
            .query(&mut n.connection())
            .expect("CLUSTER INFO");
        info.contains("cluster_state:ok")
    };
    bin::wait_until(20, "the nodes agreeing", || {
        let first = said(&nodes[0]);
        first.len() == nodes.len() && nodes.iter().all(|n| ok(n) && said(n) == first)
    });
}

/// For each shard of `name`, the index in `nodes` of the one master
/// holding its keys (all of them on one master: no shard left
/// half-migrated; a replica holds copies).
fn holders(nodes: &[&RedisServer], name: &str) -> Vec<usize> {
    (0..SHARDS)
        .map(|j| {
            let pattern = format!("rotabloom:{{{name}:shard:{j}:*");
            let on: Vec<usize> = (0..nodes.len())
                .filter(|&i| mine(nodes[i]).0)
                .filter(|&i| !harness::scan(&mut nodes[i].connection(), &pattern).is_empty())
                .collect();
            assert_eq!(on.len(), 1, "shard {j} has keys on nodes {on:?}");
            on[0]
        })
        .collect()
}

/// `lines` shuffled by a fixed-seed xorshift (Fisher–Yates).
fn shuffled(lines: &[String], mut seed: u64) -> Vec<String> {
    let mut out = lines.to_vec();
    for i in (1..out.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        out.swap(i, (seed % (i as u64 + 1)) as usize);
    }
    out
}

/// Runs `redis-cli --cluster ARGS` and, while it runs, gives every writer
/// its chunks `from..to` (of `chunks`, one list per writer): chunk `from +
/// k` once `moved()` says `k` of `to - from` shares of `total` slots have
/// moved, the rest when it has finished. Returns how long it took and how
/// many chunks went in while it ran, and how many lines the writers had
/// printed when it ended.
fn admin_feeding(
    args: &[&str],
    writers: &mut [Filter],
    chunks: &[Vec<Vec<String>>],
    (from, to): (usize, usize),
    total: usize,
    moved: impl Fn() -> usize,
) -> (Duration, usize, usize) {
    let t = Instant::now();
    let mut cmd = Command::new(harness::redis_cli_bin());
    cmd.arg("--cluster").args(args);
    let run = std::thread::spawn(move || cmd.output().expect("run redis-cli"));
    let (mut next, mut during) = (from, 0);
    let mut gone = vec![false; writers.len()];
    loop {
        let finished = run.is_finished();
        let due = if finished {
            to
        } else {
            (from + 1 + moved() * (to - from) / total).min(to)
        };
        while next < due {
            for ((w, c), gone) in writers.iter_mut().zip(chunks).zip(&mut gone) {
                // A writer that has exited (its input a broken pipe) is
                // fed no more: its exit code and error fail the test.
                let feed = AssertUnwindSafe(|| w.feed(&c[next]));
                *gone = *gone || std::panic::catch_unwind(feed).is_err();
            }
            next += 1;
            during += usize::from(!finished);
        }
        if finished {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = run.join().unwrap();
    assert!(
        out.status.success(),
        "redis-cli --cluster {}: {}\n{}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = writers.iter_mut().map(Filter::drain).sum();
    (t.elapsed(), during, printed)
}

#[test]
fn filter_through_a_reshard_and_a_rebalance_prints_each_line_once() {
    let cluster = RedisCluster::start_with(3, 0, 5000);
    let addr = |n: &RedisServer| format!("127.0.0.1:{}", n.port());
    let seeds: Vec<String> = cluster.nodes().iter().map(addr).collect();
    let url = format!("redis+cluster://{}", seeds.join(","));
    let name = "moving";
    bin::create_roomy_with(&url, name, &["--shards", &SHARDS.to_string()]);

    // The master of shard 0 gives all its slots to the next master.
    let masters: Vec<&RedisServer> = cluster.nodes().iter().collect();
    let before = holders(&masters, name);
    let (src, dst) = (before[0], (before[0] + 1) % 3);
    let (src_id, dst_id) = (node_id(masters[src]), node_id(masters[dst]));
    let src_slots = slots(masters[src]);
    let dst_slots = slots(masters[dst]);

    let lines: Vec<String> = (0..LINES)
        .map(|i| format!("https://reshard.example/{i}"))
        .collect();
    // Writer k takes each half in its own order (forward, reverse, two
    // shuffles), the first half during the reshard, the second during the
    // rebalance: each phase has lines that all four race to insert.
    let arrange = |k: u64, part: &[String]| match k {
        0 => part.to_vec(),
        1 => part.iter().rev().cloned().collect(),
        _ => shuffled(part, k.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
    };
    let (first, second) = lines.split_at(LINES / 2);
    let chunks: Vec<Vec<Vec<String>>> = (0..WRITERS)
        .map(|k| {
            let order = [arrange(k, first), arrange(k, second)].concat();
            order
                .chunks(LINES / CHUNKS)
                .map(<[String]>::to_vec)
                .collect()
        })
        .collect();
    let mut writers: Vec<Filter> = (0..WRITERS)
        .map(|_| Filter::start(&url, &[], name))
        .collect();

    let (dst_addr, count) = (addr(masters[dst]), src_slots.to_string());
    let (resharded, fed1, printed1) = admin_feeding(
        &[
            "reshard",
            &dst_addr,
            "--cluster-from",
            &src_id,
            "--cluster-to",
            &dst_id,
            "--cluster-slots",
            &count,
            "--cluster-yes",
        ],
        &mut writers,
        &chunks,
        (0, CHUNKS / 2),
        src_slots,
        || slots(masters[dst]).saturating_sub(dst_slots),
    );
    assert_eq!(slots(masters[src]), 0, "the reshard emptied the master");
    let after = holders(&masters, name);
    let moved: Vec<usize> = (0..SHARDS).filter(|&j| before[j] == src).collect();
    for &j in &moved {
        assert_eq!(after[j], dst, "shard {j} followed its slot");
    }

    // A fourth, empty master joins; the rebalance gives it (and the
    // emptied master, if it still is one: Redis 7 turns a master that lost
    // its last slot into a replica of the node that took it) its share.
    let fresh = RedisServer::start_with(&["--cluster-enabled", "yes"]);
    let mut all = masters.clone();
    all.push(&fresh);
    settled(&masters);
    let out = Command::new(harness::redis_cli_bin())
        .args(["--cluster", "add-node", &addr(&fresh), &dst_addr])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    settled(&all);
    let was: Vec<(bool, usize)> = all.iter().map(|n| mine(n)).collect();
    let heads = was.iter().filter(|m| m.0).count();
    let empty = was.iter().filter(|m| m.0 && m.1 == 0).count();
    let (rebalanced, fed2, printed2) = admin_feeding(
        &[
            "rebalance",
            &dst_addr,
            "--cluster-use-empty-masters",
            "--cluster-yes",
        ],
        &mut writers,
        &chunks,
        (CHUNKS / 2, CHUNKS),
        empty * 16384 / heads,
        || {
            let now = all.iter().map(|n| slots(n));
            now.zip(&was).map(|(s, w)| s.saturating_sub(w.1)).sum()
        },
    );
    let spread: Vec<(bool, usize)> = all.iter().map(|n| mine(n)).collect();
    assert!(
        spread.iter().all(|m| !m.0 || m.1 > 0) && spread[3].1 > 0,
        "(master, slots) after the rebalance: {spread:?}"
    );
    let last = holders(&all, name);
    assert!(
        (0..SHARDS).any(|j| last[j] != after[j]),
        "the rebalance moved no shard: {after:?} -> {last:?}"
    );

    // Every writer ends well; every line printed once across them.
    let mut printed: HashMap<String, usize> = HashMap::new();
    let mut warnings = Vec::new();
    for (i, w) in writers.into_iter().enumerate() {
        let (out, err, code) = w.finish();
        assert_eq!(code, 0, "writer {i} failed:\n{err}");
        warnings.extend(err.lines().map(String::from));
        for line in out {
            *printed.entry(line).or_default() += 1;
        }
    }
    let twice: Vec<&String> = printed.iter().filter(|e| *e.1 > 1).map(|e| e.0).collect();
    let never: Vec<&String> = lines.iter().filter(|l| !printed.contains_key(*l)).collect();
    let once = printed.values().filter(|&&n| n == 1).count();
    let fed = |n| format!("{n} of {} chunks fed meanwhile", CHUNKS / 2);
    eprintln!("{LINES} lines, {WRITERS} writers; shards on masters {before:?}");
    eprintln!(
        "reshard of {src_slots} slots (shards {moved:?}): {resharded:.1?}, {}, {printed1} lines printed by its end; shards on {after:?}",
        fed(fed1)
    );
    eprintln!(
        "rebalance over {heads} masters: {rebalanced:.1?}, {}, {printed2} lines printed by its end; (master, slots) {spread:?}, shards on {last:?}",
        fed(fed2)
    );
    let (moved_w, other_w): (Vec<&String>, Vec<&String>) =
        warnings.iter().partition(|w| w.contains("Moved"));
    eprintln!(
        "printed once {once}, twice {}, never {}; {} warnings naming MOVED, {} others",
        twice.len(),
        never.len(),
        moved_w.len(),
        other_w.len()
    );
    for w in moved_w.iter().take(1).chain(other_w.iter().take(3)) {
        eprintln!("  {w:.400}");
    }
    let stray = printed.len() - (LINES - never.len());
    assert_eq!(stray, 0, "lines printed that no writer was given");
    assert!(
        twice.is_empty(),
        "printed twice: {:?}",
        &twice[..twice.len().min(10)]
    );

    // The filter holds every line, and counted each once.
    let input = lines.join("\n") + "\n";
    let run = bin::rotabloom(
        &["--redis", &url, "check", name, "--absent"],
        &[],
        input.as_bytes(),
    );
    assert!(run.code <= 1 && run.stderr.is_empty(), "{run:?}");
    assert_eq!(run.stdout.lines().count(), 0, "lines lost: {run:?}");
    assert!(
        never.is_empty(),
        "in the filter but never printed: {:?}",
        &never[..never.len().min(10)]
    );
    let out = bin::rotabloom(&["--redis", &url, "status", name, "--json"], &[], b"").ok();
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["filters"][0]["items"], LINES, "{doc}");
}
