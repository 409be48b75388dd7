//! Canned inputs and replies for the transaction's unit tests.

use crate::hashing::ItemHash;
use crate::request::Replies;
use redis::Value;

pub(super) fn hashes(n: usize) -> Vec<ItemHash> {
    (0..n).map(|i| ItemHash::of(format!("item{i}"))).collect()
}

/// A BITFIELD reply: `k * n` values, all `bit`.
pub(super) fn ones(k: usize, n: usize, bit: i64) -> Value {
    Value::Array(vec![Value::Int(bit); k * n])
}

fn queued() -> redis::RedisResult<Value> {
    Ok(Value::SimpleString("QUEUED".into()))
}

/// The replies of a transaction: WATCH, guard, MULTI, QUEUED per part,
/// EXEC.
pub(super) fn replies(guard: &str, parts: usize, exec: redis::RedisResult<Value>) -> Replies {
    let mut r = vec![
        Ok(Value::Okay),
        Ok(Value::BulkString(guard.into())),
        Ok(Value::Okay),
    ];
    r.extend((0..parts).map(|_| queued()));
    r.push(exec);
    r
}
