//! `tessera demo`: the product's main job on an embedded default that needs no server.
//! A local directory serves as the object store; Tessera generates a Bluesky event
//! stream there, answers the JSONBench queries (and a few more) over the raw NDJSON in
//! place, ingests it into a Tessera table and answers JSONBench again over the table,
//! printing results, timings side by side and what one query's scan cost.

mod table;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use arrow::array::RecordBatch;
use clap::Args;
use tessera_engine::TesseraSession;
use tessera_gen::BlueskyConfig;

use crate::generate;
use crate::output::{self, Format};
use crate::run::{self, StatementResult};

/// The JSONBench queries in Tessera's dialect (shared with the benchmark harness).
const JSONBENCH: &str = include_str!("../../../bench/jsonbench/queries/tessera.sql");

/// Result rows shown per query.
const SHOWN_ROWS: usize = 10;

/// Steps of the demo, for the `[n/STEPS]` headings.
const STEPS: usize = 6;

/// Options of `tessera demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Directory serving as the object store.
    #[arg(long, default_value = "tessera-demo")]
    dir: PathBuf,
    /// Number of Bluesky events to generate.
    #[arg(long, default_value_t = 1_000_000)]
    docs: u64,
    /// Random seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Showcase queries beyond JSONBench: nested paths, arrays, functions.
const SHOWCASE: &[(&str, &str)] = &[
    (
        "Languages of posts (first element of an array)",
        "SELECT j->>'$.commit.record.langs[0]' AS lang, count() AS posts FROM bluesky \
         WHERE j->>'$.commit.collection' = 'app.bsky.feed.post' GROUP BY lang ORDER BY posts DESC LIMIT 5",
    ),
    (
        "Most-liked authors (a path inside a nested strong ref)",
        "SELECT split_part(j->>'$.commit.record.subject.uri', '/', 3) AS author, count() AS likes FROM bluesky \
         WHERE j->>'$.commit.collection' = 'app.bsky.feed.like' GROUP BY author ORDER BY likes DESC, author LIMIT 5",
    ),
    (
        "How posts are built (optional fields, json_exists, json_length)",
        "SELECT count() AS posts, \
                sum(CASE WHEN json_exists(j, '$.commit.record.reply') THEN 1 ELSE 0 END) AS replies, \
                sum(CASE WHEN json_exists(j, '$.commit.record.embed') THEN 1 ELSE 0 END) AS with_embed, \
                round(avg(json_length(j, '$.commit.record.embed.images')), 2) AS avg_images \
         FROM bluesky WHERE j->>'$.commit.collection' = 'app.bsky.feed.post'",
    ),
    (
        "Event kinds (typed extraction with json_get_str)",
        "SELECT json_get_str(j, 'kind') AS kind, count() AS events, min(json_get_int(j, 'time_us')) AS first_us \
         FROM bluesky GROUP BY kind ORDER BY events DESC",
    ),
];

/// One query of the demo and what it did over the raw file.
struct Query {
    title: String,
    sql: String,
    /// A JSONBench query, run over the table too.
    jsonbench: bool,
    raw_secs: f64,
    /// The result rows, sorted (ties of an ORDER BY may come in any order).
    raw_rows: Vec<Vec<String>>,
}

/// Runs the demo.
pub async fn run(session: &TesseraSession, args: DemoArgs) -> anyhow::Result<()> {
    let file = args
        .dir
        .join("bluesky")
        .join(format!("events-{}-s{}.json", args.docs, args.seed));
    println!(
        "Tessera demo: SQL over raw NDJSON in place, then over a Tessera table; the object \
         store is the local directory {}",
        args.dir.display()
    );
    generate_events(session, &args, &file).await?;
    let ddl = format!(
        "CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION '{}'",
        file.display()
    );
    heading(2, &ddl);
    execute_ddl(session, &ddl).await?;
    heading(3, "queries over the raw file");
    let mut queries = Vec::new();
    for (title, sql, jsonbench) in query_texts() {
        queries.push(run_raw(session, title, sql, jsonbench).await?);
    }
    let table_dir = args
        .dir
        .join(format!("bluesky-table-{}-s{}", args.docs, args.seed));
    let table_secs = table::run(session, &table_dir, &file, args.docs, &queries).await?;
    print_summary(session, args.docs, &queries, &table_secs);
    table::print_next_steps(&ddl, &table_dir);
    Ok(())
}

/// Prints the heading of step `step`.
fn heading(step: usize, text: &str) {
    println!("\n[{step}/{STEPS}] {text}");
}

