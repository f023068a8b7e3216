//! `tessera gen`: writes generated data sets (Bluesky events, GitHub-like events, API
//! models, combined JSON TPC-H) to a local path or an `s3://` URL, with gzip or zstd
//! compression chosen by the file name.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use anyhow::Context;
use bytes::Bytes;
use clap::Subcommand;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, WriteMultipart};
use tessera_blob::Location;
use tessera_engine::TesseraSession;
use tessera_gen::{BlueskyConfig, EventsConfig, KeyOrder, ModelsConfig, TpchConfig};
use tokio::sync::mpsc;

/// Bytes buffered before a piece is handed to the uploader.
const UPLOAD_PIECE: usize = 8 * 1024 * 1024;
/// Multipart part size (S3 needs at least 5 MiB per part).
const PART_SIZE: usize = 16 * 1024 * 1024;
/// Pieces queued between the generator and the uploader, and parts uploading at once.
const UPLOAD_QUEUE: usize = 4;

/// A data set to generate.
#[derive(Subcommand, Debug)]
pub enum Dataset {
    /// Bluesky-Jetstream-like events as NDJSON (.json, .json.gz or .json.zst).
    Bluesky {
        /// Number of documents.
        #[arg(long, default_value_t = 1_000_000)]
        docs: u64,
        /// Random seed; the same seed gives the same bytes.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Users in the pool per million events (250000: about 113K distinct active
        /// users per million events, as JSONBench's data; 1000000 with
        /// --popularity-offset 40: about 194K).
        #[arg(long, default_value_t = BlueskyConfig::new(0, 0).users_per_million)]
        users_per_million: u64,
        /// Flattens the head of user activity (0: a pure Zipf law; 10: the busiest user
        /// has a couple of percent of events).
        #[arg(long, default_value_t = BlueskyConfig::new(0, 0).popularity_offset)]
        popularity_offset: u64,
        /// Top-level key order: jetstream (fixed) or shuffled (drawn per event).
        #[arg(long, default_value = "jetstream")]
        key_order: KeyOrder,
        /// Destination: a path or s3://bucket/key.
        #[arg(long)]
        out: String,
    },
    /// GitHub-events-like NDJSON: nested, with arrays of objects (commits, labels,
    /// assignees), a few very long arrays and schema outliers on purpose.
    Events {
        /// Number of documents.
        #[arg(long, default_value_t = 1_000_000)]
        docs: u64,
        /// Random seed; the same seed gives the same bytes.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Most commits in an ordinary push (counts are skewed toward one).
        #[arg(long, default_value_t = EventsConfig::new(0, 0).commits_max)]
        commits_max: u64,
        /// Share of events with one very long array (100-600 commits or 100-300 labels).
        #[arg(long, default_value_t = share(EventsConfig::new(0, 0).long_per_million))]
        long_share: f64,
        /// Share of events that break the schema (reordered keys; null, non-object or
        /// mistyped elements; missing keys).
        #[arg(long, default_value_t = share(EventsConfig::new(0, 0).outlier_per_million))]
        outlier_share: f64,
        /// Actors in the pool (repositories: twice as many).
        #[arg(long, default_value_t = EventsConfig::new(0, 0).actors)]
        actors: u64,
        /// Most hashtags in an event's `tags`: up to 4 skewed toward none; above,
        /// uniform from none to this many (long arrays of strings).
        #[arg(long, default_value_t = EventsConfig::new(0, 0).tags_max)]
        tags_max: u64,
        /// Destination: a path or s3://bucket/key.
        #[arg(long)]
        out: String,
    },
    /// API-model-like NDJSON: shapes, members and operations as objects keyed by names,
    /// thousands of distinct keys across documents.
    Models {
        /// Number of documents.
        #[arg(long, default_value_t = 100_000)]
        docs: u64,
        /// Random seed; the same seed gives the same bytes.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Distinct member names in the vocabulary (Zipf-like popularity).
        #[arg(long, default_value_t = ModelsConfig::new(0, 0).keys)]
        keys: u64,
        /// Destination: a path or s3://bucket/key.
        #[arg(long)]
        out: String,
    },
    /// TPC-H's eight tables as one NDJSON stream of objects keyed by column name (the
    /// "combined JSON TPC-H" workload; .json, .json.gz or .json.zst).
    TpchJson {
        /// Scale factor (1 is about 8.7 million documents, 2.8 GB).
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Random seed; the same seed gives the same bytes.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Destination: a path or s3://bucket/key.
        #[arg(long)]
        out: String,
    },
}

