//! The dump file format, pure: records encoded into bytes and decoded from
//! a reader, each with its CRC-32 (docs/FORMAT.md §10); and the requests a
//! dump and a restore send. No Redis here.

use crate::error::{Error, Result};
use crate::exec::Request;
use crate::keys::Keys;
use crate::scripts;
use redis::Value;
use std::io::Read;

/// The first bytes of every dump file. The high first byte and the line
/// end catch a transfer that changed bytes (as PNG's signature does).
pub const MAGIC: [u8; 8] = *b"\x89RBDUMP\n";

/// The version of the dump format this library writes and reads.
pub const DUMP_VERSION: u32 = 1;

/// The most bytes a `D` record carries: one GETRANGE or SETRANGE of this
/// size is a small fraction of a millisecond of the server's time.
pub const CHUNK: u64 = 1 << 20;

/// The largest payload a reader accepts (a metadata record of 1025
/// generations is about 100 KiB).
const MAX_PAYLOAD: u32 = 16 << 20;

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

fn bad(reason: impl Into<String>) -> Error {
    Error::BadDump {
        reason: reason.into(),
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
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
        let payload = self.payload();
        let mut out = Vec::with_capacity(payload.len() + 9);
        out.push(self.tag());
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(&payload);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_be_bytes());
        out
    }

    fn decode(tag: u8, p: &[u8]) -> Result<Record> {
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
struct Cursor<'a> {
    p: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.p.len());
        let end = end.ok_or_else(|| bad("a record is shorter than its fields"))?;
        let s = &self.p[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(a))
    }
    fn bytes(&mut self) -> Result<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn rest(&mut self) -> &[u8] {
        let s = &self.p[self.at..];
        self.at = self.p.len();
        s
    }
}

/// Reads records one at a time, checking the magic first and each
/// record's CRC; counts them for the `E` record's check.
pub struct Reader<R> {
    input: R,
    started: bool,
    /// Records read so far.
    pub records: u64,
}

impl<R: Read> Reader<R> {
    pub fn new(input: R) -> Reader<R> {
        Reader {
            input,
            started: false,
            records: 0,
        }
    }

    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        self.input.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => bad(format!("truncated ({what} missing)")),
            _ => Error::Io {
                what: "reading the dump".into(),
                source: e,
            },
        })
    }

    /// The next record.
    pub fn next_record(&mut self) -> Result<Record> {
        if !self.started {
            let mut magic = [0u8; 8];
            self.fill(&mut magic, "the signature")?;
            if magic != MAGIC {
                return Err(bad("it does not start with the rotabloom dump signature"));
            }
            self.started = true;
        }
        let mut head = [0u8; 5];
        self.fill(&mut head, "a record, or the end record")?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        if len > MAX_PAYLOAD {
            return Err(bad(format!("a record claims {len} bytes")));
        }
        let mut payload = vec![0u8; len as usize];
        self.fill(&mut payload, "the rest of a record")?;
        let mut crc = [0u8; 4];
        self.fill(&mut crc, "a record's checksum")?;
        let mut h = crc32fast::Hasher::new();
        h.update(&head);
        h.update(&payload);
        if h.finalize() != u32::from_be_bytes(crc) {
            return Err(bad(format!(
                "checksum mismatch in record {} (type {:?}): the file is damaged",
                self.records + 1,
                head[0] as char
            )));
        }
        let r = Record::decode(head[0], &payload)?;
        self.records += 1;
        Ok(r)
    }

    /// After the `E` record: the input must end there (§10.1: nothing
    /// follows it). Bytes after it are a file glued to another, or one
    /// whose end record is not its end: refused.
    pub fn expect_end(&mut self) -> Result<()> {
        let mut byte = [0u8; 1];
        loop {
            return match self.input.read(&mut byte) {
                Ok(0) => Ok(()),
                Ok(_) => Err(bad("bytes follow the end record")),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => Err(Error::Io {
                    what: "reading the dump".into(),
                    source,
                }),
            };
        }
    }
}

/// `GETRANGE` of `len` bytes of `key` from `offset`, and `STRLEN` first
/// when `offset` is 0.
pub(crate) fn read_request(key: &str, offset: u64, len: u64) -> Request {
    Request::new().cmd(
        redis::cmd("GETRANGE")
            .arg(key)
            .arg(offset)
            .arg(offset + len.max(1) - 1)
            .clone(),
    )
}

/// The bytes of a GETRANGE reply.
pub(crate) fn decode_bytes(v: Value) -> Result<Vec<u8>> {
    match v {
        Value::BulkString(b) => Ok(b),
        Value::Nil => Ok(Vec::new()),
        other => Err(super::unexpected("GETRANGE", &other)),
    }
}

/// `SETRANGE key offset bytes`.
pub(crate) fn write_request(key: &str, offset: u64, bytes: &[u8]) -> Request {
    Request::new().cmd(
        redis::cmd("SETRANGE")
            .arg(key)
            .arg(offset)
            .arg(bytes)
            .clone(),
    )
}

