//! Items one per line: read from standard input, a file or the command
//! line in batches, and written back.

use std::io::{self, BufRead, BufReader, Read, Write};

/// Read buffer: big enough that a batch of short lines is usually already
/// in memory, so batches are full when input is fast and go out at once
/// when it is slow.
const BUFFER: usize = 1 << 20;

/// Lines of a byte stream, cut into batches. An item is a line without its
/// `\n` (and a `\r` before it); bytes need not be UTF-8.
pub struct Batches<R: Read> {
    reader: BufReader<R>,
    /// Bytes consumed so far (for progress).
    pub bytes: u64,
    eof: bool,
}

impl<R: Read> Batches<R> {
    pub fn new(inner: R) -> Self {
        Batches {
            reader: BufReader::with_capacity(BUFFER, inner),
            bytes: 0,
            eof: false,
        }
    }
}

/// Where items come from, a batch at a time.
pub trait Items {
    /// Fills `batch` (cleared first) with up to `max` items; `false` when
    /// the items are exhausted and `batch` is empty.
    fn next_batch(&mut self, batch: &mut Vec<Vec<u8>>, max: usize) -> io::Result<bool>;

    /// Bytes consumed so far, for progress (0 when unknown).
    fn bytes_read(&self) -> u64;
}

impl<R: Read> Items for Batches<R> {
    /// Fills `batch` (cleared first) with up to `max` items. Stops early,
    /// with at least one item, when the next line is not yet available
    /// (reading would wait for a slow writer): the caller gets to answer
    /// what it has. Returns `false` when the input is exhausted and `batch`
    /// is empty.
    fn next_batch(&mut self, batch: &mut Vec<Vec<u8>>, max: usize) -> io::Result<bool> {
        batch.clear();
        while batch.len() < max.max(1) && !self.eof {
            if !batch.is_empty() && self.reader.buffer().is_empty() {
                break;
            }
            let mut line = Vec::new();
            let n = self.reader.read_until(b'\n', &mut line)?;
            if n == 0 {
                self.eof = true;
                break;
            }
            self.bytes += n as u64;
            if line.last() == Some(&b'\n') {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
            }
            batch.push(line);
        }
        Ok(!batch.is_empty())
    }

    fn bytes_read(&self) -> u64 {
        self.bytes
    }
}

/// Items from the command line, else from standard input.
pub enum Source {
    Args(std::vec::IntoIter<Vec<u8>>),
    Stdin(Batches<io::Stdin>),
}

impl Source {
    pub fn new(args: Vec<std::ffi::OsString>) -> Source {
        if args.is_empty() {
            Source::Stdin(Batches::new(io::stdin()))
        } else {
            Source::Args(
                args.into_iter()
                    .map(|a| a.into_encoded_bytes())
                    .collect::<Vec<_>>()
                    .into_iter(),
            )
        }
    }
}

impl Items for Source {
    fn next_batch(&mut self, batch: &mut Vec<Vec<u8>>, max: usize) -> io::Result<bool> {
        match self {
            Source::Args(it) => {
                batch.clear();
                batch.extend(it.by_ref().take(max.max(1)));
                Ok(!batch.is_empty())
            }
            Source::Stdin(b) => b.next_batch(batch, max),
        }
    }

    fn bytes_read(&self) -> u64 {
        match self {
            Source::Args(_) => 0,
            Source::Stdin(b) => b.bytes,
        }
    }
}

/// Writes the items of `batch` whose `keep` is true, one per line, and
/// flushes, so that a pipeline sees each batch as soon as it is answered.
/// Returns how many were written.
pub fn write_kept(
    out: &mut impl Write,
    batch: &[Vec<u8>],
    keep: impl IntoIterator<Item = bool>,
) -> io::Result<usize> {
    let mut written = 0;
    for (item, keep) in batch.iter().zip(keep) {
        if keep {
            out.write_all(item)?;
            out.write_all(b"\n")?;
            written += 1;
        }
    }
    out.flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_strip_line_ends() {
        let mut b = Batches::new(&b"a\r\nb\n\nc"[..]);
        let mut batch = Vec::new();
        assert!(b.next_batch(&mut batch, 2).unwrap());
        assert_eq!(batch, vec![b"a".to_vec(), b"b".to_vec()]);
        assert!(b.next_batch(&mut batch, 10).unwrap());
        assert_eq!(batch, vec![b"".to_vec(), b"c".to_vec()]);
        assert!(!b.next_batch(&mut batch, 10).unwrap());
        assert_eq!(b.bytes, 7);
    }

    #[test]
    fn kept_items_are_written_in_order() {
        let batch = vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()];
        let mut out = Vec::new();
        assert_eq!(
            write_kept(&mut out, &batch, [true, false, true]).unwrap(),
            2
        );
        assert_eq!(out, b"a\nc\n");
    }
}
