//! `max` and `min` whose grouped answers over floats agree with the ungrouped ones.
//!
//! DataFusion 55's grouped accumulators for `Float16`/`Float32`/`Float64` (the
//! `primitive_max_accumulator` and `primitive_min_accumulator` macros of
//! `datafusion-functions-aggregate`'s `min_max.rs`) are wrong in two ways:
//!
//! - they compare with `partial_cmp` and take the new value whenever it answers `None`,
//!   so after a NaN the next value wins and the answer depends on row order:
//!   `max` of `8978.75, NaN, 1000.0` in one group is `1000.0`;
//! - they start every group at the type's greatest finite value (`min`) or least finite
//!   value (`max`), so a group holding only `-inf` gets `max` = `-1.7976931348623157e308`
//!   and a group holding only `+inf` gets `min` = `1.7976931348623157e308`.
//!
//! The ungrouped accumulators (arrow's `min`/`max` kernels, then `ScalarValue`s merged
//! with `total_cmp`) order floats totally, as arrow's comparisons and sorts do: `-0.0`
//! before `+0.0`, NaN (as `'NaN'::double` and parsing write it) after `+inf`, so `max` is
//! NaN as soon as a NaN is seen and `min` ignores NaN unless every value is NaN (as in
//! DuckDB, which however takes `-0.0` and `0.0` as equal). [`TotalOrderMax`] and
//! [`TotalOrderMin`] are DataFusion's `Max` and `Min` with only the grouped float
//! accumulators replaced by ones in that total order, starting at its extremes. A NaN
//! with its sign bit set sorts below `-inf` in it, here as in every other float
//! comparison DataFusion makes.
//!
//! Registering the wrappers under DataFusion's names reaches every `max`/`min` planned
//! by name, but not the ones DataFusion builds itself: `percentile_cont(1.0)` and
//! `percentile_cont(0.0)` (and `quantile_cont`) are simplified into `max_udaf()`/
//! `min_udaf()`, DataFusion's own `Max`/`Min`, the only such construction in 55 outside
//! tests. The logical optimizer rule [`TotalOrderMinMax`] swaps any aggregate that is
//! still DataFusion's `Max`/`Min` for the wrapper; it runs after each pass of the
//! expression simplifier (rules added to a session run after DataFusion's).
//!
//! Upstream fixed the same way after 55 (apache/datafusion#24432, by #24433); the
//! wrappers and the rule can go once Tessera's DataFusion has that fix.

use std::hash::Hash;
use std::sync::Arc;

use datafusion::arrow::array::ArrowNativeTypeOp;
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, FieldRef, Float16Type, Float32Type, Float64Type,
};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Result, ScalarValue};
use datafusion::functions_aggregate::min_max::{Max, Min};
use datafusion::logical_expr::expr::{
    AggregateFunction, AggregateFunctionParams, WindowFunctionParams,
};
use datafusion::logical_expr::function::{
    AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs,
};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, Expr, GroupsAccumulator,
    LogicalPlan, Operator, ReversedUDAF, SetMonotonicity, Signature, StatisticsArgs,
};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};
use datafusion_functions_aggregate_common::aggregate::groups_accumulator::prim_op::PrimitiveGroupsAccumulator;

/// `max`: DataFusion's [`Max`], with grouped floats in total order (NaN greatest).
pub type TotalOrderMax = TotalOrder<Max>;

/// `min`: DataFusion's [`Min`], with grouped floats in total order (NaN greatest, so
/// skipped unless a group holds nothing else).
pub type TotalOrderMin = TotalOrder<Min>;

/// `max` and `min` to register in place of DataFusion's, under the same names so that
/// every rule matching on the name (DataFusion's and Tessera's) still applies and plans
/// sent to workers decode to them.
pub fn all_functions() -> Vec<Arc<AggregateUDF>> {
    vec![
        Arc::new(AggregateUDF::new_from_impl(TotalOrderMax::default())),
        Arc::new(AggregateUDF::new_from_impl(TotalOrderMin::default())),
    ]
}

