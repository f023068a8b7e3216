//! Opening one file (or byte range) of an NDJSON scan: read, split into lines, decode,
//! and handle malformed lines as the session says (fail with the exact place, or skip
//! and report).

use std::ops::Range;
use std::sync::Arc;

use arrow::array::RecordBatch;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileOpenFuture, FileOpener};
use datafusion::physical_plan::metrics::Count;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::ObjectStore;
use tessera_cache::block::CachedStore;

use super::decode::{BatchDecoder, LineError};
use super::lines::{Line, LineSplitter};
use super::read::{Chunk, Codec, Gets, ReadPlan, count_newlines};
use super::select::SelectRead;
use crate::access::extraction::ExtractionPlan;
use crate::options::{OnError, Validation};
use crate::rejects::{Reject, RejectLog};

/// Scan settings fixed when the query is planned.
#[derive(Debug, Clone)]
pub struct ScanSettings {
    /// What to do with malformed lines.
    pub on_error: OnError,
    /// How much of each line is checked.
    pub validation: Validation,
    /// Bytes per ranged read.
    pub block_size: u64,
    /// Ranged reads in flight per partition.
    pub prefetch: usize,
    /// Where skipped lines are reported.
    pub rejects: Arc<RejectLog>,
    /// Lines a Tessera table could not store exactly are malformed (ingest).
    pub storable: bool,
}

/// Counters shared by the openers of one scan partition.
#[derive(Debug, Clone)]
pub struct ScanMetrics {
    /// Bytes read from storage (compressed size for compressed files).
    pub bytes_scanned: Count,
    /// Malformed lines skipped.
    pub lines_rejected: Count,
    /// The ranged reads of the files.
    pub gets: Gets,
}

/// Opens the files of one partition of an NDJSON scan.
#[derive(Clone)]
pub struct NdjsonOpener {
    /// The extraction all files share.
    pub plan: Arc<ExtractionPlan>,
    /// S3 Select, asked first for each whole object when the scan pushes to it.
    pub select: Option<SelectRead>,
    /// The store the files are in (through `cache` when there is one).
    pub store: Arc<dyn ObjectStore>,
    /// The block cache's view of `store`, told each file's entity tag from this query's
    /// listing, so no range of another version of a file is served.
    pub cache: Option<Arc<CachedStore>>,
    /// Rows per batch.
    pub batch_size: usize,
    /// Error handling and read sizes.
    pub settings: ScanSettings,
    /// Where to count.
    pub metrics: ScanMetrics,
    /// Prepended to object paths in messages (`/` or `s3://bucket/`).
    pub name_prefix: String,
}

impl FileOpener for NdjsonOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        // S3 Select reads objects whole; the pushdown rule keeps their files unsplit.
        let whole = file
            .range
            .as_ref()
            .is_none_or(|r| r.start == 0 && r.end as u64 >= file.object_meta.size);
        let Some(select) = self.select.clone().filter(|_| whole) else {
            return self.open_read(file);
        };
        let opener = self.clone();
        Ok(Box::pin(async move {
            let key = file.object_meta.location.to_string();
            let codec = Codec::from_name(&key);
            let answered = select
                .batches(&key, codec, &file.partition_values, opener.batch_size)
                .await?;
            match answered {
                Some(batches) => Ok(futures::stream::iter(batches.into_iter().map(Ok)).boxed()),
                None => opener.open_read(file)?.await,
            }
        }))
    }
}

impl NdjsonOpener {
    /// Reads `file` (or its byte range) from the store and decodes its lines.
    fn open_read(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let name = format!("{}{}", self.name_prefix, file.object_meta.location);
        if let Some(cache) = &self.cache {
            cache.observe(&file.object_meta);
        }
        let size = file.object_meta.size;
        let codec = Codec::from_name(&name);
        let range = match &file.range {
            Some(r) if !codec.is_compressed() => r.start as u64..r.end as u64,
            _ => 0..size,
        };
        let read = ReadPlan {
            store: Arc::clone(&self.store),
            location: file.object_meta.location.clone(),
            name: name.clone(),
            size,
            block_size: self.settings.block_size,
            prefetch: self.settings.prefetch,
            gets: self.metrics.gets.clone(),
        };
        let decoder = BatchDecoder::new(
            Arc::clone(&self.plan),
            file.partition_values.clone(),
            self.batch_size,
            self.settings.validation,
        )?
        .with_storable_check(self.settings.storable);
        let state = FileScan {
            chunks: read.chunks(range.start.saturating_sub(1)..range.end, codec),
            // Offsets in a compressed file count decompressed bytes, so its one partition
            // owns every line, however far past the compressed size.
            splitter: LineSplitter::new(
                range.start,
                if codec.is_compressed() {
                    u64::MAX
                } else {
                    range.end
                },
            ),
            decoder,
            pending: Vec::new(),
            settings: self.settings.clone(),
            metrics: self.metrics.clone(),
            read,
            range,
            name,
            finished: false,
        };
        Ok(Box::pin(async move {
            Ok(futures::stream::try_unfold(state, FileScan::next).boxed())
        }))
    }
}

