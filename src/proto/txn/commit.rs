//! The commit (docs/FORMAT.md §8.5.3): changes to the counts of bitmap
//! generations, and the release of a reservation. Queued inside the
//! transaction it adds an upper bound (`settle`); sent after it, it takes
//! the excess back, or (when the queued one could not run) adds the counts
//! and releases the reservation itself.

use crate::error::Result;
use crate::keys::Keys;
use crate::request::Request;
use crate::scripts;
use crate::view::View;
use redis::Value;

use super::guard::Reserve;

/// `EVALSHA commit meta reservations uid cleared member seq delta ...`:
/// releases the reservation `member` (if any) and adds each delta to its
/// generation's count, if the filter is still the view's instance and was
/// not cleared since.
pub(super) fn commit_cmd(
    keys: &Keys,
    view: &View,
    member: Option<String>,
    deltas: &[(u64, i64)],
) -> redis::Cmd {
    let mut cmd = scripts::COMMIT.invoke(&[keys.meta().to_string(), keys.reservations()]);
    cmd.arg(&view.uid)
        .arg(view.cleared)
        .arg(member.unwrap_or_default());
    for (seq, n) in deltas {
        cmd.arg(*seq).arg(*n);
    }
    cmd
}

/// The commit sent after a transaction, as a request of its own (the
/// script is re-sent in full after NOSCRIPT). None when there is nothing
/// to do.
pub(crate) fn commit_request(
    keys: &Keys,
    view: &View,
    reserve: Option<&Reserve>,
    deltas: &[(u64, i64)],
) -> Option<Request> {
    let deltas: Vec<(u64, i64)> = deltas.iter().copied().filter(|(_, n)| *n != 0).collect();
    if deltas.is_empty() && reserve.is_none() {
        return None;
    }
    let mut req = Request::new();
    req.script(
        &scripts::COMMIT,
        commit_cmd(keys, view, reserve.map(Reserve::member), &deltas),
    );
    Some(req)
}

/// The commit's reply: each changed generation's count afterwards, by seq
/// (a generation gone meanwhile is left out; nothing at all when the filter
/// was cleared or replaced since).
pub(crate) fn decode_commit(deltas: &[(u64, i64)], reply: Value) -> Result<Vec<(u64, u64)>> {
    use crate::error::unexpected;
    let Value::Array(counts) = &reply else {
        return Err(unexpected("commit", &reply));
    };
    let seqs = deltas.iter().filter(|(_, n)| *n != 0).map(|(s, _)| *s);
    if !counts.is_empty() && counts.len() != seqs.clone().count() {
        return Err(unexpected("commit counts", &reply));
    }
    Ok(seqs
        .zip(counts)
        .filter_map(|(seq, c)| match c {
            Value::Int(n) => u64::try_from(*n).ok().map(|n| (seq, n)),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{keys, view_of};

    #[test]
    fn commit_names_the_generations_of_the_view() {
        let view = view_of("circular", 3);
        let req = commit_request(&keys("t"), &view, None, &[(2, 5), (1, 0)]).unwrap();
        let args = req.args(0);
        // The instance, its clear count, no reservation, then (seq, added).
        assert_eq!(
            &args[args.len() - 5..],
            ["0123456789abcdef", "0", "", "2", "5"]
        );
        assert!(commit_request(&keys("t"), &view, None, &[(2, 0)]).is_none());
        // A reservation alone is released.
        let r = Reserve {
            seq: 2,
            capacity: 10,
            items: 4,
            id: "ab".into(),
        };
        let release = commit_request(&keys("t"), &view, Some(&r), &[]).unwrap();
        let args = release.args(0);
        assert_eq!(&args[args.len() - 3..], ["0123456789abcdef", "0", "2:4:ab"]);
        // An excess taken back is a negative delta.
        let back = commit_request(&keys("t"), &view, None, &[(2, -3)]).unwrap();
        let args = back.args(0);
        assert_eq!(&args[args.len() - 2..], ["2", "-3"]);
        let added = [(2, 5), (1, 0), (3, 1)];
        let reply = Value::Array(vec![Value::Int(12), Value::Int(-1)]);
        assert_eq!(decode_commit(&added, reply).unwrap(), [(2, 12)]);
        assert!(decode_commit(&added, Value::Array(vec![]))
            .unwrap()
            .is_empty());
        assert!(decode_commit(&added, Value::Int(1)).is_err());
        assert!(decode_commit(&added, Value::Array(vec![Value::Int(1)])).is_err());
    }
}
