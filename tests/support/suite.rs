//! The functional suite of the base filter, run against every kind of
//! connection (standalone and cluster, blocking and async).
#![allow(dead_code)]

use rotabloom::{BloomFilter, Error, Kind};

/// A small deterministic generator (xorshift64*), so property tests need no
/// extra dependency and failures replay.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub fn sync_suite<C: redis::ConnectionLike>(conn: &mut C, prefix: &str) {
    let name = format!("{prefix}-suite");
    let f = BloomFilter::builder(&name)
        .capacity(10_000)
        .error_rate(0.01)
        .create_or_open(conn)
        .unwrap();
    assert_eq!(f.name(), name);
    assert_eq!(f.params().hashes(), 7);

    assert!(!f.contains(conn, "a").unwrap());
    assert!(f.insert(conn, "a").unwrap());
    assert!(!f.insert(conn, "a").unwrap());
    assert!(f.contains(conn, "a").unwrap());
    assert!(f.check_and_insert(conn, "b").unwrap());
    assert!(!f.check_and_insert(conn, b"b".as_slice()).unwrap());

    // Batches keep input order; a repeat within a batch is new once.
    let batch = ["c", "d", "c", "a", "e"];
    assert_eq!(
        f.check_and_insert_many(conn, batch).unwrap(),
        vec![true, true, false, false, true]
    );
    assert_eq!(
        f.contains_many(conn, ["e", "zz", "c"]).unwrap(),
        vec![true, false, true]
    );
    assert_eq!(f.insert_many(conn, ["f", "a"]).unwrap(), vec![true, false]);
    assert!(f.insert_many(conn, Vec::<&str>::new()).unwrap().is_empty());
    assert_eq!(f.count(conn).unwrap(), 6);

    // A batch larger than one script call and one round trip.
    let many: Vec<String> = (0..5_000).map(|i| format!("many-{i}")).collect();
    let new = f.check_and_insert_many(conn, &many).unwrap();
    assert_eq!(new.len(), many.len());
    assert!(new.iter().filter(|&&b| b).count() >= 4_950);
    assert!(f.contains_many(conn, &many).unwrap().iter().all(|&b| b));

    let info = f.info(conn).unwrap();
    assert_eq!(info.kind, Kind::Bloom);
    assert_eq!(info.generations.len(), 1);
    let g = &info.generations[0];
    assert!(g.set_bits > 0 && g.fill_ratio > 0.0 && g.fill_ratio < 1.0);
    assert_eq!(g.memory_bytes, g.bits.div_ceil(8));
    assert!(info.false_positive_rate > 0.0 && info.false_positive_rate < 0.02);

    // Handles are cheap clones sharing one view.
    let g2 = f.clone();
    assert!(g2.contains(conn, "many-1").unwrap());

    f.clear(conn).unwrap();
    assert_eq!(f.count(conn).unwrap(), 0);
    assert!(!f.contains(conn, "a").unwrap());
    assert_eq!(f.info(conn).unwrap().generations[0].set_bits, 0);

    assert!(f.drop(conn).unwrap());
    assert!(matches!(f.insert(conn, "a"), Err(Error::NotFound { .. })));
    assert!(matches!(
        BloomFilter::open(conn, &name),
        Err(Error::NotFound { .. })
    ));
}

/// The blocking and the async suite, over connections `target` opens.
pub fn suites_over(target: &rotabloom::connect::Target, prefix: &str) {
    let mut conn = target.connect().unwrap();
    sync_suite(&mut conn, prefix);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut conn = target.connect_async().await.unwrap();
        async_suite(&mut conn, prefix).await;
    });
}

