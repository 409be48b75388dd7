use super::*;

/// A manual rotation: drop the oldest generation, append a copy of the
/// newest's shape.
pub(super) struct ManualRotation {
    pub(super) epoch_seen: u64,
}

impl Decide for ManualRotation {
    type Output = Rotation;

    fn decide(&mut self, view: &View, _: Option<DateTime<Utc>>) -> Result<Step<Rotation>> {
        Ok(Step::Roll(rotation(view, 1, Vec::new(), Vec::new())))
    }

    fn settle(&mut self, view: &View, rolled: bool) -> Result<Option<Rotation>> {
        Ok(match rolled {
            true => Some(Rotation::Rotated {
                rotations: 1,
                epoch: view.epoch,
                next_at: None,
            }),
            // Another process changed the filter first; a handle whose
            // view was old in a way that left the epoch tries again.
            false if view.epoch != self.epoch_seen => {
                Some(Rotation::Superseded { epoch: view.epoch })
            }
            false => None,
        })
    }
}

/// `k` rotations: the `k` oldest generations go, `k` new ones of the
/// newest's shape come, every one allocated before the roll (a block that
/// does not exist later is lost data).
pub(super) fn rotation(
    c: &Common,
    k: u32,
    expect: Vec<(&'static str, String)>,
    set: Vec<(&'static str, String)>,
) -> Roll {
    let newest = c.newest();
    Roll {
        drop: k as usize,
        add: (0..u64::from(k))
            .map(|i| NewGen {
                seq: c.next_seq.saturating_add(i),
                layout: newest.layout,
                capacity: newest.capacity,
            })
            .collect(),
        expect,
        set,
        allocate: k as usize,
    }
}

/// Rotations up to a target (a sharded filter's, docs/FORMAT.md §11.8):
/// the rotations that take the filter's epoch to `epoch`, none when it is
/// there already, so that any number of runs turn it exactly to the
/// target. With `period`, the first roll also records that scheduled
/// period (and its deadline), as the scheduled rotation would have.
pub(crate) struct RotateTo {
    pub(crate) epoch: u64,
    pub(crate) period: Option<i64>,
    /// Rotations this machine made, and those of its last roll.
    rotated: u32,
    last: u32,
}

impl RotateTo {
    pub(crate) fn new(epoch: u64, period: Option<i64>) -> RotateTo {
        RotateTo {
            epoch,
            period,
            rotated: 0,
            last: 0,
        }
    }

    fn outcome(&self, view: &View) -> Rotation {
        match self.rotated {
            0 => Rotation::Superseded { epoch: view.epoch },
            rotations => Rotation::Rotated {
                rotations,
                epoch: view.epoch,
                next_at: policy_of(view)
                    .and_then(|p| p.state)
                    .and_then(|s| Utc.timestamp_millis_opt(s.due_at).single()),
            },
        }
    }
}

fn policy_of(view: &View) -> Option<&CircularPolicy> {
    view.policy.as_any().downcast_ref::<CircularPolicy>()
}

impl Decide for RotateTo {
    type Output = Rotation;

    fn decide(&mut self, view: &View, _: Option<DateTime<Utc>>) -> Result<Step<Rotation>> {
        if view.epoch >= self.epoch {
            return Ok(Step::Done(self.outcome(view)));
        }
        let policy = policy_of(view).ok_or_else(|| Error::KindMismatch {
            name: view.name.clone(),
            expected: "circular",
            found: view.kind.as_str().to_string(),
        })?;
        // More than N owed empties the window; the rest follow in further
        // rolls, each from the view the last one left.
        let k = u32::try_from(self.epoch - view.epoch)
            .unwrap_or(u32::MAX)
            .min(policy.n);
        let (expect, set) = match (self.period, policy.schedule, policy.state) {
            (Some(p), Some(schedule), Some(state)) if p > state.period => {
                let next =
                    ScheduleState::at(&schedule, p).ok_or_else(|| Error::InvalidParameter {
                        name: "period",
                        reason: format!("period {p} has no representable end"),
                    })?;
                (
                    vec![(field::PERIOD, state.period.to_string())],
                    next.fields(),
                )
            }
            _ => (Vec::new(), Vec::new()),
        };
        self.last = k;
        Ok(Step::Roll(rotation(view, k, expect, set)))
    }

    fn settle(&mut self, view: &View, rolled: bool) -> Result<Option<Rotation>> {
        if rolled {
            self.rotated = self.rotated.saturating_add(self.last);
        }
        Ok((view.epoch >= self.epoch).then(|| self.outcome(view)))
    }
}
