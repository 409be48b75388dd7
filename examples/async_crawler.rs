//! A small async crawler: several tokio tasks share a frontier and skip the
//! links they have seen through a Bloom filter in Redis.
//!
//! The example serves its own synthetic website on `127.0.0.1:0` (a
//! hand-written HTTP/1.1 server: pages `/page/N`, each linking to five
//! others, with cycles) and crawls it with a hand-written HTTP GET client.
//! Every link found goes through `check_and_insert_many_async` on a shared
//! `redis::aio::MultiplexedConnection`: one batched call per page, and only
//! the links that were new are queued. A cycle or a link found by two
//! workers at once is therefore fetched once.
//!
//! The server counts its hits, so the example can check that every page
//! was fetched exactly once. A `CircularFilter` (re-crawl after a window)
//! has the same methods and would work the same way.
//!
//! Only tokio's `net`, `sync` and `time` are used, no HTTP crates.
//!
//! Run it with `cargo run --example async_crawler`.

#[path = "../tests/support/harness.rs"]
mod harness;

mod common;

use common::thousands;
use redis::aio::MultiplexedConnection;
use rotabloom::BloomFilter;
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

type Error = Box<dyn std::error::Error + Send + Sync>;

const PAGES: u64 = 300;
const WORKERS: usize = 8;
/// Fail instead of hanging if something goes wrong.
const DEADLINE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------
// The synthetic website

/// The links on page `n`: the next page, two "related" pages, the parent
/// and the home page. Deterministic, full of cycles, and every page is
/// reachable from `/page/0`.
fn links_of(n: u64) -> [u64; 5] {
    [
        (n + 1) % PAGES,
        (n * 7 + 3) % PAGES,
        (n * 13 + 5) % PAGES,
        n / 2,
        0,
    ]
}

fn page_html(n: u64) -> String {
    let items: String = links_of(n)
        .iter()
        .map(|m| format!("<li><a href=\"/page/{m}\">page {m}</a></li>"))
        .collect();
    format!("<html><head><title>Page {n}</title></head><body><h1>Page {n}</h1><ul>{items}</ul></body></html>")
}

/// Accepts connections forever, one task each; `hits[n]` counts the
/// requests for `/page/n`.
async fn serve(listener: TcpListener, hits: Arc<Vec<AtomicU32>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let hits = hits.clone();
        tokio::spawn(async move {
            let _ = handle(stream, &hits).await;
        });
    }
}

