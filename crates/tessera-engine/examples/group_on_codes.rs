//! Grouping on dictionary codes: a GROUP BY on a low-cardinality string path of a
//! Tessera table groups on the codes its files store.
//!
//! Writes 200,000 small documents to a temporary directory, ingests them into a Tessera
//! table, and runs one aggregate with `tessera.group_on_codes` on and off, printing the
//! answer, the operator that grouped, and the time each took.
//!
//!     cargo run --release -p tessera-engine --example group_on_codes

use std::fmt::Write as _;
use std::time::Instant;

use datafusion::arrow::util::pretty::pretty_format_batches;
use tessera_engine::{SessionOptions, TesseraSession};

const DOCS: usize = 200_000;

const QUERY: &str = "SELECT j->>'kind' AS kind, count(*) AS n, count(DISTINCT j->>'user') AS users \
                     FROM events GROUP BY kind ORDER BY n DESC";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("events.json");
    let mut text = String::with_capacity(DOCS * 48);
    for i in 0..DOCS {
        let kind = ["click", "view", "like", "share"][(i * 7 + i / 13) % 4];
        writeln!(
            text,
            r#"{{"kind":"{kind}","user":"u{}","n":{i}}}"#,
            i % 5000
        )?;
    }
    std::fs::write(&file, text)?;

    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None)?;
    let session = TesseraSession::new(s3, SessionOptions::default())?;
    let table = dir.path().join("events");
    session
        .sql(&format!(
            "CREATE EXTERNAL TABLE events STORED AS TESSERA LOCATION '{}'",
            table.display()
        ))
        .await?
        .collect()
        .await?;
    session
        .sql(&format!(
            "INSERT INTO events SELECT j FROM '{}'",
            file.display()
        ))
        .await?
        .collect()
        .await?;

    for codes in [true, false] {
        session
            .sql(&format!("SET tessera.group_on_codes = {codes}"))
            .await?
            .collect()
            .await?;
        let started = Instant::now();
        let answer = session.sql(QUERY).await?.collect().await?;
        let elapsed = started.elapsed();
        let plan = session
            .sql(&format!("EXPLAIN {QUERY}"))
            .await?
            .collect()
            .await?;
        let plan = pretty_format_batches(&plan)?.to_string();
        let grouped_by = match plan.contains("CodeAggregateExec") {
            true => "CodeAggregateExec (dictionary codes)",
            false => "AggregateExec (strings)",
        };
        println!("group_on_codes = {codes}: {grouped_by}, {elapsed:.2?}");
        println!("{}", pretty_format_batches(&answer)?);
    }
    Ok(())
}
