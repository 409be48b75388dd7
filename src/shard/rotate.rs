//! Rotating a sharded circular filter as one filter (docs/FORMAT.md
//! §11.8): the root's rotation target moves by one compare-and-set, then
//! every shard is rotated *to* it. Concurrent callers turn the filter
//! once per period (one of them moves the target), and the shards'
//! windows end at the same count.

use super::whole::{Snapshot, RETARGET_RETRIES};
use super::ShardedFilter;
use crate::engine::roll::Rotation;
use crate::error::{Error, Result};
use crate::kinds::Circular;
use crate::proto::shard::target::Targets;
use chrono::{DateTime, Utc};

impl ShardedFilter<Circular> {
    /// Rotates the whole filter once: the root's target moves from the
    /// rotations every shard has to one more, then every shard rotates to
    /// it (docs/FORMAT.md §11.8). Of concurrent calls, one moves the
    /// target; the others help the shards to it. A call that finds an
    /// earlier rotation unfinished (a shard behind the target) finishes
    /// that one instead of starting another. Per shard, shard 0 first:
    /// [`Rotation::Rotated`] when this call rotated it,
    /// [`Rotation::Superseded`] when it was at the target already. A shard
    /// that cannot rotate (its master out of memory) is
    /// [`Error::ShardsDisagree`], naming which shards rotated; a rerun
    /// rotates only the others.
    ///
    /// ```no_run
    /// # let mut conn = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
    /// use rotabloom::{kinds::Circular, ShardedFilter};
    /// let f = ShardedFilter::<Circular>::open(&mut conn, "seen")?;
    /// let per_shard = f.rotate(&mut conn)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn rotate<C: redis::ConnectionLike + ?Sized>(&self, conn: &mut C) -> Result<Vec<Rotation>> {
        if self.root.is_none() {
            return self.each(conn, |f, c| f.rotate(c));
        }
        for _ in 0..RETARGET_RETRIES {
            let now = self.snapshot(conn)?;
            self.refuse_astray(&now, "rotate")?;
            let t = now.targets();
            if !now.rotation_pending() {
                let next = Targets {
                    epoch: Some(t.epoch.unwrap_or(0).saturating_add(1)),
                    ..t.clone()
                };
                if !self.retarget(conn, &now, &[], &Snapshot::to_record(&next))? {
                    continue;
                }
                return self.rotate_to(conn, &next);
            }
            return self.rotate_to(conn, &t);
        }
        Err(self.contended())
    }

    /// Performs the rotations the schedule owes at the clock's `now`, for
    /// the whole filter: the root's period and rotation targets move by
    /// one compare-and-set (so once per period however many processes or
    /// hosts call it), then every shard rotates to them. An unfinished
    /// earlier rotation is finished first. Per shard as
    /// [`rotate`](Self::rotate), with [`Rotation::NotDue`] for a shard at
    /// the target when nothing was owed.
    pub fn rotate_if_due<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<Vec<Rotation>> {
        let Some(first) = self.shards.first() else {
            return Ok(Vec::new());
        };
        // The clock read once, at the operation's edge.
        let clock = std::sync::Arc::clone(&first.core.clock);
        let now = first
            .core
            .run(conn, crate::engine::now::Now::new(clock))
            .map_err(|e| self.shard_error(0, e))?;
        self.rotate_if_due_at(conn, now)
    }

    /// [`rotate_if_due`](Self::rotate_if_due) at an explicit `now`.
    pub fn rotate_if_due_at<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        at: DateTime<Utc>,
    ) -> Result<Vec<Rotation>> {
        if self.root.is_none() {
            return self.each(conn, |f, c| f.rotate_if_due_at(c, at));
        }
        let schedule = self
            .shards
            .first()
            .and_then(|f| f.schedule())
            .ok_or_else(|| Error::InvalidParameter {
                name: "schedule",
                reason: format!("filter {:?} has no schedule; use rotate()", self.name),
            })?;
        let p = schedule.period(at);
        let mut finished = None;
        for _ in 0..RETARGET_RETRIES {
            let now = self.snapshot(conn)?;
            self.refuse_astray(&now, "rotate")?;
            let t = now.targets();
            let last = t.period.unwrap_or(p);
            if now.rotation_pending() {
                // An earlier rotation first; then see what is owed. A call
                // may finish pending rotations more than once (schedulers
                // side by side record and finish targets between its
                // snapshots): what it rotated each time is kept.
                let done = self.rotate_to(conn, &t)?;
                finished = Some(keep_rotated(finished, done));
                continue;
            }
            if p <= last {
                let next_at = schedule.checked_boundary(last.saturating_add(1));
                let done = self.rotate_to(conn, &t)?;
                return Ok(merge(finished, done, next_at));
            }
            let window = self.shards.first().map_or(1, |f| f.generations().len());
            let owed = u64::try_from(p.saturating_sub(last))
                .unwrap_or(u64::MAX)
                .min(window as u64);
            let next = Targets {
                epoch: Some(t.epoch.unwrap_or(0).saturating_add(owed)),
                period: Some(p),
                ..t.clone()
            };
            if !self.retarget(conn, &now, &[], &Snapshot::to_record(&next))? {
                continue;
            }
            let done = self.rotate_to(conn, &next)?;
            return Ok(merge(finished, done, None));
        }
        Err(self.contended())
    }

    /// Every shard rotated to the targets `t`.
    fn rotate_to<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
        t: &Targets,
    ) -> Result<Vec<Rotation>> {
        let epoch = t.epoch.unwrap_or(0);
        let change = format!("the rotation to epoch {epoch}");
        self.converge(conn, &change, |_, f, c| f.rotate_to(c, epoch, t.period))
    }

    fn contended(&self) -> Error {
        Error::Contention {
            name: self.name.clone(),
            retries: RETARGET_RETRIES,
        }
    }
}

