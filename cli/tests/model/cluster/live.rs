//! The steps that change the cluster while a `filter` run is at work: a
//! drop and re-create with another shard count between two parts of its
//! input, a kill and `--resume`, a shard's slot migrated mid-batch.

use crate::cluster::data::{settle, Printed};
use crate::cluster::props::loud;
use crate::cluster::run::{create_args, CRun, Hazard};
use crate::cluster::steps::{CFault, CSpec};
use crate::cluster::world::{ids, lines, live, name};
use std::collections::BTreeSet;

/// The line a run's error says to run again from ("run again from line
/// N", "resume ... from line N").
fn again_from(stderr: &str) -> Option<usize> {
    let at = stderr.find("again from line ")? + "again from line ".len();
    let digits: String = stderr[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The batch size of a killed and resumed run.
const KILL_BATCH: usize = 20;

/// The items of the batches (of `batch` lines of `input`) that hold the
/// last line `printed` shows: the batch a killed run was printing.
fn printing(input: &[u32], printed: &[u32], batch: usize) -> BTreeSet<u32> {
    let Some(last) = printed.last() else {
        return BTreeSet::new();
    };
    input
        .chunks(batch)
        .filter(|c| c.contains(last))
        .flatten()
        .copied()
        .collect()
}

impl CRun<'_> {
    /// A fresh item, never in any filter: a run's marker line.
    fn marker(&mut self) -> u32 {
        self.fresh += 1;
        self.fresh
    }

    /// `filter` fed `first` and a marker; once the marker is printed, the
    /// filter is dropped and created again as `spec`; then fed `second`.
    /// The second part is answered by the new filter or refused loudly,
    /// and no key of the dropped instance is left or written again.
    pub fn recreate(
        &mut self,
        f: u8,
        spec: &CSpec,
        first: &[u32],
        second: &[u32],
    ) -> Result<(), String> {
        let n = name(f);
        let mark = self.marker();
        let mut head = first.to_vec();
        head.push(mark);
        let child = self
            .world
            .spawn(&["--in-flight", "2", "filter", &n, "--batch", "1"]);
        // The drop and the re-create are the step's setting, not what it
        // tests: a master out of memory is lifted for them.
        let hazard = self.hazard;
        let oom = match hazard {
            Hazard::Fault(CFault::Maxmemory { node }) => Some(node as usize),
            _ => None,
        };
        let world = &*self.world;
        let mut old_keys = Vec::new();
        let mut made = None;
        let (printed, code, stderr) = live(
            child,
            &lines(&head),
            Some(crate::world::item(mark)),
            &lines(second),
            false,
            || {
                if let Some(node) = oom {
                    world.maxmemory(node, false);
                }
                old_keys = world.keys(&n);
                let d = world.rb(&["drop", &n, "--yes"], "");
                let args = create_args(&n, spec);
                let c = world.rb(&args.iter().map(String::as_str).collect::<Vec<_>>(), "");
                made = Some((d, c, world.keys(&n)));
            },
        );
        let printed = ids(&printed.join("\n"));
        let Some((d, c, new_keys)) = made else {
            return Err("the midway never ran".into());
        };
        if c.code != 0 {
            return Err(format!("re-create: exit {}: {}", c.code, c.stderr));
        }
        // The run stopped in the first part when it says to run again from
        // a line there (a refusal stops the reading), marker printed or
        // not: its exit speaks of the old filter.
        let stopped_at = again_from(&stderr).filter(|&l| l <= head.len());
        let cut = printed
            .iter()
            .position(|&i| i == mark)
            .filter(|_| stopped_at.is_none());
        // The first part, against the old filter (dropped now).
        if let Some(m) = self.model[f as usize].as_mut() {
            if d.code != 0 {
                return Err(format!("drop: exit {}: {}", d.code, d.stderr));
            }
            let upto = cut.map_or(printed.len(), |c| c + 1);
            let out = Printed {
                items: printed[..upto].to_vec(),
                code: if cut.is_some() { 0 } else { code },
                stderr: stderr.clone(),
                least: false,
            };
            settle(m, &head, 1, &out, hazard)?;
        }
        self.model[f as usize] = None;
        self.made(f, spec)?;
        // Nothing of the dropped instance survives, nor is written again.
        let dead: BTreeSet<_> = old_keys.iter().filter(|k| !new_keys.contains(k)).collect();
        let left: Vec<_> = self
            .world
            .keys(&n)
            .into_iter()
            .filter(|k| dead.contains(k))
            .collect();
        if !left.is_empty() {
            return Err(format!(
                "keys of the dropped instance after its re-create: {left:?}"
            ));
        }
        // A run that stopped in the first part (its filter full, say) never
        // read the second: its exit speaks of the old filter, not the new.
        let tail = cut.map_or(&[][..], |c| &printed[c + 1..]);
        let (code, stderr) = match cut {
            Some(_) => (code, stderr),
            None => (0, String::new()),
        };
        let out = Printed {
            items: tail.to_vec(),
            code,
            stderr,
            least: false,
        };
        let m = self.model[f as usize].as_mut().ok_or("no model")?;
        // A loud refusal (the run's filter was dropped) is allowed.
        settle(m, second, head.len() + 1, &out, Hazard::Recreated)?;
        self.verify(f)
    }

    /// `filter --state FILE` killed after its first line; `filter --resume
    /// FILE` fed the same input: together, every new item printed once,
    /// every stored item printed.
    pub fn kill_resume(&mut self, f: u8, items: &[u32]) -> Result<(), String> {
        let n = name(f);
        let state = self.world.dir.join(format!("state-{}", self.stats.steps));
        let _ = std::fs::remove_file(&state);
        let st = state.to_string_lossy().into_owned();
        let b = KILL_BATCH.to_string();
        let child = self
            .world
            .spawn(&["filter", &n, "--batch", &b, "--state", &st]);
        let (first, first_code, first_err) = live(child, &lines(items), None, "", true, || {});
        if first_code != -9 {
            // Ended before the kill: nothing to resume, one plain run.
            let _ = std::fs::remove_file(&state);
            return self.settle_run(f, items, ids(&first.join("\n")), first_code, first_err);
        }
        let resumed = self.with_fault(|w| {
            w.rb(
                &["filter", &n, "--batch", &b, "--resume", &st],
                &lines(items),
            )
        });
        let _ = std::fs::remove_file(&state);
        let hazard = self.hazard;
        let Some(m) = self.model[f as usize].as_mut() else {
            return self.absent(resumed.code, &resumed.stderr);
        };
        let first = ids(&first.join("\n"));
        // `--batch` is lines per shard: a batch is that many per shard.
        let again = printing(items, &first, KILL_BATCH * m.count());
        let mut all = first.clone();
        // A killed `filter` may print again the lines of the batch it was
        // printing (docs/CLI.md, "Resuming a run"), and only those.
        all.extend(
            ids(&resumed.stdout)
                .into_iter()
                .filter(|id| !(again.contains(id) && first.contains(id))),
        );
        let out = Printed {
            items: all,
            code: resumed.code,
            stderr: resumed.stderr,
            least: false,
        };
        if out.code != 0 && !out.stderr.contains("is full") {
            loud(out.code, &out.stderr)?;
        }
        settle(m, items, 1, &out, hazard)?;
        self.verify(f)
    }

    /// Settles one plain `filter` run of `items` on filter `f`.
    fn settle_run(
        &mut self,
        f: u8,
        items: &[u32],
        printed: Vec<u32>,
        code: i32,
        stderr: String,
    ) -> Result<(), String> {
        let hazard = self.hazard;
        let Some(m) = self.model[f as usize].as_mut() else {
            return self.absent(code, &stderr);
        };
        let out = Printed {
            items: printed,
            code,
            stderr,
            least: false,
        };
        settle(m, items, 1, &out, hazard)?;
        self.verify(f)
    }

    /// A `filter` run during which shard `shard`'s slot moves to another
    /// master.
    pub fn migrate(&mut self, f: u8, shard: u8, items: &[u32]) -> Result<(), String> {
        let n = name(f);
        let count = self.model[f as usize].as_ref().map_or(1, |m| m.count()) as u32;
        let keys = self.world.shard_keys(&n, u32::from(shard) % count);
        let Some((from, key)) = keys.first().cloned() else {
            return self.filter(f, items, 20, false);
        };
        let slot = self.world.slot(&key);
        let to = (from + 1) % 3;
        let child = self.world.spawn(&["filter", &n, "--batch", "20"]);
        // The migration is the step's setting: a master out of memory
        // refuses the keys it imports (MIGRATE fails), so the fault is
        // lifted and the migration finished.
        let oom = match self.hazard {
            Hazard::Fault(CFault::Maxmemory { node }) => Some(node as usize),
            _ => None,
        };
        let world = &*self.world;
        let mut moved = Ok(());
        let (printed, code, stderr) = live(child, &lines(items), None, "", false, || {
            moved = world.migrate(slot, from, to);
            if let (Err(_), Some(node)) = (&moved, oom) {
                world.maxmemory(node, false);
                moved = world.migrate(slot, from, to);
            }
        });
        moved.map_err(|e| format!("migrating slot {slot}: {e}"))?;
        self.stats.items += items.len() as u64;
        let hazard = self.hazard;
        let Some(m) = self.model[f as usize].as_mut() else {
            return self.absent(code, &stderr);
        };
        let out = Printed {
            items: ids(&printed.join("\n")),
            code,
            stderr,
            least: false,
        };
        settle(m, items, 1, &out, hazard)?;
        self.verify(f)
    }
}
