//! The base filter against a real, private redis-server.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/suite.rs"]
mod suite;

use harness::RedisServer;
use rotabloom::{BloomFilter, Error, Opened};
use std::collections::HashSet;
use std::sync::{Arc, Barrier};

fn filter(conn: &mut redis::Connection, name: &str, n: u64, p: f64) -> BloomFilter {
    BloomFilter::builder(name)
        .capacity(n)
        .error_rate(p)
        .create_or_open(conn)
        .unwrap()
}

#[test]
fn functional_suite_sync() {
    let server = RedisServer::start();
    suite::sync_suite(&mut server.connection(), "bloom");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functional_suite_async_multiplexed_and_manager() {
    let server = RedisServer::start();
    let client = server.client();
    let mut mux = client.get_multiplexed_async_connection().await.unwrap();
    suite::async_suite(&mut mux, "mux").await;
    let mut mgr = client.get_connection_manager().await.unwrap();
    suite::async_suite(&mut mgr, "mgr").await;
}

#[test]
fn no_false_negatives_against_an_exact_set() {
    // A property test with a fixed-seed generator: random batches of random
    // byte strings, interleaving inserts and queries, checked against a
    // HashSet after every step.
    let server = RedisServer::start();
    let mut conn = server.connection();
    let mut rng = suite::Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..8 {
        // Past its capacity on purpose: no false negative, however full.
        let f = filter(&mut conn, &format!("prop{case}"), 2_000, 0.05)
            .with_when_full(rotabloom::WhenFull::Warn);
        let mut exact: HashSet<Vec<u8>> = HashSet::new();
        for _ in 0..20 {
            let batch: Vec<Vec<u8>> = (0..rng.below(300) + 1)
                .map(|_| {
                    let len = rng.below(40) as usize;
                    (0..len).map(|_| rng.below(256) as u8).collect()
                })
                .collect();
            match rng.below(3) {
                0 => {
                    f.insert_many(&mut conn, &batch).unwrap();
                }
                1 => {
                    let new = f.check_and_insert_many(&mut conn, &batch).unwrap();
                    let mut local = HashSet::new();
                    for (item, was_new) in batch.iter().zip(new) {
                        if was_new {
                            // New means: not inserted before, not earlier in this batch.
                            assert!(!exact.contains(item) && !local.contains(item));
                        }
                        local.insert(item.clone());
                    }
                }
                _ => {
                    for item in &batch {
                        f.insert(&mut conn, item).unwrap();
                    }
                }
            }
            exact.extend(batch);
            let all: Vec<&Vec<u8>> = exact.iter().collect();
            let present = f.contains_many(&mut conn, &all).unwrap();
            assert!(
                present.iter().all(|&p| p),
                "a false negative in case {case}"
            );
        }
    }
}

fn measure_fpr(p: f64) -> f64 {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let n = 100_000u64;
    let f = filter(&mut conn, "fpr", n, p);
    let members: Vec<String> = (0..n)
        .map(|i| format!("https://example.com/m/{i}"))
        .collect();
    f.insert_many(&mut conn, &members).unwrap();
    let counted = f.count(&mut conn).unwrap();
    assert!(
        counted <= n && counted as f64 >= n as f64 * (1.0 - p),
        "{counted}"
    );
    let probes = 1_000_000u64;
    let mut fp = 0u64;
    for start in (0..probes).step_by(100_000) {
        let batch: Vec<String> = (start..start + 100_000)
            .map(|i| format!("https://example.org/x/{i}"))
            .collect();
        fp += f
            .contains_many(&mut conn, &batch)
            .unwrap()
            .into_iter()
            .filter(|&b| b)
            .count() as u64;
    }
    fp as f64 / probes as f64
}

#[test]
fn false_positive_rate_at_capacity_p_0_01() {
    let rate = measure_fpr(0.01);
    eprintln!("measured false-positive rate at capacity, p = 0.01: {rate}");
    assert!(rate <= 0.011, "{rate}");
    assert!(rate > 0.005, "implausibly low: {rate}");
}

#[test]
fn false_positive_rate_at_capacity_p_0_001() {
    let rate = measure_fpr(0.001);
    eprintln!("measured false-positive rate at capacity, p = 0.001: {rate}");
    assert!(rate <= 0.0011, "{rate}");
    assert!(rate > 0.0005, "implausibly low: {rate}");
}

#[test]
fn sixteen_clients_check_and_insert_the_same_items() {
    let server = RedisServer::start();
    let p = 0.01;
    let n = 200_000usize;
    let mut conn = server.connection();
    let f = filter(&mut conn, "race", n as u64, p);
    let items: Arc<Vec<String>> = Arc::new(
        (0..n)
            .map(|i| format!("https://race.example/{i}"))
            .collect(),
    );
    let clients = 16;
    let barrier = Arc::new(Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (f, items, barrier, client) =
                (f.clone(), items.clone(), barrier.clone(), server.client());
            std::thread::spawn(move || {
                let mut conn = client.get_connection().unwrap();
                barrier.wait();
                let mut new = vec![false; items.len()];
                // Each client walks the items from a different offset, in
                // batches of 500, so that clients collide on every batch.
                let offset = c * items.len() / clients;
                let order: Vec<usize> = (0..items.len())
                    .map(|i| (i + offset) % items.len())
                    .collect();
                for chunk in order.chunks(500) {
                    let batch: Vec<&str> = chunk.iter().map(|&i| items[i].as_str()).collect();
                    for (&i, was_new) in chunk
                        .iter()
                        .zip(f.check_and_insert_many(&mut conn, batch).unwrap())
                    {
                        new[i] = was_new;
                    }
                }
                new
            })
        })
        .collect();
    let results: Vec<Vec<bool>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let mut total_new = 0usize;
    for i in 0..n {
        let k = results.iter().filter(|r| r[i]).count();
        assert!(k <= 1, "item {i} was reported new {k} times");
        total_new += k;
    }
    eprintln!(
        "16 clients x {n} items: {total_new} reported new exactly once, {} never (false positives)",
        n - total_new
    );
    assert!(
        total_new as f64 >= n as f64 * (1.0 - 2.0 * p),
        "{total_new}"
    );
    assert_eq!(f.count(&mut conn).unwrap(), total_new as u64);
}

