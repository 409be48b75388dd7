//! Sizing: from what the user wants (capacity, false-positive rate) to what
//! Redis stores (bits, hash functions), and back. Pure functions only.

use crate::error::{Error, Result};
use std::f64::consts::LN_2;

/// The largest number of hash functions a generation may use. The optimal
/// count for a false-positive rate of 1e-15 is 50; more only costs time.
pub const MAX_HASHES: u32 = 64;

/// The smallest generation, in bits.
pub const MIN_BITS: u64 = 8;

/// The fewest bits a generation sized by capacity gets (see
/// [`BloomParams::for_capacity`]).
pub const MIN_SIZED_BITS: u64 = 1024;

/// The largest one Redis string can hold, in bits (512 MiB). Generations
/// larger than this are split into blocks; see `docs/FORMAT.md`.
pub const MAX_BLOCK_BITS: u64 = 1 << 32;

/// Default block size: 2^26 bits (8 MiB). Each block is allocated by its
/// own command ahead of need (about a millisecond of server time), so no
/// write ever makes Redis allocate hundreds of megabytes at once.
pub const DEFAULT_MAX_BLOCK_BITS: u64 = 1 << 26;

/// Default upper bound on one generation's size: 2^37 bits (16 GiB).
pub const DEFAULT_MAX_BITS: u64 = 1 << 37;

/// A false-positive rate, strictly between 0 and 1.
///
/// ```
/// use rotabloom::ErrorRate;
/// assert!(ErrorRate::new(0.001).is_ok());
/// assert!(ErrorRate::new(0.0).is_err());
/// assert!(ErrorRate::new(1.0).is_err());
/// assert!(ErrorRate::new(f64::NAN).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct ErrorRate(f64);

impl ErrorRate {
    /// Validates `p`: it must be finite and in the open interval (0, 1).
    pub fn new(p: f64) -> Result<ErrorRate> {
        if p.is_finite() && p > 0.0 && p < 1.0 {
            Ok(ErrorRate(p))
        } else {
            Err(Error::InvalidParameter {
                name: "error_rate",
                reason: format!("{p} is not strictly between 0 and 1"),
            })
        }
    }

    /// The rate as a number.
    pub fn get(self) -> f64 {
        self.0
    }
}

/// The shape of one Bloom filter generation: `bits` (m) and `hashes` (k).
/// A value of this type is always valid: `MIN_BITS <= m <= max` and
/// `1 <= k <= MAX_HASHES`.
///
/// ```
/// use rotabloom::BloomParams;
/// // 10 million items at 0.1 %: about 17 MiB and 10 hash functions.
/// let p = BloomParams::for_capacity(10_000_000, 0.001).unwrap();
/// assert_eq!(p.hashes(), 10);
/// assert_eq!(p.bits(), 143_776_394);
/// assert!((p.false_positive_rate(10_000_000) - 0.001).abs() < 0.0001);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BloomParams {
    bits: u64,
    hashes: u32,
}

impl BloomParams {
    /// The smallest valid shape.
    pub const MIN: BloomParams = BloomParams {
        bits: MIN_BITS,
        hashes: 1,
    };

    /// The optimal shape for `capacity` items at false-positive rate
    /// `error_rate`, with the default size limit ([`DEFAULT_MAX_BITS`]):
    /// `m = ceil(-n ln p / (ln 2)^2)` and `k = round(m/n ln 2)`, then `m`
    /// raised (by well under 1 %) where the rounding of `k` would leave the
    /// expected rate at capacity above `p`, and to at least
    /// [`MIN_SIZED_BITS`].
    pub fn for_capacity(capacity: u64, error_rate: f64) -> Result<BloomParams> {
        Self::for_capacity_within(capacity, error_rate, DEFAULT_MAX_BITS)
    }

