// Temporary probe (not committed).
use rotabloom::BloomFilter;
use std::time::Instant;
#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = std::env::args().nth(1).unwrap();
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut c = client.get_connection().unwrap();
    let items: Vec<String> = (0..200_000)
        .map(|i| format!("https://example.com/path/{i}"))
        .collect();
    for (inflight, separate) in [
        (1usize, false),
        (2, false),
        (2, true),
        (1, false),
        (2, false),
        (2, true),
    ] {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let f = BloomFilter::builder("p")
            .capacity(10_000_000)
            .error_rate(0.001)
            .create_or_open(&mut c)
            .unwrap();
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
        let conn = client.get_multiplexed_async_connection().await.unwrap();
        let conn2 = if separate {
            client.get_multiplexed_async_connection().await.unwrap()
        } else {
            conn.clone()
        };
        let t0 = Instant::now();
        let chunks: Vec<&[String]> = items.chunks(1000).collect();
        if inflight == 1 {
            let mut cc = conn.clone();
            for ch in &chunks {
                f.check_and_insert_many_async(&mut cc, *ch).await.unwrap();
            }
        } else {
            let (a, b): (Vec<_>, Vec<_>) = chunks.iter().enumerate().partition(|(i, _)| i % 2 == 0);
            let (f1, f2) = (f.clone(), f.clone());
            let (mut c1, mut c2) = (conn.clone(), conn2.clone());
            tokio::join!(
                async {
                    for (_, ch) in &a {
                        f1.check_and_insert_many_async(&mut c1, **ch).await.unwrap();
                    }
                },
                async {
                    for (_, ch) in &b {
                        f2.check_and_insert_many_async(&mut c2, **ch).await.unwrap();
                    }
                }
            );
        }
        println!(
            "x{inflight} separate={separate}: {:.0} items/s",
            items.len() as f64 / t0.elapsed().as_secs_f64()
        );
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut c)
            .unwrap();
        for l in info.lines().filter(|l| l.starts_with("cmdstat_")) {
            println!("  {l}");
        }
    }
}
