//! Turning the stored batches of one file into decoded batches of the scan's
//! [`DecodedLayout`](crate::access::DecodedLayout), then into its output: filters first
//! (on dictionary codes where they can be), then the projection.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, RecordBatch, StringViewArray, StructArray,
    new_null_array,
};
use arrow::compute::{and, cast_with_options, filter_record_batch};
use arrow::datatypes::{DataType, Field, Int64Type};
use datafusion::common::format::DEFAULT_CAST_OPTIONS;
use datafusion::common::{DataFusionError, Result};
use datafusion::physical_expr::projection::Projector;

use super::coded_filters::{CodedOutput, coded_mask};
use super::elements::ElementSource;
use super::leaves::{Served, dictionary_values, same_dictionary, stored_codes, typed_cast};
use super::metrics::TesseraScanMetrics;
use super::output_source::OutputSource;
use super::predicate_cache::Recorder;
use crate::access::extraction::{ExtractionPlan, dictionary_text};
use crate::access::layout::DecodedParts;
use crate::datasource::tessera::provider::external;
use crate::json::Scanner;
use crate::json::output::OutputBuilder;

/// The relational column `field` of a stored batch, as the table declares it; nulls when
/// the batch does not hold it (nothing reads it).
fn relational_column(stored: &RecordBatch, field: &Field) -> Result<ArrayRef> {
    match stored.column_by_name(field.name()) {
        Some(array) if array.data_type() == field.data_type() => Ok(Arc::clone(array)),
        Some(array) => Ok(arrow::compute::cast(array, field.data_type())?),
        None => Ok(new_null_array(field.data_type(), stored.num_rows())),
    }
}

/// What one pass of [`FileDecoder::decoded`] computes.
#[derive(Debug, Clone, Copy)]
enum Pass<'a> {
    /// Every output and cast the projection or the filters read.
    All,
    /// What the filters read: these outputs (every output when `None`) and the casts
    /// the filters read, nothing else.
    Filters(Option<&'a [usize]>),
}

/// Turns the stored batches of one file into batches of the scan's output.
pub(super) struct FileDecoder {
    plan: Arc<ExtractionPlan>,
    /// Per extracted output, where this file holds its values.
    sources: Vec<OutputSource>,
    /// Per element access, where this file holds it (`None`: computed from the text of
    /// the value walked).
    elements: Vec<Option<ElementSource>>,
    /// Per extracted output, whether an element access is computed from its text.
    walked: Vec<bool>,
    scanner: Option<Scanner>,
    projector: Projector,
    /// Per extracted output, whether the projection or the filters still to apply read
    /// it directly (filters the reader applied already need not see it again).
    referenced: Vec<bool>,
    /// Where values are counted (every value decoded, by either pass of late
    /// materialization).
    metrics: TesseraScanMetrics,
    /// The file's reader already applied the filters (late materialization).
    filters_applied: bool,
    /// The outputs the filters read (`None`: they read more than outputs), computed
    /// once instead of per batch.
    filter_outputs: Option<Arc<[usize]>>,
    /// The casts (indices into the plan's casts) the filters read.
    filter_casts: Arc<BTreeSet<usize>>,
    /// All-null columns handed out for outputs nothing reads, most recent last.
    placeholders: Vec<ArrayRef>,
    /// The outputs whose filters can be judged on dictionary codes.
    coded: Arc<Vec<CodedOutput>>,
    /// Per coded output, the last dictionary met and its entries' verdicts (the Parquet
    /// reader hands a column chunk's dictionary out with every batch).
    verdicts: Vec<Option<(ArrayRef, Vec<bool>)>>,
    /// Where the positions of the rows that pass the filters go (the predicate cache).
    recorder: Option<Arc<Recorder>>,
}

/// An all-null column of `rows` rows for what nothing reads: one array per type and
/// length, kept in `kept` and shared by the batches (most have the same length), not
/// zeroed afresh.
fn placeholder(kept: &mut Vec<ArrayRef>, data_type: &DataType, rows: usize) -> ArrayRef {
    let fits = |a: &ArrayRef| a.data_type() == data_type && a.len() == rows;
    if let Some(array) = kept.iter().find(|a| fits(a)) {
        return Arc::clone(array);
    }
    let array = new_null_array(data_type, rows);
    if kept.len() == MAX_PLACEHOLDERS {
        kept.remove(0);
    }
    kept.push(Arc::clone(&array));
    array
}

/// Placeholder columns a file decoder keeps (types times batch lengths in use at once).
const MAX_PLACEHOLDERS: usize = 8;

