//! The progress line of a query that runs longer than a second: files and bytes scanned
//! so far, rows read and rows produced, on stderr when stderr is a terminal.
//!
//! The counts come from the metrics the scans already keep for `EXPLAIN ANALYZE`: the
//! physical plan is walked while it runs, and its counters are shared atomics, so they
//! read what the scans have done up to now. `files_processed` is DataFusion's count of
//! the file ranges a scan has finished, `bytes_scanned` Tessera's (NDJSON scans count it
//! per chunk read, table scans per file read), `output_rows` of the leaves the rows read.
//! The bar shows the larger of the share of ranges finished and the share of the bytes
//! of the files read (below 100% until every range is finished: a table scan reads only
//! some of a file's columns, and reading runs ahead of the rest of a plan).

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::metrics::MetricsSet;

/// A query shows no progress line before it has run this long.
const SHOW_AFTER_MS: u64 = 1000;

/// Environment variable that overrides [`SHOW_AFTER_MS`], so tests can ask for the line
/// at once without a query slow enough to show it.
const SHOW_AFTER_MS_VAR: &str = "TESSERA_PROGRESS_AFTER_MS";

/// Time between redraws of the progress line.
const REDRAW_INTERVAL_MS: u64 = 100;

/// The share of the bar bytes read alone fill: the ranges are not finished.
const BYTES_SHARE_MAX: f64 = 0.99;

/// Cells of the bar.
const BAR_CELLS: usize = 10;

/// The line is cut here, so it never wraps on an ordinary terminal (a wrapped line
/// could not be cleared with one carriage return).
const LINE_CHARS_MAX: usize = 79;

/// What the scans of a plan have to do: file ranges (a large file is split into byte
/// ranges read in parallel), distinct files and their bytes. Computed once per query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Work {
    /// File ranges of every scan.
    pub ranges: usize,
    /// Distinct files of every scan.
    pub files: usize,
    /// Bytes of the file ranges.
    pub bytes: u64,
}

impl Work {
    /// The work of every file scan in `plan`.
    pub fn of(plan: &Arc<dyn ExecutionPlan>) -> Self {
        let mut ranges = 0;
        let mut bytes = 0;
        let mut files = HashSet::new();
        visit(plan, &mut |node| {
            let Some(exec) = node.downcast_ref::<DataSourceExec>() else {
                return;
            };
            let Some(config) = exec.data_source().downcast_ref::<FileScanConfig>() else {
                return;
            };
            for file in config.file_groups.iter().flat_map(|g| g.iter()) {
                ranges += 1;
                bytes += match &file.range {
                    Some(range) => u64::try_from(range.end - range.start).unwrap_or(0),
                    None => file.object_meta.size,
                };
                files.insert(file.object_meta.location.clone());
            }
        });
        Self {
            ranges,
            files: files.len(),
            bytes,
        }
    }
}

/// What a running query has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// File ranges finished.
    pub ranges_done: usize,
    /// Bytes read from storage.
    pub bytes_scanned: usize,
    /// Rows the scans produced.
    pub rows_read: usize,
    /// Rows of the result written so far.
    pub rows_out: usize,
}

impl Snapshot {
    /// The counters of `plan` now; `rows_out` counts the result rows written.
    pub fn of(plan: &Arc<dyn ExecutionPlan>, rows_out: usize) -> Self {
        let mut snapshot = Self {
            rows_out,
            ..Self::default()
        };
        visit(plan, &mut |node| {
            let Some(metrics) = node.metrics() else {
                return;
            };
            snapshot.ranges_done += sum(&metrics, "files_processed");
            snapshot.bytes_scanned += sum(&metrics, "bytes_scanned");
            if node.children().is_empty() {
                snapshot.rows_read += metrics.output_rows().unwrap_or(0);
            }
        });
        snapshot
    }

    /// The share of the work done, from 0 to 1.
    pub fn share(&self, work: Work) -> f64 {
        let share_of = |done: f64, total: f64| match total > 0.0 {
            true => (done / total).min(1.0),
            false => 0.0,
        };
        let ranges = share_of(self.ranges_done as f64, work.ranges as f64);
        let bytes = share_of(self.bytes_scanned as f64, work.bytes as f64);
        match ranges < 1.0 {
            true => ranges.max(bytes.min(BYTES_SHARE_MAX)),
            false => ranges,
        }
    }

