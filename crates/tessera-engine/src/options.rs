//! Tessera's session settings, set with `SET tessera.<name> = <value>`.

use std::fmt;
use std::str::FromStr;

use datafusion::common::config::{ConfigExtension, ConfigField, Visit};
use datafusion::common::{DataFusionError, Result, extensions_options};

pub use crate::json::scanner::Validation;
use tessera_cache::block::{CACHE_BYTES_DEFAULT, CACHE_BYTES_MIN};

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

/// `tessera.dialect`: whose meaning SQL text has. 'postgres' (default) is DataFusion's
/// PostgreSQL grammar and semantics; 'duckdb' parses with DuckDB's grammar and gives
/// DuckDB's meanings where they differ (the `dialect` module says which), so queries
/// written for DuckDB run unchanged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SqlDialect {
    /// PostgreSQL's grammar and DataFusion's semantics.
    #[default]
    Postgres,
    /// DuckDB's grammar and semantics.
    DuckDb,
}

impl FromStr for SqlDialect {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "postgres" | "postgresql" => Ok(SqlDialect::Postgres),
            "duckdb" => Ok(SqlDialect::DuckDb),
            other => Err(DataFusionError::Configuration(format!(
                "dialect must be 'postgres' or 'duckdb', not '{other}'"
            ))),
        }
    }
}

impl fmt::Display for SqlDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SqlDialect::Postgres => "postgres",
            SqlDialect::DuckDb => "duckdb",
        })
    }
}

/// `tessera.pushdown`: where the filters and projections of raw NDJSON scans of S3 run.
/// 'off' (default): Tessera reads the objects and filters them itself; 's3select': the
/// store runs them (S3 Select, as PushdownDB: "PushdownDB: Accelerating a DBMS using S3
/// Computation") and sends back only the fields of the documents that may pass;
/// 'worker': Tessera's storage-side worker (`tessera.worker`) runs the scans with the
/// filters, projections and partial aggregates above them and sends back their output;
/// 'auto': each scan goes where PushdownDB's cost model, fed a sample of its input,
/// expects it to finish first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Pushdown {
    /// Every scan reads its objects.
    #[default]
    Off,
    /// Scans that can ask S3 Select do.
    S3Select,
    /// Scans and the per-partition operators above them run on the storage-side worker.
    Worker,
    /// Each scan goes where a cost model over a sample of its input says it is fastest.
    Auto,
}

impl FromStr for Pushdown {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" => Ok(Pushdown::Off),
            "s3select" => Ok(Pushdown::S3Select),
            "worker" => Ok(Pushdown::Worker),
            "auto" => Ok(Pushdown::Auto),
            other => Err(DataFusionError::Configuration(format!(
                "pushdown must be 'off', 's3select', 'worker' or 'auto', not '{other}'"
            ))),
        }
    }
}

impl fmt::Display for Pushdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pushdown::Off => "off",
            Pushdown::S3Select => "s3select",
            Pushdown::Worker => "worker",
            Pushdown::Auto => "auto",
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

/// `tessera.memory_limit`: how much memory a query's operators may hold, in bytes
/// (`2GB`, `512MiB`: decimal and binary units as in DuckDB) or as a share of the
/// machine's memory (`50%`). Beyond it, sorts, aggregates and joins spill to disk
/// where DataFusion can; others fail with a sentence naming the limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemoryLimit {
    /// A number of bytes.
    Bytes(u64),
    /// A share of physical memory (or of the cgroup's limit, when lower), in `(0, 1]`.
    Share(f64),
}

/// The default limit: half of physical memory. Operators track most but not all of what
/// a query holds (scan buffers, results on their way out), so half leaves room for the
/// rest before the kernel's OOM killer would end the process.
pub const DEFAULT_MEMORY_LIMIT: MemoryLimit = MemoryLimit::Share(0.5);

/// The smallest limit accepted: below it not even one batch fits.
pub const MEMORY_LIMIT_BYTES_MIN: u64 = 1024 * 1024;

impl MemoryLimit {
    /// The limit in bytes on this machine.
    pub fn bytes(&self) -> u64 {
        match *self {
            MemoryLimit::Bytes(n) => n,
            MemoryLimit::Share(share) => (physical_memory_bytes() as f64 * share) as u64,
        }
        .max(MEMORY_LIMIT_BYTES_MIN)
    }
}

