//! Whole-filter changes of a sharded filter (docs/FORMAT.md §11.8) on a
//! private 3-master Redis Cluster whose master of one shard refuses writes
//! (`maxmemory 1`): the target stays in the root, the other shards reach
//! it, readers refuse the filter naming the shard behind, and a rerun
//! after the fault finishes the change without doing any shard's part
//! twice. Then a root from before targets, on one server.

#[path = "support/harness.rs"]
mod harness;

use chrono::{TimeZone, Utc};
use harness::{RedisCluster, RedisServer};
use redis::Commands;
use rotabloom::kinds::{Any, Circular};
use rotabloom::{
    BloomFilter, CircularFilter, Error, ExpandingFilter, FilterKind, ManualClock, Rotation,
    ShardOff, ShardedFilter,
};
use std::sync::Arc;

fn meta(name: &str) -> String {
    format!("rotabloom:{{{name}}}:meta")
}

/// The node that holds `key`: only its master finds it.
fn node_of(cluster: &RedisCluster, key: &str) -> usize {
    cluster
        .nodes()
        .iter()
        .position(|n| n.connection().exists::<_, bool>(key).unwrap_or(false))
        .unwrap_or_else(|| panic!("{key} is on no node"))
}

fn maxmemory(node: &RedisServer, value: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(value)
        .query(&mut node.connection())
        .unwrap();
}

/// A shard whose master is not the root's (the root can still record a
/// target while that master refuses writes), and that master's index.
fn faultable<K: FilterKind>(cluster: &RedisCluster, f: &ShardedFilter<K>) -> (u32, usize) {
    let root = node_of(cluster, &meta(f.name()));
    (0..f.shard_count())
        .map(|j| (j, node_of(cluster, &meta(f.shard(j).unwrap().name()))))
        .find(|&(_, node)| node != root)
        .expect("a shard on another master than the root")
}

fn epochs(f: &ShardedFilter<Circular>, conn: &mut redis::cluster::ClusterConnection) -> Vec<u64> {
    f.info(conn).unwrap().iter().map(|i| i.epoch).collect()
}

fn periods(
    f: &ShardedFilter<Circular>,
    conn: &mut redis::cluster::ClusterConnection,
) -> Vec<String> {
    f.info(conn)
        .unwrap()
        .iter()
        .map(|i| i.fields["period"].clone())
        .collect()
}

fn rotated(r: &[Rotation]) -> Vec<u32> {
    r.iter()
        .map(|r| match r {
            Rotation::Rotated { rotations, .. } => *rotations,
            _ => 0,
        })
        .collect()
}

/// `ShardsDisagree`'s shards, or a panic naming what came instead.
fn disagreeing<T: std::fmt::Debug>(r: Result<T, Error>) -> Vec<u32> {
    match r {
        Err(Error::ShardsDisagree { shards, .. }) => shards,
        other => panic!("not ShardsDisagree: {other:?}"),
    }
}

/// A 3-shard bloom filter `name` holding 300 items, and the items.
fn filled(
    conn: &mut redis::cluster::ClusterConnection,
    name: &str,
) -> (ShardedFilter<rotabloom::kinds::Bloom>, Vec<String>) {
    let f = BloomFilter::builder(name)
        .capacity(900)
        .shards(3)
        .create_or_open(conn)
        .unwrap();
    let items: Vec<String> = (0..300).map(|i| format!("{name}{i}")).collect();
    assert!(f.insert_many(conn, &items).unwrap().iter().all(|&b| b));
    (f, items)
}

#[test]
fn whole_filter_changes_with_one_master_refusing_writes() {
    let cluster = RedisCluster::start();
    a_rotation_refused_by_one_master_is_finished_by_a_rerun(&cluster);
    a_conversion_refused_by_one_master_is_finished_by_a_rerun(&cluster);
    a_clear_refused_by_one_master_is_finished_by_a_rerun(&cluster);
    an_expansion_refused_by_one_master_is_finished_by_a_rerun(&cluster);
}

