//! Which JSON paths a scan extracts while parsing, derived from the projection that
//! DataFusion pushed into it.
//!
//! Every JSON access on the document column with a constant path (`j->>'$.a.b'`,
//! `json_get_int(j, 'n')`, ...) becomes a column the parser fills directly; the rest of
//! the projection is evaluated on top of those columns. The raw document is only
//! materialized when something still needs it (`SELECT j`, a per-row path, ...).

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::common::DataFusionError;
use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::physical_expr::expressions::{CastExpr, Column, LambdaExpr, LambdaVariable};
use datafusion::physical_expr::projection::{ProjectionExpr, ProjectionExprs};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};

use std::collections::BTreeSet;

use super::document_filter::DocPredicate;
use super::layout::DecodedLayout;
use super::pushable::{literal_path, pushable_access};
use crate::functions::json_each::{
    JsonEachValues, Rows, ValueAccess, ValueReads, fields_type, values_type,
};
use crate::json::Output;
use crate::json::path::{PathElem, PathTrie, Slot, display_path};

/// Name prefix of the columns holding extracted paths inside a scan.
const EXTRACTED_PREFIX: &str = "__tessera_json_";
/// The type a grouping on codes reads a text access as: the dictionary codes of a
/// string column as stored, instead of one string per row (what Tessera tables decode
/// dictionary-encoded string leaves as).
pub fn dictionary_text() -> DataType {
    tessera_table::dictionary_type()
}

/// Whether `CAST(<access with output> AS target)` is a decoded column of its own: a
/// number or date/time of a text or JSON access, or the dictionary of a text access.
fn is_typed_cast(output: Output, target: &DataType) -> bool {
    let numeric = matches!(
        target,
        DataType::Int64
            | DataType::Float64
            | DataType::Date32
            | DataType::Timestamp(TimeUnit::Nanosecond, None)
    );
    match output {
        Output::Text => numeric || *target == dictionary_text(),
        Output::Json => numeric,
        _ => false,
    }
}

/// Name prefix of the columns holding element accesses.
const ELEMENT_PREFIX: &str = "__tessera_elements_";

/// The projection's expressions and the row filters of a plan, rewritten.
struct Reads {
    projection: Vec<ProjectionExpr>,
    row_filters: Vec<Arc<dyn PhysicalExpr>>,
}

impl Reads {
    /// The same reads with every lambda's variables placed after the `width` columns of
    /// the batches they are evaluated on. A lambda's body reads its variables as columns
    /// numbered after its input's columns (`array_any_match(list, x -> x = 1)`), so
    /// once the expressions read a decoded batch wider than the table's schema, the
    /// variables' numbers would name decoded columns instead.
    fn with_lambda_variables_after(self, width: usize) -> Result<Self> {
        // Most expressions hold no lambda: they are kept as they are, not rebuilt.
        let place = |expr: Arc<dyn PhysicalExpr>| match expr.exists(|e| Ok(e.is::<LambdaExpr>()))? {
            true => lambda_variables_after(expr, width, &mut Vec::new()),
            false => Ok(expr),
        };
        Ok(Self {
            projection: self
                .projection
                .into_iter()
                .map(|p| Ok(ProjectionExpr::new(place(p.expr)?, p.alias)))
                .collect::<Result<_>>()?,
            row_filters: self
                .row_filters
                .into_iter()
                .map(place)
                .collect::<Result<_>>()?,
        })
    }
}

/// `expr` with each lambda variable numbered `width` plus its position among the
/// parameters of the lambdas it is inside of (`scope`, outermost first), as DataFusion's
/// planner numbers them.
fn lambda_variables_after(
    expr: Arc<dyn PhysicalExpr>,
    width: usize,
    scope: &mut Vec<String>,
) -> Result<Arc<dyn PhysicalExpr>> {
    if let Some(variable) = expr.downcast_ref::<LambdaVariable>() {
        let at = scope
            .iter()
            .rposition(|name| name == variable.name())
            .ok_or_else(|| {
                DataFusionError::Internal(format!("lambda variable {variable} outside its lambda"))
            })?;
        return Ok(Arc::new(LambdaVariable::new(
            width + at,
            Arc::clone(variable.field()),
        )));
    }
    let depth = scope.len();
    if let Some(lambda) = expr.downcast_ref::<LambdaExpr>() {
        scope.extend(lambda.params().iter().cloned());
    }
    let children = expr
        .children()
        .into_iter()
        .map(|child| lambda_variables_after(Arc::clone(child), width, scope))
        .collect::<Result<Vec<_>>>()?;
    scope.truncate(depth);
    match children.is_empty() {
        true => Ok(expr),
        false => expr.with_new_children(children),
    }
}

