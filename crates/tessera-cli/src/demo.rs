//! `tessera demo`: the product's main job on an embedded default that needs no server.
//! A local directory serves as the object store; Tessera generates a Bluesky event
//! stream there and answers the JSONBench queries (and a few more) over the raw NDJSON
//! in place, printing results and timings.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use arrow::array::RecordBatch;
use clap::Args;
use tessera_engine::TesseraSession;
use tessera_gen::BlueskyConfig;

use crate::generate;
use crate::output::{self, Format};
use crate::run;

/// The JSONBench queries in Tessera's dialect (shared with the benchmark harness).
const JSONBENCH: &str = include_str!("../../../bench/jsonbench/queries/tessera.sql");

/// Result rows shown per query.
const SHOWN_ROWS: usize = 10;

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

/// Runs the demo.
pub async fn run(session: &TesseraSession, args: DemoArgs) -> anyhow::Result<()> {
    let data_dir = args.dir.join("bluesky");
    let file = data_dir.join(format!("events-{}-s{}.json", args.docs, args.seed));
    println!(
        "Tessera demo: SQL over raw NDJSON in place; the object store is the local directory {}",
        args.dir.display()
    );
    if file.exists() {
        println!("\n[1/3] using {} (already generated)", file.display());
    } else {
        print!(
            "\n[1/3] generating {} Bluesky events into {} ... ",
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
    }
    let ddl = format!(
        "CREATE EXTERNAL TABLE bluesky STORED AS NDJSON LOCATION '{}'",
        file.display()
    );
    println!("\n[2/3] {ddl}");
    session
        .sql(&ddl)
        .await
        .map_err(|e| anyhow::anyhow!(session.describe_error(&e)))?;

    println!("\n[3/3] queries");
    let mut timings = Vec::new();
    let jsonbench = JSONBENCH
        .lines()
        .filter(|l| !l.trim_start().starts_with("--") && !l.trim().is_empty())
        .enumerate()
        .map(|(i, q)| {
            (
                format!("JSONBench Q{}", i + 1),
                q.trim_end_matches(';').to_string(),
            )
        });
    let showcase = SHOWCASE.iter().map(|(t, q)| (t.to_string(), q.to_string()));
    for (title, sql) in jsonbench.chain(showcase) {
        println!("\n== {title}\n{sql}");
        let statement = session
            .parse(&sql)?
            .pop()
            .context("a showcase query is one statement")?;
        let result = run::execute(session, statement)
            .await
            .map_err(|e| anyhow::anyhow!("{title}: {}", session.describe_error(&e)))?;
        run::report_rejects(session);
        let shown = first_rows(&result.batches, SHOWN_ROWS);
        output::write(
            Format::Table,
            &result.schema,
            &shown,
            &mut std::io::stdout(),
        )?;
        println!("time: {:.3} s", result.elapsed.as_secs_f64());
        timings.push((title, result.elapsed.as_secs_f64()));
    }
    println!(
        "\nSummary ({} events, {} threads)",
        args.docs,
        session.context().state().config().target_partitions()
    );
    for (title, secs) in &timings {
        println!("  {secs:>8.3} s  {title}");
    }
    let geomean = (timings.iter().map(|(_, s)| s.ln()).sum::<f64>() / timings.len() as f64).exp();
    println!("  {geomean:>8.3} s  geometric mean");
    println!(
        "\nTry it yourself: tessera shell, then\n  {ddl};\n  SELECT j->>'$.commit.collection' AS c, count() FROM bluesky GROUP BY c;"
    );
    Ok(())
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
