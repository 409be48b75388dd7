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
