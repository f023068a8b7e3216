//! `tessera cache stats|clear`: what a cache directory holds (the block cache's ranges
//! and the region cache's regions), and emptying it.

use std::path::PathBuf;

use clap::Subcommand;
use tessera_cache::block::{DirStats, clear};
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
    /// Remove the cached ranges and regions (refused while a running process has the
    /// cache open).
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
        }
        CacheCommand::Clear { dir } => {
            let freed = clear(&dir)? + clear_regions(&dir)?;
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
