//! Phase A of a check-and-insert (docs/FORMAT.md §8.5.4): the query-only
//! generations the server holds are read under the guard, which says
//! whether the view they were read with is current.

use super::guard::{guard, verdict, Verdict};
use super::{all_ones, commands, missing, Part, RoundOf};
use crate::error::Result;
use crate::request::{Replies, Request};
use crate::view::View;

/// Phase A as sent.
#[derive(Debug)]
pub(crate) struct ReadSent {
    pub parts: Vec<Part>,
}

/// The guard, then a read of every round item in each of `gens`.
pub(crate) fn read_request(r: RoundOf<'_>, gens: &[usize], now: &str) -> (Request, ReadSent) {
    let mut req = Request::new().read_only();
    req.push(guard(r.keys, r.view, gens, now, None), None);
    let mut parts = Vec::new();
    let all: Vec<usize> = (0..r.round.len()).collect();
    for &g in gens {
        commands(r, g, false, &all, &mut req, &mut parts);
    }
    (req, ReadSent { parts })
}

/// Per round position, whether a read generation holds the item; or the
/// guard's verdict when the view was not current.
pub(crate) fn decode_read(
    view: &View,
    sent: &ReadSent,
    len: usize,
    replies: Replies,
) -> Result<std::result::Result<Vec<bool>, Verdict>> {
    let mut replies = replies.into_iter();
    let v = verdict(&view.name, &replies.next().ok_or_else(|| missing("guard"))?)?;
    if v != Verdict::Ok {
        return Ok(Err(v));
    }
    let mut present = vec![false; len];
    for part in &sent.parts {
        let reply = replies.next().ok_or_else(|| missing("BITFIELD_RO"))??;
        let found = all_ones(view, part, &reply)?;
        if found.len() != part.positions.len() {
            return Err(crate::error::Error::UnexpectedReply(format!(
                "a read answered {} of {} items",
                found.len(),
                part.positions.len()
            )));
        }
        for (&p, f) in part.positions.iter().zip(found) {
            if let Some(slot) = present.get_mut(p) {
                *slot |= f;
            }
        }
    }
    Ok(Ok(present))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{hashes, ones};
    use super::*;
    use crate::proto::script::Batch;
    use crate::testkit::{keys, view_of};
    use redis::Value;

    #[test]
    fn phase_a_reads_query_generations_under_the_guard() {
        let view = view_of("circular", 3);
        let h = hashes(2);
        let batch = Batch {
            hashes: &h,
            items: &crate::items::Items::default(),
        };
        let r = RoundOf {
            keys: &keys("t"),
            view: &view,
            round: &[0, 1],
            batch,
        };
        let (req, sent) = read_request(r, &[0, 1], "");
        assert_eq!(req.args(0)[0], "EVAL");
        assert_eq!(sent.parts.len(), 2);
        assert!(sent.parts.iter().all(|p| !p.set));
        let k = view.gens[0].layout.hashes as usize;
        let r = vec![
            Ok(Value::BulkString(b"OK".to_vec())),
            Ok(ones(k, 2, 1)),
            Ok(ones(k, 2, 0)),
        ];
        assert_eq!(
            decode_read(&view, &sent, 2, r).unwrap(),
            Ok(vec![true, true])
        );
        let r = vec![Ok(Value::BulkString(b"STALE".to_vec()))];
        assert_eq!(
            decode_read(&view, &sent, 2, r).unwrap(),
            Err(Verdict::Stale)
        );
    }
}
