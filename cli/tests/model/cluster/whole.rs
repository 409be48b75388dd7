//! The whole-filter commands (`rotate`, `rotate --if-due`, `expand`,
//! `convert`, `clear`) and the faults between steps. A whole-filter
//! command that fails under a fault is run again once the fault is gone,
//! as its message says; after the command completes every shard must have
//! done its part exactly once (rotated exactly as owed, grown by one), and
//! the shards must agree with the root.

use crate::cluster::props::loud;
use crate::cluster::run::{CRun, Hazard, Rerun, Whole};
use crate::cluster::steps::{CFault, Kind};
use crate::cluster::world::name;
use crate::steps::Shape;

impl CRun<'_> {
    pub fn whole(&mut self, f: u8, what: Whole) -> Result<Result<(), String>, Rerun> {
        let n = name(f);
        let now = chrono::DateTime::from_timestamp(self.clock * 3600, 0)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
            .unwrap_or_default();
        let args: Vec<&str> = match what {
            Whole::Rotate => vec!["rotate", &n],
            Whole::IfDue => vec!["rotate", &n, "--if-due", "--now", &now, "--force"],
            Whole::Expand => vec!["expand", &n],
            Whole::Convert => vec!["convert", &n],
            Whole::Clear => vec!["clear", &n, "--yes"],
        };
        let run = self.with_fault(|w| w.rb(&args, ""));
        if self.model[f as usize].is_none() {
            return Ok(self.absent(run.code, &run.stderr));
        }
        if run.code != 0 {
            if let Err(e) = loud(run.code, &run.stderr) {
                return Ok(Err(e));
            }
            return Err(Rerun(format!("exit {}: {}", run.code, run.stderr)));
        }
        Ok(self.whole_done(f, what))
    }

    /// The model after a completed whole-filter command, from each
    /// shard's epoch: exactly the rotations owed, one expansion each.
    fn whole_done(&mut self, f: u8, what: Whole) -> Result<(), String> {
        let s = self.world.status(&name(f));
        let before = self.epochs[f as usize].clone();
        let clock = self.clock;
        let Some(m) = self.model[f as usize].as_mut() else {
            return Ok(());
        };
        if s.shards.len() != m.count() || before.len() != m.count() {
            return Err(format!(
                "{} shards after {what:?}: {}",
                s.shards.len(),
                s.stderr
            ));
        }
        for (j, (ms, v)) in m.shards.iter_mut().zip(&s.shards).enumerate() {
            let done = v.epoch as i64 - before[j] as i64;
            let owed = match (what, ms.spec.shape) {
                (Whole::Rotate | Whole::Expand, _) => 1,
                (Whole::IfDue, Shape::Circular { n, .. }) if clock > ms.period => {
                    (clock - ms.period).min(i64::from(n))
                }
                _ => 0,
            };
            if matches!(what, Whole::Rotate | Whole::Expand | Whole::IfDue) && done != owed {
                return Err(format!(
                    "shard {j}: {done} {what:?} done, {owed} owed (epochs {before:?} -> {:?})",
                    s.shards.iter().map(|v| v.epoch).collect::<Vec<_>>()
                ));
            }
            match what {
                Whole::Rotate | Whole::IfDue => (0..done).for_each(|_| ms.rotate()),
                Whole::Expand => ms.grow(),
                Whole::Convert => {
                    ms.spec.shape = Shape::Expanding;
                    ms.spec.capacity = ms.gens[0].capacity;
                }
                Whole::Clear => ms.clear(),
            }
            if what == Whole::IfDue {
                ms.period = ms.period.max(clock);
            }
        }
        if what == Whole::Convert {
            m.spec.kind = Kind::Expanding;
        }
        self.verify(f)
    }

    /// A fault: on a master for the next step, or done now.
    pub fn fault(&mut self, fault: CFault) -> Result<(), String> {
        // One fault at a time: the one before ends here.
        self.lift();
        self.hazard = Hazard::None;
        match fault {
            CFault::Maxmemory { node } => self.world.maxmemory(node as usize, true),
            CFault::Pause { node, ms } => self.world.pause(node as usize, ms),
            CFault::KillConnections { .. } => {}
            CFault::Restart { node } => return self.restart(node as usize),
            CFault::DeleteShardMeta { f, shard } => return self.damage(f, shard, true),
            CFault::DeleteShardBlocks { f, shard } => return self.damage(f, shard, false),
        }
        self.hazard = Hazard::Fault(fault);
        Ok(())
    }

    /// A master restarted without persistence: each filter that had a key
    /// there says so (status fails), then every filter is dropped and no
    /// key of it is left: a filter whose root was lost is dropped by its
    /// shards' names (counted: `orphans`).
    fn restart(&mut self, node: usize) -> Result<(), String> {
        let touched: Vec<u8> = (0..self.model.len() as u8)
            .filter(|&f| self.model[f as usize].is_some())
            .filter(|&f| self.world.keys(&name(f)).iter().any(|(i, _)| *i == node))
            .collect();
        self.world.restart(node);
        for &f in &touched {
            let s = self.world.rb(&["status", &name(f), "--check"], "");
            if s.code == 0 {
                return Err(format!(
                    "{} lost keys in a restart, status --check says 0",
                    name(f)
                ));
            }
            loud(s.code, &s.stderr)?;
        }
        for f in 0..self.model.len() as u8 {
            if self.model[f as usize].take().is_none() {
                continue;
            }
            // A filter whose root was lost is found by its shards' names.
            let d = self.world.rb(&["drop", &name(f), "--yes"], "");
            if d.stdout.contains("lost root") {
                self.stats.orphans += 1;
            }
            if d.code != 0 && !d.stderr.contains("does not exist") {
                return Err(format!(
                    "drop after a restart: exit {}: {}",
                    d.code, d.stderr
                ));
            }
            self.no_keys(f)?;
        }
        Ok(())
    }

    /// A shard's metadata or blocks deleted: `status --check` fails, a
    /// query of what it held never answers "absent" with exit 0, a write
    /// routed to it never succeeds; then the filter is dropped whole.
    fn damage(&mut self, f: u8, shard: u8, meta: bool) -> Result<(), String> {
        let Some(m) = self.model[f as usize].clone() else {
            return Ok(());
        };
        let j = u32::from(shard) % m.count() as u32;
        let keys = self.world.shard_keys(&name(f), j);
        let sharded = m.spec.shards > 1;
        let doomed: Vec<_> = keys
            .into_iter()
            .filter(|(_, k)| match meta && sharded {
                true => k.ends_with(":meta"),
                false => k.contains(":gen:") || k.contains(":block"),
            })
            .collect();
        let held = m.shards[j as usize]
            .gens
            .iter()
            .any(|g| g.count_range().0 > 0);
        for (i, k) in &doomed {
            let _: () = redis::cmd("DEL")
                .arg(k)
                .query(&mut self.world.conn(*i))
                .unwrap();
        }
        if !doomed.is_empty() && (meta && sharded || held) {
            let s = self.world.rb(&["status", &name(f), "--check"], "");
            if s.code == 0 {
                return Err(format!(
                    "shard {j}'s {doomed:?} deleted, status --check says 0"
                ));
            }
            let items: Vec<u32> = m.shards[j as usize]
                .gens
                .iter()
                .flat_map(|g| g.counted.iter().copied())
                .take(200)
                .collect();
            let c = self
                .world
                .rb(&["check", &name(f)], &crate::cluster::world::lines(&items));
            if c.code <= 1 && crate::cluster::world::ids(&c.stdout).len() < items.len() {
                return Err(format!(
                    "shard {j}'s {doomed:?} deleted, check answers absent with exit 0"
                ));
            }
        }
        self.model[f as usize] = None;
        let d = self.world.rb(&["drop", &name(f), "--yes"], "");
        if d.code != 0 {
            loud(d.code, &d.stderr)?;
        }
        self.no_keys(f)
    }
}
