//! A sharded filter (docs/FORMAT.md §11) through the faults of a live
//! Redis Cluster, with writers streaming idempotent batches all along: a
//! live resharding of one shard's slot to another master, then a master
//! killed (`kill -9`) and replaced by its replica with `wait_replicas = 1`.
//! Each writer does what the library tells a user to do: on a retryable
//! error, reconnect and send the same batch again. After each fault: no
//! acknowledged item lost, no item answered "new" twice, exact counts, and
//! every batch that met an error answers the same when sent again under
//! its token. One cluster (3 masters, 1 replica each) for the binary; the
//! scenarios run in turn. Figures on standard error (`--nocapture`).

#[path = "support/harness.rs"]
mod harness;

use harness::RedisCluster;
use redis::cluster::{ClusterClient, ClusterConnection};
use rotabloom::{BloomFilter, Error, ShardedFilter, WaitReplicas};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

type Sharded = ShardedFilter<rotabloom::kinds::Bloom>;

/// How long any wait of this file may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(40);
/// Between two polls of a condition, and between two sends of a batch
/// that met a retryable error (a retry policy's pause, as a user's would
/// be, not a wait for something to have happened).
const PAUSE: Duration = Duration::from_millis(10);

const WRITERS: usize = 4;
const BATCH: usize = 400;

#[test]
fn sharded_filter_through_resharding_and_failover() {
    let mut cluster = RedisCluster::start_with(3, 1, 1500);
    resharding_mid_stream(&cluster);
    failover_mid_stream(&mut cluster);
}

/// Polls `ready` until it holds; fails the test after [`DEADLINE`].
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) -> Duration {
    let t = Instant::now();
    while !ready() {
        assert!(t.elapsed() < DEADLINE, "{what}: not within {DEADLINE:?}");
        std::thread::sleep(PAUSE);
    }
    t.elapsed()
}

/// A fresh cluster connection, retried while the cluster cannot give one.
fn connect(client: &ClusterClient) -> ClusterConnection {
    let t = Instant::now();
    loop {
        match client.get_connection() {
            Ok(c) => return c,
            Err(e) => assert!(t.elapsed() < DEADLINE, "no cluster connection: {e}"),
        }
        std::thread::sleep(PAUSE);
    }
}

