//! The comparison benchmark of issue 6: rotabloom against raw pipelined
//! BITFIELD, RedisBloom and the seeds' package, on one private redis-server.
//!
//! Run it with `scripts/bench.sh [--quick]`, which provisions Redis, the
//! RedisBloom module and the seeds' package and pins the server and this
//! client to different cores. Directly: `cargo bench --bench compare --
//! [--quick] [options]` (see `--help`); without `--redisbloom` and
//! `--python` the RedisBloom and seed measurements are skipped.
//!
//! Method (docs/BENCHMARKS.md has the long form):
//!
//! * Every filter is built once as a template in database 0 (the expanding
//!   filter pre-filled); before each measured run database 1 is flushed and
//!   the template's keys are `COPY`ed into it, so every run starts from the
//!   same state. RedisBloom keys are made with `BF.RESERVE ... NONSCALING`,
//!   raw BITFIELD blocks are allocated with `SETRANGE`, also per run.
//! * A run times `insert` of the items into the fresh filter, then
//!   `contains` of the same items, then (after another reset)
//!   `check_and_insert` of them. Connections are opened and the scripts
//!   loaded (a warm-up `contains` of other items) before the clock starts.
//! * Runs are interleaved (run 1 of everything, then run 2, ...), and rows
//!   that are compared (same batch size, API and batches in flight) are
//!   measured back to back, so drift of the machine hits them alike; each
//!   row reports the median of the runs and their min/max.
//! * Each operation is capped in time (`--op-seconds`): batches are handed
//!   out in order until the items run out or the cap passes.
//! * "x2" rows keep two batches in flight: two blocking connections on two
//!   threads (sync), or two tasks sharing one multiplexed connection (async),
//!   each taking every other batch.

#[path = "../tests/support/harness.rs"]
mod harness;
#[path = "support/stats.rs"]
mod stats;
#[path = "support/targets.rs"]
mod targets;

use redis::aio::MultiplexedConnection;
use redis::Connection;
use rotabloom::{BloomFilter, CircularFilter, ExpandingFilter, Layout, Mode};
use serde_json::{json, Value};
use stats::{quantile, ratio, si, Summary};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use targets::{Api, Handle, Op, R};

const USAGE: &str = "\
compare: rotabloom vs raw BITFIELD vs RedisBloom vs scrapy-redis-bloomfilter

usage: compare --bench [--quick] [options]   (normally via scripts/bench.sh)

Without --bench (as `cargo test --all-targets` runs it) this is a smoke test:
a few thousand items, one run, correctness checks only, no JSON written;
other arguments are ignored then. `cargo bench` passes --bench itself.

  --quick                 fewer items (about 2 minutes in all)
  --out PATH              JSON results (default target/bench/results.json)
  --redisbloom PATH       redisbloom.so to --loadmodule (env BENCH_REDISBLOOM)
  --python PATH           python with scrapy-redis-bloomfilter (env BENCH_PYTHON)
  --seed-script PATH      scripts/bench/seed_bench.py (env BENCH_SEED_SCRIPT)
  --items N               items per run for batches of 100 and 1000
  --items-single N        items per run for batches of 1
  --runs N                runs per measurement (median, min, max; default 3)
  --latency-calls N       sequential calls per latency run
  --seed-items N          items per run of the seeds' package
  --op-seconds S          time cap of one timed operation: a run stops taking
                          new batches after S seconds and counts what it did
                          (default 10; 0.06 with --quick)
  --only a,b,...          only these targets (names as in the table)
  --no-x2                 skip the two-batches-in-flight rows

The redis-server binary is $REDIS_SERVER or redis-server from PATH
(scripts/bench.sh points REDIS_SERVER at a wrapper that pins it with taskset).
";

// ---------------------------------------------------------------------------
// Configuration

struct Cfg {
    quick: bool,
    /// Run by `cargo test`: tiny, checks answers, fails on errors.
    smoke: bool,
    items: usize,
    items_single: usize,
    runs: usize,
    latency_calls: usize,
    seed_items: usize,
    /// Time cap of one timed operation, seconds.
    op_seconds: f64,
    capacity: u64,
    p: f64,
    exp_n0: u64,
    exp_prefill: usize,
    out: PathBuf,
    redisbloom: Option<PathBuf>,
    python: Option<PathBuf>,
    seed_script: Option<PathBuf>,
    only: Option<Vec<String>>,
    x2: bool,
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn parse_args() -> Result<Cfg, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        std::process::exit(0);
    }
    if !args.iter().any(|a| a == "--bench") {
        return Ok(smoke_cfg());
    }
    let quick = args.iter().any(|a| a == "--quick");
    let mut cfg = Cfg {
        quick,
        smoke: false,
        // Quick mode: the time cap, not the item count, ends most runs.
        items: if quick { 200_000 } else { 1_000_000 },
        items_single: if quick { 2_000 } else { 20_000 },
        runs: 3,
        latency_calls: if quick { 3_000 } else { 10_000 },
        seed_items: if quick { 500 } else { 20_000 },
        op_seconds: if quick { 0.06 } else { 10.0 },
        capacity: 10_000_000,
        p: 0.001,
        // n0, then 2 n0, 4 n0, 8 n0 filled: four expansions either way.
        exp_n0: if quick { 10_000 } else { 100_000 },
        exp_prefill: if quick { 150_000 } else { 1_500_000 },
        out: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/results.json"),
        redisbloom: env_path("BENCH_REDISBLOOM"),
        python: env_path("BENCH_PYTHON"),
        seed_script: env_path("BENCH_SEED_SCRIPT"),
        only: None,
        x2: true,
    };
    let mut it = args.into_iter();
    let num = |v: Option<String>, name: &str| -> Result<usize, String> {
        v.ok_or(format!("{name} needs a value"))?
            .replace('_', "")
            .parse::<usize>()
            .map_err(|e| format!("{name}: {e}"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" | "--bench" => {} // cargo bench passes --bench
            "--out" => cfg.out = PathBuf::from(it.next().ok_or("--out needs a path")?),
            "--redisbloom" => cfg.redisbloom = it.next().map(PathBuf::from),
            "--python" => cfg.python = it.next().map(PathBuf::from),
            "--seed-script" => cfg.seed_script = it.next().map(PathBuf::from),
            "--items" => cfg.items = num(it.next(), "--items")?,
            "--items-single" => cfg.items_single = num(it.next(), "--items-single")?,
            "--runs" => cfg.runs = num(it.next(), "--runs")?,
            "--latency-calls" => cfg.latency_calls = num(it.next(), "--latency-calls")?,
            "--seed-items" => cfg.seed_items = num(it.next(), "--seed-items")?,
            "--op-seconds" => {
                cfg.op_seconds = it
                    .next()
                    .ok_or("--op-seconds needs a value")?
                    .parse()
                    .map_err(|er| format!("--op-seconds: {er}"))?
            }
            "--only" => {
                cfg.only = Some(
                    it.next()
                        .ok_or("--only needs a list")?
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .collect(),
                )
            }
            "--no-x2" => cfg.x2 = false,
            other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
        }
    }
    if cfg.runs < 1 || cfg.items < 1000 || cfg.items_single < 1 {
        return Err("--runs must be >= 1 and --items >= 1000".into());
    }
    Ok(cfg)
}

impl Cfg {
    fn mode_name(&self) -> &'static str {
        match (self.smoke, self.quick) {
            (true, _) => "smoke-test",
            (false, true) => "quick",
            (false, false) => "full",
        }
    }
}

/// The smoke test's configuration: every target and code path, briefly.
fn smoke_cfg() -> Cfg {
    Cfg {
        quick: true,
        smoke: true,
        items: 3_000,
        items_single: 20,
        runs: 1,
        latency_calls: 50,
        seed_items: 20,
        op_seconds: 0.02,
        capacity: 100_000,
        p: 0.001,
        exp_n0: 1_000,
        exp_prefill: 15_000,
        out: PathBuf::new(),
        redisbloom: env_path("BENCH_REDISBLOOM"),
        python: env_path("BENCH_PYTHON"),
        seed_script: env_path("BENCH_SEED_SCRIPT"),
        only: None,
        x2: true,
    }
}

