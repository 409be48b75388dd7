//! The comparison benchmark (issues 6 and 13): rotabloom against raw pipelined
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

#[path = "../../tests/support/harness.rs"]
mod harness;

mod bits;
mod catalog;
mod cfg;
mod cli;
mod ctx;
mod facts;
mod latency;
mod pairs;
mod report;
mod seed;
mod stats;
mod targets;
mod throughput;
mod timing;
mod window;

use catalog::{all_targets, is_library};
use cfg::{parse_args, Cfg};
use ctx::{e, Ctx};
use facts::{info_field, machine, server_binary, status_field, value_json};
use rotabloom::BloomFilter;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use targets::R;

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
    if ctx.cfg.pairs > 0 {
        return paired(&mut ctx, &targets, &server_facts, &machine);
    }
    if ctx.cfg.smoke {
        // The paired mode's path, one round, its answers checked.
        let some: Vec<&catalog::Target> = targets
            .iter()
            .filter(|t| cfg::PAIRED.contains(&t.name.as_str()))
            .collect();
        let rows = pairs::pairs(&mut ctx, &some, 1);
        if let Some(er) = rows.iter().find_map(|r| r.error.as_ref()) {
            return Err(format!("smoke test: pairs: {er}"));
        }
        eprintln!(
            "compare: pairs, one round of {} rows: answers as expected",
            rows.len()
        );
    }
    let bits = bits::bits_per_item(&mut ctx, &targets);
    let windows = window::window_memory(&mut ctx).unwrap_or_else(|er| {
        eprintln!("  ! window memory: {er}");
        json!({"error": er})
    });
    lap("setup", &mut phases);

    eprintln!(
        "compare: throughput, {} runs x {} targets ({} items per run, {} for batches of 1)",
        ctx.cfg.runs,
        targets.len(),
        ctx.cfg.items,
        ctx.cfg.items_single
    );
    let rows = throughput::throughput(&mut ctx, &targets);
    lap("throughput", &mut phases);

    eprintln!(
        "compare: latency ({} sequential calls x {} runs)",
        ctx.cfg.latency_calls, ctx.cfg.runs
    );
    let lat = latency::latency(&mut ctx, with_rb).unwrap_or_else(|er| {
        eprintln!("  ! latency: {er}");
        json!({"error": er})
    });
    lap("latency", &mut phases);

    eprintln!(
        "compare: seeds' package ({} items x {} runs)",
        ctx.cfg.seed_items, ctx.cfg.runs
    );
    let seed = seed::seed_bench(&mut ctx).unwrap_or_else(|er| {
        eprintln!("  ! seed: {er}");
        json!({"error": er})
    });
    let _ = ctx.flush1();
    lap("seed", &mut phases);

    eprintln!("compare: the command line");
    let cli = cli::cli_rows(&mut ctx).unwrap_or_else(|er| {
        eprintln!("  ! cli: {er}");
        json!({"error": er})
    });
    let _ = ctx.flush1();
    lap("cli", &mut phases);

    let elapsed = wall.elapsed().as_secs_f64();
    let res = report::Results {
        targets: &targets,
        rows: &rows,
        bits: &bits,
        lat: &lat,
        seed: &seed,
        phases: &phases,
        elapsed,
        server_facts: &server_facts,
        machine: &machine,
        cli: &cli,
        windows: &windows,
    };
    let outcome = report::finish(&ctx, &res);
    drop(ctx);
    drop(server);
    outcome
}

/// `--pairs N`: the paired rounds alone, their table on stdout and their
/// JSON at `--out`.
fn paired(
    ctx: &mut Ctx,
    targets: &[catalog::Target],
    server_facts: &serde_json::Value,
    machine: &serde_json::Value,
) -> R<()> {
    let rounds = ctx.cfg.pairs;
    eprintln!(
        "compare: paired rounds, {rounds} x {} targets ({} s per operation)",
        targets.len(),
        ctx.cfg.op_seconds
    );
    let all: Vec<&catalog::Target> = targets.iter().collect();
    let rows = pairs::pairs(ctx, &all, rounds);
    print!("{}", pairs::table(&rows, rounds, ctx.cfg.op_seconds));
    let doc = json!({
        "mode": "pairs",
        "rounds": rounds,
        "op_seconds": ctx.cfg.op_seconds,
        "server": server_facts,
        "machine": machine,
        "pairs": rows.iter().map(pairs::Pairs::json).collect::<Vec<_>>(),
    });
    if let Some(dir) = ctx.cfg.out.parent() {
        std::fs::create_dir_all(dir).map_err(e)?;
    }
    let text = serde_json::to_string_pretty(&doc).map_err(e)?;
    std::fs::write(&ctx.cfg.out, text).map_err(e)?;
    eprintln!("compare: wrote {}", ctx.cfg.out.display());
    match rows.iter().find_map(|r| r.error.as_ref()) {
        Some(er) => Err(er.clone()),
        None => Ok(()),
    }
}
