use super::*;

/// Describes a [`CircularFilter`]; checked by [`spec`](Self::spec).
#[derive(Clone, Debug)]
#[must_use]
pub struct CircularBuilder {
    pub(crate) name: String,
    pub(super) generations: u32,
    pub(super) mode: Mode,
    pub(crate) capacity: u64,
    pub(super) error_rate: f64,
    pub(super) schedule: Option<String>,
    pub(super) lazy: bool,
    pub(super) max_bits: u64,
    pub(super) max_block_bits: u64,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) backend: Backend,
    pub(super) wait: Option<WaitReplicas>,
}

impl CircularBuilder {
    /// Number of generations, N >= 2: the window is N periods.
    pub fn generations(mut self, n: u32) -> Self {
        self.generations = n;
        self
    }
    /// Where writes go and what queries read. Default insert-newest-query-all.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }
    /// Distinct items expected per period.
    pub fn capacity(mut self, per_period: u64) -> Self {
        self.capacity = per_period;
        self
    }
    /// The false-positive rate a query may have at full load. Default 0.01.
    pub fn error_rate(mut self, p: f64) -> Self {
        self.error_rate = p;
        self
    }
    /// The rotation schedule, in [`Schedule`]'s text form (`30d`,
    /// `monthly:1@00:00`, ...). Without one, only [`CircularFilter::rotate`]
    /// rotates.
    pub fn schedule(mut self, schedule: impl Into<String>) -> Self {
        self.schedule = Some(schedule.into());
        self
    }
    /// Let ordinary operations perform a rotation that has come due, so a
    /// deployment without cron still expires items on time.
    pub fn lazy(mut self, lazy: bool) -> Self {
        self.lazy = lazy;
        self
    }
    /// Most bits of one generation (default 2^37).
    pub fn max_bits(mut self, bits: u64) -> Self {
        self.max_bits = bits;
        self
    }
    /// Block size in bits (default 2^26; at most 2^32).
    pub fn max_block_bits(mut self, bits: u64) -> Self {
        self.max_block_bits = bits;
        self
    }
    /// Where the generations are kept (default
    /// [`Backend::Bitmap`](crate::Backend::Bitmap)).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }
    /// Makes the creation and every write of the handle wait for
    /// replicas (see [`WaitReplicas`](crate::WaitReplicas)).
    pub fn wait_replicas(mut self, wait: crate::wait::WaitReplicas) -> Self {
        self.wait = Some(wait);
        self
    }
    /// Where `now` comes from (default: the Redis server's clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The filter's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Validates the description.
    pub fn spec(&self) -> Result<CircularSpec> {
        let name = FilterName::new(&self.name)?;
        let n = self.generations;
        if !(2..=MAX_CIRCULAR_GENERATIONS).contains(&n) {
            return Err(Error::InvalidParameter {
                name: "generations",
                reason: format!("{n} is not between 2 and {MAX_CIRCULAR_GENERATIONS}"),
            });
        }
        let p = ErrorRate::new(self.error_rate)?.get();
        let schedule = match &self.schedule {
            Some(s) => Some(s.parse::<Schedule>()?),
            None => {
                if self.lazy {
                    return Err(Error::InvalidParameter {
                        name: "lazy",
                        reason: "lazy rotation needs a schedule".into(),
                    });
                }
                None
            }
        };
        let (gen_capacity, gen_rate) = generation_sizing(self.mode, n, self.capacity, p)?;
        let params = BloomParams::for_capacity_within(gen_capacity, gen_rate, self.max_bits)?;
        let layout = self.backend.layout(params, self.max_block_bits)?;
        let policy = CircularPolicy {
            n,
            mode: self.mode,
            capacity: self.capacity,
            error_rate: p,
            schedule,
            lazy: self.lazy,
            state: None,
            max_bits: self.max_bits,
            max_block_bits: self.max_block_bits.clamp(8, crate::params::MAX_BLOCK_BITS),
            backend: self.backend,
        };
        Ok(CircularSpec {
            name,
            params: policy.params(),
            layout,
            gen_capacity,
            n,
            schedule,
            clock: self.clock.clone(),
            wait: self.wait,
        })
    }
}

