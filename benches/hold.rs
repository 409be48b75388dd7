//! How long rotabloom's work on a large filter holds the Redis server
//! (issue 11, point 5): while a filter of 512 MiB or more is created,
//! inspected (`info`, as `status` does), loaded and filtered in batches of
//! 10,000 items (as `rotabloom load` and `filter` send them), cleared,
//! dumped, restored and dropped, a probe client sends `PING` on its own connection every
//! millisecond; each phase reports the probe's worst and 99th-percentile
//! round trip, and, from the server's own clock, the slowest single
//! command it ran (`SLOWLOG`, every command over 1 ms).
//!
//! `cargo bench --bench hold` (release build; `-- --mib N` for another
//! size). Without `--bench` (as `cargo test --all-targets` runs it) it is a
//! smoke test on a 16 MiB filter that only checks every phase works.

#[path = "../tests/support/harness.rs"]
mod harness;

use harness::RedisServer;
use rotabloom::{BloomFilter, CircularFilter};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PHASES: [&str; 9] = [
    "create", "info", "load", "filter", "clear", "dump", "restore", "drop", "rotate",
];

/// Items per batch in the load and filter phases, and batches per phase.
const BATCH: usize = 10_000;
const BATCHES: usize = 10;

fn batches(tag: &str) -> Vec<Vec<String>> {
    (0..BATCHES)
        .map(|b| {
            (0..BATCH)
                .map(|i| format!("https://{tag}.example/{b}/{i}"))
                .collect()
        })
        .collect()
}

/// PING round trips, in microseconds, per phase.
type Samples = Arc<Mutex<Vec<Vec<u64>>>>;

fn probe(
    server: &RedisServer,
    phase: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) -> (Samples, std::thread::JoinHandle<()>) {
    let samples: Samples = Arc::new(Mutex::new(vec![Vec::new(); PHASES.len()]));
    let out = samples.clone();
    let mut conn = server.connection();
    let handle = std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let p = phase.load(Ordering::Relaxed);
            let t = Instant::now();
            let _: String = redis::cmd("PING").query(&mut conn).expect("PING");
            let us = t.elapsed().as_micros() as u64;
            if p < PHASES.len() {
                out.lock().unwrap()[p].push(us);
            }
            // A sample per millisecond or so: the probe must not load the
            // machine it measures.
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    (samples, handle)
}

/// The slowest command in the slow log since the last call, with its
/// name, in microseconds; the log is reset.
fn slowest(conn: &mut redis::Connection) -> Option<(u64, String)> {
    let entries: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(1000)
        .query(conn)
        .ok()?;
    redis::cmd("SLOWLOG").arg("RESET").exec(conn).ok()?;
    entries
        .iter()
        .filter_map(|e| match e {
            redis::Value::Array(f) => {
                let us = match f.get(2) {
                    Some(redis::Value::Int(us)) => *us as u64,
                    _ => return None,
                };
                let name = match f.get(3) {
                    Some(redis::Value::Array(args)) => match args.first() {
                        Some(redis::Value::BulkString(b)) => {
                            String::from_utf8_lossy(b).into_owned()
                        }
                        _ => "?".into(),
                    },
                    _ => "?".into(),
                };
                Some((us, name))
            }
            _ => None,
        })
        .max()
}

