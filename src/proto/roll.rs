//! The roll (`lua/roll.lua`): expansion, rotation, lazy rotation and
//! conversion are all this one compare-and-set.

use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::request::Request;
use crate::scripts;
use crate::view::{Roll, View};
use redis::Value;

pub(crate) fn request(keys: &Keys, view: &View, roll: &Roll) -> Result<Request> {
    let name = || view.name.clone();
    if roll.drop > view.gens.len() {
        return Err(Error::Internal(format!(
            "a roll drops {} of {} generations",
            roll.drop,
            view.gens.len()
        )));
    }
    // Every roll moves the epoch, one that adds nothing (a conversion) too:
    // handles of the filter as it was must find their view stale.
    let step = u64::try_from(roll.add.len().max(1)).unwrap_or(u64::MAX);
    let epoch = view
        .epoch
        .checked_add(step)
        .ok_or_else(|| Error::LimitReached {
            name: name(),
            limit: "the epoch cannot grow further".into(),
        })?;
    let next_seq = match roll.add.last() {
        Some(g) => g.seq.checked_add(1).ok_or_else(|| Error::LimitReached {
            name: name(),
            limit: "sequence numbers are exhausted".into(),
        })?,
        None => view.next_seq,
    };
    if roll.add.first().is_some_and(|g| g.seq != view.next_seq)
        || roll.add.windows(2).any(|w| w[1].seq != w[0].seq + 1)
    {
        return Err(Error::Internal(
            "a roll's new generations are not consecutive from next_seq".into(),
        ));
    }
    let (dropped, kept) = view.gens.split_at(roll.drop);
    let gens: Vec<String> = kept
        .iter()
        .map(|g| g.seq)
        .chain(roll.add.iter().map(|g| g.seq))
        .map(|s| s.to_string())
        .collect();
    if gens.is_empty() {
        return Err(Error::Internal("a roll would leave no generation".into()));
    }
    let mut key_list = vec![keys.meta().to_string(), keys.fence(), keys.trash()];
    for g in dropped {
        key_list.extend((0..g.layout.blocks).map(|b| keys.block(&view.uid, g.seq, b)));
    }
    let mut cmd = scripts::ROLL.invoke(&key_list);
    cmd.arg(&view.uid)
        .arg(view.epoch)
        .arg(view.cleared)
        .arg(epoch)
        .arg(gens.join(","))
        .arg(next_seq)
        .arg(roll.expect.len());
    for (f, v) in &roll.expect {
        cmd.arg(*f).arg(v);
    }
    cmd.arg(dropped.len());
    for g in dropped {
        cmd.arg(g.seq);
    }
    cmd.arg(roll.add.len());
    for g in &roll.add {
        let l = g.layout;
        cmd.arg(g.seq)
            .arg(l.bits)
            .arg(l.hashes)
            .arg(l.blocks)
            .arg(g.capacity)
            .arg(l.scheme.as_str());
    }
    cmd.arg(roll.set.len());
    for (f, v) in &roll.set {
        cmd.arg(*f).arg(v);
    }
    let mut req = Request::new();
    req.script(&scripts::ROLL, cmd);
    Ok(req)
}