/// A restore's write into block `key`: `new` allocates it (the key must
/// not exist), else it must still exist; either way its time to live is
/// set to `lease_ms` in the same atomic step (docs/FORMAT.md §10.3).
pub(crate) fn restore_write_request(
    key: &str,
    new: bool,
    offset: u64,
    bytes: &[u8],
    lease_ms: u64,
) -> Request {
    let mut cmd = scripts::RESTORE_WRITE.invoke(&[key]);
    cmd.arg(if new { "NEW" } else { "MORE" })
        .arg(offset)
        .arg(bytes)
        .arg(lease_ms);
    let mut req = Request::new();
    req.script(&scripts::RESTORE_WRITE, cmd);
    req
}

/// What a restore's write did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Wrote {
    /// Written; the block is this long.
    Len(u64),
    /// The block being allocated exists already.
    Exists,
    /// The block written before is gone (expired or evicted).
    Gone,
}

pub(crate) fn decode_restore_write(reply: redis::RedisResult<Value>) -> Result<Wrote> {
    match reply? {
        Value::Int(n) => Ok(Wrote::Len(u64::try_from(n).unwrap_or(0))),
        v => match super::as_string(&v).as_deref() {
            Some("EXISTS") => Ok(Wrote::Exists),
            Some("GONE") => Ok(Wrote::Gone),
            _ => Err(super::unexpected("restore-write script", &v)),
        },
    }
}

/// `PEXPIRE key lease_ms` for each block a restore wrote, in one round
/// trip: their lease renewed while the restore goes on.
pub(crate) fn refresh_request(keys: &[String], lease_ms: u64) -> Request {
    let mut req = Request::new();
    for k in keys {
        req.push(redis::cmd("PEXPIRE").arg(k).arg(lease_ms).clone(), None);
    }
    req
}

/// The keys whose `PEXPIRE` found nothing (`0`): they expired or were
/// evicted.
pub(crate) fn decode_refresh(
    keys: &[String],
    replies: Vec<redis::RedisResult<Value>>,
) -> Result<Vec<String>> {
    if replies.len() != keys.len() {
        return Err(Error::Internal(format!(
            "{} replies to {} PEXPIRE",
            replies.len(),
            keys.len()
        )));
    }
    let mut gone = Vec::new();
    for (k, r) in keys.iter().zip(replies) {
        match r? {
            Value::Int(1) => {}
            Value::Int(0) => gone.push(k.clone()),
            v => return Err(super::unexpected("PEXPIRE", &v)),
        }
    }
    Ok(gone)
}

/// The restore's last step: the metadata and the fence, written if no
/// filter has the name and every block written is still there; the
/// blocks' time to live removed in the same step.
pub(crate) fn publish_request(
    keys: &Keys,
    fence: &str,
    fields: &[(Vec<u8>, Vec<u8>)],
    blocks: &[String],
) -> Request {
    let mut names = vec![keys.meta().to_string(), keys.fence()];
    names.extend(blocks.iter().cloned());
    let mut cmd = scripts::RESTORE.invoke(&names);
    cmd.arg(fence);
    for (k, v) in fields {
        cmd.arg(k.as_slice()).arg(v.as_slice());
    }
    let mut req = Request::new();
    req.script(&scripts::RESTORE, cmd);
    req
}

/// What the publish step did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Published {
    Done,
    /// A filter has the name.
    Exists,
    /// These blocks expired or were evicted before it.
    Gone(Vec<String>),
}

