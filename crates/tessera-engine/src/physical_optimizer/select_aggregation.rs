//! Aggregation and group-by through S3 Select ("PushdownDB: Accelerating a DBMS using
//! S3 Computation", ICDE 2020, §III and §VI): a partial aggregation over an NDJSON scan
//! asking S3 Select becomes a [`SelectAggregationExec`], which has the store aggregate
//! each object (per group, for the largest groups of a sample).
//!
//! An aggregation qualifies when everything between it and the scan is projections and
//! filters (which keep the scan's partitions), and the store can
//! compute each part exactly (or fail the request):
//! - every filter, and the scan's own document filters ([`Fit::Exact`]);
//! - each aggregate: `COUNT(*)`, or `COUNT`, `SUM`, `MIN`, `MAX` or `AVG` of a number
//!   read from the document (`json_get_float`, `json_get_int`, a cast of `->>` to
//!   `DOUBLE` or `BIGINT`) or of `+`, `-`, `*` over such doubles; no `DISTINCT`,
//!   `ORDER BY` or `FILTER`;
//! - each group key: a text (`->>`, `json_get_str`), an integer, or an integer `%` a
//!   positive constant.
//!
//! Where every aggregate reads the same values (no `COUNT(*)`), the documents where one
//! is missing or null are left out of the request: they change no aggregate, and
//! MinIO's `SUM`, `MIN` and `MAX` would fail on a missing one, over sparse documents on
//! every object.
//!
//! Groups are pushed only where the link is slow enough (`tessera.link_mib`) for the
//! documents they save to pay for the store's extra scans ([`GroupCosts::worth`]).
//! `SET tessera.select_aggregation = 'off'` leaves aggregations to the scan's rows.

use std::sync::Arc;

use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::Result;
use datafusion::common::ScalarValue;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::physical_plan::{FileScanConfigBuilder, FileSource};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, Literal};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::udaf::AggregateFunctionExpr;
use datafusion::physical_plan::{ExecutionPlan, replace_children_if_necessary};
use tessera_pushdown::select_aggregate::{Aggregate, SelectAggregate};
use tessera_pushdown::select_sql::{
    Arith, Condition, FIELDS_MAX, NUMBER_MAGNITUDE_MAX, Scalar, is_pushable_path,
};

use super::select_chain::{over_sample, rewrite_in_process, scan_of, with_scan};
use super::select_pushdown::condition::{Fit, condition};
use super::select_pushdown::ndjson_scan;
use crate::access::pushable::{cast_parts, pushable_access};
use crate::datasource::ndjson::aggregated::AggregatedObjects;
use crate::datasource::ndjson::source::NdjsonSource;
use crate::json::Output;
use crate::json::path::PathElem;
use crate::options::TesseraOptions;
use crate::physical_plan::select_aggregation::{
    GroupCosts, GroupSample, PushedAggregation, SelectAggregationExec, State,
};

/// The least documents a group sample asks for.
const SAMPLE_ROWS_MIN: u64 = 1_000;
/// The most documents a group sample asks for.
const SAMPLE_ROWS_MAX: u64 = 100_000;

/// The rule; registered after [`super::SelectPushdown`], over the scans' final
/// projections.
#[derive(Debug, Default)]
pub struct SelectAggregation;

impl PhysicalOptimizerRule for SelectAggregation {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let link_mib = config
            .extensions
            .get::<TesseraOptions>()
            .map(|o| o.link_mib);
        let link_bytes_per_s = link_mib.unwrap_or(100.0) * 1_048_576.0;
        let rewrite = |node: &Arc<dyn ExecutionPlan>| match node.downcast_ref::<AggregateExec>() {
            Some(aggregate) => pushed(node, aggregate, link_bytes_per_s),
            None => Ok(None),
        };
        rewrite_in_process(plan, config, |o| o.select_aggregation.0, &rewrite)
    }

    fn name(&self) -> &str {
        "tessera_select_aggregation"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// How a value the store computes reads the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A double (a read of doubles, or a numeric cast).
    Double,
    /// An integer (guarded to be one in the document).
    Integer,
    /// `->>`'s text: strings, and other values' JSON text.
    Text,
    /// `json_get_str`'s strings only.
    Strings,
}

