//! Restoring a sharded dump (docs/FORMAT.md §11.7): the filter re-created
//! by the sharded creation's protocol (claim the name, make every shard,
//! publish; undo on a failure), each shard made by the ordinary restore's
//! machine from its part of the file, and published only once the file's
//! end record is checked: all or nothing. One machine, driven by the
//! blocking and the async restore alike.

mod container;

use super::dump::{add, empty};
use super::{ShardPlan, DEFAULT_CREATE_LEASE};
use crate::engine::dump::options::RestoreOptions;
use crate::engine::dump::restore::RestoreMachine;
use crate::engine::dump::summary::Summary;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::machine::{Machine, Poll};
use crate::proto::dump::{decode_int, Frame, Reader, SHARDED_DUMP_VERSION, SHARDED_MAGIC};
use crate::proto::shard::root::{check_root, Root, State};
use crate::proto::shard::script::{self, Claim};
use crate::request::Replies;
use container::{bad, end, in_shard, ShardInput};
use std::io::Read;

/// A machine that drops one shard made by the restore.
type ShardDrop = Box<dyn Machine<Output = bool> + Send>;

enum Step<'a, R> {
    /// Whether a filter has the name already.
    Exists(Reader<R>),
    /// The cluster's masters, to place the shards.
    Slots(Reader<R>),
    /// The claim of the root.
    Claim(Reader<R>),
    /// Shard `j` being restored.
    Shard(u32, Box<RestoreMachine<'a, ShardInput<R>>>),
    /// The root published.
    Publish,
    /// Undoing: the shards made dropped one by one (`i` so far, the
    /// current one's drop running), then the root deleted, then `failure`.
    Undo(usize, Option<ShardDrop>, Option<Error>),
    /// The root deleted, then `failure`.
    Unclaim(Option<Error>),
    Over,
}

/// The restore of a sharded dump (see
/// [`restore_with`](crate::dump::restore_with)).
pub(crate) struct ShardedRestore<'a, R> {
    options: RestoreOptions<'a>,
    plan: ShardPlan,
    meta: String,
    root: Option<Root>,
    /// The shards restored so far, dropped again on a failure.
    made: Vec<String>,
    total: Summary,
    step: Step<'a, R>,
}

