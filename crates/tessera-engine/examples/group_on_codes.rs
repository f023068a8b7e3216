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

use datafusion::arrow::array::RecordBatch;
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
    let create = format!(
        "CREATE EXTERNAL TABLE events STORED AS TESSERA LOCATION '{}'",
        table.display()
    );
    run(&session, &create).await?;
    run(
        &session,
        &format!("INSERT INTO events SELECT j FROM '{}'", file.display()),
    )
    .await?;

    for codes in [true, false] {
        run(&session, &format!("SET tessera.group_on_codes = {codes}")).await?;
        let started = Instant::now();
        let answer = run(&session, QUERY).await?;
        let elapsed = started.elapsed();
        let plan =
            pretty_format_batches(&run(&session, &format!("EXPLAIN {QUERY}")).await?)?.to_string();
        let grouped_by = match plan.contains("CodeAggregateExec") {
            true => "CodeAggregateExec (dictionary codes)",
            false => "AggregateExec (strings)",
        };
        println!("group_on_codes = {codes}: {grouped_by}, {elapsed:.2?}");
        println!("{}", pretty_format_batches(&answer)?);
    }
    Ok(())
}

/// Runs one statement to completion.
async fn run(session: &TesseraSession, sql: &str) -> anyhow::Result<Vec<RecordBatch>> {
    Ok(session.sql(sql).await?.collect().await?)
}
