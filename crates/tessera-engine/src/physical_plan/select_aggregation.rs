//! Aggregation and group-by through S3 Select ("PushdownDB: Accelerating a DBMS using
//! S3 Computation", ICDE 2020, §III and §VI): the store aggregates each object of an
//! NDJSON scan and returns one record per group instead of the documents.
//!
//! [`SelectAggregationExec`] stands in place of a partial aggregation over such a scan
//! and emits what it would: rows of group keys and aggregate states, which the final
//! aggregation merges. For each object of its partition it first sends the request of
//! [`PushedAggregation`] (without groups: one; with groups: one per group, PushdownDB's
//! S3-side group-by), then runs the partial aggregation itself, whose scan skips the
//! objects the store aggregated, or asks only for the documents of the other groups
//! (PushdownDB's hybrid group-by). The groups are the largest of a sample taken once
//! for all partitions: the first documents of the scan's first object.
//!
//! Nothing is counted twice or lost: an object whose requests did not all succeed
//! (exactly, see [`tessera_pushdown::select_aggregate`]) is read by the scan as usual,
//! and when the scan reads an object whole after all (its request for the rest
//! failed), [`AggregatedObjects`] tells this plan to drop the store's aggregates of it,
//! which it emits only once the scan has ended.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, SchemaRef};
use bytes::Bytes;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Result, ScalarValue};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, collect};
use futures::{StreamExt, TryStreamExt};
use serde_json::Value;
use tessera_blob::s3::S3Client;
use tessera_blob::select::InputCompression;
use tessera_pushdown::cost::SELECT_BYTES_PER_S;
use tessera_pushdown::select_aggregate::{GROUPS_MAX, SelectAggregate};
use tessera_pushdown::select_sql::{Condition, KeyValue, Scalar, only_strings_equal};
use tokio::sync::OnceCell;

use super::subtree_metric_sum;
use crate::datasource::ndjson::aggregated::{AggregatedObjects, Rest};
use crate::datasource::ndjson::read::Codec;
use crate::datasource::select::{SelectMetrics, ask, json_lines};

/// The least share of the sampled rows a group must hold to be aggregated by the
/// store: each group costs the store a scan of the object, worth it for large groups
/// only (PushdownDB's hybrid group-by pushes the populous groups).
pub const GROUP_SHARE_MIN: f64 = 0.05;

/// Integers a double holds exactly: a sum of integers the store adds as doubles is
/// exact while every partial sum stays below.
const EXACT_INTEGER_MAX: f64 = 9_007_199_254_740_992.0;

/// How one state column of the partial aggregation comes from the store's aggregates
/// (indexes of the request's fields).
#[derive(Debug, Clone)]
pub enum State {
    /// A count (`Int64`).
    Count {
        /// The field counted.
        count: usize,
    },
    /// A sum of `data_type` (`Float64`, or `Int64` from the integer extremes `bounds`
    /// when every partial sum is exact as a double); NULL when `count` is 0.
    Sum {
        /// The store's sum.
        sum: usize,
        /// The values summed.
        count: usize,
        /// The least and greatest integer summed (`Int64` sums).
        bounds: Option<(usize, usize)>,
        /// The state's type.
        data_type: DataType,
    },
    /// A least or greatest value of `data_type` (NULL without values).
    Extreme {
        /// The store's value.
        value: usize,
        /// The state's type.
        data_type: DataType,
    },
}

impl State {
    /// The state's type.
    pub fn data_type(&self) -> DataType {
        match self {
            State::Count { .. } => DataType::Int64,
            State::Sum { data_type, .. } | State::Extreme { data_type, .. } => data_type.clone(),
        }
    }

    /// The state's value from the fields of an answer; `None` when it cannot be exact.
    fn value(&self, fields: &[Value]) -> Option<ScalarValue> {
        let integer = |i: usize| fields.get(i)?.as_i64();
        Some(match self {
            State::Count { count } => ScalarValue::Int64(Some(integer(*count)?)),
            State::Sum {
                sum,
                count,
                bounds,
                data_type,
            } => {
                let total = fields.get(*sum)?.as_f64()?;
                let summed = integer(*count)?;
                match (data_type, bounds) {
                    (_, _) if summed == 0 => ScalarValue::try_from(data_type).ok()?,
                    (DataType::Float64, None) => ScalarValue::Float64(Some(total)),
                    (DataType::Int64, Some((least, greatest))) => {
                        let magnitude = integer(*least)?
                            .unsigned_abs()
                            .max(integer(*greatest)?.unsigned_abs());
                        let bound = magnitude as f64 * summed as f64;
                        if bound >= EXACT_INTEGER_MAX {
                            return None;
                        }
                        ScalarValue::Int64(Some(total as i64))
                    }
                    _ => return None,
                }
            }
            State::Extreme { value, data_type } => match (fields.get(*value)?, data_type) {
                (Value::Null, _) => ScalarValue::try_from(data_type).ok()?,
                (v, DataType::Int64) => ScalarValue::Int64(Some(v.as_i64()?)),
                (v, DataType::Float64) => ScalarValue::Float64(Some(v.as_f64()?)),
                _ => return None,
            },
        })
    }
}

