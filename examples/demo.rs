//! De-duplicate a crawler's URL stream with a Bloom filter in Redis.
//!
//! A crawler finds the same links again and again (navigation bars, popular
//! articles). Before fetching a link it asks "have I seen this URL?", and
//! only new URLs are crawled. This example:
//!
//! 1. starts a private `redis-server` (or uses `REDIS_URL`),
//! 2. creates a `BloomFilter` sized for 20,000 URLs at a 0.1% error rate,
//! 3. runs a deterministic stream of 20,000 links through
//!    `check_and_insert_many` in batches of 1,000 (one call per batch),
//! 4. for comparison, also stores the SHA1 fingerprint of every URL in a
//!    Redis SET (what Scrapy-Redis does) and compares memory.
//!
//! Run it with `cargo run --example demo`.

#[path = "../tests/support/harness.rs"]
mod harness;

mod common;

use common::{human_bytes, thousands, Rng};
use rotabloom::BloomFilter;
use std::collections::HashMap;

const STREAM_LEN: usize = 20_000;
const BATCH: usize = 1_000;
const CAPACITY: u64 = 20_000;
const ERROR_RATE: f64 = 0.001;

static HOSTS: [&str; 3] = ["news.example.com", "shop.example.org", "blog.example.net"];
static NAV: [&str; 8] = [
    "/",
    "/about",
    "/contact",
    "/login",
    "/search",
    "/sitemap.xml",
    "/category/world",
    "/category/tech",
];

/// The links a crawler extracts from the pages it fetches, in order: many
/// navigation links (on every page), popular articles linked again and
/// again, and a long tail of links seen about once.
fn frontier(n: usize) -> Vec<String> {
    let mut rng = Rng::new(2026);
    (0..n)
        .map(|_| {
            let host = *rng.pick(&HOSTS);
            match rng.below(100) {
                0..=29 => format!("https://{host}{}", rng.pick(&NAV)),
                30..=69 => format!("https://{host}/article/{}", rng.below(600)),
                _ => format!("https://{host}/item/{}?ref=feed", rng.below(1_000_000)),
            }
        })
        .collect()
}

/// Scrapy-Redis's way, for comparison: SADD the 40-hex SHA1 fingerprint of
/// every URL to a SET (computed inside Redis with `redis.sha1hex`).
const SADD_SHA1: &str = r"
for _, url in ipairs(ARGV) do
  redis.call('SADD', KEYS[1], redis.sha1hex(url))