/// Writes a whole data set as NDJSON to the sink it is given and returns the number of
/// (uncompressed) bytes; it runs on a blocking thread.
type Generate = Box<dyn FnOnce(&mut dyn Write) -> std::io::Result<u64> + Send>;

/// Runs `tessera gen`.
pub async fn run(session: &TesseraSession, dataset: Dataset) -> anyhow::Result<()> {
    let started = Instant::now();
    let (what, out, bytes) = match dataset {
        Dataset::Bluesky {
            docs,
            seed,
            users_per_million,
            popularity_offset,
            key_order,
            out,
        } => {
            let config = BlueskyConfig {
                users_per_million,
                popularity_offset,
                key_order,
                ..BlueskyConfig::new(docs, seed)
            };
            let bytes = write_bluesky(session, &config, &out).await?;
            (format!("{docs} documents"), out, bytes)
        }
        Dataset::Events {
            docs,
            seed,
            commits_max,
            long_share,
            outlier_share,
            actors,
            tags_max,
            out,
        } => {
            let config = EventsConfig {
                commits_max,
                long_per_million: per_million("--long-share", long_share)?,
                outlier_per_million: per_million("--outlier-share", outlier_share)?,
                actors,
                tags_max,
                ..EventsConfig::new(docs, seed)
            };
            let bytes = write_generated(session, &out, events_job(config)?).await?;
            (format!("{docs} events"), out, bytes)
        }
        Dataset::Models {
            docs,
            seed,
            keys,
            out,
        } => {
            let config = ModelsConfig {
                keys,
                ..ModelsConfig::new(docs, seed)
            };
            let bytes = write_generated(session, &out, models_job(config)?).await?;
            (format!("{docs} models"), out, bytes)
        }
        Dataset::TpchJson { sf, seed, out } => {
            let config = TpchConfig::new(sf, seed)?;
            let threads = worker_threads();
            let generate: Generate = Box::new(move |mut sink: &mut dyn Write| {
                tessera_gen::write_tpch_ndjson(&config, threads, &mut sink)
            });
            let bytes = write_generated(session, &out, generate).await?;
            (format!("TPC-H SF {sf}"), out, bytes)
        }
    };
    eprintln!(
        "wrote {what} ({:.1} MB uncompressed) to {out} in {:.1} s",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Writes `config`'s events on all cores, once its settings are checked.
fn events_job(config: EventsConfig) -> anyhow::Result<Generate> {
    let commits_max = config.commits_max;
    anyhow::ensure!(
        (1..=tessera_gen::COMMITS_MAX_LIMIT).contains(&commits_max),
        "--commits-max must be between 1 and {}, not {commits_max}",
        tessera_gen::COMMITS_MAX_LIMIT
    );
    let tags_max = config.tags_max;
    anyhow::ensure!(
        (1..=tessera_gen::TAGS_MAX_LIMIT).contains(&tags_max),
        "--tags-max must be between 1 and {}, not {tags_max}",
        tessera_gen::TAGS_MAX_LIMIT
    );
    let threads = worker_threads();
    Ok(Box::new(move |mut sink: &mut dyn Write| {
        tessera_gen::write_events_ndjson(&config, threads, &mut sink)
    }))
}

/// Writes `config`'s models on all cores, once its settings are checked.
fn models_job(config: ModelsConfig) -> anyhow::Result<Generate> {
    let keys = config.keys;
    anyhow::ensure!(
        (1..=tessera_gen::MODELS_KEYS_MAX).contains(&keys),
        "--keys must be between 1 and {}, not {keys}",
        tessera_gen::MODELS_KEYS_MAX
    );
    let threads = worker_threads();
    Ok(Box::new(move |mut sink: &mut dyn Write| {
        tessera_gen::write_models_ndjson(&config, threads, &mut sink)
    }))
}

/// A share given in parts per million, as a flag's default shows it.
fn share(per_million: u64) -> f64 {
    per_million as f64 / tessera_gen::PER_MILLION as f64
}

/// A flag's share (0 to 1) in parts per million, the generator's unit.
fn per_million(flag: &str, share: f64) -> anyhow::Result<u64> {
    anyhow::ensure!(
        (0.0..=1.0).contains(&share),
        "{flag} is a share between 0 and 1, not {share}"
    );
    Ok((share * tessera_gen::PER_MILLION as f64).round() as u64)
}

/// Generates `config` into `destination`; returns the uncompressed size.
pub async fn write_bluesky(
    session: &TesseraSession,
    config: &BlueskyConfig,
    destination: &str,
) -> anyhow::Result<u64> {
    let config = config.clone();
    let threads = worker_threads();
    let generate: Generate = Box::new(move |mut sink: &mut dyn Write| {
        tessera_gen::write_ndjson(&config, threads, &mut sink)
    });
    write_generated(session, destination, generate).await
}

/// Generation uses every core: it is the only work running.
fn worker_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `generate` into `destination` (a local path or `s3://` URL, compressed by its
/// extension); returns the uncompressed size.
async fn write_generated(
    session: &TesseraSession,
    destination: &str,
    generate: Generate,
) -> anyhow::Result<u64> {
    let location = Location::parse(destination)?;
    match &location {
        Location::Local(path) => {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            let path = path.clone();
            tokio::task::spawn_blocking(move || -> anyhow::Result<u64> {
                let file = File::create(&path)
                    .with_context(|| format!("cannot create {}", path.display()))?;
                let name = path.to_string_lossy().to_string();
                generate_compressed(generate, &name, BufWriter::with_capacity(1 << 20, file))
            })
            .await?
        }
        Location::S3 { .. } => {
            let store = session.stores().open(&location.store_url())?;
            let upload = store
                .put_multipart(&ObjectPath::from(location.key()))
                .await
                .map_err(|e| anyhow::anyhow!(session.stores().explain(&e)))?;
            let (tx, mut rx) = mpsc::channel::<Bytes>(UPLOAD_QUEUE);
            let name = location.key();
            let producer = tokio::task::spawn_blocking(move || {
                generate_compressed(
                    generate,
                    &name,
                    PieceSender {
                        tx,
                        buf: Vec::new(),
                    },
                )
            });
            let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
            while let Some(piece) = rx.recv().await {
                writer
                    .wait_for_capacity(UPLOAD_QUEUE)
                    .await
                    .map_err(|e| anyhow::anyhow!(session.stores().explain(&e)))?;
                writer.write(&piece);
            }
            let bytes = producer.await??;
            writer
                .finish()
                .await
                .map_err(|e| anyhow::anyhow!(session.stores().explain(&e)))?;
            Ok(bytes)
        }
    }
}

/// Generates into `out`, compressing by the extension of `name`.
fn generate_compressed(generate: Generate, name: &str, out: impl Write) -> anyhow::Result<u64> {
    let lower = name.to_ascii_lowercase();
    let bytes = if lower.ends_with(".gz") {
        let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::new(3));
        let n = generate(&mut encoder)?;
        encoder.finish()?.flush()?;
        n
    } else if lower.ends_with(".zst") || lower.ends_with(".zstd") {
        let mut encoder = zstd::Encoder::new(out, 3)?;
        let n = generate(&mut encoder)?;
        encoder.finish()?.flush()?;
        n
    } else {
        let mut out = out;
        let n = generate(&mut out)?;
        out.flush()?;
        n
    };
    Ok(bytes)
}

/// A `Write` that hands pieces of [`UPLOAD_PIECE`] bytes to the async uploader.
struct PieceSender {
    tx: mpsc::Sender<Bytes>,
    buf: Vec<u8>,
}

impl PieceSender {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let piece = Bytes::from(std::mem::take(&mut self.buf));
        self.tx
            .blocking_send(piece)
            .map_err(|_| std::io::Error::other("the upload stopped"))
    }
}

impl Write for PieceSender {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= UPLOAD_PIECE {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}
