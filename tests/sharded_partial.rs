//! A sharded batch of which a shard fails keeps every other shard's
//! answers (issue 28): a full shard refuses only its own items, a missing
//! one leaves only its own unanswered, sync and async alike; an
//! idempotent batch run again after the partial failure answers the
//! shards that answered from their records and sends only the rest.

#[path = "support/harness.rs"]
mod harness;

use harness::RedisServer;
use rotabloom::kinds::Bloom;
use rotabloom::{BloomFilter, Error, Partial, ShardedFilter, WhenFull};

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn partial(r: rotabloom::Result<Vec<bool>>) -> Box<Partial> {
    match r {
        Err(Error::Partial(p)) => p,
        other => panic!("not a partial outcome: {other:?}"),
    }
}

/// A 3-shard filter of capacity `capacity` (a third per shard) on `conn`.
fn three_shards(conn: &mut redis::Connection, name: &str, capacity: u64) -> ShardedFilter<Bloom> {
    BloomFilter::builder(name)
        .capacity(capacity)
        .shards(3)
        .create_or_open(conn)
        .unwrap()
}

/// The outcome's every answer is the filter's truth: an item answered new
/// is in and was counted, a refused one is not in (but for false
/// positives), and the refused ones are exactly the full shards' rest.
fn holds_what_it_answered(
    f: &ShardedFilter<Bloom>,
    conn: &mut redis::Connection,
    batch: &[String],
    p: &Partial,
) {
    assert_eq!(p.answers.len(), batch.len());
    let refused = p.refused();
    assert!(p.unknown().is_empty());
    for (i, a) in p.answers.iter().enumerate() {
        assert_eq!(a.is_none(), refused.binary_search(&i).is_ok(), "item {i}");
    }
    let new = p.answers.iter().filter(|a| **a == Some(true)).count();
    assert_eq!(f.count(conn).unwrap(), new as u64, "stored = answered new");
    let there = f.contains_many(conn, batch).unwrap();
    for (i, a) in p.answers.iter().enumerate() {
        if a.is_some() {
            assert!(there[i], "answered item {i} is not in");
        }
    }
    let refused_in = refused.iter().filter(|&&i| there[i]).count();
    assert!(
        refused_in <= refused.len() / 20,
        "{refused_in} refused are in"
    );
}

#[test]
fn a_full_shard_refuses_only_its_own_items() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = three_shards(&mut conn, "full3", 300);
    let batch = items("u", 600);
    let p = partial(f.check_and_insert_many(&mut conn, &batch));
    // Each shard holds its share (160: a shard's capacity is rounded up)
    // and refused the rest of its part.
    let new = p.answers.iter().filter(|a| **a == Some(true)).count();
    assert!((450..=480).contains(&new), "{new} answered new");
    assert_eq!(p.failures.len(), 3, "every shard filled: {p}");
    assert!(!p.is_retryable());
    holds_what_it_answered(&f, &mut conn, &batch, &p);
}

#[test]
fn a_missing_shard_leaves_only_its_own_items_unanswered_sync_and_async() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = three_shards(&mut conn, "miss3", 3000);
    let shard1 = f.shard_names()[1].to_string();
    // Its keys gone, metadata and blocks (a handle that knew its metadata
    // before is refused by the missing blocks).
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("rotabloom:{{{shard1}}}:*"))
        .query(&mut conn)
        .unwrap();
    assert!(!keys.is_empty());
    let _: () = redis::cmd("DEL").arg(&keys).query(&mut conn).unwrap();
    let batch = items("m", 90);
    let on1: Vec<usize> = (0..90).filter(|&i| f.shard_of(&batch[i]) == 1).collect();
    assert!(!on1.is_empty() && on1.len() < 90);
    let want = |p: &Partial, new: bool| {
        assert_eq!(p.refused(), on1, "{p}");
        assert_eq!(p.failures.len(), 1);
        assert!(
            matches!(
                p.failures[0].error,
                Error::ShardMissing { shard: 1, .. } | Error::MissingData { .. }
            ),
            "{p}"
        );
        for (i, a) in p.answers.iter().enumerate() {
            let expected = (!on1.contains(&i)).then_some(new);
            assert_eq!(*a, expected, "item {i}");
        }
    };
    want(&partial(f.check_and_insert_many(&mut conn, &batch)), true);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let aconn = server
            .client()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        // The same items again: the shards that hold them answer seen.
        want(
            &partial(f.check_and_insert_many_async(&aconn, &batch).await),
            false,
        );
        let fresh = items("n", 90);
        let r = f.insert_many_async(&aconn, &fresh).await;
        let p = partial(r);
        let on1: Vec<usize> = (0..90).filter(|&i| f.shard_of(&fresh[i]) == 1).collect();
        assert_eq!(p.refused(), on1);
        assert_eq!(p.answers.iter().flatten().count(), 90 - on1.len());
    });
}