/// An expansion refused on one shard: the root holds every shard's
/// target, the rerun grows that shard alone (each ends with 2 generations,
/// none with 3).
fn an_expansion_refused_by_one_master_is_finished_by_a_rerun(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let f = ExpandingFilter::builder("grow")
        .capacity(900)
        .shards(3)
        .create_or_open(&mut conn)
        .unwrap();
    let (j, node) = faultable(cluster, &f);
    maxmemory(&cluster.nodes()[node], "1");
    let failed = f.expand(&mut conn);
    maxmemory(&cluster.nodes()[node], "0");
    assert_eq!(disagreeing(failed), vec![j]);
    let targets: Vec<String> = (0..3)
        .map(|s| {
            conn.hget(meta("grow"), format!("target.expanded.{s}"))
                .unwrap()
        })
        .collect();
    assert!(targets.iter().all(|t| t == &targets[0]), "{targets:?}");
    let h =
        ShardedFilter::<rotabloom::kinds::Expanding>::open_unconverged(&mut conn, "grow").unwrap();
    let grown = h.expand(&mut conn).unwrap();
    assert_eq!(grown, (0..3).map(|s| s == j).collect::<Vec<_>>());
    let gens: Vec<usize> = h
        .info(&mut conn)
        .unwrap()
        .iter()
        .map(|i| i.generations.len())
        .collect();
    assert_eq!(gens, vec![2, 2, 2], "every shard expanded once");
    assert!(h.drop(&mut conn).unwrap());
}

/// Reproduction 2 of issue 28: the scheduled rotation of day 1 fails on
/// one shard's master; the others rotate, the root holds the target; the
/// rerun rotates that shard alone, so every shard ends at one rotation
/// and one period (no shard's items forgotten a period early); then 8
/// concurrent schedulers turn day 2 once while readers open the filter
/// (each shard rotated once, reported at most once), and day 3 once with
/// no readers (reported exactly once); a manual rotation refused
/// the same way is finished by the next `rotate`, not doubled.
fn a_rotation_refused_by_one_master_is_finished_by_a_rerun(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap();
    let clock = Arc::new(ManualClock::new(t0));
    let f = CircularFilter::builder("rot")
        .generations(3)
        .capacity(3000)
        .schedule("1d")
        .clock(clock.clone())
        .shards(3)
        .create_or_open(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..600).map(|i| format!("r{i}")).collect();
    assert!(f.insert_many(&mut conn, &items).unwrap().iter().all(|&b| b));
    let (j, node) = faultable(cluster, &f);
    let others =
        |v: u64, at_j: u64| -> Vec<u64> { (0..3).map(|s| if s == j { at_j } else { v }).collect() };

    clock.set(t0 + chrono::Duration::days(1));
    maxmemory(&cluster.nodes()[node], "1");
    let failed = f.rotate_if_due(&mut conn);
    // Readers refuse the filter while the master refuses writes (they
    // cannot bring shard j forward), naming the shard behind.
    let opened = ShardedFilter::<Circular>::open(&mut conn, "rot");
    maxmemory(&cluster.nodes()[node], "0");
    let opened = disagreeing(opened);
    assert_eq!(opened, vec![j]);
    let err = failed.unwrap_err();
    assert!(
        err.to_string().contains("OOM") || err.to_string().contains("memory"),
        "{err}"
    );
    assert!(err.to_string().contains(&format!("not on [{j}]")), "{err}");
    assert_eq!(disagreeing::<()>(Err(err)), vec![j]);
    assert_eq!(epochs(&f, &mut conn), others(1, 0));
    let target: String = conn.hget(meta("rot"), "target.epoch").unwrap();
    assert_eq!(target, "1", "the target is in the root");

    let any = ShardedFilter::<Any>::open_unconverged(&mut conn, "rot").unwrap();
    let found = any.disagreements(&mut conn).unwrap();
    assert!(found
        .iter()
        .all(|d| d.shard == j && d.off == ShardOff::Behind));
    assert_eq!(found.len(), 2, "rotations and period: {found:?}");

    // The rerun rotates shard j alone; the next finds nothing owed.
    let again = f.rotate_if_due(&mut conn).unwrap();
    assert_eq!(
        rotated(&again),
        others(0, 1).iter().map(|&v| v as u32).collect::<Vec<_>>()
    );
    assert_eq!(epochs(&f, &mut conn), vec![1, 1, 1]);
    let p = periods(&f, &mut conn);
    assert!(p.iter().all(|x| *x == p[0]), "periods {p:?}");
    let third = f.rotate_if_due(&mut conn).unwrap();
    assert!(
        third.iter().all(|r| matches!(r, Rotation::NotDue { .. })),
        "{third:?}"
    );
    assert!(ShardedFilter::<Circular>::open(&mut conn, "rot").is_ok());
    assert!(f
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| b));

    // Day 2: 8 schedulers at once turn the whole filter once, while 4
    // readers open it over and over. The schedulers open their handles
    // first: an open that meets a rotation half made brings the shards
    // behind forward itself, and that rotation is no scheduler's to
    // report (so the schedulers' sum is exact only among them).
    clock.set(t0 + chrono::Duration::days(2));
    let total = schedulers_beside_readers(cluster, &clock, 4);
    assert_eq!(
        epochs(&f, &mut conn),
        vec![2, 2, 2],
        "turned once, not twice"
    );
    assert!(total <= 3, "no shard's rotation reported twice: {total}");
    // Inserted before day 1: still in every shard's window (3 periods).
    assert!(f
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
    // The schedulers' own rotations, without the readers' help.
    clock.set(t0 + chrono::Duration::days(3));
    let total = schedulers_beside_readers(cluster, &clock, 0);
    assert_eq!(total, 3, "each of 3 shards rotated once, reported once");
    assert_eq!(epochs(&f, &mut conn), vec![3, 3, 3]);

    // A manual rotation refused on shard j, finished by the next one.
    maxmemory(&cluster.nodes()[node], "1");
    let failed = f.rotate(&mut conn);
    maxmemory(&cluster.nodes()[node], "0");
    assert_eq!(disagreeing(failed), vec![j]);
    assert_eq!(epochs(&f, &mut conn), others(4, 3));
    let finished = f.rotate(&mut conn).unwrap();
    assert_eq!(
        rotated(&finished),
        others(0, 1).iter().map(|&v| v as u32).collect::<Vec<_>>()
    );
    assert_eq!(
        epochs(&f, &mut conn),
        vec![4, 4, 4],
        "finished, not rotated twice"
    );
    assert!(f.drop(&mut conn).unwrap());
}

