//! The partial phase of an aggregation grouped on dictionary codes.
//!
//! DataFusion groups strings by hashing and comparing every row's bytes (and turns
//! dictionary arrays back into strings first). A Tessera scan can hand a low-cardinality
//! string path over as the codes and dictionary the file stores; this operator then
//! maps each dictionary once to group keys and every row by its code, so a row costs an
//! array lookup instead of a string hash (issue 5, item 3). It replaces a
//! `Partial` [`AggregateExec`](datafusion::physical_plan::aggregates::AggregateExec)
//! and outputs exactly its schema (group values as the original strings, then each
//! aggregate's state), so the `Final` aggregate above it is unchanged.
//!
//! Group keys other than codes are small integers (`hour(...)`, dates, flags), mapped
//! through a hash table of their values. The number of groups held is bounded: at
//! `max_groups` the partial states are emitted and grouping starts afresh, which a
//! partial aggregation may always do (the final phase merges them).

use std::fmt;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, DictionaryArray, ListArray, RecordBatch, StringArray,
    StringViewBuilder,
};
use arrow::buffer::OffsetBuffer;
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int32Type, Int64Type, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, HashMap, Result, ScalarValue};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
    apply_expression_roots,
};
use futures::{StreamExt, TryStreamExt};
use hashbrown::{DefaultHashBuilder, HashSet, HashTable};
use std::hash::BuildHasher;

use crate::access::extraction::dictionary_text;
use crate::datasource::tessera::scan::leaves::same_dictionary;

/// Most group keys one operator combines: their ids pack into one `u128`.
pub const MAX_KEYS: usize = 4;

/// Groups held before the partial states are emitted.
pub const MAX_GROUPS: usize = 1 << 16;

/// The id of a NULL key; values get ids from 1 on.
const NULL_ID: u32 = 0;

/// Integer keys below this are looked up by value in an array instead of hashed.
const SMALL_NUMBERS: usize = 1024;

/// With two keys whose ids are both below this, the group is looked up in a table of
/// `PAIR_IDS²` entries instead of hashed.
const PAIR_IDS: u32 = 256;

