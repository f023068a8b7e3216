//! Retrieval benchmark: the same objects downloaded by tessera-blob's io_uring client
//! and by the `object_store` crate's S3 client, in one run, reporting throughput and
//! the client's own CPU time per GiB (getrusage of this process, so the server's CPU
//! does not count). Runs alternate between the clients and medians are reported, so
//! drift on a shared machine affects both alike.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::config::S3Config;
use crate::stats::StatsSnapshot;
use crate::store::{S3ClientKind, StoreFactory};

const MIB: u64 = 1024 * 1024;
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// Most runs per client, so a mistyped count cannot run for hours.
const MAX_TRIES: usize = 15;

/// Why the benchmark could not finish, in one sentence.
#[derive(Debug, thiserror::Error)]
#[error("retrieval benchmark: {0}")]
pub struct BenchError(pub String);

/// What to download and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchSpec {
    /// Objects in the set.
    pub objects: usize,
    /// Size of each object in MiB.
    pub object_mib: u64,
    /// Bytes per ranged GET, in MiB (AnyBlob (Durner, Leis, Neumann: Exploiting Cloud Object Storage for High-Performance Analytics, VLDB 2023): 8-16).
    pub request_mib: u64,
    /// GETs in flight at once, the same for both clients.
    pub concurrency: usize,
    /// Runs per client (1 to 15); medians are reported.
    pub tries: usize,
}

impl Default for BenchSpec {
    fn default() -> Self {
        Self {
            objects: 64,
            object_mib: 16,
            request_mib: 8,
            concurrency: 16,
            tries: 3,
        }
    }
}

/// What one client achieved (medians over the runs).
#[derive(Debug, Clone)]
pub struct BenchRow {
    /// Which client.
    pub client: &'static str,
    /// Bytes downloaded per run.
    pub bytes: u64,
    /// Median throughput in MiB/s.
    pub mib_per_second: f64,
    /// Median client CPU seconds (user + system) per GiB downloaded.
    pub cpu_per_gib: f64,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Runs measured.
    pub tries: usize,
    /// tessera-blob's own accounting over all runs (requests, retries, hedges);
    /// `None` for the object_store client, which does not count.
    pub accounting: Option<StatsSnapshot>,
}

/// User plus system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: rusage is plain integers and timevals, for which all-zero is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage through a pointer to a live, writable one.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn median(values: &mut [f64]) -> f64 {
    assert!(!values.is_empty(), "median of no values");
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The object keys of the set.
fn paths(spec: &BenchSpec) -> Vec<Path> {
    (0..spec.objects)
        .map(|i| Path::from(format!("bench/{}x{}/{i}", spec.objects, spec.object_mib)))
        .collect()
}

/// Uploads the object set to `bucket` (which must exist) with `config`.
pub async fn upload(config: &S3Config, bucket: &str, spec: &BenchSpec) -> Result<(), BenchError> {
    upload_with(&StoreFactory::new(config.clone()), bucket, spec).await
}

