//! The restore's machine: the file's header and metadata checked before
//! any Redis, then every block written under a lease, then the metadata
//! and fence published in one atomic step; on any failure, what it wrote
//! deleted again.

use crate::engine::dump::lease::Lease;
use crate::engine::dump::options::RestoreOptions;
use crate::engine::dump::summary::Summary;
use crate::error::{Error, Result};
use crate::keys::{FilterName, Keys};
use crate::machine::{Machine, Poll};
use crate::metadata::Fields;
use crate::proto::dump::{self as format, decode_int as int, Record, CHUNK, DUMP_VERSION};
use crate::proto::take_one;
use crate::request::Replies;
use crate::view::{Accept, View};
use std::collections::BTreeSet;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};

fn bad(reason: impl Into<String>) -> Error {
    Error::BadDump {
        reason: reason.into(),
    }
}

enum RestoreState {
    /// Whether a filter has the name already.
    Exists,
    /// A block allocated or written.
    Wrote,
    /// The lease of every block written renewed.
    Renewed,
    /// The metadata and fence.
    Publish,
    /// Deleting what was written (`i` of them so far), then failing.
    Undo(usize, Option<Error>),
}

pub(crate) struct RestoreMachine<'a, R> {
    reader: format::Reader<R>,
    name: FilterName,
    keys: Keys,
    view: View,
    state: RestoreState,
    /// Block keys written so far, deleted again on failure.
    written: Vec<String>,
    seen: BTreeSet<(u64, u32)>,
    /// The block being written: key, its length, the next offset allowed.
    current: Option<(String, u64, u64)>,
    data_bytes: u64,
    cancel: Option<&'a AtomicBool>,
    lease: Lease,
    /// The driver's time at this step ([`Machine::at`]); none yet, no
    /// renewal.
    now: Option<std::time::Instant>,
}