/// Step 1: the event file, generated unless an earlier run left it.
async fn generate_events(
    session: &TesseraSession,
    args: &DemoArgs,
    file: &Path,
) -> anyhow::Result<()> {
    if file.exists() {
        heading(1, &format!("using {} (already generated)", file.display()));
        return Ok(());
    }
    print!(
        "\n[1/{STEPS}] generating {} Bluesky events into {} ... ",
        args.docs,
        file.display()
    );
    let started = Instant::now();
    let config = BlueskyConfig::new(args.docs, args.seed);
    let bytes = generate::write_bluesky(session, &config, &file.to_string_lossy()).await?;
    println!(
        "{:.0} MB in {:.1} s",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs a DDL statement, its error described as the session does.
async fn execute_ddl(session: &TesseraSession, ddl: &str) -> anyhow::Result<()> {
    session
        .sql(ddl)
        .await
        .map_err(|e| anyhow::anyhow!(session.describe_error(&e)))?;
    Ok(())
}

/// The demo's queries: JSONBench's (flagged), then the showcase.
fn query_texts() -> Vec<(String, String, bool)> {
    let jsonbench = JSONBENCH
        .lines()
        .filter(|l| !l.trim_start().starts_with("--") && !l.trim().is_empty())
        .enumerate()
        .map(|(i, q)| {
            let sql = q.trim_end_matches(';').to_string();
            (format!("JSONBench Q{}", i + 1), sql, true)
        });
    let showcase = SHOWCASE
        .iter()
        .map(|(t, q)| (t.to_string(), q.to_string(), false));
    jsonbench.chain(showcase).collect()
}

/// Runs one query, reporting skipped lines; its error names the query.
async fn execute(
    session: &TesseraSession,
    title: &str,
    sql: &str,
) -> anyhow::Result<StatementResult> {
    let statement = session
        .parse(sql)?
        .pop()
        .context("a showcase query is one statement")?;
    let result = run::execute(session, statement)
        .await
        .map_err(|e| anyhow::anyhow!("{title}: {}", session.describe_error(&e)))?;
    run::report_rejects(session);
    Ok(result)
}

/// Runs one query over the raw file, printing it, its first rows and its time.
async fn run_raw(
    session: &TesseraSession,
    title: String,
    sql: String,
    jsonbench: bool,
) -> anyhow::Result<Query> {
    println!("\n== {title}\n{sql}");
    let result = execute(session, &title, &sql).await?;
    let shown = first_rows(&result.batches, SHOWN_ROWS);
    output::write(
        Format::Table,
        &result.schema,
        &shown,
        &mut std::io::stdout(),
    )?;
    let raw_secs = result.elapsed.as_secs_f64();
    println!("time: {raw_secs:.3} s");
    Ok(Query {
        title,
        sql,
        jsonbench,
        raw_secs,
        raw_rows: sorted_rows(&result.batches)?,
    })
}

/// The rows of `batches` as text, sorted.
fn sorted_rows(batches: &[RecordBatch]) -> anyhow::Result<Vec<Vec<String>>> {
    let mut rows = output::text_rows(batches)?;
    rows.sort();
    Ok(rows)
}

/// Timings of every query: over the raw file, and over the table where it ran there
/// (`table_secs` holds the JSONBench queries' times, in order).
fn print_summary(session: &TesseraSession, docs: u64, queries: &[Query], table_secs: &[f64]) {
    println!(
        "\nSummary ({docs} events, {} threads)\n  {:>10}  {:>10}",
        session.context().state().config().target_partitions(),
        "raw file",
        "table"
    );
    let mut table = table_secs.iter();
    for query in queries {
        let on_table = match query.jsonbench {
            true => table.next().map(|s| format!("{s:.3} s")),
            false => None,
        };
        let on_table = on_table.unwrap_or_default();
        println!(
            "  {:>8.3} s  {on_table:>10}  {}",
            query.raw_secs, query.title
        );
    }
    let raw = queries.iter().filter(|q| q.jsonbench).map(|q| q.raw_secs);
    println!(
        "  {:>8.3} s  {:>8.3} s  geometric mean of JSONBench",
        geomean(raw),
        geomean(table_secs.iter().copied())
    );
}

/// The geometric mean of `values` (0 for none).
fn geomean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0), |(sum, n), v| (sum + v.ln(), n + 1));
    match count {
        0 => 0.0,
        n => (sum / n as f64).exp(),
    }
}

fn first_rows(batches: &[RecordBatch], limit: usize) -> Vec<RecordBatch> {
    let mut left = limit;
    let mut out = Vec::new();
    for batch in batches {
        if left == 0 {
            break;
        }
        let take = batch.num_rows().min(left);
        out.push(batch.slice(0, take));
        left -= take;
    }
    out
}
