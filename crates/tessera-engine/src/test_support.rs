//! What the crate's unit tests share: a session that needs no server, and answers as
//! text for comparing them.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::DataType;

use crate::options::SqlDialect;
use crate::{SessionOptions, TesseraSession};

/// A session with `options` and the S3 settings of an empty environment (no server is
/// contacted unless a test reads `s3://`).
pub fn session_with(options: SessionOptions) -> TesseraSession {
    let s3 = tessera_blob::S3Config::resolve(&Default::default(), &|_| None).unwrap();
    TesseraSession::new(s3, options).unwrap()
}

/// A session under the `duckdb` dialect.
pub fn duckdb_session() -> TesseraSession {
    session_with(SessionOptions {
        dialect: Some(SqlDialect::DuckDb),
        ..Default::default()
    })
}

/// The rows of `batches`, each cell cast to text (`NULL` for NULL).
pub fn text_rows(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for batch in batches {
        let columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|c| cast(c, &DataType::Utf8).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            let cell = |c: &ArrayRef| match c.is_null(row) {
                true => "NULL".to_string(),
                false => c.as_string::<i32>().value(row).to_string(),
            };
            out.push(columns.iter().map(cell).collect());
        }
    }
    out
}
