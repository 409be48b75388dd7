//! The reference model: per filter, what docs/FORMAT.md says each item's
//! answer may be. It holds, per generation, the items counted in it (their
//! insertion set a bit there), the items that read present in it (counted,
//! or written and found already set: a false positive made permanent), and
//! the items whose write had an unknown outcome (a reply lost, a process
//! killed). Answers the model cannot predict (false positives) are taken
//! from the real filter and then constrain every later answer.

use crate::steps::{Shape, Spec};
use std::collections::BTreeSet;

#[derive(Clone, Debug, Default)]
pub struct MGen {
    pub capacity: u64,
    /// Items whose insertion set a bit here: `count` is their number.
    pub counted: BTreeSet<u32>,
    /// Items that read present here.
    pub present: BTreeSet<u32>,
    /// Items written here with an outcome nobody heard.
    pub maybe: BTreeSet<u32>,
    /// Items present here whose write may or may not have set a bit here
    /// (a write-only generation, whose own answers nobody hears): the
    /// count may include them.
    pub slack: BTreeSet<u32>,
    /// Items counted here that the model could not tell apart from those
    /// of another generation (writers past capacity met a conversion in
    /// an order nobody knows): a number, taken from the filter.
    pub unattributed: i64,
    /// What runs whose reply was lost may have added to the count beyond
    /// the items they found new: a transaction counts every item it
    /// writes, and takes back the excess only once it hears its reply
    /// (docs/FORMAT.md §8.5.3), so a lost reply leaves the count that much
    /// high, never low.
    pub excess: u64,
}

impl MGen {
    pub fn new(capacity: u64) -> MGen {
        MGen {
            capacity,
            ..MGen::default()
        }
    }

    /// The count the filter may report: the items counted, plus any of
    /// those of unknown outcome.
    pub fn count_range(&self) -> (u64, u64) {
        let lo = (self.counted.len() as i64 + self.unattributed).max(0) as u64;
        let unsure: BTreeSet<u32> = self.maybe.union(&self.slack).copied().collect();
        let extra = unsure.difference(&self.counted).count() as u64;
        (lo, lo + extra + self.excess)
    }
}

/// What is known of one filter.
#[derive(Clone, Debug)]
pub struct MFilter {
    pub spec: Spec,
    pub gens: Vec<MGen>,
    /// Circular: the period of the last scheduled rotation (the server's
    /// hour at creation until the first).
    pub period: i64,
    /// A block was damaged: data operations may fail loudly from now on
    /// (never answer wrongly).
    pub damaged: bool,
    /// Written past capacity (`when_full = warn`): the false-positive
    /// bound no longer applies.
    pub over: bool,
    /// Adopted: generation 0 is a legacy bitmap, outside the counts.
    pub legacy: bool,
    /// Writes answered "changed" since the last clear, and writes of
    /// unknown outcome: an expanding filter's counts add up to the first,
    /// plus at most the second, however concurrent writers interleaved
    /// with its growth.
    pub total: u64,
    pub total_maybe: u64,
}

impl MFilter {
    pub fn new(spec: Spec, capacities: Vec<u64>, period: i64) -> MFilter {
        MFilter {
            spec,
            gens: capacities.into_iter().map(MGen::new).collect(),
            period,
            damaged: false,
            over: false,
            legacy: false,
            total: 0,
            total_maybe: 0,
        }
    }

    /// The generations a query reads, by index.
    pub fn queried(&self) -> Vec<usize> {
        match self.spec.shape {
            Shape::Circular { newest: false, .. } => vec![0],
            _ => (0..self.gens.len()).collect(),
        }
    }

    /// The generation whose old bits decide a write.
    pub fn decider(&self) -> usize {
        match self.spec.shape {
            Shape::Circular { newest: false, .. } => 0,
            _ => self.gens.len().saturating_sub(1),
        }
    }

    /// The generations a write sets bits in.
    pub fn written(&self) -> Vec<usize> {
        match self.spec.shape {
            Shape::Circular { newest: false, .. } => (0..self.gens.len()).collect(),
            _ => vec![self.decider()],
        }
    }

    pub fn present(&self, item: u32) -> bool {
        self.queried()
            .iter()
            .any(|&g| self.gens[g].present.contains(&item))
    }

    pub fn maybe(&self, item: u32) -> bool {
        self.gens.iter().any(|g| g.maybe.contains(&item))
    }

    /// Whether the deciding generation stops at its capacity for a write
    /// of a handle with this `when_full`.
    pub fn capped(&self, warn: bool) -> bool {
        // A RedisBloom generation refuses items past its capacity itself.
        self.spec.shape == Shape::Expanding || !warn || self.spec.store.is_module()
    }

    /// The capacity of expanding generation `i` (legacy excluded): n0
    /// times growth 2 to the power i.
    fn expanding_capacity(&self, i: usize) -> u64 {
        let n0 = self.spec.capacity as f64;
        (n0 * 2f64.powi(i as i32)).ceil() as u64
    }

    /// Appends the next generation of an expanding filter.
    pub fn grow(&mut self) {
        let i = self.gens.len() - usize::from(self.legacy);
        let cap = self.expanding_capacity(i);
        self.gens.push(MGen::new(cap));
    }

    /// One rotation of a circular filter.
    pub fn rotate(&mut self) {
        let cap = self.gens.last().map_or(0, |g| g.capacity);
        if !self.gens.is_empty() {
            self.gens.remove(0);
        }
        self.gens.push(MGen::new(cap));
    }

