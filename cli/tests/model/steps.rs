//! What a sequence is made of, and the seeded generator that makes them.
//! Every step is plain data with a `Debug` form that is valid Rust, so a
//! shrunk failure prints as a sequence ready to paste into a regression
//! test (`replay(&[...])`).

use crate::rng::Rng;

/// A filter's kind and shape, as a step creates it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    Bloom,
    Expanding,
    /// N generations, insert-newest-query-all (`true`) or
    /// insert-all-query-oldest (`false`).
    Circular {
        n: u32,
        newest: bool,
    },
}

/// Where generations live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    Bitmap,
    /// RedisBloom keys.
    Module,
    /// valkey-bloom keys: the same commands, so the RedisBloom module
    /// serves them here; never mirrored, never dumped.
    ValkeyBloom,
}

impl Store {
    /// Whether a module keeps the generations (and refuses items past
    /// capacity itself, and cannot be dumped).
    pub fn is_module(self) -> bool {
        self != Store::Bitmap
    }

    /// Its place in the counts of filters per backend.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The backend's word on the command line.
    pub fn word(self) -> &'static str {
        match self {
            Store::Bitmap => "bitmap",
            Store::Module => "redisbloom",
            Store::ValkeyBloom => "valkey-bloom",
        }
    }

    /// A module store as one of the two module backends, chosen by
    /// `pick` (a value the sequence drew already, so that adding the
    /// second backend drew nothing more and every seed's steps stayed
    /// as they were): the index of the capacity drawn, so that each
    /// backend gets small and large capacities alike (the capacity
    /// itself, almost always even, gave valkey-bloom the tiniest only).
    pub fn module_by(self, pick: u64) -> Store {
        match (self, pick % 2) {
            (Store::Module, 1) => Store::ValkeyBloom,
            (s, _) => s,
        }
    }
}

/// A filter to create.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spec {
    pub shape: Shape,
    pub store: Store,
    pub capacity: u64,
    pub error_rate: f64,
}

/// The three data operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Insert,
    Contains,
    CheckAndInsert,
}

/// How a library client carries its writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// The data script only (`with_transactions(false)`).
    Script,
    /// The default: guarded transactions for batches of 16 or more.
    Transaction,
    /// An idempotent batch (the script, with a record), retried on a new
    /// connection after a retryable error.
    Idempotent,
    /// An idempotent batch delivered at least once (no record: guarded
    /// transactions), retried the same way; for the command line,
    /// `filter --delivery at-least-once`.
    AtLeastOnce,
}

/// Who runs an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    Sync,
    Async,
    /// The `rotabloom` binary: `filter` (check-and-insert) or `check`.
    Cli,
}

/// What a handle does once its generation is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    Refuse,
    WarnOn,
    Grow,
}

/// One client's operation within a step.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Which of the sequence's clients (its own connection and handles).
    pub client: u8,
    pub runner: Runner,
    pub op: Op,
    pub protocol: Protocol,
    /// Opened by name (`AnyFilter`) rather than typed.
    pub by_name: bool,
    /// Frozen generations mirrored in memory.
    pub mirror: bool,
    pub full: Full,
    /// Connects as a user the server does not allow `WATCH`: a guarded
    /// transaction must then be refused, loudly.
    pub no_watch: bool,
    /// Item ids, repeats included.
    pub items: Vec<u32>,
}

/// What happens to a filter in the middle of a `rotabloom filter` run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Midway {
    Clear,
    /// Rotations enough to empty a circular window (else a clear).
    EmptyWindow,
    /// Dropped and created again with the same spec.
    Recreate,
}