    /// Like [`for_capacity`](Self::for_capacity) with an explicit limit on
    /// the number of bits.
    pub fn for_capacity_within(
        capacity: u64,
        error_rate: f64,
        max_bits: u64,
    ) -> Result<BloomParams> {
        let p = ErrorRate::new(error_rate)?;
        let m = optimal_bits(capacity, p.get())?;
        let k = optimal_hashes(m, capacity)?;
        // k is rounded to a whole number, which can leave the rate at
        // capacity a little above p (for p = 0.01, k = 7 gives 1.0034 %):
        // take the bits that bring it back to p for that k,
        // m = -k n / ln(1 - p^(1/k)), a few hundredths of a percent more.
        let exact =
            -(f64::from(k)) * capacity as f64 / (1.0 - p.get().powf(1.0 / f64::from(k))).ln();
        let m = if exact.is_finite() && exact < u64::MAX as f64 {
            m.max(exact.ceil() as u64)
        } else {
            m
        };
        // A tiny bitmap cannot keep its promise: on a few dozen bits the
        // k positions of enhanced double hashing repeat, and a filter of
        // 10 bits sized for 1 item at 0.87 % answered 2.6 % of new items
        // present. 1024 bits (128 bytes) costs nothing and keeps the rate
        // below the target; k stays what the sizing gave.
        let m = m.max(MIN_SIZED_BITS);
        Self::from_bits_hashes_within(m, k, max_bits)
    }

    /// An explicit shape, as the seeds' `BLOOMFILTER_BIT` (as `1 << bit`) and
    /// `BLOOMFILTER_HASH_NUMBER` give it.
    ///
    /// ```
    /// use rotabloom::BloomParams;
    /// let p = BloomParams::from_bits_hashes(1 << 30, 6).unwrap();
    /// assert_eq!((p.bits(), p.hashes()), (1 << 30, 6));
    /// assert!(BloomParams::from_bits_hashes(1 << 30, 0).is_err());
    /// ```
    pub fn from_bits_hashes(bits: u64, hashes: u32) -> Result<BloomParams> {
        Self::from_bits_hashes_within(bits, hashes, DEFAULT_MAX_BITS)
    }

    /// Like [`from_bits_hashes`](Self::from_bits_hashes) with an explicit
    /// limit on the number of bits.
    pub fn from_bits_hashes_within(bits: u64, hashes: u32, max_bits: u64) -> Result<BloomParams> {
        if hashes == 0 || hashes > MAX_HASHES {
            return Err(Error::InvalidParameter {
                name: "hashes",
                reason: format!("{hashes} is not between 1 and {MAX_HASHES}"),
            });
        }
        if bits < MIN_BITS {
            return Err(Error::InvalidParameter {
                name: "bits",
                reason: format!("{bits} is below the minimum of {MIN_BITS}"),
            });
        }
        if bits > max_bits {
            return Err(Error::TooLarge {
                bits,
                max: max_bits,
            });
        }
        Ok(BloomParams { bits, hashes })
    }

    /// m, the number of bits.
    pub fn bits(&self) -> u64 {
        self.bits
    }

    /// k, the number of hash functions.
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Bytes of Redis memory the bitmap takes when full-sized.
    pub fn bytes(&self) -> u64 {
        self.bits.div_ceil(8)
    }

    /// The expected false-positive rate after `items` distinct insertions.
    pub fn false_positive_rate(&self, items: u64) -> f64 {
        false_positive_rate(self.bits, self.hashes, items)
    }
}

/// Bits needed for `capacity` items at false-positive rate `error_rate`:
/// `m = ceil(-n ln p / (ln 2)^2)`. No rounding to a power of two.
///
/// ```
/// assert_eq!(rotabloom::optimal_bits(1_000_000, 0.01).unwrap(), 9_585_059);
/// assert!(rotabloom::optimal_bits(0, 0.01).is_err());
/// ```
pub fn optimal_bits(capacity: u64, error_rate: f64) -> Result<u64> {
    let p = ErrorRate::new(error_rate)?;
    if capacity == 0 {
        return Err(Error::InvalidParameter {
            name: "capacity",
            reason: "must be at least 1".into(),
        });
    }
    let m = (-(capacity as f64) * p.get().ln() / (LN_2 * LN_2)).ceil();
    if !(m.is_finite() && m < u64::MAX as f64) {
        return Err(Error::TooLarge {
            bits: u64::MAX,
            max: DEFAULT_MAX_BITS,
        });
    }
    Ok((m as u64).max(MIN_BITS))
}

