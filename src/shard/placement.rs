//! Where the shards of a new sharded filter go (docs/FORMAT.md §11.5):
//! the masters from a `CLUSTER SLOTS` reply, the slot of a key, and the
//! tags that put shard `j` on master `j mod M`. Pure: the reply comes in
//! as a `redis::Value`, the random tags from the caller.

use crate::proto::shard::root::shard_name;
use redis::Value;

/// Slots of a Redis Cluster.
const SLOTS: u16 = 16384;
/// Random tags tried per shard before giving up on its master: with M
/// masters a tag hits one with probability about 1/M, so this many misses
/// mean the master serves almost no slots.
const MAX_TRIES: u32 = 100_000;

/// One master and the slot ranges it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Master {
    /// The node id (from `CLUSTER SLOTS`), or `host:port` where absent.
    pub id: String,
    /// `host:port`.
    pub addr: String,
    /// Inclusive slot ranges.
    pub ranges: Vec<(u16, u16)>,
}

impl Master {
    /// Whether this master serves `slot`.
    pub fn serves(&self, slot: u16) -> bool {
        self.ranges.iter().any(|&(a, b)| (a..=b).contains(&slot))
    }
}

/// The Redis Cluster slot of `key`: CRC16-XMODEM of its hash tag (the text
/// inside its first non-empty `{...}`), or of the whole key.
pub fn slot_of(key: &[u8]) -> u16 {
    let tagged = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    crc16::State::<crc16::XMODEM>::calculate(tagged) % SLOTS
}

/// The slot of the filter `name` (its keys' hash tag is the name).
pub fn slot_of_filter(name: &str) -> u16 {
    slot_of(name.as_bytes())
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => text(other)?.parse().ok(),
    }
}

/// The masters of a `CLUSTER SLOTS` reply, sorted by node id; `None` when
/// the reply is not one (so the caller reports it instead of guessing).
/// Each entry is `[start, end, [host, port, id, ...], replicas...]`.
pub fn masters_from_slots(reply: &Value) -> Option<Vec<Master>> {
    let Value::Array(ranges) = reply else {
        return None;
    };
    let mut masters: Vec<Master> = Vec::new();
    for r in ranges {
        let Value::Array(parts) = r else { return None };
        let start = u16::try_from(int(parts.first()?)?).ok()?;
        let end = u16::try_from(int(parts.get(1)?)?).ok()?;
        if start > end || end >= SLOTS {
            return None;
        }
        let Value::Array(node) = parts.get(2)? else {
            return None;
        };
        let addr = format!("{}:{}", text(node.first()?)?, int(node.get(1)?)?);
        let id = node.get(2).and_then(text).unwrap_or_else(|| addr.clone());
        match masters.iter_mut().find(|m| m.id == id) {
            Some(m) => m.ranges.push((start, end)),
            None => masters.push(Master {
                id,
                addr,
                ranges: vec![(start, end)],
            }),
        }
    }
    masters.sort_by(|a, b| a.id.cmp(&b.id));
    Some(masters)
}

/// The master that serves `slot`, if any.
pub fn master_of(masters: &[Master], slot: u16) -> Option<&Master> {
    masters.iter().find(|m| m.serves(slot))
}

/// The shards each master serves, given each shard's slot: one group per
/// master that serves any (in `masters` order, shards ascending), then one
/// group of the shards no master serves (outside a cluster: all of them).
/// A batch sends each group's parts on one connection, the groups at once.
pub fn group_by_master(masters: &[Master], slots: &[u16]) -> Vec<Vec<usize>> {
    let mut groups = vec![Vec::new(); masters.len() + 1];
    for (j, &slot) in slots.iter().enumerate() {
        let g = masters
            .iter()
            .position(|m| m.serves(slot))
            .unwrap_or(masters.len());
        groups[g].push(j);
    }
    groups.retain(|g| !g.is_empty());
    groups
}