/// A value the store computes, what it is, and the paths it reads as integers.
#[derive(Debug, Clone)]
struct Typed {
    scalar: Scalar,
    kind: Kind,
    integer_paths: Vec<Vec<PathElem>>,
}

/// `aggregate` (the plan `node`) as a [`SelectAggregationExec`], when it qualifies.
fn pushed(
    node: &Arc<dyn ExecutionPlan>,
    aggregate: &AggregateExec,
    link_bytes_per_s: f64,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let plain = *aggregate.mode() == AggregateMode::Partial
        && aggregate.group_expr().is_single()
        && aggregate.limit_options().is_none()
        && aggregate.filter_expr().iter().all(Option::is_none);
    let Some((config, source)) = scan_of(aggregate.input()).filter(|_| plain) else {
        return Ok(None);
    };
    let open = source.asks_select()
        && source.select_plan().is_some()
        && !source.in_top_k()
        && source.semi_join().is_none()
        && !source.is_aggregated();
    let Some(client) = source.select_client().filter(|_| open).cloned() else {
        return Ok(None);
    };
    let Some(translated) = translate(aggregate, source) else {
        return Ok(None);
    };
    let objects = Arc::new(AggregatedObjects::default());
    // Each partition's objects are aggregated before its scan reads what is left of
    // them, so they must stay in their partition: no work stealing between partitions.
    let told = |config: FileScanConfigBuilder, source: &NdjsonSource| {
        config
            .with_preserve_order(true)
            .with_source(Arc::new(source.with_aggregated(Arc::clone(&objects))))
    };
    let Some(input) = with_scan(aggregate.input(), &told)? else {
        return Ok(None);
    };
    let sample = match translated.keys.is_empty() {
        true => None,
        false => {
            let rows = |documents: u64| (documents / 100).clamp(SAMPLE_ROWS_MIN, SAMPLE_ROWS_MAX);
            let Some(sample) = over_sample(aggregate.input(), &rows)? else {
                return Ok(None);
            };
            let keys = aggregate.group_expr().input_exprs();
            let files = config.file_groups.iter().flat_map(|g| g.files());
            let costs = GroupCosts {
                scan_bytes: files.map(|f| f.object_meta.size).sum(),
                connections: config.file_groups.len(),
                link_bytes_per_s,
            };
            Some(GroupSample::new(sample, keys, costs))
        }
    };
    let pushed = PushedAggregation {
        request: translated.request,
        keys: translated.keys,
        states: translated.states,
        sample,
        client,
        objects,
    };
    let partial = replace_children_if_necessary(Arc::clone(node), vec![input])?;
    Ok(Some(Arc::new(SelectAggregationExec::new(
        partial,
        Arc::new(pushed),
    ))))
}

/// What the store computes of an aggregation.
struct Translated {
    request: SelectAggregate,
    keys: Vec<(Scalar, DataType)>,
    states: Vec<State>,
}

/// The store's request, keys and states of `aggregate` over `source`'s scan, when every
/// part is exact.
fn translate(aggregate: &AggregateExec, source: &NdjsonSource) -> Option<Translated> {
    let input = aggregate.input();
    let schema = aggregate.schema();
    let projection = FileSource::projection(source)?;
    let mut conditions: Vec<Condition> = Vec::new();
    conjuncts(source.exact_document_condition()?, &mut conditions);
    for predicate in filters_to_scan(input)? {
        let exact = condition(&predicate, projection, Fit::Exact)?;
        conjuncts(Some(exact), &mut conditions);
    }
    let at_table = |expr: &Arc<dyn PhysicalExpr>| {
        let at_scan = to_scan(input, expr)?;
        substitute(&at_scan, &|c| {
            Some(Arc::clone(&projection.iter().nth(c.index())?.expr))
        })
    };
    let mut integer_paths = Vec::new();
    let mut keys = Vec::new();
    for (i, expr) in aggregate.group_expr().input_exprs().iter().enumerate() {
        let typed = typed(&at_table(expr)?)?;
        let data_type = schema.field(i).data_type().clone();
        let fits = match typed.kind {
            Kind::Text | Kind::Strings => matches!(data_type, DataType::Utf8View | DataType::Utf8),
            Kind::Integer => data_type == DataType::Int64,
            Kind::Double => false,
        };
        if !fits {
            return None;
        }
        integer_paths.extend(typed.integer_paths);
        keys.push((typed.scalar, data_type));
    }
    let mut aggregates = Aggregates::default();
    let mut states = Vec::new();
    for function in aggregate.aggr_expr() {
        let counts = function.fun().name().eq_ignore_ascii_case("count");
        let arg = |e: Arc<dyn PhysicalExpr>| match counts {
            true => literal_count(&e).or_else(|| typed(&e)),
            false => typed(&e),
        };
        let args: Vec<Typed> = function
            .expressions()
            .iter()
            .map(|e| at_table(e).and_then(arg))
            .collect::<Option<_>>()?;
        for arg in &args {
            integer_paths.extend(arg.integer_paths.iter().cloned());
        }
        states.extend(function_states(function, &args, &mut aggregates)?);
    }
    let fits = states_fit(&states, schema.fields().iter().skip(keys.len()));
    if !fits || aggregates.0.is_empty() || aggregates.0.len() > FIELDS_MAX {
        return None;
    }
    let condition = request_condition(conditions, &aggregates, integer_paths);
    Some(Translated {
        request: SelectAggregate {
            aggregates: aggregates.0,
            condition,
        },
        keys,
        states,
    })
}