/// A rejected line whose absolute line number is not known yet.
struct Pending {
    offset: u64,
    index: u64,
    error: LineError,
    /// The rejected line itself, for the reject file of an ingest.
    text: Vec<u8>,
}

impl Pending {
    /// The reject record of this line; `lines_before` is the number of lines before the
    /// partition's first, when known (line numbers are 0, "unknown", otherwise).
    fn reject(&self, file: &str, lines_before: Option<u64>) -> Reject {
        Reject {
            file: file.to_string(),
            line: lines_before.map_or(0, |b| b + self.index + 1),
            offset: self.offset,
            reason: format!(
                "expected {} at byte {} of the line",
                self.error.expected, self.error.offset
            ),
        }
    }
}

/// The state of one file scan, advanced by [`FileScan::next`].
struct FileScan {
    chunks: BoxStream<'static, Result<Chunk>>,
    splitter: LineSplitter,
    decoder: BatchDecoder,
    pending: Vec<Pending>,
    settings: ScanSettings,
    metrics: ScanMetrics,
    read: ReadPlan,
    range: Range<u64>,
    name: String,
    finished: bool,
}

impl FileScan {
    async fn next(mut self) -> Result<Option<(RecordBatch, Self)>> {
        loop {
            if let Some(batch) = self.decoder.next_batch() {
                return Ok(Some((batch, self)));
            }
            if self.finished {
                self.report_pending().await?;
                return Ok(None);
            }
            let chunk = match self.splitter.is_done() {
                true => None,
                false => self.chunks.next().await.transpose()?,
            };
            let fatal = match &chunk {
                Some(chunk) => {
                    if !Codec::from_name(&self.name).is_compressed() {
                        self.metrics.bytes_scanned.add(chunk.bytes.len());
                    }
                    let (decoder, pending, on_error) =
                        (&mut self.decoder, &mut self.pending, self.settings.on_error);
                    self.splitter
                        .push(chunk, |line| decode_line(decoder, pending, on_error, &line))
                }
                None => {
                    let (decoder, pending, on_error) =
                        (&mut self.decoder, &mut self.pending, self.settings.on_error);
                    let result = self
                        .splitter
                        .finish(|line| decode_line(decoder, pending, on_error, &line));
                    self.decoder.flush()?;
                    self.finished = true;
                    if Codec::from_name(&self.name).is_compressed() {
                        self.metrics.bytes_scanned.add(self.read.size as usize);
                    }
                    result
                }
            };
            if let Err(stop) = fatal {
                return Err(self.malformed(stop).await);
            }
        }
    }

    /// Lines before the first owned line: 0 for a scan from the start of the file.
    async fn lines_before(&mut self) -> Result<u64> {
        if self.range.start == 0 {
            return Ok(0);
        }
        // The first owned line follows the first newline at or after `start - 1`.
        let first = self
            .splitter
            .first_line_offset()
            .expect("a rejected line was owned, so the first owned line is known");
        Ok(count_newlines(&self.read, 0..first - 1).await? + 1)
    }

    async fn malformed(&mut self, stop: Stop) -> DataFusionError {
        let p = match stop {
            Stop::Malformed(p) => p,
            Stop::Failed(e) => return e,
        };
        match self.lines_before().await {
            Ok(before) => DataFusionError::Execution(format!(
                "malformed JSON in {} line {} (byte offset {}): expected {} at byte {} of the line \
                 (SET tessera.on_error = 'skip' or --on-error skip skips such lines)",
                self.name,
                before + p.index + 1,
                p.offset,
                p.error.expected,
                p.error.offset
            )),
            Err(e) => e,
        }
    }

    async fn report_pending(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let before = self.lines_before().await?;
        for p in self.pending.drain(..) {
            self.metrics.lines_rejected.add(1);
            self.settings
                .rejects
                .record(p.reject(&self.name, Some(before)), &p.text);
        }
        Ok(())
    }
}

/// Why decoding stopped early.
enum Stop {
    /// A malformed line with `on_error = fail`.
    Malformed(Pending),
    /// Building or projecting a batch failed.
    Failed(DataFusionError),
}

fn decode_line(
    decoder: &mut BatchDecoder,
    pending: &mut Vec<Pending>,
    on_error: OnError,
    line: &Line<'_>,
) -> std::result::Result<(), Stop> {
    let error = match decoder.decode(line) {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(e)) => e,
        Err(e) => return Err(Stop::Failed(e)),
    };
    let p = Pending {
        offset: line.offset,
        index: line.index,
        error,
        text: line.bytes.to_vec(),
    };
    match on_error {
        OnError::Fail => Err(Stop::Malformed(p)),
        OnError::Skip => {
            pending.push(p);
            Ok(())
        }
    }
}

impl Drop for FileScan {
    /// A scan cut short (LIMIT) still reports what it skipped, with exact byte offsets;
    /// line numbers are exact when the scan started at the beginning of the file.
    fn drop(&mut self) {
        let before = (self.range.start == 0).then_some(0);
        for p in self.pending.drain(..) {
            self.settings
                .rejects
                .record(p.reject(&self.name, before), &p.text);
        }
    }
}
