//! The merge of shards' results, with canned answers and errors.

use super::*;
use crate::error::Fate;

/// Four items per shard over three shards: item i is on shard i % 3.
fn parts() -> Vec<Vec<usize>> {
    (0..3)
        .map(|j| (0..12).filter(|i| i % 3 == j).collect())
        .collect()
}

fn full(answered: Vec<bool>) -> Error {
    Error::Full {
        name: "f-1".into(),
        capacity: 10,
        count: 10,
        answered,
    }
}

fn lost() -> Error {
    Error::from(redis::RedisError::from(std::io::Error::from(
        std::io::ErrorKind::ConnectionReset,
    )))
}

fn partial(r: Result<Vec<bool>>) -> Box<Partial> {
    match r {
        Err(Error::Partial(p)) => p,
        other => panic!("not a partial outcome: {other:?}"),
    }
}

#[test]
fn each_item_is_placed_by_its_md5_and_carries_it() {
    let words: Vec<String> = (0..500).map(|i| format!("item{i}")).collect();
    for shards in [1u32, 2, 3, 6, 17] {
        let split = split(&words, shards);
        assert_eq!(split.len, words.len());
        assert_eq!(split.items.len(), shards as usize);
        for (j, (items, idx)) in split.items.iter().zip(&split.parts).enumerate() {
            assert_eq!(items.len(), idx.len());
            let mut hashes = items.hashes().iter();
            for (k, &i) in idx.iter().enumerate() {
                let h = ItemHash::of(&words[i]);
                assert_eq!(h.shard(shards) as usize, j, "{} on {shards}", words[i]);
                assert_eq!(items.get(k), Some(words[i].as_bytes()));
                // One shard needs no MD5 to place: its machine hashes.
                assert_eq!(hashes.next(), (shards > 1).then_some(&h));
            }
        }
    }
}

#[test]
fn a_batch_splits_by_route_and_merges_in_order() {
    let words = ["", "a", "http://example.com/", "0", "2", "x", "y"];
    let parts = split(words, 6).parts;
    // §11.3's golden routes: "" -> 1, "a" -> 1, example -> 2, "0" -> 0, "2" -> 2.
    assert!(parts[1].starts_with(&[0, 1]));
    assert!(parts[2].starts_with(&[2, 4]));
    assert!(parts[0].starts_with(&[3]));
    assert_eq!(parts.iter().map(Vec::len).sum::<usize>(), words.len());
    // Each shard answers "is my item's index even": the merge puts the
    // answers back where the items were.
    let results = parts
        .iter()
        .enumerate()
        .filter(|(_, idx)| !idx.is_empty())
        .map(|(j, idx)| (j, Ok(idx.iter().map(|i| i % 2 == 0).collect())))
        .collect();
    let merged = gather("f", words.len(), &parts, results).unwrap();
    let want: Vec<bool> = (0..words.len()).map(|i| i % 2 == 0).collect();
    assert_eq!(merged, want);
}

#[test]
fn a_full_shard_refuses_only_its_own_items_after_its_prefix() {
    let parts = parts();
    // Shard 0 answers all, shard 1 takes 1 of its 4 and is full, shard 2
    // is missing.
    let results = vec![
        (2, Err(Error::NotFound { name: "f-2".into() })),
        (0, Ok(vec![true, false, true, true])),
        (1, Err(full(vec![true]))),
    ];
    let p = partial(gather("f", 12, &parts, results));
    let want: Vec<Option<bool>> = (0..12)
        .map(|i| match (i % 3, i / 3) {
            (0, 1) => Some(false),
            (0, _) => Some(true),
            (1, 0) => Some(true),
            _ => None,
        })
        .collect();
    assert_eq!(p.answers, want);
    assert_eq!(p.refused(), vec![2, 4, 5, 7, 8, 10, 11]);
    assert!(p.unknown().is_empty());
    let shards: Vec<u32> = p.failures.iter().map(|f| f.shard).collect();
    assert_eq!(shards, vec![1, 2]);
    assert_eq!(p.failures[0].items, vec![4, 7, 10]);
    assert!(!Error::Partial(p).is_retryable());
}

#[test]
fn a_lost_reply_leaves_its_shards_items_unknown_and_is_retryable() {
    let parts = parts();
    let results = vec![
        (0, Ok(vec![true; 4])),
        (1, Err(lost())),
        (2, Ok(vec![false; 4])),
    ];
    let p = partial(gather("f", 12, &parts, results));
    assert_eq!(p.unknown(), vec![1, 4, 7, 10]);
    assert!(p.refused().is_empty());
    assert_eq!(p.failures[0].fate, Fate::Unknown);
    assert_eq!(p.answers.iter().flatten().count(), 8);
    let e = Error::Partial(p);
    assert!(e.is_retryable());
    assert!(e.to_string().contains("8 of 12 items answered"), "{e}");
}

#[test]
fn a_shards_own_partial_outcome_is_put_at_the_batchs_places() {
    let parts = parts();
    // Shard 2's second step ran out of memory after its first answered
    // two items.
    let inner = Partial::new(
        "f-2",
        vec![Some(true), Some(false), None, None],
        vec![ShardFailure::new(
            0,
            vec![2, 3],
            Error::MemoryFull {
                name: "f-2".into(),
                message: "OOM".into(),
            },
        )],
    );
    let results = vec![
        (0, Ok(vec![true; 4])),
        (1, Ok(vec![true; 4])),
        (2, Err(Error::Partial(Box::new(inner)))),
    ];
    let p = partial(gather("f", 12, &parts, results));
    assert_eq!(p.answers[2], Some(true));
    assert_eq!(p.answers[5], Some(false));
    assert_eq!(p.refused(), vec![8, 11]);
    assert_eq!(p.failures[0].shard, 2);
}

#[test]
fn one_shard_holding_the_batch_fails_as_it_is() {
    let parts = vec![vec![], vec![0, 1, 2], vec![]];
    let r = gather("f", 3, &parts, vec![(1, Err(full(vec![true, false])))]);
    assert!(matches!(r, Err(Error::Full { ref answered, .. }) if answered == &[true, false]));
}

#[test]
fn a_short_or_missing_answer_is_an_unknown_failure_never_a_default() {
    let parts = parts();
    let results = vec![(0, Ok(vec![true; 5])), (1, Ok(vec![true; 4]))];
    let p = partial(gather("f", 12, &parts, results));
    assert_eq!(p.unknown(), vec![0, 2, 3, 5, 6, 8, 9, 11]);
    assert!(p
        .failures
        .iter()
        .all(|f| matches!(f.error, Error::Internal(_))));
}

#[test]
fn a_filter_gone_before_any_shard_answered_is_that_error() {
    let parts = split(["a", "b", "c", "d"], 2).parts;
    let gone = |j| (j, Err(Error::Recreated { name: "f".into() }));
    let r = gather("f", 4, &parts, vec![gone(0), gone(1)]);
    assert!(matches!(r, Err(Error::Recreated { .. })), "{r:?}");
    // One shard answered before: its answers stand, in a partial.
    let first = parts.iter().position(|p| !p.is_empty()).unwrap();
    let answered = (first, Ok(vec![true; parts[first].len()]));
    let other = 1 - first;
    let r = gather("f", 4, &parts, vec![answered, gone(other)]);
    match (r, parts[other].is_empty()) {
        (Ok(_), true) => {}
        (Err(Error::Partial(p)), false) => assert!(p.answers.iter().any(Option::is_some)),
        (r, _) => panic!("{r:?}"),
    }
}
