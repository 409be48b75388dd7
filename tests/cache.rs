//! Frozen generations mirrored in the client: same answers, fewer server
//! operations.

#[path = "support/harness.rs"]
mod harness;
#[path = "support/suite.rs"]
mod suite;

use harness::RedisServer;
use rotabloom::{CircularFilter, ExpandingFilter, Mode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[test]
fn a_cached_query_all_check_costs_one_server_operation() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = CircularFilter::builder("c")
        .generations(12)
        .capacity(10_000)
        .create_or_open(&mut conn)
        .unwrap();
    for g in 0..11 {
        f.insert_many(&mut conn, (0..2_000).map(|i| format!("g{g}-{i}")))
            .unwrap();
        f.rotate(&mut conn).unwrap();
    }
    let cached = CircularFilter::open(&mut conn, "c")
        .unwrap()
        .with_frozen_cache(64 << 20);
    // First use copies the 11 frozen generations.
    assert!(!cached.check_and_insert(&mut conn, "g3-7").unwrap());
    let ro_before = harness::command_calls(&mut conn, "bitfield_ro");
    let rw_before = harness::command_calls(&mut conn, "bitfield");
    let items: Vec<String> = (0..1_000)
        .map(|i| format!("g{}-{i}", i % 11))
        .chain((0..1_000).map(|i| format!("new-{i}")))
        .collect();
    let new = cached.check_and_insert_many(&mut conn, &items).unwrap();
    assert!(
        new[..1_000].iter().all(|&b| !b),
        "old items are seen, from the mirror"
    );
    assert!(new[1_000..].iter().filter(|&&b| b).count() >= 990);
    assert_eq!(
        harness::command_calls(&mut conn, "bitfield_ro"),
        ro_before,
        "no frozen generation was read on the server"
    );
    assert_eq!(
        harness::command_calls(&mut conn, "bitfield"),
        rw_before + 1,
        "one BITFIELD on the newest generation"
    );
    // The script path too (single items, idempotent batches): the frozen
    // generations are answered here, only the newest is read there.
    let ro_before = harness::command_calls(&mut conn, "bitfield_ro");
    let rw_before = harness::command_calls(&mut conn, "bitfield");
    assert!(!cached.check_and_insert(&mut conn, "g5-9").unwrap());
    assert!(cached.contains(&mut conn, "g9-11").unwrap());
    assert!(cached.check_and_insert(&mut conn, "newer-1").unwrap());
    let mut once = cached.idempotent_batch((0..20).map(|i| format!("g{}-{i}", i % 11)));
    assert!(once
        .check_and_insert(&mut conn)
        .unwrap()
        .iter()
        .all(|&b| !b));
    assert_eq!(
        harness::command_calls(&mut conn, "bitfield_ro"),
        ro_before,
        "the script read no frozen generation"
    );
    // The first call found "g5-9" in the mirror: nothing to write. The
    // second is a query; the third writes; the batch's items are all seen.
    assert_eq!(harness::command_calls(&mut conn, "bitfield"), rw_before + 1);
    // Without the mirror the frozen generations are read on the server.
    let plain = CircularFilter::open(&mut conn, "c").unwrap();
    plain
        .check_and_insert_many(&mut conn, (0..100).map(|i| format!("more-{i}")))
        .unwrap();
    assert!(harness::command_calls(&mut conn, "bitfield_ro") > ro_before);
}