pub(crate) fn decode_publish(name: &str, reply: redis::RedisResult<Value>) -> Result<Published> {
    let v = reply.map_err(|e| Error::from_script(name, e))?;
    if let Value::Array(items) = &v {
        let words: Vec<String> = items.iter().filter_map(super::as_string).collect();
        if let [first, keys @ ..] = &words[..] {
            if first == "GONE" && words.len() == items.len() {
                return Ok(Published::Gone(keys.to_vec()));
            }
        }
        return Err(super::unexpected("restore script", &v));
    }
    match super::as_string(&v).as_deref() {
        Some("OK") => Ok(Published::Done),
        Some("EXISTS") => Ok(Published::Exists),
        _ => Err(super::unexpected("restore script", &v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Record> {
        vec![
            Record::Header {
                version: 1,
                format: 1,
                name: "crawl".into(),
            },
            Record::Meta(vec![(b"kind".to_vec(), b"bloom".to_vec())]),
            Record::Block {
                seq: 3,
                block: 1,
                len: 16,
            },
            Record::Data {
                offset: 8,
                bytes: vec![1, 2, 3],
            },
            Record::End {
                records: 4,
                data_bytes: 3,
            },
        ]
    }

    #[test]
    fn records_round_trip() {
        let mut file = MAGIC.to_vec();
        for r in all() {
            file.extend(r.encode());
        }
        let mut reader = Reader::new(&file[..]);
        for r in all() {
            assert_eq!(reader.next_record().unwrap(), r);
        }
        assert_eq!(reader.records, 5);
        assert!(matches!(
            reader.next_record(),
            Err(Error::BadDump { reason }) if reason.contains("truncated")
        ));
    }

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

    #[test]
    fn damage_is_found() {
        let mut file = MAGIC.to_vec();
        for r in all() {
            file.extend(r.encode());
        }
        // A flipped bit in the data record's bytes.
        let at = file.len() - 30;
        file[at] ^= 1;
        let mut reader = Reader::new(&file[..]);
        let e = (0..5).find_map(|_| reader.next_record().err()).unwrap();
        assert!(e.to_string().contains("checksum mismatch"), "{e}");
        // Not a dump at all.
        let e = Reader::new(&b"hello world"[..]).next_record().unwrap_err();
        assert!(e.to_string().contains("signature"), "{e}");
        // An unknown record type, with a good checksum.
        let mut rec = vec![b'Z', 0, 0, 0, 0];
        rec.extend(crc32fast::hash(&rec).to_be_bytes());
        let mut file = MAGIC.to_vec();
        file.extend(rec);
        let e = Reader::new(&file[..]).next_record().unwrap_err();
        assert!(e.to_string().contains("unknown record type"), "{e}");
    }

    #[test]
    fn requests_and_replies() {
        let r = read_request("k", 0, 4);
        assert_eq!(r.args(0), ["GETRANGE", "k", "0", "3"]);
        let w = write_request("k", 5, b"ab");
        assert_eq!(w.args(0), ["SETRANGE", "k", "5", "ab"]);
        assert_eq!(decode_bytes(Value::Nil).unwrap(), Vec::<u8>::new());
        assert_eq!(
            decode_publish("f", Ok(Value::SimpleString("OK".into()))).unwrap(),
            Published::Done
        );
        assert_eq!(
            decode_publish("f", Ok(Value::BulkString(b"EXISTS".to_vec()))).unwrap(),
            Published::Exists
        );
        let gone = Value::Array(vec![
            Value::BulkString(b"GONE".to_vec()),
            Value::BulkString(b"k1".to_vec()),
        ]);
        assert_eq!(
            decode_publish("f", Ok(gone)).unwrap(),
            Published::Gone(vec!["k1".into()])
        );
        assert!(decode_publish("f", Ok(Value::Int(1))).is_err());
        assert!(decode_publish("f", Ok(Value::Array(vec![]))).is_err());
    }

    #[test]
    fn nothing_may_follow_the_end_record() {
        let mut file = MAGIC.to_vec();
        for r in all() {
            file.extend(r.encode());
        }
        let mut reader = Reader::new(&file[..]);
        for _ in all() {
            reader.next_record().unwrap();
        }
        reader.expect_end().unwrap();
        // One byte more, or a second dump glued on: refused.
        for extra in [&b"\n"[..], &file[..]] {
            let mut longer = file.clone();
            longer.extend_from_slice(extra);
            let mut reader = Reader::new(&longer[..]);
            for _ in all() {
                reader.next_record().unwrap();
            }
            let e = reader.expect_end().unwrap_err();
            assert!(
                matches!(&e, Error::BadDump { reason } if reason.contains("follow the end record")),
                "{e}"
            );
        }
    }

    #[test]
    fn a_restore_writes_with_a_lease_and_renews_it() {
        let w = restore_write_request("b", true, 9, b"\0", 60_000);
        let args = w.args(0);
        assert_eq!(args[0], "EVALSHA");
        assert_eq!(args[1], scripts::RESTORE_WRITE.sha());
        assert_eq!(&args[2..], ["1", "b", "NEW", "9", "\0", "60000"]);
        let w = restore_write_request("b", false, 0, b"xy", 5);
        assert_eq!(&w.args(0)[4..], ["MORE", "0", "xy", "5"]);
        assert_eq!(
            decode_restore_write(Ok(Value::Int(10))).unwrap(),
            Wrote::Len(10)
        );
        assert_eq!(
            decode_restore_write(Ok(Value::SimpleString("GONE".into()))).unwrap(),
            Wrote::Gone
        );
        assert_eq!(
            decode_restore_write(Ok(Value::BulkString(b"EXISTS".to_vec()))).unwrap(),
            Wrote::Exists
        );
        assert!(decode_restore_write(Ok(Value::Nil)).is_err());

        let keys = vec!["a".to_string(), "b".to_string()];
        let r = refresh_request(&keys, 1000);
        assert_eq!(
            (r.len(), r.args(1)),
            (2, vec!["PEXPIRE".to_string(), "b".into(), "1000".into()])
        );
        assert_eq!(
            decode_refresh(&keys, vec![Ok(Value::Int(1)), Ok(Value::Int(0))]).unwrap(),
            ["b"]
        );
        assert!(decode_refresh(&keys, vec![Ok(Value::Int(1))]).is_err());

        let p = publish_request(
            &Keys::new(crate::keys::FilterName::new("f").unwrap()),
            "u:0:0",
            &[(b"kind".to_vec(), b"bloom".to_vec())],
            &keys,
        );
        assert_eq!(
            &p.args(0)[2..],
            [
                "4",
                "rotabloom:{f}:meta",
                "rotabloom:{f}:fence",
                "a",
                "b",
                "u:0:0",
                "kind",
                "bloom"
            ]
        );
    }
}
