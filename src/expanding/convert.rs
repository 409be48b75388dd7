use super::*;

/// The conversion a full base filter undergoes when its handle says
/// `when_full = expand`: this builder's defaults; an expanding filter found
/// instead (converted by another writer, whatever its parameters) is taken
/// as it is.
pub(super) fn absorb_full(keys: &Keys, max_retries: u32) -> Box<dyn Machine<Output = View> + Send> {
    let plan = ToExpanding {
        builder: ExpandingFilter::builder(keys.name().as_str()),
        take_any: true,
    };
    Box::new(convert(keys.clone(), CONVERTIBLE, plan, max_retries))
}

/// The policy of converting a base filter in place into generation 0 of an
/// expanding filter built by `builder` (the machine is the engine's).
pub(super) struct ToExpanding {
    pub(super) builder: ExpandingBuilder,
    /// An expanding filter found is taken whatever its parameters, rather
    /// than checked against the builder's.
    pub(super) take_any: bool,
}

impl Plan for ToExpanding {
    fn plan(&mut self, view: &View) -> Result<Conversion> {
        let b = &self.builder;
        if view.kind == Kind::Expanding && self.take_any {
            return Ok(Conversion::Done);
        }
        if view.kind == Kind::Expanding {
            // Already converted (by this or another process): the
            // parameters this builder controls must agree.
            view.check_params(&[
                (field::GROWTH, fmt_f64(b.growth)),
                (field::TIGHTENING, fmt_f64(b.tightening)),
                (field::MAX_GENERATIONS, b.max_generations.to_string()),
                (field::MAX_BYTES, b.max_bytes.to_string()),
                (field::MAX_BITS, b.max_bits.to_string()),
            ])?;
            return Ok(Conversion::Done);
        }
        let g = view.newest();
        let r = b.tightening;
        let stored = |key: &str| {
            view.policy
                .params()
                .into_iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v)
        };
        let p0 = stored(field::ERROR_RATE)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| {
                crate::params::false_positive_rate(g.layout.bits, g.layout.hashes, g.capacity)
            });
        // Generation 0 stays what it is, on its backend: the new ones grow
        // on the same one.
        let backend = stored(field::BACKEND)
            .and_then(|v| v.parse::<Backend>().ok())
            .unwrap_or_default();
        if let Some(asked) = b.backend.filter(|&asked| asked != backend) {
            return Err(Error::ParameterMismatch {
                name: view.name.clone(),
                field: field::BACKEND.to_string(),
                stored: backend.as_str().to_string(),
                requested: asked.as_str().to_string(),
            });
        }
        let mut nb = b.clone();
        nb.capacity = g.capacity;
        nb.error_rate = (p0 / (1.0 - r)).min(0.999_999);
        nb.max_block_bits = g.layout.block_bits().max(8);
        nb.backend = Some(backend);
        let spec = nb.spec()?;
        Ok(Conversion::Set {
            from: Kind::Bloom,
            to: CODEC,
            fields: spec.params,
        })
    }
}