impl FileDecoder {
    pub(super) fn new(
        plan: Arc<ExtractionPlan>,
        coded: Arc<Vec<CodedOutput>>,
        sources: Vec<OutputSource>,
        elements: Vec<Option<ElementSource>>,
        metrics: TesseraScanMetrics,
        filters_applied: bool,
    ) -> Result<Self> {
        assert_eq!(sources.len(), plan.outputs.len(), "one source per output");
        assert_eq!(
            elements.len(),
            plan.elements.len(),
            "one source per element access"
        );
        let walked = (0..plan.outputs.len())
            .map(|k| {
                plan.elements
                    .iter()
                    .zip(&elements)
                    .any(|(access, source)| access.walked == k && source.is_none())
            })
            .collect();
        let projector = plan.projection.make_projector(&plan.decoded_schema)?;
        let scanner = sources
            .iter()
            .any(OutputSource::is_document)
            .then(|| Scanner::new(Arc::clone(&plan.trie)));
        Ok(Self {
            filter_outputs: plan.filter_outputs().map(Arc::from),
            filter_casts: Arc::new(plan.filter_casts()),
            referenced: (0..plan.outputs.len())
                .map(|k| plan.is_referenced(k, !filters_applied))
                .collect(),
            plan,
            sources,
            elements,
            walked,
            scanner,
            projector,
            metrics,
            filters_applied,
            placeholders: Vec::new(),
            verdicts: vec![None; coded.len()],
            coded,
            recorder: None,
        })
    }

    /// The same decoder, handing the positions of the rows that pass the filters to
    /// `recorder` (the stored batches then carry the reader's row numbers).
    pub(super) fn with_recorder(self, recorder: Option<Arc<Recorder>>) -> Self {
        Self { recorder, ..self }
    }

    /// Hands the positions of `stored`'s rows that pass the filters (`mask`; all rows
    /// when the reader applied them) to the recorder, if any.
    fn record_passed(&self, stored: &RecordBatch, mask: Option<&BooleanArray>) -> Result<()> {
        let Some(recorder) = &self.recorder else {
            return Ok(());
        };
        let Some(positions) = stored
            .column_by_name(tessera_table::ROW_NUMBER)
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
        else {
            recorder.fail();
            return Ok(());
        };
        match mask {
            Some(mask) => {
                let passed = arrow::compute::filter(positions, mask)?;
                recorder.passed(passed.as_primitive::<Int64Type>());
            }
            None => recorder.passed(positions),
        }
        Ok(())
    }

    /// The output rows of one stored batch (`None` when the filters removed them all).
    pub(super) fn decode(&mut self, stored: &RecordBatch) -> Result<Option<RecordBatch>> {
        let filtered = if self.filters_applied || self.plan.row_filters.is_empty() {
            self.record_passed(stored, None)?;
            self.decoded(stored, Pass::All)?
        } else {
            // Filters the reader did not apply run first, on what they read, so that the
            // projection's casts (which fail on bad text) see only passing rows, as in
            // SQL.
            let (mask, probe) = match self.filter_outputs.clone() {
                Some(outputs) => (self.filter_mask(stored, &outputs)?, None),
                None => {
                    let probe = self.decoded(stored, Pass::Filters(None))?;
                    (self.mask(&probe, &[])?, Some(probe))
                }
            };
            self.record_passed(stored, Some(&mask))?;
            // A probe of every output and cast is the decoded batch already.
            match probe {
                Some(probe) if self.filter_casts.len() == self.plan.casts.len() => {
                    filter_record_batch(&probe, &mask)?
                }
                _ => {
                    let passing = filter_record_batch(stored, &mask)?;
                    if passing.num_rows() == 0 {
                        return Ok(None);
                    }
                    self.decoded(&passing, Pass::All)?
                }
            }
        };
        if filtered.num_rows() == 0 {
            return Ok(None);
        }
        Ok(Some(self.projector.project_batch(&filtered)?))
    }

