//! A relation: one planned query, run each time it is fetched (as DuckDB's relations
//! are), its rows handed to Python through the Arrow PyCapsule stream interface.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StructArray};
use arrow::datatypes::{Field, SchemaRef};
use arrow::error::ArrowError;
use arrow::util::pretty::pretty_format_batches_with_schema;
use datafusion::dataframe::DataFrame;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::displayable;
use futures::TryStreamExt;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyList, PyTuple};
use pyo3_arrow::ffi::{ArrayIterator, to_stream_pycapsule};

use crate::engine::Engine;
use crate::exceptions::ExecutionError;

/// A query: it runs when its rows are fetched (`arrow()`, `df()`, `pl()`,
/// `fetchall()`, `show()` or any reader of `__arrow_c_stream__`), each time anew.
#[pyclass(frozen, module = "tessera")]
pub struct Relation {
    engine: Arc<Engine>,
    frame: DataFrame,
}

impl Relation {
    /// A relation over `frame`, run by `engine`.
    pub fn new(engine: Arc<Engine>, frame: DataFrame) -> Self {
        Self { engine, frame }
    }
}

#[pymethods]
impl Relation {
    /// The names of the result's columns.
    #[getter]
    fn columns(&self) -> Vec<String> {
        let schema = self.frame.schema();
        schema.fields().iter().map(|f| f.name().clone()).collect()
    }

    /// The Arrow types of the result's columns, as text (`Int64`, `Utf8`, ...).
    #[getter]
    fn types(&self) -> Vec<String> {
        let schema = self.frame.schema();
        schema
            .fields()
            .iter()
            .map(|f| f.data_type().to_string())
            .collect()
    }

    /// Runs the query and exports its rows as an Arrow C stream (a PyCapsule), cast to
    /// `requested_schema` where Arrow can; the rows are shared, not copied.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let collected = self.engine.collect(py, self.frame.clone())?;
        stream_capsule(py, collected.schema, collected.batches, requested_schema)
    }

    /// Runs the query; its rows as a `pyarrow.Table`.
    fn arrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        py.import(intern!(py, "pyarrow"))?
            .call_method1(intern!(py, "table"), (slf,))
    }

    /// Runs the query; its rows as a `pandas.DataFrame`.
    fn df<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::arrow(slf)?.call_method0(intern!(slf.py(), "to_pandas"))
    }

    /// Runs the query; its rows as a `polars.DataFrame`.
    fn pl<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        py.import(intern!(py, "polars"))?
            .call_method1(intern!(py, "DataFrame"), (slf,))
    }

    /// Runs the query; its rows as a list of tuples.
    fn fetchall<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyList>> {
        let py = slf.py();
        let table = Self::arrow(slf)?;
        let rows: usize = table.getattr(intern!(py, "num_rows"))?.extract()?;
        let columns = table
            .getattr(intern!(py, "columns"))?
            .try_iter()?
            .map(|column| column?.call_method0(intern!(py, "to_pylist")))
            .collect::<PyResult<Vec<_>>>()?;
        let tuples = (0..rows)
            .map(|i| {
                let values = columns
                    .iter()
                    .map(|column| column.get_item(i))
                    .collect::<PyResult<Vec<_>>>()?;
                PyTuple::new(py, values)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, tuples)
    }

    /// Runs the query and prints its first `max_rows` rows as a table, with the total
    /// when there are more (only those rows are held).
    #[pyo3(signature = (max_rows=40))]
    fn show(&self, py: Python<'_>, max_rows: usize) -> PyResult<()> {
        let frame = self.frame.clone();
        let preview = self.engine.query(py, async move {
            let mut stream = frame.execute_stream().await?;
            let mut preview = Preview::new(stream.schema());
            while let Some(batch) = stream.try_next().await? {
                preview.add(&batch, max_rows);
            }
            Ok::<_, DataFusionError>(preview)
        });
        self.engine.report_rejects(py)?;
        let text = preview?
            .render()
            .map_err(|e| ExecutionError::new_err(e.to_string()))?;
        py.import(intern!(py, "builtins"))?
            .call_method1(intern!(py, "print"), (text,))?;
        Ok(())
    }

    /// The query's optimized logical plan and its physical plan, as text.
    fn explain(&self, py: Python<'_>) -> PyResult<String> {
        let frame = self.frame.clone();
        self.engine.query(py, async move {
            let logical = frame.clone().into_optimized_plan()?;
            let physical = frame.create_physical_plan().await?;
            Ok(format!(
                "logical plan:\n{}\n\nphysical plan:\n{}",
                logical.display_indent(),
                displayable(physical.as_ref()).indent(true)
            ))
        })
    }

    fn __repr__(&self) -> String {
        format!("<tessera.Relation columns={:?}>", self.columns())
    }
}

/// The first rows of a result and how many there were.
struct Preview {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    shown: usize,
    total: usize,
}

impl Preview {
    fn new(schema: SchemaRef) -> Self {
        Self {
            schema,
            batches: Vec::new(),
            shown: 0,
            total: 0,
        }
    }

    /// Counts `batch` and keeps its rows up to `max_rows` in all.
    fn add(&mut self, batch: &RecordBatch, max_rows: usize) {
        let take = max_rows.saturating_sub(self.shown).min(batch.num_rows());
        if take > 0 {
            self.batches.push(batch.slice(0, take));
            self.shown += take;
        }
        self.total += batch.num_rows();
    }

    /// The rows as a table, and a line with the total when some were left out.
    fn render(&self) -> Result<String, ArrowError> {
        let table = pretty_format_batches_with_schema(Arc::clone(&self.schema), &self.batches)?;
        Ok(match self.total > self.shown {
            true => format!("{table}\n({} rows, {} shown)", self.total, self.shown),
            false => table.to_string(),
        })
    }
}

/// `batches` as an Arrow C stream capsule, as pyo3-arrow exports a record batch
/// reader: each batch one struct array.
fn stream_capsule<'py>(
    py: Python<'py>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    requested_schema: Option<Bound<'py, PyCapsule>>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let field = Field::new_struct("", schema.fields().clone(), false)
        .with_metadata(schema.metadata().clone());
    let arrays = batches
        .into_iter()
        .map(|batch| Ok(Arc::new(StructArray::from(batch)) as ArrayRef));
    let reader = ArrayIterator::new(arrays, Arc::new(field));
    Ok(to_stream_pycapsule(py, Box::new(reader), requested_schema)?)
}
