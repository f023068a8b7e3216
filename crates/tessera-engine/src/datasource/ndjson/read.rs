//! Reading one file (or one byte range of it) as a stream of chunks: ranged reads with a
//! bounded number in flight, and gzip/zstd decompression on a blocking thread.

use std::io::Read;
use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::object_store::ObjectStoreUrl;
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::sync::mpsc;

use crate::block_cache::GET_NANODOLLARS;

/// Bytes per read past the end of a range, where only the rest of one line is needed.
const TAIL_READ: u64 = 64 * 1024;
/// Decompressed bytes per chunk handed to the parser.
const DECOMPRESSED_CHUNK: usize = 4 * 1024 * 1024;
/// Chunks buffered between the decompressing thread and the parser.
const DECOMPRESS_QUEUE: usize = 2;

/// How a file is compressed, decided by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// Plain text.
    None,
    /// gzip (`.gz`), including multi-member files.
    Gzip,
    /// zstd (`.zst`, `.zstd`).
    Zstd,
}

impl Codec {
    /// The codec for a file name.
    pub fn from_name(name: &str) -> Self {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".gz") || lower.ends_with(".gzip") {
            Codec::Gzip
        } else if lower.ends_with(".zst") || lower.ends_with(".zstd") {
            Codec::Zstd
        } else {
            Codec::None
        }
    }

    /// True for compressed files, which cannot be split into byte ranges.
    pub fn is_compressed(self) -> bool {
        self != Codec::None
    }
}

/// A piece of a file's (decompressed) content and where it starts.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Offset of the first byte in the decompressed content.
    pub offset: u64,
    /// The bytes.
    pub bytes: Bytes,
}

/// Settings of one file read.
#[derive(Debug, Clone)]
pub struct ReadPlan {
    /// The store holding the file.
    pub store: Arc<dyn ObjectStore>,
    /// The object's path.
    pub location: Path,
    /// The file as messages name it (`/data/a.json.gz`, `s3://bucket/a.json.gz`).
    pub name: String,
    /// The object's size in bytes.
    pub size: u64,
    /// Bytes per ranged read.
    pub block_size: u64,
    /// Ranged reads in flight.
    pub prefetch: usize,
    /// Where the ranged reads are counted.
    pub gets: Gets,
}

/// The ranged reads (GETs) of a scan's files, and what the store bills for them; the
/// CSV scan counts its reads with the same rule ([`Gets::new`]).
#[derive(Debug, Clone, Default)]
pub struct Gets {
    /// Ranged reads sent.
    pub requests: Count,
    /// Their price, for a store that bills them (not the local filesystem; not a block
    /// cache in front of the store, which counts the GETs it saves itself).
    pub cost_nanodollars: Option<Count>,
}

impl Gets {
    /// The counters of `partition` in `metrics` (`requests`, and
    /// `request_cost_nanodollars` when the store bills them) of a scan reading the
    /// store at `store`, through a block cache if `cached`.
    pub(crate) fn new(
        metrics: &ExecutionPlanMetricsSet,
        partition: usize,
        store: &ObjectStoreUrl,
        cached: bool,
    ) -> Self {
        let counter = |name| MetricBuilder::new(metrics).counter(name, partition);
        let billed = !cached && !store.as_str().starts_with("file://");
        Self {
            requests: counter("requests"),
            cost_nanodollars: billed.then(|| counter("request_cost_nanodollars")),
        }
    }

    /// Counts one read sent, at its price where the store bills it.
    pub(crate) fn count_one(&self) {
        self.requests.add(1);
        if let Some(cost) = &self.cost_nanodollars {
            cost.add(GET_NANODOLLARS);
        }
    }
}