/// Capacity and false-positive rate of each generation so that a query in
/// `mode` over `n` generations meets rate `p` at `per_period` items per
/// period. Pure.
///
/// ```
/// use rotabloom::{circular_generation_sizing, Mode};
/// let (cap, rate) = circular_generation_sizing(Mode::InsertAllQueryOldest, 4, 1000, 0.01).unwrap();
/// assert_eq!((cap, rate), (4000, 0.01));
/// let (cap, rate) = circular_generation_sizing(Mode::InsertNewestQueryAll, 4, 1000, 0.01).unwrap();
/// assert_eq!(cap, 1000);
/// assert!((1.0 - (1.0 - rate).powi(4) - 0.01).abs() < 1e-12);
/// ```
pub fn generation_sizing(mode: Mode, n: u32, per_period: u64, p: f64) -> Result<(u64, f64)> {
    if per_period == 0 {
        return Err(Error::InvalidParameter {
            name: "capacity",
            reason: "must be at least 1 item per period".into(),
        });
    }
    Ok(match mode {
        Mode::InsertNewestQueryAll => (per_period, 1.0 - (1.0 - p).powf(1.0 / f64::from(n.max(1)))),
        Mode::InsertAllQueryOldest => (per_period.saturating_mul(u64::from(n)), p),
    })
}

/// A validated [`CircularBuilder`].
#[derive(Clone, Debug)]
pub struct CircularSpec {
    pub(super) name: FilterName,
    pub(super) params: Vec<(&'static str, String)>,
    pub(super) layout: Layout,
    pub(super) gen_capacity: u64,
    pub(super) n: u32,
    pub(super) schedule: Option<Schedule>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) wait: Option<WaitReplicas>,
}

impl CircularSpec {
    /// The same spec, its creation and the handle's writes waiting for
    /// replicas (see [`WaitReplicas`](crate::WaitReplicas)).
    pub fn with_wait_replicas(mut self, wait: Option<crate::wait::WaitReplicas>) -> Self {
        self.wait = wait;
        self
    }

    /// The generations a creation makes (all N), each a layout and a
    /// capacity.
    pub fn initial_generations(&self) -> Vec<(Layout, u64)> {
        vec![(self.layout, self.gen_capacity); self.n as usize]
    }

    fn blueprint(&self, now: DateTime<Utc>) -> Result<Blueprint> {
        let extra = match self.schedule {
            Some(s) => {
                let state = ScheduleState::at(&s, s.period(now)).ok_or_else(|| {
                    Error::InvalidParameter {
                        name: "schedule",
                        reason: format!(
                            "its next boundary after {now} is not a representable time"
                        ),
                    }
                })?;
                state.fields()
            }
            None => vec![
                (field::PERIOD, String::new()),
                (field::DUE_AT, String::new()),
            ],
        };
        Ok(Blueprint {
            uid: crate::uid::new_uid(),
            adopt: Vec::new(),
            kind: Kind::Circular,
            params: self.params.clone(),
            extra,
            gens: self.initial_generations(),
            leased: Vec::new(),
        })
    }
}

// Sealed (`creates::sealed`): the machine it names is the crate's own.
#[allow(private_interfaces)]
impl crate::creates::Creates for CircularSpec {
    type Kind = super::Circular;

    fn wait(&self) -> Option<crate::wait::WaitReplicas> {
        self.wait
    }

    fn machine(&self) -> impl crate::machine::Machine<Output = (CircularFilter, Opened)> + Send {
        let spec = self.clone();
        Now::new(self.clock.clone()).then(move |now| {
            let bp = spec.blueprint(now)?;
            let clock = spec.clock.clone();
            let wait = spec.wait;
            Ok(
                create::create_or_open(Keys::new(spec.name.clone()), Accept::One(CODEC), bp).map(
                    move |(mut core, how)| {
                        core.clock = clock;
                        core.wait = wait;
                        Ok((CircularFilter::from_core(core), how))
                    },
                ),
            )
        })
    }
}

impl CircularSpec {
    /// Creates or opens; also says which happened.
    pub fn create_or_open<C: redis::ConnectionLike + ?Sized>(
        &self,
        conn: &mut C,
    ) -> Result<(CircularFilter, Opened)> {
        crate::creates::run(self, conn)
    }

    #[cfg(feature = "async")]
    /// Async [`create_or_open`](Self::create_or_open).
    pub async fn create_or_open_async<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> Result<(CircularFilter, Opened)> {
        crate::creates::run_async(self, conn).await
    }
}
