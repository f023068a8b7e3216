//! An NDJSON scan's objects read through S3 Select (`SET tessera.pushdown = 's3select'`):
//! the store parses each object, keeps the documents that may pass the scan's filters
//! and returns only the paths the scan extracts, as the fields `c0`, `c1`, ... of JSON
//! records; the scan decodes those records with its own extraction, filters and
//! projection (over the fields instead of the paths), so its rows are the rows a read
//! of the object gives.
//!
//! An object is read by the scan itself instead when S3 Select cannot answer it
//! exactly: a codec the store does not read (zstd), an answer that failed (a document
//! the store refuses, a cut or corrupt stream) even after asking again with only the
//! conditions that cannot fail on other types, or an answer holding a value whose
//! rendering may have changed what the scan reads of it ([`rendering`]). A malformed
//! line is then reported, or skipped, exactly as without pushdown.

use std::fmt;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::DataType;
use bytes::Bytes;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, ScalarValue};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use tessera_blob::s3::S3Client;
use tessera_blob::select::InputCompression;
use tessera_pushdown::rendering::{self, Accept};
use tessera_pushdown::select_sql::{
    Condition, FIELDS_MAX, SelectScan, is_pushable_path, only_strings_equal,
};

use super::aggregated::{AggregatedObjects, Rest};
use super::decode::BatchDecoder;
use super::lines::Line;
use super::read::Codec;
use crate::access::extraction::ExtractionPlan;
use crate::access::pushable::cast_parts;
use crate::datasource::select::{SelectMetrics, ask, json_lines};
use crate::json::Output;
use crate::json::path::{PathElem, PathTrie, display_path};
use crate::options::Validation;
use crate::physical_plan::build_keys::BuildKeys;
use crate::physical_plan::top_k_threshold::TopKThreshold;

/// What a scan asks S3 Select for, derived from its final extraction.
#[derive(Debug)]
pub struct SelectPlan {
    /// The request.
    pub scan: SelectScan,
    /// The request again with only the conditions no document makes fail, if it has
    /// others.
    robust: Option<SelectScan>,
    /// How each field's values are read (field `i` is the extraction's slot `i`).
    accepts: Vec<Accept>,
    /// The scan's extraction over the returned fields instead of the paths.
    answers: Arc<ExtractionPlan>,
}

impl SelectPlan {
    /// The request for `extraction` with `filter` (conditions from filters above the
    /// scan) besides the extraction's own document predicates; `None` when the
    /// extraction needs what a store does not return as the document has it: the
    /// whole document, a value's JSON text, `json_each`'s rows, a path S3 Select cannot
    /// name. The projection's columns `null_tested` are only tested for NULL above the
    /// scan.
    pub fn new(
        extraction: &ExtractionPlan,
        filter: Option<Condition>,
        null_tested: &[usize],
    ) -> Option<Self> {
        let pushable = !extraction.raw
            && extraction.elements.is_empty()
            && extraction.casts.is_empty()
            && extraction.trie.len() <= FIELDS_MAX
            && extraction.outputs.iter().all(|(_, o)| *o != Output::Json)
            && (0..extraction.trie.len()).all(|slot| is_pushable_path(extraction.trie.path(slot)));
        if !pushable {
            return None;
        }
        let fields: Vec<Vec<PathElem>> = (0..extraction.trie.len())
            .map(|slot| extraction.trie.path(slot).to_vec())
            .collect();
        let mut conditions: Vec<Condition> = extraction
            .predicates
            .iter()
            .filter_map(|(slot, output, accepted)| {
                document_condition(extraction.trie.path(*slot), *output, accepted)
            })
            .collect();
        conditions.extend(filter);
        let accepts = accepts(extraction, null_tested);
        // What a read of integers takes must have been an integer in the document.
        conditions.extend(
            accepts
                .iter()
                .enumerate()
                .filter(|(_, accept)| **accept == Accept::Integers)
                .map(|(slot, _)| Condition::IntegerGuard(fields[slot].clone())),
        );
        let condition = match conditions.len() {
            0 => None,
            1 => conditions.pop(),
            _ => Some(Condition::And(conditions)),
        };
        let scan = SelectScan { fields, condition };
        let mut answers = extraction.clone();
        answers.trie = Arc::new(field_trie(extraction.trie.len()));
        Some(Self {
            robust: scan.robust(),
            scan,
            accepts,
            answers: Arc::new(answers),
        })
    }
}

impl fmt::Display for SelectPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3_select=[{}]", self.scan.sql())
    }
}

/// `path ∈ accepted` as a store condition, when its accepted texts can only be the
/// texts of strings (`->>` also gives numbers and booleans as text). It holds for
/// exactly the documents the predicate keeps.
pub(crate) fn document_condition(
    path: &[PathElem],
    output: Output,
    accepted: &std::collections::BTreeSet<Vec<u8>>,
) -> Option<Condition> {
    let values = accepted
        .iter()
        .map(|v| String::from_utf8(v.clone()).ok())
        .collect::<Option<Vec<String>>>()?;
    let strings_only = output == Output::Str || values.iter().all(|v| only_strings_equal(v));
    (strings_only && !values.is_empty()).then(|| Condition::StringIn {
        path: path.to_vec(),
        values,
    })
}

