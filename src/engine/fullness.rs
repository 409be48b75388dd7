//! How full a filter's written generations are, as warnings: a generation
//! that refuses writes is an error, whatever its kind.

use crate::info::{GenerationInfo, Level, Warning, WarningCode};
use crate::view::Growth;

/// The capacity warnings of `generations` under `growth`.
///
/// A deciding generation (queried and written) of a filter that does not
/// grow (bloom, circular) refuses every new item from its capacity on under
/// `when_full = error`, the default: that is an error, not a warning, so a
/// health check turns red when the writers start failing. An expanding
/// filter adds a generation there instead, until its limit (`at_limit`).
pub(super) fn capacity_warnings(
    growth: &Growth,
    generations: &[GenerationInfo],
    warnings: &mut Vec<Warning>,
) {
    for gi in generations {
        if let Some(w) = capacity_warning(growth, gi) {
            warnings.push(w);
        }
    }
    if let Some(w) = limit_warning(growth, generations.last()) {
        warnings.push(w);
    }
}

fn capacity_warning(growth: &Growth, gi: &GenerationInfo) -> Option<Warning> {
    if gi.capacity == 0 || !gi.written {
        return None;
    }
    let pct = gi.count as f64 * 100.0 / gi.capacity as f64;
    let refuses = gi.queried && !growth.is_capped() && gi.count >= gi.capacity;
    let (level, consequence) = if gi.count > gi.capacity && !refuses {
        (
            Level::Error,
            ": its false-positive rate is above what it was sized for",
        )
    } else if refuses {
        (
            Level::Error,
            ": it is full, writes of new items fail (when_full = error, the default); rotate it, convert it to an expanding filter or make a bigger one",
        )
    } else if pct >= 90.0 && !growth.is_capped() {
        // A filter that grows adds a generation when this one fills:
        // nothing to warn of until it cannot (limit_warning).
        (Level::Warn, "")
    } else {
        return None;
    };
    Some(Warning::new(
        WarningCode::OverCapacity,
        level,
        format!(
            "generation {} holds {} items, {pct:.0}% of its capacity {}{consequence}",
            gi.seq, gi.count, gi.capacity
        ),
    ))
}

fn limit_warning(growth: &Growth, newest: Option<&GenerationInfo>) -> Option<Warning> {
    let (Growth::Capped(Err(reason)), Some(newest)) = (growth, newest) else {
        return None;
    };
    let full = newest.count >= newest.capacity;
    if !full && (newest.count as f64) < newest.capacity as f64 * 0.9 {
        return None;
    }
    Some(Warning::new(
        WarningCode::AtLimit,
        if full { Level::Error } else { Level::Warn },
        format!(
            "{} its limit: {reason}; no generation may be added, so {}",
            if full { "at" } else { "near" },
            if full {
                "writes of new items fail"
            } else {
                "writes of new items fail once the newest generation is full"
            }
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen(count: u64, capacity: u64, queried: bool, written: bool) -> GenerationInfo {
        GenerationInfo {
            seq: 3,
            bits: 1 << 16,
            hashes: 7,
            blocks: 1,
            capacity,
            count,
            created_at_ms: 0,
            set_bits: 0,
            fill_ratio: 0.0,
            false_positive_rate: 0.0,
            memory_bytes: 0,
            queried,
            written,
        }
    }

    fn levels(growth: &Growth, gens: &[GenerationInfo]) -> Vec<(WarningCode, Level)> {
        let mut w = Vec::new();
        capacity_warnings(growth, gens, &mut w);
        w.into_iter().map(|w| (w.code, w.level)).collect()
    }

    #[test]
    fn a_deciding_generation_at_its_capacity_is_an_error_when_the_filter_does_not_grow() {
        let free = Growth::Unbounded;
        assert_eq!(levels(&free, &[gen(899, 1000, true, true)]), vec![]);
        assert_eq!(
            levels(&free, &[gen(900, 1000, true, true)]),
            vec![(WarningCode::OverCapacity, Level::Warn)]
        );
        for count in [1000, 1001, 5000] {
            let mut w = Vec::new();
            capacity_warnings(&free, &[gen(count, 1000, true, true)], &mut w);
            assert_eq!(w.len(), 1, "{w:?}");
            assert_eq!(w[0].level, Level::Error);
            assert!(w[0].message.contains("writes of new items fail"), "{w:?}");
        }
        // Written with what the deciding one accepted: it refuses nothing
        // itself, so only past its capacity is it wrong.
        assert_eq!(
            levels(&free, &[gen(1000, 1000, false, true)]),
            vec![(WarningCode::OverCapacity, Level::Warn)]
        );
        assert_eq!(
            levels(&free, &[gen(1001, 1000, false, true)]),
            vec![(WarningCode::OverCapacity, Level::Error)]
        );
        // Frozen generations take no writes.
        assert_eq!(levels(&free, &[gen(5000, 1000, true, false)]), vec![]);
    }

    #[test]
    fn an_expanding_filter_is_in_error_only_at_its_limit() {
        let grows = Growth::Capped(Err("max_generations 2".into()));
        assert_eq!(
            levels(&grows, &[gen(1000, 1000, true, true)]),
            vec![(WarningCode::AtLimit, Level::Error)]
        );
        assert_eq!(
            levels(&grows, &[gen(950, 1000, true, true)]),
            vec![(WarningCode::AtLimit, Level::Warn)]
        );
        assert_eq!(levels(&grows, &[gen(800, 1000, true, true)]), vec![]);
    }
}
