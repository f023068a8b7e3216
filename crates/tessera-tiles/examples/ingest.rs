//! Measures `write_file`: shreds NDJSON into JSON-tiles files the way `tessera ingest`
//! does (files of `--file-docs` documents, written on `--threads` threads at once) and
//! reports documents/s, MB/s of JSON in, bytes out, and the typed share per path.
//!
//! ```text
//! cargo run --release -p tessera-tiles --example ingest -- [--docs N] [--file PATH.ndjson]
//!     [--file-docs N] [--threads N] [--zstd LEVEL] [--partition-tiles N]
//!     [--cluster-keys N] [--page-rows N]
//! ```
//! Without `--file`, `--docs` Bluesky documents (seed 1) are generated first (not timed).

use std::collections::BTreeMap;
use std::time::Instant;

use tessera_tiles::summary::LeafType;
use tessera_tiles::{TilesOptions, WrittenFile, write_file};

struct Args {
    docs: u64,
    file: Option<String>,
    file_docs: usize,
    threads: usize,
    options: TilesOptions,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        docs: 1_000_000,
        file: None,
        file_docs: 262_144,
        threads: 2,
        options: TilesOptions::default(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--docs" => args.docs = number(value()?)?,
            "--file" => args.file = Some(value()?),
            "--file-docs" => args.file_docs = number(value()?)?.max(1) as usize,
            "--threads" => args.threads = number(value()?)?.max(1) as usize,
            "--zstd" => args.options.zstd_level = number(value()?)? as i32,
            "--partition-tiles" => args.options.partition_tiles = number(value()?)?.max(1) as usize,
            "--cluster-keys" => args.options.cluster_keys = number(value()?)? as usize,
            "--page-rows" => args.options.page_rows = number(value()?)?.max(1) as usize,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args()?;
    let text = match &args.file {
        Some(path) => std::fs::read(path)?,
        None => {
            let config = tessera_gen::BlueskyConfig::new(args.docs, 1);
            let mut out = Vec::new();
            tessera_gen::write_ndjson(&config, args.threads, &mut out)?;
            out
        }
    };
    let docs: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .collect();
    let chunks: Vec<&[&[u8]]> = docs.chunks(args.file_docs).collect();
    let options = args.options.clone();
    let start = Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..args.threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(chunk) = chunks.get(i) else { break };
                    let written = write_file(chunk, &options);
                    results
                        .lock()
                        .expect("no writer panicked")
                        .push((i, written));
                }
            });
        }
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut files: Vec<(usize, WrittenFile)> = Vec::new();
    for (i, written) in results.into_inner()? {
        files.push((i, written?));
    }
    files.sort_by_key(|(i, _)| *i);
    let bytes_in = text.len() as f64;
    let bytes_out: usize = files.iter().map(|(_, f)| f.parquet.len()).sum();
    println!(
        "{} docs, {:.1} MB JSON -> {} files, {:.1} MB Parquet in {:.2} s on {} threads: {:.0} docs/s, {:.1} MB/s",
        docs.len(),
        bytes_in / 1e6,
        files.len(),
        bytes_out as f64 / 1e6,
        elapsed,
        args.threads,
        docs.len() as f64 / elapsed,
        bytes_in / 1e6 / elapsed,
    );
    // Typed share per path over all files: documents served from the typed column (for
    // a list: holding an array there).
    let mut shares: BTreeMap<String, (LeafType, f64, u64)> = BTreeMap::new();
    for (_, file) in &files {
        for (path, stats) in file.summary.schema.paths.iter().zip(&file.summary.stats) {
            let entry = shares.entry(path.path.clone()).or_insert((path.ty, 0.0, 0));
            entry.1 += path.frequency * file.summary.rows as f64;
            entry.2 += stats.binary_count;
        }
    }
    // Where the bytes go: compressed size per Parquet column, largest first.
    let mut columns: BTreeMap<String, i64> = BTreeMap::new();
    for (_, file) in &files {
        let reader =
            parquet::file::serialized_reader::SerializedFileReader::new(file.parquet.clone())?;
        for row_group in parquet::file::reader::FileReader::metadata(&reader).row_groups() {
            for column in row_group.columns() {
                *columns.entry(column.column_path().string()).or_default() +=
                    column.compressed_size();
            }
        }
    }
    let mut columns: Vec<_> = columns.into_iter().collect();
    columns.sort_by_key(|(_, size)| -size);
    println!("| column | compressed MB |");
    println!("|---|---|");
    for (column, size) in columns.iter().take(12) {
        println!("| `{column}` | {:.2} |", *size as f64 / 1e6);
    }
    println!("| path | type | typed share | outliers |");
    println!("|---|---|---|---|");
    for (path, (ty, typed, binary)) in shares {
        println!(
            "| `{path}` | {ty:?} | {:.1}% | {binary} |",
            100.0 * typed / docs.len() as f64
        );
    }
    Ok(())
}
