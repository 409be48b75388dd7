//! The cluster model's data steps: what a `filter`, `add`, `load` or
//! `check` run answered, held against the model; after a failed run, the
//! rule that every stored item was answered new, counted unknown, or
//! refused by name (checked by the counts: an item stored silently is
//! counted where the model has no room for it).

use crate::cluster::model::MSharded;
use crate::cluster::props::{loud, unknown_lines};
use crate::cluster::run::{CRun, Hazard};
use crate::cluster::steps::Kind;
use crate::cluster::world::{ids, lines, name};
use std::collections::BTreeSet;

/// What one `filter` run (or a killed run and its resume) printed.
pub struct Printed {
    pub items: Vec<u32>,
    pub code: i32,
    pub stderr: String,
    /// Delivered at least once.
    pub least: bool,
}

/// Holds the answers of a `filter` run over `input` (in input order)
/// against `m`, and records them. `first_line` is the input line number
/// of `input[0]` (for the lines an error names).
pub fn settle(
    m: &mut MSharded,
    input: &[u32],
    first_line: usize,
    out: &Printed,
    hazard: Hazard,
) -> Result<(), String> {
    settle_with(m, input, input, first_line, out, hazard)
}

/// [`settle`], with `room` the items written at the same time (this run's
/// and another client's): a refusal as full is right when they may fill
/// a shard.
pub fn settle_with(
    m: &mut MSharded,
    input: &[u32],
    room: &[u32],
    first_line: usize,
    out: &Printed,
    hazard: Hazard,
) -> Result<(), String> {
    if hazard != Hazard::None {
        // Each run of a batch may have lost its reply after its transaction
        // counted every item it wrote.
        for &id in input {
            m.lost_runs(id, u64::from(FILTER_RETRIES) + 1);
        }
    }
    if out.code != 0 {
        loud(out.code, &out.stderr)?;
        let full = out.stderr.contains("is full");
        if full && !m.may_fill(room) {
            return Err(format!(
                "refused as full, no shard near its capacity: {}",
                out.stderr
            ));
        }
        if !full && out.code != 6 && hazard == Hazard::None {
            return Err(format!("failed without a fault: {}", out.stderr));
        }
    }
    // Lines printed again after a lost reply (at least once): no more
    // than the warning counts.
    let lost = match out.code {
        6 if out.least => crate::bin::lost_answers(&out.stderr).unwrap_or(0),
        _ => 0,
    };
    let mut again = 0u64;
    let mut seen = BTreeSet::new();
    for &id in &out.items {
        if m.present(id) || !seen.insert(id) {
            if again < lost {
                again += 1;
                continue;
            }
            return Err(format!(
                "i{id} answered new though the filter held it (or twice in one run)"
            ));
        }
        match lost > 0 {
            true => m.written(id),
            false => m.changed(id),
        }
    }
    // Unprinted lines: present already, a false positive, refused (not
    // stored), or, only where the error says so, of unknown fate.
    let unknown = unknown_lines(&out.stderr);
    for (i, &id) in input.iter().enumerate() {
        let line = first_line + i;
        if !seen.contains(&id)
            && !m.present(id)
            && (out.code == 6 || unknown.iter().any(|r| r.contains(&line)))
        {
            m.unknown(id);
        }
    }
    Ok(())
}

/// `filter`'s `--retries` in these runs.
const FILTER_RETRIES: u32 = 4;

/// `filter NAME --batch B`, two batches in flight, `FILTER_RETRIES`
/// retries.
pub fn filter_args<'a>(n: &'a str, b: &'a str, least: bool) -> Vec<&'a str> {
    const _: () = assert!(FILTER_RETRIES == 4, "the flag below says 4");
    let mut args = vec![
        "--in-flight",
        "2",
        "--retries",
        "4",
        "filter",
        n,
        "--batch",
        b,
    ];
    if least {
        args.extend(["--delivery", "at-least-once"]);
    }
    args
}

