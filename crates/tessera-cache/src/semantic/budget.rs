//! Splitting the local cache space between the oracle and requested caches.
//!
//! "Crystal: A Unified Cache Storage System for Analytical Databases" (Section
//! 6) recommends RR-LRU2 / OR-K_G with 95% of the space for the oracle-region
//! cache: RR only bridges workload changes until the next oracle run.

/// Default share of the cache given to the oracle-region cache, in percent.
pub const ORACLE_SHARE_DEFAULT_PERCENT: u64 = 95;

/// Byte budgets of the two region caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheBudget {
    /// Oracle-region cache budget.
    pub oracle_bytes: u64,
    /// Requested-region cache budget.
    pub requested_bytes: u64,
}

impl CacheBudget {
    /// The paper's default 95% / 5% split of `total_bytes`.
    pub fn split(total_bytes: u64) -> Self {
        Self::split_with(total_bytes, ORACLE_SHARE_DEFAULT_PERCENT)
    }

    /// Splits `total_bytes`, giving `oracle_share_percent` to the oracle cache.
    pub fn split_with(total_bytes: u64, oracle_share_percent: u64) -> Self {
        assert!(oracle_share_percent <= 100, "a share is at most 100%");
        let oracle_bytes = percent_of(total_bytes, oracle_share_percent);
        let out = CacheBudget {
            oracle_bytes,
            requested_bytes: total_bytes - oracle_bytes,
        };
        assert_eq!(out.oracle_bytes + out.requested_bytes, total_bytes);
        out
    }

    /// The RR history length: the paper shortens RR's LRU-k history "by the
    /// RR/OR split" because OR captures long-term effects. We read that as the
    /// RR share of the oracle history length, at least 2 so LRU-2 can work.
    pub fn requested_history_len(&self, history_len_max: usize) -> usize {
        let total = u128::from(self.oracle_bytes) + u128::from(self.requested_bytes);
        if total == 0 {
            return 2;
        }
        let scaled = history_len_max as u128 * u128::from(self.requested_bytes) / total;
        (scaled as usize).max(2)
    }
}

/// `value * percent / 100` without overflow (rounds down).
pub fn percent_of(value: u64, percent: u64) -> u64 {
    let out = u128::from(value) * u128::from(percent) / 100;
    u64::try_from(out).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_split_is_95_5_and_exact() {
        let b = CacheBudget::split(1000);
        assert_eq!((b.oracle_bytes, b.requested_bytes), (950, 50));
        let big = CacheBudget::split(u64::MAX);
        assert_eq!(big.oracle_bytes + big.requested_bytes, u64::MAX);
        assert_eq!(b.requested_history_len(128), 6);
    }
}