async fn handle(stream: TcpStream, hits: &[AtomicU32]) -> io::Result<()> {
    let request = read_until(&stream, Some(b"\r\n\r\n")).await?;
    let request = String::from_utf8_lossy(&request);
    // "GET /page/17 HTTP/1.1"
    let path = request.split(' ').nth(1).unwrap_or("");
    let page = path
        .strip_prefix("/page/")
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|&n| n < PAGES);
    let (status, body) = match page {
        Some(n) => {
            hits[n as usize].fetch_add(1, Ordering::SeqCst);
            ("200 OK", page_html(n))
        }
        None => ("404 Not Found", "not found".to_string()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    write_all(&stream, response.as_bytes()).await
}

// ---------------------------------------------------------------------------
// Minimal HTTP client and socket helpers (tokio `net` only)

async fn write_all(stream: &TcpStream, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        stream.writable().await?;
        match stream.try_write(buf) {
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads until `stop` has been received, or to the end of the stream.
async fn read_until(stream: &TcpStream, stop: Option<&[u8]>) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        stream.readable().await?;
        match stream.try_read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if stop.is_some_and(|s| out.windows(s.len()).any(|w| w == s)) {
                    return Ok(out);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

/// `GET path` over a fresh connection: the status code and the body.
async fn get(addr: SocketAddr, path: &str) -> Result<(u16, String), Error> {
    let stream = TcpStream::connect(addr).await?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: rotabloom-example\r\nConnection: close\r\n\r\n"
    );
    write_all(&stream, request.as_bytes()).await?;
    let response = String::from_utf8(read_until(&stream, None).await?)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or("malformed HTTP response")?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("malformed HTTP status line")?;
    Ok((status, body.to_string()))
}

/// The `href="..."` targets of a page.
fn hrefs(body: &str) -> impl Iterator<Item = &str> {
    body.split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
}

// ---------------------------------------------------------------------------
// The crawler

/// Paths waiting to be fetched, shared by the workers.
#[derive(Default)]
struct Frontier {
    queue: Mutex<VecDeque<String>>,
    /// Queued plus being fetched: the crawl is over when it reaches 0.
    pending: AtomicUsize,
    /// A worker failed: everyone stops.
    failed: AtomicBool,
    wake: Notify,
}

#[derive(Default)]
struct Stats {
    pages: AtomicU64,
    links: AtomicU64,
    new: AtomicU64,
    log: Mutex<Vec<String>>,
}

async fn worker(
    id: usize,
    addr: SocketAddr,
    frontier: Arc<Frontier>,
    seen: BloomFilter,
    mut conn: MultiplexedConnection,
    stats: Arc<Stats>,
) -> Result<(), Error> {
    let result = crawl_loop(id, addr, &frontier, &seen, &mut conn, &stats).await;
    if result.is_err() {
        frontier.failed.store(true, Ordering::SeqCst);
        frontier.wake.notify_waiters();
    }
    result
}

async fn crawl_loop(
    id: usize,
    addr: SocketAddr,
    frontier: &Frontier,
    seen: &BloomFilter,
    conn: &mut MultiplexedConnection,
    stats: &Stats,
) -> Result<(), Error> {
    loop {
        // Register for wake-ups before looking, so none is missed.
        let notified = frontier.wake.notified();
        let next = frontier.queue.lock().expect("queue").pop_front();
        let Some(path) = next else {
            if frontier.pending.load(Ordering::SeqCst) == 0
                || frontier.failed.load(Ordering::SeqCst)
            {
                return Ok(());
            }
            notified.await;
            continue;
        };

        let (status, body) = get(addr, &path).await?;
        if status != 200 {
            return Err(format!("GET {path}: HTTP {status}").into());
        }
        let links: Vec<String> = hrefs(&body).map(|h| format!("http://{addr}{h}")).collect();
        // One batched call: which of these links are new? (and mark them seen)
        let new = seen.check_and_insert_many_async(conn, &links).await?;
        let fresh: Vec<String> = links
            .iter()
            .zip(&new)
            .filter(|(_, &is_new)| is_new)
            .map(|(url, _)| url[format!("http://{addr}").len()..].to_string())
            .collect();

        stats.pages.fetch_add(1, Ordering::SeqCst);
        stats.links.fetch_add(links.len() as u64, Ordering::SeqCst);
        stats.new.fetch_add(fresh.len() as u64, Ordering::SeqCst);
        {
            let mut log = stats.log.lock().expect("log");
            if log.len() < 6 {
                log.push(format!(
                    "  worker {id}  GET {path:<10} {status}  {} links, {} new",
                    links.len(),
                    fresh.len()
                ));
            }
        }

        frontier.pending.fetch_add(fresh.len(), Ordering::SeqCst);
        frontier.queue.lock().expect("queue").extend(fresh);
        frontier.pending.fetch_sub(1, Ordering::SeqCst); // this page is done
        frontier.wake.notify_waiters();
    }
}

async fn crawl(client: redis::Client, name: String) -> Result<(), Error> {
    // The website.
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let hits: Arc<Vec<AtomicU32>> = Arc::new((0..PAGES).map(|_| AtomicU32::new(0)).collect());
    let server = tokio::spawn(serve(listener, hits.clone()));
    println!(
        "synthetic site: {PAGES} pages at http://{addr}/page/0 .. /page/{}, 5 links each (with cycles)",
        PAGES - 1
    );

    // The filter, through one multiplexed connection that all workers share.
    let mut conn = client.get_multiplexed_async_connection().await?;
    let seen = BloomFilter::builder(name.as_str())
        .capacity(100_000)
        .error_rate(0.001)
        .create_or_open_async(&mut conn)
        .await?;
    println!("{WORKERS} workers share one frontier; links go through BloomFilter {name:?}\n");

    let frontier = Arc::new(Frontier::default());
    let start = format!("http://{addr}/page/0");
    assert!(seen.check_and_insert_async(&mut conn, &start).await?);
    frontier.pending.store(1, Ordering::SeqCst);
    frontier
        .queue
        .lock()
        .expect("queue")
        .push_back("/page/0".to_string());

    let stats = Arc::new(Stats::default());
    let began = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|id| {
            tokio::spawn(worker(
                id,
                addr,
                frontier.clone(),
                seen.clone(),
                conn.clone(),
                stats.clone(),
            ))
        })
        .collect();
    for w in workers {
        w.await??;
    }
    let elapsed = began.elapsed();
    server.abort();

    println!("first fetches:");
    for line in stats.log.lock().expect("log").iter() {
        println!("{line}");
    }
    let pages = stats.pages.load(Ordering::SeqCst);
    let links = stats.links.load(Ordering::SeqCst);
    let new = stats.new.load(Ordering::SeqCst);
    let count = seen.count_async(&mut conn).await?;
    println!("\nsummary");
    println!("  pages crawled      {:>6}", thousands(pages));
    println!("  links seen         {:>6}", thousands(links));
    println!(
        "  new links queued   {:>6}   (+1 start page)",
        thousands(new)
    );
    println!("  duplicates skipped {:>6}", thousands(links - new));
    println!("  URLs in the filter {:>6}", thousands(count));
    println!("  time               {:>6.2} s", elapsed.as_secs_f64());

    // The claims above, checked.
    for (n, h) in hits.iter().enumerate() {
        let h = h.load(Ordering::SeqCst);
        assert_eq!(h, 1, "/page/{n} was fetched {h} times");
    }
    assert_eq!(pages, PAGES, "every page crawled");
    assert_eq!(links, 5 * PAGES, "five links per page");
    assert_eq!(new, PAGES - 1, "each page but the start queued once");
    assert_eq!(count, PAGES, "one filter entry per page");
    println!("every one of the {PAGES} pages was fetched exactly once");

    seen.drop_async(&mut conn).await?;
    Ok(())
}

fn main() -> Result<(), Error> {
    let redis = harness::external_or_private();
    let private = redis.is_private();
    println!("{}", common::describe_redis(&redis.url(), private));
    let name = common::filter_name("crawl-async", private);

    // The runtime is built here, not with #[tokio::main], so that the Redis
    // server (owned by `main`) is stopped even if the crawl panics.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        tokio::time::timeout(DEADLINE, crawl(redis.client(), name))
            .await
            .map_err(|_| format!("the crawl did not finish within {DEADLINE:?}"))?
    })?;
    println!("\nok");
    Ok(())
}