    pub fn clear(&mut self) {
        for g in &mut self.gens {
            *g = MGen::new(g.capacity);
        }
        self.over = false;
        self.total = 0;
        self.total_maybe = 0;
    }

    /// Records a write of `item` answered "changed" (new for a
    /// check-and-insert): counted in the deciding generation, present in
    /// every generation written. The answers were checked before (against
    /// the filter as it was before the step): the writes of one step ran
    /// at once, in an order nobody knows.
    pub fn changed(&mut self, item: u32) {
        // An expanding filter's full generation gives way to the next
        // before the item that needs room: every frozen generation holds
        // exactly its capacity.
        let d = self.decider();
        if self.spec.shape == Shape::Expanding
            && self.gens[d].counted.len() as i64 + self.gens[d].unattributed
                >= self.gens[d].capacity as i64
        {
            self.grow();
        }
        let d = self.decider();
        self.total += 1;
        self.gens[d].counted.insert(item);
        for g in self.written() {
            let gen = &mut self.gens[g];
            if g != d && !gen.present.contains(&item) {
                gen.slack.insert(item);
            }
            gen.present.insert(item);
            gen.maybe.remove(&item);
        }
    }

    /// Records a write of `item` answered "unchanged": present already, or
    /// a false positive now permanent. It reads present in the deciding
    /// generation from now on (but see the query-all window below); an
    /// insert (`cai` false) also wrote the others.
    pub fn unchanged(&mut self, item: u32, cai: bool) {
        let d = self.decider();
        // A check-and-insert of a query-all window that finds the item in
        // an older generation writes nothing (docs/FORMAT.md §8.1): it
        // reads present as long as the generation that holds it, which
        // the oldest one bounds when the model cannot tell which (a false
        // positive).
        if cai && matches!(self.spec.shape, Shape::Circular { newest: true, .. }) {
            if !self.present(item) {
                self.gens[0].present.insert(item);
            }
            return;
        }
        let gens = match cai {
            true => vec![d],
            false => self.written(),
        };
        for g in gens {
            let gen = &mut self.gens[g];
            if g != d && !gen.present.contains(&item) {
                gen.slack.insert(item);
            }
            gen.present.insert(item);
        }
    }

    /// Records `item` of an at-least-once write that was sent again after
    /// a lost reply and whose answer therefore says nothing (or, for an
    /// insert answered "unchanged", nothing of the lost run): the last run
    /// wrote it, so it reads present from now on, but whether a run
    /// counted it (found its bits unset) nobody knows. The bits are the
    /// dedupe: of all the runs, at most one counts it in a generation.
    pub fn resent(&mut self, item: u32) {
        self.total_maybe += 1;
        for g in self.written() {
            let gen = &mut self.gens[g];
            // An earlier write of unknown outcome stays possibly counted.
            if gen.maybe.remove(&item) || !gen.present.contains(&item) {
                gen.slack.insert(item);
            }
            gen.present.insert(item);
        }
    }

    /// Takes each generation's count from the filter, after a step whose
    /// split of items between generations nobody can know.
    pub fn resync_counts(&mut self, real: &[u64]) {
        for (g, &count) in self.gens.iter_mut().zip(real) {
            g.unattributed = count as i64 - g.counted.len() as i64;
        }
    }

    /// Makes the model's expanding generations as many as the filter's,
    /// after a step whose growth the model could not follow (writes of
    /// unknown outcome).
    pub fn sync_growth(&mut self, real: usize, loose: bool) -> Result<(), String> {
        if real < self.gens.len() && loose {
            // Writers past capacity met the conversion in an order nobody
            // knows: the first generation took more than its capacity.
            let extra = self.gens.split_off(real.max(1));
            for g in extra {
                let last = self.gens.len() - 1;
                self.gens[last].counted.extend(g.counted);
                self.gens[last].present.extend(g.present);
                self.gens[last].maybe.extend(g.maybe);
            }
        }
        if real < self.gens.len() {
            return Err(format!(
                "the filter has {real} generations, the model {} (counting {:?} of {:?})",
                self.gens.len(),
                self.gens
                    .iter()
                    .map(|g| g.counted.len())
                    .collect::<Vec<_>>(),
                self.gens.iter().map(|g| g.capacity).collect::<Vec<_>>(),
            ));
        }
        while self.gens.len() < real {
            self.grow();
        }
        Ok(())
    }

    /// Records `items` written by runs that may have lost their reply: each
    /// generation they write may count them all (an upper bound whose
    /// excess nobody took back).
    pub fn lost_runs(&mut self, items: u64) {
        for g in self.written() {
            self.gens[g].excess += items;
        }
    }

    /// Records a write of `item` whose outcome is unknown.
    pub fn unknown(&mut self, item: u32) {
        self.total_maybe += 1;
        for g in self.written() {
            self.gens[g].maybe.insert(item);
        }
    }

    /// Whether the filter's false-positive rate must be within its target.
    pub fn bounded(&self) -> bool {
        !self.over && !self.damaged && !self.legacy
    }
}

/// Everything the model knows.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub filters: Vec<Option<MFilter>>,
}

impl Model {
    pub fn new(n: usize) -> Model {
        Model {
            filters: vec![None; n],
        }
    }
}
