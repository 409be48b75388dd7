//! The commit after a transaction (docs/FORMAT.md §8.5.3): the counts of
//! the bitmap generations it wrote, and the release of its reservation.

use crate::error::Result;
use crate::keys::Keys;
use crate::request::Request;
use crate::scripts;
use crate::view::View;
use redis::Value;

use super::guard::Reserve;

/// `EVALSHA commit meta reservations uid cleared member seq added ...`:
/// releases the reservation (if any) and adds to the generations' counts,
/// if the filter is still the view's instance and was not cleared since.
/// None when there is nothing to do.
pub(crate) fn commit_request(
    keys: &Keys,
    view: &View,
    reserve: Option<&Reserve>,
    added: &[(u64, u64)],
) -> Option<Request> {
    let added: Vec<&(u64, u64)> = added.iter().filter(|(_, n)| *n > 0).collect();
    if added.is_empty() && reserve.is_none() {
        return None;
    }
    let mut cmd = scripts::COMMIT.invoke(&[keys.meta().to_string(), keys.reservations()]);
    cmd.arg(&view.uid)
        .arg(view.cleared)
        .arg(reserve.map(Reserve::member).unwrap_or_default());
    for (seq, n) in added {
        cmd.arg(*seq).arg(*n);
    }
    let mut req = Request::new();
    req.script(&scripts::COMMIT, cmd);
    Some(req)
}

/// The commit's reply: each committed generation's count afterwards, by
/// seq (a generation gone meanwhile is left out).
pub(crate) fn decode_commit(added: &[(u64, u64)], reply: Value) -> Result<Vec<(u64, u64)>> {
    use crate::error::unexpected;
    let Value::Array(counts) = &reply else {
        return Err(unexpected("commit", &reply));
    };
    let seqs = added.iter().filter(|(_, n)| *n > 0).map(|(s, _)| *s);
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