/// A trie of the paths `c0` .. `c{n-1}`, whose slots are those of the extraction's
/// paths (slots number paths in the order they were added).
fn field_trie(n: usize) -> PathTrie {
    let mut trie = PathTrie::new();
    for slot in 0..n {
        let added = trie.add(&[PathElem::Key(format!("c{slot}"))]);
        assert_eq!(added, slot, "fields keep the slots' order");
    }
    trie
}

/// How each slot's returned values are read: the strictest of its outputs' reads.
fn accepts(extraction: &ExtractionPlan, null_tested: &[usize]) -> Vec<Accept> {
    let mut accepts = vec![Accept::Any; extraction.trie.len()];
    let mut tighten = |slot: usize, accept: Accept| accepts[slot] = accepts[slot].max(accept);
    for (k, (slot, output)) in extraction.outputs.iter().enumerate() {
        let accept = match output {
            Output::Text => text_reads(extraction, k, null_tested),
            Output::Int => Accept::Integers,
            Output::Json => Accept::Text,
            Output::Str | Output::Float | Output::Bool | Output::ArrayLength => Accept::Any,
        };
        tighten(*slot, accept);
    }
    for (slot, output, _) in &extraction.predicates {
        if *output == Output::Text {
            tighten(*slot, Accept::Text);
        }
    }
    accepts
}

/// How the text of output `k` is read: as doubles or integers when every expression
/// reading it casts it to one (or hands it on to be tested for NULL only), else as text.
fn text_reads(extraction: &ExtractionPlan, k: usize, null_tested: &[usize]) -> Accept {
    let column = extraction.layout.output(k);
    let exprs = extraction
        .projection
        .iter()
        .enumerate()
        .filter(|(i, _)| !null_tested.contains(i))
        .map(|(_, p)| &p.expr)
        .chain(&extraction.row_filters);
    exprs
        .map(|expr| cast_reads(expr, column))
        .max()
        .unwrap_or(Accept::Any)
}

/// The strictest read of `column` inside `expr`: under a cast to a double, to an
/// integer, or anything else (text).
fn cast_reads(expr: &Arc<dyn PhysicalExpr>, column: usize) -> Accept {
    let is_column = |e: &Arc<dyn PhysicalExpr>| {
        e.downcast_ref::<Column>()
            .is_some_and(|c| c.index() == column)
    };
    if let Some((operand, to, _)) = cast_parts(expr)
        && is_column(operand)
    {
        return match to {
            DataType::Float64 | DataType::Float32 => Accept::Any,
            DataType::Int64 | DataType::Int32 => Accept::Integers,
            _ => Accept::Text,
        };
    }
    if is_column(expr) {
        return Accept::Text;
    }
    let mut strictest = Accept::Any;
    let _ = expr.apply_children(|child| {
        strictest = strictest.max(cast_reads(child, column));
        Ok(TreeNodeRecursion::Continue)
    });
    strictest
}

/// The probe side of a Bloom join: S3 Select returns the documents whose integer at
/// `path` may be one of the build side's keys (see [`BuildKeys`]).
#[derive(Debug, Clone)]
pub struct SemiJoin {
    /// Where the probe side's key is in each document.
    pub path: Vec<PathElem>,
    /// The build side's keys, once it has ended.
    pub keys: Arc<BuildKeys>,
}

impl fmt::Display for SemiJoin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bloom_join={}", display_path(&self.path))
    }
}

/// The input of a top-K sort by a number: S3 Select returns the documents whose number
/// at `path` is at or beyond the sort's sampled threshold (see [`TopKThreshold`]).
#[derive(Debug, Clone)]
pub struct TopKBound {
    /// Where the sort's first key is in each document.
    pub path: Vec<PathElem>,
    /// The threshold, once sampled.
    pub threshold: Arc<TopKThreshold>,
}

impl fmt::Display for TopKBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "top_k_threshold={}", display_path(&self.path))
    }
}

/// Reads objects of one scan partition through S3 Select.
#[derive(Debug, Clone)]
pub struct SelectRead {
    /// The bucket's client.
    pub client: S3Client,
    /// What to ask.
    pub plan: Arc<SelectPlan>,
    /// The Bloom join whose probe side the scan is, if any.
    pub semi_join: Option<SemiJoin>,
    /// The top-K sort whose input the scan is, if any.
    pub top_k: Option<TopKBound>,
    /// The documents each request returns at most: a top-K threshold's sample.
    pub sample_rows: Option<u64>,
    /// The objects an aggregation above the scan had the store aggregate, if any.
    pub aggregated: Option<Arc<AggregatedObjects>>,
    /// Where to count.
    pub metrics: SelectMetrics,
}

