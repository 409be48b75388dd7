//! The model-based test on a local 3-master Redis Cluster: sharded
//! filters (1 to 8 shards, and unsharded ones beside them) of every kind,
//! driven through the `rotabloom` command line (`filter`, `add`, `load`,
//! `check`, `rotate`, `rotate --if-due`, `expand`, `convert`, `clear`,
//! `dump`/`restore`, `drop`, `--state`/`--resume` after a kill) and, beside
//! a `filter` run, Python clients (`python.rs`), with drops
//! and re-creates under a running `filter`, slots migrated mid-batch
//! (MOVED and ASK), and faults on one master (out of memory, paused,
//! connections killed, restarted) or one shard (metadata or blocks
//! deleted). Properties: see `run.rs`, `data.rs` and `whole.rs`.
//!
//! Both backends: the nodes load RedisBloom (`crate::module`), and about
//! a third of the filters keep their generations in its keys.

mod data;
mod live;
mod model;
mod props;
mod python;
pub mod run;
pub mod steps;
mod whole;
mod world;

use crate::run::Stats;
use run::CRun;
use std::time::Duration;
use steps::{CGenerator, CStep};
pub use world::CWorld;

/// Steps per cluster sequence.
pub const STEPS: usize = 30;

/// The sequence of `seed`: even seeds inject faults.
pub fn sequence(seed: u64) -> Vec<CStep> {
    let mut g = CGenerator::new(seed, crate::module().is_some());
    let faults = seed.is_multiple_of(2);
    (0..STEPS).map(|_| g.step(faults)).collect()
}

/// Runs `steps` from an empty cluster.
pub fn play(world: &mut CWorld, steps: &[CStep]) -> (Result<(), crate::run::Failure>, Stats) {
    let mut r = CRun::new(world);
    let out = r.steps(steps);
    (out, r.stats)
}

/// Runs the sequence of `seed`; a failure is shrunk and returned as a
/// report (seed, property, the shrunk sequence as Rust to replay).
pub fn check_seed(world: &mut CWorld, seed: u64, total: &mut Stats) -> Result<(), String> {
    // A cluster of its own per sequence: what one sequence's faults leave
    // (slots moved, nodes restarted) must not shape the next one.
    *world = CWorld::new();
    let steps = sequence(seed);
    let (out, stats) = play(world, &steps);
    total.steps += stats.steps;
    total.calls += stats.calls;
    total.items += stats.items;
    total.orphans += stats.orphans;
    for (t, s) in total.backends.iter_mut().zip(stats.backends) {
        *t += s;
    }
    total.python += stats.python;
    let Err(failure) = out else {
        return Ok(());
    };
    eprintln!(
        "cluster model: seed {seed} failed at step {}: {}\nshrinking...",
        failure.step, failure.message
    );
    let budget = std::env::var("ROTABLOOM_MODEL_SHRINK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(90);
    // A cluster of its own per try, as per sequence: a try can leave slots
    // mid-migration or a master restarted, which no reset undoes.
    let shrunk = crate::shrink::shrink_steps(
        steps[..=failure.step].to_vec(),
        Duration::from_secs(budget),
        |s| {
            *world = CWorld::new();
            play(world, s).0.is_err()
        },
    );
    *world = CWorld::new();
    let (again, _) = play(world, &shrunk);
    Err(crate::shrink::report(
        "cluster model",
        "replay_cluster",
        seed,
        STEPS,
        &failure,
        &shrunk,
        again,
    ))
}