/// Whether `states` are, in order, the partial aggregation's state columns `fields`.
fn states_fit<'a>(states: &[State], fields: impl ExactSizeIterator<Item = &'a FieldRef>) -> bool {
    states.len() == fields.len()
        && states
            .iter()
            .zip(fields)
            .all(|(state, field)| match (state, field.data_type()) {
                (State::Count { .. }, DataType::Int64 | DataType::UInt64) => true,
                // DataFusion sums integers as 38-digit decimals; the store's exact
                // integer sum is one.
                (
                    State::Sum {
                        data_type: DataType::Int64,
                        ..
                    },
                    DataType::Decimal128(_, 0),
                ) => true,
                (state, data_type) => state.data_type() == *data_type,
            })
}

/// The condition of a request computing `aggregates` over the documents the filters'
/// exact `conditions` keep, with the guards of the paths read as integers.
///
/// MinIO's `SUM`, `MIN` and `MAX` fail on a missing value (and its `COUNT` counts one),
/// so over sparse documents every request would fail. A document where a path every
/// aggregate reads is missing or null changes no aggregate, though: such a read is NULL
/// (as is arithmetic over it), and SQL's aggregates skip NULLs. So those documents are
/// left out (`IS NOT NULL`, exactly so with the guard that fails the request on a value
/// of another type, which the read has as NULL too).
fn request_condition(
    mut conditions: Vec<Condition>,
    aggregates: &Aggregates,
    mut integer_paths: Vec<Vec<PathElem>>,
) -> Option<Condition> {
    let read = aggregates.read_by_all();
    conditions.extend(read.iter().cloned().map(Condition::NotNull));
    // The store stops at the first conjunct that is false: those that cannot fail go
    // first, so a document another filter leaves out (of another TPC-H table, say, or
    // without a value to aggregate) never reaches a comparison its missing value would
    // fail. The guards go last: a value the filters leave out need not be read.
    conditions.sort_by_key(|c| !c.is_robust());
    integer_paths.sort();
    integer_paths.dedup();
    let numbers: Vec<Vec<PathElem>> = read
        .into_iter()
        .filter(|p| !integer_paths.contains(p))
        .collect();
    conditions.extend(integer_paths.into_iter().map(Condition::IntegerGuard));
    conditions.extend(numbers.into_iter().map(Condition::NumberGuard));
    match conditions.len() {
        0 => None,
        1 => conditions.pop(),
        _ => Some(Condition::And(conditions)),
    }
}

/// The conjuncts of `condition` appended to `out`; `None` holds none.
fn conjuncts(condition: Option<Condition>, out: &mut Vec<Condition>) {
    match condition {
        Some(Condition::And(parts)) => parts.into_iter().for_each(|p| conjuncts(Some(p), out)),
        Some(other) => out.push(other),
        None => {}
    }
}

/// The store's aggregates of a request, each once.
#[derive(Default)]
struct Aggregates(Vec<Aggregate>);