impl SelectRead {
    /// The batches of the object `key` (all of them: an answer is complete or not
    /// used), or `None` when the scan must read the object itself. An object whose
    /// documents an aggregation above had the store aggregate gives no batches, or only
    /// the documents of the groups it left; reading it here instead is reported back,
    /// so that the store's aggregates of it are dropped.
    pub async fn batches(
        &self,
        key: &str,
        codec: Codec,
        partition_values: &[ScalarValue],
        batch_size: usize,
    ) -> Result<Option<Vec<RecordBatch>>> {
        let rest = match self.aggregated.as_ref().and_then(|a| a.rest_of(key)) {
            Some(Rest::Nothing) => return Ok(Some(Vec::new())),
            Some(Rest::Where(condition)) => Some(condition),
            None => None,
        };
        let answered = self
            .answered(key, codec, rest, partition_values, batch_size)
            .await?;
        if answered.is_none() {
            self.metrics.select_fallbacks.add(1);
            if let Some(aggregated) = &self.aggregated {
                aggregated.read_whole(key);
            }
        }
        Ok(answered)
    }

    /// [`Self::batches`] of the documents `rest` keeps, if given.
    async fn answered(
        &self,
        key: &str,
        codec: Codec,
        rest: Option<Condition>,
        partition_values: &[ScalarValue],
        batch_size: usize,
    ) -> Result<Option<Vec<RecordBatch>>> {
        let compression = match codec {
            Codec::None => InputCompression::None,
            Codec::Gzip => InputCompression::Gzip,
            Codec::Zstd => return Ok(None),
        };
        let (first, robust) = self.requests(rest).await;
        let attempts = std::iter::once(&first).chain(&robust);
        for (attempt, scan) in attempts.enumerate() {
            if attempt > 0 {
                self.metrics.select_retries.add(1);
            }
            let Some(records) = self.answer(key, scan, compression).await else {
                continue;
            };
            if rendering::check(&records, &self.plan.accepts).is_err() {
                // Asking again changes no value's rendering.
                break;
            }
            if let Some(batches) = self.decode(&records, partition_values, batch_size)? {
                return Ok(Some(batches));
            }
        }
        Ok(None)
    }

    /// The request to send first, and the one to send again if it fails: the plan's,
    /// with the build side's Bloom filter when the scan is a Bloom join's probe side and
    /// the build side made one (it is waited for), and with the sampled threshold when
    /// it is a top-K sort's input and the sample set one, and with `rest` (the groups
    /// an aggregation above left to the scan), which is never left out.
    async fn requests(&self, rest: Option<Condition>) -> (SelectScan, Option<SelectScan>) {
        let mut extra: Vec<Condition> = rest.into_iter().collect();
        if let Some(semi) = &self.semi_join
            && let Some(filter) = semi.keys.filter().await
        {
            self.metrics.select_bloom_requests.add(1);
            let path = semi.path.clone();
            extra.push(Condition::Bloom { path, filter });
        }
        if let Some(bound) = &self.top_k
            && let Some((ordering, value)) = bound.threshold.condition()
        {
            self.metrics.select_top_k_requests.add(1);
            let path = bound.path.clone();
            extra.push(Condition::Number {
                path,
                ordering,
                value,
            });
        }
        if extra.is_empty() {
            return (self.plan.scan.clone(), self.plan.robust.clone());
        }
        let scan = extra
            .into_iter()
            .fold(self.plan.scan.clone(), |scan, c| scan.with_condition(c));
        // A filter's or threshold's test fails on a value of another type; the robust
        // request leaves it out.
        let robust = scan.robust();
        (scan, robust)
    }

    /// The records of a complete answer, or `None` when the request failed.
    async fn answer(
        &self,
        key: &str,
        scan: &SelectScan,
        compression: InputCompression,
    ) -> Option<Bytes> {
        let sql = match self.sample_rows {
            Some(rows) => scan.limited_sql(rows),
            None => scan.sql(),
        };
        ask(
            &self.client,
            &self.metrics,
            key,
            &json_lines(&sql, compression),
        )
        .await
    }

    /// The answer's records decoded as the scan decodes documents; `None` when a record
    /// is not what was asked for.
    fn decode(
        &self,
        records: &Bytes,
        partition_values: &[ScalarValue],
        batch_size: usize,
    ) -> Result<Option<Vec<RecordBatch>>> {
        let mut decoder = BatchDecoder::new(
            Arc::clone(&self.plan.answers),
            partition_values.to_vec(),
            batch_size,
            Validation::Structure,
        )?;
        let mut batches = Vec::new();
        let mut offset = 0u64;
        let lines = records.split(|b| *b == b'\n');
        for (index, bytes) in lines.enumerate() {
            let line = Line {
                bytes,
                chunk: None,
                offset,
                index: index as u64,
                utf8_checked: false,
            };
            offset += bytes.len() as u64 + 1;
            if decoder.decode(&line)?.is_err() {
                return Ok(None);
            }
            batches.extend(std::iter::from_fn(|| decoder.next_batch()));
        }
        decoder.flush()?;
        batches.extend(std::iter::from_fn(|| decoder.next_batch()));
        Ok(Some(batches))
    }
}