/// `e` as an element access: [`JsonEachValues`] over an extracted JSON value with a
/// constant path.
fn element_access(e: &Arc<dyn PhysicalExpr>, outputs: &[(Slot, Output)]) -> Option<ElementAccess> {
    let function = e.downcast_ref::<ScalarFunctionExpr>()?;
    let values = function.fun().inner().downcast_ref::<JsonEachValues>()?;
    let (walked, paths) = function.args().split_first()?;
    let accesses = values
        .reads()
        .split(paths)?
        .into_iter()
        .map(|(output, args)| Some((output, literal_path(args)?)))
        .collect::<Option<Vec<_>>>()?;
    let fields = matches!(values.reads(), ValueReads::Fields(_));
    let walked: usize = walked
        .downcast_ref::<Column>()?
        .name()
        .strip_prefix(EXTRACTED_PREFIX)?
        .parse()
        .ok()?;
    (outputs.get(walked)?.1 == Output::Json).then_some(())?;
    Some(ElementAccess {
        walked,
        accesses,
        fields,
        rows_of: values.rows_of(),
    })
}

/// Name prefix of the columns holding numeric casts of extracted text.
const CAST_PREFIX: &str = "__tessera_cast_";

/// The extraction a scan performs and the projection it applies afterwards.
#[derive(Debug, Clone)]
pub struct ExtractionPlan {
    /// All extracted paths, for one pass of the scanner.
    pub trie: Arc<PathTrie>,
    /// The extracted columns, in order: which path and how it converts.
    pub outputs: Vec<(Slot, Output)>,
    /// Whether the raw document column is materialized (it is then column 0).
    pub raw: bool,
    /// The table's columns besides the document column (partition values of NDJSON
    /// files, relational columns of Tessera tables), decoded after the extracted ones.
    pub relational_fields: Vec<Arc<Field>>,
    /// Where each part of a decoded batch is.
    pub layout: DecodedLayout,
    /// Schema of the decoded batches, in [`Self::layout`]'s order.
    pub decoded_schema: SchemaRef,
    /// The pushed-down projection rewritten over [`Self::decoded_schema`].
    pub projection: ProjectionExprs,
    /// Filters decided per document: the path's slot, its text semantics, and the
    /// accepted texts. A document failing one is not a row.
    pub predicates: Vec<(Slot, Output, BTreeSet<Vec<u8>>)>,
    /// Boolean filters over [`Self::decoded_schema`], evaluated on each decoded batch
    /// before the projection; a row must pass all of them.
    pub row_filters: Vec<Arc<dyn PhysicalExpr>>,
    /// Casts of extracted text to numbers that are decoded columns of their own (after
    /// the relational columns), so a scan that holds the number typed can skip the text:
    /// `(extracted output, target type)`. Empty unless [`Self::with_typed_casts`].
    pub casts: Vec<(usize, DataType)>,
    /// Accesses to the values of `json_each`'s rows over extracted outputs, decoded as
    /// columns of their own (after the casts). Empty unless
    /// [`Self::with_element_accesses`].
    pub elements: Vec<ElementAccess>,
}

/// What [`JsonEachValues`] computes over an extracted output (the JSON text of the value
/// `json_each` walks): a column of its own, so that a table answers it from the columns
/// of a list it shreds instead of writing the list as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementAccess {
    /// The extracted output holding the value walked (an [`Output::Json`] access).
    pub walked: usize,
    /// Each access's output and path below each row's value; none: the rows alone.
    pub accesses: Vec<(Output, Vec<PathElem>)>,
    /// Whether the accesses' values are the fields of a struct
    /// ([`ValueReads::Fields`]), not one access's values.
    pub fields: bool,
    /// Which rows the value walked has.
    pub rows_of: Rows,
}

