//! `tessera bench retrieval`: downloads one object set with tessera-blob's io_uring
//! client and with the `object_store` crate's S3 client in one run, straight from the
//! configured endpoint and, with `--via`, through a second endpoint in front of the
//! same server (for example toxiproxy emulating object-store latency and bandwidth).

use clap::{Args, Subcommand};
use tessera_blob::S3Config;
use tessera_blob::retrieval_bench::{self, BenchSpec};

/// Benchmarks.
#[derive(Subcommand, Debug)]
pub enum Bench {
    /// Download throughput and client CPU per GiB: io_uring client vs object_store.
    Retrieval(RetrievalArgs),
}

/// Settings of the retrieval benchmark.
#[derive(Args, Debug)]
pub struct RetrievalArgs {
    /// The bucket to upload the object set to and download it from (must exist).
    #[arg(long)]
    bucket: String,
    /// Objects in the set.
    #[arg(long, default_value_t = 64)]
    objects: usize,
    /// Size of each object in MiB.
    #[arg(long, default_value_t = 16)]
    mib: u64,
    /// MiB per ranged GET.
    #[arg(long, default_value_t = 8)]
    request_mib: u64,
    /// GETs in flight at once, for both clients.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Runs per client; medians are reported.
    #[arg(long, default_value_t = 3)]
    tries: usize,
    /// A second endpoint URL in front of the same server (a toxiproxy); measured too.
    #[arg(long)]
    via: Option<String>,
}

/// Runs a benchmark and prints its Markdown tables to stdout.
pub async fn run(s3: &S3Config, bench: Bench) -> anyhow::Result<()> {
    let Bench::Retrieval(args) = bench;
    let spec = BenchSpec {
        objects: args.objects,
        object_mib: args.mib,
        request_mib: args.request_mib,
        concurrency: args.concurrency,
        tries: args.tries,
    };
    retrieval_bench::upload(s3, &args.bucket, &spec).await?;
    println!(
        "{} objects x {} MiB, {} MiB ranged GETs, {} in flight, {} runs per client\n",
        spec.objects, spec.object_mib, spec.request_mib, spec.concurrency, spec.tries
    );
    let direct = retrieval_bench::measure(s3, &args.bucket, &spec).await?;
    println!(
        "straight from {}\n\n{}",
        s3.endpoint_description(),
        retrieval_bench::markdown(&direct)
    );
    if let Some(via) = args.via {
        let proxied = S3Config {
            endpoint: Some(via.clone()),
            ..s3.clone()
        };
        let rows = retrieval_bench::measure(&proxied, &args.bucket, &spec).await?;
        println!("through {via}\n\n{}", retrieval_bench::markdown(&rows));
    }
    Ok(())
}
