//! Tessera's session settings, set with `SET tessera.<name> = <value>`.

use std::fmt;
use std::str::FromStr;

use datafusion::common::config::{ConfigExtension, ConfigField, Visit};
use datafusion::common::{DataFusionError, Result, extensions_options};

pub use crate::json::scanner::Validation;

/// What a scan does with a malformed record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnError {
    /// Stop the query with an error naming the file, line and byte offset.
    #[default]
    Fail,
    /// Skip the record, count it and report where it was.
    Skip,
}

impl FromStr for OnError {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "fail" | "error" => Ok(OnError::Fail),
            "skip" => Ok(OnError::Skip),
            other => Err(DataFusionError::Configuration(format!(
                "on_error must be 'fail' or 'skip', not '{other}'"
            ))),
        }
    }
}

impl fmt::Display for OnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OnError::Fail => "fail",
            OnError::Skip => "skip",
        })
    }
}

/// `tessera.validation`: the scanner's [`Validation`] as a session setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValidationSetting(pub Validation);

impl FromStr for ValidationSetting {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "full" => Ok(Self(Validation::Full)),
            "structure" => Ok(Self(Validation::Structure)),
            other => Err(DataFusionError::Configuration(format!(
                "validation must be 'full' or 'structure', not '{other}'"
            ))),
        }
    }
}

impl fmt::Display for ValidationSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Validation::Full => "full",
            Validation::Structure => "structure",
        })
    }
}

/// Settings whose values are parsed from text and shown as text.
macro_rules! text_config_field {
    ($($t:ty),*) => {$(
        impl ConfigField for $t {
            fn visit<V: Visit>(&self, v: &mut V, key: &str, description: &'static str) {
                v.some(key, self, description)
            }

            fn set(&mut self, _key: &str, value: &str) -> Result<()> {
                *self = value.parse()?;
                Ok(())
            }
        }
    )*};
}
text_config_field!(OnError, ValidationSetting);

/// Largest ranged read a scan may issue; bounds the memory of one partition.
pub const MAX_BLOCK_SIZE: usize = 64 * 1024 * 1024;
/// Most ranged reads one scan partition may keep in flight.
pub const MAX_PREFETCH: usize = 64;

extensions_options! {
    /// Tessera's settings (prefix `tessera.`).
    pub struct TesseraOptions {
        /// What to do with a malformed NDJSON line: 'fail' (default) or 'skip'.
        pub on_error: OnError, default = OnError::Fail
        /// How NDJSON documents are checked; both levels reject the same malformed lines.
        /// 'structure' (default) stops locating values after the last one a query reads
        /// and checks the rest with a cheaper token loop; 'full' parses every document
        /// with the locating descent.
        pub validation: ValidationSetting, default = ValidationSetting(Validation::Structure)
        /// Bytes per ranged read when scanning raw files (8 MiB: AnyBlob's
        /// sweet spot, VLDB 2023).
        pub scan_block_size: usize, default = 8 * 1024 * 1024
        /// Ranged reads each scan partition keeps in flight.
        pub scan_prefetch: usize, default = 4
        /// Where `CREATE TABLE name AS ...` puts Tessera tables (`<warehouse>/<name>`);
        /// empty (default): such tables are DataFusion in-memory tables.
        pub warehouse: String, default = String::new()
        /// Whether scans of Tessera tables read shredded paths from their typed columns
        /// and skip files by their statistics (true, default); false answers every JSON
        /// access from the reconstructed documents (for comparison and diagnosis).
        pub typed_reads: bool, default = true
        /// Whether aggregates over Tessera tables group low-cardinality string paths on
        /// their dictionary codes (true, default); false leaves grouping to DataFusion
        /// (for comparison and diagnosis).
        pub group_on_codes: bool, default = true
    }
}

impl ConfigExtension for TesseraOptions {
    const PREFIX: &'static str = "tessera";
}

impl TesseraOptions {
    /// Block size clamped to `[64 KiB, MAX_BLOCK_SIZE]`.
    pub fn block_size(&self) -> usize {
        self.scan_block_size.clamp(64 * 1024, MAX_BLOCK_SIZE)
    }

    /// Prefetch depth clamped to `[1, MAX_PREFETCH]`.
    pub fn prefetch(&self) -> usize {
        self.scan_prefetch.clamp(1, MAX_PREFETCH)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::common::config::ExtensionOptions;

    #[test]
    fn settings_parse_and_validate() {
        let mut opts = TesseraOptions::default();
        ExtensionOptions::set(&mut opts, "on_error", "SKIP").unwrap();
        assert_eq!(opts.on_error, OnError::Skip);
        let err = ExtensionOptions::set(&mut opts, "on_error", "ignore")
            .unwrap_err()
            .to_string();
        assert!(err.contains("'fail' or 'skip'"), "{err}");
        ExtensionOptions::set(&mut opts, "validation", "Full").unwrap();
        assert_eq!(opts.validation.0, Validation::Full);
        assert!(ExtensionOptions::set(&mut opts, "validation", "some").is_err());
        ExtensionOptions::set(&mut opts, "scan_block_size", "1").unwrap();
        assert_eq!(opts.block_size(), 64 * 1024);
        ExtensionOptions::set(&mut opts, "scan_prefetch", "100000").unwrap();
        assert_eq!(opts.prefetch(), MAX_PREFETCH);
    }
}
