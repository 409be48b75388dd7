//! Reading a dump: the signature first, then one record at a time, each
//! checked against its CRC; and nothing after the end record.

use super::record::Record;
use super::{bad, MAGIC};
use crate::error::{Error, Result};
use std::io::Read;

/// The largest payload a reader accepts (a metadata record of 1025
/// generations is about 100 KiB).
const MAX_PAYLOAD: u32 = 16 << 20;

/// Reads records one at a time, checking the magic first and each
/// record's CRC; counts them for the `E` record's check.
pub struct Reader<R> {
    input: R,
    started: bool,
    magic: [u8; 8],
    /// Records read so far.
    pub records: u64,
}

impl<R: Read> Reader<R> {
    pub fn new(input: R) -> Reader<R> {
        Reader::with_magic(input, MAGIC)
    }

    /// A reader of files that start with `magic` (a sharded dump's).
    pub(crate) fn with_magic(input: R, magic: [u8; 8]) -> Reader<R> {
        Reader {
            input,
            started: false,
            magic,
            records: 0,
        }
    }

    /// The input back (a sharded dump's reader, from a shard's restore).
    pub(crate) fn into_inner(self) -> R {
        self.input
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
        let (tag, payload) = self.next_frame("a record, or the end record")?;
        let r = Record::decode(tag, &payload)?;
        self.records += 1;
        Ok(r)
    }

    /// The next record's type and payload, its checksum checked (`what`
    /// names the record expected, for a file that ends before it).
    pub(crate) fn next_frame(&mut self, what: &str) -> Result<(u8, Vec<u8>)> {
        if !self.started {
            let mut magic = [0u8; 8];
            self.fill(&mut magic, "the signature")?;
            if magic != self.magic {
                return Err(bad("it does not start with the rotabloom dump signature"));
            }
            self.started = true;
        }
        let mut head = [0u8; 5];
        self.fill(&mut head, what)?;
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
        Ok((head[0], payload))
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
}
