//! The cluster model's steps and their seeded generator. Every step is
//! plain data whose `Debug` form is valid Rust, so a shrunk failure prints
//! ready to paste into `replay_cluster(&[...])`.

use crate::rng::Rng;
pub use crate::steps::Store;

/// A filter's kind as `rotabloom create --kind` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bloom,
    Expanding,
    /// N generations, the default mode (insert-newest-query-all).
    Circular {
        n: u32,
    },
}

/// A filter to create: `shards` 0 is an unsharded filter; `store` its
/// backend (bitmap, or RedisBloom keys when the module is loaded).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CSpec {
    pub kind: Kind,
    pub store: Store,
    pub shards: u32,
    pub capacity: u64,
    pub error_rate: f64,
}

/// Faults on one master (`node`: 0, 1 or 2) or on one shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CFault {
    /// `maxmemory 1` on the node during the next step: every write there
    /// is refused (out of memory) until it is lifted after the step.
    Maxmemory { node: u8 },
    /// `CLIENT PAUSE ms WRITE` on the node, then the next step.
    Pause { node: u8, ms: u32 },
    /// The node's client connections killed again and again during the
    /// next step (`CLIENT KILL TYPE normal`).
    KillConnections { node: u8 },
    /// The node restarted without persistence: its keys are gone; every
    /// filter that had one must say so loudly, then all are dropped.
    Restart { node: u8 },
    /// The metadata hash of shard `shard` (modulo the shard count) of
    /// filter `f` deleted; the damage must be loud, then `f` is dropped.
    DeleteShardMeta { f: u8, shard: u8 },
    /// Every block of that shard deleted.
    DeleteShardBlocks { f: u8, shard: u8 },
}

/// One step of a cluster sequence; `f` is a filter slot.
#[derive(Clone, Debug, PartialEq)]
pub enum CStep {
    Create {
        f: u8,
        spec: CSpec,
    },
    /// `filter` (check-and-insert, printing new lines), with
    /// `--in-flight` batches of `batch` lines per shard.
    Filter {
        f: u8,
        items: Vec<u32>,
        batch: u32,
        least: bool,
    },
    /// A `filter` run fed `cli` and, at the same time, a Python client
    /// (`aio`: the asyncio class, else the blocking one) fed `py`, both
    /// `batch` items at a time.
    Beside {
        f: u8,
        py: Vec<u32>,
        cli: Vec<u32>,
        batch: u32,
        aio: bool,
    },
    /// `add` (items on standard input).
    Add {
        f: u8,
        items: Vec<u32>,
    },
    /// `load NAME FILE`.
    Load {
        f: u8,
        items: Vec<u32>,
    },
    /// `check` (queries).
    Check {
        f: u8,
        items: Vec<u32>,
    },
    Rotate {
        f: u8,
    },
    /// `rotate --if-due --now` the sequence's clock moved by `ahead` hours.
    RotateIfDue {
        f: u8,
        ahead: i64,
    },
    Expand {
        f: u8,
    },
    Convert {
        f: u8,
    },
    Clear {
        f: u8,
    },
    /// `dump`, then `restore --as` slot `to` (which must not exist).
    DumpRestore {
        f: u8,
        to: u8,
    },
    Drop {
        f: u8,
    },
    /// A `filter` run fed `first`; once it printed its last line, the
    /// filter is dropped and created again as `spec` (another shard count,
    /// or unsharded); then it is fed `second`.
    Recreate {
        f: u8,
        spec: CSpec,
        first: Vec<u32>,
        second: Vec<u32>,
    },
    /// `filter --state FILE` killed (SIGKILL) after its first line, then
    /// `filter --resume FILE` fed the same input.
    KillResume {
        f: u8,
        items: Vec<u32>,
    },
    /// A `filter` run during which the slot of one shard's keys migrates
    /// to another master (`MIGRATING`/`IMPORTING`, `MIGRATE`, `NODE`), so
    /// that MOVED and ASK occur.
    Migrate {
        f: u8,
        shard: u8,
        items: Vec<u32>,
    },
    Fault(CFault),
}

pub const FILTERS: u8 = 3;

