//! One timed operation: batches handed out in order, sync or async, one
//! or two in flight, with the CPU time of both sides.

use crate::ctx::{e, Ctx};
use crate::facts::info_field;
use crate::targets::{Api, Handle, Op, R};
use redis::aio::MultiplexedConnection;
use redis::Connection;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

// Timed runs

/// Batches handed out in order, from a shared counter, until the items run
/// out or the deadline passes (checked before taking a batch). Every batch
/// taken is finished, so the items processed are always a prefix of the
/// input, whichever worker took them.
pub struct Work<'a> {
    pub items: &'a [String],
    pub batch: usize,
    pub next: AtomicUsize,
    pub deadline: Instant,
}

impl<'a> Work<'a> {
    pub fn new(items: &'a [String], batch: usize, secs: f64) -> Work<'a> {
        Work {
            items,
            batch,
            next: AtomicUsize::new(0),
            deadline: Instant::now() + Duration::from_secs_f64(secs),
        }
    }

    pub fn take(&self) -> Option<&'a [String]> {
        if Instant::now() >= self.deadline {
            return None;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) * self.batch;
        if start >= self.items.len() {
            return None;
        }
        Some(&self.items[start..(start + self.batch).min(self.items.len())])
    }
}

/// What one timed operation did.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    pub secs: f64,
    /// Items processed (a prefix of the input; fewer than all when the
    /// time cap stopped it).
    pub done: usize,
    /// Positive answers among them.
    pub positives: usize,
    /// Server CPU seconds (INFO cpu, user + sys) per elapsed second: near 1
    /// means the single-threaded server was the bottleneck.
    pub server_busy: f64,
    /// Client CPU seconds (the threads doing the work) per elapsed second.
    pub client_busy: f64,
}

/// CPU time of the calling thread so far, in seconds (Linux
/// `/proc/thread-self/schedstat`, nanoseconds); 0 where unavailable.
pub fn thread_cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// The server's CPU seconds so far (user + sys, all its threads).
pub fn server_cpu(conn: &mut Connection) -> R<f64> {
    let info: String = redis::cmd("INFO").arg("cpu").query(conn).map_err(e)?;
    let f = |k: &str| info_field(&info, k).parse::<f64>().unwrap_or(0.0);
    Ok(f("used_cpu_user") + f("used_cpu_sys"))
}

/// How a timed operation hands out its items.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub batch: usize,
    /// Batches in flight.
    pub inflight: usize,
    /// Seconds after which no new batch is taken.
    pub cap: f64,
}

/// Times `op` over `items` in batches of `shape`, stopping early after its
/// cap. Connections are made and warmed up (a `contains` of other items)
/// before the clock starts.
pub fn timed(ctx: &Ctx, h: &Handle, api: Api, op: Op, items: &[String], shape: Shape) -> R<Timed> {
    let mut probe = ctx.client1.get_connection().map_err(e)?;
    let cpu0 = server_cpu(&mut probe)?;
    let mut t = timed_inner(ctx, h, api, op, items, shape)?;
    let cpu1 = server_cpu(&mut probe)?;
    // The warm-up and the two INFO calls fall outside `secs` but inside
    // the CPU delta; they are tiny next to the timed work.
    t.server_busy = (cpu1 - cpu0) / t.secs.max(1e-9);
    Ok(t)
}

pub fn timed_inner(
    ctx: &Ctx,
    h: &Handle,
    api: Api,
    op: Op,
    items: &[String],
    shape: Shape,
) -> R<Timed> {
    let Shape {
        batch,
        inflight,
        cap,
    } = shape;
    let warm = &ctx.warmup[..batch.min(100)];
    match api {
        Api::Sync => {
            let mut conns = ctx.sync_conns(inflight)?;
            for c in conns.iter_mut() {
                h.sync(c, Op::Contains, warm)?;
            }
            let barrier = Barrier::new(inflight + 1);
            let work = Work::new(items, batch, cap);
            std::thread::scope(|s| {
                let workers: Vec<_> = conns
                    .iter_mut()
                    .map(|c| {
                        let (barrier, work) = (&barrier, &work);
                        s.spawn(move || -> R<(usize, usize, f64)> {
                            barrier.wait();
                            let cpu0 = thread_cpu();
                            let (mut done, mut pos) = (0, 0);
                            while let Some(chunk) = work.take() {
                                pos += h.sync(c, op, chunk)?;
                                done += chunk.len();
                            }
                            Ok((done, pos, thread_cpu() - cpu0))
                        })
                    })
                    .collect();
                barrier.wait();
                let t0 = Instant::now();
                let (mut done, mut positives, mut cpu) = (0, 0, 0.0);
                let mut first_err = None;
                for w in workers {
                    match w.join() {
                        Ok(Ok((d, p, c))) => {
                            done += d;
                            positives += p;
                            cpu += c;
                        }
                        Ok(Err(er)) => {
                            first_err.get_or_insert(er);
                        }
                        Err(_) => {
                            first_err.get_or_insert("worker thread panicked".to_string());
                        }
                    }
                }
                let secs = t0.elapsed().as_secs_f64();
                match first_err {
                    Some(er) => Err(er),
                    None => Ok(Timed {
                        secs,
                        done,
                        positives,
                        server_busy: 0.0,
                        client_busy: cpu / secs.max(1e-9),
                    }),
                }
            })
        }
        Api::Async => {
            let conn = ctx.async_conn()?;
            ctx.rt.block_on(async {
                let mut wc = conn.clone();
                h.run_async(&mut wc, Op::Contains, warm).await?;
                async fn worker(
                    h: &Handle,
                    mut conn: MultiplexedConnection,
                    op: Op,
                    work: &Work<'_>,
                ) -> R<(usize, usize)> {
                    let (mut done, mut pos) = (0, 0);
                    while let Some(chunk) = work.take() {
                        pos += h.run_async(&mut conn, op, chunk).await?;
                        done += chunk.len();
                    }
                    Ok((done, pos))
                }
                let work = Work::new(items, batch, cap);
                let cpu0 = thread_cpu();
                let t0 = Instant::now();
                let (done, positives) = if inflight == 1 {
                    worker(h, conn, op, &work).await?
                } else {
                    let (a, b) = tokio::join!(
                        worker(h, conn.clone(), op, &work),
                        worker(h, conn.clone(), op, &work)
                    );
                    let (a, b) = (a?, b?);
                    (a.0 + b.0, a.1 + b.1)
                };
                let secs = t0.elapsed().as_secs_f64();
                Ok(Timed {
                    secs,
                    done,
                    positives,
                    server_busy: 0.0,
                    client_busy: (thread_cpu() - cpu0) / secs.max(1e-9),
                })
            })
        }
    }
}
