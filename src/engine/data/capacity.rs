//! What the operation knows of its deciding generation: whether its writes
//! stop at capacity, what it holds, and which items are decided.

use super::DataMachine;
use crate::proto::script::{DataOp, Limit};
use crate::view::Role;

impl DataMachine {
    /// Whether this operation's writes stop at the deciding generation's
    /// capacity: an expanding filter's always (it grows there); a
    /// RedisBloom generation's always (a non-scaling module filter refuses
    /// items past its capacity: writing on is not possible there); any
    /// other filter's unless the handle writes on past it
    /// (`when_full = warn`).
    pub(super) fn limit(&self) -> Limit {
        let module = self
            .view
            .with_role(Role::Decide)
            .filter_map(|g| self.view.gens.get(g))
            .any(|g| g.layout.store().caps_itself());
        match (
            self.op,
            self.view.growth.is_capped() || module,
            self.core.when_full,
        ) {
            (DataOp::Has, _, _) => Limit::Open,
            (_, true, _) => Limit::Capacity,
            (_, false, crate::full::WhenFull::Warn) => Limit::Open,
            (_, false, _) => Limit::Capacity,
        }
    }

    /// The deciding generation of a write: its seq and capacity.
    pub(super) fn decider(&self) -> Option<(u64, u64)> {
        if self.op == DataOp::Has {
            return None;
        }
        let g = self.view.with_role(Role::Decide).next()?;
        self.view.gens.get(g).map(|g| (g.seq, g.capacity))
    }

    /// A count a write reported for the current view's deciding generation.
    pub(super) fn counted(&mut self, count: u64) {
        if let Some((seq, _)) = self.decider() {
            let before = self.count.filter(|(s, _)| *s == seq).map(|(_, c)| c);
            self.count = Some((seq, before.map_or(count, |c| c.max(count))));
        }
    }

    pub(super) fn decided(&mut self, done: &mut [usize]) {
        if done.is_empty() {
            return;
        }
        self.pace.progress = true;
        done.sort_unstable();
        self.pending.retain(|i| done.binary_search(i).is_err());
    }
}
