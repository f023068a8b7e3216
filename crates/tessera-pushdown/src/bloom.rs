//! Bloom filters a store's S3 Select can test, for the Bloom join of "PushdownDB:
//! Accelerating a DBMS using S3 Computation" (ICDE 2020, §V-A): the keys of a join's
//! build side become a filter sent with the request for the probe side, so that only
//! the probe rows that may match cross the link.
//!
//! S3 Select has no bitwise operators or binary values, so, as in the paper, the bits
//! are a string of `0`s and `1`s tested with `SUBSTRING`, and the hash functions are
//! universal hashes, `((a * x + b) mod P) mod m`, which need only integer arithmetic.
//! The filter is partitioned: hash function `i` sets and tests bits of its own slice
//! only, so that each `SUBSTRING` names one slice and the request carries every bit
//! once. Keys are integers of at most [`KEY_MAGNITUDE_MAX`] in magnitude, shifted by
//! [`KEY_OFFSET`] so that every remainder is positive; then `a * x + b` stays below
//! 2^53, exact in the doubles some stores compute with.

use std::fmt::Write;

/// The largest magnitude of a key the filter holds.
pub const KEY_MAGNITUDE_MAX: i64 = (1 << 31) - 1;
/// What each key is shifted by before hashing, so that it is never negative.
pub const KEY_OFFSET: i64 = 1 << 31;
/// The prime of the universal hashes, 2^21 - 9: larger than any slice, and small enough
/// that `a * (x + KEY_OFFSET) + b` stays below 2^53.
pub const PRIME: u64 = 2_097_143;
/// The false-positive rate PushdownDB found best (§V-B3): lower rates make the filter,
/// and the store's work per row, larger; higher ones let more rows through.
pub const FALSE_POSITIVE_RATE: f64 = 0.01;
/// The most hash functions a filter uses.
pub const HASHES_MAX: usize = 8;
/// Filters that would let more than this share of absent keys through are not worth
/// their test: the join runs without one.
pub const FALSE_POSITIVE_RATE_MAX: f64 = 0.5;
/// Bytes of request text a filter's test takes besides its bits, per hash function.
const TEST_BYTES: usize = 160;

/// A partitioned Bloom filter over integer keys.
#[derive(Debug, Clone, PartialEq)]
pub struct BloomFilter {
    /// `(a, b)` of each hash function; function `i` owns slice `i`.
    hashes: Vec<(u64, u64)>,
    /// Bits per slice.
    slice_bits: u64,
    /// The bits, slice after slice.
    bits: Vec<bool>,
}

impl BloomFilter {
    /// A filter holding `keys`, at [`FALSE_POSITIVE_RATE`] or, when its test would take
    /// more than `text_bytes_max` bytes of request text, at the lowest rate that fits.
    /// `None` when a key's magnitude is above [`KEY_MAGNITUDE_MAX`], there are no keys,
    /// or no filter that fits lets fewer than [`FALSE_POSITIVE_RATE_MAX`] through.
    pub fn with_keys(keys: &[i64], text_bytes_max: usize) -> Option<Self> {
        if keys.is_empty()
            || keys
                .iter()
                .any(|k| k.unsigned_abs() > KEY_MAGNITUDE_MAX as u64)
        {
            return None;
        }
        let mut distinct = keys.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let keys = distinct.as_slice();
        let n = keys.len() as f64;
        let ln2 = std::f64::consts::LN_2;
        // The best number of hash functions for `bits` bits and n keys.
        let best = |bits: f64| ((bits / n) * ln2).round().clamp(1.0, HASHES_MAX as f64) as usize;
        // The bits for n keys at the target rate, fewer if the request has no room for
        // them: then fewer hash functions too, as the rate is lowest with.
        let wanted = (-n * FALSE_POSITIVE_RATE.ln() / (ln2 * ln2)).ceil();
        let room = |hashes: usize| text_bytes_max.saturating_sub(hashes * TEST_BYTES) as f64;
        let mut hashes = best(wanted);
        hashes = best(wanted.min(room(hashes)));
        let total = wanted
            .min(room(hashes))
            .min((PRIME as f64 - 1.0) * hashes as f64);
        let slice_bits = (total / hashes as f64).floor() as u64;
        if slice_bits == 0 {
            return None;
        }
        let mut filter = Self {
            hashes: universal_hashes(hashes),
            slice_bits,
            bits: vec![false; hashes * slice_bits as usize],
        };
        if filter.false_positive_rate(keys.len()) > FALSE_POSITIVE_RATE_MAX {
            return None;
        }
        for &key in keys {
            let slots: Vec<usize> = filter.slots(key).collect();
            for slot in slots {
                filter.bits[slot] = true;
            }
        }
        Some(filter)
    }