impl<'a, R: Read> RestoreMachine<'a, R> {
    /// Reads and checks the header and the metadata, before any Redis.
    /// `accept`: the kinds a restored filter may be (every kind this
    /// library knows, from the caller above the kinds).
    pub(crate) fn new(
        input: R,
        options: RestoreOptions<'a>,
        accept: Accept,
    ) -> Result<RestoreMachine<'a, R>> {
        RestoreMachine::to(input, options, options.name, accept)
    }

    /// [`new`](Self::new), restoring as `target` (a shard's name, which a
    /// sharded restore owns and cannot lend for as long as `options`).
    pub(crate) fn to(
        input: R,
        options: RestoreOptions<'a>,
        target: Option<&str>,
        accept: Accept,
    ) -> Result<RestoreMachine<'a, R>> {
        Lease::check(options.lease)?;
        let mut reader = format::Reader::new(input);
        let dumped_name = match reader.next_record()? {
            Record::Header {
                version: DUMP_VERSION,
                format: crate::metadata::FORMAT_VERSION,
                name,
            } => name,
            Record::Header {
                version, format, ..
            } => {
                return Err(bad(format!(
                    "dump version {version} of storage format {format}; this library reads dump version \
                     {DUMP_VERSION} of format {}",
                    crate::metadata::FORMAT_VERSION
                )))
            }
            _ => return Err(bad("the first record is not the header")),
        };
        let name = FilterName::new(target.unwrap_or(&dumped_name))?;
        let keys = Keys::new(name.clone());
        let Record::Meta(fields) = reader.next_record()? else {
            return Err(bad("the second record is not the metadata"));
        };
        let mut raw = std::collections::BTreeMap::new();
        for (k, v) in fields {
            let k = String::from_utf8(k).map_err(|_| bad("a metadata field name is not UTF-8"))?;
            raw.insert(k, v);
        }
        // A new instance: its own uid, so that no key of another instance
        // is ever reused (docs/FORMAT.md §5).
        raw.insert("uid".into(), crate::uid::new_uid().into_bytes());
        let fields = Fields {
            name: name.to_string(),
            raw,
        };
        let view = View::decode(fields, None, &keys.fence(), accept)
            .map_err(|e| bad(format!("its metadata is not valid: {e}")))?;
        if let Some(why) = view.gens.iter().find_map(|g| g.layout.store().undumpable()) {
            return Err(bad(format!(
                "it lists generations a dump cannot hold ({why})"
            )));
        }
        Ok(RestoreMachine {
            reader,
            name,
            keys,
            view,
            state: RestoreState::Exists,
            written: Vec::new(),
            seen: BTreeSet::new(),
            current: None,
            data_bytes: 0,
            cancel: options.cancel,
            lease: Lease::start(options.lease),
            now: None,
        })
    }

    /// The input back, once the machine is done with it.
    pub(crate) fn into_input(self) -> R {
        self.reader.into_inner()
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(Ordering::SeqCst))
    }

    fn expired(&self, keys: Vec<String>) -> Error {
        Error::RestoreExpired {
            name: self.name.to_string(),
            keys,
            lease_secs: self.lease.secs(),
        }
    }

    /// The next record's write, or the publication after the end record.
    fn next(&mut self) -> Result<Poll<Summary>> {
        let lease = self.lease.ms();
        loop {
            let before = self.reader.records;
            match self.reader.next_record()? {
                Record::Block { seq, block, len } => {
                    let key = self.block(seq, block, len)?;
                    self.current = Some((key.clone(), len, 0));
                    if len > 0 {
                        // Allocated whole first, as at creation: the data
                        // records then overwrite in place.
                        self.written.push(key.clone());
                        self.state = RestoreState::Wrote;
                        return Ok(Poll::Send(format::restore_write_request(
                            &key,
                            true,
                            len - 1,
                            b"\0",
                            lease,
                        )));
                    }
                }
                Record::Data { offset, bytes } => {
                    let Some((key, len, next)) = &mut self.current else {
                        return Err(bad("data before any block"));
                    };
                    let end = offset.checked_add(bytes.len() as u64);
                    if offset < *next || end.is_none_or(|e| e > *len) || bytes.len() as u64 > CHUNK
                    {
                        return Err(bad(format!("data at offset {offset} is out of place")));
                    }
                    *next = offset + bytes.len() as u64;
                    self.data_bytes += bytes.len() as u64;
                    self.state = RestoreState::Wrote;
                    return Ok(Poll::Send(format::restore_write_request(
                        key, false, offset, &bytes, lease,
                    )));
                }
                Record::End {
                    records,
                    data_bytes,
                } => {
                    self.end(before, records, data_bytes)?;
                    self.reader.expect_end()?;
                    let fields: Vec<(Vec<u8>, Vec<u8>)> = self
                        .view
                        .fields
                        .raw
                        .iter()
                        .map(|(k, v)| (k.clone().into_bytes(), v.clone()))
                        .collect();
                    self.state = RestoreState::Publish;
                    return Ok(Poll::Send(format::publish_request(
                        &self.keys,
                        &self.view.token(),
                        &fields,
                        &self.written,
                    )));
                }
                Record::Header { .. } | Record::Meta(_) => {
                    return Err(bad("a second header or metadata record"));
                }
            }
        }
    }

    /// After a write: the leases of all blocks renewed when a third of
    /// the lease has passed (each write renews its own block's), else the
    /// next record.
    fn renew_or_next(&mut self) -> Result<Poll<Summary>> {
        let due = self.now.is_some_and(|now| self.lease.renewal_due(now));
        if !self.written.is_empty() && due {
            self.state = RestoreState::Renewed;
            return Ok(Poll::Send(format::refresh_request(
                &self.written,
                self.lease.ms(),
            )));
        }
        self.next()
    }

    /// Checks a block record against the metadata; returns its key under
    /// the new uid.
    fn block(&mut self, seq: u64, block: u32, len: u64) -> Result<String> {
        let g = self
            .view
            .gens
            .iter()
            .find(|g| g.seq == seq)
            .ok_or_else(|| {
                bad(format!(
                    "a block of generation {seq}, which the metadata does not list"
                ))
            })?;
        let full = g.layout.block_bits().div_ceil(8);
        let exact = g.layout.block_check() != crate::store::generation::BlockCheck::MayBeAbsent;
        if block >= g.layout.blocks || !self.seen.insert((seq, block)) {
            return Err(bad(format!(
                "block {block} of generation {seq} is out of place"
            )));
        }
        if len > full || (exact && len != full) {
            return Err(bad(format!(
                "block {block} of generation {seq} holds {len} bytes; its generation's blocks hold {full}"
            )));
        }
        Ok(self.keys.block(&self.view.uid, seq, block))
    }

    /// Checks the end record against what was read.
    fn end(&self, before: u64, records: u64, total: u64) -> Result<()> {
        if records != before || total != self.data_bytes {
            return Err(bad(format!(
                "the end record counts {records} records and {total} bytes; the file has {before} and {}",
                self.data_bytes
            )));
        }
        let listed: u64 = self
            .view
            .gens
            .iter()
            .map(|g| u64::from(g.layout.blocks))
            .sum();
        if self.seen.len() as u64 != listed {
            return Err(bad(format!(
                "it holds {} of the {listed} blocks its metadata lists",
                self.seen.len()
            )));
        }
        Ok(())
    }

    /// Fails with `e` once what was written is deleted again, one key per
    /// call. A refusal for memory is OutOfMemory with the filter's size,
    /// as at creation; any error once the flag is set (the input's read
    /// cut short by the canceller, say) is the cancellation.
    fn fail(&mut self, e: Error) -> Result<Poll<Summary>> {
        let e = if self.cancelled() {
            Error::Cancelled {
                name: self.name.to_string(),
            }
        } else {
            let size = self
                .view
                .gens
                .iter()
                .map(|g| g.layout.bytes())
                .fold(0, u64::saturating_add);
            crate::engine::create::out_of_memory(self.name.as_str(), size, e)
        };
        self.undo(0, Some(e))
    }

    fn undo(&mut self, i: usize, e: Option<Error>) -> Result<Poll<Summary>> {
        match self.written.get(i) {
            Some(key) => {
                let req = crate::proto::dump::unlink(key);
                self.state = RestoreState::Undo(i + 1, e);
                Ok(Poll::Send(req))
            }
            None => Err(e.unwrap_or_else(|| Error::Internal("restore: no error to report".into()))),
        }
    }
}