/// 8 schedulers calling `rotate_if_due` on filter "rot" at once, their
/// handles opened before a barrier, while `readers` threads open it over
/// and over until they are done (each at least once, every open asserted
/// to succeed): the rotations the schedulers report, in all.
fn schedulers_beside_readers(
    cluster: &RedisCluster,
    clock: &Arc<ManualClock>,
    readers: usize,
) -> u32 {
    let ready = std::sync::Barrier::new(8);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..readers)
            .map(|_| {
                s.spawn(|| {
                    let mut c = cluster.connection();
                    loop {
                        ShardedFilter::<Circular>::open(&mut c, "rot").unwrap();
                        if done.load(std::sync::atomic::Ordering::SeqCst) {
                            break;
                        }
                    }
                })
            })
            .collect();
        let runs: Vec<_> = (0..8)
            .map(|_| {
                let ready = &ready;
                s.spawn(move || {
                    let mut c = cluster.connection();
                    let h = ShardedFilter::<Circular>::open(&mut c, "rot")
                        .unwrap()
                        .map_shards(|s| s.with_clock(clock.clone()));
                    ready.wait();
                    rotated(&h.rotate_if_due(&mut c).unwrap())
                        .iter()
                        .sum::<u32>()
                })
            })
            .collect();
        let total = runs.into_iter().map(|h| h.join().unwrap()).sum();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        for r in readers {
            r.join().unwrap();
        }
        total
    })
}