impl ElementAccess {
    /// The type of its lists.
    pub fn values_type(&self) -> DataType {
        let mut outputs = self.accesses.iter().map(|&(output, _)| output);
        match self.fields {
            true => fields_type(outputs),
            false => values_type(outputs.next()),
        }
    }

    /// What computes its lists from the text of the values walked.
    pub fn value_access(&self) -> ValueAccess {
        let accesses: Vec<(Output, Option<Vec<PathElem>>)> = self
            .accesses
            .iter()
            .map(|(output, path)| (*output, Some(path.clone())))
            .collect();
        ValueAccess::with_accesses(&accesses, self.fields, self.rows_of)
    }
}

impl ExtractionPlan {
    /// Plans the extraction for `projection` and `row_filters` (both over the table
    /// schema) over a table whose file schema is the single document column
    /// `doc_field`, followed by `relational_fields`.
    pub fn new(
        doc_field: &Arc<Field>,
        relational_fields: &[Arc<Field>],
        projection: &ProjectionExprs,
        filters: &[DocPredicate],
        row_filters: &[Arc<dyn PhysicalExpr>],
    ) -> Result<Self> {
        let mut trie = PathTrie::new();
        let predicates = filters
            .iter()
            .map(|f| (trie.add(&f.path), f.output, f.accepted.clone()))
            .collect();
        let mut outputs: Vec<(Slot, Output)> = Vec::new();
        // Pass 1: find the accesses and whether the raw document is still referenced.
        let mut raw = false;
        for expr in projection.iter().map(|p| &p.expr).chain(row_filters) {
            let rewritten = rewrite(expr, &mut trie, &mut outputs, &|_| 0, &|_| 0)?;
            raw |= references_column(&rewritten, 0, true);
        }
        // Pass 2: rewrite with the final column positions of the decoded batch.
        let layout = DecodedLayout::new(raw, outputs.len(), relational_fields.len());
        let doc_index = |_: usize| layout.document();
        let extracted_index = |k: usize| layout.output(k);
        // Table columns follow the document column in the table schema.
        let relational_index = move |table_index: usize| layout.relational(table_index - 1);
        let mut exprs = Vec::with_capacity(projection.iter().count());
        for p in projection.iter() {
            let rewritten = rewrite(
                &p.expr,
                &mut trie,
                &mut outputs,
                &doc_index,
                &extracted_index,
            )?;
            let remapped = remap_partition_columns(rewritten, &relational_index)?;
            exprs.push(ProjectionExpr::new(remapped, p.alias.clone()));
        }
        let row_filters = row_filters
            .iter()
            .map(|f| {
                let rewritten = rewrite(f, &mut trie, &mut outputs, &doc_index, &extracted_index)?;
                remap_partition_columns(rewritten, &relational_index)
            })
            .collect::<Result<Vec<_>>>()?;
        assert_eq!(
            outputs.len(),
            layout.width() - usize::from(raw) - relational_fields.len()
        );
        let mut fields: Vec<Arc<Field>> = Vec::new();
        if raw {
            fields.push(Arc::clone(doc_field));
        }
        for (k, (_, output)) in outputs.iter().enumerate() {
            fields.push(Arc::new(Field::new(
                format!("{EXTRACTED_PREFIX}{k}"),
                output.data_type(),
                true,
            )));
        }
        fields.extend(relational_fields.iter().cloned());
        let decoded_schema = Arc::new(Schema::new(fields));
        let reads = Reads {
            projection: exprs,
            row_filters,
        };
        let reads = reads.with_lambda_variables_after(decoded_schema.fields().len())?;
        Ok(Self {
            trie: Arc::new(trie),
            outputs,
            raw,
            relational_fields: relational_fields.to_vec(),
            layout,
            decoded_schema,
            projection: ProjectionExprs::new(reads.projection),
            predicates,
            row_filters: reads.row_filters,
            casts: Vec::new(),
            elements: Vec::new(),
        })
    }

