//! What an adoption checks before anything moves (docs/LEGACY.md §7), as
//! pure code: the requests it reads with, and its verdicts on the replies.
//!
//! A legacy crawler's parameters are not stored in Redis; they come from
//! its settings, and a wrong one makes the adopted generation answer
//! "absent" for everything it held. So the bitmap is measured first
//! (`TYPE`, `STRLEN`, `BITCOUNT`) and judged against the parameters:
//! what cannot be (a missing key, another type, a string longer than the
//! parameters allow, no bit set, a saturated bitmap) is refused; what is
//! merely improbable (a string far shorter than its set bits would make
//! it, a missing block) is refused unless items known to be in the bitmap
//! are found in it with these parameters.

mod compare;
mod judge;
mod measure;
mod verify;

use crate::error::unexpected;
use crate::error::{Error, Result};
use redis::Value;

pub(crate) use compare::compare;
pub(crate) use judge::{judge, Verdict};
pub(crate) use measure::{decode_measure, measure_request};
pub(crate) use verify::{decode_verify, unverified, verify_chunk, verify_request};

/// A count in a reply (`STRLEN`, `BITCOUNT`, `GETBIT`): an integer, never
/// negative.
fn int(what: &str, reply: redis::RedisResult<Value>) -> Result<u64> {
    match reply? {
        Value::Int(i) => {
            u64::try_from(i).map_err(|_| Error::UnexpectedReply(format!("{what}: {i}")))
        }
        v => Err(unexpected(what, &v)),
    }
}

fn refuse(key: &str, reason: String) -> Error {
    Error::NotAdoptable {
        key: key.to_string(),
        reason,
    }
}

/// The legacy parameters and measured keys the tests of each check use.
#[cfg(test)]
mod fixtures {
    use super::measure::Found;
    use crate::legacy::Legacy;
    use crate::store::generation::Layout;

    pub(super) fn scrapy(bit: u32, hashes: u32) -> (Legacy, Layout) {
        let l = Legacy::ScrapyRedisBloomfilter {
            key: "spider:bloomfilter".into(),
            bit,
            hashes,
        };
        let layout = l.layout().unwrap();
        (l, layout)
    }

    pub(super) fn seed(blocks: u32) -> (Legacy, Layout) {
        let l = Legacy::Seed000 {
            prefix: "bf".into(),
            blocks,
        };
        let layout = l.layout().unwrap();
        (l, layout)
    }

    pub(super) fn string(key: &str, len: u64, set: u64) -> Found {
        Found {
            key: key.into(),
            ty: "string".into(),
            len,
            set,
        }
    }

    pub(super) fn other(key: &str, ty: &str) -> Found {
        Found {
            key: key.into(),
            ty: ty.into(),
            len: 0,
            set: 0,
        }
    }
}