impl Aggregates {
    /// The paths read by every aggregate, each once: none when one is `COUNT(*)` or
    /// reads no path.
    fn read_by_all(&self) -> Vec<Vec<PathElem>> {
        fn paths(aggregate: &Aggregate) -> Vec<&[PathElem]> {
            match aggregate {
                Aggregate::CountAll => Vec::new(),
                Aggregate::Count(x) | Aggregate::Sum(x) | Aggregate::Min(x) | Aggregate::Max(x) => {
                    x.paths()
                }
            }
        }
        let Some((first, rest)) = self.0.split_first() else {
            return Vec::new();
        };
        let mut read: Vec<Vec<PathElem>> = paths(first).into_iter().map(<[_]>::to_vec).collect();
        read.sort();
        read.dedup();
        read.retain(|p| rest.iter().all(|a| paths(a).contains(&p.as_slice())));
        read
    }

    /// The field of `aggregate`, added if new.
    fn field(&mut self, aggregate: Aggregate) -> usize {
        match self.0.iter().position(|a| *a == aggregate) {
            Some(i) => i,
            None => {
                self.0.push(aggregate);
                self.0.len() - 1
            }
        }
    }
}

/// The partial states of `function` over `args`, from aggregates added to `aggregates`.
fn function_states(
    function: &AggregateFunctionExpr,
    args: &[Typed],
    aggregates: &mut Aggregates,
) -> Option<Vec<State>> {
    if function.is_distinct() || !function.order_bys().is_empty() {
        return None;
    }
    let name = function.fun().name().to_ascii_lowercase();
    let [arg] = args else {
        return None;
    };
    let x = || arg.scalar.clone();
    let number = matches!(arg.kind, Kind::Double | Kind::Integer);
    Some(match (name.as_str(), arg.kind) {
        ("count", _) if arg.scalar == Scalar::Integer(1) && arg.integer_paths.is_empty() => {
            vec![State::Count {
                count: aggregates.field(Aggregate::CountAll),
            }]
        }
        ("count", _) if number => {
            // The store counts values of every type, and missing ones (so a text's count
            // is not sent); its sum fails on any but numbers, missing ones included.
            aggregates.field(Aggregate::Sum(x()));
            vec![State::Count {
                count: aggregates.field(Aggregate::Count(x())),
            }]
        }
        ("sum", Kind::Double) => vec![sum(x(), None, aggregates)],
        ("sum", Kind::Integer) => {
            let bounds = (
                aggregates.field(Aggregate::Min(x())),
                aggregates.field(Aggregate::Max(x())),
            );
            vec![sum(x(), Some(bounds), aggregates)]
        }
        ("min" | "max", _) if number => {
            let value = match name.as_str() {
                "min" => aggregates.field(Aggregate::Min(x())),
                _ => aggregates.field(Aggregate::Max(x())),
            };
            let data_type = match arg.kind {
                Kind::Integer => DataType::Int64,
                _ => DataType::Float64,
            };
            vec![State::Extreme { value, data_type }]
        }
        ("avg", Kind::Double) => vec![
            State::Count {
                count: aggregates.field(Aggregate::Count(x())),
            },
            sum(x(), None, aggregates),
        ],
        _ => return None,
    })
}

/// The sum state of `x`: a double, or an integer (`bounds`: its extremes' fields).
fn sum(x: Scalar, bounds: Option<(usize, usize)>, aggregates: &mut Aggregates) -> State {
    State::Sum {
        sum: aggregates.field(Aggregate::Sum(x.clone())),
        count: aggregates.field(Aggregate::Count(x)),
        data_type: match bounds {
            Some(_) => DataType::Int64,
            None => DataType::Float64,
        },
        bounds,
    }
}

/// `COUNT(*)`'s argument, a constant that is never NULL.
fn literal_count(expr: &Arc<dyn PhysicalExpr>) -> Option<Typed> {
    let literal = expr.downcast_ref::<Literal>()?;
    (!literal.value().is_null()).then(|| Typed {
        scalar: Scalar::Integer(1),
        kind: Kind::Integer,
        integer_paths: Vec::new(),
    })
}