impl ReadPlan {
    /// Streams the content from `range.start` on. Reads are sized `block_size` up to
    /// `range.end` and small beyond it, where a partition only finishes its last line;
    /// the consumer stops polling once it has what it needs.
    pub fn chunks(&self, range: Range<u64>, codec: Codec) -> BoxStream<'static, Result<Chunk>> {
        assert!(
            range.start <= range.end && range.end <= self.size,
            "range within the object"
        );
        match codec {
            Codec::None => self.ranged(range.start, range.end, TAIL_READ).boxed(),
            compressed => {
                debug_assert_eq!(range, 0..self.size, "compressed files are read whole");
                let raw = self
                    .ranged(0, self.size, self.block_size)
                    .map_ok(|chunk| chunk.bytes)
                    .boxed();
                decompress(raw, compressed, self.name.clone())
            }
        }
    }

    /// Ranges `[start, end)` in `block_size` reads, then `[end, size)` in `tail` reads
    /// (none when `tail` is 0).
    fn ranged(
        &self,
        start: u64,
        end: u64,
        tail: u64,
    ) -> impl futures::Stream<Item = Result<Chunk>> + use<> {
        let mut ranges = Vec::new();
        let mut at = start;
        while at < self.size && (at < end || tail > 0) {
            let step = if at < end {
                self.block_size.min(end - at)
            } else {
                tail
            };
            let next = (at + step).min(self.size);
            ranges.push(at..next);
            at = next;
        }
        let store = Arc::clone(&self.store);
        let location = self.location.clone();
        let gets = self.gets.clone();
        futures::stream::iter(ranges)
            .map(move |range| {
                let store = Arc::clone(&store);
                let location = location.clone();
                gets.count_one();
                // A spawned read makes progress while the parser is busy with earlier chunks.
                tokio::spawn(async move {
                    let bytes = store.get_range(&location, range.clone()).await?;
                    Ok::<_, DataFusionError>(Chunk {
                        offset: range.start,
                        bytes,
                    })
                })
            })
            .buffered(self.prefetch)
            .map(|joined| joined.map_err(|e| DataFusionError::External(Box::new(e)))?)
    }
}

/// Decompresses a stream of compressed blocks on a blocking thread.
fn decompress(
    raw: BoxStream<'static, Result<Bytes>>,
    codec: Codec,
    name: String,
) -> BoxStream<'static, Result<Chunk>> {
    let (block_tx, block_rx) = mpsc::channel::<Result<Bytes>>(DECOMPRESS_QUEUE);
    let (chunk_tx, chunk_rx) = mpsc::channel::<Result<Chunk>>(DECOMPRESS_QUEUE);
    tokio::spawn(async move {
        let mut raw = raw;
        while let Some(block) = raw.next().await {
            if block_tx.send(block).await.is_err() {
                break;
            }
        }
    });
    tokio::task::spawn_blocking(move || {
        let input = ChannelReader {
            rx: block_rx,
            current: Bytes::new(),
        };
        let mut decoder: Box<dyn Read> = match codec {
            Codec::Gzip => Box::new(flate2::read::MultiGzDecoder::new(input)),
            Codec::Zstd => match zstd::stream::read::Decoder::new(input) {
                Ok(d) => Box::new(d),
                Err(e) => {
                    let _ = chunk_tx.blocking_send(Err(corrupt(&name, codec, e)));
                    return;
                }
            },
            Codec::None => Box::new(input),
        };
        let mut offset = 0u64;
        loop {
            let mut buf = BytesMut::zeroed(DECOMPRESSED_CHUNK);
            let mut filled = 0;
            let result = loop {
                match decoder.read(&mut buf[filled..]) {
                    Ok(0) => break Ok(()),
                    Ok(n) => {
                        filled += n;
                        if filled == buf.len() {
                            break Ok(());
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            };
            if filled > 0 {
                buf.truncate(filled);
                let chunk = Chunk {
                    offset,
                    bytes: buf.freeze(),
                };
                offset += filled as u64;
                if chunk_tx.blocking_send(Ok(chunk)).is_err() {
                    return;
                }
            }
            match result {
                Ok(()) if filled == 0 => return,
                Ok(()) => {}
                Err(e) => {
                    let _ = chunk_tx.blocking_send(Err(corrupt(&name, codec, e)));
                    return;
                }
            }
        }
    });
    tokio_stream_from(chunk_rx)
}

fn corrupt(name: &str, codec: Codec, error: std::io::Error) -> DataFusionError {
    // A read failure of the underlying store travels through the decoder as an I/O
    // error; hand it back unchanged so that it is explained as a store failure.
    match error
        .into_inner()
        .map(|inner| inner.downcast::<DataFusionError>())
    {
        Some(Ok(original)) => *original,
        Some(Err(inner)) => DataFusionError::Execution(format!(
            "{name} is not valid {} data: {inner}",
            codec_name(codec)
        )),
        None => {
            DataFusionError::Execution(format!("{name} is not valid {} data", codec_name(codec)))
        }
    }
}

fn codec_name(codec: Codec) -> &'static str {
    match codec {
        Codec::Gzip => "gzip",
        Codec::Zstd => "zstd",
        Codec::None => "uncompressed",
    }
}

fn tokio_stream_from<T: Send + 'static>(mut rx: mpsc::Receiver<T>) -> BoxStream<'static, T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

/// Presents blocks arriving on a channel as one `Read` for the decompressors.
struct ChannelReader {
    rx: mpsc::Receiver<Result<Bytes>>,
    current: Bytes,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(block)) => self.current = block,
                Some(Err(e)) => return Err(std::io::Error::other(e)),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = self.current.slice(n..);
        Ok(n)
    }
}