/// Whether this call made the change (false: the view was stale).
pub(crate) fn decode(name: &str, reply: redis::RedisResult<Value>) -> Result<bool> {
    let v = reply.map_err(|e| Error::from_script(name, e))?;
    match super::as_string(&v).as_deref() {
        Some("OK") => Ok(true),
        Some("STALE") => Ok(false),
        _ => Err(crate::error::unexpected("roll script", &v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{keys, server_error, view_of};
    use crate::view::NewGen;

    fn gen(seq: u64, view: &View) -> NewGen {
        NewGen {
            seq,
            layout: view.gens[0].layout,
            capacity: 100,
        }
    }

    #[test]
    fn expansion_is_a_roll_that_drops_nothing() {
        let view = view_of("expanding", 2);
        let roll = Roll {
            drop: 0,
            add: vec![gen(2, &view)],
            expect: vec![],
            set: vec![],
            allocate: 1,
        };
        let args = request(&keys("t"), &view, &roll).unwrap().args(0);
        // EVALSHA sha 3 meta fence trash, then uid epoch cleared new-epoch
        // gens next_seq.
        assert_eq!(args[2], "3");
        assert_eq!(args[5], "rotabloom:{t}:trash");
        assert_eq!(
            &args[6..12],
            ["0123456789abcdef", "0", "0", "1", "0,1,2", "3"]
        );
        // No expectations, nothing dropped, one new generation, nothing set.
        assert_eq!(&args[12..15], ["0", "0", "1"]);
        assert_eq!(&args[15..21], ["2", "1000", "3", "1", "100", "md5-edh"]);
        assert_eq!(args[21], "0");
        assert_eq!(args.len(), 22);
    }

    #[test]
    fn rotation_drops_the_oldest_and_compares_the_period() {
        let view = view_of("circular", 3);
        let roll = Roll {
            drop: 2,
            add: vec![gen(3, &view), gen(4, &view)],
            expect: vec![("period", "7".into())],
            set: vec![("period", "9".into()), ("due_at", "100".into())],
            allocate: 1,
        };
        let args = request(&keys("t"), &view, &roll).unwrap().args(0);
        // Two block keys of the dropped generations follow meta, fence and
        // trash.
        assert_eq!(args[2], "5");
        assert_eq!(
            &args[6..8],
            [
                "rotabloom:{t}:gen:0123456789abcdef-0:0",
                "rotabloom:{t}:gen:0123456789abcdef-1:0"
            ]
        );
        assert_eq!(
            &args[8..14],
            ["0123456789abcdef", "0", "0", "2", "2,3,4", "5"]
        );
        assert_eq!(&args[14..17], ["1", "period", "7"]);
        assert_eq!(&args[17..20], ["2", "0", "1"]);
        assert_eq!(args[20], "2");
        assert_eq!(
            &args[args.len() - 5..],
            ["2", "period", "9", "due_at", "100"]
        );
    }

    #[test]
    fn a_roll_that_adds_nothing_still_moves_the_epoch_by_one() {
        let view = view_of("bloom", 1);
        let roll = Roll {
            drop: 0,
            add: vec![],
            expect: vec![("kind", "bloom".into())],
            set: vec![("kind", "expanding".into())],
            allocate: 0,
        };
        let args = request(&keys("t"), &view, &roll).unwrap().args(0);
        // The new epoch is 1; gens and next_seq are written as they were.
        assert_eq!(&args[6..12], ["0123456789abcdef", "0", "0", "1", "0", "1"]);
        assert_eq!(
            &args[12..],
            ["1", "kind", "bloom", "0", "0", "1", "kind", "expanding"]
        );
    }

    #[test]
    fn a_roll_that_breaks_the_rules_is_refused_before_sending() {
        let view = view_of("circular", 2);
        let bad = |drop, add: Vec<NewGen>| Roll {
            drop,
            add,
            expect: vec![],
            set: vec![],
            allocate: 0,
        };
        for roll in [bad(3, vec![]), bad(2, vec![]), bad(0, vec![gen(5, &view)])] {
            assert!(matches!(
                request(&keys("t"), &view, &roll),
                Err(Error::Internal(_))
            ));
        }
    }

    #[test]
    fn replies_decode() {
        assert!(decode("t", Ok(Value::BulkString(b"OK".to_vec()))).unwrap());
        assert!(!decode("t", Ok(Value::BulkString(b"STALE".to_vec()))).unwrap());
        assert!(matches!(
            decode("t", Ok(Value::Int(3))),
            Err(Error::UnexpectedReply(_))
        ));
        assert!(matches!(
            decode("t", Err(server_error("CORRUPT gen.1.count holds a value that is not a count"))),
            Err(Error::CorruptMetadata { ref field, .. }) if field == "gen.1.count"
        ));
    }
}