/// What the link and the scan are like, for whether groups are worth the store's scans.
#[derive(Debug, Clone, Copy)]
pub struct GroupCosts {
    /// The bytes of the scan's objects.
    pub scan_bytes: u64,
    /// The connections reading them at once (the scan's partitions).
    pub connections: usize,
    /// One connection's bandwidth (`tessera.link_mib`), bytes/s.
    pub link_bytes_per_s: f64,
}

impl GroupCosts {
    /// Whether the store aggregating `groups` groups that hold `share` of the rows saves
    /// more link time than it costs store time. MinIO has no `CASE`, so each group is a
    /// scan of every object more (at the store's rate, [`SELECT_BYTES_PER_S`]); what it
    /// saves is the share of the documents the store would have returned, which is
    /// `returned_per_scanned` of the bytes it scans, over the link's connections.
    pub fn worth(&self, groups: usize, share: f64, returned_per_scanned: f64) -> bool {
        let bytes = self.scan_bytes as f64;
        let store_s = groups as f64 * bytes / SELECT_BYTES_PER_S;
        let link_bytes_per_s = self.link_bytes_per_s * self.connections.max(1) as f64;
        let link_s = share * returned_per_scanned * bytes / link_bytes_per_s;
        link_s > store_s
    }
}

/// The group keys' values of the largest groups of a sample, taken once.
#[derive(Debug)]
pub struct GroupSample {
    /// The partial aggregation's input over the sample.
    pub sample: Arc<dyn ExecutionPlan>,
    /// The group keys over its rows.
    pub keys: Vec<Arc<dyn PhysicalExpr>>,
    costs: GroupCosts,
    groups: OnceCell<Vec<Vec<KeyValue>>>,
}

impl GroupSample {
    /// The groups of `keys` (over `sample`'s rows) that `sample` finds largest, pushed
    /// when `costs` say they are worth it.
    pub fn new(
        sample: Arc<dyn ExecutionPlan>,
        keys: Vec<Arc<dyn PhysicalExpr>>,
        costs: GroupCosts,
    ) -> Self {
        Self {
            sample,
            keys,
            costs,
            groups: OnceCell::new(),
        }
    }

    /// The groups the store aggregates: at most [`GROUPS_MAX`], each holding at least
    /// [`GROUP_SHARE_MIN`] of the sampled rows, none with a NULL key or a text a number
    /// could have (the store compares a string with strings only); none when they are
    /// not worth the store's scans ([`GroupCosts::worth`], from the sample's answer).
    async fn groups(&self, context: Arc<TaskContext>) -> Result<&[Vec<KeyValue>]> {
        let groups = self
            .groups
            .get_or_try_init(|| async {
                let batches = collect(Arc::clone(&self.sample), context).await?;
                let mut sizes: HashMap<Vec<KeyValue>, usize> = HashMap::new();
                let mut rows = 0usize;
                for batch in &batches {
                    rows += batch.num_rows();
                    let columns = self
                        .keys
                        .iter()
                        .map(|k| k.evaluate(batch)?.into_array(batch.num_rows()))
                        .collect::<Result<Vec<ArrayRef>>>()?;
                    for row in 0..batch.num_rows() {
                        if let Some(group) = key_values(&columns, row)? {
                            *sizes.entry(group).or_default() += 1;
                        }
                    }
                }
                let (groups, share) = largest(sizes, rows);
                let scanned = subtree_metric_sum(&self.sample, "select_store_bytes");
                let returned = subtree_metric_sum(&self.sample, "select_returned_bytes");
                let worth = scanned > 0
                    && self
                        .costs
                        .worth(groups.len(), share, returned as f64 / scanned as f64);
                Ok::<_, datafusion::error::DataFusionError>(match worth {
                    true => groups,
                    false => Vec::new(),
                })
            })
            .await?;
        Ok(groups)
    }
}

