//! Sharded filters (docs/FORMAT.md §11) on a private 3-master Redis
//! Cluster: placement, exact answers under concurrent writers, windows
//! across shards, a missing shard, and a filter bigger than any master.
//! One cluster for the whole binary: the scenarios run in turn.

#[path = "support/harness.rs"]
mod harness;

use chrono::{TimeZone, Utc};
use harness::RedisCluster;
use redis::Commands;
use rotabloom::{BloomFilter, CircularFilter, Error, ManualClock, Rotation, ShardedFilter};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Every key of `pattern` on every node, with the node's index.
fn keys_by_node(cluster: &RedisCluster, pattern: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (i, node) in cluster.nodes().iter().enumerate() {
        for k in harness::scan(&mut node.connection(), pattern) {
            out.insert(k, i);
        }
    }
    out
}

/// The keys of filter `name` and of its shards, on every node.
fn keys_of(cluster: &RedisCluster, name: &str) -> BTreeMap<String, usize> {
    let mut all = keys_by_node(cluster, &format!("rotabloom:{{{name}}}:*"));
    all.extend(keys_by_node(
        cluster,
        &format!("rotabloom:{{{name}:shard:*"),
    ));
    all
}

fn set_maxmemory(cluster: &RedisCluster, value: &str, policy: &str) {
    for node in cluster.nodes() {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(value)
            .arg("maxmemory-policy")
            .arg(policy)
            .query(&mut node.connection())
            .unwrap();
    }
}

/// On a single server: shards with random tags; a creation that died
/// half-way is "being created" to readers, and cleaned by the next create
/// after its deadline.
#[test]
fn sharded_filters_on_one_server() {
    let server = harness::RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("one")
        .capacity(3000)
        .shards(3)
        .create_or_open(&mut conn)
        .unwrap();
    assert_eq!(f.masters(&mut conn).unwrap(), vec![None, None, None]);
    let items: Vec<String> = (0..300).map(|i| format!("s{i}")).collect();
    assert!(all(f.check_and_insert_many(&mut conn, &items).unwrap()));
    assert!(all(f.contains_many(&mut conn, &items).unwrap()));
    // One connection: the three shards' parts go side by side, in the
    // round trips of one shard's.
    let mut counted_conn = counted(server.connection());
    assert!(all(f.contains_many(&mut counted_conn, &items).unwrap()));
    let sharded_trips = counted_conn.trips;
    let alone = BloomFilter::builder("one-alone")
        .capacity(1000)
        .create_or_open(&mut conn)
        .unwrap();
    alone.insert_many(&mut conn, &items).unwrap();
    counted_conn.trips = 0;
    assert!(all(alone.contains_many(&mut counted_conn, &items).unwrap()));
    assert_eq!(
        sharded_trips, counted_conn.trips,
        "round trips, 3 shards against 1"
    );
    assert!(alone.drop(&mut conn).unwrap());
    assert!(f.drop(&mut conn).unwrap());
    assert_eq!(
        harness::scan(&mut conn, "rotabloom:*"),
        Vec::<String>::new()
    );

    // A creator that died after its first shard: the root says creating,
    // its deadline passed (written by hand, as that creator would have).
    let orphan = BloomFilter::builder("half:shard:0:00000001")
        .capacity(1000)
        .create_or_open(&mut conn)
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg("rotabloom:{half}:meta")
        .arg(&[
            ("format", "sharded-1"),
            ("uid", "00000000000000aa"),
            ("shards", "2"),
            ("kind", "bloom"),
            ("capacity", "2000"),
            ("state", "creating"),
            ("deadline", "1"),
            ("created_at", "0"),
            ("shard.0", "half:shard:0:00000001"),
            ("shard.1", "half:shard:1:00000002"),
        ])
        .query(&mut conn)
        .unwrap();
    let e = ShardedFilter::<rotabloom::kinds::Any>::open(&mut conn, "half").unwrap_err();
    assert!(
        matches!(
            e,
            Error::ShardedBusy {
                state: "created",
                ..
            }
        ),
        "{e}"
    );
    let f = BloomFilter::builder("half")
        .capacity(2000)
        .shards(2)
        .create_or_open(&mut conn)
        .unwrap();
    assert!(!f.shard_names().contains(&orphan.name()), "a new shard set");
    assert!(matches!(
        BloomFilter::open(&mut conn, orphan.name()),
        Err(Error::NotFound { .. })
    ));
    assert!(f.drop(&mut conn).unwrap());
    assert_eq!(
        harness::scan(&mut conn, "rotabloom:*"),
        Vec::<String>::new()
    );
}

#[test]
fn sharded_filters_on_a_cluster() {
    let cluster = RedisCluster::start();
    placement_and_concurrent_writers(&cluster);
    windows_across_shards(&cluster);
    a_missing_shard_is_loud(&cluster);
    bigger_than_any_master(&cluster);
    async_batches(&cluster);
    idempotent_batches(&cluster);
    batches_by_master(&cluster);
    one_pipeline_per_master(&cluster);
    dump_and_restore(&cluster);
    async_dump_and_restore(&cluster);
}