/// A short name for the kind of `e`, to count them.
fn kind_of(e: &Error) -> String {
    match e {
        Error::Redis(r) => r
            .inner()
            .code()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{:?}", r.inner().kind())),
        other => format!("{other:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

/// What one writer saw.
#[derive(Default)]
struct Stream {
    /// Per item of the stream: answered "new" to this writer.
    new: Vec<bool>,
    /// Retryable errors met, by kind.
    errors: BTreeMap<String, usize>,
    /// Batches that met an error and were sent again under their token
    /// once answered: each answered the same.
    resent: usize,
}

/// Check-and-insert of one idempotent batch, sent again on every
/// retryable error on a fresh connection; counts the errors in `errors`.
fn send(
    client: &ClusterClient,
    conn: &mut ClusterConnection,
    batch: &mut rotabloom::ShardedBatch,
    errors: &mut BTreeMap<String, usize>,
) -> Vec<bool> {
    let t = Instant::now();
    loop {
        match batch.check_and_insert(conn) {
            Ok(answers) => return answers,
            Err(e) if e.is_retryable() => {
                *errors.entry(kind_of(&e)).or_default() += 1;
                assert!(t.elapsed() < DEADLINE, "batch still failing: {e}");
                std::thread::sleep(PAUSE);
                *conn = connect(client);
            }
            Err(e) => panic!("a batch failed with an error not retryable: {e} ({e:?})"),
        }
    }
}

/// Writer `w` streams every item in batches, from its own offset so that
/// the writers meet on every item; `done` counts the batches answered.
fn stream(
    client: &ClusterClient,
    f: &Sharded,
    items: &[String],
    w: usize,
    done: &AtomicUsize,
) -> Stream {
    let mut conn = connect(client);
    let batches = items.len() / BATCH;
    let mut out = Stream {
        new: vec![false; items.len()],
        ..Stream::default()
    };
    for b in 0..batches {
        let start = ((b + w * batches / WRITERS) % batches) * BATCH;
        let chunk = &items[start..start + BATCH];
        let mut batch = f.idempotent_batch(chunk);
        let before: usize = out.errors.values().sum();
        let answers = send(client, &mut conn, &mut batch, &mut out.errors);
        if out.errors.values().sum::<usize>() > before {
            // Exactly once per shard: under its token, from a fresh batch
            // that knows no answer, every shard answers from its record.
            let mut again = f.idempotent_batch(chunk).with_token(batch.token()).unwrap();
            let mut ignored = BTreeMap::new();
            let repeated = send(client, &mut conn, &mut again, &mut ignored);
            assert_eq!(repeated, answers, "a batch sent again answered otherwise");
            out.resent += 1;
        }
        for (i, a) in answers.into_iter().enumerate() {
            out.new[start + i] = a;
        }
        done.fetch_add(1, Ordering::SeqCst);
    }
    out
}

/// Runs [`WRITERS`] writers over `items` while `fault` runs once
/// `items.len() / BATCH` batches (a quarter of all) are answered; returns
/// what each writer saw.
fn with_writers(
    client: &ClusterClient,
    f: &Sharded,
    items: &[String],
    fault: impl FnOnce(&AtomicUsize),
) -> Vec<Stream> {
    let done = AtomicUsize::new(0);
    let total = WRITERS * items.len() / BATCH;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let done = &done;
                s.spawn(move || stream(client, f, items, w, done))
            })
            .collect();
        wait_until("a quarter of the batches answered", || {
            done.load(Ordering::SeqCst) >= total / 4
        });
        fault(&done);
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// The checks after a fault: no item new twice, every item new once
/// (but a few false positives), none lost, the count exact. Returns the
/// number of items answered new.
fn verify(conn: &mut ClusterConnection, f: &Sharded, items: &[String], streams: &[Stream]) -> u64 {
    let mut twice = 0;
    let mut never = 0;
    let mut acknowledged = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match streams.iter().filter(|s| s.new[i]).count() {
            0 => never += 1,
            1 => acknowledged.push(item),
            _ => twice += 1,
        }
    }
    let found = f.contains_many(conn, &acknowledged).unwrap();
    let lost = found.iter().filter(|&&b| !b).count();
    eprintln!(
        "  {} items streamed by {WRITERS} writers ({} sends), {} answered new: lost {lost}, new twice {twice}, never new {never}",
        items.len(),
        WRITERS * items.len(),
        acknowledged.len()
    );
    assert_eq!(twice, 0, "items answered new twice");
    assert_eq!(lost, 0, "acknowledged items lost");
    // An item never new is a false positive of its first insert: at 0.1%
    // and a fifth of the capacity, a handful at most.
    assert!(never <= items.len() / 1000, "{never} items never new");
    assert_eq!(f.count(conn).unwrap(), acknowledged.len() as u64);
    acknowledged.len() as u64
}

/// Every error kind the writers met, summed, and how many batches were
/// sent again.
fn errors_met(streams: &[Stream]) -> (BTreeMap<String, usize>, usize) {
    let mut all = BTreeMap::new();
    for s in streams {
        for (k, n) in &s.errors {
            *all.entry(k.clone()).or_default() += n;
        }
    }
    (all, streams.iter().map(|s| s.resent).sum())
}

/// The error replies `node` gave so far, by their code (`INFO errorstats`:
/// redirections and TRYAGAIN included), to see what the clients met
/// inside the redis crate, which follows them without a word.
fn errorstats(node: &harness::RedisServer) -> BTreeMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("errorstats")
        .query(&mut node.connection())
        .unwrap();
    info.lines()
        .filter_map(|l| {
            let (code, rest) = l.strip_prefix("errorstat_")?.split_once(":count=")?;
            Some((code.to_string(), rest.trim().parse().ok()?))
        })
        .collect()
}

/// `host:port` of node `node`.
fn addr(node: &harness::RedisServer) -> String {
    format!("127.0.0.1:{}", node.port())
}

fn node_id(node: &harness::RedisServer) -> String {
    redis::cmd("CLUSTER")
        .arg("MYID")
        .query(&mut node.connection())
        .unwrap()
}

fn items(tag: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("https://{tag}.example/{i}"))
        .collect()
}

