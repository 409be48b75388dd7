//! Shrinking a failing sequence to a small one that still fails: steps
//! removed in halves, then one by one (delta debugging), then each data
//! step's calls and items cut down, each candidate run on a fresh world.

use crate::steps::Step;
use std::time::{Duration, Instant};

/// The smallest sequence found, within `budget`, for which `fails` holds.
pub fn shrink(steps: Vec<Step>, budget: Duration, fails: impl Fn(&[Step]) -> bool) -> Vec<Step> {
    let start = Instant::now();
    let out_of_time = || start.elapsed() > budget;
    let mut steps = shrink_steps(steps, budget, &fails);
    // Then make each data step smaller: fewer calls, fewer items.
    for s in 0..steps.len() {
        if out_of_time() {
            break;
        }
        let Step::Data { calls, .. } = &steps[s] else {
            continue;
        };
        for c in (0..calls.len()).rev() {
            let mut candidate = steps.clone();
            if let Step::Data { calls, .. } = &mut candidate[s] {
                if calls.len() > 1 {
                    calls.remove(c);
                }
            }
            if candidate != steps && fails(&candidate) {
                steps = candidate;
            }
        }
        let Step::Data { calls, .. } = &steps[s] else {
            continue;
        };
        for c in 0..calls.len() {
            loop {
                let mut candidate = steps.clone();
                if let Step::Data { calls, .. } = &mut candidate[s] {
                    let items = &mut calls[c].items;
                    if items.len() <= 1 {
                        break;
                    }
                    items.truncate(items.len() / 2);
                }
                if out_of_time() || !fails(&candidate) {
                    break;
                }
                steps = candidate;
            }
        }
    }
    steps
}

/// Steps removed in chunks, halving the chunk size down to one (for any
/// kind of step: the cluster model's too), within `budget`.
pub fn shrink_steps<S: Clone>(
    mut steps: Vec<S>,
    budget: Duration,
    mut fails: impl FnMut(&[S]) -> bool,
) -> Vec<S> {
    let start = Instant::now();
    let out_of_time = || start.elapsed() > budget;
    let mut chunk = (steps.len() / 2).max(1);
    loop {
        let mut i = 0;
        while i < steps.len() && !out_of_time() {
            let mut candidate = steps.clone();
            candidate.drain(i..(i + chunk).min(candidate.len()));
            if fails(&candidate) {
                steps = candidate;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 || out_of_time() {
            break;
        }
        chunk /= 2;
    }
    steps
}

/// The report of a failed seed: where it failed, the sequence it shrank
/// to (and what that gives when run alone), as the `replay` call to paste.
pub fn report<S: std::fmt::Debug>(
    who: &str,
    replay: &str,
    seed: u64,
    of: usize,
    failure: &crate::run::Failure,
    shrunk: &[S],
    again: Result<(), crate::run::Failure>,
) -> String {
    format!(
        "{who}: seed {seed} failed at step {} of {of}: {}\n\
         shrunk to {} steps ({}), replay with:\n\n{replay}(&{:#?});\n",
        failure.step,
        failure.message,
        shrunk.len(),
        again
            .err()
            .map(|f| f.message)
            .unwrap_or_else(|| "passes alone: a race".into()),
        shrunk
    )
}