/// What the store computes for `expr` (over the table's columns, the document first).
fn typed(expr: &Arc<dyn PhysicalExpr>) -> Option<Typed> {
    let field = |path: Vec<PathElem>, kind: Kind| {
        let integer_paths = match kind {
            Kind::Integer => vec![path.clone()],
            _ => Vec::new(),
        };
        is_pushable_path(&path).then_some(Typed {
            scalar: Scalar::Field(path),
            kind,
            integer_paths,
        })
    };
    if let Some((path, output)) = pushable_access(expr) {
        let kind = match output {
            Output::Float => Kind::Double,
            Output::Int => Kind::Integer,
            Output::Text => Kind::Text,
            Output::Str => Kind::Strings,
            _ => return None,
        };
        return field(path, kind);
    }
    if let Some((operand, to, _)) = cast_parts(expr) {
        let mut read = typed(operand)?;
        read.kind = match (read.kind, to) {
            (Kind::Double | Kind::Integer | Kind::Text, DataType::Float64) => Kind::Double,
            (Kind::Integer, DataType::Int64 | DataType::Decimal128(_, 0)) => Kind::Integer,
            (Kind::Text, DataType::Int64) => {
                let Scalar::Field(path) = &read.scalar else {
                    return None;
                };
                read.integer_paths.push(path.clone());
                Kind::Integer
            }
            _ => return None,
        };
        return Some(read);
    }
    if let Some(literal) = expr.downcast_ref::<Literal>() {
        return constant(literal.value());
    }
    arithmetic(expr.downcast_ref::<BinaryExpr>()?)
}

fn constant(value: &ScalarValue) -> Option<Typed> {
    let (scalar, kind) = match value {
        ScalarValue::Float64(Some(v)) if v.is_finite() && v.abs() <= NUMBER_MAGNITUDE_MAX => {
            (Scalar::Number(*v), Kind::Double)
        }
        ScalarValue::Int64(Some(v)) => (Scalar::Integer(*v), Kind::Integer),
        _ => return None,
    };
    Some(Typed {
        scalar,
        kind,
        integer_paths: Vec::new(),
    })
}

/// `+`, `-`, `*` of doubles (reads converted first), or an integer read `%` a positive
/// constant.
fn arithmetic(binary: &BinaryExpr) -> Option<Typed> {
    let (left, right) = (typed(binary.left())?, typed(binary.right())?);
    let op = match binary.op() {
        Operator::Plus => Arith::Add,
        Operator::Minus => Arith::Subtract,
        Operator::Multiply => Arith::Multiply,
        Operator::Modulo => Arith::Modulo,
        _ => return None,
    };
    let mut integer_paths = left.integer_paths.clone();
    integer_paths.extend(right.integer_paths.iter().cloned());
    let kind = match (op, left.kind, right.kind, &left.scalar, &right.scalar) {
        (Arith::Modulo, Kind::Integer, Kind::Integer, Scalar::Field(_), Scalar::Integer(c))
            if *c > 0 =>
        {
            Kind::Integer
        }
        (Arith::Modulo, ..) => return None,
        (_, Kind::Double, Kind::Double, ..) => Kind::Double,
        _ => return None,
    };
    let operand = |t: Typed| match (kind, t.scalar) {
        (Kind::Double, Scalar::Field(path)) => Scalar::Double(path),
        (_, scalar) => scalar,
    };
    Some(Typed {
        scalar: Scalar::Arith(Box::new(operand(left)), op, Box::new(operand(right))),
        kind,
        integer_paths,
    })
}

/// The predicates of the filters between `plan` and its scan, over the scan's output;
/// `None` when something else is between them.
fn filters_to_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<Vec<Arc<dyn PhysicalExpr>>> {
    if ndjson_scan(plan).is_some() {
        return Some(Vec::new());
    }
    let input = chain_input(plan)?;
    let mut predicates = filters_to_scan(input)?;
    if let Some(filter) = plan.downcast_ref::<FilterExec>() {
        predicates.push(to_scan(input, filter.predicate())?);
    }
    Some(predicates)
}

/// The input of `plan` when it is a projection or a filter.
fn chain_input(plan: &Arc<dyn ExecutionPlan>) -> Option<&Arc<dyn ExecutionPlan>> {
    let passes = plan.downcast_ref::<ProjectionExec>().is_some()
        || plan.downcast_ref::<FilterExec>().is_some();
    passes.then(|| plan.children().first().copied()).flatten()
}