/// One shard's slot moved to another master while the writers stream:
/// `SETSLOT IMPORTING / MIGRATING`, `MIGRATE ... KEYS` of every key in the
/// slot, `SETSLOT NODE` on every master. The shard's scripts meet TRYAGAIN
/// and ASK meanwhile, and MOVED after.
fn resharding_mid_stream(cluster: &RedisCluster) {
    eprintln!("live resharding of one shard's slot:");
    let client = cluster.client();
    let mut conn = connect(&client);
    let f = BloomFilter::builder("moving")
        .capacity(120_000)
        .error_rate(0.001)
        .shards(6)
        .create_or_open(&mut conn)
        .unwrap();
    let source_addr = f.masters(&mut conn).unwrap()[0].clone().unwrap();
    let masters: Vec<&harness::RedisServer> = cluster
        .nodes()
        .iter()
        .filter(|n| {
            let role: Vec<redis::Value> = redis::cmd("ROLE").query(&mut n.connection()).unwrap();
            role.first() == Some(&redis::Value::BulkString(b"master".to_vec()))
        })
        .collect();
    assert_eq!(masters.len(), 3);
    let source = *masters.iter().find(|n| addr(n) == source_addr).unwrap();
    let target = *masters.iter().find(|n| addr(n) != source_addr).unwrap();
    let shard_key = format!("rotabloom:{{{}}}:meta", f.shard_names()[0]);
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(&shard_key)
        .query(&mut source.connection())
        .unwrap();
    let items = items("moving", 24_000);

    let replied_before = [errorstats(source), errorstats(target)];
    let mut moved = 0usize;
    let mut took = Duration::ZERO;
    let mut during = (0, 0);
    let streams = with_writers(&client, &f, &items, |done| {
        let t = Instant::now();
        during.0 = done.load(Ordering::SeqCst);
        let (mut src, mut dst) = (source.connection(), target.connection());
        let setslot = |c: &mut redis::Connection, how: &str, id: &str| {
            let _: () = redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg(how)
                .arg(id)
                .query(c)
                .unwrap();
        };
        setslot(&mut dst, "IMPORTING", &node_id(source));
        setslot(&mut src, "MIGRATING", &node_id(target));
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(100)
                .query(&mut src)
                .unwrap();
            if keys.is_empty() {
                break;
            }
            moved += keys.len();
            let _: () = redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(target.port())
                .arg("")
                .arg(0)
                .arg(5000)
                .arg("KEYS")
                .arg(&keys)
                .query(&mut src)
                .unwrap();
        }
        // The new owner first, then the old one, then the others.
        let target_id = node_id(target);
        setslot(&mut dst, "NODE", &target_id);
        setslot(&mut src, "NODE", &target_id);
        for m in masters
            .iter()
            .filter(|m| addr(m) != addr(source) && addr(m) != addr(target))
        {
            setslot(&mut m.connection(), "NODE", &target_id);
        }
        took = t.elapsed();
        during.1 = done.load(Ordering::SeqCst);
    });
    let total = WRITERS * items.len() / BATCH;
    let (errors, resent) = errors_met(&streams);
    eprintln!(
        "  slot {slot} of shard 0 moved {} -> {}: {moved} keys in {took:?}, while batches {} to {} of {total} were answered",
        addr(source),
        addr(target),
        during.0,
        during.1
    );
    eprintln!("  retryable errors met: {errors:?}; {resent} batches sent again answered the same");
    // What the shard's requests met on the two masters while it moved
    // (their ERR count is this test's own connections: Redis 7.0 refuses
    // the CLIENT SETINFO that the redis crate sends on connecting).
    let mut redirected = BTreeMap::new();
    for (node, before) in [source, target].into_iter().zip(&replied_before) {
        for (code, n) in errorstats(node).into_iter().filter(|(c, _)| c != "ERR") {
            let new = n - before.get(&code).copied().unwrap_or(0);
            if new > 0 {
                *redirected.entry(code).or_insert(0) += new;
            }
        }
    }
    eprintln!("  replies from the two masters meanwhile, followed by the client: {redirected:?}");
    assert!(during.0 < total, "the slot moved mid-stream");
    assert!(
        ["TRYAGAIN", "ASK", "MOVED"]
            .iter()
            .any(|c| redirected.contains_key(*c)),
        "the writers met the move: {redirected:?}"
    );
    verify(&mut connect(&client), &f, &items, &streams);

    // The shard's keys are all on the target now, and the filter says so.
    assert_eq!(f.masters(&mut conn).unwrap()[0], Some(addr(target)));
    let count = |n: &harness::RedisServer| -> usize {
        redis::cmd("CLUSTER")
            .arg("COUNTKEYSINSLOT")
            .arg(slot)
            .query(&mut n.connection())
            .unwrap()
    };
    assert_eq!(count(source), 0, "keys left on the source");
    assert!(count(target) >= moved, "the moved keys are on the target");
    let on_target = harness::scan(
        &mut target.connection(),
        &format!("rotabloom:{{{}}}:*", f.shard_names()[0]),
    );
    assert!(on_target.contains(&shard_key), "{on_target:?}");
    assert!(f.drop(&mut conn).unwrap());
}

