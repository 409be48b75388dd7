//! The guarded transaction's replies: the reads of phase A, the
//! transaction, the commit of counts and reservations.

use super::{DataMachine, DataOutput, ReadRound, State, TxRound};
use crate::error::Result;
use crate::machine::Poll;
use crate::proto::txn::{self, TxOutcome, Verdict};
use crate::request::Replies;

impl DataMachine {
    pub(super) fn on_read(&mut self, r: ReadRound, replies: Replies) -> Result<Poll<DataOutput>> {
        match txn::decode_read(&r.view, &r.sent, r.round.len(), replies) {
            Err(e) => self.fail(e),
            Ok(Err(v)) => self.after_verdict(v),
            Ok(Ok(read)) => {
                let present = r.local.iter().zip(read).map(|(a, b)| *a || b).collect();
                Ok(Poll::Send(self.send_tx(r.view, r.round, present, &r.serve)))
            }
        }
    }

    pub(super) fn on_tx(&mut self, t: TxRound, replies: Replies) -> Result<Poll<DataOutput>> {
        // What the guard reserved, if it said OK: released or settled by
        // the commit whatever happened to the transaction after it.
        let count = txn::guard_fill(replies.get(1));
        let reserved = t.sent.reserve.clone().filter(|_| count.is_some());
        if let (Some(c), Some(r)) = (count, &reserved) {
            // An upper bound until the commit: enough to allocate the next
            // generation ahead of need in time.
            let f = c.saturating_add(r.items);
            self.fill = Some(self.fill.map_or(f, |old| old.max(f)));
        }
        let outcome = match txn::decode_tx(&t.view, self.op, &t.sent, &t.present, replies) {
            Ok(o) => o,
            Err(e) => {
                return match txn::commit_request(&self.core.keys, &t.view, reserved.as_ref(), &[]) {
                    Some(req) => {
                        self.state = State::Release(e);
                        Ok(Poll::Send(req))
                    }
                    None => self.fail(e),
                };
            }
        };
        let (deltas, release, verdict) = match outcome {
            TxOutcome::Aborted(Verdict::Full) => {
                // No room for the whole round: the script fills what is
                // left item by item, and says where it stopped.
                self.script_next = true;
                self.pace.progress = true;
                (Vec::new(), true, Verdict::Ok)
            }
            TxOutcome::Aborted(v) => (Vec::new(), true, v),
            TxOutcome::Applied {
                answers,
                added,
                count,
                settled,
            } => {
                if let Some(n) = count {
                    // A deciding generation that counts itself.
                    if self.limit() == crate::proto::script::Limit::Capacity {
                        self.fill = Some(self.fill.map_or(n, |old| old.max(n)));
                    }
                    self.counted(n);
                }
                let bound = t.sent.settle.as_deref().unwrap_or_default();
                let (deltas, release) = txn::after_tx(&settled, bound, &added);
                if let (txn::Settled::Ran(counts), Some((seq, _))) = (&settled, self.decider()) {
                    // The deciding generation's count, less the excess
                    // the commit after this takes back.
                    if let Some(&(_, c)) = counts.iter().find(|(s, _)| *s == seq) {
                        let back = deltas.iter().find(|(s, _)| *s == seq).map_or(0, |d| d.1);
                        self.counted(c.saturating_sub(back.unsigned_abs()));
                    }
                }
                // Answers of a prefix: a generation that caps itself
                // refused the item after it, and every one after that.
                let refused = answers.len() < t.round.len();
                let mut done = t.round.clone();
                done.truncate(answers.len());
                for (&i, yes) in t.round.iter().zip(answers) {
                    if let Some(slot) = self.out.get_mut(i) {
                        *slot = yes;
                    }
                }
                self.decided(&mut done);
                if refused {
                    // Full: grow, convert or refuse, as the script's FULL.
                    let reserve = reserved.as_ref().filter(|_| release);
                    return match txn::commit_request(&self.core.keys, &t.view, reserve, &deltas) {
                        Some(req) => {
                            self.state = State::Commit(deltas, Verdict::Full);
                            Ok(Poll::Send(req))
                        }
                        None => self.full(),
                    };
                }
                (deltas, release, Verdict::Ok)
            }
        };
        // Counts follow the bits they describe (or the excess of the bound
        // added with them goes back); the reservation ends, unless the
        // script queued in the transaction ended it.
        let reserve = reserved.as_ref().filter(|_| release);
        match txn::commit_request(&self.core.keys, &t.view, reserve, &deltas) {
            Some(req) if matches!(verdict, Verdict::Ok) && !self.pending.is_empty() => {
                self.commit_then_next(req, deltas)
            }
            Some(req) => {
                self.state = State::Commit(deltas, verdict);
                Ok(Poll::Send(req))
            }
            None => self.after_verdict(verdict),
        }
    }

    /// Sends `commit` in front of the next round's request: it runs before
    /// that round's guard, as it would alone, without a round trip of its
    /// own. The next round is planned before the commit's reply, so
    /// without the count it adds: a count only serves to allocate a
    /// generation ahead of need, which the round after it does as well.
    fn commit_then_next(
        &mut self,
        mut commit: crate::request::Request,
        added: Vec<(u64, i64)>,
    ) -> Result<Poll<DataOutput>> {
        match self.after_verdict(Verdict::Ok)? {
            Poll::Send(next) => {
                let then = std::mem::replace(&mut self.state, State::Start);
                self.state = State::CommitThen(added, Box::new(then));
                commit.append(next);
                Ok(Poll::Send(commit))
            }
            // Items are pending: a round is always sent for them.
            Poll::Ready(_) => Err(crate::error::Error::Internal(
                "a data operation finished with items pending".into(),
            )),
        }
    }

    /// After a round's verdict: go on, reload, or rotate first.
    pub(super) fn after_verdict(&mut self, v: Verdict) -> Result<Poll<DataOutput>> {
        match v {
            Verdict::Stale => self.reload(),
            Verdict::Due(judged_at) => self.lazy_rotation(judged_at),
            Verdict::Full => {
                self.script_next = true;
                self.next_round()
            }
            Verdict::Ok => {
                // Nothing done means other clients' guards aborted the
                // transaction: the view is current; try again, smaller.
                if self.pace.settle() > self.core.max_retries.saturating_mul(4) {
                    return Err(self.core.contention(self.pace.stalls));
                }
                self.next_round()
            }
        }
    }
}
