//! `tessera ingest`: NDJSON files (globs, URLs; gzip/zstd) appended to a Tessera table in
//! one commit, with every rejected line written, with its reason, to a reject file next
//! to the table.

use std::io::BufWriter;
use std::sync::Arc;

use arrow::array::AsArray;
use arrow::datatypes::UInt64Type;
use datafusion::catalog::TableProvider;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::provider_as_source;
use datafusion::logical_expr::LogicalPlanBuilder;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::prelude::{SessionContext, col};

use super::reject_file;
use super::sink::WriteReport;
use crate::datasource::location::table_for_locations;
use crate::datasource::ndjson::NdjsonFormat;
use crate::datasource::ndjson::format::NdjsonOptions;
use crate::datasource::tessera::{TesseraTable, table_root};
use crate::rejects::{RejectLog, RejectSummary};

/// What an ingest committed and what it rejected.
#[derive(Debug, Clone)]
pub struct IngestOutcome {
    /// Documents committed.
    pub documents: u64,
    /// The commit (version and files with their summaries).
    pub write: WriteReport,
    /// Lines skipped as malformed (`on_error = skip`); all of them are in `reject_file`.
    pub rejects: RejectSummary,
    /// Where the rejected lines were written, when there were any.
    pub reject_file: Option<String>,
}

/// Appends the documents of `sources` to `table` (at `location`) in one commit.
pub async fn ingest(
    ctx: &SessionContext,
    rejects: &RejectLog,
    table: Arc<TesseraTable>,
    location: &str,
    sources: &[String],
) -> Result<IngestOutcome> {
    let state = ctx.state();
    if table.schema().fields().len() != 1 {
        return Err(DataFusionError::Plan(format!(
            "the Tessera table at {location} has relational columns besides its documents; \
             ingest fills only a table of documents alone (use INSERT INTO ... SELECT for this one)"
        )));
    }
    let source = table_for_locations(
        &state,
        sources,
        Some(Arc::new(NdjsonFormat::new(NdjsonOptions {
            storable: true,
            ..NdjsonOptions::default()
        }))),
        None,
    )
    .await?;
    let column = source
        .schema()
        .fields()
        .first()
        .map(|f| f.name().clone())
        .ok_or_else(|| DataFusionError::Plan("the source has no document column".into()))?;
    let input = LogicalPlanBuilder::scan("ingest_source", provider_as_source(source), None)?
        .project(vec![col(column)])?
        .build()?;
    let target = Arc::clone(&table) as Arc<dyn TableProvider>;
    let plan = LogicalPlanBuilder::insert_into(
        input,
        "ingest_target",
        provider_as_source(target),
        InsertOp::Append,
    )?
    .build()?;

    let spill = tempfile::tempfile().map_err(DataFusionError::IoError)?;
    let reader = spill.try_clone().map_err(DataFusionError::IoError)?;
    rejects.start_spill(Box::new(BufWriter::new(spill)));
    let result = ctx.execute_logical_plan(plan).await?.collect().await;
    let spilled = rejects.finish_spill();
    let summary = rejects.take();
    let batches = result?;
    spilled.map_err(DataFusionError::IoError)?;
    let documents = batches
        .first()
        .and_then(|b| {
            b.column(0)
                .as_primitive_opt::<UInt64Type>()
                .map(|c| c.value(0))
        })
        .unwrap_or(0);
    let write = table
        .last_write()
        .ok_or_else(|| DataFusionError::Internal("the ingest committed nothing".into()))?;
    let reject_file = match summary.count {
        0 => None,
        _ => Some(upload_rejects(&state, location, write.version, reader).await?),
    };
    Ok(IngestOutcome {
        documents,
        write,
        rejects: summary,
        reject_file,
    })
}

/// Uploads the spilled reject records as `<table>/_rejects/<version>.ndjson`: the
/// reject file's location.
async fn upload_rejects(
    state: &dyn datafusion::catalog::Session,
    location: &str,
    version: u64,
    spill: std::fs::File,
) -> Result<String> {
    let (store, prefix) = table_root(state, location)?;
    let name = format!("{version:020}.ndjson");
    let path = prefix.join(tessera_table::REJECTS).join(name.as_str());
    reject_file::upload(store.as_ref(), &path, spill).await?;
    Ok(format!(
        "{}/_rejects/{name}",
        location.trim_end_matches('/')
    ))
}