/// The master of shard 0 killed (`kill -9`) mid-stream, with every write
/// acknowledged only once a replica has it: its replica takes over, a new
/// replica joins the promoted master (with `wait_replicas = 1` no write
/// is acknowledged on a master without one), and the writers carry on.
fn failover_mid_stream(cluster: &mut RedisCluster) {
    eprintln!("a master killed mid-stream, wait_replicas = 1:");
    let client = cluster.client();
    let mut conn = connect(&client);
    let wait = WaitReplicas::new(1, Duration::from_millis(1000)).unwrap();
    let f = BloomFilter::builder("acked")
        .capacity(120_000)
        .error_rate(0.001)
        .wait_replicas(wait)
        .shards(6)
        .create_or_open(&mut conn)
        .unwrap();
    let victim_addr = f.masters(&mut conn).unwrap()[0].clone().unwrap();
    let victim = cluster
        .nodes()
        .iter()
        .position(|n| addr(n) == victim_addr)
        .unwrap();
    // Its replica: the node whose ROLE names the victim's port as master.
    let heir = cluster
        .nodes()
        .iter()
        .position(|n| {
            let role: Vec<redis::Value> = redis::cmd("ROLE").query(&mut n.connection()).unwrap();
            role.first() == Some(&redis::Value::BulkString(b"slave".to_vec()))
                && role.get(2)
                    == Some(&redis::Value::Int(i64::from(
                        cluster.nodes()[victim].port(),
                    )))
        })
        .unwrap();
    let heir_id = node_id(&cluster.nodes()[heir]);
    let items = items("acked", 24_000);

    let mut figures = (0, Duration::ZERO, Duration::ZERO, 0);
    let streams = with_writers(&client, &f, &items, |done| {
        figures.0 = done.load(Ordering::SeqCst);
        let t = Instant::now();
        cluster.kill9(victim);
        let live: Vec<usize> = (0..cluster.nodes().len())
            .filter(|&i| i != victim)
            .collect();
        let nodes = cluster.nodes();
        wait_until("the replica promoted and the cluster ok", || {
            let promoted = redis::cmd("ROLE")
                .query::<Vec<redis::Value>>(&mut nodes[heir].connection())
                .is_ok_and(|r| r.first() == Some(&redis::Value::BulkString(b"master".to_vec())));
            promoted
                && live.iter().all(|&i| {
                    redis::cmd("CLUSTER")
                        .arg("INFO")
                        .query::<String>(&mut nodes[i].connection())
                        .is_ok_and(|info| info.contains("cluster_state:ok"))
                })
        });
        figures.1 = t.elapsed();
        cluster.add_replica(&heir_id);
        figures.2 = t.elapsed();
        figures.3 = done.load(Ordering::SeqCst);
    });
    let total = WRITERS * items.len() / BATCH;
    let (errors, resent) = errors_met(&streams);
    eprintln!(
        "  killed {victim_addr} after {} of {total} batches; its replica master and the cluster ok {:?} later; a new replica in sync {:?} later ({} batches answered by then)",
        figures.0, figures.1, figures.2, figures.3
    );
    eprintln!("  retryable errors met: {errors:?}; {resent} batches sent again answered the same");
    assert!(figures.0 < total, "the master died mid-stream");
    assert!(!errors.is_empty(), "the writers met the failover");
    assert!(resent > 0, "batches that met the failover were sent again");
    // A connection from before the kill still routes shard 0 to the dead
    // master (the redis crate learns a new owner from MOVED, which a dead
    // node cannot send): a user reconnects, as the writers did.
    let mut conn = connect(&client);
    verify(&mut conn, &f, &items, &streams);
    assert_eq!(
        f.masters(&mut conn).unwrap()[0],
        Some(addr(&cluster.nodes()[heir])),
        "shard 0 is on the promoted replica"
    );
    assert!(f.drop(&mut conn).unwrap());
}
