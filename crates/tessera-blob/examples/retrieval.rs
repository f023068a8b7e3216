//! Runs the retrieval benchmark against a testkit MinIO, (a) straight and (b) through
//! toxiproxy emulating object-store latency and a per-request bandwidth cap:
//! `cargo run --release -p tessera-blob --example retrieval -- [--objects 64]
//! [--mib 16] [--request-mib 8] [--concurrency 16] [--tries 3] [--latency-ms 20]
//! [--bandwidth-mib 25] [--https 1]`; with `--https 1` also (c) straight from a second
//! MinIO serving TLS (certificate from a test CA that both clients trust).

use tessera_blob::retrieval_bench::{self, BenchSpec};
use tessera_blob::{RetrievalOptions, S3Config, S3Overrides, StoreFactory};
use tessera_testkit::{Direction, MinioOptions, MinioServer, Toxic, Toxiproxy};

/// The value after `--name`, or `default`.
fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number, not '{v}'"))
        })
        .unwrap_or(default)
}

fn config(minio: &MinioServer, endpoint: &str) -> S3Config {
    let env = minio.env();
    let lookup = |name: &str| match name {
        "AWS_ENDPOINT_URL" => Some(endpoint.to_string()),
        _ => env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()),
    };
    S3Config::resolve(&S3Overrides::default(), &lookup).expect("MinIO settings")
}

#[tokio::main]
async fn main() {
    let spec = BenchSpec {
        objects: arg("--objects", 64) as usize,
        object_mib: arg("--mib", 16),
        request_mib: arg("--request-mib", 8),
        concurrency: arg("--concurrency", 16) as usize,
        tries: arg("--tries", 3) as usize,
    };
    let latency_ms = arg("--latency-ms", 20);
    let bandwidth_mib = arg("--bandwidth-mib", 25);
    let minio = MinioServer::start();
    minio.create_bucket("bench");
    let direct = config(&minio, &minio.endpoint());
    let toxiproxy = Toxiproxy::start();
    let proxy = toxiproxy.proxy("s3", minio.port());
    proxy.add(
        "latency",
        Direction::Downstream,
        Toxic::Latency {
            latency_ms,
            jitter_ms: 0,
        },
    );
    proxy.add(
        "bandwidth",
        Direction::Downstream,
        Toxic::Bandwidth {
            kib_per_second: bandwidth_mib * 1024,
        },
    );
    let emulated = config(&minio, &proxy.endpoint());
    let tls_minio = (arg("--https", 0) != 0).then(|| {
        let server = MinioServer::start_with(MinioOptions {
            tls: true,
            ..MinioOptions::default()
        });
        server.create_bucket("bench");
        server
    });
    let result = async {
        retrieval_bench::upload(&direct, "bench", &spec).await?;
        let a = retrieval_bench::measure(&direct, "bench", &spec).await?;
        let b = retrieval_bench::measure(&emulated, "bench", &spec).await?;
        let c = match &tls_minio {
            Some(server) => {
                let options = RetrievalOptions {
                    ca_file: server.ca_file().map(std::path::Path::to_path_buf),
                    ..RetrievalOptions::default()
                };
                let factory =
                    StoreFactory::with_options(config(server, &server.endpoint()), options);
                retrieval_bench::upload_with(&factory, "bench", &spec).await?;
                Some(retrieval_bench::measure_with(&factory, "bench", &spec).await?)
            }
            None => None,
        };
        Ok::<_, retrieval_bench::BenchError>((a, b, c))
    }
    .await;
    match result {
        Ok((a, b, c)) => {
            println!(
                "{} objects x {} MiB, {} MiB ranged GETs, {} in flight, {} runs per client\n",
                spec.objects, spec.object_mib, spec.request_mib, spec.concurrency, spec.tries
            );
            println!(
                "(a) straight from MinIO\n\n{}",
                retrieval_bench::markdown(&a)
            );
            let request = spec.request_mib as f64;
            let predicted = spec.concurrency as f64 * request
                / (latency_ms as f64 / 1000.0 + request / bandwidth_mib as f64);
            println!(
                "(b) through toxiproxy: +{latency_ms} ms first byte, {bandwidth_mib} MiB/s per connection; \
                 the latency model predicts {predicted:.0} MiB/s at this concurrency\n\n{}",
                retrieval_bench::markdown(&b)
            );
            for row in &b {
                println!(
                    "{}: {:.0}% of the predicted throughput",
                    row.client,
                    100.0 * row.mib_per_second / predicted
                );
            }
            if let Some(c) = c {
                println!(
                    "\n(c) straight from MinIO over HTTPS (rustls with ring in both clients)\n\n{}",
                    retrieval_bench::markdown(&c)
                );
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
