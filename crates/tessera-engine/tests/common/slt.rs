//! The sqllogictest database both SQL suites run against: a Tessera session whose answers
//! are laid out as rows of text cells by a formatter each suite chooses (`test/sql` prints
//! Arrow's display form, the ported DuckDB suite the canonical form of `canonical.rs`).

use std::path::{Path, PathBuf};

use arrow::record_batch::RecordBatch;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};
use tessera_engine::{SessionOptions, TesseraSession};

/// A failed statement, described as the CLI would describe it to a user.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Failure(pub String);

/// The text cells of every row of a batch, one `Vec` per row.
pub type CellFormatter = Box<dyn Fn(&RecordBatch) -> Result<Vec<Vec<String>>, Failure> + Send>;

/// A Tessera session as a sqllogictest database.
pub struct Db {
    session: TesseraSession,
    cells: CellFormatter,
}

impl Db {
    /// A fresh session on 2 partitions (as CI machines have), answering through `cells`.
    pub fn new(cells: CellFormatter) -> Result<Self, Failure> {
        let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None)
            .map_err(|e| Failure(e.to_string()))?;
        let options = SessionOptions {
            target_partitions: Some(2),
            ..Default::default()
        };
        let session = TesseraSession::new(s3, options).map_err(|e| Failure(e.to_string()))?;
        Ok(Self { session, cells })
    }
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
            let mut rows = Vec::new();
            for batch in &batches {
                for cells in (self.cells)(batch)? {
                    push_row(&mut rows, cells);
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

/// Appends a row whose multi-line cells (EXPLAIN plans, pretty JSON) continue on rows of
/// their own, one per further line, since a line of an .slt file holds one row. An empty
/// line is `(empty)`, as an empty line would end the record.
fn push_row(rows: &mut Vec<Vec<String>>, cells: Vec<String>) {
    let not_empty = |line: &str| match line {
        "" => "(empty)".to_string(),
        line => line.to_string(),
    };
    let mut first = Vec::with_capacity(cells.len());
    let mut continued = Vec::new();
    for cell in cells {
        let mut lines = cell.split('\n');
        first.push(not_empty(lines.next().unwrap_or_default()));
        continued.extend(lines.map(|l| vec![not_empty(l)]));
    }
    rows.push(first);
    rows.extend(continued);
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The `.slt` files below `dir`, at any depth, sorted.
pub fn slt_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "slt") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