/// A real connection that counts its round trips (each packed command or
/// pipeline it sends and reads back).
struct Counted<C> {
    inner: C,
    trips: usize,
}

impl<C: redis::ConnectionLike> redis::ConnectionLike for Counted<C> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<redis::Value> {
        self.trips += 1;
        self.inner.req_packed_command(cmd)
    }
    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        self.trips += 1;
        self.inner.req_packed_commands(cmd, offset, count)
    }
    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
    fn supports_pipelining(&self) -> bool {
        self.inner.supports_pipelining()
    }
    fn check_connection(&mut self) -> bool {
        self.inner.check_connection()
    }
    fn is_open(&self) -> bool {
        self.inner.is_open()
    }
}

fn counted<C>(inner: C) -> Counted<C> {
    Counted { inner, trips: 0 }
}

/// With a plain connection to each master (`group_masters`,
/// `Target::connect_to`), a master's shards go side by side: a batch
/// costs each master's connection the round trips one shard's part costs
/// alone, whatever the number of shards on it. A connection given for the
/// wrong master applies nothing (MOVED): a retryable error, and the batch
/// run again on the right ones answers every item new exactly once.
fn one_pipeline_per_master(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let f = BloomFilter::builder("pipes")
        .capacity(60_000)
        .shards(6)
        .create_or_open(&mut conn)
        .unwrap();
    let alone = BloomFilter::builder("pipes-alone")
        .capacity(10_000)
        .create_or_open(&mut conn)
        .unwrap();
    let seed = cluster.nodes()[0].url();
    let url = format!(
        "redis+cluster://{}",
        seed.trim_start_matches("redis://").trim_end_matches('/')
    );
    let target = rotabloom::connect::Target::parse(&url, Default::default()).unwrap();
    let masters = f.group_masters(&mut conn);
    let groups = f.shards_by_master(&mut conn);
    assert_eq!(masters.len(), groups.len());
    assert!(masters.len() >= 2, "{masters:?}");
    let link =
        |addr: &Option<String>| counted(target.connect_to(addr.as_deref().unwrap()).unwrap());
    let mut conns: Vec<_> = masters.iter().map(link).collect();

    // What one shard's part costs alone, on a plain connection to its
    // master (scripts loaded: the second batch is measured).
    let alone_addr = ShardedFilter::single(alone.clone())
        .masters(&mut conn)
        .unwrap()[0]
        .clone()
        .unwrap();
    let mut one = counted(target.connect_to(&alone_addr).unwrap());
    let items: Vec<String> = (0..6000).map(|i| format!("p{i}")).collect();
    for part in [&items[..500], &items[500..1000]] {
        one.trips = 0;
        let mut b = alone.idempotent_batch(part);
        assert!(all(b.check_and_insert(&mut one).unwrap()));
    }
    let per_part = one.trips;
    assert!(per_part >= 1);

    // Every master's shards hold part of each batch; the second is measured.
    for half in items.chunks(3000) {
        conns.iter_mut().for_each(|c| c.trips = 0);
        let mut batch = f.idempotent_batch(half);
        assert!(all(batch.check_and_insert_on(&mut conns).unwrap()));
    }
    for (g, c) in groups.iter().zip(&conns) {
        assert!(
            (1..=per_part).contains(&c.trips),
            "master of shards {g:?}: {} round trips for a batch, one shard alone takes {per_part}",
            c.trips
        );
    }
    assert!(
        groups.iter().any(|g| g.len() > 1),
        "some master holds several shards: {groups:?}"
    );

    // Connections given to the wrong masters: refused, nothing applied.
    let count = f.count(&mut conn).unwrap();
    let fresh: Vec<String> = (0..3000).map(|i| format!("q{i}")).collect();
    conns.rotate_left(1);
    let mut batch = f.idempotent_batch(&fresh);
    let e = batch.check_and_insert_on(&mut conns).unwrap_err();
    assert!(e.is_retryable(), "{e}");
    // A redirection (MOVED), said as what it means.
    assert!(
        e.to_string().contains("node of a Redis Cluster") && e.to_string().contains("served by"),
        "{e}"
    );
    assert_eq!(
        f.count(&mut conn).unwrap(),
        count,
        "a refused part wrote nothing"
    );
    // Run again on the right ones: every item new, once.
    let mut conns: Vec<_> = f.group_masters(&mut conn).iter().map(link).collect();
    assert!(all(batch.check_and_insert_on(&mut conns).unwrap()));
    assert_eq!(f.count(&mut conn).unwrap(), count + 3000);
    assert!(f.drop(&mut conn).unwrap());
    assert!(alone.drop(&mut conn).unwrap());
}