// ---------------------------------------------------------------------------
// Targets

#[derive(Clone, Debug)]
enum Spec {
    Bloom,
    /// The base filter on the RedisBloom backend (one BF key).
    BloomOnRb,
    Expanding,
    Circular {
        n: u32,
        mode: Mode,
    },
    Raw,
    RedisBloom,
    RbWindow {
        n: u32,
        mode: Mode,
    },
}

struct Target {
    name: String,
    spec: Spec,
    /// Keys of the template in database 0 (rotabloom filters).
    template_keys: Vec<String>,
    /// Which row to divide by for "vs raw" / "vs RedisBloom".
    vs_raw: Option<String>,
    vs_rb: Option<String>,
}

/// Items per period of a circular filter of `n` generations: the window
/// holds `capacity` items in all, unless one run's items would not fit in
/// one period (RedisBloom's NONSCALING keys refuse items past capacity).
fn per_period(cfg: &Cfg, n: u32) -> u64 {
    cfg.capacity.div_ceil(u64::from(n)).max(cfg.items as u64)
}

fn window_rate(p: f64, n: u32) -> f64 {
    1.0 - (1.0 - p).powf(1.0 / f64::from(n))
}

fn mode_slug(mode: Mode) -> &'static str {
    match mode {
        Mode::InsertNewestQueryAll => "query-all",
        Mode::InsertAllQueryOldest => "query-oldest",
    }
}

fn all_targets(with_rb: bool) -> Vec<Target> {
    let mut t = Vec::new();
    let rb = |s: &str| with_rb.then(|| s.to_string());
    let mk = |name: String, spec: Spec, vs_raw: Option<String>, vs_rb: Option<String>| Target {
        name,
        spec,
        template_keys: Vec::new(),
        vs_raw,
        vs_rb,
    };
    let raw = Some("raw-bitfield".to_string());
    t.push(mk(
        "bloom".into(),
        Spec::Bloom,
        raw.clone(),
        rb("redisbloom"),
    ));
    t.push(mk(
        "expanding".into(),
        Spec::Expanding,
        raw.clone(),
        rb("redisbloom"),
    ));
    for n in [4u32, 12] {
        for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
            t.push(mk(
                format!("circular-{n}-{}", mode_slug(mode)),
                Spec::Circular { n, mode },
                raw.clone(),
                rb(&format!("redisbloom-window-{n}-{}", mode_slug(mode))),
            ));
        }
    }
    t.push(mk("raw-bitfield".into(), Spec::Raw, None, rb("redisbloom")));
    if with_rb {
        t.push(mk(
            "bloom-on-redisbloom".into(),
            Spec::BloomOnRb,
            raw.clone(),
            rb("redisbloom"),
        ));
        t.push(mk("redisbloom".into(), Spec::RedisBloom, raw.clone(), None));
        for n in [4u32, 12] {
            for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
                t.push(mk(
                    format!("redisbloom-window-{n}-{}", mode_slug(mode)),
                    Spec::RbWindow { n, mode },
                    raw.clone(),
                    None,
                ));
            }
        }
    }
    t
}

fn is_library(spec: &Spec) -> bool {
    matches!(
        spec,
        Spec::Bloom | Spec::BloomOnRb | Spec::Expanding | Spec::Circular { .. }
    )
}

// ---------------------------------------------------------------------------
// The bench context: server, clients, runtime

struct Ctx {
    cfg: Cfg,
    /// Working database (1); `c0` is on the template database (0).
    client1: redis::Client,
    url1: String,
    c0: Connection,
    c1: Connection,
    rt: tokio::runtime::Runtime,
    raw_layout: Layout,
    items: Arc<Vec<String>>,
    warmup: Vec<String>,
}

fn e<T: std::fmt::Display>(x: T) -> String {
    x.to_string()
}

impl Ctx {
    fn flush1(&mut self) -> R<()> {
        redis::cmd("FLUSHDB")
            .arg("SYNC")
            .query::<()>(&mut self.c1)
            .map_err(e)
    }

    fn raw_keys(&self) -> Vec<String> {
        (0..self.raw_layout.blocks)
            .map(|b| format!("raw:{{bench}}:{b}"))
            .collect()
    }

