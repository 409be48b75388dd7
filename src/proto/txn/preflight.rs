//! Whether the server lets this user `WATCH`, asked before the first
//! transaction rather than learnt from one that ran unguarded (a pipelined
//! transaction runs whatever `WATCH` answered; docs/FORMAT.md §8.5).

use super::expect_ok;
use crate::error::Result;
use crate::keys::Keys;
use crate::request::{Replies, Request};

/// `WATCH fence; UNWATCH`.
pub(crate) fn preflight_request(keys: &Keys) -> Request {
    let mut req = Request::new().read_only();
    req.push(redis::cmd("WATCH").arg(keys.fence()).clone(), None);
    req.push(redis::cmd("UNWATCH"), None);
    req
}

pub(crate) fn decode_preflight(replies: Replies) -> Result<()> {
    let mut replies = replies.into_iter();
    expect_ok("WATCH", replies.next())?;
    expect_ok("UNWATCH", replies.next())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{keys, server_error};
    use redis::Value;

    #[test]
    fn a_refused_watch_is_the_error() {
        let req = preflight_request(&keys("t"));
        assert_eq!(req.args(0), ["WATCH", "rotabloom:{t}:fence"]);
        assert_eq!(req.args(1), ["UNWATCH"]);
        assert!(decode_preflight(vec![Ok(Value::Okay), Ok(Value::Okay)]).is_ok());
        let noperm =
            server_error("NOPERM User nowatch has no permissions to run the 'watch' command");
        assert!(decode_preflight(vec![Err(noperm), Ok(Value::Okay)]).is_err());
    }
}