/// Faults, between steps or during one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Every `every`-th reply through the relay is lost after the server
    /// ran the request, up to `budget` of them, during the next step.
    LoseReplies { every: u32, budget: u32 },
    /// `SCRIPT FLUSH`.
    ScriptFlush,
    /// `CLIENT PAUSE ms WRITE`, then the next step.
    Pause { ms: u32 },
    /// A block key of filter `f`'s newest generation deleted.
    DeleteBlock { f: u8 },
    /// The same block cut to half its length.
    TruncateBlock { f: u8 },
    /// The same key replaced by a hash.
    WrongTypeBlock { f: u8 },
    /// The server restarted without persistence: every filter is gone.
    Restart,
    /// A `rotabloom filter` process killed with SIGKILL after it printed
    /// its first answers.
    KillCli { f: u8 },
    /// Every client connection killed (`CLIENT KILL TYPE normal`).
    KillConnections,
    /// Filter `f`'s fence deleted (scripts and guards make it again).
    DeleteFence { f: u8 },
    /// A count of filter `f`'s deciding generation overwritten with text.
    CorruptCount { f: u8 },
}

/// One step of a sequence.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Create {
        f: u8,
        spec: Spec,
    },
    /// Operations of several clients at once on filter `f`.
    Data {
        f: u8,
        calls: Vec<Call>,
    },
    /// `clients` manual rotations at once.
    Rotate {
        f: u8,
        clients: u8,
    },
    /// `clients` scheduled rotations at once, all at `hour` (the
    /// schedule is hourly from 1970, so `hour` is the period).
    RotateIfDue {
        f: u8,
        clients: u8,
        hour: i64,
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
    /// Dumped, and restored as filter `to` (which must not exist).
    DumpRestore {
        f: u8,
        to: u8,
    },
    /// A legacy `scrapy-redis-bloomfilter` bitmap of `items` written by
    /// the test, adopted as filter `f`.
    Adopt {
        f: u8,
        items: Vec<u32>,
    },
    Drop {
        f: u8,
    },
    Fault(Fault),
    /// Fresh items queried: the false-positive rate within its bound.
    Probe {
        f: u8,
    },
    /// One `rotabloom filter` run fed `first`, then, once those are in the
    /// filter, `midway` happens, then it is fed `second`.
    Stream {
        f: u8,
        first: Vec<u32>,
        midway: Midway,
        second: Vec<u32>,
    },
}

/// How many filters a sequence works on.
pub const FILTERS: u8 = 3;

/// A generator of sequences from one seed.
pub struct Generator {
    rng: Rng,
    /// Draws whether a write goes at least once: a stream of its own, so
    /// that every other draw (and the sequences the fixed seeds have
    /// always made) stays as it was.
    delivery: Rng,
    /// The step being made follows a fault that loses replies: where at
    /// least once has something to show, so it comes more often.
    lossy: bool,
    /// Per filter: whether the generator believes it exists, and its spec.
    filters: Vec<Option<Spec>>,
    hour: i64,
    next_item: u32,
    module: bool,
}

impl Generator {
    pub fn new(seed: u64, module: bool) -> Generator {
        Generator {
            rng: Rng::new(seed),
            delivery: Rng::new(seed ^ 0xa1_0a1_0a1),
            lossy: false,
            filters: vec![None; FILTERS as usize],
            hour: 500_000,
            next_item: 0,
            module,
        }
    }

    fn spec(&mut self) -> Spec {
        let shape = match self.rng.below(4) {
            0 => Shape::Bloom,
            1 => Shape::Expanding,
            _ => Shape::Circular {
                n: *self.rng.pick(&[2, 3, 4, 12]),
                newest: self.rng.chance(0.6),
            },
        };
        let store = match self.module && self.rng.chance(0.3) {
            true => Store::Module,
            false => Store::Bitmap,
        };
        // Capacities from 1 to millions; small ones are where the seams
        // are, so they come more often.
        const CAPACITIES: [u64; 9] = [1, 3, 10, 40, 200, 1_000, 5_000, 60_000, 2_000_000];
        let at = self.rng.below(CAPACITIES.len() as u64);
        let capacity = CAPACITIES[at as usize];
        let error_rate = *self.rng.pick(&[0.1, 0.01, 0.001]);
        Spec {
            shape,
            store: store.module_by(at),
            capacity,
            error_rate,
        }
    }