fn quantile(v: &mut [u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench");
    let mib: u64 = args
        .iter()
        .position(|a| a == "--mib")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(if bench { 512 } else { 16 });
    let server = RedisServer::start_with(&[
        "--slowlog-log-slower-than",
        "1000",
        "--slowlog-max-len",
        "1000",
    ]);
    let mut conn = server.connection();
    let mut admin = server.connection();
    // Bits for about `mib` MiB at 1% (9.59 bits per item).
    let capacity = mib * 8 * (1 << 20) * 100 / 959;
    let phase = Arc::new(AtomicUsize::new(usize::MAX));
    let stop = Arc::new(AtomicBool::new(false));
    let (samples, handle) = probe(&server, phase.clone(), stop.clone());
    let file = server.dir().join("hold.rbdump");
    let mut took = Vec::new();
    let mut slow = Vec::new();
    slowest(&mut admin);
    for (i, name) in PHASES.iter().enumerate() {
        phase.store(i, Ordering::Relaxed);
        let t = Instant::now();
        match *name {
            "create" => {
                let f = BloomFilter::builder("big")
                    .capacity(capacity)
                    .error_rate(0.01)
                    .create_or_open(&mut conn)
                    .expect("create");
                // Some bits to count and to dump, set outside the phase: a
                // data operation is another matter than this bench's.
                phase.store(usize::MAX, Ordering::Relaxed);
                took.push(t.elapsed());
                let items: Vec<String> = (0..10_000).map(|i| format!("item-{i}")).collect();
                for batch in items.chunks(1000) {
                    f.insert_many(&mut conn, batch).expect("insert");
                }
                std::thread::sleep(Duration::from_millis(20));
                slow.push(slowest(&mut admin));
                continue;
            }
            "info" => {
                let f = BloomFilter::open(&mut conn, "big").expect("open");
                let info = f.info(&mut conn).expect("info");
                assert!(
                    info.memory_bytes >= mib << 20,
                    "{} bytes",
                    info.memory_bytes
                );
            }
            "load" => {
                let f = BloomFilter::open(&mut conn, "big").expect("open");
                for b in batches("load") {
                    f.insert_many(&mut conn, &b).expect("load");
                }
            }
            "filter" => {
                let f = BloomFilter::open(&mut conn, "big").expect("open");
                for b in batches("filter") {
                    f.check_and_insert_many(&mut conn, &b).expect("filter");
                }
            }
            "clear" => BloomFilter::open(&mut conn, "big")
                .expect("open")
                .clear(&mut conn)
                .expect("clear"),
            "dump" => {
                let mut out = std::io::BufWriter::new(std::fs::File::create(&file).expect("file"));
                rotabloom::dump::dump(&mut conn, "big", &mut out).expect("dump");
            }
            "restore" => {
                let input = std::io::BufReader::new(std::fs::File::open(&file).expect("file"));
                rotabloom::dump::restore(&mut conn, input, Some("copy")).expect("restore");
            }
            "rotate" => {
                // Three generations of a quarter of the size each; each
                // rotation drops (deletes) the oldest and makes a new one.
                phase.store(usize::MAX, Ordering::Relaxed);
                let c = CircularFilter::builder("ring")
                    .generations(3)
                    .capacity(capacity / 4)
                    .error_rate(0.01)
                    .create_or_open(&mut conn)
                    .expect("create ring");
                std::thread::sleep(Duration::from_millis(20));
                slowest(&mut admin);
                phase.store(i, Ordering::Relaxed);
                let t = Instant::now();
                for _ in 0..3 {
                    c.rotate(&mut conn).expect("rotate");
                }
                took.push(t.elapsed());
                std::thread::sleep(Duration::from_millis(20));
                slow.push(slowest(&mut admin));
                continue;
            }
            _ => {
                for n in ["big", "copy"] {
                    assert!(BloomFilter::open(&mut conn, n)
                        .expect("open")
                        .drop(&mut conn)
                        .expect("drop"));
                }
            }
        }
        took.push(t.elapsed());
        // Let the probe's last round trip of this phase land in it.
        std::thread::sleep(Duration::from_millis(20));
        slow.push(slowest(&mut admin));
    }
    stop.store(true, Ordering::Relaxed);
    handle.join().expect("probe");
    let _ = std::fs::remove_file(&file);
    let mut samples = samples.lock().unwrap();
    println!("hold: a {mib} MiB bloom filter ({capacity} items at 1%); PING every ms from another client");
    println!(
        "{:<8} {:>9} {:>8} {:>10} {:>10}  slowest command (server)",
        "phase", "took", "pings", "ping p99", "ping max"
    );
    for (i, name) in PHASES.iter().enumerate() {
        let s = &mut samples[i];
        let n = s.len();
        let p99 = quantile(s, 0.99);
        let max = s.iter().copied().max().unwrap_or(0);
        let worst = match &slow[i] {
            Some((us, cmd)) => format!("{:.1} ms ({cmd})", *us as f64 / 1000.0),
            None => "none over 1 ms".into(),
        };
        println!(
            "{name:<8} {:>7.0}ms {n:>8} {:>8.1}ms {:>8.1}ms  {worst}",
            took[i].as_secs_f64() * 1000.0,
            p99 as f64 / 1000.0,
            max as f64 / 1000.0,
        );
    }
}
