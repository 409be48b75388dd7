//! Deleting what no metadata lists any more: the blocks of generations a
//! roll or a drop put in the trash, one block per round trip, so that
//! freeing a big generation (a 128 MiB generation took 13 ms in one
//! script) never holds the server for long; and, after a drop, every key
//! still under the name. Any client may finish what another left: the
//! list and the keys are in Redis.

use super::chain::MachineExt;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::machine::{Machine, Poll};
use crate::proto::{as_string, take_one};
use crate::request::{Replies, Request};
use crate::scripts;
use redis::Value;

/// Empties the filter's trash list (`Keys::trash`), deleting each block it
/// names; its output is how many blocks it deleted.
pub(crate) struct TrashMachine {
    keys: Keys,
    started: bool,
    deleted: u64,
}

impl TrashMachine {
    pub fn new(keys: Keys) -> TrashMachine {
        TrashMachine {
            keys,
            started: false,
            deleted: 0,
        }
    }

    /// The last entry of the list, asked for after the deletion of `key`.
    fn peek(&self, delete: Option<&str>) -> Request {
        crate::proto::trash::peek(&self.keys, delete)
    }
}

impl Machine for TrashMachine {
    type Output = u64;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<u64>> {
        if !self.started {
            self.started = true;
            return Ok(Poll::Send(self.peek(None)));
        }
        let replies = replies.unwrap_or_default();
        // After a deletion: DEL's count, LREM's, then the next entry.
        if let [Ok(Value::Int(n)), _, _] = replies.as_slice() {
            self.deleted += u64::try_from(*n).unwrap_or(0);
        }
        let mut last = Value::Nil;
        for r in replies {
            last = r?;
        }
        let key = match &last {
            Value::Nil => return Ok(Poll::Ready(self.deleted)),
            v => as_string(v).ok_or_else(|| Error::Internal(format!("LINDEX replied {v:?}")))?,
        };
        if !self.keys.is_block(&key) {
            // Only a block of this filter may go; anything else in the list
            // is someone else's mistake, named rather than deleted.
            return Err(Error::CorruptMetadata {
                name: self.keys.name().to_string(),
                field: "trash".into(),
                reason: format!(
                    "{key:?} in {} is not a block key of this filter",
                    self.keys.trash()
                ),
            });
        }
        Ok(Poll::Send(self.peek(Some(&key))))
    }
}

/// How many keys one sweep step asks SCAN to look at: about a millisecond
/// of the server's time (0.75 ms median, 2.9 ms at most, over a database
/// of a million keys: a drop then sweeps in 0.8 s), so other clients'
/// commands run between steps.
const SWEEP_COUNT: u32 = 1024;

/// Removes every key matching the filter's pattern (`Keys::pattern`) while
/// its metadata is missing, one SCAN step per round trip (in the script,
/// so that a cluster runs it on the node of the filter's slot); stops as
/// soon as the filter exists again. Its output is how many keys it removed.
pub(crate) struct SweepMachine {
    keys: Keys,
    /// The SCAN cursor of the next step; `None` before the first.
    cursor: Option<String>,
    removed: u64,
}

impl SweepMachine {
    pub fn new(keys: Keys) -> SweepMachine {
        SweepMachine {
            keys,
            cursor: None,
            removed: 0,
        }
    }

    fn request(&self, cursor: &str) -> Request {
        let mut cmd = scripts::SWEEP.invoke(&[self.keys.meta()]);
        cmd.arg(cursor).arg(self.keys.pattern()).arg(SWEEP_COUNT);
        let mut req = Request::new();
        req.script(&scripts::SWEEP, cmd);
        req
    }
}

impl Machine for SweepMachine {
    type Output = u64;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<u64>> {
        if self.cursor.is_none() {
            self.cursor = Some("0".into());
            return Ok(Poll::Send(self.request("0")));
        }
        let v = match take_one(replies)? {
            Ok(v) => v,
            Err(e) if crate::error::acl_refusal(&e).is_some() => {
                // A user for one filter may be denied SCAN (it lists every
                // key name of the database). The filter is gone all the
                // same; what is left expires on its own.
                log::warn!(
                    "filter {:?}: the records of its idempotent batches are left to expire \
                     (within their retry window, 5 minutes by default): this Redis user may \
                     not run SCAN, which finds them",
                    self.keys.name().as_str(),
                );
                return Ok(Poll::Ready(self.removed));
            }
            Err(e) => return Err(Error::from_script(self.keys.name().as_str(), e)),
        };
        let (next, removed) = match &v {
            // The filter exists again: what is under the name is its own.
            v if as_string(v).as_deref() == Some("BACK") => return Ok(Poll::Ready(self.removed)),
            Value::Array(a) => match a.as_slice() {
                [cursor, Value::Int(n)] => (as_string(cursor), *n),
                _ => (None, 0),
            },
            _ => (None, 0),
        };
        let next = next.ok_or_else(|| crate::error::unexpected("sweep script", &v))?;
        self.removed += u64::try_from(removed).unwrap_or(0);
        if next == "0" {
            return Ok(Poll::Ready(self.removed));
        }
        let req = self.request(&next);
        self.cursor = Some(next);
        Ok(Poll::Send(req))
    }
}

/// Removes the metadata and fence of a filter whose metadata cannot be
/// decoded (`lua/drop_unreadable.lua`), after reading its uid raw. Output:
/// whether this call removed them.
pub(crate) struct UnreadableDrop {
    keys: Keys,
    state: UnreadableState,
}