/// The key values of `row`, when every key has one the store can compare.
fn key_values(columns: &[ArrayRef], row: usize) -> Result<Option<Vec<KeyValue>>> {
    let mut group = Vec::with_capacity(columns.len());
    for column in columns {
        let value = match ScalarValue::try_from_array(column, row)? {
            ScalarValue::Int64(Some(v)) => KeyValue::Integer(v),
            ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
                if only_strings_equal(&s) =>
            {
                KeyValue::Text(s)
            }
            _ => return Ok(None),
        };
        group.push(value);
    }
    Ok(Some(group))
}

/// The largest groups of `sizes` (of `rows` rows) that qualify, and the share of the
/// rows they hold.
fn largest(sizes: HashMap<Vec<KeyValue>, usize>, rows: usize) -> (Vec<Vec<KeyValue>>, f64) {
    let mut groups: Vec<(Vec<KeyValue>, usize)> = sizes.into_iter().collect();
    groups.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let kept: Vec<(Vec<KeyValue>, usize)> = groups
        .into_iter()
        .take(GROUPS_MAX)
        .filter(|(_, size)| *size as f64 >= GROUP_SHARE_MIN * rows as f64)
        .collect();
    let held: usize = kept.iter().map(|(_, size)| size).sum();
    let share = held as f64 / rows.max(1) as f64;
    (kept.into_iter().map(|(group, _)| group).collect(), share)
}

/// What the store computes of a partial aggregation, and how its answers become the
/// aggregation's rows.
#[derive(Debug)]
pub struct PushedAggregation {
    /// The request over each object (exact), before any group's keys.
    pub request: SelectAggregate,
    /// The group keys as the store computes them, with their columns' types.
    pub keys: Vec<(Scalar, DataType)>,
    /// The state columns, in the partial aggregation's order.
    pub states: Vec<State>,
    /// Where the groups come from; `None` without GROUP BY.
    pub sample: Option<GroupSample>,
    /// The client of the scan's bucket.
    pub client: S3Client,
    /// Shared with the scan.
    pub objects: Arc<AggregatedObjects>,
}

impl PushedAggregation {
    /// The rows of object `key` the store aggregated (a row per group of `groups`, or
    /// one without GROUP BY), or `None` when one of its requests failed or could not
    /// be exact.
    async fn object_rows(
        &self,
        key: &str,
        compression: InputCompression,
        groups: &[Vec<KeyValue>],
        schema: &SchemaRef,
        metrics: &SelectMetrics,
    ) -> Result<Option<RecordBatch>> {
        let scalars: Vec<Scalar> = self.keys.iter().map(|(s, _)| s.clone()).collect();
        let requests: Vec<SelectAggregate> = match groups {
            [] => vec![self.request.clone()],
            groups => groups
                .iter()
                .map(|g| self.request.of_group(&scalars, g))
                .collect(),
        };
        assert!(requests.len() <= GROUPS_MAX, "requests per object bounded");
        let answers = futures::future::join_all(requests.iter().map(|r| async move {
            ask(
                &self.client,
                metrics,
                key,
                &json_lines(&r.sql(), compression),
            )
            .await
        }))
        .await;
        let mut rows: Vec<Vec<ScalarValue>> = Vec::with_capacity(answers.len());
        for (i, answer) in answers.into_iter().enumerate() {
            let Some(fields) = answer
                .as_ref()
                .and_then(|a| answer_fields(a, self.request.aggregates.len()))
            else {
                return Ok(None);
            };
            let mut row = Vec::with_capacity(schema.fields().len());
            for ((_, data_type), value) in self.keys.iter().zip(groups.get(i).into_iter().flatten())
            {
                row.push(key_scalar(value, data_type)?);
            }
            for state in &self.states {
                let Some(value) = state.value(&fields) else {
                    return Ok(None);
                };
                row.push(value);
            }
            rows.push(row);
        }
        rows_batch(schema, rows).map(Some)
    }
}

/// The fields `c0` .. `c{count-1}` of an answer of one record.
fn answer_fields(records: &Bytes, count: usize) -> Option<Vec<Value>> {
    let mut lines = records.split(|b| *b == b'\n').filter(|l| !l.is_empty());
    let record: serde_json::Map<String, Value> = serde_json::from_slice(lines.next()?).ok()?;
    if lines.next().is_some() {
        return None;
    }
    (0..count)
        .map(|i| record.get(&format!("c{i}")).cloned())
        .collect()
}