    /// The progress line: a bar of [`Self::share`], then the counts.
    pub fn line(&self, work: Work, elapsed: Duration) -> String {
        let share = self.share(work);
        let filled = (share * BAR_CELLS as f64).floor() as usize;
        let files = plural(work.files, "file");
        let files = match work.ranges > work.files {
            true => format!("{}/{} parts of {files}", self.ranges_done, work.ranges),
            false => format!("{}/{files}", self.ranges_done),
        };
        let line = format!(
            "[{}{}] {:>3.0}% {files}, {:.1} MB, {} rows in, {} out, {:.1} s",
            "#".repeat(filled),
            " ".repeat(BAR_CELLS - filled),
            share * 100.0,
            self.bytes_scanned as f64 / 1e6,
            compact(self.rows_read),
            compact(self.rows_out),
            elapsed.as_secs_f64()
        );
        line.chars().take(LINE_CHARS_MAX).collect()
    }
}

/// The metric `name` summed over every node of `plan` (and its partitions).
pub fn metric_total(plan: &Arc<dyn ExecutionPlan>, name: &str) -> usize {
    let mut total = 0;
    visit(plan, &mut |node| {
        total += node.metrics().map_or(0, |metrics| sum(&metrics, name));
    });
    total
}

fn sum(metrics: &MetricsSet, name: &str) -> usize {
    metrics.sum_by_name(name).map_or(0, |v| v.as_usize())
}

/// `n` and `noun`, plural unless `n` is 1.
fn plural(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ => format!("{n} {noun}s"),
    }
}

/// `n` in at most five characters or so: 950, 12.3k, 4.5M, 1.2G.
fn compact(n: usize) -> String {
    let value = n as f64;
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", value / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1}M", value / 1e6),
        _ => format!("{:.1}G", value / 1e9),
    }
}

/// How long a query runs before its progress line shows.
fn show_after() -> Duration {
    let configured = std::env::var(SHOW_AFTER_MS_VAR).ok();
    let ms = configured
        .and_then(|v| v.parse().ok())
        .unwrap_or(SHOW_AFTER_MS);
    Duration::from_millis(ms)
}

/// Calls `f` on `plan` and every node below it.
fn visit(plan: &Arc<dyn ExecutionPlan>, f: &mut impl FnMut(&Arc<dyn ExecutionPlan>)) {
    f(plan);
    for child in plan.children() {
        visit(child, f);
    }
}

/// The progress line of one running query; drawn only when stderr is a terminal.
///
/// It is drawn by a thread of its own, not a task of the runtime: a query keeps every
/// worker of the runtime busy, and a task would wait for one to yield.
pub struct ProgressBar {
    ticker: Option<(mpsc::Sender<()>, thread::JoinHandle<()>)>,
}

impl ProgressBar {
    /// Starts watching `plan`, which began running at `started`; `rows_out` counts the
    /// result rows written.
    pub fn start(
        plan: Arc<dyn ExecutionPlan>,
        rows_out: Arc<AtomicUsize>,
        started: Instant,
    ) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self { ticker: None };
        }
        let (stop, stopped) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("tessera-progress".to_string())
            .spawn(move || draw_until(&stopped, &plan, &rows_out, started));
        // Without a thread the query runs on, without its progress line.
        Self {
            ticker: thread.ok().map(|thread| (stop, thread)),
        }
    }

    /// Stops redrawing and clears the line, if one was drawn.
    pub fn finish(self) {
        if let Some((stop, thread)) = self.ticker {
            drop(stop);
            // The thread clears its line before it ends: once joined, nothing more of it
            // can appear after what the caller prints next.
            let _ = thread.join();
        }
    }
}