/// Reproduction 3 of issue 28: a conversion refused on one shard leaves
/// the root saying `expanding` (the target) over that bloom shard:
/// readers refuse it naming the shard, and the rerun converts only it.
fn a_conversion_refused_by_one_master_is_finished_by_a_rerun(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let (f, items) = filled(&mut conn, "conv");
    let (j, node) = faultable(cluster, &f);
    let growth = ExpandingFilter::builder("conv").growth(2.0);
    let any = ShardedFilter::<Any>::open(&mut conn, "conv").unwrap();
    maxmemory(&cluster.nodes()[node], "1");
    let failed = any.convert_bloom(&mut conn, &growth, |_, _| {});
    maxmemory(&cluster.nodes()[node], "0");
    assert_eq!(disagreeing(failed.map(drop)), vec![j]);
    let kind: String = conn.hget(meta("conv"), "kind").unwrap();
    assert_eq!(kind, "expanding", "the target is in the root");
    assert_eq!(
        disagreeing(ShardedFilter::<Any>::open(&mut conn, "conv")),
        vec![j]
    );
    // Its dump refuses loudly rather than write a file restore refuses.
    let mut file = Vec::new();
    assert_eq!(
        disagreeing(rotabloom::dump::dump(&mut conn, "conv", &mut file)),
        vec![j]
    );

    let half = ShardedFilter::<Any>::open_unconverged(&mut conn, "conv").unwrap();
    let mut said = Vec::new();
    let e = half
        .convert_bloom(&mut conn, &growth, |s, converted| said.push((s, converted)))
        .unwrap();
    let want: Vec<(u32, bool)> = (0..3).map(|s| (s, s == j)).collect();
    assert_eq!(said, want, "only shard {j} converted by the rerun");
    assert!(e
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
    let again = ShardedFilter::<Any>::open(&mut conn, "conv").unwrap();
    assert_eq!(again.kind().unwrap(), rotabloom::Kind::Expanding);
    assert!(again.drop(&mut conn).unwrap());
}

/// A clear refused on one shard: the root holds the clear target, readers
/// refuse the filter naming the shard while its master refuses writes,
/// and the first open after brings it forward: it clears that shard alone
/// (the others keep what was inserted since).
fn a_clear_refused_by_one_master_is_finished_by_a_rerun(cluster: &RedisCluster) {
    let mut conn = cluster.connection();
    let (f, items) = filled(&mut conn, "wipe");
    let (j, node) = faultable(cluster, &f);
    maxmemory(&cluster.nodes()[node], "1");
    let failed = f.clear(&mut conn);
    let opened = ShardedFilter::<Any>::open(&mut conn, "wipe").map(drop);
    maxmemory(&cluster.nodes()[node], "0");
    assert_eq!(disagreeing(failed), vec![j]);
    assert_eq!(
        disagreeing(opened),
        vec![j],
        "refused while shard {j} cannot be cleared"
    );
    let target: String = conn.hget(meta("wipe"), "target.cleared").unwrap();
    assert_eq!(target, "1");
    // Inserted after the clear reached the other shards: kept by the rerun.
    let later: Vec<String> = (0..300)
        .map(|i| format!("l{i}"))
        .filter(|i| f.shard_of(i) != j)
        .collect();
    assert!(f.insert_many(&mut conn, &later).unwrap().iter().all(|&b| b));
    // The next open, the master writable again, clears shard j on its way.
    let again = ShardedFilter::<Any>::open(&mut conn, "wipe").unwrap();
    assert!(again.disagreements(&mut conn).unwrap().is_empty());
    assert!(again
        .contains_many(&mut conn, &later)
        .unwrap()
        .iter()
        .all(|&b| b));
    let old = again.contains_many(&mut conn, &items).unwrap();
    assert!(old.iter().filter(|&&b| b).count() <= 5, "cleared");
    assert!(again.drop(&mut conn).unwrap());
}

/// A root from before targets (`sharded-1` without `target.*`), whose
/// shards were rotated apart (as reproduction 2 left them): read with the
/// furthest shard as its target, finished by the next rotation; the one
/// after writes the targets; a shard rotated on its own then is astray.
#[test]
fn a_root_without_targets_is_read_as_its_furthest_shard() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = CircularFilter::builder("old")
        .generations(3)
        .capacity(900)
        .shards(3)
        .create_or_open(&mut conn)
        .unwrap();
    // As an older rotabloom left it: shard 0 rotated alone, no targets.
    f.shard(0).unwrap().rotate(&mut conn).unwrap();
    let fields: Vec<String> = conn.hkeys(meta("old")).unwrap();
    assert!(
        fields.iter().all(|k| !k.starts_with("target.")),
        "{fields:?}"
    );
    let h = ShardedFilter::<Circular>::open_unconverged(&mut conn, "old").unwrap();
    let found = h.disagreements(&mut conn).unwrap();
    assert_eq!(
        found.iter().map(|d| d.shard).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!(found.iter().all(|d| d.off == ShardOff::Behind));
    let done = h.rotate(&mut conn).unwrap();
    assert_eq!(
        rotated(&done),
        vec![0, 1, 1],
        "finished, not a new rotation"
    );
    let infos = h.info(&mut conn).unwrap();
    assert_eq!(
        infos.iter().map(|i| i.epoch).collect::<Vec<_>>(),
        vec![1, 1, 1]
    );
    // The next rotation records its target (and the others in force).
    let next = h.rotate(&mut conn).unwrap();
    assert_eq!(rotated(&next), vec![1, 1, 1]);
    let target: String = conn.hget(meta("old"), "target.epoch").unwrap();
    let cleared: String = conn.hget(meta("old"), "target.cleared").unwrap();
    assert_eq!((target.as_str(), cleared.as_str()), ("2", "0"));
    assert!(ShardedFilter::<Circular>::open(&mut conn, "old").is_ok());
    // A shard rotated on its own now is past the target: astray, refused
    // by readers (no target brings it back), and by the next rotation.
    h.shard(2).unwrap().rotate(&mut conn).unwrap();
    assert_eq!(
        disagreeing(ShardedFilter::<Circular>::open(&mut conn, "old")),
        vec![2]
    );
    assert_eq!(disagreeing(h.rotate(&mut conn)), vec![2]);
}
