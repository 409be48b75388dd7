//! Runs a cluster sequence against the cluster and the model side by
//! side. After every step, the filter it touched is read back (`status
//! --json`): its shards agree with the root and each other
//! ([`shards_agree`]), each shard's count is within the model's, and every
//! failure was loud (see `data.rs` for the answers' properties).

use crate::cluster::model::MSharded;
use crate::cluster::props::{counts_hold, loud, shards_agree};
use crate::cluster::steps::{CFault, CSpec, CStep, Kind, FILTERS};
use crate::cluster::world::{name, CWorld};
use crate::run::{Failure, Stats};

/// The fault in force during a step: failures it may cause are excused
/// (if loud); answers must still be right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hazard {
    None,
    Fault(CFault),
    /// The run's filter was dropped and created again under it: a loud
    /// refusal is allowed.
    Recreated,
}

pub struct CRun<'w> {
    pub world: &'w mut CWorld,
    pub model: Vec<Option<MSharded>>,
    /// Per filter: each shard's count (all generations) after the last
    /// step that read it.
    pub real: Vec<Option<Vec<u64>>>,
    /// Per filter, per shard: the epoch after the last step.
    pub epochs: Vec<Vec<u64>>,
    pub hazard: Hazard,
    /// The sequence's clock, in hours since 1970, for `rotate --if-due`.
    pub clock: i64,
    /// Fresh item ids for markers.
    pub fresh: u32,
    pub stats: Stats,
}

