//! The demo's second half: the generated file ingested into a Tessera table, JSONBench
//! over the table next to the raw file's times, `EXPLAIN ANALYZE` of one query with
//! what its scan read and cost, and how to go on from the shell or Python.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, bail};
use tessera_engine::TesseraSession;

use super::{Query, execute, execute_ddl, heading, sorted_rows};
use crate::{ingest, output, progress};

/// The JSONBench query whose plan step 6 shows (filters, grouping, a distinct count).
const EXPLAINED_QUERY: &str = "JSONBench Q2";

/// Plan lines longer than this are wrapped after a comma.
const PLAN_WIDTH_CHARS: usize = 110;

/// Steps 4 to 6: ingests `file` (`docs` events) into the table at `table_dir` unless an
/// earlier run did, runs the JSONBench `queries` over it and explains one; the table's
/// times of the JSONBench queries, in order.
pub(super) async fn run(
    session: &TesseraSession,
    table_dir: &Path,
    file: &Path,
    docs: u64,
    queries: &[Query],
) -> anyhow::Result<Vec<f64>> {
    ingest_once(session, table_dir, file, docs).await?;
    let ddl = format!(
        "CREATE EXTERNAL TABLE bluesky_table STORED AS TESSERA LOCATION {}",
        sql_string(table_dir)
    );
    heading(5, "JSONBench over the table, next to the raw file");
    println!("{ddl}\n");
    execute_ddl(session, &ddl).await?;
    let mut table_secs = Vec::new();
    for query in queries.iter().filter(|q| q.jsonbench) {
        table_secs.push(compare(session, query).await?);
    }
    if let Some(query) = queries.iter().find(|q| q.title == EXPLAINED_QUERY) {
        explain_analyze(session, query).await?;
    }
    Ok(table_secs)
}

/// `path` as a SQL string literal.
fn sql_string(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "''"))
}

/// Step 4: ingests `file` into the table at `table_dir`, printing the summary as
/// `tessera ingest` does, unless the table already holds its `docs` events.
async fn ingest_once(
    session: &TesseraSession,
    table_dir: &Path,
    file: &Path,
    docs: u64,
) -> anyhow::Result<()> {
    let held = documents_in(session, table_dir).await?;
    if held == docs {
        let text = format!("using the table {} (already ingested)", table_dir.display());
        heading(4, &text);
        return Ok(());
    }
    if held != 0 {
        bail!(
            "{} holds {held} documents, not the {docs} generated: remove it to ingest again",
            table_dir.display()
        );
    }
    let location = table_dir.to_string_lossy();
    heading(
        4,
        &format!("tessera ingest {} --table {location}", file.display()),
    );
    let started = Instant::now();
    let table = session.open_table(&location).await?;
    let sources = [file.to_string_lossy().into_owned()];
    let outcome = session
        .ingest(table, &location, &sources)
        .await
        .map_err(|e| anyhow::anyhow!(session.describe_error(&e)))?;
    ingest::print_text(&outcome, started.elapsed());
    Ok(())
}

/// Documents in the table at `table_dir` (0 where there is none yet).
async fn documents_in(session: &TesseraSession, table_dir: &Path) -> anyhow::Result<u64> {
    if !table_dir.exists() {
        return Ok(0);
    }
    let sql = format!("SELECT count(*) FROM {}", sql_string(table_dir));
    let result = execute(session, "counting the table's documents", &sql).await?;
    let rows = output::text_rows(&result.batches)?;
    let count = rows.first().and_then(|row| row.first());
    count
        .and_then(|count| count.parse().ok())
        .context("a count is one number")
}

/// Runs a JSONBench query over the table and prints its time next to the raw file's;
/// the table's time.
async fn compare(session: &TesseraSession, query: &Query) -> anyhow::Result<f64> {
    let sql = query.sql.replace("FROM bluesky", "FROM bluesky_table");
    let result = execute(session, &query.title, &sql).await?;
    let table_secs = result.elapsed.as_secs_f64();
    let answer = match sorted_rows(&result.batches)? == query.raw_rows {
        true => "same rows",
        false => "rows differ",
    };
    println!(
        "  {:<13} raw file {:>7.3} s   table {:>7.3} s   {:>6.1}x   {answer}",
        query.title,
        query.raw_secs,
        table_secs,
        query.raw_secs / table_secs.max(1e-6)
    );
    Ok(table_secs)
}