/// Logical optimizer rule: every aggregate that is DataFusion's own [`Max`]/[`Min`]
/// becomes [`TotalOrderMax`]/[`TotalOrderMin`], arguments, `DISTINCT`, `FILTER`,
/// `ORDER BY` and null treatment kept. In SQL only `percentile_cont`'s simplification
/// makes them (see the module's comment); DataFrame code calling DataFusion's
/// `expr_fn::max`/`min` would too. Names, types and schemas are unchanged, as the
/// wrappers delegate all of those.
#[derive(Debug)]
pub struct TotalOrderMinMax {
    max: Arc<AggregateUDF>,
    min: Arc<AggregateUDF>,
}

impl Default for TotalOrderMinMax {
    fn default() -> Self {
        Self {
            max: Arc::new(AggregateUDF::new_from_impl(TotalOrderMax::default())),
            min: Arc::new(AggregateUDF::new_from_impl(TotalOrderMin::default())),
        }
    }
}

impl TotalOrderMinMax {
    fn replace(&self, expr: Expr) -> Result<Transformed<Expr>> {
        let Expr::AggregateFunction(mut aggregate) = expr else {
            return Ok(Transformed::no(expr));
        };
        let inner = aggregate.func.inner();
        let func = if inner.downcast_ref::<Max>().is_some() {
            &self.max
        } else if inner.downcast_ref::<Min>().is_some() {
            &self.min
        } else {
            return Ok(Transformed::no(Expr::AggregateFunction(aggregate)));
        };
        aggregate.func = Arc::clone(func);
        Ok(Transformed::yes(Expr::AggregateFunction(aggregate)))
    }
}

impl OptimizerRule for TotalOrderMinMax {
    fn name(&self) -> &str {
        "tessera_total_order_min_max"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        // Aggregate functions only occur in `Aggregate`s once the plan is analyzed (window
        // functions are never simplified into `Max`/`Min`, and their accumulators are the
        // ungrouped ones anyway).
        if !matches!(plan, LogicalPlan::Aggregate(_)) {
            return Ok(Transformed::no(plan));
        }
        plan.map_expressions(|e| e.transform_up(|e| self.replace(e)))
    }
}

/// The extreme an aggregate keeps, in the total order of
/// [`ArrowNativeTypeOp::compare`] (`total_cmp` for floats), the order of arrow's
/// ungrouped `min`/`max` kernels.
pub trait Extreme: AggregateUDFImpl + Default + PartialEq + Eq + Hash {
    /// Replaces `current` with `new` when `new` is further towards the extreme.
    fn keep<N: ArrowNativeTypeOp>(current: &mut N, new: N);

    /// The value every group starts from: the opposite end of the total order, which
    /// any other value replaces (a finite bound would outlive a group of infinities).
    fn start<N: ArrowNativeTypeOp>() -> N;
}

impl Extreme for Max {
    fn keep<N: ArrowNativeTypeOp>(current: &mut N, new: N) {
        if new.is_gt(*current) {
            *current = new;
        }
    }

    fn start<N: ArrowNativeTypeOp>() -> N {
        N::MIN_TOTAL_ORDER
    }
}

impl Extreme for Min {
    fn keep<N: ArrowNativeTypeOp>(current: &mut N, new: N) {
        if new.is_lt(*current) {
            *current = new;
        }
    }

    fn start<N: ArrowNativeTypeOp>() -> N {
        N::MAX_TOTAL_ORDER
    }
}

/// DataFusion's `max` or `min` (`F`), every method delegated to it but the grouped
/// accumulator over floats, which orders values totally (see the module's comment).
#[derive(Debug, Default, PartialEq, Eq, Hash)]
pub struct TotalOrder<F> {
    inner: F,
}

/// A grouped accumulator over `T` that keeps `F`'s extreme in total order.
fn float_groups<F: Extreme, T: ArrowPrimitiveType + Send>(
    data_type: &DataType,
) -> Box<dyn GroupsAccumulator> {
    Box::new(
        PrimitiveGroupsAccumulator::<T, _>::new(data_type, F::keep::<T::Native>)
            .with_starting_value(F::start::<T::Native>()),
    )
}