enum UnreadableState {
    Start,
    Uid,
    Drop,
}

impl UnreadableDrop {
    pub fn new(keys: Keys) -> UnreadableDrop {
        UnreadableDrop {
            keys,
            state: UnreadableState::Start,
        }
    }
}

impl Machine for UnreadableDrop {
    type Output = bool;

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<bool>> {
        match std::mem::replace(&mut self.state, UnreadableState::Drop) {
            UnreadableState::Start => {
                self.state = UnreadableState::Uid;
                Ok(Poll::Send(crate::proto::trash::uid(&self.keys)))
            }
            UnreadableState::Uid => {
                let uid = match take_one(replies)?? {
                    Value::Nil => return Ok(Poll::Ready(false)),
                    v => crate::proto::as_string(&v).unwrap_or_default(),
                };
                let mut cmd = scripts::DROP_UNREADABLE
                    .invoke(&[self.keys.meta().to_string(), self.keys.fence()]);
                cmd.arg(uid);
                let mut req = Request::new();
                req.script(&scripts::DROP_UNREADABLE, cmd);
                Ok(Poll::Send(req))
            }
            UnreadableState::Drop => {
                let reply = take_one(replies)??;
                match crate::proto::as_string(&reply).as_deref() {
                    Some("OK") => Ok(Poll::Ready(true)),
                    Some("GONE") => Ok(Poll::Ready(false)),
                    Some("STALE") => Err(crate::error::Error::Contention {
                        name: self.keys.name().to_string(),
                        retries: 1,
                    }),
                    _ => Err(crate::error::unexpected("drop-unreadable script", &reply)),
                }
            }
        }
    }
}

/// What a drop leaves to clients: the blocks in the trash, then every key
/// still under the name while no filter has it. Output: the keys removed.
pub(crate) fn leftovers(keys: Keys) -> impl Machine<Output = u64> + Send {
    TrashMachine::new(keys.clone())
        .then(move |blocks| Ok(SweepMachine::new(keys).map(move |swept| Ok(blocks + swept))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::keys;

    fn names(req: &Request) -> Vec<String> {
        (0..req.len()).map(|i| req.args(i)[0].clone()).collect()
    }

    #[test]
    fn each_block_goes_in_its_own_step_until_the_list_is_empty() {
        let k = keys("t");
        let block = k.block("0123456789abcdef", 3, 0);
        let mut m = TrashMachine::new(k.clone());
        let Poll::Send(first) = m.step(None).unwrap() else {
            panic!("expected a request")
        };
        assert_eq!(names(&first), ["LINDEX"]);
        let reply = vec![Ok(Value::BulkString(block.clone().into_bytes()))];
        let Poll::Send(next) = m.step(Some(reply)).unwrap() else {
            panic!("expected a request")
        };
        assert_eq!(names(&next), ["DEL", "LREM", "LINDEX"]);
        assert_eq!(next.args(0)[1], block);
        let done = vec![Ok(Value::Int(1)), Ok(Value::Int(1)), Ok(Value::Nil)];
        assert!(matches!(m.step(Some(done)).unwrap(), Poll::Ready(1)));
    }

    fn sweep_reply(cursor: &str, removed: i64) -> Option<Replies> {
        Some(vec![Ok(Value::Array(vec![
            Value::BulkString(cursor.as_bytes().to_vec()),
            Value::Int(removed),
        ]))])
    }

    #[test]
    fn the_sweep_follows_the_cursor_until_scan_is_done() {
        // A name of an earlier version, with a glob character.
        let k = Keys::new(crate::keys::FilterName::existing("a*").unwrap());
        let mut m = SweepMachine::new(k.clone());
        let Poll::Send(first) = m.step(None).unwrap() else {
            panic!("expected a request")
        };
        let args = first.args(0);
        assert_eq!(args[0], "EVALSHA");
        // One key, the metadata (it routes the call), then the cursor and
        // the filter's own pattern, its glob escaped.
        assert_eq!(&args[2..6], ["1", k.meta(), "0", r"rotabloom:{a\*}:*"]);
        let Poll::Send(next) = m.step(sweep_reply("17", 3)).unwrap() else {
            panic!("the cursor is not done")
        };
        assert_eq!(next.args(0)[4], "17");
        assert!(matches!(
            m.step(sweep_reply("0", 2)).unwrap(),
            Poll::Ready(5)
        ));
    }

    #[test]
    fn the_sweep_stops_when_the_filter_exists_again() {
        let mut m = SweepMachine::new(keys("t"));
        m.step(None).unwrap();
        m.step(sweep_reply("9", 4)).unwrap();
        let back = Some(vec![Ok(Value::BulkString(b"BACK".to_vec()))]);
        assert!(matches!(m.step(back).unwrap(), Poll::Ready(4)));
    }

    #[test]
    fn a_foreign_key_in_the_list_is_an_error_not_a_deletion() {
        let mut m = TrashMachine::new(keys("t"));
        m.step(None).unwrap();
        for foreign in [
            "user:1",
            "rotabloom:{other}:gen:0123456789abcdef-1:0",
            "rotabloom:{t}:meta",
        ] {
            let reply = vec![Ok(Value::BulkString(foreign.as_bytes().to_vec()))];
            assert!(
                matches!(m.step(Some(reply)), Err(Error::CorruptMetadata { .. })),
                "{foreign}"
            );
        }
    }
}
