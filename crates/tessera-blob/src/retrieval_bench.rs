//! Retrieval benchmark: the same objects downloaded by tessera-blob's io_uring client
//! and by the `object_store` crate's S3 client, in one run, reporting throughput and
//! the client's own CPU time per GiB (getrusage of this process, so the server's CPU
//! does not count).

use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::config::S3Config;
use crate::store::{S3ClientKind, StoreFactory};

/// Bytes per ranged GET: the 8-16 MiB request size seed 002 recommends.
const PART: u64 = 8 * 1024 * 1024;

/// Why the benchmark could not finish, in one sentence.
#[derive(Debug, thiserror::Error)]
#[error("retrieval benchmark: {0}")]
pub struct BenchError(pub String);

/// What one client achieved.
#[derive(Debug, Clone)]
pub struct BenchRow {
    /// Which client.
    pub client: &'static str,
    /// Bytes downloaded.
    pub bytes: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Client CPU seconds (user + system) spent downloading.
    pub cpu_seconds: f64,
    /// Requests in flight at once.
    pub concurrency: usize,
}

impl BenchRow {
    /// Throughput in MiB/s.
    pub fn mib_per_second(&self) -> f64 {
        self.bytes as f64 / 1048576.0 / self.seconds
    }

    /// Client CPU seconds per GiB downloaded.
    pub fn cpu_per_gib(&self) -> f64 {
        self.cpu_seconds / (self.bytes as f64 / 1073741824.0)
    }
}

/// User plus system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills a zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Uploads `objects` objects of `mib` MiB to `bucket` (which must exist) and
/// downloads all of them with each client in 8 MiB ranged GETs, `concurrency` at a time.
pub async fn run(
    config: &S3Config,
    bucket: &str,
    objects: usize,
    mib: u64,
    concurrency: usize,
) -> Result<Vec<BenchRow>, BenchError> {
    let factory = StoreFactory::new(config.clone());
    let open = |kind| {
        factory
            .open_s3(bucket, kind)
            .map_err(|e| BenchError(e.to_string()))
    };
    let uring = open(S3ClientKind::Uring)?;
    let standard = open(S3ClientKind::ObjectStore)?;
    let size = mib * 1024 * 1024;
    let body = Bytes::from((0..size).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    let paths: Vec<Path> = (0..objects)
        .map(|i| Path::from(format!("bench/{i}")))
        .collect();
    for path in &paths {
        uring
            .put(path, PutPayload::from(body.clone()))
            .await
            .map_err(|e| BenchError(factory.explain(&e)))?;
    }
    let mut rows = Vec::new();
    for (client, store) in [("tessera-blob", &uring), ("object_store", &standard)] {
        rows.push(download(client, store.as_ref(), &paths, size, concurrency, &factory).await?);
    }
    Ok(rows)
}

async fn download(
    client: &'static str,
    store: &dyn ObjectStore,
    paths: &[Path],
    size: u64,
    concurrency: usize,
    factory: &StoreFactory,
) -> Result<BenchRow, BenchError> {
    let requests: Vec<(&Path, std::ops::Range<u64>)> = paths
        .iter()
        .flat_map(|p| {
            (0..size.div_ceil(PART)).map(move |i| (p, i * PART..((i + 1) * PART).min(size)))
        })
        .collect();
    let cpu = cpu_seconds();
    let started = Instant::now();
    let mut results = futures::stream::iter(requests)
        .map(|(path, range)| async move {
            let want = range.end - range.start;
            let got = store.get_range(path, range).await?;
            Ok::<_, object_store::Error>((got.len() as u64, want))
        })
        .buffer_unordered(concurrency);
    let mut bytes = 0;
    while let Some(result) = results.next().await {
        let (got, want) = result.map_err(|e| BenchError(factory.explain(&e)))?;
        if got != want {
            return Err(BenchError(format!(
                "{client}: short read {got} of {want} bytes"
            )));
        }
        bytes += got;
    }
    Ok(BenchRow {
        client,
        bytes,
        seconds: started.elapsed().as_secs_f64(),
        cpu_seconds: cpu_seconds() - cpu,
        concurrency,
    })
}
