//! A dump's records: each encoded as tag, payload length, payload and
//! CRC-32, and its payload decoded back (docs/FORMAT.md §10).

use super::bad;
use crate::error::Result;

/// One record of a dump.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// `H`, first: the dump format version, the storage format version
    /// of the metadata, the filter's name.
    Header {
        version: u32,
        format: u32,
        name: String,
    },
    /// `M`, second: every field of the metadata hash.
    Meta(Vec<(Vec<u8>, Vec<u8>)>),
    /// `K`: a block follows, of generation `seq`, `len` bytes long (0: the
    /// key did not exist).
    Block { seq: u64, block: u32, len: u64 },
    /// `D`: bytes of the last block from `offset`; bytes no `D` record
    /// covers are zero.
    Data { offset: u64, bytes: Vec<u8> },
    /// `E`, last: how many records came before it, and how many bytes
    /// the `D` records carried.
    End { records: u64, data_bytes: u64 },
}

/// A record as written (§10.1): `tag`, the payload's length (u32,
/// big-endian), the payload, then the CRC-32 of those three. Sharded
/// dumps (§11.7) frame their records the same way.
pub(crate) fn frame(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 9);
    out.push(tag);
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

pub(super) fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

impl Record {
    fn tag(&self) -> u8 {
        match self {
            Record::Header { .. } => b'H',
            Record::Meta(_) => b'M',
            Record::Block { .. } => b'K',
            Record::Data { .. } => b'D',
            Record::End { .. } => b'E',
        }
    }

    fn payload(&self) -> Vec<u8> {
        let mut p = Vec::new();
        match self {
            Record::Header {
                version,
                format,
                name,
            } => {
                p.extend_from_slice(&version.to_be_bytes());
                p.extend_from_slice(&format.to_be_bytes());
                p.extend_from_slice(name.as_bytes());
            }
            Record::Meta(fields) => {
                p.extend_from_slice(&(fields.len() as u32).to_be_bytes());
                for (k, v) in fields {
                    put_bytes(&mut p, k);
                    put_bytes(&mut p, v);
                }
            }
            Record::Block { seq, block, len } => {
                p.extend_from_slice(&seq.to_be_bytes());
                p.extend_from_slice(&block.to_be_bytes());
                p.extend_from_slice(&len.to_be_bytes());
            }
            Record::Data { offset, bytes } => {
                p.extend_from_slice(&offset.to_be_bytes());
                p.extend_from_slice(bytes);
            }
            Record::End {
                records,
                data_bytes,
            } => {
                p.extend_from_slice(&records.to_be_bytes());
                p.extend_from_slice(&data_bytes.to_be_bytes());
            }
        }
        p
    }

    /// The record as written: tag, payload length (u32, big-endian),
    /// payload, then the CRC-32 of those three.
    pub fn encode(&self) -> Vec<u8> {
        frame(self.tag(), &self.payload())
    }

    pub(super) fn decode(tag: u8, p: &[u8]) -> Result<Record> {
        let mut c = Cursor { p, at: 0 };
        let r = match tag {
            b'H' => Record::Header {
                version: c.u32()?,
                format: c.u32()?,
                name: String::from_utf8(c.rest().to_vec())
                    .map_err(|_| bad("the filter name is not UTF-8"))?,
            },
            b'M' => {
                let n = c.u32()?;
                let mut fields = Vec::new();
                for _ in 0..n {
                    let k = c.bytes()?;
                    let v = c.bytes()?;
                    fields.push((k, v));
                }
                Record::Meta(fields)
            }
            b'K' => Record::Block {
                seq: c.u64()?,
                block: c.u32()?,
                len: c.u64()?,
            },
            b'D' => Record::Data {
                offset: c.u64()?,
                bytes: c.rest().to_vec(),
            },
            b'E' => Record::End {
                records: c.u64()?,
                data_bytes: c.u64()?,
            },
            other => return Err(bad(format!("unknown record type {other:#04x}"))),
        };
        if c.at != p.len() {
            return Err(bad(format!(
                "record {:?} has {} bytes too many",
                tag as char,
                p.len() - c.at
            )));
        }
        Ok(r)
    }
}

/// Reads a payload's fields in order.
pub(super) struct Cursor<'a> {
    pub(super) p: &'a [u8],
    pub(super) at: usize,
}

impl Cursor<'_> {
    pub(super) fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.p.len());
        let end = end.ok_or_else(|| bad("a record is shorter than its fields"))?;
        let s = &self.p[self.at..end];
        self.at = end;
        Ok(s)
    }
    pub(super) fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(super) fn u64(&mut self) -> Result<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(a))
    }
    pub(super) fn bytes(&mut self) -> Result<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    pub(super) fn rest(&mut self) -> &[u8] {
        let s = &self.p[self.at..];
        self.at = self.p.len();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_bytes_of_a_record() {
        // docs/FORMAT.md §10 gives this record as an example.
        let r = Record::Block {
            seq: 0,
            block: 0,
            len: 8,
        };
        let bytes = r.encode();
        assert_eq!(&bytes[..5], b"K\0\0\0\x14");
        assert_eq!(bytes.len(), 5 + 20 + 4);
        assert_eq!(
            u32::from_be_bytes(bytes[25..].try_into().unwrap()),
            crc32fast::hash(&bytes[..25])
        );
    }
}