impl<'a, R: Read> ShardedRestore<'a, R> {
    /// Reads and checks the root record, before any Redis. `input` starts
    /// at the container's signature.
    pub(crate) fn new(input: R, options: RestoreOptions<'a>) -> Result<ShardedRestore<'a, R>> {
        let mut reader = Reader::with_magic(input, SHARDED_MAGIC);
        let (tag, p) = reader.next_frame("the root record")?;
        reader.records += 1;
        let Frame::Root {
            version,
            shards,
            kind,
            capacity,
            name: dumped,
        } = Frame::decode(tag, &p)?
        else {
            return Err(bad("the root record is not first"));
        };
        if version != SHARDED_DUMP_VERSION {
            return Err(bad(format!(
                "sharded dump version {version}: this reader knows {SHARDED_DUMP_VERSION}"
            )));
        }
        let kind: crate::metadata::Kind = kind
            .parse()
            .map_err(|_| bad(format!("the root's kind {kind:.40?} is not a kind")))?;
        let name = options.target().map_or(dumped, str::to_string);
        let meta = Keys::new(check_root(&name, shards)?).meta().to_string();
        Ok(ShardedRestore {
            options,
            total: empty(&name, kind),
            plan: ShardPlan {
                name,
                shards,
                kind,
                capacity,
                lease: DEFAULT_CREATE_LEASE,
            },
            meta,
            root: None,
            made: Vec::new(),
            step: Step::Exists(reader),
        })
    }

    fn uid(&self) -> Result<&str> {
        self.root
            .as_ref()
            .map(|r| r.uid.as_str())
            .ok_or_else(|| Error::Internal("sharded restore: no root".into()))
    }

    /// Shard `j`'s restore started from its part of the file, or (past
    /// the last) the end record checked and the root published.
    fn shard(&mut self, j: u32, mut reader: Reader<R>) -> Result<Poll<Summary>> {
        let shards = self.plan.shards;
        if j == shards {
            end(&mut reader, shards)?;
            let publish = script::transition(
                &self.meta,
                self.uid()?,
                Some(State::Creating),
                Some(State::Ready),
            );
            self.step = Step::Publish;
            return Ok(Poll::Send(publish));
        }
        let (tag, p) = reader
            .next_frame(&format!("shard {j} of {shards}"))
            .map_err(|e| in_shard(j, shards, e))?;
        reader.records += 1;
        match Frame::decode(tag, &p)? {
            Frame::Shard { index, .. } if index == j => {}
            other => {
                return Err(bad(format!(
                    "shard {j} of {shards} missing: found {}",
                    other.what()
                )))
            }
        }
        let sub = self
            .root
            .as_ref()
            .and_then(|r| r.shards.get(j as usize))
            .ok_or_else(|| Error::Internal(format!("sharded restore: no shard {j}")))?;
        let input = ShardInput::new(reader);
        let m = RestoreMachine::to(input, self.options, Some(sub), crate::any::ACCEPT_ANY)
            .map_err(|e| in_shard(j, shards, e))?;
        self.step = Step::Shard(j, Box::new(m));
        self.step(None)
    }

    /// Shard `j`'s restore over (`restored`): the next shard, or the error.
    fn shard_over(
        &mut self,
        j: u32,
        m: RestoreMachine<'a, ShardInput<R>>,
        restored: Result<Summary>,
    ) -> Result<Poll<Summary>> {
        let shards = self.plan.shards;
        let mut input = m.into_input();
        let s = match (restored, input.failure.take()) {
            (_, Some(e)) | (Err(e), None) => return Err(in_shard(j, shards, e)),
            (Ok(s), None) => s,
        };
        // Published: ours to drop from here on, whatever fails next.
        if let Some(sub) = self.root.as_ref().and_then(|r| r.shards.get(j as usize)) {
            self.made.push(sub.clone());
        }
        if !input.ended {
            return Err(bad(format!(
                "shard {j} of {shards}: its end record missing after its dump"
            )));
        }
        if s.kind != self.plan.kind {
            return Err(bad(format!(
                "shard {j} is {}, the root says {}",
                s.kind.with_article(),
                self.plan.kind
            )));
        }
        add(&mut self.total, &s);
        self.shard(j + 1, input.outer)
    }

    /// Undo after `e`: what was made is dropped, the root deleted, then
    /// `e` returned. Before the claim there is nothing to undo.
    fn fail(&mut self, e: Error) -> Result<Poll<Summary>> {
        if self.root.is_none() {
            return Err(e);
        }
        self.undo(0, Some(e))
    }

    /// Drops made shard `i`, or (past the last) deletes the root.
    fn undo(&mut self, i: usize, e: Option<Error>) -> Result<Poll<Summary>> {
        match self.made.get(i) {
            Some(sub) => {
                let keys = Keys::new(crate::keys::FilterName::existing(sub)?);
                let drop: ShardDrop = Box::new(crate::any::unreadable_drop(keys));
                self.step = Step::Undo(i, Some(drop), e);
                self.step(None)
            }
            None => {
                let delete =
                    script::transition(&self.meta, self.uid()?, Some(State::Creating), None);
                self.step = Step::Unclaim(e);
                Ok(Poll::Send(delete))
            }
        }
    }

    fn advance(&mut self, step: Step<'a, R>, replies: Option<Replies>) -> Result<Poll<Summary>> {
        match step {
            Step::Exists(reader) if replies.is_none() => {
                self.step = Step::Exists(reader);
                Ok(Poll::Send(crate::proto::dump::exists(&self.meta)))
            }
            // Restoring never overwrites: a taken name fails before
            // anything is written.
            Step::Exists(reader) => match decode_int(replies, "EXISTS")? {
                0 => {
                    self.step = Step::Slots(reader);
                    Ok(Poll::Send(script::cluster_slots()))
                }
                _ => Err(Error::AlreadyExists {
                    name: self.plan.name.clone(),
                }),
            },
            Step::Slots(reader) => {
                let masters = super::root_io::decode_masters(replies.unwrap_or_default())?;
                let root = self.plan.root(&masters);
                let claim = self.plan.claim(&self.meta, &root);
                self.root = Some(root);
                self.step = Step::Claim(reader);
                Ok(Poll::Send(claim))
            }
            Step::Claim(reader) => {
                match script::decode_claim(&self.meta, replies.unwrap_or_default())? {
                    Claim::Claimed => self.shard(0, reader).or_else(|e| self.fail(e)),
                    // Taken since the check: not ours to undo.
                    Claim::Exists { .. } => {
                        self.root = None;
                        Err(Error::AlreadyExists {
                            name: self.plan.name.clone(),
                        })
                    }
                }
            }
            Step::Shard(j, mut m) => match m.step(replies) {
                Ok(Poll::Send(req)) => {
                    self.step = Step::Shard(j, m);
                    Ok(Poll::Send(req))
                }
                Ok(Poll::Ready(s)) => self.shard_over(j, *m, Ok(s)),
                Err(e) => self.shard_over(j, *m, Err(e)),
            }
            .or_else(|e| self.fail(e)),
            Step::Publish => match decode_int(replies, "publishing the root")? {
                1 => Ok(Poll::Ready(std::mem::replace(
                    &mut self.total,
                    empty(&self.plan.name, self.plan.kind),
                ))),
                // The claim's lease ran out and another creator cleaned up.
                _ => self.fail(Error::Contention {
                    name: self.plan.name.clone(),
                    retries: 0,
                }),
            },
            Step::Undo(i, Some(mut drop), e) => match drop.step(replies)? {
                Poll::Send(req) => {
                    self.step = Step::Undo(i, Some(drop), e);
                    Ok(Poll::Send(req))
                }
                Poll::Ready(_) => self.undo(i + 1, e),
            },
            Step::Unclaim(e) => {
                decode_int(replies, "deleting the root")?;
                Err(e.unwrap_or_else(|| Error::Internal("sharded restore: no error".into())))
            }
            Step::Undo(_, None, _) | Step::Over => Err(Error::Internal(
                "a finished sharded restore was stepped".into(),
            )),
        }
    }
}

impl<R: Read> Machine for ShardedRestore<'_, R> {
    type Output = Summary;

    fn at(&mut self, now: std::time::Instant) {
        if let Step::Shard(_, m) = &mut self.step {
            m.at(now);
        }
    }

    fn step(&mut self, replies: Option<Replies>) -> Result<Poll<Summary>> {
        let step = std::mem::replace(&mut self.step, Step::Over);
        self.advance(step, replies)
    }
}

#[cfg(test)]
mod tests;