    /// Whether `key` may be one of the keys (false: it is not).
    pub fn contains(&self, key: i64) -> bool {
        key.unsigned_abs() <= KEY_MAGNITUDE_MAX as u64 && self.slots(key).all(|s| self.bits[s])
    }

    /// The share of absent keys the filter lets through once it holds `keys` keys.
    pub fn false_positive_rate(&self, keys: usize) -> f64 {
        let per_slice = 1.0 - (-(keys as f64) / self.slice_bits as f64).exp();
        per_slice.powi(self.hashes.len() as i32)
    }

    /// The number of hash functions.
    pub fn hash_count(&self) -> usize {
        self.hashes.len()
    }

    /// Bits per hash function's slice.
    pub fn slice_bits(&self) -> u64 {
        self.slice_bits
    }

    /// The filter's universal hashes `(a, b)`, one per slice.
    pub fn hashes(&self) -> &[(u64, u64)] {
        &self.hashes
    }

    /// The bits, slice after slice.
    pub fn bits(&self) -> &[bool] {
        &self.bits
    }

    /// The filter with these parts, as [`BloomFilter::hashes`], [`BloomFilter::slice_bits`]
    /// and [`BloomFilter::bits`] gave them; `None` if they do not fit together.
    pub fn from_parts(hashes: Vec<(u64, u64)>, slice_bits: u64, bits: Vec<bool>) -> Option<Self> {
        let fits = !hashes.is_empty()
            && hashes.len() <= HASHES_MAX
            && (1..PRIME).contains(&slice_bits)
            && hashes
                .iter()
                .all(|&(a, b)| (1..PRIME).contains(&a) && b < PRIME)
            && bits.len() as u64 == slice_bits * hashes.len() as u64;
        fits.then_some(Self {
            hashes,
            slice_bits,
            bits,
        })
    }

    /// The position of `key`'s bit in each slice, as indexes into `bits`.
    fn slots(&self, key: i64) -> impl Iterator<Item = usize> + '_ {
        let shifted = (key + KEY_OFFSET) as u64;
        self.hashes.iter().enumerate().map(move |(i, &(a, b))| {
            let bit = ((a * shifted + b) % PRIME) % self.slice_bits;
            i * self.slice_bits as usize + bit as usize
        })
    }

    /// The S3 Select test of the integer `field` (an S3 Select path, such as
    /// `s."o_custkey"`): true for every key the filter holds, false for missing values
    /// and nulls, which join nothing. Stores evaluate every operand of `AND` (a cast of
    /// a missing value stops the request) but stop an `OR` at its first true operand,
    /// so the test is written `NOT (missing OR null OR NOT (bits))`.
    pub fn test_sql(&self, field: &str) -> String {
        let mut out = format!("NOT ({field} IS MISSING OR {field} IS NULL OR NOT (");
        for (i, &(a, b)) in self.hashes.iter().enumerate() {
            if i > 0 {
                out.push_str(" AND ");
            }
            let start = i * self.slice_bits as usize;
            let slice = &self.bits[start..start + self.slice_bits as usize];
            out.push_str("SUBSTRING('");
            out.extend(slice.iter().map(|&set| if set { '1' } else { '0' }));
            write!(
                out,
                "', (({a} * (CAST({field} AS INT) + {KEY_OFFSET}) + {b}) % {PRIME}) % {} + 1, 1) = '1'",
                self.slice_bits
            )
            .expect("writing to a String");
        }
        out.push_str("))");
        out
    }
}