/// Step 6: `EXPLAIN ANALYZE` of `query` over the table, then what its scan read and
/// what the requests would cost on S3, summed from the plan's metrics.
async fn explain_analyze(session: &TesseraSession, query: &Query) -> anyhow::Result<()> {
    let sql = query.sql.replace("FROM bluesky", "FROM bluesky_table");
    heading(6, &format!("EXPLAIN ANALYZE {sql}"));
    let describe = |e| anyhow::anyhow!("EXPLAIN ANALYZE: {}", session.describe_error(&e));
    let statement = session.parse(&format!("EXPLAIN ANALYZE {sql}"))?.pop();
    let statement = statement.context("EXPLAIN ANALYZE is one statement")?;
    let frame = session.execute(statement).await.map_err(describe)?;
    let task = Arc::new(frame.task_ctx());
    let plan = frame.create_physical_plan().await.map_err(describe)?;
    let batches = datafusion::physical_plan::collect(Arc::clone(&plan), task)
        .await
        .map_err(describe)?;
    // Rows of (plan_type, plan): the plan's text is the second cell.
    for row in output::text_rows(&batches)? {
        for line in row.iter().skip(1).flat_map(|plan| plan.lines()) {
            for piece in wrap(line, PLAN_WIDTH_CHARS) {
                println!("{piece}");
            }
        }
    }
    let total = |name: &str| progress::metric_total(&plan, name);
    println!(
        "\nThe scan read {:.2} MB of {} files ({} more skipped by their statistics) in {} \
         requests: ${:.7} at S3 Standard's GET price.",
        total("bytes_scanned") as f64 / 1e6,
        total("files_scanned"),
        total("files_pruned"),
        total("requests"),
        total("request_cost_nanodollars") as f64 / 1e9
    );
    Ok(())
}

/// `line` cut after commas into pieces of at most `width` characters where it can be;
/// the pieces after the first are indented under it.
fn wrap(line: &str, width: usize) -> Vec<String> {
    let indent = line.len() - line.trim_start().len();
    let mut pieces = vec![String::new()];
    for part in line.split_inclusive(", ") {
        let last = pieces.last_mut().expect("pieces start with one");
        if !last.trim().is_empty() && last.chars().count() + part.chars().count() > width {
            pieces.push(format!("{}{part}", " ".repeat(indent + 4)));
        } else {
            last.push_str(part);
        }
    }
    pieces.iter().map(|p| p.trim_end().to_string()).collect()
}

/// How to go on: the shell, over the raw file and the table, and Python.
pub(super) fn print_next_steps(ddl: &str, table_dir: &Path) {
    let table = table_dir
        .canonicalize()
        .unwrap_or_else(|_| table_dir.to_path_buf());
    let table = sql_string(&table);
    println!(
        "\nTry it yourself: tessera shell, then\n  {ddl};\n  \
         SELECT j->>'$.commit.collection' AS c, count() FROM bluesky GROUP BY c;\n  \
         SELECT j->>'$.commit.collection' AS c, count() FROM {table} GROUP BY c;"
    );
    println!(
        "\nOr from Python (the tessera package):\n  import tessera\n  \
         con = tessera.connect()\n  \
         con.sql(\"SELECT j->>'$.commit.collection' AS event, count() AS n FROM {table} \
         GROUP BY event ORDER BY n DESC\").df()"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_plan_lines_wrap_after_commas_under_their_indent() {
        let line = "  Scan: a=1, b=2, c=3";
        assert_eq!(
            wrap(line, 12),
            vec!["  Scan: a=1,", "      b=2,", "      c=3"]
        );
        assert_eq!(wrap(line, 80), vec![line]);
        // A part longer than the width stays whole.
        assert_eq!(wrap("xxxxxxxxxxxx", 4), vec!["xxxxxxxxxxxx"]);
    }

    #[test]
    fn paths_are_quoted_as_sql_strings() {
        assert_eq!(sql_string(Path::new("/a/it's")), "'/a/it''s'");
    }
}
