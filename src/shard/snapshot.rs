//! A sharded filter's root and shards read together (docs/FORMAT.md
//! §11.8), and what a whole-filter change reads from them: the targets in
//! force, the changes pending, the fields its compare-and-set expects and
//! writes.

use crate::proto::shard::root::Root;
use crate::proto::shard::target::{
    self, expanded, ShardDisagreement, ShardFacts, Targets, CLEARED, EPOCH, PERIOD,
};

/// A sharded filter's root and shards as read now.
pub(crate) struct Snapshot {
    pub root: Root,
    pub facts: Vec<ShardFacts>,
    /// The root's key.
    pub meta: String,
}

impl Snapshot {
    /// The targets in force: the recorded ones, else the shards' furthest.
    pub fn targets(&self) -> Targets {
        self.root.targets.effective(self.root.kind, &self.facts)
    }

    pub fn disagreements(&self) -> Vec<ShardDisagreement> {
        target::disagreements(self.root.kind, &self.root.targets, &self.facts)
    }

    /// Whether a shard is short of the rotation targets in force: an
    /// earlier rotation to finish before a new one is recorded.
    pub fn rotation_pending(&self) -> bool {
        let t = self.targets();
        self.facts.iter().any(|s| {
            t.epoch.is_some_and(|e| s.epoch < e)
                || matches!((s.period, t.period), (Some(have), Some(want)) if have < want)
        })
    }

    /// Whether a shard is short of the clear target in force.
    pub fn clear_pending(&self) -> bool {
        let t = self.targets();
        self.facts
            .iter()
            .any(|s| t.cleared.is_some_and(|c| s.cleared < c))
    }

    /// Whether an expanding shard is short of its expansion target.
    pub fn expansion_pending(&self) -> bool {
        let t = self.targets();
        self.facts
            .iter()
            .enumerate()
            .any(|(j, s)| t.expanded.get(&j).is_some_and(|&e| s.epoch < e))
    }

    /// The compare half of a retarget: every target field as recorded
    /// (each shard's expansion target included, absent or not).
    pub fn recorded(&self) -> Vec<(String, Option<String>)> {
        let t = &self.root.targets;
        let mut out = vec![
            (EPOCH.to_string(), t.epoch.map(|v| v.to_string())),
            (PERIOD.to_string(), t.period.map(|v| v.to_string())),
            (CLEARED.to_string(), t.cleared.map(|v| v.to_string())),
        ];
        for j in 0..self.facts.len() {
            out.push((expanded(j), t.expanded.get(&j).map(u64::to_string)));
        }
        out
    }

    /// The set half: every target in force, as `t` changes it. A root
    /// from before targets gets them all written by its first change.
    pub fn to_record(t: &Targets) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(e) = t.epoch {
            out.push((EPOCH.to_string(), e.to_string()));
        }
        if let Some(p) = t.period {
            out.push((PERIOD.to_string(), p.to_string()));
        }
        if let Some(c) = t.cleared {
            out.push((CLEARED.to_string(), c.to_string()));
        }
        for (j, e) in &t.expanded {
            out.push((expanded(*j), e.to_string()));
        }
        out
    }
}