pub struct CGenerator {
    rng: Rng,
    filters: Vec<Option<CSpec>>,
    next_item: u32,
    /// Whether RedisBloom is loaded on the cluster's nodes.
    module: bool,
}

impl CGenerator {
    pub fn new(seed: u64, module: bool) -> CGenerator {
        CGenerator {
            rng: Rng::new(seed ^ 0xc1_5e7e),
            filters: vec![None; FILTERS as usize],
            next_item: 0,
            module,
        }
    }

    fn spec(&mut self) -> CSpec {
        let kind = match self.rng.below(3) {
            0 => Kind::Bloom,
            1 => Kind::Expanding,
            _ => Kind::Circular {
                n: *self.rng.pick(&[2, 3, 4]),
            },
        };
        // Unsharded now and then, else 1 to 8 shards.
        let shards = match self.rng.below(8) {
            0 => 0,
            _ => 1 + self.rng.below(8) as u32,
        };
        // Drawn last, so that a seed's other choices stay as they were
        // before the module backend came into the cluster model.
        const CAPACITIES: [u64; 7] = [3, 10, 40, 200, 1_000, 5_000, 50_000];
        let at = self.rng.below(CAPACITIES.len() as u64);
        let capacity = CAPACITIES[at as usize];
        let error_rate = *self.rng.pick(&[0.01, 0.001]);
        let store = match self.module && self.rng.chance(0.3) {
            true => Store::Module,
            false => Store::Bitmap,
        };
        CSpec {
            kind,
            store: store.module_by(at),
            shards,
            capacity,
            error_rate,
        }
    }

