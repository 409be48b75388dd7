//! The measurement of the legacy keys: `TYPE`, `STRLEN` and `BITCOUNT`
//! of each, read in one round trip before anything is judged.

use super::int;
use crate::error::unexpected;
use crate::error::{Error, Result};
use crate::proto::as_string;
use crate::request::{Replies, Request};

/// One legacy key as measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub key: String,
    /// Its Redis type (`none` when it does not exist).
    pub ty: String,
    /// Bytes (strings only).
    pub len: u64,
    /// Bits set (strings only).
    pub set: u64,
}

/// `TYPE`, `STRLEN` and `BITCOUNT` of each key, in one round trip.
pub(crate) fn measure_request(keys: &[String]) -> Request {
    let mut req = Request::new().read_only();
    for k in keys {
        req.push(redis::cmd("TYPE").arg(k).clone(), None);
        req.push(redis::cmd("STRLEN").arg(k).clone(), None);
        req.push(redis::cmd("BITCOUNT").arg(k).clone(), None);
    }
    req
}

/// The measurement of each key. `STRLEN` and `BITCOUNT` of a key that is
/// not a string fail (WRONGTYPE); its type says why.
pub(crate) fn decode_measure(keys: &[String], replies: Replies) -> Result<Vec<Found>> {
    if replies.len() != 3 * keys.len() {
        return Err(Error::Internal(format!(
            "{} replies to the measurement of {} keys",
            replies.len(),
            keys.len()
        )));
    }
    let mut replies = replies.into_iter();
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let (Some(ty), Some(len), Some(set)) = (replies.next(), replies.next(), replies.next())
        else {
            return Err(Error::Internal("a measurement reply is missing".into()));
        };
        let ty = ty?;
        let ty = as_string(&ty).ok_or_else(|| unexpected("TYPE", &ty))?;
        let (len, set) = match ty.as_str() {
            "string" => (int("STRLEN", len)?, int("BITCOUNT", set)?),
            _ => (0, 0),
        };
        out.push(Found {
            key: key.clone(),
            ty,
            len,
            set,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{other, string};
    use super::*;
    use crate::testkit::server_error;
    use redis::Value;

    #[test]
    fn the_measurement_names_each_keys_type() {
        let keys = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let req = measure_request(&keys);
        assert_eq!(req.len(), 9);
        assert_eq!(req.args(0), ["TYPE", "a"]);
        assert_eq!(req.args(8), ["BITCOUNT", "c"]);
        assert!(!req.writes());
        let wrongtype = || Err(server_error("WRONGTYPE Operation against a key"));
        let replies = vec![
            Ok(Value::SimpleString("string".into())),
            Ok(Value::Int(1000)),
            Ok(Value::Int(42)),
            Ok(Value::SimpleString("set".into())),
            wrongtype(),
            wrongtype(),
            Ok(Value::SimpleString("none".into())),
            Ok(Value::Int(0)),
            Ok(Value::Int(0)),
        ];
        let found = decode_measure(&keys, replies).unwrap();
        assert_eq!(found[0], string("a", 1000, 42));
        assert_eq!(found[1], other("b", "set"));
        assert_eq!(found[2], other("c", "none"));
        assert!(decode_measure(&keys, vec![]).is_err());
    }
}
