use super::*;

fn record(uid: &str, state: &str) -> BTreeMap<String, String> {
    crate::proto::shard::root::canned_record("bloom", uid, state)
}

fn opened() -> Root {
    Root::decode("crawl", &record("0123456789abcdef", "ready")).unwrap()
}

fn missing(j: u32) -> Error {
    Error::ShardMissing {
        name: "crawl".into(),
        shard: j,
        shard_name: format!("crawl:shard:{j}:0a1b2c3d"),
    }
}

#[test]
fn the_same_live_root_leaves_the_shard_missing() {
    assert_eq!(
        meaning(&opened(), &record("0123456789abcdef", "ready")),
        None
    );
}

#[test]
fn no_record_or_a_dropping_one_is_a_dropped_filter() {
    assert_eq!(meaning(&opened(), &BTreeMap::new()), Some(Gone::Dropped));
    assert_eq!(
        meaning(&opened(), &record("0123456789abcdef", "dropping")),
        Some(Gone::Dropped)
    );
}

#[test]
fn another_uid_or_an_unsharded_filter_is_a_re_created_one() {
    assert_eq!(
        meaning(&opened(), &record("fedcba9876543210", "ready")),
        Some(Gone::Recreated)
    );
    let plain: BTreeMap<String, String> = [("format", "1"), ("uid", "0123456789abcdef")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(meaning(&opened(), &plain), Some(Gone::Recreated));
}

#[test]
fn only_missing_shards_are_relabelled() {
    let results: Results<Vec<bool>> = vec![
        (0, Ok(vec![true])),
        (1, Err(missing(1))),
        (2, Err(Error::Internal("other".into()))),
    ];
    assert!(any_missing(&results));
    let out = relabel("crawl", results, Some(Gone::Recreated));
    assert!(matches!(out[0], (0, Ok(_))));
    assert!(matches!(&out[1], (1, Err(Error::Recreated { name })) if name == "crawl"));
    assert!(matches!(out[2], (2, Err(Error::Internal(_)))));
    let kept = relabel("crawl", vec![(1, Err::<(), _>(missing(1)))], None);
    assert!(matches!(kept[0], (1, Err(Error::ShardMissing { .. }))));
}