/// Draws the progress line of `plan` every [`REDRAW_INTERVAL_MS`] from [`show_after`]
/// on, until `stopped` says to stop; then clears it.
fn draw_until(
    stopped: &mpsc::Receiver<()>,
    plan: &Arc<dyn ExecutionPlan>,
    rows_out: &AtomicUsize,
    started: Instant,
) {
    let wait = show_after().saturating_sub(started.elapsed());
    if stopped.recv_timeout(wait) != Err(RecvTimeoutError::Timeout) {
        return;
    }
    let work = Work::of(plan);
    let redraw_interval = Duration::from_millis(REDRAW_INTERVAL_MS);
    loop {
        let snapshot = Snapshot::of(plan, rows_out.load(Ordering::Relaxed));
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[K{}", snapshot.line(work, started.elapsed()));
        let _ = stderr.flush();
        drop(stderr);
        if stopped.recv_timeout(redraw_interval) != Err(RecvTimeoutError::Timeout) {
            break;
        }
    }
    eprint!("\r\x1b[K");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_counts_and_a_bar_of_ranges_finished() {
        let snapshot = Snapshot {
            ranges_done: 1,
            bytes_scanned: 12_345_678,
            rows_read: 1_500_000,
            rows_out: 3,
        };
        let work = Work {
            ranges: 4,
            files: 4,
            bytes: 1 << 40,
        };
        assert_eq!(
            snapshot.line(work, Duration::from_millis(2500)),
            "[##        ]  25% 1/4 files, 12.3 MB, 1.5M rows in, 3 out, 2.5 s"
        );
        let split = Work {
            ranges: 2,
            files: 1,
            bytes: 1 << 40,
        };
        assert!(
            snapshot
                .line(split, Duration::ZERO)
                .contains("1/2 parts of 1 file,"),
        );
    }

    /// The counters read while a query runs are the scans' own: nothing before it
    /// starts, every range, byte and row of the file once it has read them all.
    #[tokio::test]
    async fn the_snapshot_follows_the_scan() {
        use futures::StreamExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.json");
        let lines: String = (0..5000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
        std::fs::write(&path, &lines).unwrap();
        let options = tessera_engine::SessionOptions {
            target_partitions: Some(2),
            ..Default::default()
        };
        let session = {
            let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap();
            tessera_engine::TesseraSession::new(s3, options).unwrap()
        };
        let sql = format!("SELECT max(j->>'n') FROM '{}'", path.display());
        let frame = session.sql(&sql).await.unwrap();
        let task = Arc::new(frame.task_ctx());
        let plan = frame.create_physical_plan().await.unwrap();
        let work = Work::of(&plan);
        assert_eq!(work.files, 1);
        assert_eq!(work.bytes, lines.len() as u64);
        assert_eq!(Snapshot::of(&plan, 0), Snapshot::default());
        let mut stream =
            datafusion::physical_plan::execute_stream(Arc::clone(&plan), task).unwrap();
        while let Some(batch) = stream.next().await {
            batch.unwrap();
        }
        let done = Snapshot::of(&plan, 1);
        assert_eq!(done.ranges_done, work.ranges);
        assert_eq!(done.bytes_scanned, lines.len());
        assert_eq!(done.rows_read, 5000);
        assert_eq!(done.rows_out, 1);
    }

    #[test]
    fn bytes_move_the_bar_until_the_ranges_are_finished() {
        let work = Work {
            ranges: 2,
            files: 1,
            bytes: 1000,
        };
        let reading = Snapshot {
            bytes_scanned: 600,
            ..Snapshot::default()
        };
        assert_eq!(reading.share(work), 0.6);
        let read = Snapshot {
            bytes_scanned: 1000,
            ..Snapshot::default()
        };
        assert_eq!(read.share(work), BYTES_SHARE_MAX);
        let finished = Snapshot {
            ranges_done: 2,
            bytes_scanned: 10,
            ..Snapshot::default()
        };
        assert_eq!(finished.share(work), 1.0);
        assert_eq!(Snapshot::default().share(Work::default()), 0.0);
    }

    #[test]
    fn long_lines_are_cut_so_they_never_wrap() {
        let snapshot = Snapshot {
            ranges_done: usize::MAX / 2,
            bytes_scanned: usize::MAX / 2,
            rows_read: usize::MAX / 2,
            rows_out: usize::MAX / 2,
        };
        let work = Work {
            ranges: usize::MAX,
            files: usize::MAX,
            bytes: u64::MAX,
        };
        let line = snapshot.line(work, Duration::from_secs(1 << 40));
        assert_eq!(line.chars().count(), LINE_CHARS_MAX, "{line}");
    }
}