    /// The same plan with every `CAST(<extracted text> AS BIGINT | DOUBLE | ...)` in the
    /// projection and filters read from a decoded column of its own (JSON Tiles, SIGMOD 2021, §4.3
    /// step 8: a numeric cast of a value stored as a number needs no text), and every
    /// cast of a text access to [`dictionary_text`] too (a string stored with a
    /// dictionary needs no string per row).
    pub fn with_typed_casts(mut self) -> Result<Self> {
        assert!(self.casts.is_empty(), "typed casts are planned once");
        let layout = self.layout;
        let mut casts: Vec<(usize, DataType)> = Vec::new();
        let mut rewrite_casts = |expr: Arc<dyn PhysicalExpr>| -> Result<Arc<dyn PhysicalExpr>> {
            expr.transform_down(|e| {
                // Only casts that fail on bad input, like the one the scan applies.
                let Some(cast) = e
                    .downcast_ref::<CastExpr>()
                    .filter(|c| !c.cast_options().safe)
                else {
                    return Ok(Transformed::no(e));
                };
                let target = cast.cast_type().clone();
                let source = cast.expr().downcast_ref::<Column>().and_then(|c| {
                    c.name()
                        .strip_prefix(EXTRACTED_PREFIX)?
                        .parse::<usize>()
                        .ok()
                });
                let Some(k) = source.filter(|&k| is_typed_cast(self.outputs[k].1, &target)) else {
                    return Ok(Transformed::no(e));
                };
                let c = index_of(&mut casts, (k, target));
                let col: Arc<dyn PhysicalExpr> =
                    // Casts are numbered as found; cast `c` sits where a layout of `c + 1`
                    // casts puts it, which more casts found later do not move.
                    Arc::new(Column::new(&format!("{CAST_PREFIX}{c}"), layout.with_casts(c + 1).cast(c)));
                Ok(Transformed::new(col, true, TreeNodeRecursion::Jump))
            })
            .map(|t| t.data)
        };
        let reads = self.rewrite_reads(&mut rewrite_casts)?;
        self.add_columns(reads, CAST_PREFIX, casts.iter().map(|(_, t)| t.clone()))?;
        self.layout = layout.with_casts(casts.len());
        self.casts = casts;
        Ok(self)
    }

    /// The same plan with every [`JsonEachValues`] over an extracted JSON value read from
    /// a decoded column of its own, after the casts (planned first).
    pub fn with_element_accesses(mut self) -> Result<Self> {
        assert!(
            self.elements.is_empty(),
            "element accesses are planned once"
        );
        let layout = self.layout;
        let mut elements: Vec<ElementAccess> = Vec::new();
        let outputs = self.outputs.clone();
        let exprs = self.rewrite_reads(|expr| {
            expr.transform_down(|e| {
                let Some(access) = element_access(&e, &outputs) else {
                    return Ok(Transformed::no(e));
                };
                let at = index_of(&mut elements, access);
                // Numbered as found, like the casts: later ones do not move this one.
                let position = layout.with_elements(at + 1).element(at);
                let col: Arc<dyn PhysicalExpr> =
                    Arc::new(Column::new(&format!("{ELEMENT_PREFIX}{at}"), position));
                Ok(Transformed::new(col, true, TreeNodeRecursion::Jump))
            })
            .map(|t| t.data)
        })?;
        let types = elements.iter().map(ElementAccess::values_type);
        self.add_columns(exprs, ELEMENT_PREFIX, types)?;
        self.layout = layout.with_elements(elements.len());
        self.elements = elements;
        Ok(self)
    }

