//! Two async operations sharing one multiplexed connection, on one thread,
//! against a real, private redis-server: a request one of them has handed
//! to the connection is on the server before the other takes the thread
//! for its next step. Otherwise the server idles while the other hashes
//! and packs its batch, and two batches in flight run no faster than one
//! (issue 30, point 4).

#[path = "support/harness.rs"]
mod harness;

use harness::RedisServer;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::{Cmd, Pipeline, RedisFuture, Value};
use rotabloom::BloomFilter;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

/// The server's count of the first operation's requests that reached it.
const ARRIVED: &str = "test:arrived";

/// What the two taps share: how many requests the first operation handed
/// over, whether one is unanswered, and what the second one saw.
#[derive(Default)]
struct Probe {
    handed: AtomicU64,
    in_flight: AtomicBool,
    /// Hand-overs of the second operation while the first had a request
    /// unanswered, and how many of those found it not yet on the server.
    overlapped: AtomicU64,
    missing: AtomicU64,
}

/// A connection that marks or checks each request it is handed.
#[derive(Clone)]
struct Tap {
    inner: MultiplexedConnection,
    first: bool,
    probe: Arc<Probe>,
    /// A blocking connection to look at the server with (second tap).
    look: Arc<Mutex<redis::Connection>>,
}

impl Tap {
    /// Whether every request the first operation handed over has reached
    /// the server. Its last one, once written, is read by the server in
    /// the same event-loop pass as the first look or before, so two looks
    /// decide without waiting on any clock.
    fn first_arrived(&self) -> bool {
        let want = self.probe.handed.load(SeqCst);
        let mut look = self.look.lock().unwrap();
        (0..2).any(|_| {
            let n: Option<u64> = redis::cmd("GET").arg(ARRIVED).query(&mut *look).unwrap();
            n.unwrap_or(0) == want
        })
    }
}

impl ConnectionLike for Tap {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.inner.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            if !self.first {
                if self.probe.in_flight.load(SeqCst) {
                    self.probe.overlapped.fetch_add(1, SeqCst);
                    if !self.first_arrived() {
                        self.probe.missing.fetch_add(1, SeqCst);
                    }
                }
                return self.inner.req_packed_commands(cmd, offset, count).await;
            }
            // The first operation's requests end with a marker the server
            // counts when it runs them.
            let mut marked = redis::pipe();
            for c in cmd.cmd_iter() {
                marked.add_command(c.clone());
            }
            marked.cmd("INCR").arg(ARRIVED);
            self.probe.handed.fetch_add(1, SeqCst);
            self.probe.in_flight.store(true, SeqCst);
            let r = self
                .inner
                .req_packed_commands(&marked, offset, count + 1)
                .await;
            self.probe.in_flight.store(false, SeqCst);
            let mut values = r?;
            values.pop();
            Ok(values)
        })
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

async fn batches(f: &BloomFilter, mut conn: Tap, tag: &str) -> Vec<bool> {
    let mut out = Vec::new();
    for b in 0..30 {
        let items: Vec<String> = (0..10).map(|i| format!("{tag}/{b}/{i}")).collect();
        out.extend(
            f.check_and_insert_many_async(&mut conn, &items)
                .await
                .unwrap(),
        );
    }
    out
}

#[test]
fn a_request_handed_to_a_shared_connection_is_sent_before_another_step_runs() {
    let server = RedisServer::start();
    let mut conn = server.connection();
    let f = BloomFilter::builder("shared")
        .capacity(100_000)
        .error_rate(0.001)
        .create_or_open(&mut conn)
        .unwrap();
    // A runtime of one thread, the two operations as branches of one
    // `join!`: the shape in which nothing but the operations themselves can
    // let the connection's writer run between them.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = server.client();
    let probe = Arc::new(Probe::default());
    let look = Arc::new(Mutex::new(server.connection()));
    let (a, b) = rt.block_on(async {
        let inner = client.get_multiplexed_async_connection().await.unwrap();
        let tap = |first| Tap {
            inner: inner.clone(),
            first,
            probe: Arc::clone(&probe),
            look: Arc::clone(&look),
        };
        tokio::join!(batches(&f, tap(true), "a"), batches(&f, tap(false), "b"))
    });
    // Every item was new, once.
    assert_eq!(a.len(), 300);
    assert!(a.iter().chain(&b).all(|&new| new));
    let overlapped = probe.overlapped.load(SeqCst);
    assert!(
        overlapped > 0,
        "the two operations never had requests in flight together"
    );
    assert_eq!(
        probe.missing.load(SeqCst),
        0,
        "of {overlapped} requests handed over while the other operation's was in flight"
    );
}