/// A `Partial` aggregation whose group keys are dictionary codes or small integers.
#[derive(Debug)]
pub struct CodeAggregateExec {
    input: Arc<dyn ExecutionPlan>,
    /// Group key expressions over the input, with their output names; each evaluates to
    /// [`dictionary_text`] or to an integer, boolean, date or time.
    keys: Vec<(Arc<dyn PhysicalExpr>, String)>,
    aggregates: Vec<Arc<AggregateFunctionExpr>>,
    /// Per aggregate, its `FILTER (WHERE ...)` over the input.
    filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    /// The replaced partial aggregate's output schema: keys, then aggregate states.
    schema: SchemaRef,
    max_groups: usize,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl CodeAggregateExec {
    /// Groups `input` on `keys` and computes the partial states of `aggregates`, with
    /// output `schema` (the partial aggregate's being replaced). Every aggregate must
    /// support grouped accumulation.
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        keys: Vec<(Arc<dyn PhysicalExpr>, String)>,
        aggregates: Vec<Arc<AggregateFunctionExpr>>,
        filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
        schema: SchemaRef,
        max_groups: usize,
    ) -> Result<Self> {
        assert!(
            !keys.is_empty() && keys.len() <= MAX_KEYS,
            "1..={MAX_KEYS} keys"
        );
        assert_eq!(
            aggregates.len(),
            filters.len(),
            "one filter slot per aggregate"
        );
        assert!(max_groups > 0, "room for a group");
        let states: usize = aggregates
            .iter()
            .map(|a| a.state_fields().map(|f| f.len()))
            .sum::<Result<usize>>()?;
        if schema.fields().len() != keys.len() + states {
            return Err(DataFusionError::Internal(format!(
                "schema of {} fields for {} keys and {states} states",
                schema.fields().len(),
                keys.len()
            )));
        }
        let input_schema = input.schema();
        let unsupported = |a: &&Arc<AggregateFunctionExpr>| {
            !a.groups_accumulator_supported() && !is_distinct_string_count(a, &input_schema)
        };
        if let Some(a) = aggregates.iter().find(unsupported) {
            return Err(DataFusionError::Internal(format!(
                "{} has no grouped accumulator",
                a.name()
            )));
        }
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            input.properties().partitioning.clone(),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Ok(Self {
            input,
            keys,
            aggregates,
            filters,
            schema,
            max_groups,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl CodeAggregateExec {
    /// The group key expressions over the input, with their output names.
    pub fn keys(&self) -> &[(Arc<dyn PhysicalExpr>, String)] {
        &self.keys
    }

    /// The aggregate functions whose partial states the operator computes.
    pub fn aggregates(&self) -> &[Arc<AggregateFunctionExpr>] {
        &self.aggregates
    }

    /// Per aggregate, its `FILTER (WHERE ...)` over the input.
    pub fn filters(&self) -> &[Option<Arc<dyn PhysicalExpr>>] {
        &self.filters
    }

    /// Groups held before the partial states are emitted.
    pub fn max_groups(&self) -> usize {
        self.max_groups
    }
}

impl DisplayAs for CodeAggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let keys: Vec<String> = self
            .keys
            .iter()
            .map(|(e, name)| format!("{e} as {name}"))
            .collect();
        let aggregates: Vec<&str> = self.aggregates.iter().map(|a| a.name()).collect();
        write!(
            f,
            "CodeAggregateExec: mode=Partial, gby=[{}], aggr=[{}]",
            keys.join(", "),
            aggregates.join(", ")
        )
    }
}

impl ExecutionPlan for CodeAggregateExec {
    fn name(&self) -> &str {
        "CodeAggregateExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        let arguments: Vec<Arc<dyn PhysicalExpr>> = self
            .aggregates
            .iter()
            .flat_map(|a| a.expressions())
            .collect();
        apply_expression_roots(
            self.keys
                .iter()
                .map(|(e, _)| e)
                .chain(&arguments)
                .chain(self.filters.iter().flatten()),
            f,
        )
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = super::only_child(children, self.name())?;
        Ok(Arc::new(Self::try_new(
            input,
            self.keys.clone(),
            self.aggregates.clone(),
            self.filters.clone(),
            Arc::clone(&self.schema),
            self.max_groups,
        )?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let mut grouping = Grouping {
            keys: self
                .keys
                .iter()
                .map(|(e, _)| (Arc::clone(e), KeyIds::default()))
                .collect(),
            groups: GroupIndex::default(),
            aggregates: self.aggregates.clone(),
            filters: self.filters.clone(),
            accumulators: Vec::new(),
            input_schema: self.input.schema(),
            schema: Arc::clone(&self.schema),
            max_groups: self.max_groups,
            dictionaries: MetricBuilder::new(&self.metrics).counter("dictionaries", partition),
        };
        grouping.reset()?;
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let stream =
            futures::stream::try_unfold((input, Some(grouping)), move |(mut input, grouping)| {
                let baseline = baseline.clone();
                async move {
                    let Some(mut grouping) = grouping else {
                        return Ok(None);
                    };
                    while let Some(batch) = input.next().await.transpose()? {
                        let timer = baseline.elapsed_compute().timer();
                        grouping.update(&batch)?;
                        timer.done();
                        if grouping.held() >= grouping.max_groups || grouping.distinct_full() {
                            let emitted = grouping.emit()?;
                            baseline.record_output(emitted.num_rows());
                            return Ok(Some((emitted, (input, Some(grouping)))));
                        }
                    }
                    let emitted = grouping.emit()?;
                    baseline.record_output(emitted.num_rows());
                    baseline.done();
                    Ok(Some((emitted, (input, None))))
                }
            })
            .try_filter(|batch| futures::future::ready(batch.num_rows() > 0));
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// The ids of one group key's values within one grouping.
#[derive(Default)]
struct KeyIds {
    /// Per id (from 1), the value; strings for codes, scalars for other keys.
    values: Vec<KeyValue>,
    texts: HashMap<String, u32>,
    /// Ids of numbers in `0..SMALL_NUMBERS` (hours, flags), by number; NULL_ID: none yet.
    small: Vec<u32>,
    /// Ids of other numbers.
    numbers: HashMap<i64, u32>,
    /// The last dictionary seen (kept alive so its address identifies it) and the id of
    /// each of its entries.
    dictionary: Option<(ArrayRef, Vec<u32>)>,
}

/// One distinct value of a group key.
enum KeyValue {
    Text(String),
    Scalar(ScalarValue),
}

impl KeyIds {
    /// The id of every row of `array`, appended to `ids`; `true` when a new dictionary
    /// was mapped.
    fn ids(&mut self, array: &ArrayRef, ids: &mut Vec<u32>) -> Result<bool> {
        ids.clear();
        if *array.data_type() == dictionary_text() {
            let dictionary = array.as_dictionary::<Int32Type>();
            let mapped = self.map_dictionary(dictionary.values())?;
            let codes = self
                .dictionary
                .as_ref()
                .map(|(_, c)| c.as_slice())
                .unwrap_or(&[]);
            // Straight over the key buffer (a null row's slot holds any key), then the
            // null rows.
            let keys = dictionary.keys();
            ids.extend(
                keys.values()
                    .iter()
                    .map(|&key| codes.get(key as usize).copied().unwrap_or(NULL_ID)),
            );
            if let Some(nulls) = keys.nulls().filter(|n| n.null_count() > 0) {
                for row in (0..ids.len()).filter(|&row| nulls.is_null(row)) {
                    ids[row] = NULL_ID;
                }
            }
            return Ok(mapped);
        }
        let numbers = cast(array, &DataType::Int64)?;
        let numbers = numbers.as_primitive::<Int64Type>();
        for row in 0..array.len() {
            if numbers.is_null(row) {
                ids.push(NULL_ID);
                continue;
            }
            let number = numbers.value(row);
            let small = usize::try_from(number).ok().filter(|&n| n < SMALL_NUMBERS);
            let known = match small {
                Some(n) => self.small.get(n).copied().filter(|&id| id != NULL_ID),
                None => self.numbers.get(&number).copied(),
            };
            ids.push(match known {
                Some(id) => id,
                None => {
                    let id = self.next_id();
                    match small {
                        Some(n) => {
                            if n >= self.small.len() {
                                self.small.resize(n + 1, NULL_ID);
                            }
                            self.small[n] = id;
                        }
                        None => {
                            self.numbers.insert(number, id);
                        }
                    }
                    self.values
                        .push(KeyValue::Scalar(ScalarValue::try_from_array(array, row)?));
                    id
                }
            });
        }
        Ok(false)
    }

    /// Maps the entries of `values` (a dictionary's strings) to ids, unless it is the
    /// dictionary mapped last; `true` when it was mapped now.
    fn map_dictionary(&mut self, values: &ArrayRef) -> Result<bool> {
        if self
            .dictionary
            .as_ref()
            .is_some_and(|(last, _)| same_dictionary(last, values))
        {
            return Ok(false);
        }
        let strings = values.as_string_opt::<i32>().ok_or_else(|| {
            DataFusionError::Internal(format!("dictionary of {}", values.data_type()))
        })?;
        let mut codes = Vec::with_capacity(strings.len());
        for text in strings.iter() {
            codes.push(match text {
                None => NULL_ID,
                Some(text) => match self.texts.get(text) {
                    Some(&id) => id,
                    None => {
                        let id = self.next_id();
                        self.texts.insert(text.to_string(), id);
                        self.values.push(KeyValue::Text(text.to_string()));
                        id
                    }
                },
            });
        }
        self.dictionary = Some((Arc::clone(values), codes));
        Ok(true)
    }

    fn next_id(&self) -> u32 {
        u32::try_from(self.values.len() + 1).expect("ids of at most max_groups values fit")
    }

    /// The values of `ids` as an array of type `data_type`.
    fn array(&self, ids: &[u32], data_type: &DataType) -> Result<ArrayRef> {
        let value = |id: u32| (id != NULL_ID).then(|| &self.values[id as usize - 1]);
        if self.texts.len() == self.values.len() {
            let texts: StringArray = ids
                .iter()
                .map(|&id| match value(id) {
                    Some(KeyValue::Text(text)) => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            return Ok(cast(&texts, data_type)?);
        }
        let null = ScalarValue::try_from(data_type)?;
        let scalars = ids.iter().map(|&id| match value(id) {
            Some(KeyValue::Scalar(scalar)) => Ok(scalar.clone()),
            Some(KeyValue::Text(_)) => Err(DataFusionError::Internal(
                "a key mixes codes and other values".into(),
            )),
            None => Ok(null.clone()),
        });
        let scalars = scalars.collect::<Result<Vec<_>>>()?;
        ScalarValue::iter_to_array(scalars)
    }
}

/// Group indices of key id combinations.
#[derive(Default)]
struct GroupIndex {
    /// With one key: the group of each id; with two: of each pair of ids below
    /// [`PAIR_IDS`] (`u32::MAX`: none yet).
    dense: Vec<u32>,
    /// Other combinations of ids: the group of each, packed.
    packed: HashMap<u128, u32>,
    /// Per key, the id of each group.
    ids: Vec<Vec<u32>>,
    len: usize,
}

impl GroupIndex {
    fn len(&self) -> usize {
        self.len
    }

    /// The group of each row, given each key's ids of the rows.
    fn assign(&mut self, keys: &[Vec<u32>], rows: usize, groups: &mut Vec<usize>) {
        if self.ids.len() != keys.len() {
            self.ids = vec![Vec::new(); keys.len()];
        }
        groups.clear();
        match keys {
            [only] => {
                for (row, &id) in only.iter().enumerate().take(rows) {
                    let id = id as usize;
                    if id >= self.dense.len() {
                        self.dense.resize(id + 1, u32::MAX);
                    }
                    let group = match self.dense[id] {
                        u32::MAX => {
                            self.dense[id] = self.len as u32;
                            self.push(keys, row)
                        }
                        group => group as usize,
                    };
                    groups.push(group);
                }
            }
            [first, second] => {
                for row in 0..rows {
                    let (a, b) = (first[row], second[row]);
                    let group = match a < PAIR_IDS && b < PAIR_IDS {
                        true => {
                            if self.dense.is_empty() {
                                self.dense = vec![u32::MAX; (PAIR_IDS * PAIR_IDS) as usize];
                            }
                            let slot = (a * PAIR_IDS + b) as usize;
                            match self.dense[slot] {
                                u32::MAX => {
                                    self.dense[slot] = self.len as u32;
                                    self.push(keys, row)
                                }
                                group => group as usize,
                            }
                        }
                        false => self.hashed(keys, row),
                    };
                    groups.push(group);
                }
            }
            _ => (0..rows).for_each(|row| groups.push(self.hashed(keys, row))),
        }
    }

    /// The group of row `row` through the hash table of packed ids.
    fn hashed(&mut self, keys: &[Vec<u32>], row: usize) -> usize {
        let packed = keys
            .iter()
            .fold(0u128, |acc, ids| (acc << 32) | u128::from(ids[row]));
        match self.packed.get(&packed) {
            Some(&group) => group as usize,
            None => {
                self.packed.insert(packed, self.len as u32);
                self.push(keys, row)
            }
        }
    }

    fn push(&mut self, keys: &[Vec<u32>], row: usize) -> usize {
        for (ids, key) in self.ids.iter_mut().zip(keys) {
            ids.push(key[row]);
        }
        self.len += 1;
        self.len - 1
    }
}

/// The state of one partition's grouping.
struct Grouping {
    keys: Vec<(Arc<dyn PhysicalExpr>, KeyIds)>,
    groups: GroupIndex,
    aggregates: Vec<Arc<AggregateFunctionExpr>>,
    filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    accumulators: Vec<Accumulation>,
    /// The input's schema, which aggregate arguments are typed by.
    input_schema: SchemaRef,
    schema: SchemaRef,
    max_groups: usize,
    dictionaries: Count,
}

/// How one aggregate accumulates per group.
enum Accumulation {
    /// DataFusion's grouped accumulator of the function.
    Grouped(Box<dyn GroupsAccumulator>),
    /// `COUNT(DISTINCT <string>)`, which DataFusion accumulates per group through an
    /// adapter that copies each group's rows out of every batch.
    Distinct(DistinctStrings),
}

/// Whether `aggregate` is `COUNT(DISTINCT <string>)` over `schema`, which this operator
/// accumulates itself.
pub fn is_distinct_string_count(aggregate: &AggregateFunctionExpr, schema: &Schema) -> bool {
    let args = aggregate.expressions();
    aggregate.is_distinct()
        && aggregate.fun().name() == "count"
        && aggregate.order_bys().is_empty()
        && args.len() == 1
        && args[0].data_type(schema).is_ok_and(|t| {
            matches!(t, DataType::Utf8 | DataType::Utf8View) || t == dictionary_text()
        })
}

impl Grouping {
    /// Groups or distinct values of a key held, whichever is more: what bounds memory.
    fn held(&self) -> usize {
        let values = self.keys.iter().map(|(_, ids)| ids.values.len());
        values.fold(self.groups.len(), usize::max)
    }

    /// Whether the distinct values held have reached their bound.
    fn distinct_full(&self) -> bool {
        self.accumulators.iter().any(|a| match a {
            Accumulation::Distinct(distinct) => distinct.sets.bytes.len() >= MAX_DISTINCT_BYTES,
            Accumulation::Grouped(_) => false,
        })
    }

    /// Adds the rows of `batch` to their groups' accumulators.
    fn update(&mut self, batch: &RecordBatch) -> Result<()> {
        let rows = batch.num_rows();
        let mut key_ids: Vec<Vec<u32>> = Vec::with_capacity(self.keys.len());
        for (expr, ids) in &mut self.keys {
            let array = expr.evaluate(batch)?.into_array(rows)?;
            let mut out = Vec::with_capacity(rows);
            if ids.ids(&array, &mut out)? {
                self.dictionaries.add(1);
            }
            key_ids.push(out);
        }
        let mut groups = Vec::with_capacity(rows);
        self.groups.assign(&key_ids, rows, &mut groups);
        let total = self.groups.len();
        for ((aggregate, filter), accumulator) in self
            .aggregates
            .iter()
            .zip(&self.filters)
            .zip(&mut self.accumulators)
        {
            let values = aggregate
                .expressions()
                .iter()
                .map(|e| e.evaluate(batch)?.into_array(rows))
                .collect::<Result<Vec<_>>>()?;
            let filter: Option<BooleanArray> = match filter {
                Some(f) => Some(f.evaluate(batch)?.into_array(rows)?.as_boolean().clone()),
                None => None,
            };
            match accumulator {
                Accumulation::Grouped(grouped) => {
                    grouped.update_batch(&values, &groups, filter.as_ref(), total)?
                }
                Accumulation::Distinct(distinct) => {
                    distinct.update(&values[0], &groups, filter.as_ref())?
                }
            }
        }
        Ok(())
    }

    /// The partial states of every group held, after which grouping starts afresh.
    fn emit(&mut self) -> Result<RecordBatch> {
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        for (k, (_, ids)) in self.keys.iter().enumerate() {
            let group_ids = self.groups.ids.get(k).map_or(&[][..], Vec::as_slice);
            columns.push(ids.array(group_ids, self.schema.field(k).data_type())?);
        }
        let groups = self.groups.len();
        for accumulator in &mut self.accumulators {
            let state_field = self.schema.field(columns.len());
            match accumulator {
                Accumulation::Grouped(grouped) => columns.extend(grouped.state(EmitTo::All)?),
                Accumulation::Distinct(distinct) => {
                    columns.push(distinct.state(groups, state_field.data_type())?)
                }
            }
        }
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        self.reset()?;
        Ok(batch)
    }

    /// Forgets every group and key value; fresh accumulators.
    fn reset(&mut self) -> Result<()> {
        self.groups = GroupIndex::default();
        for (_, ids) in &mut self.keys {
            *ids = KeyIds::default();
        }
        let input = Arc::clone(&self.input_schema);
        self.accumulators = self
            .aggregates
            .iter()
            .map(|a| match is_distinct_string_count(a, &input) {
                true => Ok(Accumulation::Distinct(DistinctStrings::default())),
                false => a.create_groups_accumulator().map(Accumulation::Grouped),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(())
    }
}

/// Bytes of distinct values held before the partial states are emitted.
const MAX_DISTINCT_BYTES: usize = 64 << 20;

/// The distinct non-null strings of every group, for `COUNT(DISTINCT ...)`. Values that
/// come as dictionary codes are added once per (group, code) of a dictionary.
#[derive(Default)]
struct DistinctStrings {
    sets: StringSets,
    /// The dictionary the last codes index, with the (group, code) pairs met in it.
    coded: Option<(ArrayRef, MetCodes)>,
}

/// The (group, code) pairs met in one dictionary: a bitmap of the dictionary's codes per
/// group while those fit [`MAX_CODE_BITMAP_BYTES`] (a bit test per row, where a hash
/// table probes memory at random), else a set of pairs.
enum MetCodes {
    Bitmaps {
        /// Bits per group: the dictionary's length.
        codes: usize,
        /// Per group, its bitmap once the group has met a code.
        groups: Vec<Option<Box<[u64]>>>,
        /// How many groups have a bitmap.
        held: usize,
    },
    Pairs(HashSet<u64>),
}

/// Bytes of code bitmaps one [`DistinctStrings`] holds per dictionary: a few hundred
/// groups over a dictionary of 100K identifiers.
const MAX_CODE_BITMAP_BYTES: usize = 4 << 20;

/// (group, code) pairs a [`DistinctStrings`] remembers per dictionary before it starts
/// afresh (it then adds some strings again, which the sets hold once anyway).
const MAX_CODE_PAIRS: usize = 1 << 22;

impl MetCodes {
    fn new(codes: usize) -> Self {
        MetCodes::Bitmaps {
            codes,
            groups: Vec::new(),
            held: 0,
        }
    }

    /// Whether the pairs met can grow: a dictionary's sets start afresh past their bound.
    fn has_room(&self) -> bool {
        match self {
            MetCodes::Bitmaps { .. } => true,
            MetCodes::Pairs(pairs) => pairs.len() < MAX_CODE_PAIRS,
        }
    }

    /// Records (group, code); true when it had not been met before.
    fn insert(&mut self, group: usize, code: usize) -> bool {
        if let MetCodes::Bitmaps {
            codes,
            groups,
            held,
        } = self
        {
            assert!(code < *codes, "a code indexes its dictionary");
            let words = codes.div_ceil(64);
            if group >= groups.len() {
                groups.resize(group + 1, None);
            }
            if groups[group].is_none() && (*held + 1) * words * 8 <= MAX_CODE_BITMAP_BYTES {
                groups[group] = Some(vec![0; words].into());
                *held += 1;
            }
            if let Some(bits) = groups[group].as_mut() {
                let (word, bit) = (code / 64, 1u64 << (code % 64));
                let new = bits[word] & bit == 0;
                bits[word] |= bit;
                return new;
            }
            // Too many groups for bitmaps: the pairs start afresh, so some strings are
            // added again, which the sets hold once anyway.
            *self = MetCodes::Pairs(HashSet::new());
        }
        match self {
            MetCodes::Pairs(pairs) => pairs.insert((group as u64) << 32 | code as u64),
            MetCodes::Bitmaps { .. } => unreachable!("bitmaps returned above"),
        }
    }
}

impl DistinctStrings {
    /// Adds the value of each row (`values`, strings or [`dictionary_text`] codes) to its
    /// group's set, unless `filter` rejects the row.
    fn update(
        &mut self,
        values: &ArrayRef,
        groups: &[usize],
        filter: Option<&BooleanArray>,
    ) -> Result<()> {
        let skipped = |row: usize| filter.is_some_and(|f| !f.is_valid(row) || !f.value(row));
        if let Some(codes) = values.as_dictionary_opt::<Int32Type>() {
            return self.update_codes(codes, groups, skipped);
        }
        let strings = cast(values, &DataType::Utf8View)?;
        let strings = strings.as_string_view();
        for (row, &group) in groups.iter().enumerate() {
            if strings.is_valid(row) && !skipped(row) {
                self.sets.add(group, strings.value(row));
            }
        }
        Ok(())
    }

    /// [`Self::update`] for values as codes into a dictionary of strings.
    fn update_codes(
        &mut self,
        codes: &DictionaryArray<Int32Type>,
        groups: &[usize],
        skipped: impl Fn(usize) -> bool,
    ) -> Result<()> {
        let dictionary = codes.values();
        let strings = dictionary.as_string_opt::<i32>().ok_or_else(|| {
            DataFusionError::Internal(format!("dictionary of {}", dictionary.data_type()))
        })?;
        let known = self
            .coded
            .as_ref()
            .is_some_and(|(last, met)| same_dictionary(last, dictionary) && met.has_room());
        if !known {
            self.coded = Some((Arc::clone(dictionary), MetCodes::new(dictionary.len())));
        }
        let (_, met) = self.coded.as_mut().expect("a dictionary was just recorded");
        let keys = codes.keys();
        for (row, &group) in groups.iter().enumerate() {
            if keys.is_null(row) || skipped(row) {
                continue;
            }
            let code = usize::try_from(keys.value(row)).expect("dictionary keys are valid");
            if met.insert(group, code) && strings.is_valid(code) {
                self.sets.add(group, strings.value(code));
            }
        }
        Ok(())
    }

    /// The state of `groups` groups as DataFusion's COUNT(DISTINCT) keeps it, a list of
    /// the distinct values per group (`data_type`), after which the sets are empty.
    fn state(&mut self, groups: usize, data_type: &DataType) -> Result<ArrayRef> {
        let DataType::List(item) = data_type else {
            return Err(DataFusionError::Internal(format!(
                "COUNT(DISTINCT) state of type {data_type}"
            )));
        };
        let StringSets { bytes, entries, .. } = &mut self.sets;
        let mut sorted: Vec<(u32, u32, u32)> = entries.drain().collect();
        sorted.sort_unstable_by_key(|&(group, _, _)| group);
        let mut lengths = vec![0usize; groups];
        for &(group, _, _) in &sorted {
            lengths[group as usize] += 1;
        }
        let mut values = StringViewBuilder::with_capacity(sorted.len());
        for &(_, at, len) in &sorted {
            values.append_value(&bytes[at as usize..(at + len) as usize]);
        }
        bytes.clear();
        let values = cast(&(Arc::new(values.finish()) as ArrayRef), item.data_type())?;
        let offsets = OffsetBuffer::from_lengths(lengths);
        Ok(Arc::new(ListArray::try_new(
            Arc::clone(item),
            offsets,
            values,
            None,
        )?))
    }
}

/// Sets of strings, one per group, in one text arena and one hash table of (group,
/// offset, length): no allocation per value, and values read back without validating
/// their UTF-8 again.
#[derive(Default)]
struct StringSets {
    bytes: String,
    entries: HashTable<(u32, u32, u32)>,
    hasher: DefaultHashBuilder,
}

impl StringSets {
    /// Adds `value` to the set of `group`, unless it is there already.
    fn add(&mut self, group: usize, value: &str) {
        let Self {
            bytes,
            entries,
            hasher,
        } = self;
        let group = u32::try_from(group).expect("groups are bounded by max_groups");
        let hash = hasher.hash_one((group, value));
        let stored = |&(g, at, len): &(u32, u32, u32)| {
            g == group && &bytes[at as usize..(at + len) as usize] == value
        };
        if entries.find(hash, stored).is_some() {
            return;
        }
        let at = u32::try_from(bytes.len()).expect("MAX_DISTINCT_BYTES bounds the arena");
        let len = u32::try_from(value.len()).expect("a string value fits in 4 GiB");
        bytes.push_str(value);
        let rehash = |&(g, at, len): &(u32, u32, u32)| {
            hasher.hash_one((g, &bytes[at as usize..(at + len) as usize]))
        };
        entries.insert_unique(hash, (group, at, len), rehash);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use arrow::array::{DictionaryArray, Int32Array, Int64Array, StringViewArray};
    use arrow::datatypes::{Field, Schema};
    use datafusion::datasource::memory::MemorySourceConfig;
    use datafusion::functions_aggregate::count::count_udaf;
    use datafusion::functions_aggregate::sum::sum_udaf;
    use datafusion::physical_expr::aggregate::AggregateExprBuilder;
    use datafusion::physical_expr::expressions::col;
    use datafusion::physical_plan::collect;
    use datafusion::prelude::SessionContext;

    use super::*;

    type Key = (Option<String>, Option<i32>);

    /// Per key: the sum of `v`, the distinct non-null strings of `d`, and those of `dc`
    /// (the same strings as dictionary codes).
    type Expected = BTreeMap<Key, (i64, BTreeSet<String>, BTreeSet<String>)>;

    const ROWS: i32 = 400;

    /// Batches of (codes, integer, value, string, string codes) rows, each batch with
    /// its own key dictionary, nulls in both keys and in the strings; and what each key
    /// aggregates. The integers are small, and in odd batches large ones, more than a
    /// pair table holds. The string codes index one dictionary in the first three
    /// batches (a null among its values) and a copy of it in the others.
    fn input() -> (SchemaRef, Vec<RecordBatch>, Expected) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("s", dictionary_text(), true),
            Field::new("h", DataType::Int32, true),
            Field::new("v", DataType::Int64, false),
            Field::new("d", DataType::Utf8View, true),
            Field::new("dc", dictionary_text(), true),
        ]));
        let mut expected = Expected::new();
        let mut batches = Vec::new();
        let palette: Vec<Option<String>> = (0..53)
            .map(|k| Some(format!("a rather long string {k}")))
            .chain([None])
            .collect();
        let shared = Arc::new(StringArray::from(palette.clone())) as ArrayRef;
        for b in 0..5i32 {
            let words: Vec<String> = (0..4).map(|w| format!("w{}", (w + b) % 6)).collect();
            let dictionary = Arc::new(StringArray::from(words.clone())) as ArrayRef;
            let codes: Vec<Option<i32>> =
                (0..ROWS).map(|r| (r % 7 != 0).then_some(r % 4)).collect();
            let hours: Vec<Option<i32>> = (0..ROWS)
                .map(|r| (r % 5 != 0).then_some(if b % 2 == 0 { r % 3 } else { r * 1000 - b }))
                .collect();
            let values: Vec<i64> = (0..ROWS).map(|r| i64::from(r * (b + 1))).collect();
            let strings: Vec<Option<String>> = (0..ROWS)
                .map(|r| {
                    (r % 11 != 0).then(|| format!("a rather long string {}", (r * 7 + b) % 53))
                })
                .collect();
            // A null string is a null code or the code of the dictionary's null.
            let string_codes: Vec<Option<i32>> = (0..ROWS)
                .map(|r| match (r % 11, r % 22) {
                    (0, 0) => None,
                    (0, _) => Some(53),
                    _ => Some((r * 7 + b) % 53),
                })
                .collect();
            let string_dictionary = match b {
                0..3 => Arc::clone(&shared),
                _ => Arc::new(StringArray::from(palette.clone())) as ArrayRef,
            };
            for (((code, hour), value), string) in
                codes.iter().zip(&hours).zip(&values).zip(&strings)
            {
                let word = code.map(|c| words[c as usize].clone());
                let entry = expected.entry((word, *hour)).or_default();
                entry.0 += value;
                entry.1.extend(string.clone());
                entry.2.extend(string.clone());
            }
            let keys = DictionaryArray::<Int32Type>::try_new(codes.into(), dictionary).unwrap();
            let string_codes =
                DictionaryArray::<Int32Type>::try_new(string_codes.into(), string_dictionary)
                    .unwrap();
            let columns: Vec<ArrayRef> = vec![
                Arc::new(keys),
                Arc::new(Int32Array::from(hours)),
                Arc::new(Int64Array::from(values)),
                Arc::new(StringViewArray::from(strings)),
                Arc::new(string_codes),
            ];
            batches.push(RecordBatch::try_new(Arc::clone(&schema), columns).unwrap());
        }
        (schema, batches, expected)
    }

    #[test]
    fn met_codes_are_bitmaps_while_they_fit_then_pairs() {
        let mut met = MetCodes::new(5);
        assert!(met.insert(0, 4));
        assert!(!met.insert(0, 4));
        assert!(met.insert(3, 4));
        assert!(matches!(met, MetCodes::Bitmaps { .. }));
        // 2^20 codes take 128 KiB per group: 32 groups fit the bound, the 33rd does not.
        let codes = 1 << 20;
        let fitting = MAX_CODE_BITMAP_BYTES / (codes / 8);
        let mut met = MetCodes::new(codes);
        for group in 0..fitting {
            assert!(met.insert(group, codes - 1));
        }
        assert!(matches!(met, MetCodes::Bitmaps { .. }));
        assert!(met.insert(fitting, 0));
        assert!(matches!(met, MetCodes::Pairs(_)));
        assert!(!met.insert(fitting, 0));
        assert!(met.insert(0, codes - 1), "the pairs started afresh");
        assert!(met.has_room());
    }

    /// Partial sums and distinct sets per key, emitted whenever `max_groups` groups are
    /// held, add up to the sums and sets of the whole input, with two keys (pair table
    /// and hashing) and three (a copy of the first; hashing only).
    #[tokio::test]
    async fn partial_states_add_up_at_any_group_limit() {
        let (schema, batches, expected) = input();
        let sum = AggregateExprBuilder::new(sum_udaf(), vec![col("v", &schema).unwrap()])
            .schema(Arc::clone(&schema))
            .alias("sum(v)")
            .build()
            .unwrap();
        let distinct = AggregateExprBuilder::new(count_udaf(), vec![col("d", &schema).unwrap()])
            .schema(Arc::clone(&schema))
            .distinct()
            .alias("count(DISTINCT d)")
            .build()
            .unwrap();
        // As the grouping-on-codes rule makes it: over strings, then fed their codes.
        let coded = distinct
            .with_new_expressions(vec![col("dc", &schema).unwrap()], vec![])
            .unwrap();
        let cases = [
            (2, 1),
            (2, 3),
            (2, 7),
            (2, MAX_GROUPS),
            (3, 5),
            (3, MAX_GROUPS),
        ];
        for (width, max_groups) in cases {
            let mut fields = vec![
                Field::new("s", DataType::Utf8View, true),
                Field::new("h", DataType::Int32, true),
                Field::new("s2", DataType::Utf8View, true),
            ];
            fields.truncate(width);
            for aggregate in [&sum, &distinct, &coded] {
                let states = aggregate.state_fields().unwrap();
                fields.extend(states.iter().map(|f| f.as_ref().clone()));
            }
            let mut keys = vec![
                (col("s", &schema).unwrap(), "s".to_string()),
                (col("h", &schema).unwrap(), "h".to_string()),
                (col("s", &schema).unwrap(), "s2".to_string()),
            ];
            keys.truncate(width);
            let input = MemorySourceConfig::try_new_exec(
                std::slice::from_ref(&batches),
                Arc::clone(&schema),
                None,
            )
            .unwrap();
            let exec = CodeAggregateExec::try_new(
                input,
                keys,
                vec![
                    Arc::new(sum.clone()),
                    Arc::new(distinct.clone()),
                    Arc::new(coded.clone()),
                ],
                vec![None, None, None],
                Arc::new(Schema::new(fields)),
                max_groups,
            )
            .unwrap();
            let out = collect(Arc::new(exec), SessionContext::new().task_ctx())
                .await
                .unwrap();
            let mut got = Expected::new();
            for batch in &out {
                let words = cast(batch.column(0), &DataType::Utf8).unwrap();
                let words = words.as_string::<i32>();
                let hours = batch.column(1).as_primitive::<Int32Type>();
                let partial = batch.column(width).as_primitive::<Int64Type>();
                let sets = batch.column(width + 1).as_list::<i32>();
                let coded_sets = batch.column(width + 2).as_list::<i32>();
                for row in 0..batch.num_rows() {
                    let word = words.is_valid(row).then(|| words.value(row).to_string());
                    let hour = hours.is_valid(row).then(|| hours.value(row));
                    let entry = got.entry((word, hour)).or_default();
                    entry.0 += partial.value(row);
                    let set = sets.value(row);
                    let set = set.as_string_view();
                    entry.1.extend(set.iter().map(|v| v.unwrap().to_string()));
                    let set = coded_sets.value(row);
                    let set = set.as_string_view();
                    entry.2.extend(set.iter().map(|v| v.unwrap().to_string()));
                }
            }
            assert_eq!(got, expected, "{width} keys, max_groups {max_groups}");
            let emitted: usize = out.iter().map(RecordBatch::num_rows).sum();
            match max_groups {
                MAX_GROUPS => assert_eq!(emitted, expected.len()),
                _ => assert!(out.len() > 1 && emitted > expected.len(), "{max_groups}"),
            }
        }
    }
}