    fn rb_keys(spec: &Spec) -> Vec<String> {
        match spec {
            Spec::RedisBloom => vec!["rb:bloom".into()],
            Spec::RbWindow { n, mode } => (0..*n)
                .map(|i| format!("rb:w{n}:{}:{i}", mode_slug(*mode)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Builds the template of a rotabloom filter in database 0.
    fn build_template(&mut self, t: &mut Target) -> R<()> {
        let cfg = &self.cfg;
        let c0 = &mut self.c0;
        match &t.spec {
            Spec::Bloom => {
                BloomFilter::builder(&t.name)
                    .capacity(cfg.capacity)
                    .error_rate(cfg.p)
                    .create_or_open(c0)
                    .map_err(e)?;
            }
            Spec::Expanding => {
                let f = ExpandingFilter::builder(&t.name)
                    .capacity(cfg.exp_n0)
                    .error_rate(cfg.p)
                    .create_or_open(c0)
                    .map_err(e)?;
                let start = Instant::now();
                let mut from = 0;
                while from < cfg.exp_prefill {
                    let to = (from + 10_000).min(cfg.exp_prefill);
                    let chunk: Vec<String> = (from..to)
                        .map(|i| format!("https://example.com/prefill/{i}"))
                        .collect();
                    f.insert_many(c0, &chunk).map_err(e)?;
                    from = to;
                }
                let gens = f.generations();
                eprintln!(
                    "  expanding: pre-filled {} items in {:.1}s -> {} generations ({} expansions)",
                    cfg.exp_prefill,
                    start.elapsed().as_secs_f64(),
                    gens.len(),
                    gens.len().saturating_sub(1)
                );
            }
            Spec::Circular { n, mode } => {
                CircularFilter::builder(&t.name)
                    .generations(*n)
                    .mode(*mode)
                    .capacity(per_period(cfg, *n))
                    .error_rate(cfg.p)
                    .create_or_open(c0)
                    .map_err(e)?;
            }
            _ => return Ok(()),
        }
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("rotabloom:{{{}}}:*", t.name))
            .query(c0)
            .map_err(e)?;
        keys.sort();
        t.template_keys = keys;
        Ok(())
    }

    /// Puts `t` into database 1 in its starting state (without flushing
    /// anything else) and returns a fresh handle on it.
    fn prepare(&mut self, t: &Target) -> R<Handle> {
        match &t.spec {
            Spec::Bloom | Spec::Expanding | Spec::Circular { .. } => {
                let mut pipe = redis::pipe();
                for k in &t.template_keys {
                    pipe.cmd("COPY")
                        .arg(k)
                        .arg(k)
                        .arg("DB")
                        .arg(1)
                        .arg("REPLACE");
                }
                let copied: Vec<i64> = pipe.query(&mut self.c0).map_err(e)?;
                if copied.iter().any(|&c| c != 1) {
                    return Err(format!("COPY of {} failed: {copied:?}", t.name));
                }
                let c1 = &mut self.c1;
                // Frozen generations are mirrored in the client (issue 6,
                // part 3); the mirror is filled here, before timing.
                Ok(match &t.spec {
                    Spec::Bloom => Handle::Bloom(BloomFilter::open(c1, &t.name).map_err(e)?),
                    Spec::Expanding => {
                        let f = ExpandingFilter::open(c1, &t.name)
                            .map_err(e)?
                            .with_frozen_cache(1 << 30);
                        f.contains(c1, "warm-up").map_err(e)?;
                        Handle::Expanding(f)
                    }
                    _ => {
                        let f = CircularFilter::open(c1, &t.name)
                            .map_err(e)?
                            .with_frozen_cache(1 << 30);
                        f.contains(c1, "warm-up").map_err(e)?;
                        Handle::Circular(f)
                    }
                })
            }
            Spec::BloomOnRb => {
                // Module keys cannot be COPYed: made afresh for every run.
                let c1 = &mut self.c1;
                let keys: Vec<String> = redis::cmd("KEYS")
                    .arg(format!("rotabloom:{{{}}}:*", t.name))
                    .query(c1)
                    .map_err(e)?;
                if !keys.is_empty() {
                    redis::cmd("DEL").arg(&keys).query::<()>(c1).map_err(e)?;
                }
                let f = BloomFilter::builder(&t.name)
                    .capacity(self.cfg.capacity)
                    .error_rate(self.cfg.p)
                    .backend(rotabloom::Backend::RedisBloom)
                    .create_or_open(c1)
                    .map_err(e)?;
                Ok(Handle::Bloom(f))
            }
            Spec::Raw => {
                let keys = self.raw_keys();
                let bytes = self.raw_layout.block_bits().div_ceil(8);
                for k in &keys {
                    redis::cmd("SETRANGE")
                        .arg(k)
                        .arg(bytes - 1)
                        .arg(&b"\0"[..])
                        .query::<i64>(&mut self.c1)
                        .map_err(e)?;
                }
                Ok(Handle::Raw {
                    keys: Arc::new(keys),
                    layout: self.raw_layout,
                })
            }
            Spec::RedisBloom | Spec::RbWindow { .. } => {
                let keys = Self::rb_keys(&t.spec);
                // Sized as the circular filter's generations.
                let (rate, cap) = match t.spec {
                    Spec::RbWindow {
                        n,
                        mode: Mode::InsertNewestQueryAll,
                    } => (window_rate(self.cfg.p, n), per_period(&self.cfg, n)),
                    Spec::RbWindow {
                        n,
                        mode: Mode::InsertAllQueryOldest,
                    } => (self.cfg.p, per_period(&self.cfg, n) * u64::from(n)),
                    _ => (self.cfg.p, self.cfg.capacity),
                };
                for k in &keys {
                    redis::cmd("BF.RESERVE")
                        .arg(k)
                        .arg(rate)
                        .arg(cap)
                        .arg("NONSCALING")
                        .query::<()>(&mut self.c1)
                        .map_err(e)?;
                }
                Ok(Handle::RedisBloom {
                    keys: Arc::new(keys),
                    query_oldest: matches!(
                        t.spec,
                        Spec::RbWindow {
                            mode: Mode::InsertAllQueryOldest,
                            ..
                        }
                    ),
                })
            }
        }
    }

    /// Flushes database 1 and prepares `t` there.
    fn reset(&mut self, t: &Target) -> R<Handle> {
        self.flush1()?;
        self.prepare(t)
    }

    fn sync_conns(&self, n: usize) -> R<Vec<Connection>> {
        (0..n)
            .map(|_| self.client1.get_connection().map_err(e))
            .collect()
    }

    fn async_conn(&self) -> R<MultiplexedConnection> {
        let cfg = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        self.rt
            .block_on(
                self.client1
                    .get_multiplexed_async_connection_with_config(&cfg),
            )
            .map_err(e)
    }
}

// ---------------------------------------------------------------------------
// Timed runs

/// Batches handed out in order, from a shared counter, until the items run
/// out or the deadline passes (checked before taking a batch). Every batch
/// taken is finished, so the items processed are always a prefix of the
/// input, whichever worker took them.
struct Work<'a> {
    items: &'a [String],
    batch: usize,
    next: AtomicUsize,
    deadline: Instant,
}

impl<'a> Work<'a> {
    fn new(items: &'a [String], batch: usize, secs: f64) -> Work<'a> {
        Work {
            items,
            batch,
            next: AtomicUsize::new(0),
            deadline: Instant::now() + Duration::from_secs_f64(secs),
        }
    }

    fn take(&self) -> Option<&'a [String]> {
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
struct Timed {
    secs: f64,
    /// Items processed (a prefix of the input; fewer than all when the
    /// time cap stopped it).
    done: usize,
    /// Positive answers among them.
    positives: usize,
    /// Server CPU seconds (INFO cpu, user + sys) per elapsed second: near 1
    /// means the single-threaded server was the bottleneck.
    server_busy: f64,
    /// Client CPU seconds (the threads doing the work) per elapsed second.
    client_busy: f64,
}

/// CPU time of the calling thread so far, in seconds (Linux
/// `/proc/thread-self/schedstat`, nanoseconds); 0 where unavailable.
fn thread_cpu() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// The server's CPU seconds so far (user + sys, all its threads).
fn server_cpu(conn: &mut Connection) -> R<f64> {
    let info: String = redis::cmd("INFO").arg("cpu").query(conn).map_err(e)?;
    let f = |k: &str| info_field(&info, k).parse::<f64>().unwrap_or(0.0);
    Ok(f("used_cpu_user") + f("used_cpu_sys"))
}

/// Times `op` over `items` in batches, with `inflight` batches in flight,
/// stopping early after `ctx.cfg.op_seconds`. Connections are made and
/// warmed up (a `contains` of other items) before the clock starts.
fn timed(
    ctx: &Ctx,
    h: &Handle,
    api: Api,
    op: Op,
    items: &[String],
    batch: usize,
    inflight: usize,
) -> R<Timed> {
    let mut probe = ctx.client1.get_connection().map_err(e)?;
    let cpu0 = server_cpu(&mut probe)?;
    let mut t = timed_inner(ctx, h, api, op, items, batch, inflight)?;
    let cpu1 = server_cpu(&mut probe)?;
    // The warm-up and the two INFO calls fall outside `secs` but inside
    // the CPU delta; they are tiny next to the timed work.
    t.server_busy = (cpu1 - cpu0) / t.secs.max(1e-9);
    Ok(t)
}

fn timed_inner(
    ctx: &Ctx,
    h: &Handle,
    api: Api,
    op: Op,
    items: &[String],
    batch: usize,
    inflight: usize,
) -> R<Timed> {
    let warm = &ctx.warmup[..batch.min(100)];
    let cap = ctx.cfg.op_seconds;
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

/// One row of the throughput table.
#[derive(Clone)]
struct Row {
    target: String,
    op: Op,
    batch: usize,
    api: Api,
    inflight: usize,
    /// Items offered per run (the cap may stop a run earlier).
    items: usize,
    /// Items processed, per run.
    done: Vec<usize>,
    /// Server CPU share, per run.
    busy: Vec<f64>,
    /// Client CPU share, per run.
    cbusy: Vec<f64>,
    rates: Vec<f64>,
    positives: Vec<usize>,
    error: Option<String>,
}

impl Row {
    fn summary(&self) -> Summary {
        Summary::of(&self.rates)
    }

    /// Sanity check of the answers: after inserting N fresh items, contains
    /// must say yes to all N (no false negatives); insert and
    /// check_and_insert on a fresh filter must call (nearly) all of them new.
    fn check(&self) -> Option<String> {
        for (&p, &n) in self.positives.iter().zip(&self.done) {
            let bad = match self.op {
                Op::Contains => p != n,
                _ => (p as f64) < 0.99 * n as f64 || p > n,
            };
            if bad {
                return Some(format!(
                    "{} answered positive for {p} of {n} items",
                    self.op.name()
                ));
            }
        }
        None
    }
}

#[derive(Clone, Copy)]
struct Group {
    batch: usize,
    api: Api,
    inflight: usize,
}

fn groups(cfg: &Cfg) -> Vec<Group> {
    let mut g = Vec::new();
    for batch in [1usize, 100, 1000] {
        for api in [Api::Sync, Api::Async] {
            g.push(Group {
                batch,
                api,
                inflight: 1,
            });
        }
    }
    if cfg.x2 {
        for api in [Api::Sync, Api::Async] {
            g.push(Group {
                batch: 1000,
                api,
                inflight: 2,
            });
        }
    }
    g
}

/// One run of one group: insert + contains (of the items insert got to) on
/// one fresh state, then check_and_insert on another.
fn run_group(ctx: &mut Ctx, t: &Target, g: Group) -> R<Vec<(Op, Timed)>> {
    let items = Arc::clone(&ctx.items);
    let n = if g.batch == 1 {
        ctx.cfg.items_single
    } else {
        ctx.cfg.items
    };
    let items = &items[..n];
    let mut out = Vec::new();
    let h = ctx.reset(t)?;
    let ins = timed(ctx, &h, g.api, Op::Insert, items, g.batch, g.inflight)?;
    out.push((Op::Insert, ins));
    let has = timed(
        ctx,
        &h,
        g.api,
        Op::Contains,
        &items[..ins.done],
        g.batch,
        g.inflight,
    )?;
    out.push((Op::Contains, has));
    let h = ctx.reset(t)?;
    let cai = timed(ctx, &h, g.api, Op::Cai, items, g.batch, g.inflight)?;
    out.push((Op::Cai, cai));
    Ok(out)
}

fn throughput(ctx: &mut Ctx, targets: &[Target]) -> Vec<Row> {
    let gs = groups(&ctx.cfg);
    let mut rows: BTreeMap<(usize, usize), Row> = BTreeMap::new();
    let op_ix = |op: Op| Op::ALL.iter().position(|o| *o == op).unwrap_or(0);
    let runs = ctx.cfg.runs;
    for run in 0..runs {
        let start = Instant::now();
        // Rows that are compared (same group, different targets) are
        // measured back to back, so a change in the machine's load hits them
        // alike; odd runs go through the targets in reverse order.
        let mut order: Vec<usize> = (0..targets.len()).collect();
        if run % 2 == 1 {
            order.reverse();
        }
        for (gi, g) in gs.iter().enumerate() {
            for &ti in &order {
                let t = &targets[ti];
                let n = if g.batch == 1 {
                    ctx.cfg.items_single
                } else {
                    ctx.cfg.items
                };
                let res = run_group(ctx, t, *g);
                for op in Op::ALL {
                    let row = rows.entry((ti, gi * 3 + op_ix(op))).or_insert_with(|| Row {
                        target: t.name.clone(),
                        op,
                        batch: g.batch,
                        api: g.api,
                        inflight: g.inflight,
                        items: n,
                        done: Vec::new(),
                        busy: Vec::new(),
                        cbusy: Vec::new(),
                        rates: Vec::new(),
                        positives: Vec::new(),
                        error: None,
                    });
                    match &res {
                        Ok(v) => {
                            if let Some((_, r)) = v.iter().find(|(o, _)| *o == op) {
                                row.rates.push(r.done as f64 / r.secs);
                                row.done.push(r.done);
                                row.busy.push(r.server_busy);
                                row.cbusy.push(r.client_busy);
                                row.positives.push(r.positives);
                            }
                        }
                        Err(er) => {
                            row.error.get_or_insert_with(|| er.clone());
                        }
                    }
                }
                if let Err(er) = &res {
                    eprintln!(
                        "  ! {} batch {} {} x{}: {er}",
                        t.name,
                        g.batch,
                        g.api.name(),
                        g.inflight
                    );
                }
            }
            eprintln!(
                "  run {}/{runs}: batch {} {} x{} done ({:.0}s into the run)",
                run + 1,
                g.batch,
                g.api.name(),
                g.inflight,
                start.elapsed().as_secs_f64()
            );
        }
    }
    rows.into_values().collect()
}

// ---------------------------------------------------------------------------
// Bits per item

fn bits_per_item(ctx: &mut Ctx, targets: &[Target]) -> Vec<Value> {
    let opt = rotabloom::optimal_bits_per_item(ctx.cfg.p);
    let mut out = Vec::new();
    let mut push = |name: &str, bits: f64, cap: f64, memory_bytes: f64, note: String| {
        let bpi = bits / cap;
        out.push(json!({
            "target": name,
            "bits": bits,
            "capacity": cap,
            "bits_per_item": bpi,
            "memory_bits_per_item": memory_bytes * 8.0 / cap,
            "optimum": opt,
            "vs_optimum": bpi / opt,
            "note": note,
        }));
    };
    for t in targets {
        let res: R<()> = (|| {
            match &t.spec {
                Spec::Bloom | Spec::Expanding | Spec::Circular { .. } => {
                    let c0 = &mut ctx.c0;
                    let info = match &t.spec {
                        Spec::Bloom => BloomFilter::open(c0, &t.name).and_then(|f| f.info(c0)),
                        Spec::Expanding => {
                            ExpandingFilter::open(c0, &t.name).and_then(|f| f.info(c0))
                        }
                        _ => CircularFilter::open(c0, &t.name).and_then(|f| f.info(c0)),
                    }
                    .map_err(e)?;
                    let bits: u64 = info.generations.iter().map(|g| g.bits).sum();
                    let gens = info.generations.len();
                    let (cap, note) = match &t.spec {
                        Spec::Circular { n, mode } => {
                            let window = per_period(&ctx.cfg, *n) * u64::from(*n);
                            (
                                window,
                                format!(
                                    "{n} generations; capacity = the window's items ({} per period x {n}); {}",
                                    per_period(&ctx.cfg, *n),
                                    match mode {
                                        Mode::InsertNewestQueryAll =>
                                            "each generation at p' = 1-(1-p)^(1/N)",
                                        Mode::InsertAllQueryOldest =>
                                            "every generation holds the whole window at p",
                                    }
                                ),
                            )
                        }
                        Spec::Expanding => (
                            info.generations.iter().map(|g| g.capacity).sum(),
                            format!(
                                "{gens} generations (n0 = {}, growth 2, tightening 1/2); capacity = sum over generations",
                                ctx.cfg.exp_n0
                            ),
                        ),
                        _ => (
                            info.generations.iter().map(|g| g.capacity).sum(),
                            format!("k = {}", info.generations[0].hashes),
                        ),
                    };
                    push(
                        &t.name,
                        bits as f64,
                        cap as f64,
                        info.memory_bytes as f64,
                        note,
                    );
                }
                Spec::Raw => {
                    let l = ctx.raw_layout;
                    push(
                        &t.name,
                        l.bits as f64,
                        ctx.cfg.capacity as f64,
                        l.bytes() as f64,
                        "the base filter's layout".into(),
                    );
                }
                // Same module keys as the "redisbloom" row.
                Spec::BloomOnRb => {}
                Spec::RedisBloom | Spec::RbWindow { .. } => {
                    ctx.flush1()?;
                    ctx.prepare(t)?;
                    let mut size = 0.0;
                    let mut cap = 0.0;
                    for k in Ctx::rb_keys(&t.spec) {
                        let info: BTreeMap<String, redis::Value> = {
                            let flat: Vec<redis::Value> = redis::cmd("BF.INFO")
                                .arg(&k)
                                .query(&mut ctx.c1)
                                .map_err(e)?;
                            flat.chunks(2)
                                .filter_map(|kv| {
                                    let name: String =
                                        redis::from_redis_value(kv[0].clone()).ok()?;
                                    Some((name, kv.get(1)?.clone()))
                                })
                                .collect()
                        };
                        let num = |f: &str| -> f64 {
                            info.get(f)
                                .and_then(|v| redis::from_redis_value::<i64>(v.clone()).ok())
                                .unwrap_or(0) as f64
                        };
                        size += num("Size");
                        cap += num("Capacity");
                    }
                    let (cap, note) = match t.spec {
                        Spec::RbWindow { n, mode } => (
                            (per_period(&ctx.cfg, n) * u64::from(n)) as f64,
                            format!(
                                "BF.INFO Size (bytes, with headers) x 8 / the window's items ({} per period x {n}); {}",
                                per_period(&ctx.cfg, n),
                                match mode {
                                    Mode::InsertNewestQueryAll => "keys at p' = 1-(1-p)^(1/N)",
                                    Mode::InsertAllQueryOldest => "every key holds the whole window at p",
                                }
                            ),
                        ),
                        _ => (cap, "BF.INFO Size (bytes, with headers) x 8 / Capacity".into()),
                    };
                    push(&t.name, size * 8.0, cap, size, note);
                }
            }
            Ok(())
        })();
        if let Err(er) = res {
            eprintln!("  ! bits per item of {}: {er}", t.name);
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Latency

fn latency(ctx: &mut Ctx, with_rb: bool) -> R<Value> {
    let bloom = all_targets(false)
        .into_iter()
        .find(|t| matches!(t.spec, Spec::Bloom))
        .ok_or("no bloom target")?;
    let mut bloom = bloom;
    ctx.build_template(&mut bloom)?;
    ctx.flush1()?;
    let h = ctx.prepare(&bloom)?;
    let raw_t = Target {
        name: "raw-bitfield".into(),
        spec: Spec::Raw,
        template_keys: Vec::new(),
        vs_raw: None,
        vs_rb: None,
    };
    let raw = ctx.prepare(&raw_t)?;
    let rb = if with_rb {
        let t = Target {
            name: "redisbloom".into(),
            spec: Spec::RedisBloom,
            template_keys: Vec::new(),
            vs_raw: None,
            vs_rb: None,
        };
        Some(ctx.prepare(&t)?)
    } else {
        None
    };
    let mut conn = ctx.client1.get_connection().map_err(e)?;
    let calls = ctx.cfg.latency_calls;
    let kinds: Vec<&str> = if rb.is_some() {
        vec!["ping", "check_and_insert", "raw_bitfield", "bf_add"]
    } else {
        vec!["ping", "check_and_insert", "raw_bitfield"]
    };
    let mut per_kind: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let one = |conn: &mut Connection, kind: &str, item: &str| -> R<()> {
        match kind {
            "ping" => redis::cmd("PING")
                .query::<String>(conn)
                .map(|_| ())
                .map_err(e),
            "check_and_insert" => h.sync(conn, Op::Cai, &[item.to_string()]).map(|_| ()),
            "raw_bitfield" => raw.sync(conn, Op::Cai, &[item.to_string()]).map(|_| ()),
            _ => rb
                .as_ref()
                .map(|r| r.sync(conn, Op::Cai, &[item.to_string()]).map(|_| ()))
                .unwrap_or(Ok(())),
        }
    };
    // Warm-up: connection, script cache, branch predictors.
    for kind in &kinds {
        for i in 0..500 {
            one(&mut conn, kind, &format!("https://example.com/warm/{i}"))?;
        }
    }
    for run in 0..ctx.cfg.runs {
        for kind in &kinds {
            let items: Vec<String> = (0..calls)
                .map(|i| format!("https://example.com/latency/{kind}/{run}/{i}"))
                .collect();
            let mut samples = Vec::with_capacity(calls);
            for it in &items {
                let t0 = Instant::now();
                one(&mut conn, kind, it)?;
                samples.push(t0.elapsed().as_secs_f64());
            }
            samples.sort_by(|a, b| a.total_cmp(b));
            let entry = per_kind.entry(*kind).or_default();
            entry.0.push(quantile(&samples, 0.50));
            entry.1.push(quantile(&samples, 0.99));
        }
    }
    let mut out = serde_json::Map::new();
    for (kind, (p50, p99)) in &per_kind {
        out.insert(
            kind.to_string(),
            json!({"p50_s": Summary::of(p50).json(), "p99_s": Summary::of(p99).json()}),
        );
    }
    let ping = Summary::of(&per_kind["ping"].0).median;
    let cai = Summary::of(&per_kind["check_and_insert"].0).median;
    out.insert("calls_per_run".into(), json!(calls));
    out.insert("cai_p50_over_ping_p50".into(), json!(cai / ping));
    Ok(Value::Object(out))
}

// ---------------------------------------------------------------------------
// The seeds' package

fn seed_bench(ctx: &mut Ctx) -> R<Value> {
    let (Some(py), Some(script)) = (ctx.cfg.python.clone(), ctx.cfg.seed_script.clone()) else {
        return Err("no --python / --seed-script: seeds' package not measured".into());
    };
    ctx.flush1()?;
    let out = Command::new(&py)
        .arg(&script)
        .args(["--url", &ctx.url1])
        .args(["--items", &ctx.cfg.seed_items.to_string()])
        .args(["--runs", &ctx.cfg.runs.to_string()])
        .output()
        .map_err(|er| format!("cannot run {}: {er}", py.display()))?;
    if !out.status.success() {
        return Err(format!(
            "seed_bench.py failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| format!("no JSON from seed_bench.py: {text}"))?;
    let v: Value = serde_json::from_str(line).map_err(e)?;
    if let Some(er) = v.get("error") {
        return Err(format!("seed_bench.py: {er}"));
    }
    ctx.flush1()?;
    Ok(v)
}

fn nums(v: &Value, field: &str) -> Vec<f64> {
    v.get(field)
        .and_then(|a| a.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Environment facts

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn status_field(pid: &str, field: &str) -> String {
    read(&format!("/proc/{pid}/status"))
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!("{field}:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

fn info_field(info: &str, field: &str) -> String {
    info.lines()
        .find_map(|l| {
            l.strip_prefix(&format!("{field}:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// A reply as JSON (for MODULE LIST): strings, numbers, arrays, maps.
fn value_json(v: &redis::Value) -> Value {
    use redis::Value as V;
    match v {
        V::BulkString(b) => json!(String::from_utf8_lossy(b)),
        V::SimpleString(t) => json!(t),
        V::Int(i) => json!(i),
        V::Double(d) => json!(d),
        V::Okay => json!("OK"),
        V::Array(a) | V::Set(a) => {
            // RESP2 flat field/value lists (MODULE LIST entries) as objects.
            let keyed = a.len() % 2 == 0
                && a.iter()
                    .step_by(2)
                    .all(|k| matches!(k, V::BulkString(_) | V::SimpleString(_)));
            if keyed && !a.is_empty() {
                let mut m = serde_json::Map::new();
                for kv in a.chunks(2) {
                    let k = match value_json(&kv[0]) {
                        Value::String(k) => k,
                        other => other.to_string(),
                    };
                    m.insert(k, value_json(&kv[1]));
                }
                Value::Object(m)
            } else {
                Value::Array(a.iter().map(value_json).collect())
            }
        }
        V::Map(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let k = match value_json(k) {
                        Value::String(k) => k,
                        other => other.to_string(),
                    };
                    (k, value_json(v))
                })
                .collect(),
        ),
        V::Nil => Value::Null,
        other => json!(format!("{other:?}")),
    }
}

/// The 1, 5 and 15 minute load averages: other work on the machine makes
/// the numbers noisy.
fn loadavg() -> String {
    read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The redis-server binary as invoked: INFO's `executable` when it names a
/// file (it is relative to the server's directory when the binary was found
/// on PATH), else `$BENCH_REDIS_BIN`, else `redis-server` looked up on PATH.
fn server_binary(info_exe: &str) -> String {
    if std::path::Path::new(info_exe).is_file() {
        return info_exe.to_string();
    }
    if let Ok(b) = std::env::var("BENCH_REDIS_BIN") {
        if !b.is_empty() {
            return b;
        }
    }
    let name = harness::redis_server_bin();
    if name.components().count() > 1 {
        return name.display().to_string();
    }
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(&name))
                .find(|p| p.is_file())
        })
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| info_exe.to_string())
}

fn machine() -> Value {
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "?".into());
    let cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let mem_kb: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    json!({
        "cpu_model": model,
        "logical_cpus": cpus,
        "memory_gib": (mem_kb as f64 / 1048576.0 * 10.0).round() / 10.0,
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "client_cpus_allowed": status_field("self", "Cpus_allowed_list"),
        "loadavg_at_start": loadavg(),
    })
}

// ---------------------------------------------------------------------------
// Report

struct Report<'a> {
    rows: &'a [Row],
}

impl Report<'_> {
    fn find(&self, target: &str, op: Op, batch: usize, api: Api, inflight: usize) -> Option<&Row> {
        self.rows.iter().find(|r| {
            r.target == target
                && r.op == op
                && r.batch == batch
                && r.api == api
                && r.inflight == inflight
                && !r.rates.is_empty()
        })
    }

    fn median(&self, target: &str, op: Op, batch: usize, api: Api, inflight: usize) -> Option<f64> {
        self.find(target, op, batch, api, inflight)
            .map(|r| r.summary().median)
    }

    fn vs(&self, row: &Row, base: &Option<String>) -> Option<f64> {
        let b = base.as_ref()?;
        let other = self.median(b, row.op, row.batch, row.api, row.inflight)?;
        Some(row.summary().median / other)
    }
}

fn main() {
    let cfg = match parse_args() {
        Ok(c) => c,
        Err(er) => {
            eprintln!("{er}");
            std::process::exit(2);
        }
    };
    if let Err(er) = real_main(cfg) {
        eprintln!("compare: {er}");
        std::process::exit(1);
    }
}

fn start_server(
    module: Option<&PathBuf>,
) -> (harness::RedisServer, Option<String>, Option<String>) {
    if let Some(m) = module {
        let arg = m.to_string_lossy().into_owned();
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let res = std::panic::catch_unwind(|| {
            harness::RedisServer::start_with(&["--loadmodule", arg.as_str()])
        });
        std::panic::set_hook(prev);
        match res {
            Ok(s) => return (s, Some(arg), None),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown error".into());
                eprintln!(
                    "compare: redis-server did not start with --loadmodule {arg}; RedisBloom rows skipped:\n{msg}"
                );
                return (harness::RedisServer::start(), None, Some(msg));
            }
        }
    }
    (harness::RedisServer::start(), None, None)
}

fn real_main(cfg: Cfg) -> R<()> {
    let wall = Instant::now();
    let (server, module, module_error) = start_server(cfg.redisbloom.as_ref());
    if let Ok(pidfile) = std::env::var("BENCH_PIDFILE") {
        if let Some(pid) = server.pid() {
            let _ = std::fs::write(&pidfile, pid.to_string());
        }
    }
    let url0 = format!("redis://127.0.0.1:{}/0", server.port());
    let url1 = format!("redis://127.0.0.1:{}/1", server.port());
    let client0 = redis::Client::open(url0.as_str()).map_err(e)?;
    let client1 = redis::Client::open(url1.as_str()).map_err(e)?;
    let mut c0 = client0.get_connection().map_err(e)?;
    let c1 = client1.get_connection().map_err(e)?;
    let info: String = redis::cmd("INFO").arg("server").query(&mut c0).map_err(e)?;
    let server_pid = info_field(&info, "process_id");
    let modules: Vec<redis::Value> = redis::cmd("MODULE")
        .arg("LIST")
        .query(&mut c0)
        .unwrap_or_default();
    let with_rb = module.is_some() && !modules.is_empty();
    let server_facts = json!({
        "redis_version": info_field(&info, "redis_version"),
        "executable": server_binary(&info_field(&info, "executable")),
        "executable_resolved": std::fs::read_link(format!("/proc/{server_pid}/exe"))
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        "binary_env": std::env::var("BENCH_REDIS_BIN").unwrap_or_default(),
        "cpus_allowed": status_field(&server_pid, "Cpus_allowed_list"),
        "module": module,
        "module_error": module_error,
        "modules_loaded": modules.iter().map(value_json).collect::<Vec<_>>(),
    });
    let raw_layout = BloomFilter::builder("bloom")
        .capacity(cfg.capacity)
        .error_rate(cfg.p)
        .spec()
        .map_err(e)?
        .layout();
    let n_items = cfg.items.max(cfg.items_single);
    let items: Vec<String> = (0..n_items)
        .map(|i| format!("https://example.com/path/{i}"))
        .collect();
    let warmup: Vec<String> = (0..1000)
        .map(|i| format!("https://example.com/warmup/{i}"))
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(e)?;
    let mut ctx = Ctx {
        cfg,
        client1,
        url1,
        c0,
        c1,
        rt,
        raw_layout,
        items: Arc::new(items),
        warmup,
    };
    let machine = machine();
    eprintln!(
        "compare: {} mode; redis {} ({}), server cpus {}, client cpus {}; RedisBloom {}",
        ctx.cfg.mode_name(),
        server_facts["redis_version"],
        server_facts["executable"],
        server_facts["cpus_allowed"],
        machine["client_cpus_allowed"],
        if with_rb { "loaded" } else { "not loaded" }
    );

    let mut targets = all_targets(with_rb);
    if let Some(only) = &ctx.cfg.only {
        targets.retain(|t| only.contains(&t.name));
    }
    let mut phases: Vec<(&str, f64)> = Vec::new();
    let mut phase_t = Instant::now();
    let mut lap = |name: &'static str, phases: &mut Vec<(&str, f64)>| {
        phases.push((name, phase_t.elapsed().as_secs_f64()));
        phase_t = Instant::now();
    };
    eprintln!("compare: building templates");
    for t in targets.iter_mut() {
        if is_library(&t.spec) {
            ctx.build_template(t)?;
        }
    }
    let bits = bits_per_item(&mut ctx, &targets);
    lap("setup", &mut phases);

    eprintln!(
        "compare: throughput, {} runs x {} targets ({} items per run, {} for batches of 1)",
        ctx.cfg.runs,
        targets.len(),
        ctx.cfg.items,
        ctx.cfg.items_single
    );
    let rows = throughput(&mut ctx, &targets);
    lap("throughput", &mut phases);

    eprintln!(
        "compare: latency ({} sequential calls x {} runs)",
        ctx.cfg.latency_calls, ctx.cfg.runs
    );
    let lat = latency(&mut ctx, with_rb).unwrap_or_else(|er| {
        eprintln!("  ! latency: {er}");
        json!({"error": er})
    });
    lap("latency", &mut phases);

    eprintln!(
        "compare: seeds' package ({} items x {} runs)",
        ctx.cfg.seed_items, ctx.cfg.runs
    );
    let seed = seed_bench(&mut ctx).unwrap_or_else(|er| {
        eprintln!("  ! seed: {er}");
        json!({"error": er})
    });
    let _ = ctx.flush1();
    lap("seed", &mut phases);

    // ------------------------------------------------------------------
    // Tables
    let rep = Report { rows: &rows };
    let by_name: BTreeMap<&str, &Target> = targets.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut out = String::new();
    use std::fmt::Write as _;
    let mut summary = String::new();
    let _ = writeln!(
        summary,
        "\nSummary: items/s at batches of 1000 (median of {} runs); ratios vs raw pipelined BITFIELD / vs RedisBloom (N-key window of the same mode for circular-N)",
        ctx.cfg.runs
    );
    let _ = writeln!(
        summary,
        "{:<33} {:>27} {:>27} {:>27} {:>27}",
        "target", "cai sync x1", "cai async x2", "insert sync x1", "contains sync x1"
    );
    for t in &targets {
        let cell = |op: Op, api: Api, inflight: usize| -> String {
            match rep.find(&t.name, op, 1000, api, inflight) {
                Some(r) => format!(
                    "{} ({}/{})",
                    si(r.summary().median),
                    ratio(rep.vs(r, &t.vs_raw)),
                    ratio(rep.vs(r, &t.vs_rb))
                ),
                None => "-".into(),
            }
        };
        let _ = writeln!(
            summary,
            "{:<33} {:>27} {:>27} {:>27} {:>27}",
            t.name,
            cell(Op::Cai, Api::Sync, 1),
            cell(Op::Cai, Api::Async, 2),
            cell(Op::Insert, Api::Sync, 1),
            cell(Op::Contains, Api::Sync, 1)
        );
    }
    out.push_str(&summary);
    let _ = writeln!(
        out,
        "\nThroughput, items/s: median of {} runs [min..max]; vs raw = / raw pipelined BITFIELD, vs RB = / RedisBloom (the N-key window of the same mode for circular-N), same op, batch, API and batches in flight",
        ctx.cfg.runs
    );
    let _ = writeln!(
        out,
        "items = median items processed per run; * = the {}s cap per operation stopped some run before all {} ({} for batches of 1) items; srv / cli = CPU time of the server / of the client's working threads, over elapsed time (medians): near 100% that side is the bottleneck",
        ctx.cfg.op_seconds, ctx.cfg.items, ctx.cfg.items_single
    );
    let _ = writeln!(
        out,
        "{:<33} {:<9} {:>5} {:<5} {:>3} {:>8} {:>9} {:>19} {:>8} {:>8} {:>5} {:>5}  check",
        "target",
        "op",
        "batch",
        "api",
        "in",
        "items",
        "items/s",
        "[min..max]",
        "vs raw",
        "vs RB",
        "srv",
        "cli"
    );
    let mut row_json = Vec::new();
    let mut last_target = String::new();
    for r in &rows {
        let t = by_name.get(r.target.as_str());
        let s = r.summary();
        let vr = t.and_then(|t| rep.vs(r, &t.vs_raw));
        let vb = t.and_then(|t| rep.vs(r, &t.vs_rb));
        let check = r.error.clone().or_else(|| r.check());
        if r.target != last_target && !last_target.is_empty() {
            out.push('\n');
        }
        last_target = r.target.clone();
        let done = Summary::of(&r.done.iter().map(|&d| d as f64).collect::<Vec<_>>());
        let capped = r.done.iter().any(|&d| d < r.items);
        let _ = writeln!(
            out,
            "{:<33} {:<9} {:>5} {:<5} {:>3} {:>8} {:>9} {:>19} {:>8} {:>8} {:>5} {:>5}  {}",
            r.target,
            r.op.short(),
            r.batch,
            r.api.name(),
            format!("x{}", r.inflight),
            format!("{}{}", si(done.median), if capped { "*" } else { "" }),
            si(s.median),
            format!("[{}..{}]", si(s.min), si(s.max)),
            ratio(vr),
            ratio(vb),
            format!("{:.0}%", Summary::of(&r.busy).median * 100.0),
            format!("{:.0}%", Summary::of(&r.cbusy).median * 100.0),
            check.as_deref().unwrap_or("ok")
        );
        row_json.push(json!({
            "target": r.target,
            "op": r.op.name(),
            "batch": r.batch,
            "api": r.api.name(),
            "inflight": r.inflight,
            "items_offered": r.items,
            "items_done": r.done,
            "items_per_s": s.json(),
            "server_cpu_share": Summary::of(&r.busy).json(),
            "client_cpu_share": Summary::of(&r.cbusy).json(),
            "positives": r.positives,
            "vs_raw_bitfield": vr,
            "vs_redisbloom": vb,
            "check": check,
        }));
    }

    let _ = writeln!(
        out,
        "\nBits per item (bits / capacity) vs the optimum log2(e)*log2(1/p) = {:.3} for p = {}",
        rotabloom::optimal_bits_per_item(ctx.cfg.p),
        ctx.cfg.p
    );
    for b in &bits {
        let _ = writeln!(
            out,
            "  {:<33} {:>7.3} bits/item  {:>6.3}x optimum ({:+.2}%)  {}",
            b["target"].as_str().unwrap_or("?"),
            b["bits_per_item"].as_f64().unwrap_or(f64::NAN),
            b["vs_optimum"].as_f64().unwrap_or(f64::NAN),
            (b["vs_optimum"].as_f64().unwrap_or(f64::NAN) - 1.0) * 100.0,
            b["note"].as_str().unwrap_or("")
        );
    }

    if lat.get("error").is_none() {
        let _ = writeln!(
            out,
            "\nLatency of single sequential calls (blocking connection; {} calls per run; median of {} runs [min..max])",
            ctx.cfg.latency_calls, ctx.cfg.runs
        );
        for kind in ["ping", "check_and_insert", "raw_bitfield", "bf_add"] {
            if let Some(k) = lat.get(kind) {
                let f = |q: &str, w: &str| k[q][w].as_f64().unwrap_or(f64::NAN);
                let _ = writeln!(
                    out,
                    "  {:<18} p50 {:>8} [{}..{}]   p99 {:>8} [{}..{}]",
                    kind,
                    stats::us(f("p50_s", "median")),
                    stats::us(f("p50_s", "min")),
                    stats::us(f("p50_s", "max")),
                    stats::us(f("p99_s", "median")),
                    stats::us(f("p99_s", "min")),
                    stats::us(f("p99_s", "max")),
                );
            }
        }
    }

    let seed_insert = Summary::of(&nums(&seed, "insert_items_per_s"));
    let seed_seen = Summary::of(&nums(&seed, "request_seen_items_per_s"));
    let mut seed_ratios = serde_json::Map::new();
    if seed.get("error").is_none() && seed_seen.median > 0.0 {
        let _ = writeln!(
            out,
            "\nThe seeds' package, scrapy-redis-bloomfilter {} (bit = {}, {} hashes; {} items x {} runs, one round trip per hash)",
            seed["package_version"].as_str().unwrap_or("?"),
            seed["bit"],
            seed["hashes"],
            seed["items"],
            seed["runs"]
        );
        let _ = writeln!(
            out,
            "  insert            {:>9} items/s [{}..{}]",
            si(seed_insert.median),
            si(seed_insert.min),
            si(seed_insert.max)
        );
        let _ = writeln!(
            out,
            "  request_seen      {:>9} items/s [{}..{}]  (reported new, per run: {} of {})",
            si(seed_seen.median),
            si(seed_seen.min),
            si(seed_seen.max),
            seed["request_seen_new"],
            seed["items"]
        );
        for (label, batch, api, inflight) in [
            ("bloom cai batch 1 sync (same shape)", 1, Api::Sync, 1),
            ("bloom cai batch 1000 sync", 1000, Api::Sync, 1),
            ("bloom cai batch 1000 async", 1000, Api::Async, 1),
            ("bloom cai batch 1000 sync x2", 1000, Api::Sync, 2),
            ("bloom cai batch 1000 async x2", 1000, Api::Async, 2),
        ] {
            if let Some(m) = rep.median("bloom", Op::Cai, batch, api, inflight) {
                let r = m / seed_seen.median;
                seed_ratios.insert(label.into(), json!(r));
                let _ = writeln!(
                    out,
                    "  rotabloom {label:<36} = {:>7} request_seen",
                    ratio(Some(r))
                );
            }
        }
    }

    // Issue 6 targets.
    let mut checks: Vec<Value> = Vec::new();
    let mut check = |name: String, value: Option<f64>, goal: &str, pass: Option<bool>| {
        checks.push(json!({"target": name, "value": value, "goal": goal, "pass": pass}));
    };
    for api in [Api::Sync, Api::Async] {
        for inflight in [1, 2] {
            let lib = rep.median("bloom", Op::Cai, 1000, api, inflight);
            let raw = rep.median("raw-bitfield", Op::Cai, 1000, api, inflight);
            let r = lib.zip(raw).map(|(a, b)| a / b);
            check(
                format!(
                    "bloom cai batch 1000 {} x{inflight} / raw BITFIELD",
                    api.name()
                ),
                r,
                ">= 0.95",
                r.map(|r| r >= 0.95),
            );
            check(
                format!("bloom cai batch 1000 {} x{inflight} items/s", api.name()),
                lib,
                ">= 300000",
                lib.map(|v| v >= 300_000.0),
            );
        }
    }
    if let Some(r) = seed_ratios
        .get("bloom cai batch 1000 sync")
        .and_then(|v| v.as_f64())
    {
        check(
            "bloom cai batch 1000 sync / seeds' request_seen".into(),
            Some(r),
            ">= 150",
            Some(r >= 150.0),
        );
    }
    if let Some(b) = bits.iter().find(|b| b["target"] == "bloom") {
        let v = b["vs_optimum"].as_f64();
        check(
            "bloom bits per item / optimum".into(),
            v,
            "<= 1.01",
            v.map(|v| v <= 1.01),
        );
    }
    if let Some(v) = lat.get("cai_p50_over_ping_p50").and_then(|v| v.as_f64()) {
        check(
            "single check_and_insert p50 / PING p50".into(),
            Some(v),
            "<= 1.15",
            Some(v <= 1.15),
        );
    }
    for api in [Api::Sync, Api::Async] {
        let c = rep.median("circular-12-query-all", Op::Cai, 1000, api, 1);
        let b = rep.median("bloom", Op::Cai, 1000, api, 1);
        let w = rep.median("redisbloom-window-12-query-all", Op::Cai, 1000, api, 1);
        let r = c.zip(b).map(|(a, b)| a / b);
        check(
            format!(
                "circular-12-query-all cai batch 1000 {} / bloom",
                api.name()
            ),
            r,
            ">= 0.8",
            r.map(|r| r >= 0.8),
        );
        let r = c.zip(w).map(|(a, b)| a / b);
        check(
            format!(
                "circular-12-query-all cai batch 1000 {} / RedisBloom 12-key window",
                api.name()
            ),
            r,
            "> 1",
            r.map(|r| r > 1.0),
        );
    }
    for api in [Api::Sync, Api::Async] {
        for op in [Op::Insert, Op::Cai] {
            let lib = rep.median("bloom-on-redisbloom", op, 1000, api, 1);
            let rb = rep.median("redisbloom", op, 1000, api, 1);
            let r = lib.zip(rb).map(|(a, b)| a / b);
            check(
                format!(
                    "bloom-on-redisbloom {} batch 1000 {} / raw BF.MADD",
                    op.name(),
                    api.name()
                ),
                r,
                ">= 0.9",
                r.map(|r| r >= 0.9),
            );
        }
    }
    let _ = writeln!(out, "\nIssue 6 targets");
    for c in &checks {
        let v = c["value"].as_f64();
        let shown = match v {
            Some(v) if v >= 1000.0 => si(v),
            Some(v) => format!("{v:.3}"),
            None => "-".into(),
        };
        let verdict = match c["pass"].as_bool() {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "n/a",
        };
        let _ = writeln!(
            out,
            "  {:<4} {:<68} {:>9}  (goal {})",
            verdict,
            c["target"].as_str().unwrap_or("?"),
            shown,
            c["goal"].as_str().unwrap_or("?")
        );
    }
    let elapsed = wall.elapsed().as_secs_f64();
    let load_end = loadavg();
    let phases_text = phases
        .iter()
        .map(|(n, t)| format!("{n} {t:.0}s"))
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        out,
        "\n{} mode, {:.0}s ({}); redis-server {} on cpus {}, client on cpus {}; load average {} at start, {} at end; JSON: {}",
        ctx.cfg.mode_name(),
        elapsed,
        phases_text,
        server_facts["redis_version"].as_str().unwrap_or("?"),
        server_facts["cpus_allowed"].as_str().unwrap_or("?"),
        machine["client_cpus_allowed"].as_str().unwrap_or("?"),
        machine["loadavg_at_start"].as_str().unwrap_or("?"),
        load_end,
        ctx.cfg.out.display()
    );
    let busy = machine["loadavg_at_start"]
        .as_str()
        .and_then(|l| l.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    if busy > 1.0 {
        let _ = writeln!(
            out,
            "warning: the machine was busy when the bench started (1-minute load {busy:.2}): other processes share the two cores, so the numbers are noisy"
        );
    }
    if ctx.cfg.smoke {
        let mut bad: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                let why = r
                    .error
                    .clone()
                    .or_else(|| r.check())
                    .or_else(|| r.rates.is_empty().then(|| "no measurement".to_string()))?;
                Some(format!(
                    "{} {} batch {} {} x{}: {why}",
                    r.target,
                    r.op.name(),
                    r.batch,
                    r.api.name(),
                    r.inflight
                ))
            })
            .collect();
        if let Some(er) = lat.get("error") {
            bad.push(format!("latency: {er}"));
        }
        if ctx.cfg.python.is_some() {
            if let Some(er) = seed.get("error") {
                bad.push(format!("seed: {er}"));
            }
        }
        print!("{summary}");
        println!(
            "\ncompare smoke test ({:.0}s): {} rows, {} problems; the benchmark itself is `scripts/bench.sh [--quick]`",
            elapsed,
            rows.len(),
            bad.len()
        );
        for b in &bad {
            println!("  {b}");
        }
        drop(ctx);
        drop(server);
        return if bad.is_empty() {
            Ok(())
        } else {
            Err(format!("smoke test: {} problems", bad.len()))
        };
    }
    print!("{out}");

    let results = json!({
        "bench": "benches/compare.rs",
        "date": chrono::Utc::now().to_rfc3339(),
        "git": std::env::var("BENCH_GIT_REV").unwrap_or_default(),
        "command": std::env::var("BENCH_COMMAND").unwrap_or_default(),
        "mode": ctx.cfg.mode_name(),
        "elapsed_s": elapsed,
        "loadavg_at_end": load_end,
        "phases_s": phases.iter().map(|(n, t)| (n.to_string(), json!(t))).collect::<serde_json::Map<_, _>>(),
        "machine": machine,
        "server": server_facts,
        "config": {
            "items": ctx.cfg.items,
            "items_batch_1": ctx.cfg.items_single,
            "item_form": "https://example.com/path/{i}",
            "runs": ctx.cfg.runs,
            "error_rate": ctx.cfg.p,
            "bloom_capacity": ctx.cfg.capacity,
            "bloom_layout": {
                "bits": ctx.raw_layout.bits,
                "hashes": ctx.raw_layout.hashes,
                "blocks": ctx.raw_layout.blocks,
            },
            "expanding_n0": ctx.cfg.exp_n0,
            "expanding_prefill": ctx.cfg.exp_prefill,
            "circular_per_period": {
                "4": per_period(&ctx.cfg, 4),
                "12": per_period(&ctx.cfg, 12),
            },
            "latency_calls": ctx.cfg.latency_calls,
            "op_seconds": ctx.cfg.op_seconds,
            "seed_items": ctx.cfg.seed_items,
        },
        "throughput": row_json,
        "bits_per_item": bits,
        "latency": lat,
        "seed": seed,
        "seed_ratios": seed_ratios,
        "targets": checks,
        "table": out,
    });
    if let Some(dir) = ctx.cfg.out.parent() {
        std::fs::create_dir_all(dir).map_err(e)?;
    }
    std::fs::write(
        &ctx.cfg.out,
        serde_json::to_string_pretty(&results).map_err(e)?,
    )
    .map_err(|er| format!("cannot write {}: {er}", ctx.cfg.out.display()))?;
    drop(ctx);
    drop(server);
    Ok(())
}