pub async fn async_suite<C: redis::aio::ConnectionLike + Send>(conn: &mut C, prefix: &str) {
    let name = format!("{prefix}-asuite");
    let f = BloomFilter::builder(&name)
        .capacity(10_000)
        .error_rate(0.01)
        .create_or_open_async(conn)
        .await
        .unwrap();
    let f2 = BloomFilter::open_async(conn, &name).await.unwrap();
    assert!(!f.contains_async(conn, "a").await.unwrap());
    assert!(f.insert_async(conn, "a").await.unwrap());
    assert!(f2.contains_async(conn, "a").await.unwrap());
    assert!(f.check_and_insert_async(conn, "b").await.unwrap());
    assert!(!f.check_and_insert_async(conn, "b").await.unwrap());
    let batch = ["c", "d", "c", "a"];
    assert_eq!(
        f.check_and_insert_many_async(conn, batch).await.unwrap(),
        vec![true, true, false, false]
    );
    assert_eq!(
        f.contains_many_async(conn, ["d", "zz"]).await.unwrap(),
        vec![true, false]
    );
    assert_eq!(
        f.insert_many_async(conn, ["e", "a"]).await.unwrap(),
        vec![true, false]
    );
    assert_eq!(f.count_async(conn).await.unwrap(), 5);
    let many: Vec<String> = (0..5_000).map(|i| format!("many-{i}")).collect();
    f.insert_many_async(conn, &many).await.unwrap();
    assert!(f
        .contains_many_async(conn, &many)
        .await
        .unwrap()
        .iter()
        .all(|&b| b));
    let info = f.info_async(conn).await.unwrap();
    assert!(info.generations[0].set_bits > 0);
    f.clear_async(conn).await.unwrap();
    assert_eq!(f.count_async(conn).await.unwrap(), 0);
    assert!(f.drop_async(conn).await.unwrap());
    assert!(!f2.drop_async(conn).await.unwrap());
}

/// Keys of the filter `name` that exist in Redis, sorted.
pub fn keys_of<C: redis::ConnectionLike>(conn: &mut C, name: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("rotabloom:{{{name}}}:*"))
            .arg("COUNT")
            .arg(1000)
            .query(conn)
            .unwrap();
        keys.extend(batch);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

pub fn expanding_suite<C: redis::ConnectionLike>(
    conn: &mut C,
    prefix: &str,
    keys: &dyn Fn(&str) -> Vec<String>,
) {
    use rotabloom::ExpandingFilter;
    let name = format!("{prefix}-exp");
    let f = ExpandingFilter::builder(&name)
        .capacity(500)
        .error_rate(0.01)
        .create_or_open(conn)
        .unwrap();
    let items: Vec<String> = (0..5_000).map(|i| format!("e{i}")).collect();
    let new = f.check_and_insert_many(conn, &items).unwrap();
    let info = f.info(conn).unwrap();
    // 500 + 1000 + 2000 < 5000 - false positives < 7500: four generations.
    assert_eq!(info.generations.len(), 4, "{:?}", info.generations);
    assert_eq!(info.count, new.iter().filter(|&&b| b).count() as u64);
    for g in &info.generations[..3] {
        assert_eq!(
            g.count, g.capacity,
            "a frozen generation holds exactly its capacity"
        );
    }
    assert!(f.contains_many(conn, &items).unwrap().iter().all(|&b| b));
    assert!(!f.check_and_insert(conn, "e1").unwrap());
    assert!(f.expand(conn).unwrap());
    assert_eq!(f.generations().len(), 5);
    assert!(f.contains(conn, "e4999").unwrap());
    assert!(f.drop(conn).unwrap());
    assert!(keys(&name).is_empty());
}

pub async fn expanding_suite_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    prefix: &str,
) {
    use rotabloom::ExpandingFilter;
    let name = format!("{prefix}-aexp");
    let f = ExpandingFilter::builder(&name)
        .capacity(500)
        .error_rate(0.01)
        .create_or_open_async(conn)
        .await
        .unwrap();
    let items: Vec<String> = (0..5_000).map(|i| format!("e{i}")).collect();
    f.check_and_insert_many_async(conn, &items).await.unwrap();
    let info = f.info_async(conn).await.unwrap();
    assert_eq!(info.generations.len(), 4);
    assert!(f
        .contains_many_async(conn, &items)
        .await
        .unwrap()
        .iter()
        .all(|&b| b));
    assert!(f.expand_async(conn).await.unwrap());
    assert!(f.drop_async(conn).await.unwrap());
}

