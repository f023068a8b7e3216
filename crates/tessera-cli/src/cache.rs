//! `tessera cache stats|clear`: what a cache directory holds (the block cache's ranges,
//! the region cache's regions and the predicate cache's rows), and emptying it.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use tessera_cache::block::{DirStats, clear};
use tessera_cache::predicate::{self, PredicateCache, PredicateLimits};
use tessera_engine::options::format_bytes;
use tessera_engine::{RegionDirStats, clear_regions};

/// What to do with a block cache directory (the one `SET tessera.cache_dir` names).
#[derive(Subcommand, Debug)]
pub enum CacheCommand {
    /// Show the cache's size on disk and what it answered over its lifetime.
    Stats {
        /// The cache directory.
        #[arg(long, env = "TESSERA_CACHE_DIR")]
        dir: PathBuf,
    },
    /// Remove the cached ranges, regions and predicates (refused while a running
    /// process has the cache open).
    Clear {
        /// The cache directory.
        #[arg(long, env = "TESSERA_CACHE_DIR")]
        dir: PathBuf,
    },
}

/// Runs `command`, printing its answer on stdout.
pub fn run(command: CacheCommand) -> anyhow::Result<()> {
    match command {
        CacheCommand::Stats { dir } => {
            println!("{}", describe(&DirStats::read(&dir)?));
            println!("{}", describe_regions(&RegionDirStats::read(&dir)?));
            println!("{}", describe_predicates(&dir)?);
        }
        CacheCommand::Clear { dir } => {
            let freed = clear(&dir)? + clear_regions(&dir)? + clear_predicates(&dir)?;
            println!("cleared {}: {} freed", dir.display(), format_bytes(freed));
        }
    }
    Ok(())
}

/// The statistics as lines of `name: value`.
fn describe(stats: &DirStats) -> String {
    let lifetime = &stats.lifetime;
    let ratio = lifetime
        .hit_ratio()
        .map_or_else(|| "none yet".to_string(), |r| format!("{:.1}%", r * 100.0));
    [
        format!("directory: {}", stats.dir.display()),
        format!("in use: {}", if stats.in_use { "yes" } else { "no" }),
        format!("disk blocks: {}", stats.block_files),
        format!("bytes on disk: {}", format_bytes(stats.disk_bytes)),
        format!("ranges written to disk: {}", lifetime.admitted),
        format!("hits: {}", lifetime.hits),
        format!("misses: {}", lifetime.misses),
        format!("hit ratio: {ratio}"),
        format!(
            "bytes from cache: {}",
            format_bytes(lifetime.bytes_from_cache)
        ),
    ]
    .join("\n")
}

/// The region cache's statistics as lines of `name: value` (names that do not repeat
/// the block cache's, so each line means one thing).
fn describe_regions(stats: &RegionDirStats) -> String {
    [
        format!("regions: {}", stats.regions),
        format!("bytes in regions: {}", format_bytes(stats.bytes)),
        format!("scans answered from regions: {}", stats.hits),
        format!(
            "regions in use: {}",
            if stats.in_use { "yes" } else { "no" }
        ),
    ]
    .join("\n")
}

/// The predicate cache's entries (row groups with the rows a predicate selected), as
/// the file a previous process left holds them; none when there is no such file.
fn describe_predicates(dir: &Path) -> anyhow::Result<String> {
    let (entries, bytes) = match dir.join(predicate::DIR_NAME).is_dir() {
        true => {
            let cache = PredicateCache::open(dir, PredicateLimits::default())?;
            (cache.len(), cache.bytes())
        }
        false => (0, 0),
    };
    Ok([
        format!("predicate entries: {entries}"),
        format!("bytes of predicate entries: {}", format_bytes(bytes as u64)),
    ]
    .join("\n"))
}

/// Removes the predicate cache's directory; the bytes it held.
fn clear_predicates(dir: &Path) -> anyhow::Result<u64> {
    let predicates = dir.join(predicate::DIR_NAME);
    if !predicates.is_dir() {
        return Ok(0);
    }
    let mut freed = 0;
    for entry in std::fs::read_dir(&predicates)? {
        freed += entry?.metadata()?.len();
    }
    std::fs::remove_dir_all(&predicates)?;
    Ok(freed)
}
