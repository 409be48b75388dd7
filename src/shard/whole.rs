//! Whole-filter changes of a sharded filter (docs/FORMAT.md §11.8): each
//! is first recorded in the root as a target, by one compare-and-set on
//! the root's key, then every shard is brought to it by its own
//! idempotent step (rotated *to* a count, cleared *to* a count, converted
//! unless it is). A run that stops half-way leaves the target in the
//! root; the next run finishes it, doing no shard's part twice. Shards
//! that disagree with their root are named, never answered for silently.

use super::open::ready_root;
use super::root_io::{ask, read_meta};
pub(super) use super::snapshot::Snapshot;
use super::ShardedFilter;
use crate::error::{Error, Result};
use crate::handle::{Filter, FilterKind};
use crate::keys::{FilterName, Keys};
use crate::proto::shard::root::Root;
use crate::proto::shard::script::{self, Retarget};
use crate::proto::shard::target::{self, ShardDisagreement, ShardFacts, ShardOff, Targets};

/// What a shard's handle last read of the fields its root targets.
pub(super) fn facts<K: FilterKind>(f: &Filter<K>) -> ShardFacts {
    let view = f.core.view();
    ShardFacts::read(view.kind, |k| {
        view.fields
            .raw
            .get(k)
            .and_then(|v| std::str::from_utf8(v).ok())
    })
}

