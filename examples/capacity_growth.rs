//! Capacity growth: an `ExpandingFilter` whose first generation holds 1,000
//! items takes 30,000 and still answers within its error bound.
//!
//! A plain Bloom filter has a fixed size: past its capacity its
//! false-positive rate climbs towards 100%. An expanding filter freezes a
//! full generation and adds a bigger one (here 4x: growth 4 means fewer,
//! bigger generations, so a query reads fewer of them) with a tighter error
//! rate (p/2, p/4, ...), so the sum over all generations stays under the
//! bound p however far it grows.
//!
//! The sizes are small so the example runs in a few seconds; the maths does
//! not depend on them.
//!
//! Run it with `cargo run --example capacity_growth`.

#[path = "../tests/support/harness.rs"]
mod harness;

mod common;

use common::{human_bytes, thousands};
use rotabloom::ExpandingFilter;

const N0: u64 = 1_000;
const GROWTH: f64 = 4.0;
const P: f64 = 0.02;
const ITEMS: u64 = 30_000;
const BATCH: u64 = 1_000;
/// Never-inserted items to query; about `P * PROBES` of them come back
/// "seen" (false positives).
const PROBES: u64 = 40_000;

fn member(i: u64) -> String {
    format!("https://site.example/page/{i}")
}

fn stranger(i: u64) -> String {
    format!("https://elsewhere.example/never-inserted/{i}")
}

/// Share of `count` never-inserted items (from `start`) the filter claims.
fn measured_fpr<C: redis::ConnectionLike>(
    f: &ExpandingFilter,
    conn: &mut C,
    start: u64,
    count: u64,
) -> rotabloom::Result<f64> {
    let mut hits = 0u64;
    let mut i = start;
    while i < start + count {
        let end = (i + 10_000).min(start + count);
        let answers = f.contains_many(conn, (i..end).map(stranger))?;
        hits += answers.iter().filter(|&&yes| yes).count() as u64;
        i = end;
    }
    Ok(hits as f64 / count as f64)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let redis = harness::external_or_private();
    let private = redis.is_private();
    println!("{}", common::describe_redis(&redis.url(), private));
    let mut conn = redis.connection();

    let name = common::filter_name("growing", private);
    let f = ExpandingFilter::builder(name.as_str())
        .capacity(N0)
        .error_rate(P)
        .growth(GROWTH)
        .create_or_open(&mut conn)?;
    println!(
        "ExpandingFilter {name:?}: first generation {} items, growth x{GROWTH}, error bound {}% overall",
        thousands(N0),
        P * 100.0
    );
    println!(
        "inserting {} items in batches of {}\n",
        thousands(ITEMS),
        thousands(BATCH)
    );

    println!(
        "{:>9} {:>5} {:>10} {:>12}",
        "inserted", "gens", "memory", "FPR (fill)"
    );
    let mut gens = 1;
    let mut inserted = 0;
    let mut changed = 0;
    while inserted < ITEMS {
        let answers = f.insert_many(&mut conn, (inserted..inserted + BATCH).map(member))?;
        changed += answers.iter().filter(|&&c| c).count() as u64;
        inserted += BATCH;
        let info = f.info(&mut conn)?;
        if info.generations.len() != gens || inserted == ITEMS {
            gens = info.generations.len();
            println!(
                "{:>9} {:>5} {:>10} {:>11.3}%",
                thousands(inserted),
                gens,
                human_bytes(info.memory_bytes as f64),
                100.0 * info.false_positive_rate
            );
            assert!(
                info.false_positive_rate < P,
                "estimated FPR above the bound"
            );
        }
    }

    let info = f.info(&mut conn)?;
    println!("\ngenerations (oldest first):");
    println!(
        "  {:>3} {:>9} {:>9} {:>11} {:>6} {:>6} {:>10}",
        "#", "capacity", "count", "bits", "hashes", "fill", "FPR (fill)"
    );
    for (i, g) in info.generations.iter().enumerate() {
        println!(
            "  {:>3} {:>9} {:>9} {:>11} {:>6} {:>5.1}% {:>9.4}%",
            i,
            thousands(g.capacity),
            thousands(g.count),
            thousands(g.bits),
            g.hashes,
            100.0 * g.fill_ratio,
            100.0 * g.false_positive_rate
        );
    }

    let measured = measured_fpr(&f, &mut conn, 0, PROBES)?;
    let fixed = rotabloom::BloomParams::for_capacity(N0, P)?;
    let fixed_fpr = fixed.false_positive_rate(ITEMS);
    println!(
        "\n{} items in {} generations, {} in Redis",
        thousands(info.count),
        info.generations.len(),
        human_bytes(info.memory_bytes as f64)
    );
    println!(
        "measured false-positive rate: {:.3}% of {} never-inserted items (bound {}%)",
        100.0 * measured,
        thousands(PROBES),
        P * 100.0
    );
    println!(
        "a fixed filter sized for {} would now say \"seen\" to {:.1}% of new items",
        thousands(N0),
        100.0 * fixed_fpr
    );

    // The claims above, checked.
    // An insert whose bits were all set already (a false positive at insert
    // time) changes nothing and is not counted.
    assert_eq!(
        info.count, changed,
        "the filter counts the inserts that changed it"
    );
    assert!(ITEMS - changed < (P * ITEMS as f64) as u64);
    let members = f.contains_many(&mut conn, (0..ITEMS).step_by(97).map(member))?;
    assert!(members.iter().all(|&m| m), "no false negatives");
    assert!(info.generations.len() >= 4, "the filter grew");
    assert!(measured < P, "measured {measured} above the bound {P}");
    assert!(
        info.false_positive_rate < P,
        "estimated FPR above the bound"
    );
    assert!(fixed_fpr > 0.9, "a fixed filter would be saturated");

    f.drop(&mut conn)?;
    println!("\nok");
    Ok(())
}