/// Per shard, the rotations of two passes of one call: a shard rotated in
/// either was rotated by the call, as many times as both made.
fn keep_rotated(earlier: Option<Vec<Rotation>>, later: Vec<Rotation>) -> Vec<Rotation> {
    let earlier = earlier.unwrap_or_default();
    later
        .into_iter()
        .enumerate()
        .map(|(j, r)| match (earlier.get(j), r) {
            (
                Some(Rotation::Rotated { rotations: a, .. }),
                Rotation::Rotated {
                    rotations: b,
                    epoch,
                    next_at,
                },
            ) => Rotation::Rotated {
                rotations: a.saturating_add(b),
                epoch,
                next_at,
            },
            (Some(e @ Rotation::Rotated { .. }), _) => *e,
            (_, r) => r,
        })
        .collect()
}

/// Per shard, what a scheduled call did: a rotation it made while
/// finishing an earlier one counts; a shard it found at the target is
/// not due until `next_at`.
fn merge(
    finished: Option<Vec<Rotation>>,
    done: Vec<Rotation>,
    next_at: Option<DateTime<Utc>>,
) -> Vec<Rotation> {
    let earlier = finished.unwrap_or_default();
    done.into_iter()
        .enumerate()
        .map(|(j, r)| match (r, earlier.get(j), next_at) {
            (Rotation::Superseded { .. }, Some(e @ Rotation::Rotated { .. }), _) => *e,
            (Rotation::Superseded { .. }, _, Some(next_at)) => Rotation::NotDue { next_at },
            (r, _, _) => r,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rotated(rotations: u32, epoch: u64) -> Rotation {
        Rotation::Rotated {
            rotations,
            epoch,
            next_at: None,
        }
    }

    #[test]
    fn a_shard_rotated_in_an_earlier_pass_stays_rotated() {
        let earlier = vec![
            rotated(1, 1),
            Rotation::Superseded { epoch: 1 },
            rotated(1, 1),
        ];
        let later = vec![
            Rotation::Superseded { epoch: 1 },
            rotated(1, 1),
            rotated(2, 3),
        ];
        assert_eq!(
            keep_rotated(Some(earlier), later),
            vec![rotated(1, 1), rotated(1, 1), rotated(3, 3)]
        );
        let only = vec![Rotation::Superseded { epoch: 2 }];
        assert_eq!(keep_rotated(None, only.clone()), only);
    }
}