/// A batch over one connection per master: the shards are grouped by the
/// master that serves them; 8 writers racing with idempotent batches that
/// span every master see each item new exactly once; answers come back in
/// input order, and a batch run again under its token answers as it did.
fn batches_by_master(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let f = BloomFilter::builder("bymaster")
        .capacity(200_000)
        .error_rate(0.001)
        .shards(6)
        .create_or_open(&mut conn)
        .unwrap();
    let groups = f.shards_by_master(&mut conn);
    assert_eq!(groups.len(), 3, "{groups:?}");
    let masters = f.masters(&mut conn).unwrap();
    let mut seen: Vec<u32> = groups.iter().flatten().copied().collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..6).collect::<Vec<_>>(), "every shard once");
    for g in &groups {
        let of: BTreeSet<_> = g.iter().map(|&j| masters[j as usize].clone()).collect();
        assert_eq!(of.len(), 1, "group {g:?} spans masters {of:?}");
    }

    let items: Vec<String> = (0..24_000).map(|i| format!("https://m.org/{i}")).collect();
    // Every batch of 3,000 has items of every shard, so of every master.
    for chunk in items.chunks(3000) {
        let shards: BTreeSet<u32> = chunk.iter().map(|i| f.shard_of(i)).collect();
        assert_eq!(shards.len(), 6);
    }
    let new_per_writer: Vec<Vec<bool>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|w| {
                let (f, items) = (f.clone(), &items);
                s.spawn(move || {
                    let mut conns: Vec<_> = (0..3).map(|_| cluster.connection()).collect();
                    let mut new = vec![false; items.len()];
                    for b in 0..8 {
                        let start = ((b + w) % 8) * 3000;
                        let mut batch = f.idempotent_batch(&items[start..start + 3000]);
                        let ans = batch.check_and_insert_on(&mut conns).unwrap();
                        assert_eq!(ans.len(), 3000);
                        new[start..start + 3000].copy_from_slice(&ans);
                    }
                    new
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let twice = (0..items.len())
        .filter(|&i| new_per_writer.iter().filter(|w| w[i]).count() > 1)
        .count();
    let never = (0..items.len())
        .filter(|&i| new_per_writer.iter().all(|w| !w[i]))
        .count();
    assert_eq!(twice, 0, "items new twice");
    assert!(never <= 24, "{never} items were never new");
    assert_eq!(f.count(&mut conn).unwrap(), (items.len() - never) as u64);

    // Order: old and fresh items interleaved; each answer must be its own
    // item's (old ones present, so not new; fresh ones new but for a rare
    // false positive).
    let mixed: Vec<String> = (0..6000)
        .map(|i| match i % 3 {
            0 => format!("fresh-{i}"),
            _ => items[i * 4].clone(),
        })
        .collect();
    let mut conns: Vec<_> = (0..3).map(|_| cluster.connection()).collect();
    let mut batch = f.idempotent_batch(&mixed);
    let new = batch.check_and_insert_on(&mut conns).unwrap();
    let old_new = (0..6000).filter(|&i| i % 3 != 0 && new[i]).count();
    let fresh_seen = (0..6000).filter(|&i| i % 3 == 0 && !new[i]).count();
    assert_eq!(old_new, 0, "an old item answered new: answers out of order");
    assert!(fresh_seen <= 10, "{fresh_seen} fresh items answered seen");
    // Run again under its token, on other connections: the same answers,
    // nothing written twice.
    let count = f.count(&mut conn).unwrap();
    let mut other: Vec<_> = (0..2).map(|_| cluster.connection()).collect();
    let mut again = f
        .idempotent_batch(&mixed)
        .with_token(batch.token())
        .unwrap();
    assert_eq!(again.check_and_insert_on(&mut other).unwrap(), new);
    assert_eq!(f.count(&mut conn).unwrap(), count);
    // The plain fan-out answers in input order too.
    let present = f.contains_many_on(&mut conns, &mixed).unwrap();
    assert!((0..6000).all(|i| present[i]), "every item is present now");
    assert!(f.drop(&mut conn).unwrap());
}

/// A bloom filter `name` of 6 shards holding 5000 items, each `prefix`
/// and a number; the items.
fn six_shards_filled(
    conn: &mut redis::cluster::ClusterConnection,
    name: &str,
    prefix: &str,
) -> (ShardedFilter<rotabloom::kinds::Bloom>, Vec<String>) {
    let f = BloomFilter::builder(name)
        .capacity(60_000)
        .shards(6)
        .create_or_open(conn)
        .unwrap();
    let items: Vec<String> = (0..5000).map(|i| format!("{prefix}{i}")).collect();
    assert!(all(f.check_and_insert_many(conn, &items).unwrap()));
    (f, items)
}

/// A sharded filter dumped, dropped and restored is the same filter: same
/// shards count, kind and count, every item found; a restore never
/// overwrites; a truncated dump restores nothing and says what is missing.
fn dump_and_restore(cluster: &RedisCluster) {
    use rotabloom::dump;
    let mut conn = cluster.connection();
    let (f, items) = six_shards_filled(&mut conn, "dumped", "d");
    let count = f.count(&mut conn).unwrap();
    let mut file = Vec::new();
    let s = dump::dump(&mut conn, "dumped", &mut file).unwrap();
    assert_eq!((s.items, s.kind), (count, rotabloom::Kind::Bloom));
    assert!(file.starts_with(&dump::SHARDED_MAGIC));

    // Into an existing name: refused, nothing written.
    let before = keys_by_node(cluster, "rotabloom:*");
    let e = dump::restore(&mut conn, &file[..], None).unwrap_err();
    assert!(matches!(e, Error::AlreadyExists { .. }), "{e}");
    assert_eq!(keys_by_node(cluster, "rotabloom:*"), before);

    assert!(f.drop(&mut conn).unwrap());
    let r = dump::restore(&mut conn, &file[..], None).unwrap();
    assert_eq!(r.items, count);
    let g = ShardedFilter::<rotabloom::kinds::Bloom>::open(&mut conn, "dumped").unwrap();
    assert_eq!(g.shard_count(), 6);
    assert_eq!(g.count(&mut conn).unwrap(), count);
    assert!(all(g.contains_many(&mut conn, &items).unwrap()));
    let nodes: BTreeSet<usize> = keys_by_node(cluster, "rotabloom:{dumped:shard:*")
        .into_values()
        .collect();
    assert!(nodes.len() >= 2, "the restored shards are on {nodes:?}");
    // Under another name too, beside the original.
    dump::restore(&mut conn, &file[..], Some("copied")).unwrap();
    let c = ShardedFilter::<rotabloom::kinds::Any>::open(&mut conn, "copied").unwrap();
    assert!(all(c.contains_many(&mut conn, &items).unwrap()));
    assert!(c.drop(&mut conn).unwrap());

    // Truncated after some shards: nothing is left, and the error names
    // the first shard it lacks.
    let before = keys_by_node(cluster, "rotabloom:*");
    let cut = &file[..file.len() * 2 / 3];
    let e = dump::restore(&mut conn, cut, Some("cut")).unwrap_err();
    let Error::BadDump { reason } = &e else {
        panic!("{e}")
    };
    assert!(
        reason.contains("shard ") && reason.contains(" of 6"),
        "{reason}"
    );
    assert_eq!(
        keys_by_node(cluster, "rotabloom:*"),
        before,
        "nothing of the restore left"
    );
    // Without its end record.
    let e = dump::restore(&mut conn, &file[..file.len() - 10], Some("cut")).unwrap_err();
    assert!(e.to_string().contains("end record"), "{e}");
    assert_eq!(
        keys_by_node(cluster, "rotabloom:*"),
        before,
        "nothing of the restore left"
    );

    assert!(g.drop(&mut conn).unwrap());
}

/// The async dump of a sharded filter writes the blocking dump's bytes;
/// its async restore, through an async cluster connection, makes the same
/// filter under a new name (every item found, every shard's count), is
/// refused onto a name that exists as the blocking one is (nothing
/// written), and of a truncated file leaves nothing.
fn async_dump_and_restore(cluster: &RedisCluster) {
    use rotabloom::dump;
    let mut conn = cluster.connection();
    let (f, items) = six_shards_filled(&mut conn, "adumped", "ad");
    let mut blocking = Vec::new();
    let s = dump::dump(&mut conn, "adumped", &mut blocking).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (file, restored) = rt.block_on(async {
        let mut aconn = cluster.client().get_async_connection().await.unwrap();
        let mut file = Vec::new();
        let a = dump::dump_async(&mut aconn, "adumped", &mut file)
            .await
            .unwrap();
        assert_eq!(a, s);
        assert!(
            file == blocking,
            "the async dump differs from the blocking one"
        );

        // Onto a name that exists: refused as the blocking restore is,
        // nothing written.
        let before = keys_by_node(cluster, "rotabloom:*");
        let e = dump::restore_async(&mut aconn, &file[..], None)
            .await
            .unwrap_err();
        assert!(
            matches!(e, Error::AlreadyExists { ref name } if name == "adumped"),
            "{e}"
        );
        let e = dump::restore(&mut conn, &file[..], None).unwrap_err();
        assert!(
            matches!(e, Error::AlreadyExists { ref name } if name == "adumped"),
            "{e}"
        );
        assert_eq!(keys_by_node(cluster, "rotabloom:*"), before);

        // Truncated after some shards: refused, nothing left.
        let cut = &file[..file.len() * 2 / 3];
        let e = dump::restore_async(&mut aconn, cut, Some("acut"))
            .await
            .unwrap_err();
        assert!(matches!(e, Error::BadDump { .. }), "{e}");
        assert_eq!(keys_by_node(cluster, "rotabloom:*"), before);

        let r = dump::restore_async(&mut aconn, &file[..], Some("arestored"))
            .await
            .unwrap();
        let g = ShardedFilter::<rotabloom::kinds::Bloom>::open_async(&mut aconn, "arestored")
            .await
            .unwrap();
        let present = g.contains_many_async(&aconn, &items).await.unwrap();
        let missed = present.iter().filter(|&&p| !p).count();
        assert_eq!(missed, 0, "false negatives over the inserted items");
        (file, r)
    });
    assert_eq!(file.len(), blocking.len());
    assert_eq!(
        (
            restored.items,
            restored.kind,
            restored.generations,
            restored.blocks
        ),
        (s.items, s.kind, s.generations, s.blocks)
    );
    assert_eq!(restored.name, "arestored");
    let g = ShardedFilter::<rotabloom::kinds::Bloom>::open(&mut conn, "arestored").unwrap();
    assert!(g.is_sharded());
    assert_eq!(g.shard_count(), 6);
    assert_eq!(g.count(&mut conn).unwrap(), f.count(&mut conn).unwrap());
    // Every shard as its original: kind, count, epoch, and each
    // generation's size, hashes, count and bits set.
    let shards = |h: &ShardedFilter<rotabloom::kinds::Bloom>| {
        h.info(&mut cluster.connection())
            .unwrap()
            .into_iter()
            .map(|i| {
                let gens: Vec<_> = i
                    .generations
                    .iter()
                    .map(|g| (g.bits, g.hashes, g.count, g.set_bits))
                    .collect();
                (i.kind, i.count, i.epoch, gens)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(shards(&g), shards(&f));
    let nodes: BTreeSet<usize> = keys_by_node(cluster, "rotabloom:{arestored:shard:*")
        .into_values()
        .collect();
    assert!(nodes.len() >= 2, "the restored shards are on {nodes:?}");
    assert!(g.drop(&mut conn).unwrap());
    assert!(f.drop(&mut conn).unwrap());
}

/// A sharded idempotent batch sent again (its reply lost) answers as the
/// first time, shard by shard; under its token in a new process too.
fn idempotent_batches(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let f = BloomFilter::builder("once")
        .capacity(30_000)
        .shards(6)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..2000).map(|i| format!("o{i}")).collect();
    let mut batch = f.idempotent_batch(&items);
    let first = batch.check_and_insert(&mut conn).unwrap();
    assert!(all(first.clone()));
    let token = batch.token().to_string();
    // The same items under the same token, from a fresh handle: the
    // records answer "new" again, nothing is written twice.
    let g = ShardedFilter::<rotabloom::kinds::Bloom>::open(&mut conn, "once").unwrap();
    let mut again = g.idempotent_batch(&items).with_token(&token).unwrap();
    assert_eq!(again.check_and_insert(&mut conn).unwrap(), first);
    // A new token is a new write: nothing is new.
    let mut other = g.idempotent_batch(&items);
    assert!(other
        .check_and_insert(&mut conn)
        .unwrap()
        .iter()
        .all(|&b| !b));
    assert_eq!(f.count(&mut conn).unwrap(), 2000);
    assert!(f.drop(&mut conn).unwrap());
}

/// A 6-shard filter lies on all 3 masters; 8 writers racing over the same
/// items see each item new exactly once, and every item is found after.
fn placement_and_concurrent_writers(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let f = BloomFilter::builder("spread")
        .capacity(600_000)
        .error_rate(0.001)
        .shards(6)
        .create_or_open(&mut conn)
        .unwrap();
    assert_eq!(f.shard_count(), 6);
    let masters: BTreeSet<String> = f
        .masters(&mut conn)
        .unwrap()
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(masters.len(), 3, "6 shards over 3 masters");
    let nodes: BTreeSet<usize> = keys_of(cluster, "spread").values().copied().collect();
    assert!(nodes.len() >= 2, "keys on {} node(s)", nodes.len());
    // Each shard sized for its share, ceil(600000 / 6), and 6 sigma more.
    let info = f.info(&mut conn).unwrap();
    assert!(info
        .iter()
        .all(|i| i.generations[0].capacity == 100_000 + 1_898));

    // Opened again by name: the same shards.
    let again = ShardedFilter::<rotabloom::kinds::Bloom>::open(&mut conn, "spread").unwrap();
    assert_eq!(again.shard_names(), f.shard_names());
    // An unsharded open of a sharded name is refused, never "absent".
    assert!(matches!(
        BloomFilter::open(&mut conn, "spread"),
        Err(Error::UnsupportedFormat { .. })
    ));
    // Creating it again with another shard count is refused.
    assert!(matches!(
        BloomFilter::builder("spread")
            .capacity(600_000)
            .error_rate(0.001)
            .shards(3)
            .create_or_open(&mut conn),
        Err(Error::ParameterMismatch { .. })
    ));

    let items: Vec<String> = (0..40_000).map(|i| format!("https://e.com/{i}")).collect();
    let new_per_writer: Vec<Vec<bool>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|w| {
                let f = f.clone();
                let items = &items;
                s.spawn(move || {
                    let mut conns: Vec<_> = (0..3).map(|_| cluster.connection()).collect();
                    let mut new = vec![false; items.len()];
                    // Each writer walks the items from its own offset in
                    // batches of 1000, so writers meet on every item.
                    for b in 0..40 {
                        let start = ((b + w * 5) % 40) * 1000;
                        let ans = f
                            .check_and_insert_many_on(&mut conns, &items[start..start + 1000])
                            .unwrap();
                        for (i, a) in ans.into_iter().enumerate() {
                            new[start + i] = a;
                        }
                    }
                    new
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut twice = 0;
    let mut never = 0;
    for i in 0..items.len() {
        match new_per_writer.iter().filter(|w| w[i]).count() {
            0 => never += 1,
            1 => {}
            _ => twice += 1,
        }
    }
    assert_eq!(twice, 0, "items new twice");
    // An item never new is a false positive of its first insert: at 0.1%
    // and far below capacity, a handful at most.
    assert!(never <= 40, "{never} items were never new");
    let found = f.contains_many(&mut conn, &items).unwrap();
    assert_eq!(found.iter().filter(|&&b| !b).count(), 0, "false negatives");
    assert_eq!(f.count(&mut conn).unwrap(), (items.len() - never) as u64);

    assert!(f.drop(&mut conn).unwrap());
    assert_eq!(
        keys_of(cluster, "spread"),
        BTreeMap::new(),
        "drop leaves nothing"
    );
    assert!(!f.drop(&mut conn).unwrap());
}

/// A circular sharded filter keeps an item through N-1 rotations and
/// forgets it at the N-th; 16 racing `rotate_if_due` turn every shard once.
fn windows_across_shards(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
    let clock = Arc::new(ManualClock::new(t0));
    let f = CircularFilter::builder("window")
        .generations(3)
        .capacity(30_000)
        .schedule("1d")
        .clock(clock.clone())
        .shards(6)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..3000).map(|i| format!("w{i}")).collect();
    assert!(f.insert_many(&mut conn, &items).unwrap().iter().all(|&b| b));
    let epochs = |f: &ShardedFilter<rotabloom::kinds::Circular>, conn: &mut _| -> Vec<u64> {
        f.info(conn).unwrap().iter().map(|i| i.epoch).collect()
    };
    for day in 1..=3 {
        clock.set(t0 + chrono::Duration::days(day));
        // 16 cron hosts at once, each with its own handle and connection.
        // Each host's sweep over the 6 shards, timed: the shards' windows
        // differ by at most one sweep (docs/FORMAT.md §11.3).
        let swept: Vec<(usize, std::time::Duration)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..16)
                .map(|_| {
                    let clock = clock.clone();
                    s.spawn(move || {
                        let mut c = cluster.connection();
                        let h = ShardedFilter::<rotabloom::kinds::Circular>::open(&mut c, "window")
                            .unwrap()
                            .map_shards(|s| s.with_clock(clock.clone()));
                        let t = std::time::Instant::now();
                        let rotations = h
                            .rotate_if_due(&mut c)
                            .unwrap()
                            .iter()
                            .map(|r| match r {
                                Rotation::Rotated { rotations, .. } => *rotations as usize,
                                _ => 0,
                            })
                            .sum::<usize>();
                        (rotations, t.elapsed())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let rotated: usize = swept.iter().map(|(r, _)| r).sum();
        let longest = swept.iter().map(|(_, d)| *d).max().unwrap_or_default();
        eprintln!("day {day}: 16 concurrent sweeps over 6 shards, the longest {longest:?} (the skew bound)");
        // An open that finds a shard behind the root's target brings it
        // forward (docs/FORMAT.md §11.8), so some rotations are an open's:
        // the epochs below say each shard turned exactly once.
        assert!(
            (1..=6).contains(&rotated),
            "day {day}: {rotated} rotations reported"
        );
        assert_eq!(epochs(&f, &mut conn), vec![day as u64; 6]);
        let found = f.contains_many(&mut conn, &items).unwrap();
        let kept = found.iter().filter(|&&b| b).count();
        if day < 3 {
            assert_eq!(kept, items.len(), "day {day}: window holds");
        } else {
            assert!(kept <= 10, "day {day}: forgotten, but {kept} found");
        }
    }
    assert!(f.drop(&mut conn).unwrap());
}

/// One shard's keys deleted: every operation that needs it is an error
/// naming that shard.
fn a_missing_shard_is_loud(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let f = BloomFilter::builder("holed")
        .capacity(60_000)
        .shards(6)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..600).map(|i| format!("h{i}")).collect();
    f.insert_many(&mut conn, &items).unwrap();
    let lost = f.shard_names()[4].to_string();
    for (key, node) in keys_of(cluster, &lost) {
        let _: () = cluster.nodes()[node].connection().del(&key).unwrap();
    }
    // A batch's other shards answer: its error is partial, shard 4's
    // items named with its error.
    let is_shard_4 = |e: &Error| {
        let e = match e {
            Error::Partial(p) if p.failures.len() == 1 && p.failures[0].shard == 4 => {
                &p.failures[0].error
            }
            e => e,
        };
        matches!(e, Error::ShardMissing { shard: 4, shard_name, .. } if *shard_name == lost)
            && e.to_string().contains(&lost)
    };
    let e = f.contains_many(&mut conn, &items).unwrap_err();
    assert!(is_shard_4(&e), "{e}");
    let e = f.check_and_insert_many(&mut conn, &items).unwrap_err();
    assert!(is_shard_4(&e), "{e}");
    let e = f.count(&mut conn).unwrap_err();
    assert!(is_shard_4(&e), "{e}");
    let e = ShardedFilter::<rotabloom::kinds::Any>::open(&mut conn, "holed").unwrap_err();
    assert!(is_shard_4(&e), "{e}");
    // A dump, blocking or async, fails naming the shard.
    let e = rotabloom::dump::dump(&mut conn, "holed", &mut Vec::new()).unwrap_err();
    assert!(is_shard_4(&e), "{e}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let e = rt.block_on(async {
        let mut aconn = cluster.client().get_async_connection().await.unwrap();
        rotabloom::dump::dump_async(&mut aconn, "holed", &mut Vec::new()).await
    });
    let e = e.unwrap_err();
    assert!(is_shard_4(&e), "{e}");
    // Items routed elsewhere still answer.
    let elsewhere: Vec<&String> = items.iter().filter(|i| f.shard_of(i) != 4).collect();
    assert!(f
        .contains_many(&mut conn, &elsewhere)
        .unwrap()
        .iter()
        .all(|&b| b));
    assert!(f.drop(&mut conn).unwrap());
    assert_eq!(keys_of(cluster, "holed"), BTreeMap::new());
}

/// 3 masters of 48 MB: 60M items at 1% (72 MB) do not fit one, and fit
/// 6 shards; one master out of memory during a sharded create leaves
/// nothing anywhere.
fn bigger_than_any_master(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let huge = |conn: &mut redis::cluster::ClusterConnection, shards: u32| {
        BloomFilter::builder("huge")
            .capacity(60_000_000)
            .shards(shards)
            .create_or_open(conn)
    };
    let refused_leaving_nothing = |e: Error, what: &str| {
        assert!(
            matches!(e, Error::OutOfMemory { .. } | Error::MemoryFull { .. }),
            "{what}: {e}"
        );
        assert_eq!(
            keys_of(cluster, "huge"),
            BTreeMap::new(),
            "{what} leaves nothing"
        );
    };
    set_maxmemory(cluster, "48mb", "noeviction");
    refused_leaving_nothing(huge(&mut conn, 1).unwrap_err(), "unsharded");

    let f = huge(&mut conn, 6).unwrap();
    let items: Vec<String> = (0..10_000).map(|i| format!("big{i}")).collect();
    assert!(all(f.check_and_insert_many(&mut conn, &items).unwrap()));
    assert!(all(f.contains_many(&mut conn, &items).unwrap()));
    assert!(f.drop(&mut conn).unwrap());
    assert_eq!(keys_of(cluster, "huge"), BTreeMap::new());

    // The master that takes shards 2 and 5 (the third by node id) nearly
    // full: the sharded create fails there and leaves nothing anywhere.
    let mut ids: Vec<(String, usize)> = (0..3)
        .map(|i| {
            let mut c = cluster.nodes()[i].connection();
            (redis::cmd("CLUSTER").arg("MYID").query(&mut c).unwrap(), i)
        })
        .collect();
    ids.sort();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("8mb")
        .query(&mut cluster.nodes()[ids[2].1].connection())
        .unwrap();
    refused_leaving_nothing(
        huge(&mut conn, 6).unwrap_err(),
        "a sharded create with one master full",
    );
    set_maxmemory(cluster, "0", "noeviction");
}

/// Whether every answer is true.
fn all(answers: Vec<bool>) -> bool {
    answers.iter().all(|&b| b)
}

/// Async batches fan out over clones of one cluster connection.
fn async_batches(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let f = BloomFilter::builder("fan")
        .capacity(30_000)
        .shards(3)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..3000).map(|i| format!("a{i}")).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let aconn = cluster.client().get_async_connection().await.unwrap();
        let new = f.check_and_insert_many_async(&aconn, &items).await.unwrap();
        assert!(new.iter().all(|&b| b));
        let again = f.check_and_insert_many_async(&aconn, &items).await.unwrap();
        assert!(again.iter().all(|&b| !b));
        let mut a2 = aconn.clone();
        let g = ShardedFilter::<rotabloom::kinds::Bloom>::open_async(&mut a2, "fan")
            .await
            .unwrap();
        assert!(g
            .contains_many_async(&aconn, &items)
            .await
            .unwrap()
            .iter()
            .all(|&b| b));
    });
    assert_eq!(f.count(&mut conn).unwrap(), 3000);
    assert!(f.drop(&mut conn).unwrap());
}

/// Generations of every shard, shard 0 first.
fn generations<K: rotabloom::FilterKind>(
    f: &ShardedFilter<K>,
    conn: &mut redis::Connection,
) -> Vec<usize> {
    f.info(conn)
        .unwrap()
        .iter()
        .map(|i| i.generations.len())
        .collect()
}

/// `expand` adds a generation to every shard, each by its own
/// compare-and-set: a handle that saw the filter before is superseded on
/// every shard, and nothing is expanded twice. Items stay found.
#[test]
fn a_sharded_expand_grows_every_shard_once() {
    let server = harness::RedisServer::start();
    let mut conn = server.connection();
    let f = rotabloom::ExpandingFilter::builder("grow")
        .capacity(600)
        .shards(3)
        .create_or_open(&mut conn)
        .unwrap();
    let stale = ShardedFilter::<rotabloom::kinds::Expanding>::open(&mut conn, "grow").unwrap();
    let items: Vec<String> = (0..300).map(|i| format!("g{i}")).collect();
    assert!(all(f.check_and_insert_many(&mut conn, &items).unwrap()));
    assert_eq!(generations(&f, &mut conn), vec![1, 1, 1]);
    assert_eq!(f.expand(&mut conn).unwrap(), vec![true, true, true]);
    assert_eq!(generations(&f, &mut conn), vec![2, 2, 2]);
    assert_eq!(stale.expand(&mut conn).unwrap(), vec![false, false, false]);
    assert_eq!(generations(&f, &mut conn), vec![2, 2, 2], "not twice");
    assert!(all(f.contains_many(&mut conn, &items).unwrap()));
    assert!(f
        .check_and_insert_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| !b));
}

/// `convert_bloom` turns every shard into an expanding one and records the
/// kind in the root; a run that stopped half-way (one shard converted by
/// hand) is finished by the next, and every item stays found.
#[test]
fn a_sharded_convert_is_resumable() {
    use rotabloom::kinds::Any;
    let server = harness::RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("conv")
        .capacity(900)
        .shards(3)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..300).map(|i| format!("c{i}")).collect();
    assert!(all(f.check_and_insert_many(&mut conn, &items).unwrap()));
    // As a run that stopped after shard 1: that one shard converted.
    let one = f.shard(1).unwrap().name().to_string();
    rotabloom::ExpandingFilter::builder(&one)
        .growth(4.0)
        .convert_bloom(&mut conn)
        .unwrap();
    // A reader refuses it: shard 1 is of another kind than the root.
    assert!(matches!(
        ShardedFilter::<Any>::open(&mut conn, "conv"),
        Err(Error::ShardsDisagree { shards, .. }) if shards == vec![1]
    ));
    let half = ShardedFilter::<Any>::open_unconverged(&mut conn, "conv").unwrap();
    assert!(half.expanding().is_none(), "shards 0 and 2 are still bloom");
    let growth = rotabloom::ExpandingFilter::builder("conv").growth(4.0);
    let mut said = Vec::new();
    let e = half
        .convert_bloom(&mut conn, &growth, |j, converted| said.push((j, converted)))
        .unwrap();
    assert_eq!(said, vec![(0, true), (1, false), (2, true)]);
    assert!(all(e.contains_many(&mut conn, &items).unwrap()));
    let root: String = conn.hget("rotabloom:{conv}:meta", "kind").unwrap();
    assert_eq!(root, "expanding");
    let again = ShardedFilter::<Any>::open(&mut conn, "conv").unwrap();
    assert_eq!(again.kind().unwrap(), rotabloom::Kind::Expanding);
    // Converting again converts nothing.
    let mut twice = Vec::new();
    again
        .convert_bloom(&mut conn, &growth, |j, c| twice.push((j, c)))
        .unwrap();
    assert_eq!(twice, vec![(0, false), (1, false), (2, false)]);

    // A circular filter is refused before any shard changes.
    let ring = CircularFilter::builder("ring")
        .generations(2)
        .capacity(300)
        .shards(2)
        .create_or_open(&mut conn)
        .unwrap();
    let any = ShardedFilter::<Any>::open(&mut conn, ring.name()).unwrap();
    let err = any
        .convert_bloom(&mut conn, &growth, |_, _| {})
        .unwrap_err();
    assert!(matches!(err, Error::KindMismatch { .. }), "{err}");
}

/// An empty sharded batch answers the delivery it was made with.
#[test]
fn an_empty_sharded_batch_keeps_its_delivery() {
    use rotabloom::Delivery;
    let server = harness::RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("empty")
        .capacity(300)
        .shards(3)
        .create_or_open(&mut conn)
        .unwrap();
    for d in [Delivery::ExactlyOnce, Delivery::AtLeastOnce] {
        let b = f.idempotent_batch(Vec::<&str>::new()).with_delivery(d);
        assert!(b.is_empty());
        assert_eq!(b.delivery(), d);
    }
}