impl FromStr for MemoryLimit {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        let text = s.trim();
        let invalid = || {
            DataFusionError::Configuration(format!(
                "memory_limit must be a size such as '2GB', '512MiB' or '50%', not '{text}'"
            ))
        };
        if let Some(percent) = text.strip_suffix('%') {
            let number: f64 = percent.trim().parse().map_err(|_| invalid())?;
            return match number > 0.0 && number <= 100.0 {
                true => Ok(MemoryLimit::Share(number / 100.0)),
                false => Err(invalid()),
            };
        }
        let bytes = parse_bytes(text).ok_or_else(invalid)?;
        match bytes >= MEMORY_LIMIT_BYTES_MIN {
            true => Ok(MemoryLimit::Bytes(bytes)),
            false => Err(DataFusionError::Configuration(format!(
                "memory_limit must be at least 1MiB, not '{text}'"
            ))),
        }
    }
}

impl fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MemoryLimit::Share(share) => write!(f, "{}%", share * 100.0),
            MemoryLimit::Bytes(n) => f.write_str(&format_bytes(n)),
        }
    }
}

/// A size in bytes as written in settings (`2GB`, `512 MiB`, `1.5gib`, `2000000`: decimal
/// and binary units as in DuckDB); `None` for anything else, zero or negative sizes, and
/// sizes beyond `u64`.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    if !number.is_finite() || number <= 0.0 {
        return None;
    }
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "m" | "mb" => 1000 * 1000,
        "g" | "gb" => 1000 * 1000 * 1000,
        "t" | "tb" => 1000 * 1000 * 1000 * 1000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return None,
    };
    let bytes = number * scale as f64;
    (bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// `tessera.cache_size`: the bytes the block cache may take on disk (`10GiB`, default
/// [`CACHE_BYTES_DEFAULT`]); its memory tier takes an eighth of it, at most 1 GiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSize(pub u64);

impl FromStr for CacheSize {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match parse_bytes(s) {
            Some(bytes) if bytes >= CACHE_BYTES_MIN => Ok(CacheSize(bytes)),
            _ => Err(DataFusionError::Configuration(format!(
                "cache_size must be a size of at least 16MiB such as '10GiB', not '{}'",
                s.trim()
            ))),
        }
    }
}

impl fmt::Display for CacheSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

/// The cache directory of the front ends (CLI, Python, servers), read from `env`:
/// `TESSERA_CACHE_DIR` when set (empty: no cache), else `tessera/queries` under
/// `XDG_CACHE_HOME` or `$HOME/.cache`; `None` with neither (no cache). A library
/// session starts without one (`tessera.cache_dir` empty) unless its options say.
pub fn default_cache_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(dir) = env("TESSERA_CACHE_DIR") {
        return (!dir.is_empty()).then_some(dir);
    }
    let cache = env("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .or_else(|| env("HOME").map(|home| format!("{home}/.cache")))?;
    Some(format!("{cache}/tessera/queries"))
}

impl TesseraOptions {
    /// Whether the region and predicate caches serve a scan of the store at `url`: a
    /// cache directory is set, and the store is remote or local tables are cached too.
    pub(crate) fn caches_table_at(&self, url: &str) -> bool {
        let local = url.starts_with("file://");
        !self.cache_dir.is_empty() && (!local || self.cache_local_tables.0)
    }
}

/// The default of `tessera.region_cache_size`: 1 GiB.
pub const REGION_CACHE_BYTES_DEFAULT: u64 = 1 << 30;