/// Counts the newlines in `range` of a plain file (to number lines of a later range).
pub async fn count_newlines(plan: &ReadPlan, range: Range<u64>) -> Result<u64> {
    let mut chunks = plan.ranged(range.start, range.end, 0);
    let mut count = 0u64;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        let len = (range.end.saturating_sub(chunk.offset)).min(chunk.bytes.len() as u64) as usize;
        count += memchr::memchr_iter(b'\n', &chunk.bytes[..len]).count() as u64;
        if chunk.offset + chunk.bytes.len() as u64 >= range.end {
            break;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::PutPayload;
    use object_store::memory::InMemory;
    use std::io::Write;

    async fn plan_for(data: Vec<u8>, block_size: u64) -> ReadPlan {
        let store = Arc::new(InMemory::new());
        let location = Path::from("dir/f");
        let size = data.len() as u64;
        store.put(&location, PutPayload::from(data)).await.unwrap();
        ReadPlan {
            store,
            location,
            name: "/dir/f".to_string(),
            size,
            block_size,
            prefetch: 3,
            gets: Gets::default(),
        }
    }

    async fn collect(stream: BoxStream<'static, Result<Chunk>>, start: u64) -> Vec<u8> {
        let chunks: Vec<Chunk> = stream.try_collect().await.unwrap();
        let mut out = Vec::new();
        for c in chunks {
            assert_eq!(c.offset, start + out.len() as u64, "chunks are contiguous");
            out.extend_from_slice(&c.bytes);
        }
        out
    }

    fn sample(n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| format!("{{\"i\":{i}}}\n").into_bytes())
            .collect()
    }

    #[tokio::test]
    async fn ranged_reads_cover_the_rest_of_the_file_in_order() {
        let data = sample(5000);
        let plan = plan_for(data.clone(), 1000).await;
        let got = collect(plan.chunks(17..30_000, Codec::None), 17).await;
        assert_eq!(got, data[17..]);
    }

    #[tokio::test]
    async fn gzip_and_zstd_decompress_to_the_original() {
        let data = sample(200_000);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data[..1000]).unwrap();
        let mut gz_bytes = gz.finish().unwrap();
        // A second gzip member, as produced by concatenating .gz files.
        let mut gz2 = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz2.write_all(&data[1000..]).unwrap();
        gz_bytes.extend(gz2.finish().unwrap());
        let zst = zstd::encode_all(&data[..], 1).unwrap();
        for (bytes, codec) in [(gz_bytes, Codec::Gzip), (zst, Codec::Zstd)] {
            let size = bytes.len() as u64;
            let plan = plan_for(bytes, 4096).await;
            let got = collect(plan.chunks(0..size, codec), 0).await;
            assert_eq!(got.len(), data.len(), "{codec:?}");
            assert!(got == data, "{codec:?}");
        }
    }

    #[tokio::test]
    async fn corrupt_input_is_a_clear_error() {
        let plan = plan_for(b"definitely not gzip".to_vec(), 4096).await;
        let err = plan
            .chunks(0..19, Codec::Gzip)
            .try_collect::<Vec<_>>()
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(" /dir/f is not valid gzip data"), "{err}");
    }

    #[tokio::test]
    async fn counts_newlines_in_a_prefix() {
        let data = sample(1000);
        let plan = plan_for(data.clone(), 777).await;
        for end in [0u64, 1, 500, 5000, data.len() as u64] {
            let expected = data[..end as usize].iter().filter(|&&b| b == b'\n').count() as u64;
            assert_eq!(
                count_newlines(&plan, 0..end).await.unwrap(),
                expected,
                "end {end}"
            );
        }
    }

    #[test]
    fn codecs_come_from_names() {
        assert_eq!(Codec::from_name("a/b.json.gz"), Codec::Gzip);
        assert_eq!(Codec::from_name("b.ndjson.ZST"), Codec::Zstd);
        assert_eq!(Codec::from_name("b.jsonl"), Codec::None);
    }
}
