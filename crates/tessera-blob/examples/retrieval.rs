//! Runs the retrieval benchmark against a testkit MinIO:
//! `cargo run --release -p tessera-blob --example retrieval -- [objects] [MiB] [concurrency]`.

use tessera_blob::{S3Config, S3Overrides, retrieval_bench};
use tessera_testkit::MinioServer;

#[tokio::main]
async fn main() {
    let arg = |i: usize, default: u64| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let (objects, mib, concurrency) = (arg(1, 64) as usize, arg(2, 16), arg(3, 32) as usize);
    let minio = MinioServer::start();
    minio.create_bucket("bench");
    let env = minio.env();
    let lookup = |name: &str| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
    let config = S3Config::resolve(&S3Overrides::default(), &lookup).expect("MinIO settings");
    match retrieval_bench::run(&config, "bench", objects, mib, concurrency).await {
        Ok(rows) => {
            println!("{objects} objects x {mib} MiB, 8 MiB ranged GETs, direct to MinIO");
            println!("| client | MiB/s | CPU s/GiB | concurrency |");
            println!("|---|---|---|---|");
            for r in rows {
                println!(
                    "| {} | {:.0} | {:.3} | {} |",
                    r.client,
                    r.mib_per_second(),
                    r.cpu_per_gib(),
                    r.concurrency
                );
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
