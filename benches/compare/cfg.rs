//! The bench's options: raw arguments to a validated configuration.

use std::path::PathBuf;

pub const USAGE: &str = "\
compare: rotabloom vs raw BITFIELD vs RedisBloom vs scrapy-redis-bloomfilter

usage: compare --bench [--quick] [options]   (normally via scripts/bench.sh)

Without --bench (as `cargo test --all-targets` runs it) this is a smoke test:
a few thousand items, one run, correctness checks only, no JSON written;
other arguments are ignored then. `cargo bench` passes --bench itself.

  --quick                 only the rows issue 13's targets compare, batches
                          of 1000, 0.3 s per operation (about 4 minutes)
  --out PATH              JSON results (default target/bench/results.json)
  --redisbloom PATH       redisbloom.so to --loadmodule (env BENCH_REDISBLOOM)
  --python PATH           python with scrapy-redis-bloomfilter (env BENCH_PYTHON)
  --seed-script PATH      scripts/bench/seed_bench.py (env BENCH_SEED_SCRIPT)
  --items N               items per run for batches of 100 and 1000
  --items-single N        items per run for batches of 1
  --runs N                runs per measurement (median, min, max; default 5)
  --latency-calls N       sequential calls per latency run
  --seed-items N          items per run of the seeds' package
  --op-seconds S          time cap of one timed operation: a run stops taking
                          new batches after S seconds and counts what it did
                          (default 0.6; 0.3 with --quick)
  --only a,b,...          only these targets (names as in the table)
  --no-x2                 skip the two-batches-in-flight rows
  --cli PATH              the rotabloom binary, for the command-line rows
                          (env BENCH_CLI; skipped without it)
  --cli-lines N           lines per run of the command-line rows (1000000)
  --pairs N               instead of the tables: N paired rounds of sync x2
                          and async x2, back to back, per target and
                          operation (default targets bloom, raw-bitfield,
                          circular-12-query-all, bloom-on-redisbloom)

The redis-server binary is $REDIS_SERVER or redis-server from PATH
(scripts/bench.sh points REDIS_SERVER at a wrapper that pins it with taskset).
";

// Configuration

pub struct Cfg {
    pub quick: bool,
    /// Run by `cargo test`: tiny, checks answers, fails on errors.
    pub smoke: bool,
    pub items: usize,
    pub items_single: usize,
    pub runs: usize,
    pub latency_calls: usize,
    pub seed_items: usize,
    /// Time cap of one timed operation, seconds.
    pub op_seconds: f64,
    pub capacity: u64,
    pub p: f64,
    pub exp_n0: u64,
    pub exp_prefill: usize,
    pub out: PathBuf,
    pub redisbloom: Option<PathBuf>,
    pub python: Option<PathBuf>,
    pub seed_script: Option<PathBuf>,
    pub only: Option<Vec<String>>,
    pub x2: bool,
    /// The rotabloom binary, for the command-line rows.
    pub cli: Option<PathBuf>,
    pub cli_lines: usize,
    /// Paired rounds instead of the tables (0: the tables).
    pub pairs: usize,
}

pub fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

pub fn parse_args() -> Result<Cfg, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        std::process::exit(0);
    }
    if !args.iter().any(|a| a == "--bench") {
        return Ok(smoke_cfg());
    }
    let quick = args.iter().any(|a| a == "--quick");
    let args_only = args.iter().any(|a| a == "--only");
    let mut cfg = Cfg {
        quick,
        smoke: false,
        // Quick mode: the time cap, not the item count, ends most runs.
        items: 1_000_000,
        items_single: if quick { 2_000 } else { 20_000 },
        // Medians of 5 short windows resist a passing disturbance of the
        // shared machine better than 3 longer ones, for the same time.
        runs: 5,
        latency_calls: if quick { 3_000 } else { 10_000 },
        seed_items: if quick { 500 } else { 20_000 },
        op_seconds: if quick { 0.3 } else { 0.6 },
        capacity: 10_000_000,
        p: 0.001,
        // n0, then 2 n0, 4 n0, 8 n0 filled: four expansions either way.
        exp_n0: if quick { 10_000 } else { 100_000 },
        exp_prefill: if quick { 150_000 } else { 1_500_000 },
        out: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/results.json"),
        redisbloom: env_path("BENCH_REDISBLOOM"),
        python: env_path("BENCH_PYTHON"),
        seed_script: env_path("BENCH_SEED_SCRIPT"),
        only: quick.then(|| QUICK.iter().map(|s| s.to_string()).collect()),
        x2: true,
        cli: env_path("BENCH_CLI"),
        cli_lines: 1_000_000,
        pairs: 0,
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
            "--cli" => cfg.cli = it.next().map(PathBuf::from),
            "--cli-lines" => cfg.cli_lines = num(it.next(), "--cli-lines")?,
            "--pairs" => cfg.pairs = num(it.next(), "--pairs")?,
            other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
        }
    }
    if cfg.pairs > 0 && !args_only {
        cfg.only = Some(PAIRED.iter().map(|s| s.to_string()).collect());
    }
    if cfg.runs < 1 || cfg.items < 1000 || cfg.items_single < 1 {
        return Err("--runs must be >= 1 and --items >= 1000".into());
    }
    Ok(cfg)
}

impl Cfg {
    pub fn mode_name(&self) -> &'static str {
        match (self.smoke, self.quick) {
            (true, _) => "smoke-test",
            (false, true) => "quick",
            (false, false) => "full",
        }
    }
}

/// The smoke test's configuration: every target and code path, briefly.
pub fn smoke_cfg() -> Cfg {
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
        cli: None,
        cli_lines: 0,
        pairs: 0,
    }
}

/// The targets of `--pairs` unless `--only` names others: the async x2
/// rows issue 30 compares with their sync x2 rows.
pub const PAIRED: &[&str] = &[
    "bloom",
    "raw-bitfield",
    "circular-12-query-all",
    "bloom-on-redisbloom",
];

/// The targets of quick mode: those the targets of issue 13 compare.
pub const QUICK: &[&str] = &[
    "bloom",
    "raw-bitfield",
    "circular-12-query-all",
    "bloom-on-redisbloom",
    "redisbloom",
    "expanding-on-redisbloom",
    "circular-12-query-all-on-redisbloom",
    "redisbloom-window-12-query-all",
];