    /// The projection's expressions and the row filters, each rewritten by `rewrite`.
    fn rewrite_reads(
        &self,
        mut rewrite: impl FnMut(Arc<dyn PhysicalExpr>) -> Result<Arc<dyn PhysicalExpr>>,
    ) -> Result<Reads> {
        let projection = self
            .projection
            .iter()
            .map(|p| {
                Ok(ProjectionExpr::new(
                    rewrite(Arc::clone(&p.expr))?,
                    p.alias.clone(),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let row_filters = self
            .row_filters
            .iter()
            .map(|f| rewrite(Arc::clone(f)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Reads {
            projection,
            row_filters,
        })
    }

    /// Takes `reads` (rewritten to read new decoded columns) and appends those columns,
    /// named `prefix` and their number, of `types`, to the decoded schema.
    fn add_columns(
        &mut self,
        reads: Reads,
        prefix: &str,
        types: impl Iterator<Item = DataType>,
    ) -> Result<()> {
        let mut fields: Vec<Arc<Field>> = self.decoded_schema.fields().iter().cloned().collect();
        for (at, data_type) in types.enumerate() {
            fields.push(Arc::new(Field::new(
                format!("{prefix}{at}"),
                data_type,
                true,
            )));
        }
        let reads = reads.with_lambda_variables_after(fields.len())?;
        self.projection = ProjectionExprs::new(reads.projection);
        self.row_filters = reads.row_filters;
        self.decoded_schema = Arc::new(Schema::new(fields));
        Ok(())
    }

    /// Whether extracted output `k` is read by the projection (or, `with_filters`, by
    /// the filters) itself, not only through a cast column.
    pub fn is_referenced(&self, k: usize, with_filters: bool) -> bool {
        let name = format!("{EXTRACTED_PREFIX}{k}");
        let filters = if with_filters {
            &self.row_filters[..]
        } else {
            &[]
        };
        self.projection
            .iter()
            .map(|p| &p.expr)
            .chain(filters)
            .any(|e| {
                e.exists(|n| Ok(n.downcast_ref::<Column>().is_some_and(|c| c.name() == name)))
                    .unwrap_or(true)
            })
    }
}

impl ExtractionPlan {
    /// Whether extracted output `k` itself is read: by the projection or the filters
    /// directly, or through a cast (not only through element accesses).
    pub fn reads_output(&self, k: usize) -> bool {
        self.is_referenced(k, true) || self.casts.iter().any(|&(c, _)| c == k)
    }
}

impl fmt::Display for ExtractionPlan {
    /// `json_paths=[$.a:Text, ...], raw_document=false`: what EXPLAIN shows of a scan.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let paths: Vec<String> = self
            .outputs
            .iter()
            .map(|&(slot, output)| format!("{}:{output:?}", display_path(self.trie.path(slot))))
            .collect();
        write!(
            f,
            "json_paths=[{}], raw_document={}",
            paths.join(", "),
            self.raw
        )
    }
}

impl ExtractionPlan {
    /// The extracted outputs (indices into [`Self::outputs`]) the row filters read,
    /// directly or through a cast, or `None` when a filter reads anything else (the raw
    /// document, partition values).
    pub fn filter_outputs(&self) -> Option<Vec<usize>> {
        let (outputs, casts) = self.filter_reads()?;
        let mut all: BTreeSet<usize> = outputs;
        all.extend(casts.iter().map(|&c| self.casts[c].0));
        Some(all.into_iter().collect())
    }

    /// The casts (indices into [`Self::casts`]) the row filters read.
    pub fn filter_casts(&self) -> BTreeSet<usize> {
        self.filter_reads()
            .map(|(_, casts)| casts)
            .unwrap_or_default()
    }

    /// (outputs, casts) the row filters read; `None` when they read anything else.
    fn filter_reads(&self) -> Option<(BTreeSet<usize>, BTreeSet<usize>)> {
        let mut outputs = BTreeSet::new();
        let mut casts = BTreeSet::new();
        for filter in &self.row_filters {
            let reads = FilterReads::of(filter)?;
            outputs.extend(reads.outputs);
            casts.extend(reads.casts);
        }
        Some((outputs, casts))
    }

    /// Per row filter, the extracted output it reads when that is all it reads (the
    /// output's own column: no cast of it, nothing else), and the outputs the other
    /// filters read directly or through casts; `None` when a filter reads anything but
    /// outputs and casts.
    pub fn single_output_filters(&self) -> Option<(Vec<Option<usize>>, BTreeSet<usize>)> {
        let mut singles = Vec::with_capacity(self.row_filters.len());
        let mut others = BTreeSet::new();
        for filter in &self.row_filters {
            let reads = FilterReads::of(filter)?;
            let single = match (reads.outputs.len(), reads.casts.is_empty()) {
                (1, true) => reads.outputs.first().copied(),
                _ => None,
            };
            if single.is_none() {
                others.extend(&reads.outputs);
                others.extend(reads.casts.iter().map(|&c| self.casts[c].0));
            }
            singles.push(single);
        }
        Some((singles, others))
    }
}

/// The decoded columns one row filter reads.
struct FilterReads {
    /// Extracted outputs read directly.
    outputs: BTreeSet<usize>,
    /// Casts (indices into [`ExtractionPlan::casts`]) read.
    casts: BTreeSet<usize>,
}

impl FilterReads {
    /// What `filter` reads; `None` when it reads a column that is neither an output nor
    /// a cast (the raw document, partition values).
    fn of(filter: &Arc<dyn PhysicalExpr>) -> Option<Self> {
        let mut reads = Self {
            outputs: BTreeSet::new(),
            casts: BTreeSet::new(),
        };
        let mut other = false;
        filter
            .apply(|e| {
                if let Some(c) = e.downcast_ref::<Column>() {
                    let extracted = c.name().strip_prefix(EXTRACTED_PREFIX);
                    let cast = c.name().strip_prefix(CAST_PREFIX);
                    match (extracted.map(str::parse), cast.map(str::parse::<usize>)) {
                        (Some(Ok(k)), _) => {
                            reads.outputs.insert(k);
                        }
                        (_, Some(Ok(c))) => {
                            reads.casts.insert(c);
                        }
                        _ => other = true,
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })
            .ok()?;
        (!other).then_some(reads)
    }
}

/// Replaces each JSON access on the document column (table column 0) by a column of the
/// decoded batch; other references to the document become `doc_index`.
fn rewrite(
    expr: &Arc<dyn PhysicalExpr>,
    trie: &mut PathTrie,
    outputs: &mut Vec<(Slot, Output)>,
    doc_index: &dyn Fn(usize) -> usize,
    extracted_index: &dyn Fn(usize) -> usize,
) -> Result<Arc<dyn PhysicalExpr>> {
    Arc::clone(expr)
        .transform_down(|e| {
            if let Some((path, output)) = pushable_access(&e) {
                let slot = trie.add(&path);
                let k = index_of(outputs, (slot, output));
                let col: Arc<dyn PhysicalExpr> = Arc::new(Column::new(
                    &format!("{EXTRACTED_PREFIX}{k}"),
                    extracted_index(k),
                ));
                return Ok(Transformed::new(col, true, TreeNodeRecursion::Jump));
            }
            if let Some(c) = e.downcast_ref::<Column>()
                && c.index() == 0
            {
                let col: Arc<dyn PhysicalExpr> = Arc::new(Column::new(c.name(), doc_index(0)));
                return Ok(Transformed::yes(col));
            }
            Ok(Transformed::no(e))
        })
        .map(|t| t.data)
}

/// The position of `item` in `items`, appended first when absent.
fn index_of<T: PartialEq>(items: &mut Vec<T>, item: T) -> usize {
    match items.iter().position(|i| *i == item) {
        Some(at) => at,
        None => {
            items.push(item);
            items.len() - 1
        }
    }
}

fn references_column(expr: &Arc<dyn PhysicalExpr>, index: usize, skip_extracted: bool) -> bool {
    expr.exists(|e| {
        Ok(e.downcast_ref::<Column>().is_some_and(|c| {
            c.index() == index && !(skip_extracted && c.name().starts_with(EXTRACTED_PREFIX))
        }))
    })
    .unwrap_or(true)
}

/// Moves references to partition columns (table columns 1..) to their decoded position.
fn remap_partition_columns(
    expr: Arc<dyn PhysicalExpr>,
    partition_index: &dyn Fn(usize) -> usize,
) -> Result<Arc<dyn PhysicalExpr>> {
    expr.transform_down(|e| {
        if let Some(c) = e.downcast_ref::<Column>()
            && c.index() >= 1
            && !c.name().starts_with(EXTRACTED_PREFIX)
        {
            let col: Arc<dyn PhysicalExpr> =
                Arc::new(Column::new(c.name(), partition_index(c.index())));
            return Ok(Transformed::yes(col));
        }
        Ok(Transformed::no(e))
    })
    .map(|t| t.data)
}