/// The shards `found` names, each once, ascending.
fn shards_of(found: &[ShardDisagreement]) -> Vec<u32> {
    let mut out: Vec<u32> = found.iter().map(|d| d.shard).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// How many times a whole-filter change re-reads the root after another
/// process recorded a target first.
pub(super) const RETARGET_RETRIES: u32 = 5;

impl<K: FilterKind> ShardedFilter<K> {
    /// Reads the root and every shard's metadata again (one round trip
    /// each; the shards' handles keep what they read).
    pub(super) fn snapshot<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<Snapshot> {
        let Some(root) = &self.root else {
            return Err(Error::Internal(format!(
                "filter {:?} is not sharded",
                self.name
            )));
        };
        let meta = Keys::new(FilterName::existing(&self.name)?)
            .meta()
            .to_string();
        let read_root = |conn: &mut C| -> Result<Root> {
            let fresh = ready_root(&self.name, &read_meta(conn, &meta)?)?;
            if fresh.uid != root.uid || fresh.shards != root.shards {
                // Dropped, and made again since this handle opened it.
                return Err(Error::NotFound {
                    name: self.name.clone(),
                });
            }
            Ok(fresh)
        };
        let mut fresh = read_root(conn)?;
        for _ in 0..RETARGET_RETRIES {
            let mut all = Vec::with_capacity(self.shards.len());
            for (j, f) in self.shards.iter().enumerate() {
                f.core
                    .run(conn, crate::engine::load::reload(&f.core))
                    .map_err(|e| self.shard_error(j, e))?;
                all.push(facts(f));
            }
            // The root again: a target recorded while the shards were
            // read would make the shards it reached look astray.
            let again = read_root(conn)?;
            if again == fresh {
                return Ok(Snapshot {
                    root: fresh,
                    facts: all,
                    meta,
                });
            }
            fresh = again;
        }
        Err(Error::Contention {
            name: self.name.clone(),
            retries: RETARGET_RETRIES,
        })
    }

    /// Every shard that disagrees with the root now (docs/FORMAT.md
    /// §11.8): another kind, or rotations, period or clears other than
    /// the root's targets, shard 0 first; empty for an unsharded filter
    /// and for one whose shards agree. One round trip, plus one per
    /// shard. A filter whose whole-filter change was interrupted lists the
    /// shards it has not reached; running the change again finishes it.
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// use rotabloom::{kinds::Any, ShardedFilter};
    /// let f = ShardedFilter::<Any>::open_unconverged(&mut conn, "crawl")?;
    /// for d in f.disagreements(&mut conn)? {
    ///     eprintln!("{d}");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn disagreements<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<Vec<ShardDisagreement>> {
        if self.root.is_none() {
            return Ok(Vec::new());
        }
        Ok(self.snapshot(conn)?.disagreements())
    }

    /// Records `set` in the root if its targets (and the `also` fields)
    /// are still as `now` read them; false when another process recorded
    /// a target first.
    pub(super) fn retarget<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        now: &Snapshot,
        also: &[(&str, Option<String>)],
        set: &[(String, String)],
    ) -> Result<bool> {
        let mut expect = now.recorded();
        expect.extend(also.iter().map(|(f, v)| (f.to_string(), v.clone())));
        let expect: Vec<(&str, Option<String>)> = expect
            .iter()
            .map(|(f, v)| (f.as_str(), v.clone()))
            .collect();
        let set: Vec<(&str, String)> = set.iter().map(|(f, v)| (f.as_str(), v.clone())).collect();
        let req = script::retarget(&now.meta, &now.root.uid, &expect, &set);
        let wait = self.shards.first().and_then(|f| f.core.wait);
        match ask(conn, req, wait, |r| script::decode_retarget(&now.meta, r))? {
            Retarget::Set => Ok(true),
            Retarget::Stale => Ok(false),
            Retarget::Gone => Err(Error::NotFound {
                name: self.name.clone(),
            }),
        }
    }

    /// Refuses a change over shards past their targets or of another kind:
    /// they changed outside the root, and no target can bring them back.
    pub(super) fn refuse_astray(&self, now: &Snapshot, change: &str) -> Result<()> {
        let astray: Vec<ShardDisagreement> = now
            .disagreements()
            .into_iter()
            .filter(|d| d.off != ShardOff::Behind)
            .collect();
        if astray.is_empty() {
            return Ok(());
        }
        Err(Error::ShardsDisagree {
            name: self.name.clone(),
            shards: shards_of(&astray),
            what: format!(
                "cannot {change}: {} changed outside the root (see docs/FORMAT.md §11.8)",
                target::describe(&astray)
            ),
        })
    }

    /// The handle if its shards, as just opened, agree with its root.
    /// Shards only behind a rotation or clear target (one in progress, or
    /// interrupted) are brought to it, each by its idempotent step: cheap,
    /// and what any run of the change would do. Anything else (another
    /// kind, a shard astray, a step refused) is [`Error::ShardsDisagree`]:
    /// answers from such shards would not be one filter's.
    pub(super) fn checked<C: redis::ConnectionLike + ?Sized>(self, conn: &mut C) -> Result<Self> {
        if self.found().is_empty() {
            return Ok(self);
        }
        // A consistent read first: a change may have moved the root
        // between the reads of the open.
        let now = self.snapshot(conn)?;
        let found = now.disagreements();
        if found.is_empty() {
            return Ok(self);
        }
        let forward = found.iter().all(|d| d.off == ShardOff::Behind)
            && now.facts.iter().all(|s| s.kind == now.root.kind);
        if forward {
            // Its error names the shards reached and not, and why.
            return self.bring_forward(conn, &now).map(|()| self);
        }
        Err(self.disagree(&found, ""))
    }

    /// The error for shards `found` to disagree with the root, `cause`
    /// ending its first part.
    pub(super) fn disagree(&self, found: &[ShardDisagreement], cause: &str) -> Error {
        Error::ShardsDisagree {
            name: self.name.clone(),
            shards: shards_of(found),
            what: format!(
                "{} disagree with the root: a whole-filter change (rotate, clear, convert) \
                 did not reach every shard{cause}; run it again to finish it",
                target::describe(found)
            ),
        }
    }

    /// The shards that, as their handles last read them, disagree with the
    /// root as this handle read it.
    pub(super) fn found(&self) -> Vec<ShardDisagreement> {
        let Some(root) = &self.root else {
            return Vec::new();
        };
        let all: Vec<ShardFacts> = self.shards.iter().map(facts).collect();
        target::disagreements(root.kind, &root.targets, &all)
    }

    /// Every shard brought to the rotation and clear targets of `now`.
    fn bring_forward<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        now: &Snapshot,
    ) -> Result<()> {
        let t = now.targets();
        if now.rotation_pending() {
            let epoch = t.epoch.unwrap_or(0);
            self.converge(
                conn,
                &format!("the rotation to epoch {epoch}"),
                |_, f, c| {
                    let circular = Filter::<crate::kinds::Circular>::from_core(f.core.clone());
                    circular.rotate_to(c, epoch, t.period)
                },
            )?;
        }
        if now.clear_pending() {
            let n = t.cleared.unwrap_or(0);
            let op = crate::engine::operation::clear_to;
            self.converge(conn, &format!("clear number {n}"), |_, f, c| {
                f.core.run(c, op(&f.core, n))
            })?;
        }
        if now.expansion_pending() {
            self.expand_to(conn, &t)?;
        }
        Ok(())
    }

    /// Empties every shard as one change: the root's clear target moves
    /// by one, then every shard is cleared to it. An unfinished earlier
    /// clear is finished instead of starting another.
    pub(super) fn clear_whole<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<()> {
        for _ in 0..RETARGET_RETRIES {
            let now = self.snapshot(conn)?;
            self.refuse_astray(&now, "clear")?;
            let mut t = now.targets();
            if !now.clear_pending() {
                t.cleared = Some(t.cleared.unwrap_or(0).saturating_add(1));
                if !self.retarget(conn, &now, &[], &Snapshot::to_record(&t))? {
                    continue;
                }
            }
            let n = t.cleared.unwrap_or(0);
            let change = format!("clear number {n}");
            let op = crate::engine::operation::clear_to;
            return self
                .converge(conn, &change, |_, f, c| f.core.run(c, op(&f.core, n)))
                .map(drop);
        }
        Err(Error::Contention {
            name: self.name.clone(),
            retries: RETARGET_RETRIES,
        })
    }

    /// Every expanding shard grown to its expansion target in `t` (one
    /// generation appended unless it has reached it); whether each grew.
    pub(super) fn expand_to<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        t: &Targets,
    ) -> Result<Vec<bool>> {
        self.converge(conn, "the expansion", |j, f, c| match t.expanded.get(&j) {
            Some(&floor) => {
                let e = Filter::<crate::kinds::Expanding>::from_core(f.core.clone());
                e.expand_to(c, floor)
            }
            None => Ok(false),
        })
    }

    /// Brings every shard to the recorded target with `step`, shard 0
    /// first. A shard that fails does not stop the others (each is its own
    /// step); then the error says which shards have the change and which
    /// do not, and why.
    pub(super) fn converge<C: redis::ConnectionLike + ?Sized, T>(
        &self,
        conn: &mut C,
        change: &str,
        mut step: impl FnMut(usize, &Filter<K>, &mut C) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::with_capacity(self.shards.len());
        let mut failed = Vec::new();
        for (j, f) in self.shards.iter().enumerate() {
            match step(j, f, conn) {
                Ok(t) => out.push(t),
                Err(e) => failed.push((j as u32, self.shard_error(j, e))),
            }
        }
        if failed.is_empty() {
            return Ok(out);
        }
        if self.root.is_none() {
            if let Some((_, e)) = failed.pop() {
                return Err(e);
            }
        }
        let list = |v: Vec<u32>| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        let reached: Vec<u32> = (0..self.shard_count())
            .filter(|j| failed.iter().all(|(f, _)| f != j))
            .collect();
        let causes: Vec<String> = failed
            .iter()
            .map(|(j, e)| format!("shard {j}: {e}"))
            .collect();
        let shards: Vec<u32> = failed.iter().map(|(j, _)| *j).collect();
        Err(Error::ShardsDisagree {
            name: self.name.clone(),
            what: format!(
                "{change} is recorded in the root and made on shards [{}], not on [{}] ({}); \
                 run it again to finish it (no shard's part is done twice)",
                list(reached),
                list(shards.clone()),
                causes.join("; ")
            ),
            shards,
        })
    }
}
