//! What a run plugs into the pipeline, as values rather than callbacks:
//! the `Task` its workers do to each batch, with the `Handle` each opens,
//! and the `Sink` that takes the answers in input order. The pipeline is
//! generic over both, so a run reads top-down: the command builds the two
//! values, the pipeline drives them, the command reads them after.

use super::job::Job;
use crate::run::resilient::Resilient;
use crate::shared::ctx::Ctx;
use rotabloom::connect::Connection;

/// A handle the workers share: it says how many lines a batch takes.
pub trait Handle: Clone + Send {
    /// Lines per batch when the run asks for `asked` (`--batch`).
    fn batch(&self, asked: usize) -> usize {
        asked
    }
}

/// What a run does to each batch; shared by the workers, so `Sync`.
pub trait Task: Sync {
    type Handle: Handle;

    /// The handle the workers answer with, opened on `conn` once (and
    /// cloned for each worker) before anything is read.
    fn open(&self, ctx: &Ctx, conn: &mut Connection) -> anyhow::Result<Self::Handle>;

    /// The answers to `job`'s lines, one each, through `redis`'s retries.
    fn answer(
        &self,
        handle: &Self::Handle,
        redis: &mut Resilient,
        job: &Job,
    ) -> anyhow::Result<Vec<bool>>;
}

/// Where the answers go, batch by batch in input order.
pub trait Sink {
    /// `answers` to `lines` (the answers of a prefix only when a full
    /// filter refused the rest), with the bytes of input read so far.
    fn take(&mut self, lines: &[Vec<u8>], answers: Vec<bool>, read: u64) -> anyhow::Result<()>;
}