/// `expr` over `plan`'s output as an expression over its scan's output.
fn to_scan(
    plan: &Arc<dyn ExecutionPlan>,
    expr: &Arc<dyn PhysicalExpr>,
) -> Option<Arc<dyn PhysicalExpr>> {
    if ndjson_scan(plan).is_some() {
        return Some(Arc::clone(expr));
    }
    let input = chain_input(plan)?;
    let below = if let Some(projection) = plan.downcast_ref::<ProjectionExec>() {
        substitute(expr, &|c| {
            Some(Arc::clone(&projection.expr().get(c.index())?.expr))
        })?
    } else if let Some(kept) = plan
        .downcast_ref::<FilterExec>()
        .and_then(|f| f.projection().as_ref())
    {
        let schema = input.schema();
        substitute(expr, &|c| {
            let index = *kept.get(c.index())?;
            let name = schema.field(index).name();
            Some(Arc::new(Column::new(name, index)) as Arc<dyn PhysicalExpr>)
        })?
    } else {
        Arc::clone(expr)
    };
    to_scan(input, &below)
}

/// `expr` with each column replaced as `by` says; `None` when it has no replacement.
fn substitute(
    expr: &Arc<dyn PhysicalExpr>,
    by: &dyn Fn(&Column) -> Option<Arc<dyn PhysicalExpr>>,
) -> Option<Arc<dyn PhysicalExpr>> {
    let mut complete = true;
    let replaced = Arc::clone(expr)
        .transform_up(|e| match e.downcast_ref::<Column>() {
            Some(column) => match by(column) {
                Some(replacement) => Ok(Transformed::yes(replacement)),
                None => {
                    complete = false;
                    Ok(Transformed::no(e))
                }
            },
            None => Ok(Transformed::no(e)),
        })
        .ok()?
        .data;
    complete.then_some(replaced)
}

#[cfg(test)]
mod tests {
    use tessera_pushdown::select_sql::Ordering;

    use super::*;

    fn key(k: &str) -> Vec<PathElem> {
        vec![PathElem::Key(k.into())]
    }

    fn filter() -> Condition {
        Condition::NumberExact {
            path: key("q"),
            ordering: Ordering::Less,
            value: 3.0,
        }
    }

    #[test]
    fn documents_without_the_value_every_aggregate_reads_are_left_out_before_the_filters() {
        let p = || Scalar::Field(key("p"));
        let aggregates = Aggregates(vec![
            Aggregate::Sum(p()),
            Aggregate::Count(p()),
            Aggregate::Max(p()),
        ]);
        let condition = request_condition(vec![filter()], &aggregates, Vec::new());
        assert_eq!(
            condition,
            Some(Condition::And(vec![
                Condition::NotNull(key("p")),
                filter(),
                Condition::NumberGuard(key("p")),
            ]))
        );
        // Read as integers: their guard, which fails on a double too (NULL to the read).
        let condition = request_condition(Vec::new(), &aggregates, vec![key("p"), key("p")]);
        assert_eq!(
            condition,
            Some(Condition::And(vec![
                Condition::NotNull(key("p")),
                Condition::IntegerGuard(key("p")),
            ]))
        );
    }

    #[test]
    fn only_the_paths_every_aggregate_reads_leave_documents_out() {
        let double = |k: &str| Box::new(Scalar::Double(key(k)));
        let revenue = Scalar::Arith(double("p"), Arith::Multiply, double("d"));
        let both = Aggregates(vec![
            Aggregate::Sum(revenue.clone()),
            Aggregate::Count(revenue.clone()),
        ]);
        assert_eq!(both.read_by_all(), vec![key("d"), key("p")]);
        let one = Aggregates(vec![
            Aggregate::Sum(revenue),
            Aggregate::Min(Scalar::Field(key("p"))),
        ]);
        assert_eq!(one.read_by_all(), vec![key("p")]);
        let counted = Aggregates(vec![
            Aggregate::CountAll,
            Aggregate::Sum(Scalar::Field(key("p"))),
        ]);
        assert_eq!(
            request_condition(vec![filter()], &counted, Vec::new()),
            Some(filter())
        );
        let constant = Aggregates(vec![Aggregate::Sum(Scalar::Number(2.5))]);
        assert!(constant.read_by_all().is_empty());
    }
}
