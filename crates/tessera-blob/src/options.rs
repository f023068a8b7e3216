//! Tunables of the io_uring S3 client, with the defaults of
//! AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023).

use std::path::PathBuf;
use std::time::Duration;

use crate::crypt::EncryptionKey;
use crate::stats::Provider;

const MIB: u64 = 1024 * 1024;

/// How the client sizes, retries, hedges and spreads requests.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalOptions {
    /// Attempts per request before the last error is returned (at least 1).
    pub max_attempts: u32,
    /// First retry delay; doubled on every further attempt.
    pub base_backoff: Duration,
    /// Time limit of one attempt, however steadily bytes arrive.
    pub attempt_timeout: Duration,
    /// Time without any byte moving after which an attempt fails as stalled.
    pub stall_timeout: Duration,
    /// How ranges are split and coalesced.
    pub sizing: Sizing,
    /// When slow requests get a duplicate.
    pub hedging: Hedging,
    /// The network bandwidth to saturate, in Mbit/s; sizes the retriever threads and
    /// the concurrency model.
    pub bandwidth_mbit: u64,
    /// Retriever threads; `None` derives them from `bandwidth_mbit`.
    pub retrievers: Option<usize>,
    /// Whose request prices the cost accounting uses.
    pub provider: Provider,
    /// Keys per ListObjectsV2 page (1 to 1000, S3's maximum).
    pub list_page_size: u32,
    /// Client-side AES-256-GCM encryption of every object written and read (layout in
    /// `crypt`); off by default.
    pub encryption: Option<EncryptionKey>,
    /// A PEM bundle of the CAs trusted for `https` endpoints instead of the system
    /// store (a private endpoint with its own CA); see [`crate::tls`].
    pub ca_file: Option<PathBuf>,
}

/// Request sizing (AnyBlob: 8-16 MiB requests are cost- and throughput-optimal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizing {
    /// Ranges longer than this are split into parts of at most this many bytes, all
    /// longer than half of it.
    pub max_request: u64,
    /// Neighbouring ranges closer than this are fetched by one request (while the
    /// merged request stays within `max_request`).
    pub coalesce_gap: u64,
}

/// Hedging: a duplicate of a request that is later than most recent requests of its
/// size, keeping whichever finishes first.
#[derive(Debug, Clone, PartialEq)]
pub struct Hedging {
    /// Whether hedging is on.
    pub enabled: bool,
    /// The percentile of recent first-byte and completion times past which a request
    /// is hedged (0.5 to 1).
    pub percentile: f64,
    /// Recent requests of a size class needed before the percentile is trusted.
    pub min_samples: usize,
    /// Hedges are never sent earlier than this, so that fast, jittery links do not
    /// double their request count.
    pub min_delay: Duration,
}

/// Mbit/s one retriever thread serves (AnyBlob's `config.hpp`: 8000 Mbit/s each).
pub const MBIT_PER_RETRIEVER: u64 = 8_000;

impl Default for RetrievalOptions {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_backoff: Duration::from_millis(50),
            attempt_timeout: Duration::from_secs(120),
            stall_timeout: Duration::from_secs(10),
            sizing: Sizing::default(),
            hedging: Hedging::default(),
            bandwidth_mbit: 10_000,
            retrievers: None,
            provider: Provider::Aws,
            list_page_size: 1000,
            encryption: None,
            ca_file: None,
        }
    }
}

impl Default for Sizing {
    fn default() -> Self {
        Self {
            max_request: 16 * MIB,
            coalesce_gap: MIB,
        }
    }
}

impl Default for Hedging {
    fn default() -> Self {
        Self {
            enabled: true,
            percentile: 0.95,
            min_samples: 32,
            min_delay: Duration::from_millis(50),
        }
    }
}

impl RetrievalOptions {
    /// Retriever threads: as configured, else one per [`MBIT_PER_RETRIEVER`] of
    /// bandwidth, never more than the machine's hardware threads.
    pub fn retriever_threads(&self) -> usize {
        let hardware = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.retrievers
            .unwrap_or_else(|| self.bandwidth_mbit.div_ceil(MBIT_PER_RETRIEVER) as usize)
            .clamp(1, hardware.min(crate::uring::MAX_RETRIEVERS))
    }