    /// Item ids for a batch into a filter of `capacity`: mostly fresh,
    /// with repeats inside the batch and of earlier items.
    fn items(&mut self, capacity: u64) -> Vec<u32> {
        let n = match self.rng.below(10) {
            0..=2 => 1,
            3..=5 => 2 + self.rng.below(20) as usize,
            6..=8 => 20 + self.rng.below(300) as usize,
            _ => 300 + self.rng.below(1_700) as usize,
        };
        let n = n.min((capacity as usize).saturating_mul(3).max(8));
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let id = match self.rng.below(10) {
                // A repeat within the batch.
                0 if !out.is_empty() => *self.rng.pick(&out),
                // An earlier item.
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

    fn call(&mut self, client: u8, capacity: u64) -> Call {
        let runner = match self.rng.below(10) {
            0..=5 => Runner::Sync,
            6..=8 => Runner::Async,
            _ => Runner::Cli,
        };
        let op = match self.rng.below(3) {
            0 => Op::Insert,
            1 => Op::Contains,
            _ => Op::CheckAndInsert,
        };
        // The command line has no insert with per-item answers.
        let op = match (runner, op) {
            (Runner::Cli, Op::Insert) => Op::CheckAndInsert,
            (_, op) => op,
        };
        let protocol = match self.rng.below(3) {
            0 => Protocol::Script,
            1 => Protocol::Transaction,
            _ => Protocol::Idempotent,
        };
        // At least once: a third of the library's idempotent writes, and
        // 40% of the command line's `filter` runs (which ignore the rest);
        // where replies are lost, half of those and a third of the plain
        // transactions' (the other half stays exactly once there).
        let least = match (runner, protocol, self.lossy) {
            (Runner::Cli, _, false) => self.delivery.chance(0.4),
            (Runner::Cli, _, true) => self.delivery.chance(0.5),
            (_, Protocol::Idempotent, false) => self.delivery.chance(1.0 / 3.0),
            (_, Protocol::Idempotent, true) => self.delivery.chance(0.5),
            (_, Protocol::Transaction, true) => self.delivery.chance(1.0 / 3.0),
            _ => false,
        };
        let protocol = match least && op != Op::Contains {
            true => Protocol::AtLeastOnce,
            false => protocol,
        };
        let full = match self.rng.below(10) {
            0 => Full::WarnOn,
            1 => Full::Grow,
            _ => Full::Refuse,
        };
        Call {
            client,
            runner,
            op,
            protocol,
            by_name: self.rng.chance(0.5),
            mirror: self.rng.chance(0.4),
            full,
            no_watch: runner != Runner::Cli && self.rng.chance(0.05),
            items: self.items(capacity),
        }
    }

    fn existing(&mut self) -> Option<(u8, Spec)> {
        let live: Vec<(u8, Spec)> = self
            .filters
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|s| (i as u8, s)))
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
    pub fn step(&mut self, faults: bool) -> Step {
        loop {
            let roll = self.rng.below(100);
            if let Some(s) = self.try_step(roll, faults) {
                self.lossy = matches!(
                    s,
                    Step::Fault(Fault::LoseReplies { .. } | Fault::KillConnections)
                );
                return s;
            }
        }
    }

    fn try_step(&mut self, roll: u64, faults: bool) -> Option<Step> {
        match roll {
            0..=9 => {
                let f = self.absent()?;
                let spec = self.spec();
                self.filters[f as usize] = Some(spec);
                Some(Step::Create { f, spec })
            }
            10..=59 => {
                let (f, spec) = self.existing()?;
                let clients = match self.rng.below(4) {
                    0 => 1 + self.rng.below(8) as u8,
                    _ => 1,
                };
                let calls = (0..clients).map(|c| self.call(c, spec.capacity)).collect();
                Some(Step::Data { f, calls })
            }
            60..=64 => {
                let (f, spec) = self.existing()?;
                matches!(spec.shape, Shape::Circular { .. }).then_some(())?;
                let clients = 1 + self.rng.below(4) as u8;
                Some(Step::Rotate { f, clients })
            }
            65..=71 => {
                let (f, spec) = self.existing()?;
                matches!(spec.shape, Shape::Circular { .. }).then_some(())?;
                // Forward by one, a big skip, or backwards.
                self.hour += match self.rng.below(6) {
                    0 => -(1 + self.rng.below(3) as i64),
                    1 => 5 + self.rng.below(100) as i64,
                    2 => 0,
                    _ => 1,
                };
                let clients = 1 + self.rng.below(8) as u8;
                Some(Step::RotateIfDue {
                    f,
                    clients,
                    hour: self.hour,
                })
            }
            72..=73 => {
                let (f, spec) = self.existing()?;
                (spec.shape == Shape::Expanding).then_some(())?;
                Some(Step::Expand { f })
            }
            74..=75 => {
                let (f, spec) = self.existing()?;
                (spec.shape == Shape::Bloom).then_some(())?;
                self.filters[f as usize] = Some(Spec {
                    shape: Shape::Expanding,
                    ..spec
                });
                Some(Step::Convert { f })
            }
            76..=78 => {
                let (f, _) = self.existing()?;
                Some(Step::Clear { f })
            }
            79..=81 => {
                let (f, spec) = self.existing()?;
                let to = self.absent()?;
                if spec.store == Store::Bitmap {
                    self.filters[to as usize] = Some(spec);
                }
                Some(Step::DumpRestore { f, to })
            }
            82..=83 => {
                let f = self.absent()?;
                self.filters[f as usize] = Some(Spec {
                    shape: Shape::Expanding,
                    store: Store::Bitmap,
                    capacity: 1_000,
                    error_rate: 0.01,
                });
                let n = 1 + self.rng.below(200) as usize;
                let items = (0..n)
                    .map(|_| {
                        self.next_item += 1;
                        self.next_item - 1
                    })
                    .collect();
                Some(Step::Adopt { f, items })
            }
            84..=87 => {
                let (f, _) = self.existing()?;
                self.filters[f as usize] = None;
                Some(Step::Drop { f })
            }
            88..=89 => {
                let (f, _) = self.existing()?;
                Some(Step::Probe { f })
            }
            90..=92 => {
                let (f, spec) = self.existing()?;
                let first = self.items(spec.capacity);
                // Repeats of the first half, and fresh lines.
                let mut second: Vec<u32> = first.iter().copied().take(50).collect();
                second.extend(self.items(spec.capacity).into_iter().take(50));
                let midway = match self.rng.below(3) {
                    0 => Midway::Clear,
                    1 => Midway::EmptyWindow,
                    _ => Midway::Recreate,
                };
                Some(Step::Stream {
                    f,
                    first,
                    midway,
                    second,
                })
            }
            _ if faults => Some(Step::Fault(self.fault()?)),
            _ => None,
        }
    }

    fn fault(&mut self) -> Option<Fault> {
        Some(match self.rng.below(11) {
            8 => Fault::KillConnections,
            9 => Fault::DeleteFence {
                f: self.existing()?.0,
            },
            10 => Fault::CorruptCount {
                f: self.existing()?.0,
            },
            0 | 1 => Fault::LoseReplies {
                every: 1 + self.rng.below(6) as u32,
                budget: 1 + self.rng.below(4) as u32,
            },
            2 => Fault::ScriptFlush,
            3 => Fault::Pause {
                ms: 20 + self.rng.below(200) as u32,
            },
            4 => {
                let (f, _) = self.existing()?;
                match self.rng.below(3) {
                    0 => Fault::DeleteBlock { f },
                    1 => Fault::TruncateBlock { f },
                    _ => Fault::WrongTypeBlock { f },
                }
            }
            5 => {
                for s in self.filters.iter_mut() {
                    *s = None;
                }
                Fault::Restart
            }
            _ => {
                let (f, _) = self.existing()?;
                Fault::KillCli { f }
            }
        })
    }
}
