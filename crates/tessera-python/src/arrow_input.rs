//! Python objects that export Arrow streams (`__arrow_c_stream__`: pyarrow tables,
//! pandas and polars data frames) as tables: registered by name, or, like DuckDB's
//! replacement scans, found as variables of the caller when a statement reads a table
//! name the session does not know.

use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::array::RecordBatch;
use datafusion::common::TableReference;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{CopyToSource, Statement};
use datafusion::sql::sqlparser::ast::{Ident, TableFactor, Visit, Visitor};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3_arrow::PyRecordBatchReader;

use crate::exceptions::Failure;

/// The Arrow stream `data` exports, read into a table of `partitions` partitions (its
/// batches are shared with the exporter, not copied).
pub fn table_of(name: &str, data: &Bound<'_, PyAny>, partitions: usize) -> PyResult<MemTable> {
    let not_arrow = |reason: String| Failure::NotArrow {
        name: name.to_string(),
        reason,
    };
    if !data.hasattr(intern!(data.py(), "__arrow_c_stream__"))? {
        let kind = data.get_type().name()?.to_string();
        return Err(not_arrow(format!(
            "a {kind} does not export an Arrow stream (__arrow_c_stream__)"
        ))
        .into());
    }
    // Read with the GIL held: an exporter written in Python needs it for each batch.
    let reader = data
        .extract::<PyRecordBatchReader>()
        .map_err(|e| not_arrow(e.to_string()))?
        .into_reader()?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<RecordBatch>, _>>()
        .map_err(|e| not_arrow(e.to_string()))?;
    let mut parts = vec![Vec::new(); partitions.clamp(1, batches.len().max(1))];
    let count = parts.len();
    for (i, batch) in batches.into_iter().enumerate() {
        parts[i % count].push(batch);
    }
    MemTable::try_new(schema, parts).map_err(|e| not_arrow(e.to_string()).into())
}

/// Tables registered for one statement from the caller's variables, deregistered by
/// [`Self::release`] once the statement is planned (its plan holds them).
#[derive(Default)]
pub struct Borrowed {
    names: Vec<TableReference>,
}

impl Borrowed {
    /// Registers, for each bare table name `statement` reads that `ctx` does not know,
    /// the caller's variable of that name if `lookup(name)` finds one with an Arrow
    /// stream.
    pub fn register(
        ctx: &SessionContext,
        statement: &Statement,
        lookup: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut borrowed = Self::default();
        let Some(lookup) = lookup else {
            return Ok(borrowed);
        };
        let partitions = ctx.copied_config().target_partitions();
        for ident in table_names(statement) {
            let name = TableReference::bare(normalized(&ident));
            if ctx.table_exist(name.clone()).unwrap_or(true) || borrowed.names.contains(&name) {
                continue;
            }
            let value = lookup.call1((ident.value.as_str(),))?;
            if value.is_none() || !value.hasattr(intern!(value.py(), "__arrow_c_stream__"))? {
                continue;
            }
            let table = table_of(&ident.value, &value, partitions);
            let registered = table.and_then(|t| {
                ctx.register_table(name.clone(), Arc::new(t))
                    .map_err(|e| Failure::Catalog(e).into())
            });
            if let Err(e) = registered {
                borrowed.release(ctx);
                return Err(e);
            }
            borrowed.names.push(name);
        }
        Ok(borrowed)
    }

    /// Deregisters the borrowed tables.
    pub fn release(self, ctx: &SessionContext) {
        for name in self.names {
            // Only this statement registered the name; nothing else can have taken it.
            let _ = ctx.deregister_table(name);
        }
    }
}

/// The name DataFusion looks an identifier up by: unquoted ones in lower case.
fn normalized(ident: &Ident) -> String {
    match ident.quote_style {
        None => ident.value.to_lowercase(),
        Some(_) => ident.value.clone(),
    }
}

/// The one-part table names that `statement` reads from (not table functions, not
/// quoted locations such as `'events.json'`).
fn table_names(statement: &Statement) -> Vec<Ident> {
    let mut names = TableNames::default();
    let _ = match statement {
        Statement::Statement(inner) => inner.visit(&mut names),
        Statement::Explain(explain) => {
            names.0 = table_names(&explain.statement);
            ControlFlow::Continue(())
        }
        Statement::CopyTo(copy) => match &copy.source {
            CopyToSource::Query(query) => query.visit(&mut names),
            CopyToSource::Relation(name) => {
                names.add(name.0.as_slice());
                ControlFlow::Continue(())
            }
        },
        Statement::CreateExternalTable(_) | Statement::Reset(_) => ControlFlow::Continue(()),
    };
    names.0
}

/// Collects the identifiers of table factors that name a table by one identifier.
#[derive(Default)]
struct TableNames(Vec<Ident>);

impl TableNames {
    fn add(&mut self, parts: &[datafusion::sql::sqlparser::ast::ObjectNamePart]) {
        if let [part] = parts
            && let Some(ident) = part.as_ident()
            && matches!(ident.quote_style, None | Some('"') | Some('`'))
        {
            self.0.push(ident.clone());
        }
    }
}

impl Visitor for TableNames {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name, args: None, ..
        } = factor
        {
            self.add(name.0.as_slice());
        }
        ControlFlow::Continue(())
    }
}
