//! `Connection.ingest`: NDJSON into a Tessera table in one commit, with the summary the
//! CLI's `tessera ingest` prints.

use std::time::Instant;

use pyo3::prelude::*;
use tessera_engine::{IngestOutcome, OnError};

use crate::engine::{Engine, warn_rejected};
use crate::exceptions::Failure;

/// What an ingest committed: documents, files, rejected lines and where they went.
#[pyclass(frozen, module = "tessera", get_all)]
pub struct IngestSummary {
    /// The table's location.
    pub table: String,
    /// Documents committed.
    pub documents: u64,
    /// The table version the commit created.
    pub version: u64,
    /// Data files written.
    pub files: usize,
    /// Bytes of the data files and their side files.
    pub bytes_written: u64,
    /// Lines skipped as malformed (with `on_error='skip'`).
    pub rejects: u64,
    /// The file holding every rejected line with its reason, when there were any.
    pub reject_file: Option<String>,
    /// Wall time of the ingest, in seconds.
    pub elapsed_s: f64,
}

#[pymethods]
impl IngestSummary {
    fn __repr__(&self) -> String {
        format!(
            "IngestSummary(table={:?}, documents={}, version={}, files={}, bytes_written={}, rejects={})",
            self.table, self.documents, self.version, self.files, self.bytes_written, self.rejects
        )
    }

    /// The summary as `tessera ingest` prints it.
    fn __str__(&self) -> String {
        let mut text = format!(
            "ingested {} documents into version {} in {:.2} s: {} files, {:.1} MB written",
            self.documents,
            self.version,
            self.elapsed_s,
            self.files,
            self.bytes_written as f64 / 1e6
        );
        if self.rejects > 0 {
            let noun = if self.rejects == 1 { "line" } else { "lines" };
            text.push_str(&format!("; skipped {} malformed {noun}", self.rejects));
        }
        if let Some(file) = &self.reject_file {
            text.push_str(&format!(" (rejected lines, with reasons: {file})"));
        }
        text
    }
}

impl IngestSummary {
    fn new(table: &str, outcome: &IngestOutcome, elapsed_s: f64) -> Self {
        let files = &outcome.write.files;
        Self {
            table: table.to_string(),
            documents: outcome.documents,
            version: outcome.write.version,
            files: files.len(),
            bytes_written: files
                .iter()
                .map(|f| f.size + f.sides.iter().map(|s| s.size).sum::<u64>())
                .sum(),
            rejects: outcome.rejects.count,
            reject_file: outcome.reject_file.clone(),
            elapsed_s,
        }
    }
}

/// Appends the documents of `sources` to the table at `table` (created when missing),
/// with `on_error` in force for this ingest only; warns about rejected lines.
pub fn ingest(
    engine: &Engine,
    py: Python<'_>,
    sources: Vec<String>,
    table: &str,
    on_error: Option<&str>,
) -> PyResult<IngestSummary> {
    let started = Instant::now();
    let on_error = on_error
        .map(|text| text.parse::<OnError>())
        .transpose()
        .map_err(|e| Failure::Setting(e.to_string()))?;
    let previous = engine.session().options().on_error;
    if let Some(mode) = on_error {
        set_on_error(engine, py, mode)?;
    }
    let session = engine.session();
    let outcome = engine.query(py, async {
        let target = session.open_table(table).await?;
        session.ingest(target, table, &sources).await
    });
    if on_error.is_some() {
        set_on_error(engine, py, previous)?;
    }
    let outcome = outcome?;
    if outcome.rejects.count > 0 {
        let mut message = outcome.rejects.to_string();
        if let Some(file) = &outcome.reject_file {
            message.push_str(&format!("\nrejected lines, with reasons: {file}"));
        }
        warn_rejected(py, &message)?;
    }
    Ok(IngestSummary::new(
        table,
        &outcome,
        started.elapsed().as_secs_f64(),
    ))
}

/// `SET tessera.on_error` to `mode`.
fn set_on_error(engine: &Engine, py: Python<'_>, mode: OnError) -> PyResult<()> {
    let statement = format!("SET tessera.on_error = '{mode}'");
    let session = engine.session();
    engine.query(py, async { session.sql(&statement).await.map(drop) })
}
