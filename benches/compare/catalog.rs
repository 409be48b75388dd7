//! What is measured: the targets, each with the rows it is compared to.

use crate::cfg::Cfg;
use rotabloom::Mode;

#[derive(Clone, Debug)]
pub enum Spec {
    Bloom,
    /// The base filter on the RedisBloom backend (one BF key).
    BloomOnRb,
    Expanding,
    /// The expanding filter on the RedisBloom backend, after 3 expansions.
    ExpandingOnRb,
    Circular {
        n: u32,
        mode: Mode,
    },
    /// A circular filter on the RedisBloom backend, frozen generations
    /// mirrored with BF.SCANDUMP.
    CircularOnRb {
        n: u32,
        mode: Mode,
    },
    Raw,
    RedisBloom,
    RbWindow {
        n: u32,
        mode: Mode,
    },
}

pub struct Target {
    pub name: String,
    pub spec: Spec,
    /// Keys of the template in database 0 (rotabloom filters).
    pub template_keys: Vec<String>,
    /// Which row to divide by for "vs raw" / "vs RedisBloom".
    pub vs_raw: Option<String>,
    pub vs_rb: Option<String>,
}

impl Target {
    /// A target measured on its own (latency, the command line): no
    /// template, no row to compare with.
    pub fn bare(name: &str, spec: Spec) -> Target {
        Target {
            name: name.into(),
            spec,
            template_keys: Vec::new(),
            vs_raw: None,
            vs_rb: None,
        }
    }
}

/// Items per period of a circular filter of `n` generations: the window
/// holds `capacity` items in all, unless one run's items would not fit in
/// one period (RedisBloom's NONSCALING keys refuse items past capacity).
pub fn per_period(cfg: &Cfg, n: u32) -> u64 {
    cfg.capacity.div_ceil(u64::from(n)).max(cfg.items as u64)
}

pub fn window_rate(p: f64, n: u32) -> f64 {
    1.0 - (1.0 - p).powf(1.0 / f64::from(n))
}

pub fn mode_slug(mode: Mode) -> &'static str {
    match mode {
        Mode::InsertNewestQueryAll => "query-all",
        Mode::InsertAllQueryOldest => "query-oldest",
    }
}

pub fn all_targets(with_rb: bool) -> Vec<Target> {
    let mut t = Vec::new();
    let rb = |s: &str| with_rb.then(|| s.to_string());
    let mk = |name: String, spec: Spec, vs_raw: Option<String>, vs_rb: Option<String>| Target {
        name,
        spec,
        template_keys: Vec::new(),
        vs_raw,
        vs_rb,
    };
    let raw = Some("raw-bitfield".to_string());
    t.push(mk(
        "bloom".into(),
        Spec::Bloom,
        raw.clone(),
        rb("redisbloom"),
    ));
    t.push(mk(
        "expanding".into(),
        Spec::Expanding,
        raw.clone(),
        rb("redisbloom"),
    ));
    for n in [4u32, 12] {
        for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
            t.push(mk(
                format!("circular-{n}-{}", mode_slug(mode)),
                Spec::Circular { n, mode },
                raw.clone(),
                rb(&format!("redisbloom-window-{n}-{}", mode_slug(mode))),
            ));
        }
    }
    t.push(mk("raw-bitfield".into(), Spec::Raw, None, rb("redisbloom")));
    if with_rb {
        t.push(mk(
            "bloom-on-redisbloom".into(),
            Spec::BloomOnRb,
            raw.clone(),
            rb("redisbloom"),
        ));
        t.push(mk(
            "expanding-on-redisbloom".into(),
            Spec::ExpandingOnRb,
            raw.clone(),
            rb("redisbloom"),
        ));
        let mode = Mode::InsertNewestQueryAll;
        t.push(mk(
            "circular-12-query-all-on-redisbloom".into(),
            Spec::CircularOnRb { n: 12, mode },
            raw.clone(),
            rb("redisbloom-window-12-query-all"),
        ));
        t.push(mk("redisbloom".into(), Spec::RedisBloom, raw.clone(), None));
        for n in [4u32, 12] {
            for mode in [Mode::InsertNewestQueryAll, Mode::InsertAllQueryOldest] {
                t.push(mk(
                    format!("redisbloom-window-{n}-{}", mode_slug(mode)),
                    Spec::RbWindow { n, mode },
                    raw.clone(),
                    None,
                ));
            }
        }
    }
    t
}

pub fn is_library(spec: &Spec) -> bool {
    matches!(
        spec,
        Spec::Bloom
            | Spec::BloomOnRb
            | Spec::Expanding
            | Spec::ExpandingOnRb
            | Spec::Circular { .. }
            | Spec::CircularOnRb { .. }
    )
}