/// The number of hash functions that minimises the false-positive rate of
/// `bits` bits holding `capacity` items: `k = round(m/n ln 2)`, at least 1.
///
/// ```
/// assert_eq!(rotabloom::optimal_hashes(143_775_876, 10_000_000).unwrap(), 10);
/// ```
pub fn optimal_hashes(bits: u64, capacity: u64) -> Result<u32> {
    if capacity == 0 {
        return Err(Error::InvalidParameter {
            name: "capacity",
            reason: "must be at least 1".into(),
        });
    }
    let k = (bits as f64 / capacity as f64 * LN_2).round();
    Ok((k.max(1.0).min(f64::from(MAX_HASHES))) as u32)
}

/// The expected false-positive rate of an `m`-bit filter with `k` hash
/// functions holding `n` distinct items: `(1 - e^(-k n / m))^k`.
///
/// ```
/// // Table 14-1 of the seeds: m/n = 10, k = 7 gives 0.00819.
/// let p = rotabloom::false_positive_rate(10_000, 7, 1_000);
/// assert!((p - 0.00819).abs() < 0.000005);
/// ```
pub fn false_positive_rate(bits: u64, hashes: u32, items: u64) -> f64 {
    if bits == 0 {
        return 1.0;
    }
    let k = f64::from(hashes);
    (1.0 - (-k * items as f64 / bits as f64).exp()).powf(k)
}

/// The information-theoretic optimum of bits per item for rate `p`, which a
/// standard Bloom filter reaches within a factor of `1/ln 2`:
/// `1.44 * log2(1/p)`, i.e. `-ln p / (ln 2)^2`.
pub fn optimal_bits_per_item(error_rate: f64) -> f64 {
    -error_rate.ln() / (LN_2 * LN_2)
}

/// Estimates the number of distinct items in a filter from the number of
/// set bits (Swamidass & Baldi): `n ≈ -(m/k) ln(1 - X/m)`.
pub fn estimate_items(bits: u64, hashes: u32, set_bits: u64) -> f64 {
    if bits == 0 || hashes == 0 {
        return 0.0;
    }
    let m = bits as f64;
    let x = (set_bits.min(bits)) as f64;
    if x >= m {
        return f64::INFINITY;
    }
    -(m / f64::from(hashes)) * (1.0 - x / m).ln()
}

/// The false-positive rate a filter has *now*, from its fill ratio:
/// `(set_bits / m)^k`.
pub fn current_false_positive_rate(bits: u64, hashes: u32, set_bits: u64) -> f64 {
    if bits == 0 {
        return 1.0;
    }
    (set_bits.min(bits) as f64 / bits as f64).powi(hashes as i32)
}

