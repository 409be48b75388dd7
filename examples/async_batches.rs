//! Items per second of `check_and_insert_many_async` in batches, over one
//! multiplexed connection with `--in-flight` batches at once: the Rust
//! async API's row of scripts/bench/aio_batches.py, which runs it beside
//! the Python classes on the same server.
//!
//! ```text
//! cargo run --release --example async_batches -- URL NAME ITEMS BATCH IN_FLIGHT
//! ```
//!
//! The filter NAME must exist; the items are `r-<run>-<i>` for a fresh
//! run number, so every item is new. Prints one line: `items_per_second`.

use rotabloom::connect::{Target, TlsOptions};
use rotabloom::AnyFilter;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T, Error> {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("argument {i}: {what}").into())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    let url: String = arg(&args, 1, "URL")?;
    let name: String = arg(&args, 2, "filter name")?;
    let items: usize = arg(&args, 3, "items")?;
    let batch: usize = arg(&args, 4, "batch size")?;
    let in_flight: usize = arg(&args, 5, "batches in flight")?;
    let run = std::process::id();
    let target = Target::parse(&url, TlsOptions::default())?;
    let mut conn = target.connect_async().await?;
    let f = Arc::new(AnyFilter::open_async(&mut conn, &name).await?);
    let batches = items.div_ceil(batch);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let workers = (0..in_flight).map(|_| {
        let (f, next, mut conn) = (Arc::clone(&f), Arc::clone(&next), conn.clone());
        tokio::spawn(async move {
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                if b >= batches {
                    return Ok::<_, rotabloom::Error>(());
                }
                let part: Vec<String> = (b * batch..((b + 1) * batch).min(items))
                    .map(|i| format!("r-{run}-{i}"))
                    .collect();
                f.check_and_insert_many_async(&mut conn, &part).await?;
            }
        })
    });
    for w in workers.collect::<Vec<_>>() {
        w.await??;
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{:.0}", items as f64 / secs);
    Ok(())
}
