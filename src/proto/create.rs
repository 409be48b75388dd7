//! Create-or-open (`lua/create.lua`), optionally adopting existing bitmaps.

use super::as_string;
use crate::error::unexpected;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::metadata::{field, generation_fields, Kind, FORMAT_VERSION};
use crate::request::Request;
use crate::scripts;
use crate::store::generation::Layout;
use crate::view::{Accept, View};
use redis::Value;

/// What a new filter looks like.
#[derive(Clone, Debug)]
pub(crate) struct Blueprint {
    pub kind: Kind,
    /// The new instance's id (used only if this call creates the filter).
    pub uid: String,
    /// Existing bitmaps to move into the first generation's blocks:
    /// (source key, block index).
    pub adopt: Vec<(String, u32)>,
    /// Kind parameters: stored at creation, compared on open.
    pub params: Vec<(&'static str, String)>,
    /// Further fields stored at creation but not compared (state).
    pub extra: Vec<(&'static str, String)>,
    /// The initial generations, oldest first: (layout, capacity).
    pub gens: Vec<(Layout, u64)>,
    /// The block keys allocated for this attempt with a lease, which the
    /// create script makes permanent (none until they are allocated).
    pub leased: Vec<String>,
}

/// Whether create-or-open created the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opened {
    /// This call created the filter.
    Created,
    /// The filter existed, with matching parameters.
    Existing,
}

pub(crate) fn request(keys: &Keys, bp: &Blueprint) -> Request {
    let mut time_fields = vec![field::CREATED_AT.to_string()];
    let mut pairs: Vec<(String, String)> = vec![
        (field::FORMAT.into(), FORMAT_VERSION.to_string()),
        (field::KIND.into(), bp.kind.as_str().into()),
        (field::UID.into(), bp.uid.clone()),
        (field::EPOCH.into(), "0".into()),
        (field::NEXT_SEQ.into(), bp.gens.len().to_string()),
        (
            field::GENS.into(),
            (0..bp.gens.len())
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
    ];
    pairs.extend(bp.params.iter().map(|(f, v)| ((*f).to_string(), v.clone())));
    pairs.extend(bp.extra.iter().map(|(f, v)| ((*f).to_string(), v.clone())));
    for (seq, (layout, cap)) in bp.gens.iter().enumerate() {
        pairs.extend(generation_fields(seq as u64, layout, *cap));
        time_fields.push(field::gen(seq as u64, field::G_CREATED_AT));
    }
    let mut key_list = vec![keys.meta().to_string()];
    key_list.extend(bp.adopt.iter().map(|(src, _)| src.clone()));
    key_list.extend(bp.adopt.iter().map(|(_, b)| keys.block(&bp.uid, 0, *b)));
    key_list.push(keys.fence());
    key_list.extend(bp.leased.iter().cloned());
    let mut cmd = scripts::CREATE.invoke(&key_list);
    cmd.arg(bp.adopt.len()).arg(time_fields.len());
    for f in &time_fields {
        cmd.arg(f);
    }
    for (f, v) in &pairs {
        cmd.arg(f).arg(v);
    }
    let mut req = Request::new();
    req.script(&scripts::CREATE, cmd);
    req
}

/// The view the script created or found, checked against what was asked.
pub(crate) fn decode(
    keys: &Keys,
    accept: Accept,
    bp: &Blueprint,
    reply: redis::RedisResult<Value>,
) -> Result<(View, Opened)> {
    let v = reply?;
    let Value::Array(parts) = v else {
        return Err(unexpected("create script", &v));
    };
    let mut parts = parts.into_iter();
    let status = parts
        .next()
        .as_ref()
        .and_then(as_string)
        .unwrap_or_default();
    let a = parts.next().unwrap_or(Value::Nil);
    let b = parts.next().unwrap_or(Value::Nil);
    match status.as_str() {
        "wrongtype" => Err(Error::WrongType {
            key: keys.meta().to_string(),
            found: as_string(&a).unwrap_or_default(),
            expected: "hash",
        }),
        // The adoption checked its sources before; they changed since.
        "badsource" => {
            let key = as_string(&a).unwrap_or_default();
            match as_string(&b).unwrap_or_default().as_str() {
                "none" => Err(Error::NotAdoptable {
                    key,
                    reason: "it was deleted while the adoption ran".into(),
                }),
                found => Err(Error::WrongType {
                    key,
                    found: found.to_string(),
                    expected: "string (a legacy Bloom-filter bitmap)",
                }),
            }
        }
        // A block allocated for this attempt lapsed or was evicted
        // before it could be published: nothing was written.
        "gone" => Err(Error::MissingData {
            name: keys.name().to_string(),
            keys: vec![as_string(&a).unwrap_or_default()],
        }),
        "taken" => Err(Error::NotAdoptable {
            key: as_string(&a).unwrap_or_default(),
            reason: format!(
                "the key a legacy bitmap would become exists already (a Redis {}): another \
                 client wrote it",
                as_string(&b).unwrap_or_default()
            ),
        }),
        "created" | "exists" => {
            let view = super::load::decode_hash(keys, accept, a, b)?;
            view.check_params(&bp.params)?;
            let how = if status == "created" {
                Opened::Created
            } else {
                Opened::Existing
            };
            Ok((view, how))
        }
        other => Err(Error::UnexpectedReply(format!(
            "create script status {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{fields, keys};

    fn blueprint() -> Blueprint {
        let view = crate::testkit::view_of("bloom", 1);
        Blueprint {
            kind: Kind::Bloom,
            uid: "0123456789abcdef".into(),
            adopt: vec![],
            params: view.policy.params(),
            extra: vec![],
            gens: vec![(view.gens[0].layout, 100)],
            leased: Vec::new(),
        }
    }

    fn hash_reply(status: &str) -> Value {
        let f = fields("bloom", 1, 0);
        let mut pairs = Vec::new();
        for (k, v) in f.raw {
            pairs.push(Value::BulkString(k.into_bytes()));
            pairs.push(Value::BulkString(v));
        }
        Value::Array(vec![
            Value::BulkString(status.into()),
            Value::Array(pairs),
            Value::BulkString(b"0123456789abcdef:0:0".to_vec()),
        ])
    }

    #[test]
    fn the_request_lists_every_field_and_the_time_fields() {
        let req = request(&keys("t"), &blueprint());
        let args = req.args(0);
        assert_eq!(
            &args[2..5],
            ["2", "rotabloom:{t}:meta", "rotabloom:{t}:fence"]
        );
        assert_eq!(&args[5..9], ["0", "2", "created_at", "gen.0.created_at"]);
        for pair in [
            ["kind", "bloom"],
            ["uid", "0123456789abcdef"],
            ["gens", "0"],
            ["backend", "bitmap"],
        ] {
            assert!(args.windows(2).any(|w| w == pair), "{pair:?}");
        }
    }

    #[test]
    fn created_exists_and_refusals_decode() {
        let accept = Accept::Any(crate::testkit::ALL);
        let (view, how) =
            decode(&keys("t"), accept, &blueprint(), Ok(hash_reply("created"))).unwrap();
        assert_eq!((view.kind, how), (Kind::Bloom, Opened::Created));
        let (_, how) = decode(&keys("t"), accept, &blueprint(), Ok(hash_reply("exists"))).unwrap();
        assert_eq!(how, Opened::Existing);
        let mut other = blueprint();
        other.params = vec![("capacity", "200".into())];
        assert!(matches!(
            decode(&keys("t"), accept, &other, Ok(hash_reply("exists"))),
            Err(Error::ParameterMismatch { ref field, .. }) if field == "capacity"
        ));
        let wrong = Value::Array(vec![
            Value::BulkString(b"wrongtype".to_vec()),
            Value::SimpleString("list".into()),
        ]);
        assert!(matches!(
            decode(&keys("t"), accept, &blueprint(), Ok(wrong)),
            Err(Error::WrongType { ref found, .. }) if found == "list"
        ));
        assert!(matches!(
            decode(
                &keys("t"),
                Accept::One(crate::circular::CODEC),
                &blueprint(),
                Ok(hash_reply("exists"))
            ),
            Err(Error::KindMismatch { .. })
        ));
    }
}
