//! Medians, spreads, percentiles and number formatting for benches/compare/.
#![allow(dead_code)]

/// Median of `runs` values and their spread.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: Vec<f64>,
}

impl Summary {
    pub fn of(values: &[f64]) -> Summary {
        if values.is_empty() {
            return Summary::default();
        }
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Summary {
            median,
            min: v[0],
            max: v[n - 1],
            runs: values.to_vec(),
        }
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "median": self.median,
            "min": self.min,
            "max": self.max,
            "runs": self.runs,
        })
    }
}

/// The `q` quantile (0..=1) of sorted samples, nearest-rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `1234567.0` -> `1.23M`, `4321.0` -> `4.32k`.
pub fn si(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if a >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// A ratio as `0.53x`, or `-` when unknown.
pub fn ratio(x: Option<f64>) -> String {
    match x {
        Some(r) if r.is_finite() => {
            if r >= 100.0 {
                format!("{r:.0}x")
            } else {
                format!("{r:.2}x")
            }
        }
        _ => "-".into(),
    }
}

/// Microseconds with one decimal.
pub fn us(secs: f64) -> String {
    format!("{:.1}us", secs * 1e6)
}
