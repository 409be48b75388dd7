//! Counts inside the transaction (docs/FORMAT.md §8.5.3): a script queued
//! after the writes (`lua/settle.lua`) adds, to each bitmap generation
//! written, every item written there (an upper bound of the items new to
//! it) and releases the reservation, in the same atomic step as the bits.
//! The excess, items that were there already, is taken back by a commit
//! after the transaction, only when there is one. So a round of new items
//! costs one round trip, where a commit after it cost a second one that
//! the other batches in flight queued in front of; and a writer that dies
//! after `EXEC` leaves counts too high, never too low. Within a tenth of
//! the deciding generation's capacity the script leaves the counting to
//! the commit after the transaction, as before: there an over-count still
//! owed could make another writer find the generation full early.

use super::commit::decode_commit;
use super::guard::Reserve;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::scripts;
use redis::Value;

/// The generation whose capacity limits a transaction's writes: its seq
/// and capacity.
pub(super) type Decider = Option<(u64, u64)>;

/// The settle script to queue after a transaction's writes, adding
/// `bound` (per generation seq, the items written there) and releasing
/// `reserve` while `decider` keeps room to spare; None when there is
/// nothing to add or release.
pub(super) fn settle_cmd(
    keys: &Keys,
    reserve: Option<&Reserve>,
    decider: Decider,
    bound: &[(u64, u64)],
) -> Option<redis::Cmd> {
    if bound.is_empty() && reserve.is_none() {
        return None;
    }
    let mut cmd = scripts::SETTLE.invoke(&[keys.meta().to_string(), keys.reservations()]);
    cmd.arg(reserve.map(Reserve::member).unwrap_or_default());
    match decider {
        Some((seq, capacity)) => cmd.arg(seq).arg(capacity),
        None => cmd.arg("").arg(0),
    };
    for (seq, n) in bound {
        cmd.arg(*seq).arg(*n);
    }
    // In full, as the guard: inside MULTI a missing script would be an
    // error among EXEC's results, with nothing to load it again.
    Some(scripts::SETTLE.as_eval(&cmd))
}

/// A count of items as a commit's delta.
fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// What the script queued inside a transaction that ran did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Settled {
    /// The bounds are in the counts and the reservation is released; each
    /// generation's count afterwards, by seq.
    Ran(Vec<(u64, u64)>),
    /// None was queued, or the deciding generation is near its capacity
    /// (`AFTER`): the counts and the reservation are the commit's after
    /// the transaction.
    After,
}

/// The queued script's result in `EXEC`'s reply. An error is the call's
/// (a corrupt count): the bits are in, and a count that could not be added
/// is reported rather than forgotten.
pub(super) fn decode_settle(name: &str, bound: &[(u64, u64)], reply: Value) -> Result<Settled> {
    match reply {
        Value::ServerError(e) => Err(Error::from_script(name, e.into())),
        Value::BulkString(b) if b == b"AFTER" => Ok(Settled::After),
        Value::SimpleString(s) if s == "AFTER" => Ok(Settled::After),
        reply => {
            let deltas: Vec<(u64, i64)> = bound.iter().map(|&(s, n)| (s, signed(n))).collect();
            decode_commit(&deltas, reply).map(Settled::Ran)
        }
    }
}

/// What the commit after a transaction that ran must do: the count
/// changes, and whether it releases the reservation. After a queued script
/// that ran, it takes back each generation's excess (`bound` minus the
/// items `added` found new); otherwise it adds `added` and releases.
pub(crate) fn after_tx(
    settled: &Settled,
    bound: &[(u64, u64)],
    added: &[(u64, u64)],
) -> (Vec<(u64, i64)>, bool) {
    match settled {
        Settled::Ran(_) => {
            let back = bound
                .iter()
                .filter_map(|&(seq, written)| {
                    let new = added.iter().find(|(s, _)| *s == seq).map_or(0, |(_, n)| *n);
                    let over = written.saturating_sub(new);
                    (over > 0).then(|| (seq, -signed(over)))
                })
                .collect();
            (back, false)
        }
        Settled::After => {
            let add = added.iter().map(|&(seq, n)| (seq, signed(n))).collect();
            (add, true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::keys;

    #[test]
    fn the_queued_commit_adds_the_bound_and_the_excess_is_taken_back() {
        let r = Reserve {
            seq: 2,
            capacity: 10,
            items: 4,
            id: "ab".into(),
        };
        let cmd = settle_cmd(&keys("t"), Some(&r), Some((2, 10)), &[(2, 4)]).unwrap();
        let args: Vec<String> = cmd
            .args_iter()
            .filter_map(|a| match a {
                redis::Arg::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            })
            .collect();
        assert_eq!(args[0], "EVAL");
        assert_eq!(args[1], scripts::SETTLE.source);
        // The member, the decider and its capacity, then (seq, written).
        assert_eq!(&args[args.len() - 5..], ["2:4:ab", "2", "10", "2", "4"]);
        assert!(settle_cmd(&keys("t"), None, None, &[]).is_none());
        // A release alone is queued too; no decider is an empty seq.
        let alone = settle_cmd(&keys("t"), Some(&r), None, &[]).unwrap();
        assert_eq!(alone.args_iter().count(), 8);
        assert!(
            scripts::SETTLE.source.contains("'AFTER'"),
            "the script answers AFTER near capacity"
        );

        let after = decode_settle("t", &[(2, 4)], Value::BulkString(b"AFTER".to_vec())).unwrap();
        assert_eq!(after, Settled::After);
        let ran = decode_settle("t", &[(2, 4)], Value::Array(vec![Value::Int(9)])).unwrap();
        assert_eq!(ran, Settled::Ran(vec![(2, 9)]));
        // 3 of the 4 written were new: 1 is taken back; nothing released.
        assert_eq!(after_tx(&ran, &[(2, 4)], &[(2, 3)]), (vec![(2, -1)], false));
        // All new: nothing to send.
        assert_eq!(after_tx(&ran, &[(2, 4)], &[(2, 4)]), (vec![], false));
        // None new in a generation: all of it back.
        assert_eq!(
            after_tx(&ran, &[(2, 4), (1, 4)], &[(2, 4)]),
            (vec![(1, -4)], false)
        );
    }

    #[test]
    fn an_error_in_exec_is_the_calls() {
        let corrupt = crate::testkit::error_value("CORRUPT gen.2.count holds a value");
        assert!(matches!(
            decode_settle("t", &[(2, 4)], corrupt),
            Err(Error::CorruptMetadata { .. })
        ));
        assert!(decode_settle("t", &[(2, 4)], Value::Int(1)).is_err());
    }
}