impl<R: Read> Machine for RestoreMachine<'_, R> {
    type Output = Summary;

    fn at(&mut self, now: std::time::Instant) {
        self.now = Some(now);
        self.lease.at(now);
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Summary>> {
        let state = std::mem::replace(&mut self.state, RestoreState::Publish);
        // A cancelled restore stops before its next write, whatever the
        // reply; the publish step's reply and an undo run to their end.
        if self.cancelled()
            && matches!(
                state,
                RestoreState::Exists | RestoreState::Wrote | RestoreState::Renewed
            )
        {
            return self.fail(Error::Internal("cancelled".into()));
        }
        let result = match state {
            RestoreState::Exists if replies.is_none() => {
                self.state = RestoreState::Exists;
                return Ok(Poll::Send(crate::proto::dump::exists(self.keys.meta())));
            }
            RestoreState::Exists => match int(replies, "EXISTS")? {
                0 => self.next(),
                _ => {
                    return Err(Error::AlreadyExists {
                        name: self.name.to_string(),
                    })
                }
            },
            RestoreState::Wrote => take_one(replies)
                .and_then(format::decode_restore_write)
                .and_then(|wrote| match wrote {
                    format::Wrote::Len(_) => self.renew_or_next(),
                    format::Wrote::Gone => {
                        let key = self.current.as_ref().map(|c| c.0.clone());
                        Err(self.expired(key.into_iter().collect()))
                    }
                    format::Wrote::Exists => Err(Error::Internal(
                        "a block key of the restore's fresh uid exists already".into(),
                    )),
                }),
            RestoreState::Renewed => replies
                .ok_or_else(|| Error::Internal("a request's reply is missing".into()))
                .and_then(|r| format::decode_refresh(&self.written, r))
                .and_then(|gone| match gone.is_empty() {
                    true => self.next(),
                    false => Err(self.expired(gone)),
                }),
            RestoreState::Publish => {
                match format::decode_publish(self.name.as_str(), take_one(replies)?) {
                    Ok(format::Published::Done) => {
                        let mut s = Summary::of(self.name.as_str(), &self.view);
                        s.bytes = self.data_bytes;
                        return Ok(Poll::Ready(s));
                    }
                    Ok(format::Published::Exists) => Err(Error::AlreadyExists {
                        name: self.name.to_string(),
                    }),
                    Ok(format::Published::Gone(keys)) => Err(self.expired(keys)),
                    Err(e) => Err(e),
                }
            }
            RestoreState::Undo(i, e) => return self.undo(i, e),
        };
        result.or_else(|e| self.fail(e))
    }
}

#[cfg(test)]
mod tests;
