//! Randomness of our own, so that a seed names the same bytes forever: an external
//! PRNG crate may change its algorithm or its sampling code in any release, which
//! would silently change every benchmark data set generated from a seed.
//!
//! Only integer arithmetic and IEEE-754 `+ - * / sqrt` are used, which are exactly
//! rounded on every platform; `powf`/`ln`/`exp` are not, and could make two machines
//! disagree on a rounding boundary.

/// The SplitMix64 finalizer: a strong 64-bit mixing function, used both as the
/// generator's output step and to hash (seed, index) pairs into independent streams.
pub(crate) const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Hashes two words into one; order matters, so (a, b) and (b, a) differ.
pub(crate) const fn hash2(a: u64, b: u64) -> u64 {
    mix64(a ^ mix64(b.wrapping_add(0x2545_f491_4f6c_dd1d)))
}

/// SplitMix64: one word of state, passes BigCrush, and seeding is free, which
/// matters because every document gets its own generator.
pub(crate) struct Rng {
    state: u64,
}

impl Rng {
    /// The golden-ratio increment of SplitMix64.
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    pub(crate) const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::GAMMA);
        mix64(self.state)
    }

    /// Uniform in `0..n` by Lemire's multiply-shift; the bias is below 2^-40 for
    /// the small `n` used here, and it avoids a division.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `per_mille / 1000`.
    pub(crate) fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// Uniform in `[0, 1)` with 53 bits.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }

    /// Picks from `(weight, item)` pairs; tables are short, so a linear scan with the
    /// heaviest entries first beats anything cleverer.
    pub(crate) fn weighted<T: Copy>(&mut self, table: &[(u32, T)]) -> T {
        let total: u64 = table.iter().map(|&(w, _)| u64::from(w)).sum();
        let mut r = self.below(total);
        for &(w, item) in table {
            if r < u64::from(w) {
                return item;
            }
            r -= u64::from(w);
        }
        unreachable!("r < total")
    }
}

/// Zipf-Mandelbrot popularity over `0..n`: P(k) ~ (k + 1 + offset)^-1.125, sampled by
/// inverting the continuous power law (one draw, no table, O(1) for any `n`).
///
/// The exponent is 9/8 rather than a round 1.1 because x^(-1/8) is three square roots,
/// which keeps sampling bit-exact across platforms. The offset flattens the head: a pure
/// Zipf law over a few thousand users would hand a single account over 10% of all
/// events, where real firehose traffic has no user above a few percent.
pub(crate) struct PowerLaw {
    n: u64,
    offset: u64,
    /// a^(-1/8) at the lower end of the support.
    top: f64,
    /// a^(-1/8) - b^(-1/8): the range the uniform draw is scaled into.
    span: f64,
}

impl PowerLaw {
    pub(crate) fn new(n: u64, offset: u64) -> Self {
        let inv_eighth_root = |x: f64| 1.0 / x.sqrt().sqrt().sqrt();
        let top = inv_eighth_root((offset + 1) as f64);
        let bottom = inv_eighth_root((n + offset + 1) as f64);
        Self {
            n,
            offset,
            top,
            span: top - bottom,
        }
    }

    /// A rank in `0..n`; rank 0 is the most popular.
    pub(crate) fn sample(&self, rng: &mut Rng) -> u64 {
        let y = self.top - rng.unit() * self.span;
        let y2 = y * y;
        let y4 = y2 * y2;
        let x = 1.0 / (y4 * y4);
        (x as u64).saturating_sub(self.offset + 1).min(self.n - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_output() {
        // First outputs of the reference SplitMix64 seeded with 1234567.
        let mut rng = Rng::new(1_234_567);
        assert_eq!(rng.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(rng.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn below_and_between_stay_in_range() {
        let mut rng = Rng::new(7);
        for _ in 0..10_000 {
            assert!(rng.below(13) < 13);
            let v = rng.between(5, 9);
            assert!((5..=9).contains(&v));
            let u = rng.unit();
            assert!((0.0..1.0).contains(&u));
        }
    }

    #[test]
    fn power_law_is_skewed_and_in_range() {
        let law = PowerLaw::new(10_000, 10);
        let mut rng = Rng::new(42);
        let mut counts = vec![0u32; 10_000];
        for _ in 0..200_000 {
            counts[law.sample(&mut rng) as usize] += 1;
        }
        // The head is popular but not dominant, and popularity falls with rank.
        let top = f64::from(counts[0]) / 200_000.0;
        assert!((0.005..0.05).contains(&top), "top share {top}");
        assert!(counts[0] > counts[100] && counts[100] > counts[5_000]);
        // The tail is reached.
        assert!(counts[9_000..].iter().any(|&c| c > 0));
    }
}
