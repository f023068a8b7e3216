//! What a pushed request costs, at S3 Standard's US East prices as PushdownDB counted
//! them: a request at the GET price, the bytes the store scans at $0.002/GB and the
//! bytes it returns at $0.0007/GB (transfer inside a region is free).

/// The store's S3 Select scan rate over all requests (bytes/s): MinIO's, measured
/// between 60 and 190 MB/s on two cores (docs/BENCHMARKS.md).
pub const SELECT_BYTES_PER_S: f64 = 100e6;

/// One request, in nanodollars ($0.0004 per 1,000 GETs).
pub const REQUEST_NANODOLLARS: u64 = 400;
/// Nanodollars per GB (10^9 bytes) S3 Select scans.
pub const SCANNED_NANODOLLARS_PER_GB: u64 = 2_000_000;
/// Nanodollars per GB S3 Select returns.
pub const RETURNED_NANODOLLARS_PER_GB: u64 = 700_000;

/// The price of one S3 Select request that scanned `scanned_bytes` and returned
/// `returned_bytes`, in nanodollars.
pub fn select_nanodollars(scanned_bytes: u64, returned_bytes: u64) -> u64 {
    let per_gb = |bytes: u64, price: u64| (bytes as u128 * price as u128 / 1_000_000_000) as u64;
    REQUEST_NANODOLLARS
        + per_gb(scanned_bytes, SCANNED_NANODOLLARS_PER_GB)
        + per_gb(returned_bytes, RETURNED_NANODOLLARS_PER_GB)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gigabyte_scanned_and_a_tenth_returned() {
        assert_eq!(
            select_nanodollars(1_000_000_000, 100_000_000),
            400 + 2_000_000 + 70_000
        );
        assert_eq!(select_nanodollars(0, 0), REQUEST_NANODOLLARS);
    }
}