/// Names for `shards` shards of `root`: shard `j` on master `j mod M`
/// where the cluster has M masters, drawing tags from `next_tag` until the
/// slot fits; with no masters (a single server) the first tag drawn.
pub fn place(
    root: &str,
    shards: u32,
    masters: &[Master],
    mut next_tag: impl FnMut() -> u32,
) -> Vec<String> {
    (0..shards)
        .map(|j| {
            let target = (!masters.is_empty()).then(|| &masters[j as usize % masters.len()]);
            let mut name = shard_name(root, j, next_tag());
            if let Some(m) = target {
                for _ in 0..MAX_TRIES {
                    if m.serves(slot_of_filter(&name)) {
                        break;
                    }
                    name = shard_name(root, j, next_tag());
                }
            }
            name
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    /// A 3-master `CLUSTER SLOTS` reply as redis-server 7.0 sends it, one
    /// master (c) with two ranges and a replica.
    fn canned() -> Value {
        let range = |a: i64, b: i64, port: i64, id: &str, replica: bool| {
            let mut v = vec![
                Value::Int(a),
                Value::Int(b),
                Value::Array(vec![
                    bulk("127.0.0.1"),
                    Value::Int(port),
                    bulk(id),
                    Value::Array(vec![]),
                ]),
            ];
            if replica {
                v.push(Value::Array(vec![
                    bulk("127.0.0.1"),
                    Value::Int(port + 100),
                    bulk("r"),
                ]));
            }
            Value::Array(v)
        };
        Value::Array(vec![
            range(0, 5460, 7001, "c", true),
            range(5461, 10922, 7002, "b", false),
            range(10923, 16000, 7003, "a", false),
            range(16001, 16383, 7001, "c", true),
        ])
    }

    #[test]
    fn slots_of_known_keys() {
        // Values from `CLUSTER KEYSLOT` on redis-server 7.0.
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"user1000"));
        assert_eq!(slot_of(b"rotabloom:{crawl}:meta"), slot_of(b"crawl"));
        assert_eq!(slot_of(b"foo{}{bar}"), slot_of(b"foo{}{bar}"));
        // CRC16-XMODEM's check value.
        assert_eq!(slot_of(b"123456789"), 0x31c3);
    }

    #[test]
    fn masters_are_decoded_and_sorted_by_id() {
        let m = masters_from_slots(&canned()).unwrap();
        let ids: Vec<&str> = m.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(m[2].ranges, [(0, 5460), (16001, 16383)]);
        assert_eq!(m[2].addr, "127.0.0.1:7001");
        assert_eq!(master_of(&m, 16100).unwrap().id, "c");
        assert_eq!(master_of(&m, 6000).unwrap().id, "b");
    }

    #[test]
    fn malformed_replies_are_refused() {
        assert_eq!(masters_from_slots(&Value::Nil), None);
        let bad = Value::Array(vec![Value::Array(vec![Value::Int(5), Value::Int(2)])]);
        assert_eq!(masters_from_slots(&bad), None);
        let out = Value::Array(vec![Value::Array(vec![
            Value::Int(0),
            Value::Int(20000),
            Value::Array(vec![bulk("h"), Value::Int(1), bulk("x")]),
        ])]);
        assert_eq!(masters_from_slots(&out), None);
    }

    #[test]
    fn shards_go_round_robin_over_the_masters() {
        let m = masters_from_slots(&canned()).unwrap();
        let mut seed = 1u32;
        let names = place("crawl", 6, &m, || {
            // A fixed LCG: the test is reproducible.
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            seed
        });
        assert_eq!(names.len(), 6);
        for (j, n) in names.iter().enumerate() {
            assert!(n.starts_with(&format!("crawl:shard:{j}:")), "{n}");
            let owner = master_of(&m, slot_of_filter(n)).unwrap();
            assert_eq!(owner.id, m[j % 3].id, "shard {j} ({n})");
        }
    }

    #[test]
    fn shards_are_grouped_by_the_master_of_their_slot() {
        let m = masters_from_slots(&canned()).unwrap();
        // Masters a (10923-16000), b (5461-10922), c (0-5460, 16001-16383).
        let slots = [0, 6000, 16100, 11000, 5460, 10922, 12000];
        assert_eq!(
            group_by_master(&m, &slots),
            [vec![3, 6], vec![1, 5], vec![0, 2, 4]]
        );
        // Only two masters in use: two groups, none empty.
        assert_eq!(
            group_by_master(&m, &[100, 200, 7000]),
            [vec![2], vec![0, 1]]
        );
        // Outside a cluster (no masters): one group of every shard.
        assert_eq!(group_by_master(&[], &[1, 2, 3]), [vec![0, 1, 2]]);
        // A slot no master serves (a cluster mid-change) is a group of its
        // own, after the masters'.
        let partial = &m[..2];
        assert_eq!(group_by_master(partial, &[0, 11000]), [vec![1], vec![0]]);
        assert_eq!(group_by_master(&m, &[]), Vec::<Vec<usize>>::new());
    }

    #[test]
    fn without_a_cluster_the_first_tags_are_taken() {
        let mut tags = [7u32, 9].into_iter();
        let names = place("x", 2, &[], || tags.next().unwrap());
        assert_eq!(names, ["x:shard:0:00000007", "x:shard:1:00000009"]);
    }
}
