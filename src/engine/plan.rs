//! Planning the rounds of a data operation, pure: which items go next,
//! which protocol carries them, which generations the server must serve
//! and which the mirror answers, and what to allocate ahead of need.

use crate::cache::FrozenCache;
use crate::proto::script::{Batch, DataOp};
use crate::view::{NewGen, Role, View};

/// Items per round trip, so a huge input does not build a huge request.
pub(crate) const MAX_ITEMS_PER_ROUND: usize = 100_000;

/// Arguments (bit positions, mostly) per round trip, so that what the
/// client holds at once stays small however many generations a filter has:
/// a query-all circular filter of 64 generations puts 704 arguments per
/// item, and `rotabloom filter` on it peaked at 50 MB with rounds of 10,000
/// items; with this bound, 15 MB (a base filter: 8 MB).
const MAX_ARGS_PER_ROUND: usize = 200_000;

/// The items of one round of `view`: as many as `MAX_ARGS_PER_ROUND` allows.
pub(crate) fn max_round_items(view: &View) -> usize {
    let per_item: usize = view.gens.iter().map(|g| g.layout.args_per_item()).sum();
    (MAX_ARGS_PER_ROUND / per_item.max(1)).clamp(1, MAX_ITEMS_PER_ROUND)
}

/// Items per guarded transaction. A transaction runs whole, and on a
/// filter far bigger than the CPU caches each item costs about 6.5 us of
/// server time (its bits are cache misses: 59 to 75 ms for 10,000 items on
/// a 686 MiB filter), so 1,000 items keep other clients waiting at most
/// about 7 ms. On loopback a round trip is some 30 us, so cutting a big
/// batch into such rounds costs little next to the server's work.
pub(crate) const MAX_ITEMS_PER_TX: usize = 1_000;

/// Batches smaller than this take the script: one call is one round trip,
/// where the transaction needs two (its counts follow it).
const TX_MIN_ITEMS: usize = 16;

/// Fill ratio of the newest generation at which the next one is allocated.
const PREALLOC_AT: f64 = 0.5;

/// How a round is carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Path {
    /// The data script.
    Script,
    /// The guarded transaction over the generations `serve` (indexes into
    /// the view's list), after reading the query-only ones in `read` first
    /// (a check-and-insert over frozen generations the mirror lacks).
    Tx { read: Vec<usize>, serve: Vec<usize> },
}

/// The protocol for a round of `len` items. The transaction is taken when
/// it can express the operation: every read; writes of filters whose
/// deciding generation has no hard capacity limit, or refuses items past
/// it itself (a module's generation: docs/FORMAT.md §8.3), and, for
/// check-and-insert, that write nothing after the decision. A deciding
/// generation that stops partway cannot stop the writes of the others in
/// the same transaction: with write-only generations, it takes the script.
pub(crate) fn path(view: &View, op: DataOp, tx_ok: bool, len: usize, mirrored: &[usize]) -> Path {
    if !tx_ok || len < TX_MIN_ITEMS {
        return Path::Script;
    }
    let writes_after = view.roles.contains(&Role::Write);
    let caps_itself = view
        .with_role(Role::Decide)
        .any(|g| view.store(g).caps_itself());
    let limit_kept = !view.growth.is_capped() || caps_itself;
    let fits = match op {
        DataOp::Has => true,
        DataOp::Add => limit_kept && !(caps_itself && writes_after),
        DataOp::CheckAdd => limit_kept && !writes_after,
    };
    if !fits {
        return Path::Script;
    }
    let server: Vec<(usize, Role)> = view
        .roles
        .iter()
        .copied()
        .enumerate()
        .filter(|(g, _)| !mirrored.contains(g))
        .collect();
    let read = match op {
        DataOp::CheckAdd => server
            .iter()
            .filter(|(_, r)| *r == Role::Query)
            .map(|(g, _)| *g)
            .collect(),
        _ => Vec::new(),
    };
    Path::Tx {
        read,
        serve: server.into_iter().map(|(g, _)| g).collect(),
    }
}

/// The query-only generations the mirror holds, by index.
pub(crate) fn mirrored(view: &View, cache: Option<&FrozenCache>) -> Vec<usize> {
    let Some(cache) = cache else {
        return Vec::new();
    };
    view.with_role(Role::Query)
        .filter(|&g| {
            view.gens
                .get(g)
                .is_some_and(|gen| cache.get(view, gen.seq).is_some())
        })
        .collect()
}

/// Per round item: whether a mirrored generation holds it. Provisional
/// until the round's guard confirms the view.
pub(crate) fn local_present(
    view: &View,
    cache: Option<&FrozenCache>,
    mirrored: &[usize],
    round: &[usize],
    batch: Batch<'_>,
) -> Vec<bool> {
    let Some(cache) = cache else {
        return vec![false; round.len()];
    };
    let frozen: Vec<_> = mirrored
        .iter()
        .filter_map(|&g| view.gens.get(g))
        .filter_map(|gen| cache.get(view, gen.seq))
        .collect();
    let items: Vec<_> = round
        .iter()
        .map(|&i| (batch.hashes.get(i), batch.item(i)))
        .collect();
    crate::cache::holds_any(&frozen, &items)
}

/// How big rounds are, and whether the operation is getting anywhere.
#[derive(Debug)]
pub(crate) struct Pace {
    pub limit: usize,
    pub stalls: u32,
    pub progress: bool,
}

impl Pace {
    pub fn new() -> Pace {
        Pace {
            limit: MAX_ITEMS_PER_ROUND,
            stalls: 0,
            progress: false,
        }
    }

    /// The next round: the first undecided items, at most `limit`.
    pub fn round(&self, pending: &[usize]) -> Vec<usize> {
        pending.iter().copied().take(self.limit).collect()
    }

    /// After a round: whether it made progress resets the count of rounds
    /// without; a round without is retried smaller, since a round short
    /// enough to finish between two changes of a busy filter always makes
    /// progress. Returns the stalls so far.
    pub fn settle(&mut self) -> u32 {
        if self.progress {
            self.stalls = 0;
        } else {
            self.limit = (self.limit / 2).max(TX_MIN_ITEMS);
            self.stalls += 1;
        }
        self.progress = false;
        self.stalls
    }
}

/// The generation to allocate ahead of need, once the newest one has passed
/// `PREALLOC_AT` of its capacity.
pub(crate) fn prealloc_due(view: &View, fill: Option<u64>) -> Option<NewGen> {
    let fill = fill?;
    if (fill as f64) < view.newest().capacity as f64 * PREALLOC_AT {
        return None;
    }
    view.pending()
}