/// On/off settings: 'on' (or 'true') and 'off' (or 'false'), the error naming the
/// setting.
macro_rules! on_off_switch {
    ($($(#[$doc:meta])* $name:ident, $setting:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name(pub bool);

        impl FromStr for $name {
            type Err = DataFusionError;

            fn from_str(s: &str) -> Result<Self> {
                match s.trim().to_ascii_lowercase().as_str() {
                    "on" | "true" => Ok(Self(true)),
                    "off" | "false" => Ok(Self(false)),
                    other => Err(DataFusionError::Configuration(format!(
                        "{} must be 'on' or 'off', not '{other}'",
                        $setting
                    ))),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(if self.0 { "on" } else { "off" })
            }
        }
    )*};
}
on_off_switch!(
    /// `tessera.region_cache`: whether Tessera-table scans use the region cache ('on',
    /// default, when `tessera.cache_dir` is set) or not ('off').
    RegionCacheSwitch, "region_cache";
    /// `tessera.predicate_cache`: whether Tessera-table scans remember, per row group,
    /// which rows passed their filters and read only those rows when a later scan's
    /// filters are the same or stronger ('on', default, when `tessera.cache_dir` is set)
    /// or not ('off').
    PredicateCacheSwitch, "predicate_cache";
    /// `tessera.region_oracle`: whether the region cache keeps 95% of its bytes for the
    /// regions a background oracle chooses from the recent scans ('on', default) or
    /// gives all of them to the regions scans requested twice ('off').
    RegionOracleSwitch, "region_oracle";
    /// `tessera.block_cache`: whether scans of S3 keep the byte ranges they read in
    /// memory and in `tessera.cache_dir` ('on', default, when it is set) or not ('off').
    BlockCacheSwitch, "block_cache";
    /// `tessera.cache_local_tables`: whether the region and predicate caches also serve
    /// Tessera tables on the local filesystem ('on'), or only tables in object storage
    /// ('off', default: a local table has the OS page cache and nothing to save).
    CacheLocalTablesSwitch, "cache_local_tables";
    /// `tessera.bloom_join`: whether a join whose probe side S3 Select reads sends the
    /// build side's keys with it as a Bloom filter ('on') or not ('off', default). The
    /// store tests every row it scans against the filter, one `SUBSTRING` of the bits
    /// per hash function: PushdownDB's S3 ran those on its own fleet, but MinIO runs
    /// them on the store's cores, and there they cost more than the link time the
    /// smaller answers saved in every Bloom-join experiment of docs/BENCHMARKS.md.
    BloomJoinSwitch, "bloom_join";
    /// `tessera.top_k_sampling`: whether a top-K sort by a number of documents S3 Select
    /// reads samples a threshold first and asks the store only for the documents at or
    /// beyond it ('on', default) or not ('off').
    TopKSamplingSwitch, "top_k_sampling";
    /// `tessera.select_aggregation`: whether an aggregation of documents S3 Select reads
    /// has the store aggregate each object, per group for the largest groups ('on',
    /// default), or aggregates the documents the store returns ('off').
    SelectAggregationSwitch, "select_aggregation";
);

/// `tessera.region_cache_size`: the bytes regions may take on disk ('1GiB', default);
/// read when a directory is first opened by the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionCacheSize(pub u64);

impl FromStr for RegionCacheSize {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match parse_bytes(s) {
            Some(bytes) => Ok(Self(bytes)),
            None => Err(DataFusionError::Configuration(format!(
                "region_cache_size must be a size such as '1GiB', not '{}'",
                s.trim()
            ))),
        }
    }
}

impl fmt::Display for RegionCacheSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

/// `n` bytes for people: binary units when `n` is a whole number of MiB (as written
/// with `MiB`), decimal ones otherwise, one decimal.
pub fn format_bytes(n: u64) -> String {
    const BINARY: [(u64, &str); 3] = [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB")];
    const DECIMAL: [(u64, &str); 4] = [
        (1_000_000_000_000, "TB"),
        (1_000_000_000, "GB"),
        (1_000_000, "MB"),
        (1000, "KB"),
    ];
    let binary = BINARY
        .iter()
        .find(|(unit, _)| n >= *unit && n.is_multiple_of(*unit));
    let decimal = DECIMAL.iter().find(|(unit, _)| n >= *unit);
    match binary.or(decimal) {
        Some((unit, name)) => format!("{:.1} {name}", n as f64 / *unit as f64),
        None => format!("{n} bytes"),
    }
}

/// Physical memory, or the cgroup's memory limit when that is lower (a container's
/// processes are killed at the cgroup's limit, not the machine's).
fn physical_memory_bytes() -> u64 {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        // Without /proc (not Linux), assume a small machine rather than none.
        .unwrap_or(4 << 30);
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    cgroup.map_or(machine, |limit| limit.min(machine))
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
text_config_field!(
    OnError,
    ValidationSetting,
    MemoryLimit,
    SqlDialect,
    CacheSize,
    RegionCacheSwitch,
    RegionCacheSize,
    PredicateCacheSwitch,
    RegionOracleSwitch,
    BlockCacheSwitch,
    CacheLocalTablesSwitch,
    BloomJoinSwitch,
    TopKSamplingSwitch,
    SelectAggregationSwitch,
    Pushdown
);

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
        /// How much memory a query's operators may hold before they spill to disk or
        /// fail: a size ('2GB', '512MiB') or a share of physical memory (default '50%').
        pub memory_limit: MemoryLimit, default = DEFAULT_MEMORY_LIMIT
        /// Whose meaning SQL text has: 'postgres' (default) or 'duckdb' (DuckDB's
        /// grammar, `/` with a fractional result, `[...]` lists, NULLs sorted last).
        pub dialect: SqlDialect, default = SqlDialect::Postgres
        /// Whether writes to Tessera tables move the elements of high-cardinality arrays
        /// (long on average, and nothing but arrays at their path) to side relations
        /// that `json_each` reads (Tiles-*; true, default); false keeps them whole in
        /// the documents' binary (for comparison and diagnosis).
        pub side_arrays: bool, default = true
        /// Rows per Parquet row group of the files writes to Tessera tables create
        /// (262,144, default): smaller groups let statistics and the predicate cache
        /// skip finer, at some cost in size (for tests and tuning).
        pub row_group_rows: usize, default = 262_144
        /// A directory for the block cache: ranges of S3 objects that raw NDJSON and
        /// Tessera-table scans read, kept in memory and there, shared by every session of
        /// the process on that directory. Empty (default): no cache.
        pub cache_dir: String, default = String::new()
        /// Bytes the block cache may take on disk ('10GiB', default); read when a
        /// directory is first opened by the process.
        pub cache_size: CacheSize, default = CacheSize(CACHE_BYTES_DEFAULT)
        /// Whether scans of S3 keep the byte ranges they read in memory and in
        /// `cache_dir` ('on', default; only when `cache_dir` is set) or not ('off').
        pub block_cache: BlockCacheSwitch, default = BlockCacheSwitch(true)
        /// Whether Tessera-table scans keep their filtered, projected rows as regions in
        /// `<cache_dir>/regions` and answer later scans they contain from them ('on',
        /// default; only when `cache_dir` is set) or not ('off').
        pub region_cache: RegionCacheSwitch, default = RegionCacheSwitch(true)
        /// Bytes regions may take on disk ('1GiB', default); read when a directory is
        /// first opened by the process.
        pub region_cache_size: RegionCacheSize, default = RegionCacheSize(REGION_CACHE_BYTES_DEFAULT)
        /// Whether 95% of the region cache holds the regions a background oracle picks
        /// from the recent scans, after "Crystal: A Unified Cache Storage System for
        /// Analytical Databases" ('on', default), or all of it the regions scans
        /// requested twice ('off'); read when a directory is first opened by the process.
        pub region_oracle: RegionOracleSwitch, default = RegionOracleSwitch(true)
        /// Whether Tessera-table scans remember per row group which rows passed their
        /// filters, in memory and in `<cache_dir>/predicates`, and read only those rows
        /// when a later scan's filters are the same or stronger ('on', default; only
        /// when `cache_dir` is set) or not ('off').
        pub predicate_cache: PredicateCacheSwitch, default = PredicateCacheSwitch(true)
        /// Whether the region and predicate caches also serve Tessera tables on the local
        /// filesystem ('on'), or only those in object storage ('off', default).
        pub cache_local_tables: CacheLocalTablesSwitch, default = CacheLocalTablesSwitch(false)
        /// Where the filters and projections of raw NDJSON scans of S3 run: 'off'
        /// (default, Tessera reads the objects), 's3select' (the store runs them with
        /// S3 Select and returns only what may pass), 'worker' (the storage-side worker
        /// at `worker` runs them with the partial aggregates above) or 'auto' (each scan
        /// where a cost model expects it to finish first); answers stay exactly the same.
        pub pushdown: Pushdown, default = Pushdown::Off
        /// Whether a join whose probe side S3 Select reads sends the keys of its build
        /// side with the requests as a Bloom filter, so that only the documents that may
        /// join come back ('on'), or not ('off', default: the store's test of each row
        /// cost more than it saved on MinIO).
        pub bloom_join: BloomJoinSwitch, default = BloomJoinSwitch(false)
        /// Whether a top-K sort by a number of documents S3 Select reads samples a
        /// threshold first, so that only the documents at or beyond it come back ('on',
        /// default), or not ('off').
        pub top_k_sampling: TopKSamplingSwitch, default = TopKSamplingSwitch(true)
        /// Whether an aggregation of documents S3 Select reads has the store aggregate
        /// each object, per group for the largest groups of a sample ('on', default),
        /// or aggregates the documents the store returns ('off').
        pub select_aggregation: SelectAggregationSwitch, default = SelectAggregationSwitch(true)
        /// The address of the storage-side worker (`tessera serve --storage-side`), as
        /// `http://HOST:PORT`, for `pushdown = 'worker'`.
        pub worker: String, default = String::new()
        /// The bandwidth of one connection between Tessera and the object store (or the
        /// worker), in MiB/s, for `pushdown = 'auto'`'s cost model.
        pub link_mib: f64, default = 100.0
        /// How long a request to the object store (or the worker) waits for its first
        /// byte, in milliseconds, for `pushdown = 'auto'`'s cost model: a scan waits
        /// it once per request it cannot overlap, a table scan's footer and leaves of
        /// each file among them. 0 (default) leaves it out; S3 in the same region
        /// answers in about 30 ms.
        pub link_latency_ms: f64, default = 0.0
        /// The Ballista scheduler queries run on (`tessera cluster scheduler`), as
        /// `df://HOST:PORT` or `http://HOST:PORT`; empty (default) runs them here.
        pub cluster: String, default = String::new()
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
        assert_eq!(opts.dialect, SqlDialect::Postgres);
        ExtensionOptions::set(&mut opts, "dialect", "DuckDB").unwrap();
        assert_eq!(opts.dialect, SqlDialect::DuckDb);
        let err = ExtensionOptions::set(&mut opts, "dialect", "mysql")
            .unwrap_err()
            .to_string();
        assert!(err.contains("'postgres' or 'duckdb'"), "{err}");
        assert_eq!(opts.pushdown, Pushdown::Off);
        ExtensionOptions::set(&mut opts, "pushdown", "S3Select").unwrap();
        assert_eq!(opts.pushdown, Pushdown::S3Select);
        let err = ExtensionOptions::set(&mut opts, "pushdown", "everywhere")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("'off', 's3select', 'worker' or 'auto'"),
            "{err}"
        );
        ExtensionOptions::set(&mut opts, "pushdown", "worker").unwrap();
        assert_eq!(opts.pushdown, Pushdown::Worker);
        ExtensionOptions::set(&mut opts, "pushdown", "AUTO").unwrap();
        assert_eq!(opts.pushdown, Pushdown::Auto);
    }

    #[test]
    fn memory_limits_parse_and_print() {
        let cases = [
            ("2GB", MemoryLimit::Bytes(2_000_000_000), "2.0 GB"),
            ("512 MiB", MemoryLimit::Bytes(512 << 20), "512.0 MiB"),
            ("1.5gib", MemoryLimit::Bytes(3 << 29), "1536.0 MiB"),
            ("50%", MemoryLimit::Share(0.5), "50%"),
            ("2000000", MemoryLimit::Bytes(2_000_000), "2.0 MB"),
            ("16MB", MemoryLimit::Bytes(16_000_000), "16.0 MB"),
        ];
        for (text, limit, shown) in cases {
            let parsed: MemoryLimit = text.parse().unwrap();
            assert_eq!(parsed, limit, "{text}");
            assert_eq!(parsed.to_string(), shown);
            assert_eq!(parsed.to_string().parse::<MemoryLimit>().unwrap(), limit);
        }
        for bad in [
            "",
            "lots",
            "0",
            "-1GB",
            "101%",
            "1KB",
            "2 parsecs",
            "1e30GB",
            "NaN",
        ] {
            assert!(bad.parse::<MemoryLimit>().is_err(), "{bad}");
        }
        let size: CacheSize = "10GiB".parse().unwrap();
        assert_eq!((size.0, size.to_string().as_str()), (10 << 30, "10.0 GiB"));
        assert!("1MiB".parse::<CacheSize>().is_err(), "below the minimum");
        assert!("lots".parse::<CacheSize>().is_err());
        let share = MemoryLimit::Share(0.5).bytes();
        assert!(share >= MEMORY_LIMIT_BYTES_MIN && share < physical_memory_bytes());
    }

    #[test]
    fn the_default_cache_dir_follows_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                let found = pairs.iter().find(|(name, _)| *name == k);
                found.map(|(_, v)| v.to_string())
            }
        };
        let dir = |pairs| default_cache_dir(&env(pairs));
        assert_eq!(dir(&[("HOME", "/h")]).unwrap(), "/h/.cache/tessera/queries");
        let xdg = dir(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]);
        assert_eq!(xdg.unwrap(), "/x/tessera/queries");
        let chosen = dir(&[("HOME", "/h"), ("TESSERA_CACHE_DIR", "/c")]);
        assert_eq!(chosen.unwrap(), "/c");
        assert_eq!(dir(&[("HOME", "/h"), ("TESSERA_CACHE_DIR", "")]), None);
        assert_eq!(dir(&[]), None);
    }
}
