//! Deleting the blocks of dropped generations after the roll that dropped
//! them: one block per round trip, so that freeing a big generation (a
//! 128 MiB generation took 13 ms in one script) never holds the server for
//! long. Any client may finish what another left: the list is in Redis.

use crate::error::{Error, Result};
use crate::exec::{Machine, Poll, Replies, Request};
use crate::keys::Keys;
use crate::proto::as_string;
use redis::Value;

/// Empties the filter's trash list (`Keys::trash`), deleting each block it
/// names.
pub(crate) struct TrashMachine {
    keys: Keys,
    started: bool,
}

impl TrashMachine {
    pub fn new(keys: Keys) -> TrashMachine {
        TrashMachine {
            keys,
            started: false,
        }
    }

    /// The last entry of the list, asked for after the deletion of `key`.
    fn peek(&self, delete: Option<&str>) -> Request {
        let trash = self.keys.trash();
        let mut req = Request::new();
        if let Some(key) = delete {
            // Removing the entry by value, not by position, lets several
            // clients empty the list at once: each deletes what it saw.
            req = req
                .cmd(redis::cmd("DEL").arg(key).clone())
                .cmd(redis::cmd("LREM").arg(&trash).arg(1).arg(key).clone());
        } else {
            req = req.read_only();
        }
        req.cmd(redis::cmd("LINDEX").arg(&trash).arg(-1).clone())
    }
}

impl Machine for TrashMachine {
    type Output = ();

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<()>> {
        if !self.started {
            self.started = true;
            return Ok(Poll::Send(self.peek(None)));
        }
        let mut last = Value::Nil;
        for r in replies.unwrap_or_default() {
            last = r?;
        }
        let key = match &last {
            Value::Nil => return Ok(Poll::Ready(())),
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
        assert!(matches!(m.step(Some(done)).unwrap(), Poll::Ready(())));
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
