use super::*;

/// Where a schedule stands: the period of the last scheduled rotation (or
/// of the creation) and when the next one is due, in ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScheduleState {
    pub(super) period: i64,
    pub(super) due_at: i64,
}

impl ScheduleState {
    /// The state in period `p`; `None` when the next boundary is not a
    /// representable time.
    pub(super) fn at(s: &Schedule, p: i64) -> Option<ScheduleState> {
        let next = s.checked_boundary(p.checked_add(1)?)?;
        Some(ScheduleState {
            period: p,
            due_at: next.timestamp_millis(),
        })
    }

    pub(super) fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            (field::PERIOD, self.period.to_string()),
            (field::DUE_AT, self.due_at.to_string()),
        ]
    }
}

/// A circular filter's parameters and schedule state.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CircularPolicy {
    pub(super) n: u32,
    pub(super) mode: Mode,
    pub(super) capacity: u64,
    pub(super) error_rate: f64,
    pub(super) schedule: Option<Schedule>,
    pub(super) lazy: bool,
    /// With a schedule: where it stands.
    pub(super) state: Option<ScheduleState>,
    pub(super) max_bits: u64,
    pub(super) max_block_bits: u64,
    pub(super) backend: Backend,
}

impl Policy for CircularPolicy {
    fn kind(&self) -> Kind {
        Kind::Circular
    }

    fn params(&self) -> Vec<(&'static str, String)> {
        vec![
            (field::GENERATIONS, self.n.to_string()),
            (field::MODE, self.mode.as_str().to_string()),
            (field::CAPACITY, self.capacity.to_string()),
            (field::ERROR_RATE, fmt_f64(self.error_rate)),
            (
                field::SCHEDULE,
                self.schedule.map(|s| s.to_string()).unwrap_or_default(),
            ),
            (field::LAZY, if self.lazy { "1" } else { "0" }.to_string()),
            (field::BACKEND, self.backend.as_str().to_string()),
            (field::MAX_BITS, self.max_bits.to_string()),
            (field::MAX_BLOCK_BITS, self.max_block_bits.to_string()),
        ]
    }

    fn roles(&self, c: &Common) -> Vec<Role> {
        let n = c.gens.len();
        match self.mode {
            Mode::InsertNewestQueryAll => (0..n)
                .map(|i| {
                    if i + 1 == n {
                        Role::Decide
                    } else {
                        Role::Query
                    }
                })
                .collect(),
            Mode::InsertAllQueryOldest => (0..n)
                .map(|i| if i == 0 { Role::Decide } else { Role::Write })
                .collect(),
        }
    }

    fn pending(&self, c: &Common, _: &crate::view::Growth) -> Option<NewGen> {
        rotation(c, 1, Vec::new(), Vec::new()).add.first().copied()
    }

    fn lazy_due_at(&self) -> Option<i64> {
        self.state.filter(|_| self.lazy).map(|s| s.due_at)
    }

    fn due(&self, c: &Common, now: DateTime<Utc>) -> Result<Due> {
        let (Some(schedule), Some(state)) = (self.schedule, self.state) else {
            return Ok(Due::Unscheduled);
        };
        let p = schedule.period(now);
        let unrepresentable = || Error::InvalidParameter {
            name: "now",
            reason: format!("{now} is too far from the schedule's periods"),
        };
        if p <= state.period {
            let next = ScheduleState::at(&schedule, state.period).ok_or_else(unrepresentable)?;
            return Ok(Due::Later {
                next_at: Utc
                    .timestamp_millis_opt(next.due_at)
                    .single()
                    .ok_or_else(unrepresentable)?,
            });
        }
        let owed = u32::try_from(p.saturating_sub(state.period))
            .unwrap_or(u32::MAX)
            .min(self.n);
        let next = ScheduleState::at(&schedule, p).ok_or_else(unrepresentable)?;
        let next_at = Utc
            .timestamp_millis_opt(next.due_at)
            .single()
            .ok_or_else(unrepresentable)?;
        Ok(Due::Owed {
            roll: rotation(
                c,
                owed,
                vec![(field::PERIOD, state.period.to_string())],
                next.fields(),
            ),
            rotations: owed,
            next_at,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub(super) fn decode(f: &Fields, c: &Common) -> Result<Arc<dyn Policy>> {
    let n = f.u64_in(field::GENERATIONS, 2, u64::from(MAX_CIRCULAR_GENERATIONS))? as u32;
    if c.gens.len() != n as usize {
        return Err(f.corrupt(
            field::GENS,
            format!("lists {} generations, but the filter has {n}", c.gens.len()),
        ));
    }
    let schedule = match f.str(field::SCHEDULE)? {
        "" => None,
        _ => Some(f.parsed::<Schedule>(field::SCHEDULE)?),
    };
    let lazy = match f.str(field::LAZY)? {
        "0" => false,
        "1" => true,
        other => return Err(f.corrupt(field::LAZY, format!("{other:.40?} is not 0 or 1"))),
    };
    let state = match schedule {
        None => {
            if lazy {
                return Err(f.corrupt(field::LAZY, "lazy rotation without a schedule"));
            }
            for fld in [field::PERIOD, field::DUE_AT] {
                if !f.str(fld)?.is_empty() {
                    return Err(f.corrupt(fld, "set, but the filter has no schedule"));
                }
            }
            None
        }
        Some(s) => {
            let period = f.i64(field::PERIOD)?;
            let due_at = f.i64(field::DUE_AT)?;
            let state = ScheduleState::at(&s, period).ok_or_else(|| {
                f.corrupt(
                    field::PERIOD,
                    format!("period {period} has no representable end"),
                )
            })?;
            // The deadline is derived from the period; one that disagrees
            // would make lazy rotation wait for a rotation never owed.
            if state.due_at != due_at {
                return Err(f.corrupt(
                    field::DUE_AT,
                    format!(
                        "{due_at} is not the end of period {period}, {}",
                        state.due_at
                    ),
                ));
            }
            Some(state)
        }
    };
    Ok(Arc::new(CircularPolicy {
        n,
        mode: f.parsed(field::MODE)?,
        capacity: f.u64_in(field::CAPACITY, 1, u64::MAX)?,
        error_rate: f.rate(field::ERROR_RATE)?,
        schedule,
        lazy,
        state,
        max_bits: f.u64_in(field::MAX_BITS, crate::params::MIN_BITS, u64::MAX)?,
        max_block_bits: f.u64_in(field::MAX_BLOCK_BITS, 8, crate::params::MAX_BLOCK_BITS)?,
        backend: backend_of(f, c)?,
    }))
}

/// How circular filters are read from their metadata.
pub(crate) const CODEC: Codec = Codec {
    kind: Kind::Circular,
    decode,
    absorb: None,
};