    /// `stored` as a batch of the decoded schema, with what `pass` asks for computed
    /// (the rest are placeholders nothing reads).
    fn decoded(&mut self, stored: &RecordBatch, pass: Pass<'_>) -> Result<RecordBatch> {
        let only = match pass {
            Pass::Filters(Some(outputs)) => Some(outputs),
            Pass::All | Pass::Filters(None) => None,
        };
        let rows = stored.num_rows();
        let column = stored
            .column_by_name(tessera_tiles::layout::COLUMN)
            .map(|c| c.as_struct());
        let wanted = |k: usize| only.is_none_or(|o| o.contains(&k));
        // The filters' pass computes just the casts the filters read: another cast of
        // the same output must not fail on a row the filters remove.
        let filter_casts = Arc::clone(&self.filter_casts);
        let wanted_cast = |c: usize| matches!(pass, Pass::All) || filter_casts.contains(&c);
        let mut typed_casts: Vec<Option<ArrayRef>> = Vec::with_capacity(self.plan.casts.len());
        for (c, (k, target)) in self.plan.casts.iter().enumerate() {
            typed_casts.push(match (self.sources[*k].typed(), column) {
                (Some(leaf), Some(column)) if wanted(*k) && wanted_cast(c) => {
                    typed_cast(column, leaf, target)?.map(|(array, served)| {
                        self.count(served);
                        if *target == dictionary_text() {
                            self.metrics.values_coded.add(served.typed);
                        }
                        array
                    })
                }
                _ => None,
            });
        }
        // An output's own column is built when something reads it, or a cast of it
        // that the typed leaf could not answer.
        let needed = |k: usize| {
            wanted(k)
                && (self.referenced[k]
                    || only.is_none() && self.walked[k]
                    || self
                        .plan
                        .casts
                        .iter()
                        .zip(&typed_casts)
                        .any(|((source, _), typed)| *source == k && typed.is_none()))
        };
        let needs_documents = self.plan.raw && only.is_none()
            || self
                .sources
                .iter()
                .enumerate()
                .any(|(k, l)| l.is_document() && needed(k));
        let documents = match column {
            Some(column) if needs_documents => {
                Some(tessera_tiles::read_json(column).map_err(external)?)
            }
            _ => None,
        };
        let mut parts = DecodedParts::with_capacity(&self.plan.layout);
        if self.plan.raw {
            parts.document = Some(match &documents {
                Some(documents) if only.is_none() => {
                    arrow::compute::cast(documents, &DataType::Utf8View)?
                }
                _ => Arc::new(StringViewArray::from_iter_values(std::iter::repeat_n(
                    "", rows,
                ))),
            });
        }
        let mut fallback: Vec<(usize, OutputBuilder)> = Vec::new();
        for (k, (source, &(_, output))) in self.sources.iter().zip(&self.plan.outputs).enumerate() {
            match (source, column) {
                _ if !needed(k) => parts.outputs.push(placeholder(
                    &mut self.placeholders,
                    &output.data_type(),
                    rows,
                )),
                (source, Some(column)) if !source.is_document() => {
                    let (array, served) = source.read(column, output)?;
                    self.count(served);
                    parts.outputs.push(array);
                }
                _ => {
                    fallback.push((k, OutputBuilder::new(output, rows)));
                    parts.outputs.push(new_null_array(&output.data_type(), 0));
                }
            }
        }
        if !fallback.is_empty() {
            self.extract_from_documents(documents.as_deref(), rows, &mut fallback)?;
            for (k, mut builder) in fallback {
                parts.outputs[k] = builder.finish();
            }
        }
        for field in &self.plan.relational_fields {
            parts.relational.push(relational_column(stored, field)?);
        }
        for (c, ((k, target), typed)) in self.plan.casts.iter().zip(typed_casts).enumerate() {
            parts.casts.push(match typed {
                Some(array) => array,
                None if !wanted(*k) || !wanted_cast(c) => {
                    placeholder(&mut self.placeholders, target, rows)
                }
                // As SQL's CAST would: an unparsable text is an error, not NULL.
                None => cast_with_options(&parts.outputs[*k], target, &DEFAULT_CAST_OPTIONS)?,
            });
        }
        let row_numbers = stored
            .column_by_name(tessera_table::ROW_NUMBER)
            .and_then(|c| c.as_primitive_opt::<Int64Type>());
        parts.elements =
            self.element_columns((column, row_numbers), &parts.outputs, only.is_some(), rows)?;
        parts.assemble(&self.plan.layout, &self.plan.decoded_schema, rows)
    }

    /// The columns of the element accesses: from a list's typed columns where the file
    /// has them, else from the text of the value walked (`outputs`); placeholders for
    /// the filters' pass (`filters_only`), as no filter reads them.
    fn element_columns(
        &mut self,
        (column, row_numbers): (Option<&StructArray>, Option<&Int64Array>),
        outputs: &[ArrayRef],
        filters_only: bool,
        rows: usize,
    ) -> Result<Vec<ArrayRef>> {
        let mut columns = Vec::with_capacity(self.plan.elements.len());
        for (access, source) in self.plan.elements.iter().zip(&self.elements) {
            columns.push(match (source, column) {
                _ if filters_only => {
                    placeholder(&mut self.placeholders, &access.values_type(), rows)
                }
                (Some(source), column) => {
                    let (array, served) = source.read(column, row_numbers)?;
                    if let ElementSource::Side(_) = source {
                        self.metrics.side_elements.add(served.typed);
                    }
                    self.count(served);
                    array
                }
                (None, _) => access.value_access().of_values(&outputs[access.walked])?,
            });
        }
        Ok(columns)
    }