/// [`upload`] through the stores of `factory` (for settings beyond the environment's,
/// such as a CA bundle).
pub async fn upload_with(
    factory: &StoreFactory,
    bucket: &str,
    spec: &BenchSpec,
) -> Result<(), BenchError> {
    let store = factory
        .open_s3(bucket, S3ClientKind::Uring)
        .map_err(|e| BenchError(e.to_string()))?;
    let size = spec.object_mib * MIB;
    let body = Bytes::from((0..size).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    for path in paths(spec) {
        store
            .put(&path, PutPayload::from(body.clone()))
            .await
            .map_err(|e| BenchError(factory.explain(&e)))?;
    }
    Ok(())
}

/// Downloads the object set (uploaded by [`upload`]) with both clients through
/// `config`'s endpoint, after one unmeasured pass each, alternating which goes first,
/// and returns one row per client.
pub async fn measure(
    config: &S3Config,
    bucket: &str,
    spec: &BenchSpec,
) -> Result<Vec<BenchRow>, BenchError> {
    measure_with(&StoreFactory::new(config.clone()), bucket, spec).await
}

/// [`measure`] with both clients opened by `factory`.
pub async fn measure_with(
    factory: &StoreFactory,
    bucket: &str,
    spec: &BenchSpec,
) -> Result<Vec<BenchRow>, BenchError> {
    if spec.objects == 0 || spec.object_mib == 0 || spec.request_mib == 0 || spec.concurrency == 0 {
        return Err(BenchError(
            "objects, sizes and concurrency must be positive".into(),
        ));
    }
    let tries = spec.tries.clamp(1, MAX_TRIES);
    let open = |kind| {
        factory
            .open_s3(bucket, kind)
            .map_err(|e| BenchError(e.to_string()))
    };
    let clients: [(&'static str, Arc<dyn ObjectStore>); 2] = [
        ("tessera-blob (io_uring)", open(S3ClientKind::Uring)?),
        ("object_store (reqwest)", open(S3ClientKind::ObjectStore)?),
    ];
    let paths = paths(spec);
    // One unmeasured pass each opens connections and warms buffers and server caches.
    for (name, store) in &clients {
        download(name, store.as_ref(), &paths, spec, factory).await?;
    }
    let mut samples = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
    let before = factory.stats().snapshot();
    let mut bytes = 0;
    for attempt in 0..tries {
        // Alternate which client goes first, so neither always runs after the other.
        let order = if attempt % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let (name, store) = &clients[i];
            let (rates, cpus) = &mut samples[i];
            let run = download(name, store.as_ref(), &paths, spec, factory).await?;
            bytes = run.0;
            rates.push(run.0 as f64 / MIB as f64 / run.1);
            cpus.push(run.2 / (run.0 as f64 / GIB));
        }
    }
    let accounting = factory.stats().snapshot().since(&before);
    Ok(clients
        .iter()
        .zip(samples.iter_mut())
        .enumerate()
        .map(|(i, ((client, _), (rates, cpus)))| BenchRow {
            client,
            bytes,
            mib_per_second: median(rates),
            cpu_per_gib: median(cpus),
            concurrency: spec.concurrency,
            tries,
            accounting: (i == 0).then_some(accounting),
        })
        .collect())
}

/// One run: (bytes, wall seconds, CPU seconds).
async fn download(
    client: &str,
    store: &dyn ObjectStore,
    paths: &[Path],
    spec: &BenchSpec,
    factory: &StoreFactory,
) -> Result<(u64, f64, f64), BenchError> {
    let size = spec.object_mib * MIB;
    let part = spec.request_mib * MIB;
    let requests: Vec<(&Path, std::ops::Range<u64>)> = paths
        .iter()
        .flat_map(|p| {
            (0..size.div_ceil(part)).map(move |i| (p, i * part..((i + 1) * part).min(size)))
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
        .buffer_unordered(spec.concurrency);
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
    Ok((bytes, started.elapsed().as_secs_f64(), cpu_seconds() - cpu))
}

/// A Markdown table of `rows` with the CPU and throughput ratios against the last
/// row (the object_store client).
pub fn markdown(rows: &[BenchRow]) -> String {
    let mut out = String::from(
        "| client | MiB/s (median) | CPU s/GiB (median) | concurrency | runs | GETs | retries | hedges (won) |\n|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let (gets, retries, hedges) =
            r.accounting
                .map_or(("-".to_string(), "-".to_string(), "-".to_string()), |a| {
                    (
                        a.get_requests.to_string(),
                        a.retries.to_string(),
                        format!("{} ({})", a.hedges, a.hedges_won),
                    )
                });
        out.push_str(&format!(
            "| {} | {:.0} | {:.3} | {} | {} | {gets} | {retries} | {hedges} |\n",
            r.client, r.mib_per_second, r.cpu_per_gib, r.concurrency, r.tries
        ));
    }
    if let [ours, theirs] = rows {
        out.push_str(&format!(
            "\nCPU per GiB: {:.2}x object_store's; throughput: {:.2}x.\n",
            ours.cpu_per_gib / theirs.cpu_per_gib,
            ours.mib_per_second / theirs.mib_per_second
        ));
    }
    out
}