#[test]
fn answers_are_identical_with_and_without_the_mirror_under_rotations_and_expansions() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let circ = CircularFilter::builder("circ")
        .generations(4)
        .mode(Mode::InsertNewestQueryAll)
        .capacity(3_000)
        .create_or_open(&mut conn)
        .unwrap();
    let exp = ExpandingFilter::builder("exp")
        .capacity(2_000)
        .error_rate(0.01)
        .create_or_open(&mut conn)
        .unwrap();
    // Probes: items inserted before the churn starts, and never-inserted ones.
    let mut probes: Vec<String> = Vec::new();
    for round in 0..6 {
        let batch: Vec<String> = (0..1_500).map(|i| format!("p{round}-{i}")).collect();
        circ.insert_many(&mut conn, &batch).unwrap();
        exp.insert_many(&mut conn, &batch).unwrap();
        circ.rotate(&mut conn).unwrap();
        probes.extend(batch);
    }
    let inserted = probes.len();
    probes.extend((0..3_000).map(|i| format!("never-{i}")));

    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (stop, client, circ, exp) = (stop.clone(), server.client(), circ.clone(), exp.clone());
        std::thread::spawn(move || {
            let mut conn = client.get_connection().unwrap();
            let mut i = 0u64;
            while !stop.load(Ordering::SeqCst) && i < 400 {
                let batch: Vec<String> = (0..300).map(|j| format!("churn-{i}-{j}")).collect();
                circ.insert_many(&mut conn, &batch).unwrap();
                exp.insert_many(&mut conn, &batch).unwrap(); // expands every few rounds
                if i.is_multiple_of(3) {
                    circ.rotate(&mut conn).unwrap();
                }
                i += 1;
            }
        })
    };
    let c_cached = CircularFilter::open(&mut conn, "circ")
        .unwrap()
        .with_frozen_cache(256 << 20);
    let e_cached = ExpandingFilter::open(&mut conn, "exp")
        .unwrap()
        .with_frozen_cache(256 << 20);
    let mut compared = 0;
    for _ in 0..60 {
        let fence = |conn: &mut redis::Connection, name: &str| -> String {
            redis::cmd("GET")
                .arg(format!("rotabloom:{{{name}}}:fence"))
                .query(conn)
                .unwrap()
        };
        let (cf, ef) = (fence(&mut conn, "circ"), fence(&mut conn, "exp"));
        let a = c_cached.contains_many(&mut conn, &probes).unwrap();
        let b = circ.contains_many(&mut conn, &probes).unwrap();
        let c = e_cached.contains_many(&mut conn, &probes).unwrap();
        let d = exp.contains_many(&mut conn, &probes).unwrap();
        // Only a structural change between the two reads may explain a
        // difference; compare the rounds where none happened. Without one,
        // the churn's inserts between the two reads only set bits: a
        // never-inserted probe may turn into a false positive in the
        // second read (the more likely the slower the machine), never the
        // other way.
        if fence(&mut conn, "circ") == cf {
            // The window moved past the probes inserted first: none must stay.
            agree(&a, &b, 0, "circular");
            compared += 1;
        }
        if fence(&mut conn, "exp") == ef {
            agree(&c, &d, inserted, "expanding");
            compared += 1;
        }
    }
    stop.store(true, Ordering::SeqCst);
    churn.join().unwrap();
    assert!(
        compared >= 40,
        "too few quiet rounds to compare: {compared}"
    );
    let info = exp.info(&mut conn).unwrap();
    assert!(
        info.generations.len() >= 4,
        "the expanding filter expanded during the test"
    );
    // And once quiet, always equal.
    assert_eq!(
        c_cached.contains_many(&mut conn, &probes).unwrap(),
        circ.contains_many(&mut conn, &probes).unwrap()
    );
    assert_eq!(
        e_cached.contains_many(&mut conn, &probes).unwrap(),
        exp.contains_many(&mut conn, &probes).unwrap()
    );
    // Clearing drops the copies.
    circ.clear(&mut conn).unwrap();
    assert!(c_cached
        .contains_many(&mut conn, &probes[..100])
        .unwrap()
        .iter()
        .all(|&x| !x));
}

/// The mirror's answers (read first) against the server's (read after):
/// the same, but for never-inserted probes that became false positives in
/// between; the first `inserted` probes are present in both.
fn agree(first: &[bool], then: &[bool], inserted: usize, kind: &str) {
    assert_eq!(first.len(), then.len());
    let missed = (0..inserted).filter(|&i| !first[i] || !then[i]).count();
    assert_eq!(missed, 0, "{kind}: false negatives");
    let lost: Vec<usize> = (0..first.len()).filter(|&i| first[i] && !then[i]).collect();
    assert!(
        lost.is_empty(),
        "{kind}: mirror and server disagree at {lost:?}"
    );
    let turned = (0..first.len()).filter(|&i| !first[i] && then[i]).count();
    assert!(
        turned <= first.len() / 100,
        "{kind}: {turned} answers changed without a structural change"
    );
}