#[test]
fn concurrent_create_or_open_yields_one_creator() {
    let server = RedisServer::start();
    let clients = 16;
    let barrier = Arc::new(Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let (barrier, client) = (barrier.clone(), server.client());
            std::thread::spawn(move || {
                let mut conn = client.get_connection().unwrap();
                let spec = BloomFilter::builder("once")
                    .capacity(1000)
                    .error_rate(0.01)
                    .spec()
                    .unwrap();
                barrier.wait();
                let (f, how) = spec.create_or_open(&mut conn).unwrap();
                f.insert(&mut conn, "x").unwrap();
                how
            })
        })
        .collect();
    let created = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|h| *h == Opened::Created)
        .count();
    assert_eq!(created, 1);
    let mut conn = server.connection();
    let f = BloomFilter::open(&mut conn, "once").unwrap();
    assert_eq!(f.count(&mut conn).unwrap(), 1);
}

#[test]
fn mismatches_and_bad_input_are_typed_errors() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "m", 1000, 0.01);
    f.insert(&mut conn, "a").unwrap();

    let e = BloomFilter::builder("m")
        .capacity(2000)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(&e, Error::ParameterMismatch { field, stored, requested, .. }
        if field == "capacity" && stored == "1000" && requested == "2000"),
        "{e}"
    );
    let e = BloomFilter::builder("m")
        .capacity(1000)
        .error_rate(0.02)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(&e, Error::ParameterMismatch { field, .. } if field == "error_rate"),
        "{e}"
    );
    let e = BloomFilter::builder("m")
        .bits_hashes(1 << 20, 7)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(&e, Error::ParameterMismatch { field, .. } if field == "sizing"),
        "{e}"
    );
    // Nothing was overwritten.
    assert!(f.contains(&mut conn, "a").unwrap());

    for (n, p) in [(0, 0.01), (10, 0.0), (10, 1.0), (10, -1.0), (10, f64::NAN)] {
        let e = BloomFilter::builder("bad")
            .capacity(n)
            .error_rate(p)
            .create_or_open(&mut conn)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidParameter { .. }), "{e}");
    }
    let e = BloomFilter::builder("bad")
        .bits_hashes(1000, 0)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidParameter { name: "hashes", .. }),
        "{e}"
    );
    let e = BloomFilter::builder("bad")
        .capacity(1_000_000_000)
        .error_rate(0.001)
        .max_bits(1 << 30)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    let e = BloomFilter::builder("a b")
        .capacity(10)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidName { .. }), "{e}");
    let e = BloomFilter::open(&mut conn, "missing").unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    // Nothing was created by the failed calls.
    let keys: Vec<String> = redis::cmd("KEYS").arg("*bad*").query(&mut conn).unwrap();
    assert!(keys.is_empty(), "{keys:?}");

    // A metadata key of the wrong type.
    let _: () = redis::cmd("SET")
        .arg("rotabloom:{str}:meta")
        .arg("x")
        .query(&mut conn)
        .unwrap();
    let e = BloomFilter::builder("str")
        .capacity(10)
        .create_or_open(&mut conn)
        .unwrap_err();
    assert!(
        matches!(&e, Error::WrongType { key, found, .. } if key == "rotabloom:{str}:meta" && found == "string"),
        "{e}"
    );
    let e = BloomFilter::open(&mut conn, "str").unwrap_err();
    assert!(
        matches!(&e, Error::WrongType { found, .. } if found == "string"),
        "{e}"
    );

    // A generation key of the wrong type: found and named, not a Lua trace.
    let info = f.info(&mut conn).unwrap();
    let uid = &info.fields["uid"];
    let gen_key = format!("rotabloom:{{m}}:gen:{uid}-0:0");
    let _: () = redis::cmd("DEL").arg(&gen_key).query(&mut conn).unwrap();
    let _: () = redis::cmd("LPUSH")
        .arg(&gen_key)
        .arg("x")
        .query(&mut conn)
        .unwrap();
    let e = f.insert(&mut conn, "b").unwrap_err();
    assert!(
        matches!(&e, Error::WrongType { key, found, .. } if *key == gen_key && found == "list"),
        "{e}"
    );
    assert!(!e.is_retryable());
}