/// How many items each of `shards` shards is sized for, for a filter of
/// `capacity` (docs/FORMAT.md §11.2): `ceil(capacity / shards)` plus
/// `ceil(6 * sqrt(ceil(capacity / shards)))`. The items of a full filter
/// fall on the shards binomially, so a shard sized for exactly its share
/// would be full before the filter; six standard deviations of headroom
/// make that about a one-in-a-billion event per shard, for a few per cent
/// more memory on small shards and a fraction of one on big ones. One
/// shard is the filter itself.
///
/// ```
/// # use rotabloom::shard_capacity;
/// assert_eq!(shard_capacity(600_000, 6), 100_000 + 1_898);
/// assert_eq!(shard_capacity(1000, 1), 1000);
/// ```
pub fn shard_capacity(capacity: u64, shards: u32) -> u64 {
    if shards <= 1 {
        return capacity;
    }
    let share = capacity.div_ceil(u64::from(shards));
    let slack = (6.0 * (share as f64).sqrt()).ceil() as u64;
    share.saturating_add(slack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_input_with_typed_errors() {
        for p in [0.0, 1.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                BloomParams::for_capacity(10, p),
                Err(Error::InvalidParameter {
                    name: "error_rate",
                    ..
                })
            ));
        }
        assert!(matches!(
            BloomParams::for_capacity(0, 0.1),
            Err(Error::InvalidParameter {
                name: "capacity",
                ..
            })
        ));
        assert!(matches!(
            BloomParams::from_bits_hashes(100, 0),
            Err(Error::InvalidParameter { name: "hashes", .. })
        ));
        assert!(matches!(
            BloomParams::from_bits_hashes(100, 65),
            Err(Error::InvalidParameter { name: "hashes", .. })
        ));
        assert!(matches!(
            BloomParams::from_bits_hashes(4, 1),
            Err(Error::InvalidParameter { name: "bits", .. })
        ));
        assert!(matches!(
            BloomParams::for_capacity_within(1_000_000, 0.01, 1000),
            Err(Error::TooLarge { max: 1000, .. })
        ));
        assert!(matches!(
            BloomParams::for_capacity(u64::MAX, 1e-300),
            Err(Error::TooLarge { .. })
        ));
    }

    #[test]
    fn standard_formulas() {
        // 100M items at 0.1 %: about 180 MB, as the README promises.
        let p = BloomParams::for_capacity(100_000_000, 0.001).unwrap();
        assert_eq!(p.hashes(), 10);
        let mb = p.bytes() as f64 / 1e6;
        assert!((179.0..181.0).contains(&mb), "{mb}");
        // Bits per item within 1 % of the optimum (no power-of-two rounding).
        let per_item = p.bits() as f64 / 1e8;
        assert!(per_item / optimal_bits_per_item(0.001) < 1.01);
        assert_eq!(
            BloomParams::for_capacity(1_000_000, 0.01).unwrap().bits(),
            9_592_955
        );
        // And the expected rate at capacity never above the target, for
        // any rounding of k.
        for &rate in &[0.1, 0.05, 0.01, 0.005, 0.001, 1e-4, 1e-6] {
            for &n in &[100u64, 12_345, 1_000_000] {
                let p = BloomParams::for_capacity(n, rate).unwrap();
                assert!(
                    p.false_positive_rate(n) <= rate * (1.0 + 1e-9),
                    "{rate} {n}"
                );
                // Within 1 % of the optimum, or the floor for tiny ones.
                let optimal = n as f64 * optimal_bits_per_item(rate);
                assert!(
                    p.bits() as f64 / optimal < 1.01 || p.bits() == MIN_SIZED_BITS,
                    "{rate} {n}"
                );
            }
        }
    }

    #[test]
    fn estimate_inverts_fill() {
        let (m, k, n) = (1_000_000u64, 7u32, 50_000u64);
        let expected_set = m as f64 * (1.0 - (-(k as f64) * n as f64 / m as f64).exp());
        let est = estimate_items(m, k, expected_set as u64);
        assert!((est - n as f64).abs() / (n as f64) < 0.001, "{est}");
        assert_eq!(estimate_items(m, k, 0), 0.0);
        assert!(estimate_items(m, k, m).is_infinite());
    }

    #[test]
    fn tiny_generations_get_at_least_the_floor_and_keep_their_k() {
        for n in [1u64, 3, 10, 40, 100] {
            let p = BloomParams::for_capacity(n, 0.1).unwrap();
            assert!(p.bits() >= MIN_SIZED_BITS, "{n}");
            // k as the sizing gave it, not inflated by the floor.
            let m0 = optimal_bits(n, 0.1).unwrap();
            assert_eq!(p.hashes(), optimal_hashes(m0, n).unwrap(), "{n}");
        }
        // Big ones are untouched.
        assert_eq!(
            BloomParams::for_capacity(1_000_000, 0.01).unwrap().bits(),
            9_592_955
        );
    }
}