    /// The defaults, overridden by `TESSERA_S3_*` variables read through `lookup`:
    /// `TESSERA_S3_HEDGING` (`on`/`off`), `TESSERA_S3_BANDWIDTH_MBIT`,
    /// `TESSERA_S3_RETRIEVERS`, `TESSERA_S3_PROVIDER` (`aws`, `gcp`, `ibm`, `azure`,
    /// `oci`), `TESSERA_S3_ENCRYPTION_KEY` (64 hex digits) and `TESSERA_S3_CA_FILE`
    /// (else `AWS_CA_BUNDLE`, as the AWS CLI reads it). Returns which variable
    /// is wrong, never its value (the key is secret).
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut options = Self::default();
        let number = |name: &str| -> Result<Option<u64>, String> {
            lookup(name)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("{name} must be a whole number"))
                })
                .transpose()
        };
        if let Some(v) = lookup("TESSERA_S3_HEDGING") {
            options.hedging.enabled = match v.trim() {
                "on" | "true" | "1" => true,
                "off" | "false" | "0" => false,
                _ => return Err("TESSERA_S3_HEDGING must be on or off".into()),
            };
        }
        if let Some(mbit) = number("TESSERA_S3_BANDWIDTH_MBIT")? {
            options.bandwidth_mbit = mbit;
        }
        if let Some(threads) = number("TESSERA_S3_RETRIEVERS")? {
            options.retrievers = Some(threads as usize);
        }
        if let Some(v) = lookup("TESSERA_S3_PROVIDER") {
            options.provider = match v.trim().to_ascii_lowercase().as_str() {
                "aws" => Provider::Aws,
                "gcp" => Provider::Gcp,
                "ibm" => Provider::Ibm,
                "azure" => Provider::Azure,
                "oci" => Provider::Oci,
                _ => return Err("TESSERA_S3_PROVIDER must be aws, gcp, ibm, azure or oci".into()),
            };
        }
        if let Some(v) = lookup("TESSERA_S3_ENCRYPTION_KEY") {
            let key = EncryptionKey::from_hex(&v)
                .map_err(|e| format!("TESSERA_S3_ENCRYPTION_KEY: {e}"))?;
            options.encryption = Some(key);
        }
        options.ca_file = lookup("TESSERA_S3_CA_FILE")
            .or_else(|| lookup("AWS_CA_BUNDLE"))
            .filter(|v| !v.trim().is_empty())
            .map(PathBuf::from);
        options.validate()?;
        Ok(options)
    }

    /// Checks the settings a client cannot run with; returns what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_attempts == 0 {
            return Err("max_attempts must be at least 1".into());
        }
        if self.sizing.max_request == 0 {
            return Err("sizing.max_request must be positive".into());
        }
        if !(0.5..=1.0).contains(&self.hedging.percentile) {
            return Err(format!(
                "hedging.percentile must be within 0.5..=1, not {}",
                self.hedging.percentile
            ));
        }
        if self.stall_timeout.is_zero() || self.attempt_timeout.is_zero() {
            return Err("timeouts must be positive".into());
        }
        if self.bandwidth_mbit == 0 {
            return Err("bandwidth_mbit must be positive".into());
        }
        Ok(())
    }

    /// Bytes per second the client aims for.
    pub fn bandwidth_bytes_per_second(&self) -> f64 {
        self.bandwidth_mbit as f64 * 1e6 / 8.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_settings_are_named() {
        assert_eq!(RetrievalOptions::default().validate(), Ok(()));
        let bad = [
            RetrievalOptions {
                max_attempts: 0,
                ..RetrievalOptions::default()
            },
            RetrievalOptions {
                sizing: Sizing {
                    max_request: 0,
                    coalesce_gap: 0,
                },
                ..RetrievalOptions::default()
            },
            RetrievalOptions {
                hedging: Hedging {
                    percentile: 1.5,
                    ..Hedging::default()
                },
                ..RetrievalOptions::default()
            },
            RetrievalOptions {
                stall_timeout: Duration::ZERO,
                ..RetrievalOptions::default()
            },
        ];
        for options in bad {
            assert!(options.validate().is_err(), "{options:?}");
        }
    }

    #[test]
    fn variables_override_the_defaults_and_errors_hide_the_key() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let set = env(&[
            ("TESSERA_S3_HEDGING", "off"),
            ("TESSERA_S3_BANDWIDTH_MBIT", "25000"),
            ("TESSERA_S3_PROVIDER", "OCI"),
            (
                "TESSERA_S3_ENCRYPTION_KEY",
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            ),
        ]);
        let options = RetrievalOptions::from_lookup(&set).unwrap();
        assert!(!options.hedging.enabled);
        assert_eq!(options.bandwidth_mbit, 25_000);
        assert_eq!(options.provider, Provider::Oci);
        assert!(options.encryption.is_some());
        assert_eq!(
            RetrievalOptions::from_lookup(&env(&[])).unwrap(),
            RetrievalOptions::default()
        );
        let bad_key = env(&[("TESSERA_S3_ENCRYPTION_KEY", "s3cr3t")]);
        let err = RetrievalOptions::from_lookup(&bad_key).unwrap_err();
        assert!(err.starts_with("TESSERA_S3_ENCRYPTION_KEY") && !err.contains("s3cr3t"));
        let bad_number = env(&[("TESSERA_S3_RETRIEVERS", "many")]);
        assert!(RetrievalOptions::from_lookup(&bad_number).is_err());
    }
}