impl CRun<'_> {
    /// `filter NAME --batch B`.
    pub fn filter(&mut self, f: u8, items: &[u32], batch: u32, least: bool) -> Result<(), String> {
        let n = name(f);
        let b = batch.to_string();
        let args = filter_args(&n, &b, least);
        let hazard = self.hazard;
        let run = self.with_fault(|w| w.rb(&args, &lines(items)));
        self.stats.items += items.len() as u64;
        let out = Printed {
            items: ids(&run.stdout),
            code: run.code,
            stderr: run.stderr,
            least,
        };
        let Some(m) = self.model[f as usize].as_mut() else {
            return self.absent(out.code, &out.stderr);
        };
        settle(m, items, 1, &out, hazard)?;
        self.verify(f)
    }

    /// `add NAME --json` (`load` alike, from a file): counts only.
    pub fn add(&mut self, f: u8, items: &[u32], load: bool) -> Result<(), String> {
        let n = name(f);
        let path = self.world.dir.join(format!("load-{}", self.stats.steps));
        let run = match load {
            true => {
                std::fs::write(&path, lines(items)).map_err(|e| e.to_string())?;
                let p = path.to_string_lossy().into_owned();
                self.with_fault(|w| w.rb(&["load", &n, &p, "--json"], ""))
            }
            false => self.with_fault(|w| w.rb(&["add", &n, "--json"], &lines(items))),
        };
        let _ = std::fs::remove_file(&path);
        self.stats.items += items.len() as u64;
        let hazard = self.hazard;
        let before = self.real[f as usize].clone();
        let Some(m) = self.model[f as usize].as_mut() else {
            return self.absent(run.code, &run.stderr);
        };
        let doc: serde_json::Value = run
            .stdout
            .lines()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or(serde_json::Value::Null);
        let new = doc["new"].as_u64().unwrap_or(0);
        let unknown = doc["unknown"].as_u64().unwrap_or(0);
        if run.code != 0 {
            loud(run.code, &run.stderr)?;
            let full = run.stderr.contains("is full");
            if full && !m.may_fill(items) {
                return Err(format!(
                    "refused as full, no shard near its capacity: {}",
                    run.stderr
                ));
            }
            if !full && hazard == Hazard::None {
                return Err(format!("failed without a fault: {}", run.stderr));
            }
        } else if doc["items"].as_u64() != Some(items.len() as u64) {
            return Err(format!("{} items said, {} sent", doc["items"], items.len()));
        }
        let distinct: BTreeSet<u32> = items.iter().copied().filter(|&i| !m.in_newest(i)).collect();
        let gens_before: Vec<usize> = m.shards.iter().map(|s| s.gens.len()).collect();
        // Which were new the command does not say: each is present (if
        // it was stored) and counted or not; the total is checked below.
        let stored = run.code == 0;
        for &id in &distinct {
            match stored {
                true => m.written(id),
                false => m.unknown(id),
            }
        }
        if m.spec.kind == Kind::Expanding {
            // An expanding shard that grows during the call writes the rest
            // of it into the new generation, counting again there what the
            // old one held (docs/FORMAT.md §8.1: insert writes the newest).
            for &id in items {
                let j = m.route(id);
                m.shards[j].total_maybe += 1;
            }
        }
        let after = self.verify(f);
        // Insert counts an item new when it flips a bit of the deciding
        // generation (docs/FORMAT.md §8.1): once if the newest lacked it,
        // and once more in each generation an expanding shard grew during
        // the call (the rest of the call writes there).
        if let Some(m) = self.model[f as usize].as_ref() {
            let mut occurs = std::collections::BTreeMap::<u32, u64>::new();
            for &id in items {
                *occurs.entry(id).or_default() += 1;
            }
            let bound: u64 = occurs
                .iter()
                .map(|(&id, &n)| {
                    let j = m.route(id);
                    let grew = m.shards[j].gens.len().saturating_sub(gens_before[j]) as u64;
                    n.min(u64::from(distinct.contains(&id)) + grew)
                })
                .sum();
            if new > bound {
                return Err(format!(
                    "{new} new of {} items not in the filter (at most {bound} across its growth)",
                    distinct.len()
                ));
            }
        }
        // Exactly the new ones were counted (when none was of unknown fate).
        if let (Some(b), Some(a)) = (before, self.real[f as usize].clone()) {
            let grown = a.iter().sum::<u64>() as i64 - b.iter().sum::<u64>() as i64;
            if unknown == 0 && grown > new as i64 {
                return Err(format!(
                    "{grown} items counted, {new} said new (exit {}): stored without an answer",
                    run.code
                ));
            }
        }
        after
    }

    /// `check NAME`: every item the model holds is printed.
    pub fn check(&mut self, f: u8, items: &[u32]) -> Result<(), String> {
        let n = name(f);
        let run = self.with_fault(|w| w.rb(&["check", &n], &lines(items)));
        let hazard = self.hazard;
        let Some(m) = self.model[f as usize].as_ref() else {
            return self.absent(run.code, &run.stderr);
        };
        // Exit 1: some item absent (as grep does).
        if run.code > 1 {
            loud(run.code, &run.stderr)?;
            if hazard == Hazard::None {
                return Err(format!("check failed without a fault: {}", run.stderr));
            }
            return Ok(());
        }
        let printed: BTreeSet<u32> = ids(&run.stdout).into_iter().collect();
        for &id in items {
            if m.present(id) && !printed.contains(&id) {
                return Err(format!(
                    "false negative: i{id} (shard {}) is in the filter, check says absent",
                    m.route(id)
                ));
            }
        }
        Ok(())
    }
}