fn key_scalar(value: &KeyValue, data_type: &DataType) -> Result<ScalarValue> {
    let scalar = match value {
        KeyValue::Text(s) => ScalarValue::Utf8(Some(s.clone())),
        KeyValue::Integer(i) => ScalarValue::Int64(Some(*i)),
    };
    scalar.cast_to(data_type)
}

/// `rows` (a value per column of `schema`) as a batch.
fn rows_batch(schema: &SchemaRef, rows: Vec<Vec<ScalarValue>>) -> Result<RecordBatch> {
    let columns = (0..schema.fields().len())
        .map(|c| {
            let values = rows.iter().map(|row| row[c].clone());
            let array = ScalarValue::iter_to_array(values)?;
            Ok(cast(&array, schema.field(c).data_type())?)
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

/// A partial aggregation over an NDJSON scan asking S3 Select, with the store
/// aggregating what it can of each object; see the module documentation.
#[derive(Debug)]
pub struct SelectAggregationExec {
    /// The partial aggregation, its scan told of `pushed.objects`.
    input: Arc<dyn ExecutionPlan>,
    pushed: Arc<PushedAggregation>,
    metrics: ExecutionPlanMetricsSet,
}

impl SelectAggregationExec {
    /// `input` (the partial aggregation) with the store aggregating as `pushed` says.
    pub fn new(input: Arc<dyn ExecutionPlan>, pushed: Arc<PushedAggregation>) -> Self {
        Self {
            input,
            pushed,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for SelectAggregationExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let groups = match self.pushed.sample {
            Some(_) => ", groups=sampled",
            None => "",
        };
        write!(
            f,
            "SelectAggregationExec: s3_select=[{}]{groups}",
            self.pushed.request.sql()
        )
    }
}

/// The objects of `partition` of the scan at the bottom of `plan`, by key.
fn partition_objects(plan: &Arc<dyn ExecutionPlan>, partition: usize) -> Vec<String> {
    let scan = plan
        .downcast_ref::<DataSourceExec>()
        .and_then(|d| d.data_source().downcast_ref::<FileScanConfig>());
    if let Some(config) = scan {
        let Some(group) = config.file_groups.get(partition) else {
            return Vec::new();
        };
        return group
            .files()
            .iter()
            .map(|f| f.object_meta.location.to_string())
            .collect();
    }
    match plan.children().first() {
        Some(input) => partition_objects(input, partition),
        None => Vec::new(),
    }
}

/// Counters of an aggregation's requests, beside the scan's.
struct AggregationMetrics {
    select: SelectMetrics,
    /// Objects the store aggregated (and the scan did not read whole after all).
    aggregated_objects: Count,
}

impl ExecutionPlan for SelectAggregationExec {
    super::over_one_input!("SelectAggregationExec");

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        let keys = self.pushed.sample.iter().flat_map(|s| &s.keys);
        for key in keys {
            if f(key)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::only_child(children, self.name())?;
        Ok(Arc::new(Self::new(input, Arc::clone(&self.pushed))))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (input, pushed, schema) = (
            Arc::clone(&self.input),
            Arc::clone(&self.pushed),
            self.schema(),
        );
        let counter =
            |name: &'static str| MetricBuilder::new(&self.metrics).counter(name, partition);
        let metrics = AggregationMetrics {
            select: SelectMetrics::new(&self.metrics, partition, counter("bytes_scanned")),
            aggregated_objects: counter("select_aggregated_objects"),
        };
        let stream = futures::stream::once(async move {
            let groups = match &pushed.sample {
                Some(sample) => sample.groups(Arc::clone(&context)).await?.to_vec(),
                None => Vec::new(),
            };
            let objects = partition_objects(&input, partition);
            let mut stored = Vec::new();
            if pushed.sample.is_none() || !groups.is_empty() {
                stored =
                    aggregate_objects(&pushed, &objects, &groups, &schema, &metrics.select).await?;
            }
            let scanned = input.execute(partition, context)?;
            let after = futures::stream::once(async move {
                let kept: Vec<RecordBatch> = stored
                    .into_iter()
                    .filter(|(key, _)| pushed.objects.kept(key))
                    .map(|(_, batch)| batch)
                    .collect();
                metrics.aggregated_objects.add(kept.len());
                Ok::<_, datafusion::error::DataFusionError>(futures::stream::iter(
                    kept.into_iter().map(Ok),
                ))
            })
            .try_flatten();
            Ok::<_, datafusion::error::DataFusionError>(scanned.chain(after))
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            stream,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// The store's rows of each of `objects` it could aggregate, each object marked
/// aggregated (with the rest its scan asks for) before the scan opens it.
async fn aggregate_objects(
    pushed: &PushedAggregation,
    objects: &[String],
    groups: &[Vec<KeyValue>],
    schema: &SchemaRef,
    metrics: &SelectMetrics,
) -> Result<Vec<(String, RecordBatch)>> {
    let rest = match groups {
        [] => Rest::Nothing,
        groups => Rest::Where(Condition::NotInGroups {
            keys: pushed.keys.iter().map(|(s, _)| s.clone()).collect(),
            groups: groups.to_vec(),
        }),
    };
    let mut stored = Vec::new();
    for key in objects {
        let compression = match Codec::from_name(key) {
            Codec::None => InputCompression::None,
            Codec::Gzip => InputCompression::Gzip,
            Codec::Zstd => continue,
        };
        if let Some(batch) = pushed
            .object_rows(key, compression, groups, schema, metrics)
            .await?
        {
            pushed.objects.aggregated(key, rest.clone());
            stored.push((key.clone(), batch));
        }
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_groups_that_hold_a_share_of_the_sample_are_pushed() {
        let text = |s: &str| vec![KeyValue::Text(s.into())];
        let sizes: HashMap<Vec<KeyValue>, usize> =
            [(text("A"), 60), (text("B"), 36), (text("C"), 4)]
                .into_iter()
                .collect();
        assert_eq!(largest(sizes, 100), (vec![text("A"), text("B")], 0.96));
        let uniform: HashMap<Vec<KeyValue>, usize> =
            (0..32).map(|i| (vec![KeyValue::Integer(i)], 3)).collect();
        assert!(largest(uniform, 96).0.is_empty(), "32 even groups: 3% each");
        let many: HashMap<Vec<KeyValue>, usize> =
            (0..12).map(|i| (vec![KeyValue::Integer(i)], 10)).collect();
        assert_eq!(largest(many, 120).0.len(), GROUPS_MAX);
    }

    #[test]
    fn groups_are_pushed_where_the_link_is_slow_enough_to_pay_for_the_scans() {
        // 100 MB in 8 objects, a tenth of it returned without the groups, 4 groups
        // holding nine tenths of the rows, 2 connections.
        let at = |mib: f64| GroupCosts {
            scan_bytes: 100_000_000,
            connections: 2,
            link_bytes_per_s: mib * 1_048_576.0,
        };
        assert!(
            !at(10.0).worth(4, 0.9, 0.1),
            "4 scans of 1 s against 0.43 s"
        );
        assert!(at(0.1).worth(4, 0.9, 0.1), "4 scans of 1 s against 43 s");
        assert!(
            !at(0.1).worth(4, 0.9, 0.0),
            "nothing returned, nothing saved"
        );
    }

    #[test]
    fn an_integer_sum_is_taken_only_while_doubles_hold_it_exactly() {
        let sum = State::Sum {
            sum: 0,
            count: 1,
            bounds: Some((2, 3)),
            data_type: DataType::Int64,
        };
        let fields = |total: f64, count: i64, least: i64, greatest: i64| {
            vec![total.into(), count.into(), least.into(), greatest.into()]
        };
        assert_eq!(
            sum.value(&fields(15.0, 3, 1, 9)),
            Some(ScalarValue::Int64(Some(15)))
        );
        assert_eq!(
            sum.value(&fields(0.0, 0, 0, 0)),
            Some(ScalarValue::Int64(None))
        );
        let big = 1i64 << 52;
        assert_eq!(sum.value(&fields(3.0 * big as f64, 3, -big, big)), None);
        let float = State::Sum {
            sum: 0,
            count: 1,
            bounds: None,
            data_type: DataType::Float64,
        };
        assert_eq!(
            float.value(&fields(1.5, 2, 0, 0)),
            Some(ScalarValue::Float64(Some(1.5)))
        );
    }

    #[test]
    fn an_answer_is_one_record_with_every_field() {
        let answer = Bytes::from_static(b"{\"c0\":3,\"c1\":null}\n");
        assert_eq!(
            answer_fields(&answer, 2),
            Some(vec![Value::from(3), Value::Null])
        );
        assert_eq!(answer_fields(&answer, 3), None);
        let two = Bytes::from_static(b"{\"c0\":3}\n{\"c0\":4}\n");
        assert_eq!(answer_fields(&two, 1), None);
    }
}