    /// Mostly fresh items, with repeats in the batch and of earlier ones.
    fn items(&mut self, capacity: u64) -> Vec<u32> {
        let n = match self.rng.below(10) {
            0..=2 => 1 + self.rng.below(5) as usize,
            3..=7 => 5 + self.rng.below(200) as usize,
            _ => 200 + self.rng.below(1_300) as usize,
        };
        let n = n.min((capacity as usize).saturating_mul(3).max(12));
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let id = match self.rng.below(10) {
                0 if !out.is_empty() => *self.rng.pick(&out),
                1 | 2 if self.next_item > 0 => self.rng.below(u64::from(self.next_item)) as u32,
                _ => {
                    self.next_item += 1;
                    self.next_item - 1
                }
            };
            out.push(id);
        }
        out
    }

    fn existing(&mut self) -> Option<(u8, CSpec)> {
        let live: Vec<(u8, CSpec)> = (0..FILTERS)
            .filter_map(|i| self.filters[i as usize].map(|s| (i, s)))
            .collect();
        (!live.is_empty()).then(|| *self.rng.pick(&live))
    }

    fn absent(&mut self) -> Option<u8> {
        let free: Vec<u8> = (0..FILTERS)
            .filter(|&i| self.filters[i as usize].is_none())
            .collect();
        (!free.is_empty()).then(|| *self.rng.pick(&free))
    }

    /// The next step; `faults` allows fault steps.
    pub fn step(&mut self, faults: bool) -> CStep {
        loop {
            let roll = self.rng.below(100);
            if let Some(s) = self.try_step(roll, faults) {
                return s;
            }
        }
    }

    fn try_step(&mut self, roll: u64, faults: bool) -> Option<CStep> {
        let circular = |s: &CSpec| matches!(s.kind, Kind::Circular { .. });
        Some(match roll {
            0..=11 => {
                let f = self.absent()?;
                let spec = self.spec();
                self.filters[f as usize] = Some(spec);
                CStep::Create { f, spec }
            }
            33..=36 => {
                let (f, s) = self.existing()?;
                let py = self.items(s.capacity);
                // Half the Python client's items, and some of its own.
                let mut cli: Vec<u32> = py.iter().copied().step_by(2).collect();
                cli.extend(self.items(s.capacity).into_iter().take(py.len() / 2 + 1));
                CStep::Beside {
                    f,
                    py,
                    cli,
                    batch: *self.rng.pick(&[1, 7, 50, 250]),
                    aio: self.rng.chance(0.5),
                }
            }
            12..=32 => {
                let (f, s) = self.existing()?;
                let items = self.items(s.capacity);
                let batch = *self.rng.pick(&[1, 7, 50, 250]);
                let least = self.rng.chance(0.25);
                CStep::Filter {
                    f,
                    items,
                    batch,
                    least,
                }
            }
            37..=41 => {
                let (f, s) = self.existing()?;
                CStep::Add {
                    f,
                    items: self.items(s.capacity),
                }
            }
            42..=45 => {
                let (f, s) = self.existing()?;
                CStep::Load {
                    f,
                    items: self.items(s.capacity),
                }
            }
            46..=51 => {
                let (f, s) = self.existing()?;
                CStep::Check {
                    f,
                    items: self.items(s.capacity),
                }
            }
            52..=55 => {
                let (f, s) = self.existing()?;
                circular(&s).then_some(())?;
                CStep::Rotate { f }
            }
            56..=59 => {
                let (f, s) = self.existing()?;
                circular(&s).then_some(())?;
                let ahead = match self.rng.below(5) {
                    0 => -1,
                    1 => 2 + self.rng.below(6) as i64,
                    2 => 0,
                    _ => 1,
                };
                CStep::RotateIfDue { f, ahead }
            }
            60..=62 => {
                let (f, s) = self.existing()?;
                (s.kind == Kind::Expanding).then_some(())?;
                CStep::Expand { f }
            }
            63..=65 => {
                let (f, s) = self.existing()?;
                (s.kind == Kind::Bloom).then_some(())?;
                self.filters[f as usize] = Some(CSpec {
                    kind: Kind::Expanding,
                    ..s
                });
                CStep::Convert { f }
            }
            66..=68 => CStep::Clear {
                f: self.existing()?.0,
            },
            69..=71 => {
                let (f, s) = self.existing()?;
                let to = self.absent()?;
                // A RedisBloom filter's dump is refused (nothing restored).
                if s.store == Store::Bitmap {
                    self.filters[to as usize] = Some(s);
                }
                CStep::DumpRestore { f, to }
            }
            72..=75 => {
                let (f, _) = self.existing()?;
                self.filters[f as usize] = None;
                CStep::Drop { f }
            }
            76..=79 => {
                let (f, s) = self.existing()?;
                let mut spec = self.spec();
                spec.shards = match s.shards {
                    0 => 1 + self.rng.below(8) as u32,
                    n => (n + 1 + self.rng.below(7) as u32) % 9,
                };
                self.filters[f as usize] = Some(spec);
                let first = self.items(s.capacity.min(200));
                let mut second: Vec<u32> = first.iter().copied().take(30).collect();
                second.extend(self.items(spec.capacity.min(200)).into_iter().take(30));
                CStep::Recreate {
                    f,
                    spec,
                    first,
                    second,
                }
            }
            80..=82 => {
                let (f, s) = self.existing()?;
                CStep::KillResume {
                    f,
                    items: self.items(s.capacity.max(400)),
                }
            }
            83..=85 => {
                let (f, s) = self.existing()?;
                CStep::Migrate {
                    f,
                    shard: self.rng.below(8) as u8,
                    items: self.items(s.capacity.max(400)),
                }
            }
            _ if faults => CStep::Fault(self.fault()?),
            _ => return None,
        })
    }

    fn fault(&mut self) -> Option<CFault> {
        let node = self.rng.below(3) as u8;
        Some(match self.rng.below(7) {
            0 | 1 => CFault::Maxmemory { node },
            2 => CFault::Pause {
                node,
                ms: 20 + self.rng.below(200) as u32,
            },
            3 => CFault::KillConnections { node },
            4 => {
                // The generator cannot know which filters had keys there.
                for s in self.filters.iter_mut() {
                    *s = None;
                }
                CFault::Restart { node }
            }
            // The damaged filter is checked, then dropped by the runner.
            5 => {
                let f = self.existing()?.0;
                self.filters[f as usize] = None;
                CFault::DeleteShardMeta {
                    f,
                    shard: self.rng.below(8) as u8,
                }
            }
            _ => {
                let f = self.existing()?.0;
                self.filters[f as usize] = None;
                CFault::DeleteShardBlocks {
                    f,
                    shard: self.rng.below(8) as u8,
                }
            }
        })
    }
}