#[test]
fn a_kind_mismatch_is_an_error() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    filter(&mut conn, "k", 1000, 0.01);
    // Pretend another kind created it.
    let _: () = redis::cmd("HSET")
        .arg("rotabloom:{k}:meta")
        .arg("kind")
        .arg("circular")
        .query(&mut conn)
        .unwrap();
    let e = BloomFilter::open(&mut conn, "k").unwrap_err();
    assert!(
        matches!(&e, Error::KindMismatch { found, .. } if found == "circular"),
        "{e}"
    );
}

#[test]
fn scripts_survive_flush_and_restart() {
    let mut server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "ns", 1000, 0.01);
    assert!(f.check_and_insert(&mut conn, "a").unwrap());
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut conn).unwrap();
    assert!(!f.check_and_insert(&mut conn, "a").unwrap());
    assert!(f
        .check_and_insert_many(&mut conn, ["b", "c"])
        .unwrap()
        .iter()
        .all(|&b| b));

    // A restart loses the data (no persistence here) and the script cache.
    server.restart();
    let mut conn = server.connection();
    let e = f.insert(&mut conn, "a").unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    let f = filter(&mut conn, "ns", 1000, 0.01);
    assert!(f.check_and_insert(&mut conn, "a").unwrap());
}

#[test]
fn drop_and_recreate_is_refused_to_old_handles() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let old = filter(&mut conn, "re", 1000, 0.01);
    old.insert(&mut conn, "a").unwrap();
    assert!(old.drop(&mut conn).unwrap());
    assert!(!old.drop(&mut conn).unwrap());
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    assert!(keys.is_empty(), "{keys:?}");
    let new = filter(&mut conn, "re", 5000, 0.01);
    let e = old.insert(&mut conn, "b").unwrap_err();
    assert!(
        matches!(&e, Error::Recreated { name } if name == "re"),
        "{e}"
    );
    assert!(e.to_string().contains("dropped and created again"), "{e}");
    assert!(!e.is_retryable());
    assert!(!new.contains(&mut conn, "b").unwrap());
    // Same parameters: another instance all the same, refused.
    new.drop(&mut conn).unwrap();
    let again = filter(&mut conn, "re", 1000, 0.01);
    let e = old.check_and_insert(&mut conn, "b").unwrap_err();
    assert!(matches!(&e, Error::Recreated { .. }), "{e}");
    assert!(!again.contains(&mut conn, "b").unwrap());
    // Opened again, it works.
    let reopened = filter(&mut conn, "re", 1000, 0.01);
    assert!(reopened.check_and_insert(&mut conn, "b").unwrap());
}