impl<F: Extreme> AggregateUDFImpl for TotalOrder<F> {
    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let data_type = args.return_field.data_type().clone();
        Ok(match data_type {
            DataType::Float16 => float_groups::<F, Float16Type>(&data_type),
            DataType::Float32 => float_groups::<F, Float32Type>(&data_type),
            DataType::Float64 => float_groups::<F, Float64Type>(&data_type),
            _ => return self.inner.create_groups_accumulator(args),
        })
    }

    // Everything below is DataFusion's, defaults included, so that the wrapper plans,
    // names, coerces and optimizes exactly as `Max`/`Min` do. `with_beneficial_ordering`
    // keeps the trait's default: it takes `Arc<Self>`, `Max`/`Min` do not override it,
    // and the default answers from `order_sensitivity` (delegated).

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn schema_name(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.schema_name(params)
    }

    fn human_display(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.human_display(params)
    }

    fn window_function_schema_name(&self, params: &WindowFunctionParams) -> Result<String> {
        self.inner.window_function_schema_name(params)
    }

    fn display_name(&self, params: &AggregateFunctionParams) -> Result<String> {
        self.inner.display_name(params)
    }

    fn window_function_display_name(&self, params: &WindowFunctionParams) -> Result<String> {
        self.inner.window_function_display_name(params)
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        self.inner.return_field(arg_fields)
    }

    fn is_nullable(&self) -> bool {
        self.inner.is_nullable()
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.inner.accumulator(acc_args)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.inner.create_sliding_accumulator(args)
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        self.inner.order_sensitivity()
    }

    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        self.inner.simplify()
    }

    fn simplify_expr_op_literal(
        &self,
        agg_function: &AggregateFunction,
        arg: &Expr,
        op: Operator,
        lit: &Expr,
        arg_is_left: bool,
    ) -> Result<Option<Expr>> {
        self.inner
            .simplify_expr_op_literal(agg_function, arg, op, lit, arg_is_left)
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        self.inner.reverse_expr()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn is_descending(&self) -> Option<bool> {
        self.inner.is_descending()
    }

    fn value_from_stats(&self, statistics_args: &StatisticsArgs) -> Option<ScalarValue> {
        self.inner.value_from_stats(statistics_args)
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        self.inner.default_value(data_type)
    }

    fn supports_null_handling_clause(&self) -> bool {
        self.inner.supports_null_handling_clause()
    }

    fn supports_within_group_clause(&self) -> bool {
        self.inner.supports_within_group_clause()
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn set_monotonicity(&self, data_type: &DataType) -> SetMonotonicity {
        self.inner.set_monotonicity(data_type)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array};
    use datafusion::arrow::compute::cast;
    use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::datasource::MemTable;
    use datafusion::functions_aggregate::min_max::{Max, Min};
    use datafusion::logical_expr::Expr;

    use super::{TotalOrderMax, TotalOrderMin};

    use crate::SessionOptions;
    use crate::test_support::session_with;

    /// xorshift64: seeded, so that a failing round repeats with its seed.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// The values where floats' orders disagree: NaN of either sign, infinities, signed
    /// zeros and the finite extremes (the old starting values).
    const SPECIAL: [f64; 9] = [
        f64::NAN,
        -f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
    ];

    /// What a group holds, so that groups of nothing but an infinity or NaN (where the
    /// starting value shows) come up often, not once in a million rows.
    #[derive(Clone, Copy)]
    enum Kind {
        Mixed,
        Only(f64),
        Special,
        Null,
    }

    fn value(rng: &mut XorShift, kind: Kind) -> Option<f64> {
        if rng.below(5) == 0 {
            return None;
        }
        match kind {
            Kind::Null => None,
            Kind::Only(v) => Some(v),
            Kind::Special => Some(SPECIAL[rng.below(SPECIAL.len())]),
            Kind::Mixed if rng.below(3) == 0 => Some(SPECIAL[rng.below(SPECIAL.len())]),
            Kind::Mixed => Some(((rng.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2e4),
        }
    }

    /// A value compared as the total order sees it, NaN payloads aside (casts between
    /// widths may change them): NaN by sign, anything else by its bits (`-0.0` is not
    /// `0.0`).
    fn key(v: Option<f64>) -> String {
        match v {
            None => "NULL".into(),
            Some(v) if v.is_nan() => format!("{}NaN", if v.is_sign_negative() { "-" } else { "" }),
            Some(v) => format!("{v:?} ({:#x})", v.to_bits()),
        }
    }

    /// `max` and `min` in the total order, as arrow's ungrouped kernels compute them.
    fn expected(values: &[Option<f64>]) -> [Option<f64>; 2] {
        let present = || values.iter().flatten().copied();
        [
            present().max_by(f64::total_cmp),
            present().min_by(f64::total_cmp),
        ]
    }

    /// The cells of `batches` as `f64` (casting from `Float32`/`Float16`), by row.
    fn rows(batches: &[RecordBatch]) -> Vec<Vec<Option<f64>>> {
        let mut out = Vec::new();
        for batch in batches {
            let columns: Vec<ArrayRef> = batch
                .columns()
                .iter()
                .map(|c| cast(c, &DataType::Float64).unwrap())
                .collect();
            for row in 0..batch.num_rows() {
                out.push(
                    columns
                        .iter()
                        .map(|c| {
                            let c = c.as_primitive::<Float64Type>();
                            c.is_valid(row).then(|| c.value(row))
                        })
                        .collect(),
                );
            }
        }
        out
    }

    /// `percentile_cont(1.0)`/`(0.0)` (and `quantile_cont`), which DataFusion's simplifier
    /// plans as its own `Max`/`Min`, end up as the wrappers, grouped and ungrouped, in
    /// the optimized plan (subqueries included).
    #[tokio::test]
    async fn simplified_percentiles_are_the_wrappers() {
        let session = session_with(SessionOptions::default());
        let values = "(VALUES (1, 2.0), (1, 'NaN'::double)) t(g, x)";
        for sql in [
            format!(
                "SELECT g, percentile_cont(1.0) WITHIN GROUP (ORDER BY x), \
                 percentile_cont(0.0) WITHIN GROUP (ORDER BY x DESC), quantile_cont(x, 0.0) \
                 FROM {values} GROUP BY g"
            ),
            format!(
                "SELECT percentile_cont(0.0) WITHIN GROUP (ORDER BY x) FILTER (WHERE g > 0), \
                 (SELECT percentile_cont(1.0) WITHIN GROUP (ORDER BY x) FROM {values}) \
                 FROM {values}"
            ),
        ] {
            let plan = session
                .sql(&sql)
                .await
                .unwrap()
                .into_optimized_plan()
                .unwrap();
            let mut found = Vec::new();
            plan.apply_with_subqueries(|node| {
                node.apply_expressions(|e| {
                    e.apply(|e| {
                        if let Expr::AggregateFunction(a) = e {
                            let inner = a.func.inner();
                            found.push((
                                a.func.name().to_string(),
                                inner.downcast_ref::<Max>().is_some()
                                    || inner.downcast_ref::<Min>().is_some(),
                                inner.downcast_ref::<TotalOrderMax>().is_some()
                                    || inner.downcast_ref::<TotalOrderMin>().is_some(),
                            ));
                        }
                        Ok(TreeNodeRecursion::Continue)
                    })
                })
            })
            .unwrap();
            assert!(found.len() >= 2, "{sql}: {found:?}\n{plan}");
            for (name, datafusion, wrapper) in &found {
                assert!(
                    ["max", "min"].contains(&name.as_str()) && !datafusion && *wrapper,
                    "{sql}: {found:?}\n{plan}"
                );
            }
        }
    }

    const AGGREGATES: &str = "max(x), min(x), max(x32), min(x32), max(x16), min(x16)";

    /// `t` with `x` also as `Float32` and `Float16`.
    const WIDTHS: &str = "(SELECT g, x, CAST(x AS FLOAT) AS x32, \
        arrow_cast(x, 'Float16') AS x16 FROM t)";

    /// Random groups of floats with NaN, infinities, signed zeros and NULLs, in random
    /// order over several batches and partitions: the grouped `max`/`min` (Float64,
    /// Float32 and Float16) equal the total order's extremes computed here and the
    /// ungrouped aggregates of each group alone. Every other round skips partial
    /// aggregation, so that groups' states are also built row by row
    /// (`convert_to_state`).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grouped_float_max_min_are_the_ungrouped_ones() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("g", DataType::Int64, false),
            Field::new("x", DataType::Float64, true),
        ]));
        for seed in 1..=40u64 {
            let mut rng = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let kinds: Vec<Kind> = (0..1 + rng.below(8))
                .map(|_| match rng.below(7) {
                    0 => Kind::Only(f64::NEG_INFINITY),
                    1 => Kind::Only(f64::INFINITY),
                    2 => Kind::Only(f64::NAN),
                    3 => Kind::Special,
                    4 => Kind::Null,
                    _ => Kind::Mixed,
                })
                .collect();
            let mut groups: BTreeMap<i64, Vec<Option<f64>>> = BTreeMap::new();
            let mut rows_in = Vec::new();
            for _ in 0..1 + rng.below(400) {
                let g = rng.below(kinds.len());
                let x = value(&mut rng, kinds[g]);
                groups.entry(g as i64).or_default().push(x);
                rows_in.push((g as i64, x));
            }
            let partitions = 1 + rng.below(3);
            let mut batches: Vec<Vec<RecordBatch>> = vec![Vec::new(); partitions];
            let mut rest = &rows_in[..];
            while !rest.is_empty() {
                let (chunk, tail) = rest.split_at((1 + rng.below(50)).min(rest.len()));
                rest = tail;
                let g = Int64Array::from_iter_values(chunk.iter().map(|r| r.0));
                let x = Float64Array::from_iter(chunk.iter().map(|r| r.1));
                let batch =
                    RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(g), Arc::new(x)])
                        .unwrap();
                batches[rng.below(partitions)].push(batch);
            }

            let session = session_with(SessionOptions {
                target_partitions: Some(4),
                ..Default::default()
            });
            let table = MemTable::try_new(Arc::clone(&schema), batches).unwrap();
            session
                .context()
                .register_table("t", Arc::new(table))
                .unwrap();
            if seed % 2 == 0 {
                for set in [
                    "SET datafusion.execution.skip_partial_aggregation_probe_rows_threshold = 1",
                    "SET datafusion.execution.skip_partial_aggregation_probe_ratio_threshold = 0.0",
                ] {
                    session.sql(set).await.unwrap().collect().await.unwrap();
                }
            }
            let run = |sql: String| {
                let session = &session;
                async move { rows(&session.sql(&sql).await.unwrap().collect().await.unwrap()) }
            };

            let grouped = run(format!(
                "SELECT CAST(g AS DOUBLE), {AGGREGATES} FROM {WIDTHS} GROUP BY g"
            ))
            .await;
            assert_eq!(grouped.len(), groups.len(), "seed {seed}: groups");
            for row in grouped {
                let g = row[0].unwrap() as i64;
                let values = &groups[&g];
                let context = format!("seed {seed}, group {g}, values {values:?}");
                let wide = expected(values);
                let narrow: Vec<Option<f64>> =
                    values.iter().map(|v| v.map(|v| v as f32 as f64)).collect();
                let narrow = expected(&narrow);
                let want = [wide[0], wide[1], narrow[0], narrow[1]].map(key);
                let got: Vec<String> = row[1..5].iter().copied().map(key).collect();
                assert_eq!(got, want, "{context}: grouped against the total order");

                let alone = run(format!("SELECT {AGGREGATES} FROM {WIDTHS} WHERE g = {g}")).await;
                let alone: Vec<String> = alone[0].iter().copied().map(key).collect();
                let got: Vec<String> = row[1..].iter().copied().map(key).collect();
                assert_eq!(got, alone, "{context}: grouped against ungrouped");
            }
        }
    }
}