pub fn circular_suite<C: redis::ConnectionLike>(
    conn: &mut C,
    prefix: &str,
    keys: &dyn Fn(&str) -> Vec<String>,
) {
    use rotabloom::{CircularFilter, Mode, Rotation};
    for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
        let name = format!("{prefix}-circ-{}", mode.as_str());
        let f = CircularFilter::builder(&name)
            .generations(3)
            .mode(mode)
            .capacity(2_000)
            .error_rate(0.01)
            .create_or_open(conn)
            .unwrap();
        let items: Vec<String> = (0..1_000).map(|i| format!("c{i}")).collect();
        assert!(
            f.check_and_insert_many(conn, &items)
                .unwrap()
                .iter()
                .filter(|&&b| b)
                .count()
                > 980
        );
        assert!(!f.check_and_insert(conn, "c5").unwrap());
        assert!(matches!(
            f.rotate(conn).unwrap(),
            Rotation::Rotated {
                rotations: 1,
                epoch: 1,
                ..
            }
        ));
        assert!(f.contains_many(conn, &items).unwrap().iter().all(|&b| b));
        f.rotate(conn).unwrap();
        assert!(f.contains(conn, "c5").unwrap());
        f.rotate(conn).unwrap();
        assert!(
            !f.contains(conn, "c5").unwrap(),
            "forgotten after N rotations"
        );
        assert_eq!(f.info(conn).unwrap().epoch, 3);
        assert_eq!(
            keys(&name).len(),
            2 + 3,
            "meta, fence and three generations"
        );
        assert!(f.drop(conn).unwrap());
        assert!(keys(&name).is_empty());
    }
}

pub async fn circular_suite_async<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
    prefix: &str,
) {
    use rotabloom::{CircularFilter, Mode, Rotation};
    for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
        let name = format!("{prefix}-acirc-{}", mode.as_str());
        let f = CircularFilter::builder(&name)
            .generations(2)
            .mode(mode)
            .capacity(1_000)
            .schedule("7d")
            .create_or_open_async(conn)
            .await
            .unwrap();
        assert!(f.check_and_insert_async(conn, "x").await.unwrap());
        assert!(matches!(
            f.rotate_if_due_async(conn).await.unwrap(),
            Rotation::NotDue { .. }
        ));
        f.rotate_async(conn).await.unwrap();
        assert!(f.contains_async(conn, "x").await.unwrap());
        f.rotate_async(conn).await.unwrap();
        assert!(!f.contains_async(conn, "x").await.unwrap());
        assert!(f.drop_async(conn).await.unwrap());
    }
}

/// A writer's check-and-insert of one chunk: the answers, true for new.
pub type CheckInsert = Box<dyn FnMut(&mut redis::Connection, &[String]) -> Vec<bool>>;

/// `writers` threads with their own connections, started together; every
/// item of `items` is offered by two of them (item `i` by writers
/// `i % writers` and the next), in chunks of `chunk`, through the
/// check-and-insert `open` gives each. Returns every item some writer was
/// told is new, after asserting that none was told so twice.
pub fn offered_twice(
    client: &redis::Client,
    writers: usize,
    items: &[String],
    chunk: usize,
    open: impl Fn(&mut redis::Connection) -> CheckInsert + Send + Sync + 'static,
) -> Vec<String> {
    let open = std::sync::Arc::new(open);
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(writers));
    let threads: Vec<_> = (0..writers)
        .map(|w| {
            let (client, barrier, open) = (client.clone(), barrier.clone(), open.clone());
            let mine: Vec<String> = items
                .iter()
                .enumerate()
                .filter(|(i, _)| i % writers == w || i % writers == (w + 1) % writers)
                .map(|(_, s)| s.clone())
                .collect();
            std::thread::spawn(move || {
                let mut c = client.get_connection().unwrap();
                let mut check_insert = open(&mut c);
                barrier.wait();
                let mut new = Vec::new();
                for part in mine.chunks(chunk) {
                    let answers = check_insert(&mut c, part);
                    new.extend(
                        part.iter()
                            .zip(answers)
                            .filter(|(_, a)| *a)
                            .map(|(s, _)| s.clone()),
                    );
                }
                new
            })
        })
        .collect();
    let all: Vec<String> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let once: std::collections::HashSet<&String> = all.iter().collect();
    assert_eq!(once.len(), all.len(), "an item was answered new twice");
    all
}