#[test]
fn multi_block_generations_work_end_to_end() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("blocks")
        .capacity(20_000)
        .error_rate(0.01)
        .max_block_bits(1 << 14)
        .create_or_open(&mut conn)
        .unwrap();
    let info = f.info(&mut conn).unwrap();
    assert!(
        info.generations[0].blocks >= 11,
        "{:?}",
        info.generations[0]
    );
    let items: Vec<String> = (0..20_000).map(|i| format!("i{i}")).collect();
    let new = f.check_and_insert_many(&mut conn, &items).unwrap();
    assert!(new.iter().filter(|&&b| b).count() > 19_700);
    assert!(f
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
    let info = f.info(&mut conn).unwrap();
    let per_block: Vec<String> = redis::cmd("KEYS")
        .arg("rotabloom:{blocks}:gen:*")
        .query(&mut conn)
        .unwrap();
    assert_eq!(per_block.len() as u32, info.generations[0].blocks);
    assert!(
        info.memory_bytes <= info.generations[0].bits / 8 + u64::from(info.generations[0].blocks)
    );
}

#[test]
fn a_filter_without_a_fence_gets_one_and_keeps_working() {
    // Filters written before the fence existed (or whose fence was lost)
    // must not be locked out of the transaction path.
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "nofence", 10_000, 0.01);
    let _: () = redis::cmd("DEL")
        .arg("rotabloom:{nofence}:fence")
        .query(&mut conn)
        .unwrap();
    let items: Vec<String> = (0..200).map(|i| format!("n{i}")).collect();
    assert!(f
        .check_and_insert_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
    assert!(f
        .contains_many(&mut conn, &items)
        .unwrap()
        .iter()
        .all(|&b| b));
    let fence: String = redis::cmd("GET")
        .arg("rotabloom:{nofence}:fence")
        .query(&mut conn)
        .unwrap();
    assert!(fence.ends_with(":0:0"), "{fence}");
    // A dropped filter's fence is not resurrected by a stale handle.
    f.drop(&mut conn).unwrap();
    assert!(f.insert_many(&mut conn, &items).is_err());
    assert!(suite::keys_of(&mut conn, "nofence").is_empty());
}

#[test]
fn handles_are_cheap_send_sync_clones_and_their_futures_are_send() {
    fn handle<T: Clone + Send + Sync + 'static>() {}
    handle::<BloomFilter>();
    handle::<rotabloom::ExpandingFilter>();
    handle::<rotabloom::CircularFilter>();
    fn send<T: Send>(_: &T) {}
    // The async operations can run on a multi-threaded executor (tokio::spawn).
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "send", 1000, 0.01);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = server.client();
    let joined = rt.block_on(async move {
        let mut mux = client.get_multiplexed_async_connection().await.unwrap();
        let task = tokio::spawn(async move {
            let fut = f.check_and_insert_many_async(&mut mux, ["a", "b", "a"]);
            send(&fut);
            fut.await
        });
        task.await.unwrap().unwrap()
    });
    assert_eq!(joined, vec![true, true, false]);
}

#[test]
fn a_batch_under_a_kept_token_gets_the_answers_of_the_run_that_gave_up() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = filter(&mut conn, "tokens", 10_000, 0.001);
    let items: Vec<String> = (0..500).map(|i| format!("t{i}")).collect();
    // The first process: applied, its reply never read (as if lost).
    let mut first = f.idempotent_batch(&items);
    let token = first.token().to_string();
    assert!(first
        .check_and_insert(&mut conn)
        .unwrap()
        .iter()
        .all(|&n| n));
    // Another process, another handle, the token it kept: the answers
    // of the first run; under a new token, "seen".
    let g = BloomFilter::open(&mut server.connection(), "tokens").unwrap();
    let mut again = g.idempotent_batch(&items).with_token(&token).unwrap();
    assert_eq!(again.token(), token);
    assert!(again
        .check_and_insert(&mut conn)
        .unwrap()
        .iter()
        .all(|&n| n));
    let mut fresh = g.idempotent_batch(&items);
    assert!(fresh
        .check_and_insert(&mut conn)
        .unwrap()
        .iter()
        .all(|&n| !n));
    assert_eq!(g.count(&mut conn).unwrap(), 500, "counted once");
    // A token that could change the key's slot or pattern is refused.
    for bad in ["", "a{b}", "a*", "x y", &"y".repeat(65)] {
        assert!(
            matches!(
                g.idempotent_batch(["a"]).with_token(bad),
                Err(Error::InvalidParameter { name: "token", .. })
            ),
            "{bad:?}"
        );
    }
}
