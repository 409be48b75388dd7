//! The reference model of a sharded filter: one unsharded model
//! ([`MFilter`]) per shard, each sized by docs/FORMAT.md §11.2
//! (`rotabloom::shard_capacity`) and fed the items §11.3 routes to it
//! (`ItemHash::shard`). An unsharded filter is one shard that routes
//! everything to itself.

use crate::cluster::steps::{CSpec, Kind};
use crate::model::MFilter;
use crate::steps::{Shape, Spec};
use rotabloom::ItemHash;

/// The bytes of item `id` (as the unsharded model spells them).
pub fn item(id: u32) -> String {
    crate::world::item(id)
}

#[derive(Clone, Debug)]
pub struct MSharded {
    pub spec: CSpec,
    pub shards: Vec<MFilter>,
}

/// The unsharded model's shape of `kind`.
pub fn shape(kind: Kind) -> Shape {
    match kind {
        Kind::Bloom => Shape::Bloom,
        Kind::Expanding => Shape::Expanding,
        Kind::Circular { n } => Shape::Circular { n, newest: true },
    }
}

impl MSharded {
    /// A new, empty filter of `spec` whose shards' generations have the
    /// capacities `caps` (read from the filter: their formula is checked
    /// apart, by [`MSharded::shard_capacity`]); `period` as in [`MFilter`].
    pub fn new(spec: CSpec, caps: &[Vec<u64>], period: i64) -> MSharded {
        let shards = caps
            .iter()
            .map(|c| {
                let s = Spec {
                    shape: shape(spec.kind),
                    store: spec.store,
                    capacity: Self::shard_capacity(&spec),
                    error_rate: spec.error_rate,
                };
                MFilter::new(s, c.clone(), period)
            })
            .collect();
        MSharded { spec, shards }
    }

    /// What each shard is sized for (§11.2).
    pub fn shard_capacity(spec: &CSpec) -> u64 {
        rotabloom::shard_capacity(spec.capacity, spec.shards.max(1))
    }

    /// How many shards the filter has (1 when unsharded).
    pub fn count(&self) -> usize {
        self.shards.len()
    }

    /// The shard that holds item `id` (§11.3).
    pub fn route(&self, id: u32) -> usize {
        ItemHash::of(item(id)).shard(self.spec.shards.max(1)) as usize
    }

    pub fn present(&self, id: u32) -> bool {
        self.shards[self.route(id)].present(id)
    }

    /// Whether the generation a write decides on holds item `id` (a
    /// circular filter writes again, and `add` counts new, an item only
    /// older generations hold).
    pub fn in_newest(&self, id: u32) -> bool {
        let s = &self.shards[self.route(id)];
        s.gens[s.decider()].present.contains(&id)
    }

    pub fn changed(&mut self, id: u32) {
        let j = self.route(id);
        self.shards[j].changed(id);
    }

    /// Written with an answer nobody heard: present or not, counted or not.
    pub fn unknown(&mut self, id: u32) {
        let j = self.route(id);
        self.shards[j].unknown(id);
    }

    /// Written by as many as `runs` runs that may have lost their reply
    /// after counting it (docs/FORMAT.md §8.5.3).
    pub fn lost_runs(&mut self, id: u32, runs: u64) {
        let j = self.route(id);
        self.shards[j].lost_runs(runs);
    }

    /// Written, present from now on, counted or not (an `add` does not say
    /// which of its items were new).
    pub fn written(&mut self, id: u32) {
        let j = self.route(id);
        self.shards[j].resent(id);
    }

    /// Whether some shard could be full for the new items of `ids`: its
    /// least count plus the items routed to it reaches its capacity.
    pub fn may_fill(&self, ids: &[u32]) -> bool {
        let mut incoming = vec![0u64; self.count()];
        let mut seen = std::collections::BTreeSet::new();
        for &id in ids {
            if seen.insert(id) && !self.present(id) {
                incoming[self.route(id)] += 1;
            }
        }
        self.shards.iter().zip(incoming).any(|(s, n)| {
            let d = s.decider();
            let g = &s.gens[d];
            s.spec.shape != Shape::Expanding && g.count_range().0 + n >= g.capacity
        })
    }
}
