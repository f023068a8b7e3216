//! Runs the SQL specification in `test/sql/*.slt` (sqllogictest format, as in DuckDB and
//! DataFusion) against a Tessera session, from `test/data` so that files name their
//! fixtures by relative path.

use std::path::{Path, PathBuf};

use arrow::util::display::{ArrayFormatter, FormatOptions};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Runner};
use tessera_engine::{SessionOptions, TesseraSession};

/// A failed statement, described as the CLI would describe it to a user.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failure(String);

struct Db {
    session: TesseraSession,
    /// The repository path, shown as `WORKSPACE` so that plans compare on any machine.
    root: String,
}

#[async_trait::async_trait]
impl AsyncDB for Db {
    type Error = Failure;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, Failure> {
        let fail = |e: datafusion::error::DataFusionError| Failure(self.session.describe_error(&e));
        let mut output = DBOutput::StatementComplete(0);
        for statement in self.session.parse(sql).map_err(fail)? {
            let frame = self.session.execute(statement).await.map_err(fail)?;
            let schema = frame.schema().inner().clone();
            let batches = frame.collect().await.map_err(fail)?;
            if schema.fields().is_empty() {
                output = DBOutput::StatementComplete(0);
                continue;
            }
            let options = FormatOptions::default().with_null("NULL");
            let mut rows = Vec::new();
            for batch in &batches {
                let formatters = batch
                    .columns()
                    .iter()
                    .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| Failure(e.to_string()))?;
                for row in 0..batch.num_rows() {
                    let cells: Vec<String> = formatters
                        .iter()
                        .map(|f| match f.value(row).to_string() {
                            s if s.is_empty() => "(empty)".to_string(),
                            s => s.trim_end().replace(&self.root, "WORKSPACE"),
                        })
                        .collect();
                    // A multi-line cell (an EXPLAIN plan) continues on rows of its own.
                    let mut first = Vec::with_capacity(cells.len());
                    let mut continued = Vec::new();
                    for cell in cells {
                        let mut lines = cell.lines();
                        first.push(lines.next().unwrap_or_default().to_string());
                        continued.extend(lines.map(|l| vec![l.to_string()]));
                    }
                    rows.push(first);
                    rows.extend(continued);
                }
            }
            output = DBOutput::Rows {
                types: vec![DefaultColumnType::Any; schema.fields().len()],
                rows,
            };
        }
        Ok(output)
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "tessera"
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_specification() {
    let root = repo_root();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("test/sql"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt files found");
    std::env::set_current_dir(root.join("test/data")).unwrap();
    let mut failures = Vec::new();
    for file in &files {
        let root_text = root
            .display()
            .to_string()
            .trim_start_matches('/')
            .to_string();
        let mut runner = Runner::new(move || {
            let root = root_text.clone();
            async move {
                let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap();
                let session = TesseraSession::new(
                    s3,
                    SessionOptions {
                        target_partitions: Some(2),
                        ..Default::default()
                    },
                )
                .map_err(|e| Failure(e.to_string()))?;
                Ok::<_, Failure>(Db { session, root })
            }
        });
        runner.with_column_validator(|_, _| true);
        if let Err(e) = runner.run_file_async(file).await {
            failures.push(format!("{}:\n{e}", file.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} files failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
