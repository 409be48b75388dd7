//! Planning and sending a round: which items go next, by which protocol,
//! built from the machine's snapshot.

use super::{needs_hashes, DataMachine, DataOutput, ReadRound, ScriptRound, State, TxRound};
use crate::engine::plan::{self, Path};
use crate::error::Result;
use crate::machine::Poll;
use crate::proto::script::{self, DataOp};
use crate::proto::txn::{self, RoundOf};
use crate::request::Request;
use crate::view::View;
use std::sync::Arc;

impl DataMachine {
    /// The next round, or the result when nothing is left.
    pub(super) fn next_round(&mut self) -> Result<Poll<DataOutput>> {
        // Hashed by the first round whose snapshot places bits itself,
        // unless the items came hashed: a filter all of whose generations
        // are RedisBloom keys never hashes (MD5 is a third of the client's
        // work per item there).
        if needs_hashes(&self.view) {
            self.items.hash_all();
        }
        if self.pending.is_empty() {
            if let (Some((seq, cap)), Some((s, count))) = (self.decider(), self.count) {
                if s == seq {
                    self.core.note_count(seq, cap, count);
                }
            }
            let prealloc = plan::prealloc_due(&self.view, self.fill)
                .filter(|g| self.core.claim_prealloc(g.seq))
                .map(|g| (g, Arc::clone(&self.view)));
            return Ok(Poll::Ready((std::mem::take(&mut self.out), prealloc)));
        }
        let view = Arc::clone(&self.view);
        let mut round = self.pace.round(&self.pending);
        round.truncate(plan::max_round_items(&view));
        let cache = self.core.cache.as_deref();
        let mirrored = plan::mirrored(&view, cache);
        let now = self.now();
        let tx_ok = self.tx_ok && !std::mem::take(&mut self.script_next);
        let path = plan::path(&view, self.op, tx_ok, round.len(), &mirrored);
        if matches!(path, Path::Tx { .. }) {
            // The script cuts its rounds into short calls itself; a
            // transaction is one atomic step, so its round is kept short.
            round.truncate(plan::MAX_ITEMS_PER_TX);
        }
        match path {
            Path::Script => {
                // Mirrored generations are looked up here; the script
                // confirms the findings with its view check.
                let mut local = script::Local::default();
                if !mirrored.is_empty() && self.op != DataOp::Add {
                    let found = plan::local_present(&view, cache, &mirrored, &round, self.batch());
                    local.present = round
                        .iter()
                        .zip(found)
                        .filter(|(_, f)| *f)
                        .map(|(&i, _)| i)
                        .collect();
                }
                local.mirrored = mirrored;
                let r = RoundOf {
                    keys: &self.core.keys,
                    view: &view,
                    round: &round,
                    batch: self.batch(),
                };
                let limit = self.limit();
                let (req, chunks) =
                    script::request(r, self.op, &now, self.record.as_ref(), &local, limit);
                self.state = State::Script(ScriptRound { chunks });
                Ok(Poll::Send(req))
            }
            Path::Tx { .. } if !self.core.watch_ok() => {
                self.state = State::Preflight;
                Ok(Poll::Send(txn::preflight_request(&self.core.keys)))
            }
            Path::Tx { read, serve } => {
                let local = match self.op {
                    DataOp::Add => vec![false; round.len()],
                    _ => plan::local_present(&view, cache, &mirrored, &round, self.batch()),
                };
                if read.is_empty() {
                    return Ok(Poll::Send(self.send_tx(view, round, local, &serve)));
                }
                let (req, sent) = txn::read_request(
                    RoundOf {
                        keys: &self.core.keys,
                        view: &view,
                        round: &round,
                        batch: self.batch(),
                    },
                    &read,
                    &now,
                );
                self.state = State::Read(ReadRound {
                    view,
                    round,
                    local,
                    serve,
                    sent,
                });
                Ok(Poll::Send(req))
            }
        }
    }

    pub(super) fn send_tx(
        &mut self,
        view: Arc<View>,
        round: Vec<usize>,
        present: Vec<bool>,
        serve: &[usize],
    ) -> Request {
        let r = RoundOf {
            keys: &self.core.keys,
            view: &view,
            round: &round,
            batch: self.batch(),
        };
        let limit = self.limit();
        let (req, sent) = txn::tx_request(r, self.op, serve, &present, &self.now(), limit);
        self.state = State::Tx(TxRound {
            view,
            round,
            present,
            sent,
        });
        req
    }
}
