use super::*;

/// An expanding filter's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ExpandingPolicy {
    pub(super) n0: u64,
    pub(super) p: f64,
    pub(super) s: f64,
    pub(super) r: f64,
    pub(super) max_generations: u32,
    pub(super) max_bytes: u64,
    pub(super) max_bits: u64,
    pub(super) max_block_bits: u64,
    pub(super) legacy_gens: u32,
    /// Where new generations go. A base filter on a module backend converted to
    /// an expanding one keeps its backend.
    pub(super) backend: Backend,
}

impl ExpandingPolicy {
    fn limit(&self, c: &Common) -> String {
        format!(
            "{} generations (max_generations = {}, max_bytes = {}); the newest is full",
            c.gens.len(),
            self.max_generations,
            self.max_bytes
        )
    }

    /// The generation to append when the newest fills up, or why none may be.
    fn next(&self, c: &Common) -> std::result::Result<NewGen, String> {
        if c.gens.len() >= self.max_generations as usize {
            return Err(self.limit(c));
        }
        // Adopted legacy generations sit outside the error budget: the
        // first generation rotabloom sizes is index 0.
        let i = c.gens.len().saturating_sub(self.legacy_gens as usize);
        let i = i32::try_from(i).unwrap_or(i32::MAX);
        let cap = (self.n0 as f64 * self.s.powi(i)).ceil();
        let rate = self.p * (1.0 - self.r) * self.r.powi(i);
        if !(cap.is_finite() && cap >= 1.0 && cap < u64::MAX as f64) {
            return Err(self.limit(c));
        }
        let params =
            BloomParams::for_capacity_within(cap as u64, rate, self.max_bits).map_err(|e| {
                format!(
                    "{}: the next generation cannot be sized ({e})",
                    self.limit(c)
                )
            })?;
        let layout = self
            .backend
            .layout(params, self.max_block_bits)
            .map_err(|e| {
                format!(
                    "{}: the next generation cannot be made ({e})",
                    self.limit(c)
                )
            })?;
        let used: u64 = c
            .gens
            .iter()
            .map(|g| g.layout.bytes())
            .fold(0, u64::saturating_add);
        if self.max_bytes > 0 && used.saturating_add(layout.bytes()) > self.max_bytes {
            return Err(self.limit(c));
        }
        Ok(NewGen {
            seq: c.next_seq,
            layout,
            capacity: cap as u64,
        })
    }
}

impl Policy for ExpandingPolicy {
    fn kind(&self) -> Kind {
        Kind::Expanding
    }

    fn params(&self) -> Vec<(&'static str, String)> {
        let mut p = vec![
            (field::CAPACITY, self.n0.to_string()),
            (field::ERROR_RATE, fmt_f64(self.p)),
            (field::GROWTH, fmt_f64(self.s)),
            (field::TIGHTENING, fmt_f64(self.r)),
            (field::MAX_GENERATIONS, self.max_generations.to_string()),
            (field::MAX_BYTES, self.max_bytes.to_string()),
            (field::MAX_BITS, self.max_bits.to_string()),
            (field::MAX_BLOCK_BITS, self.max_block_bits.to_string()),
        ];
        if self.legacy_gens > 0 {
            p.push((field::LEGACY_GENS, self.legacy_gens.to_string()));
        }
        // Stored absent (filters made before expanding filters had a
        // backend) means bitmap; compared on open either way.
        p.push((field::BACKEND, self.backend.as_str().to_string()));
        p
    }

    fn roles(&self, c: &Common) -> Vec<Role> {
        let n = c.gens.len();
        (0..n)
            .map(|i| {
                if i + 1 == n {
                    Role::Decide
                } else {
                    Role::Query
                }
            })
            .collect()
    }

    fn growth(&self, c: &Common) -> Growth {
        Growth::Capped(self.next(c))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

pub(super) fn decode(f: &Fields, c: &Common) -> Result<Arc<dyn Policy>> {
    let growth = f.f64(field::GROWTH)?;
    if !(1.0..=16.0).contains(&growth) {
        return Err(f.corrupt(field::GROWTH, format!("{growth} is not between 1 and 16")));
    }
    let legacy_gens = f.opt_u64(field::LEGACY_GENS)?.unwrap_or(0);
    if legacy_gens > 1 || legacy_gens as usize > c.gens.len() {
        return Err(f.corrupt(
            field::LEGACY_GENS,
            format!(
                "{legacy_gens} legacy generations cannot be among {}",
                c.gens.len()
            ),
        ));
    }
    let backend = match f.opt_str(field::BACKEND)? {
        None => Backend::Bitmap,
        Some(b) => b.parse::<Backend>().map_err(|_| {
            f.corrupt(
                field::BACKEND,
                format!(
                    "{b:.40?} is not a backend ({})",
                    crate::words::choices::<Backend>()
                ),
            )
        })?,
    };
    // The backend's generations, and bitmap ones always (a converted
    // filter grew on bitmaps before expanding filters had a backend); an
    // adopted legacy generation only where adoption puts it.
    View::check_schemes(f, c, |i, g| match i < legacy_gens as usize {
        true => !g.layout.store().writable(),
        false => g.layout.scheme == backend.scheme() || g.layout.scheme == Backend::Bitmap.scheme(),
    })?;
    Ok(Arc::new(ExpandingPolicy {
        n0: f.u64_in(field::CAPACITY, 1, u64::MAX)?,
        p: f.rate(field::ERROR_RATE)?,
        s: growth,
        r: f.rate(field::TIGHTENING)?,
        max_generations: f.u64_in(field::MAX_GENERATIONS, 1, u64::from(MAX_GENERATIONS))? as u32,
        max_bytes: f.u64(field::MAX_BYTES)?,
        max_bits: f.u64_in(field::MAX_BITS, crate::params::MIN_BITS, u64::MAX)?,
        max_block_bits: f.u64_in(field::MAX_BLOCK_BITS, 8, crate::params::MAX_BLOCK_BITS)?,
        legacy_gens: legacy_gens as u32,
        backend,
    }))
}

/// How expanding filters are read from their metadata.
pub(crate) const CODEC: Codec = Codec {
    kind: Kind::Expanding,
    decode,
    absorb: Some(Absorb {
        from: Kind::Bloom,
        start: absorb_full,
    }),
};