impl<'w> CRun<'w> {
    pub fn new(world: &'w mut CWorld) -> CRun<'w> {
        world.reset();
        let ms: i64 = redis::cmd("TIME")
            .query::<(i64, i64)>(&mut world.conn(0))
            .map(|(s, _)| s * 1000)
            .unwrap_or(0);
        CRun {
            world,
            model: vec![None; FILTERS as usize],
            real: vec![None; FILTERS as usize],
            epochs: vec![Vec::new(); FILTERS as usize],
            hazard: Hazard::None,
            clock: ms / 3_600_000,
            fresh: 3_000_000_000,
            stats: Stats::default(),
        }
    }

    pub fn steps(&mut self, steps: &[CStep]) -> Result<(), Failure> {
        for (i, s) in steps.iter().enumerate() {
            self.stats.steps += 1;
            if let Err(message) = self.step(s) {
                return Err(Failure { step: i, message });
            }
        }
        Ok(())
    }

    fn step(&mut self, step: &CStep) -> Result<(), String> {
        if let CStep::Fault(f) = step {
            return self.fault(*f);
        }
        self.stats.calls += 1;
        if let CStep::RotateIfDue { ahead, .. } = step {
            self.clock += ahead;
        }
        let out = self.act(step);
        // A fault lasts one step; lifted even when the step failed.
        if let Hazard::Fault(CFault::Maxmemory { node }) = self.hazard {
            self.world.maxmemory(node as usize, false);
        }
        let faulted = self.hazard;
        self.hazard = Hazard::None;
        match (out, faulted) {
            // A whole-filter command that failed under a fault is run
            // again once the fault is gone, as its message says to.
            (Err(Rerun(_)), Hazard::Fault(_)) => match self.act(step) {
                Ok(r) => r,
                Err(Rerun(e)) => Err(format!("run again without the fault, it failed: {e}")),
            },
            (Err(Rerun(e)), _) => Err(format!("failed without a fault: {e}")),
            (Ok(r), _) => r,
        }
    }

    fn act(&mut self, step: &CStep) -> Result<Result<(), String>, Rerun> {
        Ok(match step {
            CStep::Create { f, spec } => self.create(*f, spec),
            CStep::Filter {
                f,
                items,
                batch,
                least,
            } => self.filter(*f, items, *batch, *least),
            CStep::Beside {
                f,
                py,
                cli,
                batch,
                aio,
            } => self.beside(*f, py, cli, *batch, *aio),
            CStep::Add { f, items } => self.add(*f, items, false),
            CStep::Load { f, items } => self.add(*f, items, true),
            CStep::Check { f, items } => self.check(*f, items),
            CStep::Rotate { f } => return self.whole(*f, Whole::Rotate),
            CStep::RotateIfDue { f, .. } => return self.whole(*f, Whole::IfDue),
            CStep::Expand { f } => return self.whole(*f, Whole::Expand),
            CStep::Convert { f } => return self.whole(*f, Whole::Convert),
            CStep::Clear { f } => return self.whole(*f, Whole::Clear),
            CStep::DumpRestore { f, to } => self.dump_restore(*f, *to),
            CStep::Drop { f } => self.drop(*f),
            CStep::Recreate {
                f,
                spec,
                first,
                second,
            } => self.recreate(*f, spec, first, second),
            CStep::KillResume { f, items } => self.kill_resume(*f, items),
            CStep::Migrate { f, shard, items } => self.migrate(*f, *shard, items),
            CStep::Fault(_) => Ok(()),
        })
    }

    /// Runs `run` with the pending fault in force around it.
    pub fn with_fault<T>(&mut self, run: impl FnOnce(&CWorld) -> T) -> T {
        match self.hazard {
            Hazard::Fault(CFault::KillConnections { node }) => {
                self.world.killing(node as usize, || run(self.world))
            }
            _ => run(self.world),
        }
    }

    /// Ends a master's out-of-memory fault now (the step goes on).
    pub fn lift(&mut self) {
        if let Hazard::Fault(CFault::Maxmemory { node }) = self.hazard {
            self.world.maxmemory(node as usize, false);
        }
    }

    /// A command on a filter the model does not have: "does not exist".
    pub fn absent(&self, code: i32, stderr: &str) -> Result<(), String> {
        match code == 2 && stderr.contains("does not exist") {
            true => Ok(()),
            false => Err(format!(
                "on a filter that does not exist: exit {code}: {stderr}"
            )),
        }
    }

    /// Reads filter `f` back: shards in agreement, counts within the
    /// model's; then takes each generation's count from the filter (which
    /// generation of an expanding shard took which item depends on the
    /// order concurrent batches ran in).
    pub fn verify(&mut self, f: u8) -> Result<(), String> {
        let n = name(f);
        let s = self.world.status(&n);
        let Some(m) = self.model[f as usize].as_mut() else {
            self.real[f as usize] = None;
            return match s.code {
                2 => Ok(()),
                c => Err(format!(
                    "status of a dropped filter: exit {c}: {}",
                    s.stderr
                )),
            };
        };
        if s.code != 0 {
            return Err(format!("status: exit {}: {}", s.code, s.stderr));
        }
        shards_agree(&s, m)?;
        counts_hold(&s, m)?;
        for (ms, v) in m.shards.iter_mut().zip(&s.shards) {
            ms.sync_growth(v.counts.len(), true)?;
            ms.resync_counts(&v.counts);
        }
        self.real[f as usize] = Some(s.shards.iter().map(|v| v.counts.iter().sum()).collect());
        self.epochs[f as usize] = s.shards.iter().map(|v| v.epoch).collect();
        Ok(())
    }

    fn create(&mut self, f: u8, spec: &CSpec) -> Result<(), String> {
        let run = self.with_fault(|w| {
            w.rb(
                &create_args(&name(f), spec)
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>(),
                "",
            )
        });
        if self.model[f as usize].is_some() {
            // The generator never creates over a live filter.
            return Err(format!("create over a live filter: exit {}", run.code));
        }
        if run.code != 0 {
            loud(run.code, &run.stderr)?;
            if self.hazard == Hazard::None {
                return Err(format!("create failed without a fault: {}", run.stderr));
            }
            // Made or not, the filter is dropped again (all or nothing).
            let _ = self.world.rb(&["drop", &name(f), "--yes"], "");
            return self.no_keys(f);
        }
        self.made(f, spec)
    }

    /// Builds the model of filter `f` just created as `spec` from what
    /// the filter shows, and checks the shard capacities (§11.2).
    pub fn made(&mut self, f: u8, spec: &CSpec) -> Result<(), String> {
        let s = self.world.status(&name(f));
        let want = MSharded::shard_capacity(spec);
        let caps: Vec<Vec<u64>> = s.shards.iter().map(|v| v.caps.clone()).collect();
        if s.shards.len() != spec.shards.max(1) as usize || s.sharded != (spec.shards > 1) {
            return Err(format!(
                "created with {} shards, asked {}: {}",
                s.shards.len(),
                spec.shards,
                s.stderr
            ));
        }
        if caps.iter().any(|c| c.first() != Some(&want)) {
            return Err(format!("shard capacities {caps:?}, §11.2 says {want}"));
        }
        self.stats.backends[spec.store.index()] += 1;
        let created_ms = s.doc["filters"][0]["created_at_ms"].as_i64().unwrap_or(0);
        self.model[f as usize] = Some(MSharded::new(*spec, &caps, created_ms / 3_600_000));
        self.verify(f)
    }

    fn drop(&mut self, f: u8) -> Result<(), String> {
        let run = self.with_fault(|w| w.rb(&["drop", &name(f), "--yes"], ""));
        let existed = self.model[f as usize].take().is_some();
        match (run.code, existed) {
            (0, true) => {}
            (_, false) => self.absent(run.code, &run.stderr)?,
            (c, true) => {
                loud(c, &run.stderr)?;
                if self.hazard == Hazard::None {
                    return Err(format!("drop failed without a fault: {}", run.stderr));
                }
                // Run again once the fault is gone, as a user would.
                self.lift();
                let again = self.world.rb(&["drop", &name(f), "--yes"], "");
                if again.code != 0 {
                    return Err(format!("drop again: exit {}: {}", again.code, again.stderr));
                }
            }
        }
        self.no_keys(f)
    }

    /// No key of any instance of filter `f` is left.
    pub fn no_keys(&mut self, f: u8) -> Result<(), String> {
        self.real[f as usize] = None;
        let left = self.world.keys(&name(f));
        match left.is_empty() {
            true => Ok(()),
            false => Err(format!("keys left after drop: {left:?}")),
        }
    }

    fn dump_restore(&mut self, f: u8, to: u8) -> Result<(), String> {
        let file = self.world.dir.join(format!("dump-{}", self.stats.steps));
        let p = file.to_string_lossy().into_owned();
        let dumped = self.with_fault(|w| w.rb(&["dump", &name(f), &p], ""));
        let Some(m) = self.model[f as usize].clone() else {
            return self.absent(dumped.code, &dumped.stderr);
        };
        if m.spec.store.is_module() {
            // A dump cannot read a module's keys in slices: refused, with
            // no file left behind.
            let _ = std::fs::remove_file(&file);
            return match dumped.code {
                0 => Err("dumped a module filter".into()),
                c => loud(c, &dumped.stderr),
            };
        }
        if dumped.code != 0 {
            loud(dumped.code, &dumped.stderr)?;
            if self.hazard == Hazard::None {
                return Err(format!("dump failed without a fault: {}", dumped.stderr));
            }
            return Ok(());
        }
        self.lift();
        let restored = self.world.rb(&["restore", &p, "--as", &name(to)], "");
        let _ = std::fs::remove_file(&file);
        if restored.code != 0 {
            return Err(format!(
                "restore of a dump: exit {}: {}",
                restored.code, restored.stderr
            ));
        }
        self.model[to as usize] = Some(m);
        self.verify(to)?;
        // Every item the model holds answers present in the copy.
        let held: Vec<u32> = self.model[to as usize]
            .as_ref()
            .map(|m| {
                m.shards
                    .iter()
                    .flat_map(|s| s.gens.iter().flat_map(|g| g.counted.iter().copied()))
                    .take(300)
                    .collect()
            })
            .unwrap_or_default();
        self.check(to, &held)
    }
}

/// A whole-filter command failed under a fault: run it again.
#[derive(Debug)]
pub struct Rerun(pub String);

/// The whole-filter commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whole {
    Rotate,
    IfDue,
    Expand,
    Convert,
    Clear,
}

/// `create NAME --kind ...` for `spec`.
pub fn create_args(n: &str, spec: &CSpec) -> Vec<String> {
    let mut a: Vec<String> = ["create", n, "--kind"].map(String::from).to_vec();
    match spec.kind {
        Kind::Bloom => a.push("bloom".into()),
        Kind::Expanding => a.push("expanding".into()),
        Kind::Circular { n } => {
            a.extend(["circular", "--generations"].map(String::from));
            a.push(n.to_string());
            a.extend(["--every", "1h"].map(String::from));
        }
    }
    if spec.store.is_module() {
        a.extend(["--backend", spec.store.word()].map(String::from));
    }
    a.extend(["--capacity".into(), spec.capacity.to_string()]);
    a.extend(["--error-rate".into(), spec.error_rate.to_string()]);
    if spec.shards > 0 {
        a.extend(["--shards".into(), spec.shards.to_string()]);
    }
    a
}