    fn count(&self, served: Served) {
        self.metrics.values_typed.add(served.typed);
        self.metrics.values_binary.add(served.binary);
    }

    /// Fills the builders of outputs a file does not shred from its documents.
    fn extract_from_documents(
        &mut self,
        documents: Option<&dyn Array>,
        rows: usize,
        builders: &mut [(usize, OutputBuilder)],
    ) -> Result<()> {
        let scanner = self
            .scanner
            .as_mut()
            .expect("a scanner exists for fallbacks");
        let Some(documents) = documents else {
            builders
                .iter_mut()
                .for_each(|(_, b)| (0..rows).for_each(|_| b.append_null()));
            return Ok(());
        };
        let documents = documents.as_string::<i32>();
        for row in 0..rows {
            if documents.is_null(row) {
                builders.iter_mut().for_each(|(_, b)| b.append_null());
                continue;
            }
            let doc = documents.value(row);
            scanner.scan(doc.as_bytes()).map_err(|e| {
                DataFusionError::Internal(format!("a stored document does not parse: {e:?}"))
            })?;
            for (k, builder) in builders.iter_mut() {
                let (slot, _) = self.plan.outputs[*k];
                builder.append(doc, scanner.get(slot));
            }
        }
        self.metrics.values_reconstructed.add(rows * builders.len());
        Ok(())
    }

    /// Which rows of a stored batch pass every pushed filter, when the filters read the
    /// extracted `outputs` and their casts: filters on dictionary-encoded paths are
    /// judged on the codes ([`CodedOutput`]), the others on the outputs they read.
    pub(super) fn filter_mask(
        &mut self,
        stored: &RecordBatch,
        outputs: &[usize],
    ) -> Result<BooleanArray> {
        let column = stored
            .column_by_name(tessera_tiles::layout::COLUMN)
            .map(|c| c.as_struct());
        let mut judged = vec![false; self.plan.row_filters.len()];
        let mut coded_outputs = Vec::new();
        let mut mask: Option<BooleanArray> = None;
        for (coded, known) in self.coded.iter().zip(&mut self.verdicts) {
            let leaf = self.sources[coded.output].typed();
            let Some((codes, dictionary, served)) = column
                .zip(leaf)
                .map(|(column, leaf)| stored_codes(column, leaf))
                .transpose()?
                .flatten()
            else {
                continue;
            };
            if !known
                .as_ref()
                .is_some_and(|(last, _)| same_dictionary(last, &dictionary))
            {
                let (_, output) = self.plan.outputs[coded.output];
                let leaf = leaf.expect("codes come from a typed leaf");
                let values = dictionary_values(&dictionary, leaf, output)?;
                *known = Some((dictionary, coded.verdicts(&values)?));
            }
            let (_, verdicts) = known.as_ref().expect("verdicts were just recorded");
            self.metrics.values_typed.add(served.typed);
            self.metrics.values_coded.add(served.typed);
            mask = Some(conjoin(mask, coded_mask(&codes, verdicts))?);
            coded.filters.iter().for_each(|&f| judged[f] = true);
            coded_outputs.push(coded.output);
        }
        if judged.iter().all(|&j| j) {
            return Ok(mask.expect("there are filters"));
        }
        let rest: Vec<usize> = outputs
            .iter()
            .copied()
            .filter(|k| !coded_outputs.contains(k))
            .collect();
        let decoded = self.decoded(stored, Pass::Filters(Some(&rest)))?;
        let others = self.mask(&decoded, &judged)?;
        conjoin(mask, others)
    }

    /// Which rows of a decoded batch pass every pushed filter not already `judged`
    /// (indices into the row filters; all rows when every filter is).
    fn mask(&self, batch: &RecordBatch, judged: &[bool]) -> Result<BooleanArray> {
        let mut mask: Option<BooleanArray> = None;
        for (f, filter) in self.plan.row_filters.iter().enumerate() {
            if judged.get(f).copied().unwrap_or(false) {
                continue;
            }
            let passed = filter.evaluate(batch)?.into_array(batch.num_rows())?;
            mask = Some(conjoin(mask, passed.as_boolean().clone())?);
        }
        Ok(mask.unwrap_or_else(|| BooleanArray::from(vec![true; batch.num_rows()])))
    }
}

/// `mask AND passed` (`passed` alone when there is no mask yet).
fn conjoin(mask: Option<BooleanArray>, passed: BooleanArray) -> Result<BooleanArray> {
    Ok(match mask {
        None => passed,
        Some(mask) => and(&mask, &passed)?,
    })
}