/// `count` hash functions `(a, b)`, `a` in `1..PRIME` and `b` in `0..PRIME`, the same
/// every time (SplitMix64 from a fixed seed), so that a filter is reproducible.
fn universal_hashes(count: usize) -> Vec<(u64, u64)> {
    let mut state: u64 = 0x5445_5353_4552_4121;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    (0..count)
        .map(|_| (1 + next() % (PRIME - 1), next() % PRIME))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prime_is_prime() {
        assert!((2..=(PRIME as f64).sqrt() as u64).all(|d| !PRIME.is_multiple_of(d)));
        // a * (x + KEY_OFFSET) + b stays exact in a double.
        let largest = (PRIME - 1) as u128 * (2 * KEY_OFFSET as u128) + PRIME as u128;
        assert!(largest < 1u128 << 53);
    }

    #[test]
    fn every_key_is_found_and_few_others_are() {
        let keys: Vec<i64> = (0..10_000).map(|i| i * 7 - 30_000).collect();
        let filter = BloomFilter::with_keys(&keys, 256 << 10).unwrap();
        assert!(keys.iter().all(|&k| filter.contains(k)));
        // Keys are multiples of 7 shifted by -30000 (itself one): k * 7 + 1 is none.
        let others = (0..100_000).map(|i| i * 7 + 1);
        let (passed, tried) =
            others.fold((0, 0), |(p, t), k| (p + filter.contains(k) as u32, t + 1));
        let rate = f64::from(passed) / f64::from(tried);
        assert!(rate < 3.0 * FALSE_POSITIVE_RATE, "{rate}");
    }

    #[test]
    fn a_filter_too_large_for_the_request_gets_coarser_or_is_not_made() {
        let keys: Vec<i64> = (0..100_000).collect();
        let fine = BloomFilter::with_keys(&keys, 4 << 20).unwrap();
        let coarse = BloomFilter::with_keys(&keys, 256 << 10).unwrap();
        assert!(coarse.test_sql("s.\"k\"").len() <= 256 << 10);
        assert!(coarse.false_positive_rate(keys.len()) > fine.false_positive_rate(keys.len()));
        assert!(keys.iter().all(|&k| coarse.contains(k)));
        assert_eq!(BloomFilter::with_keys(&keys, 16 << 10), None);
        assert_eq!(BloomFilter::with_keys(&[1, 1 << 40], 1 << 20), None);
        assert_eq!(BloomFilter::with_keys(&[], 1 << 20), None);
    }

    #[test]
    fn parts_round_trip() {
        let filter = BloomFilter::with_keys(&[3, 5, 8], 1 << 20).unwrap();
        let again = BloomFilter::from_parts(
            filter.hashes().to_vec(),
            filter.slice_bits(),
            filter.bits().to_vec(),
        );
        assert_eq!(again.as_ref(), Some(&filter));
        assert_eq!(
            BloomFilter::from_parts(vec![(0, 1)], 4, vec![true; 4]),
            None
        );
        assert_eq!(
            BloomFilter::from_parts(vec![(1, 1)], 4, vec![true; 3]),
            None
        );
    }

    #[test]
    fn the_test_is_written_as_a_store_evaluates_it() {
        let filter = BloomFilter::from_parts(vec![(3, 5)], 4, vec![false, true, true, false]);
        assert_eq!(
            filter.unwrap().test_sql("s.\"k\""),
            "NOT (s.\"k\" IS MISSING OR s.\"k\" IS NULL OR NOT (SUBSTRING('0110', \
             ((3 * (CAST(s.\"k\" AS INT) + 2147483648) + 5) % 2097143) % 4 + 1, 1) = '1'))"
        );
    }
}
