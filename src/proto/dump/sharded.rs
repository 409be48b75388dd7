//! The records of a sharded dump (docs/FORMAT.md §11.7): the root, then
//! each shard's own dump of §10 carried in chunks, then the end. Framed
//! as §10.1's records, behind a signature of their own, so that a reader
//! of §10 alone refuses the file instead of restoring part of it.

use super::bad;
use super::record::{frame, put_bytes, Cursor};
use crate::error::Result;

/// The first bytes of a sharded dump: not [`MAGIC`](super::MAGIC), which
/// a reader of unsharded dumps requires.
pub const SHARDED_MAGIC: [u8; 8] = *b"\x89RBSHRD\n";

/// The version of the sharded dump format.
pub const SHARDED_DUMP_VERSION: u32 = 1;

/// One record of a sharded dump.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// `R`, first: what the root record holds.
    Root {
        version: u32,
        shards: u32,
        kind: String,
        capacity: u64,
        name: String,
    },
    /// `S`: shard `index`'s dump follows; `name` is its name when dumped.
    Shard { index: u32, name: String },
    /// `C`: the next bytes (at most 1 MiB) of the current shard's dump.
    Chunk(Vec<u8>),
    /// `Z`: the current shard's dump ended, `bytes` long.
    ShardEnd { bytes: u64 },
    /// `E`, last: records before it, and the shards given.
    End { records: u64, shards: u32 },
}

impl Frame {
    /// What the record is, for a message.
    pub fn what(&self) -> String {
        match self {
            Frame::Root { .. } => "the root record".into(),
            Frame::Shard { index, .. } => format!("the record of shard {index}"),
            Frame::Chunk(_) => "a chunk of a shard's dump".into(),
            Frame::ShardEnd { .. } => "a shard's end record".into(),
            Frame::End { .. } => "the end record".into(),
        }
    }

    /// The record as written (§10.1's framing).
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Vec::new();
        let tag = match self {
            Frame::Root {
                version,
                shards,
                kind,
                capacity,
                name,
            } => {
                p.extend_from_slice(&version.to_be_bytes());
                p.extend_from_slice(&shards.to_be_bytes());
                put_bytes(&mut p, kind.as_bytes());
                p.extend_from_slice(&capacity.to_be_bytes());
                p.extend_from_slice(name.as_bytes());
                b'R'
            }
            Frame::Shard { index, name } => {
                p.extend_from_slice(&index.to_be_bytes());
                p.extend_from_slice(name.as_bytes());
                b'S'
            }
            Frame::Chunk(bytes) => {
                p.extend_from_slice(bytes);
                b'C'
            }
            Frame::ShardEnd { bytes } => {
                p.extend_from_slice(&bytes.to_be_bytes());
                b'Z'
            }
            Frame::End { records, shards } => {
                p.extend_from_slice(&records.to_be_bytes());
                p.extend_from_slice(&shards.to_be_bytes());
                b'E'
            }
        };
        frame(tag, &p)
    }

    /// Decodes the payload `p` of a record of type `tag`.
    pub fn decode(tag: u8, p: &[u8]) -> Result<Frame> {
        let mut c = Cursor { p, at: 0 };
        let text = |b: Vec<u8>, what: &str| {
            String::from_utf8(b).map_err(|_| bad(format!("the {what} is not UTF-8")))
        };
        let f = match tag {
            b'R' => Frame::Root {
                version: c.u32()?,
                shards: c.u32()?,
                kind: text(c.bytes()?, "kind")?,
                capacity: c.u64()?,
                name: text(c.rest().to_vec(), "filter name")?,
            },
            b'S' => Frame::Shard {
                index: c.u32()?,
                name: text(c.rest().to_vec(), "shard name")?,
            },
            b'C' => Frame::Chunk(c.rest().to_vec()),
            b'Z' => Frame::ShardEnd { bytes: c.u64()? },
            b'E' => Frame::End {
                records: c.u64()?,
                shards: c.u32()?,
            },
            other => {
                return Err(bad(format!(
                    "unknown record type {other:#04x} in a sharded dump"
                )))
            }
        };
        if c.at != p.len() {
            return Err(bad(format!(
                "record {:?} has {} bytes too many",
                tag as char,
                p.len() - c.at
            )));
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::dump::Reader;

    #[test]
    fn frames_read_back_as_written() {
        let frames = vec![
            Frame::Root {
                version: 1,
                shards: 2,
                kind: "bloom".into(),
                capacity: 600,
                name: "crawl".into(),
            },
            Frame::Shard {
                index: 0,
                name: "crawl:shard:0:0a1b2c3d".into(),
            },
            Frame::Chunk(vec![1, 2, 3]),
            Frame::ShardEnd { bytes: 3 },
            Frame::End {
                records: 4,
                shards: 2,
            },
        ];
        let mut file = SHARDED_MAGIC.to_vec();
        for f in &frames {
            file.extend(f.encode());
        }
        let mut r = Reader::with_magic(&file[..], SHARDED_MAGIC);
        for f in &frames {
            let (tag, p) = r.next_frame("a record").unwrap();
            assert_eq!(&Frame::decode(tag, &p).unwrap(), f);
        }
        r.expect_end().unwrap();
    }

    #[test]
    fn golden_bytes_of_a_shard_end() {
        // docs/FORMAT.md §11.7 gives this record as an example.
        let bytes = Frame::ShardEnd { bytes: 8 }.encode();
        assert_eq!(&bytes[..5], b"Z\0\0\0\x08");
        assert_eq!(&bytes[5..13], &8u64.to_be_bytes());
        assert_eq!(
            u32::from_be_bytes(bytes[13..].try_into().unwrap()),
            crc32fast::hash(&bytes[..13])
        );
    }

    #[test]
    fn an_unsharded_reader_refuses_a_sharded_dump() {
        let file = [
            &SHARDED_MAGIC[..],
            &Frame::End {
                records: 0,
                shards: 0,
            }
            .encode(),
        ]
        .concat();
        let e = Reader::new(&file[..]).next_record().unwrap_err();
        assert!(e.to_string().contains("signature"), "{e}");
    }
}
