//! Library batches against a Redis Cluster, sharded or not: the figures of
//! `scripts/bench.sh --sharded` (docs/BENCHMARKS.md, "Sharded filters").
//!
//!     cargo run --release --example sharded_batches -- SEED_URL SHARDS ITEMS BATCH CONNS
//!
//! Creates `bench-sharded-SHARDS` (capacity ITEMS at 1%), sends ITEMS new
//! items as check-and-insert batches of BATCH, each batch split by shard
//! and sent over CONNS cluster connections at once, or with CONNS = 0 over
//! a plain connection to each master its shards lie on (each master's
//! parts side by side in one pipeline), and prints one JSON line: items
//! per second and this process's CPU seconds. The filter is dropped
//! afterwards.

use rotabloom::BloomFilter;
use std::time::Instant;

/// This process's CPU time (user + system), in seconds, from /proc.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<f64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13
    // after the state field here; clock ticks of 1/100 s on Linux.
    (fields.get(11).unwrap_or(&0.0) + fields.get(12).unwrap_or(&0.0)) / 100.0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [seed, shards, items, batch, conns] = &args[..] else {
        return Err("usage: sharded_batches SEED_URL SHARDS ITEMS BATCH CONNS".into());
    };
    let (shards, items, batch, conns): (u32, usize, usize, usize) = (
        shards.parse()?,
        items.parse()?,
        batch.parse()?,
        conns.parse()?,
    );
    let client = redis::cluster::ClusterClient::new(vec![seed.as_str()])?;
    let mut conn = client.get_connection()?;
    let name = format!("bench-sharded-{shards}");
    let f = BloomFilter::builder(name.as_str())
        .capacity(items as u64)
        .error_rate(0.01)
        .shards(shards)
        .create_or_open(&mut conn)?;
    let mut pool: Vec<rotabloom::connect::Connection> = if conns == 0 {
        let url = format!(
            "redis+cluster://{}",
            seed.trim_start_matches("redis://").trim_end_matches('/')
        );
        let target = rotabloom::connect::Target::parse(&url, Default::default())?;
        let mut pool = Vec::new();
        for master in f.group_masters(&mut conn) {
            pool.push(match master {
                Some(addr) => target.connect_to(&addr)?,
                None => target.connect()?,
            });
        }
        pool
    } else {
        (0..conns)
            .map(|_| {
                client
                    .get_connection()
                    .map(|c| rotabloom::connect::Connection::Cluster(Box::new(c)))
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    let mut new = 0usize;
    let mut buf: Vec<String> = Vec::with_capacity(batch);
    for start in (0..items).step_by(batch) {
        buf.clear();
        buf.extend((start..(start + batch).min(items)).map(|i| format!("https://example.com/{i}")));
        new += f
            .check_and_insert_many_on(&mut pool, &buf)?
            .iter()
            .filter(|&&b| b)
            .count();
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    f.drop(&mut conn)?;
    println!(
        "{{\"shards\":{shards},\"items\":{items},\"batch\":{batch},\"conns\":{conns},\"new\":{new},\"seconds\":{secs:.3},\"items_per_sec\":{:.0},\"client_cpu_seconds\":{cpu:.2}}}",
        items as f64 / secs
    );
    Ok(())
}