#[test]
fn an_idempotent_batch_run_again_answers_from_its_records_and_sends_the_rest() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = three_shards(&mut conn, "again3", 300);
    // 250 items for shard 1 (room for 160), 50 for each other shard.
    let mut want = [50, 250, 50];
    let batch: Vec<String> = (0..)
        .map(|i| format!("r{i}"))
        .filter(|it| {
            let j = f.shard_of(it) as usize;
            let take = want[j] > 0;
            want[j] -= usize::from(take);
            take
        })
        .take(350)
        .collect();
    let mut first = f.idempotent_batch(&batch);
    let token = first.token().to_string();
    let p = partial(first.check_and_insert(&mut conn));
    assert_eq!(p.failures.len(), 1);
    assert_eq!(p.failures[0].shard, 1);
    let refused = p.refused();
    assert!((85..=95).contains(&refused.len()), "{p}");
    holds_what_it_answered(&f, &mut conn, &batch, &p);
    // Run again as it is: the same answers (the full shard's from its
    // record), the same items refused.
    let p2 = partial(first.check_and_insert(&mut conn));
    assert_eq!(p2.answers, p.answers);
    assert_eq!(p2.refused(), refused);
    // Another process, the same token, a shard with room (when_full =
    // warn): every answer the first run gave is given again, not "seen";
    // the refused items are written and answered new.
    let g = ShardedFilter::<Bloom>::open(&mut conn, "again3")
        .unwrap()
        .map_shards(|s| s.with_when_full(WhenFull::Warn));
    let mut again = g.idempotent_batch(&batch).with_token(&token).unwrap();
    let answers = again.check_and_insert(&mut conn).unwrap();
    for (i, a) in p.answers.iter().enumerate() {
        if let Some(a) = a {
            assert_eq!(answers[i], *a, "item {i} answered otherwise");
        }
    }
    // The refused ones new, but for false positives of a full shard.
    let seen = refused.iter().filter(|&&i| !answers[i]).count();
    assert!(seen <= refused.len() / 20, "{seen} refused items seen");
    let new = answers.iter().filter(|&&a| a).count() as u64;
    assert_eq!(g.count(&mut conn).unwrap(), new, "each item counted once");
}

/// Unsharded too: an expanding filter at its limit answers the items it
/// took before refusing the rest, named (it dropped their answers).
#[test]
fn an_expanding_filter_at_its_limit_reports_the_items_it_took() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = rotabloom::ExpandingFilter::builder("grow1")
        .capacity(100)
        .max_generations(1)
        .create_or_open(&mut conn)
        .unwrap();
    let batch = items("g", 300);
    let p = match f.check_and_insert_many(&mut conn, &batch) {
        Err(Error::Partial(p)) => p,
        other => panic!("not a partial outcome: {other:?}"),
    };
    assert!(
        matches!(p.failures[0].error, Error::LimitReached { .. }),
        "{p}"
    );
    let new = p.answers.iter().filter(|a| **a == Some(true)).count();
    assert!((90..=200).contains(&new), "{p}");
    assert_eq!(f.count(&mut conn).unwrap(), new as u64);
    let refused = p.refused();
    assert_eq!(refused.len() + p.answers.iter().flatten().count(), 300);
    assert!(p.unknown().is_empty());
}
