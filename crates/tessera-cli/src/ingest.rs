//! `tessera ingest SOURCE... --table URL`: NDJSON into a Tessera table in one commit,
//! with a progress line while it runs and a summary at the end.

use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use tessera_engine::TesseraSession;
use tessera_engine::{IngestOutcome, WriteProgress};

/// Arguments of `tessera ingest`.
#[derive(Args, Debug)]
pub struct IngestArgs {
    /// NDJSON files, globs or URLs (`.gz`/`.zst` decompressed); `-` reads standard input.
    #[arg(required = true)]
    sources: Vec<String>,
    /// The table: `s3://bucket/tables/events`, `file:///dir` or a directory; created when
    /// missing.
    #[arg(long)]
    table: String,
    /// How to print the summary.
    #[arg(long, value_enum, default_value_t = Report::Text)]
    report: Report,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Move the elements of high-cardinality arrays to side relations (Tiles-*), as
    /// `SET tessera.side_arrays` does; `false` keeps them whole in the documents.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    side_arrays: bool,
}

/// Summary formats.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// Lines for people, on stderr.
    Text,
    /// One JSON object on stdout, for scripts and benchmarks.
    Json,
}

/// Runs the ingest.
pub async fn run(session: &TesseraSession, args: IngestArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    // Open until the ingest ends: the sources name the spool by its descriptor.
    let mut spool = None;
    let mut sources = Vec::with_capacity(args.sources.len());
    for source in &args.sources {
        sources.push(match source.as_str() {
            "-" => {
                let file = spool.get_or_insert(spool_stdin()?);
                format!("/proc/self/fd/{}", file.as_raw_fd())
            }
            _ => source.clone(),
        });
    }
    session
        .sql(&format!("SET tessera.side_arrays = {}", args.side_arrays))
        .await?;
    let table = session.open_table(&args.table).await?;
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let progress = Arc::clone(table.progress());
    let ticker = show_progress.then(|| tokio::spawn(tick(progress, started)));
    let outcome = session.ingest(table, &args.table, &sources).await;
    if let Some(ticker) = ticker {
        ticker.abort();
        eprint!("\r\x1b[K");
    }
    let outcome = outcome?;
    let elapsed = started.elapsed();
    match args.report {
        Report::Text => print_text(&outcome, elapsed),
        Report::Json => println!("{}", report_json(&outcome, elapsed)),
    }
    Ok(())
}

/// Copies standard input, decompressed (gzip or zstd, sniffed from the magic bytes), to
/// a file without a name in the temporary directory: the regular readers can split it,
/// and a killed process leaves nothing behind.
fn spool_stdin() -> anyhow::Result<File> {
    let mut input = BufReader::new(std::io::stdin().lock());
    let head = input.fill_buf().context("cannot read standard input")?;
    let mut decoded: Box<dyn Read> = match head {
        [0x1f, 0x8b, ..] => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
        [0x28, 0xb5, 0x2f, 0xfd, ..] => Box::new(zstd::Decoder::with_buffer(input)?),
        _ => Box::new(input),
    };
    let mut file = tempfile::tempfile().context("cannot create a spool for standard input")?;
    std::io::copy(&mut decoded, &mut file).context("cannot spool standard input")?;
    file.flush()?;
    Ok(file)
}

async fn tick(progress: Arc<WriteProgress>, started: Instant) {
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let documents = progress.documents.load(Ordering::Relaxed);
        let bytes = progress.bytes_in.load(Ordering::Relaxed) as f64 / 1e6;
        let seconds = started.elapsed().as_secs_f64().max(1e-3);
        eprint!(
            "\r\x1b[K{documents} documents, {bytes:.0} MB, {:.0} MB/s, {} files written",
            bytes / seconds,
            progress.files.load(Ordering::Relaxed)
        );
    }
}

/// Per shredded path: its type and the share of all ingested documents whose value came
/// from the typed column (for a list: that held an array there, whatever its length).
fn typed_paths(outcome: &IngestOutcome) -> Vec<(String, String, f64)> {
    let mut paths: std::collections::BTreeMap<(String, String), f64> = Default::default();
    for file in &outcome.write.files {
        for path in &file.summary.schema.paths {
            let ty = format!("{:?}", path.ty).to_lowercase();
            *paths.entry((path.path.clone(), ty)).or_default() +=
                path.frequency * file.summary.rows as f64;
        }
    }
    let documents = outcome.documents.max(1) as f64;
    paths
        .into_iter()
        .map(|((path, ty), typed)| (path, ty, typed / documents))
        .collect()
}

/// Bytes of the data files written and of their side files.
fn bytes_out(outcome: &IngestOutcome) -> u64 {
    let files = outcome.write.files.iter();
    files
        .map(|f| f.size + f.sides.iter().map(|s| s.size).sum::<u64>())
        .sum()
}

/// Prints the summary of an ingest that took `elapsed` on stderr (also the demo's).
pub(crate) fn print_text(outcome: &IngestOutcome, elapsed: Duration) {
    let paths = typed_paths(outcome);
    eprintln!(
        "ingested {} documents into version {} in {:.2} s: {} files, {:.1} MB written, {} shredded paths",
        outcome.documents,
        outcome.write.version,
        elapsed.as_secs_f64(),
        outcome.write.files.len(),
        bytes_out(outcome) as f64 / 1e6,
        paths.len()
    );
    if outcome.rejects.count > 0 {
        eprintln!("warning: {}", outcome.rejects);
    }
    if let Some(file) = &outcome.reject_file {
        eprintln!("rejected lines, with reasons: {file}");
    }
}

fn report_json(outcome: &IngestOutcome, elapsed: Duration) -> serde_json::Value {
    let paths: Vec<_> = typed_paths(outcome)
        .into_iter()
        .map(
            |(path, ty, share)| serde_json::json!({"path": path, "type": ty, "typed_share": share}),
        )
        .collect();
    serde_json::json!({
        "documents": outcome.documents,
        "version": outcome.write.version,
        "files": outcome.write.files.len(),
        "bytes_out": bytes_out(outcome),
        "seconds": elapsed.as_secs_f64(),
        "rejected": outcome.rejects.count,
        "reject_file": outcome.reject_file,
        "paths": paths,
    })
}