end
return redis.call('SCARD', KEYS[1])
";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let redis = harness::external_or_private();
    let private = redis.is_private();
    println!("{}", common::describe_redis(&redis.url(), private));
    let mut conn = redis.connection();

    let name = common::filter_name("crawl-seen", private);
    let seen = BloomFilter::builder(name.as_str())
        .capacity(CAPACITY)
        .error_rate(ERROR_RATE)
        .create_or_open(&mut conn)?;
    println!(
        "BloomFilter {name:?}: sized for {} URLs at a {}% false-positive rate\n",
        thousands(CAPACITY),
        ERROR_RATE * 100.0
    );

    let stream = frontier(STREAM_LEN);
    let set_key = format!("demo:{name}:sha1-fingerprints");
    let sadd = redis::Script::new(SADD_SHA1);

    // The truth, kept in this process to check the filter's answers.
    let mut first_seen_at: HashMap<&str, usize> = HashMap::new();
    let (mut new, mut false_positives) = (0u64, 0u64);
    let mut samples = Vec::new();
    let (mut new_samples, mut seen_samples) = (0, 0);
    let mut set_card = 0u64;

    for (b, batch) in stream.chunks(BATCH).enumerate() {
        // One batched call: for each URL, "was it new?" (and now it is seen).
        let answers = seen.check_and_insert_many(&mut conn, batch)?;
        set_card = sadd.key(&set_key).arg(batch).invoke(&mut conn)?;

        for (i, (url, &is_new)) in batch.iter().zip(&answers).enumerate() {
            let pos = b * BATCH + i;
            let first = *first_seen_at.entry(url.as_str()).or_insert(pos);
            let truly_new = first == pos;
            // A Bloom filter never forgets: a repeated URL is never "new".
            assert!(truly_new || !is_new, "{url} was reported new twice");
            if is_new {
                new += 1;
            } else if truly_new {
                false_positives += 1; // a new URL the filter thought it had seen
            }
            if is_new && new_samples < 4 {
                new_samples += 1;
                samples.push(format!("  #{pos:<5} new   {url}"));
            } else if !is_new && seen_samples < 4 {
                seen_samples += 1;
                samples.push(format!("  #{pos:<5} seen  {url}   (first at #{first})"));
            }
        }
    }

    println!("first decisions (crawl if new, drop if seen):");
    for line in &samples {
        println!("{line}");
    }

    let distinct = first_seen_at.len() as u64;
    let dups = STREAM_LEN as u64 - new;
    let info = seen.info(&mut conn)?;
    let g = &info.generations[0];
    let set_bytes: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&set_key)
        .arg("SAMPLES")
        .arg(0)
        .query(&mut conn)?;
    let per_fp = set_bytes as f64 / set_card as f64;
    let bits_100m = rotabloom::optimal_bits(100_000_000, ERROR_RATE)?;

    println!("\nsummary");
    println!(
        "  URLs in the stream         {:>7}",
        thousands(STREAM_LEN as u64)
    );
    println!("  new (crawled)              {:>7}", thousands(new));
    println!(
        "  duplicates dropped         {:>7}   ({:.0}% of the stream)",
        thousands(dups),
        100.0 * dups as f64 / STREAM_LEN as f64
    );
    println!(
        "  false positives            {:>7}   (new URLs taken for seen; the {}% budget allows {})",
        false_positives,
        ERROR_RATE * 100.0,
        (ERROR_RATE * distinct as f64).floor()
    );
    println!(
        "  filter: {} bits, {} hashes, {} in Redis, fill {:.1}%, FPR now {:.5}%",
        thousands(g.bits),
        g.hashes,
        human_bytes(info.memory_bytes as f64),
        100.0 * g.fill_ratio,
        100.0 * info.false_positive_rate
    );
    println!(
        "  SET of SHA1 fingerprints: {} members, {} (MEMORY USAGE), {per_fp:.0} bytes each",
        thousands(set_card),
        human_bytes(set_bytes as f64)
    );
    println!(
        "  -> the filter is {:.0}x smaller here",
        set_bytes as f64 / info.memory_bytes as f64
    );
    println!(
        "  at 100M URLs: filter {} at {}%, SET about {} ({per_fp:.0} B each;\n  \
         the seeds' '2 GB' counts only the 20 raw bytes of each fingerprint)",
        human_bytes(bits_100m.div_ceil(8) as f64),
        ERROR_RATE * 100.0,
        human_bytes(per_fp * 1e8)
    );

    // The claims above, checked.
    assert_eq!(
        new + false_positives,
        distinct,
        "every URL is new or a false positive"
    );
    assert_eq!(info.count, new, "the filter counts what it inserted");
    assert_eq!(set_card, distinct, "the SET holds one fingerprint per URL");
    assert!(
        false_positives as f64 <= ERROR_RATE * distinct as f64,
        "{false_positives} false positives is above the {ERROR_RATE} budget"
    );
    assert!(dups > STREAM_LEN as u64 / 2, "the stream is mostly repeats");
    assert!(
        info.memory_bytes * 10 < set_bytes,
        "the filter should be at least 10x smaller than the SET"
    );

    seen.drop(&mut conn)?;
    redis::cmd("DEL").arg(&set_key).exec(&mut conn)?;
    println!("\nok");
    Ok(())
}
