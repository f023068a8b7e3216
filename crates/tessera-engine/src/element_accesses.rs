//! Logical optimizer rule: what a query reads of the values of a lateral `json_each`'s
//! rows is computed below its UNNEST, as one list per document and access
//! ([`JsonEachValues`]), and the UNNEST repeats those lists instead of whole rows.
//!
//! `FROM t, json_each(t.j, '$.commits') AS e GROUP BY e.value->'author'->>'name'` plans
//! as an UNNEST of the entries (key, value text, type, paths) of each document, and an
//! access parsing each row's value text above it. When the UNNEST's rows are read only
//! through such accesses (or not at all, as by `count(*)`), each access becomes a list
//! computed where the entries were, which the scan then computes itself: the NDJSON
//! reader from the array's text, a table from the typed columns of a path it shreds as
//! a list of objects, with no value written as text (JSON Tiles, SIGMOD 2021, §4.3: the
//! elements of a long array are read like a relation of their own). Several accesses
//! become the fields of one list, found in one pass over each value's text, or read
//! from as many typed columns of a table's list.
//!
//! `SELECT unnest(CAST(x AS JSON[])) AS u ... u->>'k'` is read the same way: the UNNEST
//! of the elements becomes the UNNEST of one access to them.
//!
//! So is a filter over the elements, `WHERE EXISTS (SELECT 1 FROM json_each(t.j,
//! '$.tags') AS e WHERE e.value->>'$' = 'rust')` (the JSON Tiles paper's "tweets that
//! mention X"), which `json_each_subquery` plans as `array_any_match` over the rows: an
//! analyzer rule ([`ElementAccessesInLambdas`]) makes the lambda read the list of its
//! accesses instead of the rows.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{
    Column, DFSchema, ExprSchema, NullHandling, Result, ScalarValue, UnnestOptions,
};
use datafusion::logical_expr::expr::{HigherOrderFunction, Lambda, LambdaVariable, ScalarFunction};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    Aggregate, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Projection, ScalarUDF, Unnest,
};
use datafusion::optimizer::{AnalyzerRule, ApplyOrder, OptimizerConfig, OptimizerRule};

use crate::functions::access_output;
use crate::functions::json_each::{
    JSON_LIST, JsonEachValues, JsonEntries, ReadColumns, Rows, ValueReads, Walk, field_name,
};
use crate::functions::json_path::root_text_access;
use crate::json::Output;
use crate::json_each_rewrite::value_at_path;
use datafusion::functions::core::expr_fn::get_field;

/// Name prefix of the lists this rule unnests.
const ELEMENT_PREFIX: &str = "__tessera_element";

/// See the module documentation.
#[derive(Debug, Default)]
pub struct ElementAccesses;

impl OptimizerRule for ElementAccesses {
    fn name(&self) -> &str {
        "tessera_element_accesses"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let names = || config.alias_generator().next(ELEMENT_PREFIX);
        let rewritten = match &plan {
            LogicalPlan::Projection(projection) => match projection.input.as_ref() {
                LogicalPlan::Unnest(unnest) => over_projection(projection, unnest, names)?,
                _ => None,
            },
            LogicalPlan::Aggregate(aggregate) => match aggregate.input.as_ref() {
                LogicalPlan::Unnest(unnest) => over_aggregate(aggregate, unnest, names)?,
                _ => None,
            },
            _ => None,
        };
        Ok(match rewritten {
            Some(plan) => Transformed::yes(plan),
            None => Transformed::no(plan),
        })
    }
}

/// What an UNNEST unnests, when it is the rows of one value per document: the entries
/// of a lateral `json_each`/`json_tree` (one list of [`JsonEntries`] rows), or the
/// elements of `CAST(x AS JSON[])`.
enum Source {
    /// The entries column below the UNNEST; each row's value is its `value` field.
    Entries(Column),
    /// The entries a lambda's parameter stands for, one at a time; each row's value is
    /// its `value` field.
    Lambda,
    /// `CAST(x AS JSON[])` computed below the UNNEST: the projection computing it, the
    /// list's column there, `x`, and whether a value that is no array has no rows.
    Cast {
        below: Arc<Projection>,
        list: Column,
        value: Expr,
        try_cast: bool,
    },
}

impl Source {
    /// The source of `unnest` (one list, one level deep, no recursion), if it is one.
    fn of(unnest: &Unnest) -> Option<(Self, Column)> {
        let [column] = unnest.exec_columns.as_slice() else {
            return None;
        };
        let [(_, list)] = unnest.list_type_columns.as_slice() else {
            return None;
        };
        if list.depth != 1 || !unnest.struct_type_columns.is_empty() {
            return None;
        }
        // SQL's `unnest(x)` names its one level as a recursion of depth 1.
        if unnest.options.recursions.iter().any(|r| r.depth != 1) {
            return None;
        }
        let field = unnest.input.schema().field_from_column(column).ok()?;
        let source = if *field.data_type() == JsonEntries::list_type() {
            Self::Entries(column.clone())
        } else {
            Self::cast(unnest, column)?
        };
        Some((source, list.output_column.clone()))
    }

    /// The `CAST(x AS JSON[])` of text `x` that `unnest` drops the empty lists of.
    fn cast(unnest: &Unnest, column: &Column) -> Option<Self> {
        if unnest.options.null_handling != NullHandling::Drop {
            return None;
        }
        let LogicalPlan::Projection(below) = unnest.input.as_ref() else {
            return None;
        };
        let at = below.schema.index_of_column(column).ok()?;
        let Expr::ScalarFunction(f) = below.expr[at].clone().unalias_nested().data else {
            return None;
        };
        let [
            value,
            Expr::Literal(ScalarValue::Boolean(Some(try_cast)), _),
            _,
        ] = f.args.as_slice()
        else {
            return None;
        };
        let value_type = value.get_type(below.input.schema()).ok()?;
        let text = matches!(
            value_type,
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
        );
        (f.func.name() == JSON_LIST && text).then(|| Self::Cast {
            below: Arc::new(below.clone()),
            list: column.clone(),
            value: value.clone(),
            try_cast: *try_cast,
        })
    }

    fn rows_of(&self) -> Rows {
        match self {
            Self::Entries(_) | Self::Lambda => Rows::Each,
            Self::Cast { try_cast, .. } => Rows::Cast {
                try_cast: *try_cast,
            },
        }
    }
}

/// One access to the rows' values: its output (`None`: rows alone) and path arguments.
type Access = (Option<Output>, Vec<Expr>);

/// What stands for one row in the expressions read: a column of an UNNEST's output, or
/// a lambda's parameter.
enum RowsRef {
    Column(Column),
    Variable(String),
}

impl RowsRef {
    fn is(&self, expr: &Expr) -> bool {
        match (self, expr) {
            (Self::Column(c), Expr::Column(d)) => c == d,
            (Self::Variable(v), Expr::LambdaVariable(w)) => *v == w.name,
            _ => false,
        }
    }

    /// Whether `expr` reads the rows anywhere.
    fn read_by(&self, expr: &Expr) -> bool {
        expr.exists(|e| Ok(self.is(e))).unwrap_or(true)
    }
}

/// The accesses found above one UNNEST (or in one lambda's body) and the names of
/// their lists (or fields).
struct Found<F> {
    source: Source,
    /// What the accesses read.
    rows: RowsRef,
    accesses: Vec<(Access, String)>,
    names: F,
}

impl<F: FnMut() -> String> Found<F> {
    /// Nothing found yet above `unnest`, when it unnests the rows of one value per
    /// document.
    fn above(unnest: &Unnest, names: F) -> Option<Self> {
        let (source, rows) = Source::of(unnest)?;
        Some(Self {
            source,
            rows: RowsRef::Column(rows),
            accesses: Vec::new(),
            names,
        })
    }

    /// `expr` with every access to the rows' values replaced by what reads its list
    /// (`read`, given the list's name); `None` when `expr` still reads the rows otherwise
    /// (their key, type, paths, or a cast's element itself, which may be SQL NULL).
    fn replace(&mut self, expr: Expr, read: impl Fn(String) -> Expr) -> Result<Option<Expr>> {
        let mut reads_rows = false;
        let replaced = expr
            .transform_down(|e| {
                let Some(access) = self.value_access(&e) else {
                    reads_rows |= self.rows.is(&e);
                    return Ok(Transformed::no(e));
                };
                let name = self.name_of(access);
                Ok(Transformed::new(read(name), true, TreeNodeRecursion::Jump))
            })?
            .data;
        Ok((!reads_rows).then_some(replaced))
    }

    /// `expr` with every access to the rows' values replaced by its list's column.
    fn replace_by_columns(&mut self, expr: Expr) -> Result<Option<Expr>> {
        self.replace(expr, |name| Expr::Column(Column::new_unqualified(name)))
    }

    /// `access(value, path...)` for a JSON access function with a constant path, or the
    /// value itself (its JSON text) of a `json_each` row, where `value` is a row's value.
    fn value_access(&self, expr: &Expr) -> Option<Access> {
        let entries = matches!(self.source, Source::Entries(_) | Source::Lambda);
        if entries && self.is_value(expr) {
            return Some((Some(Output::Json), Vec::new()));
        }
        let Expr::ScalarFunction(f) = expr else {
            return None;
        };
        if let Some(value) = root_text_access(f) {
            return (entries && self.is_value(value)).then(|| (Some(Output::Text), Vec::new()));
        }
        let output = access_output(&f.func)?;
        let (value, path) = f.args.split_first()?;
        let constant = path.iter().all(|a| {
            matches!(
                a,
                Expr::Literal(ScalarValue::Utf8(Some(_)) | ScalarValue::Int64(Some(_)), _)
            )
        });
        // A cast's `null` element is SQL NULL, which an access with a path reads as it
        // reads JSON `null`, and an access without one does not.
        let reads = constant && (entries || !path.is_empty());
        (reads && self.is_value(value)).then(|| (Some(output), path.to_vec()))
    }

    /// Whether `expr` is a row's value: `get_field(entries, 'value')`, or the unnested
    /// element of a cast.
    fn is_value(&self, expr: &Expr) -> bool {
        if let Expr::Alias(alias) = expr {
            return self.is_value(&alias.expr);
        }
        if let Source::Cast { .. } = self.source {
            return self.rows.is(expr);
        }
        let Expr::ScalarFunction(f) = expr else {
            return false;
        };
        f.func.name() == "get_field"
            && matches!(f.args.as_slice(), [rows, Expr::Literal(ScalarValue::Utf8(Some(name)), _)]
                if self.rows.is(rows) && name == "value")
    }

    fn name_of(&mut self, access: Access) -> String {
        if let Some((_, name)) = self.accesses.iter().find(|(a, _)| *a == access) {
            return name.clone();
        }
        let name = (self.names)();
        self.accesses.push((access, name.clone()));
        name
    }

    /// `unnest` over the lists of the accesses found (of rows alone when none was)
    /// instead of the source's rows, the other columns passed through.
    fn unnest(mut self, unnest: &Unnest) -> Result<LogicalPlan> {
        if self.accesses.is_empty() {
            let name = (self.names)();
            self.accesses.push(((None, Vec::new()), name));
        }
        let rows_of = self.source.rows_of();
        let (reads, paths) = self.reads();
        let (input, mut below, value) = match self.source {
            Source::Entries(entries) => {
                let passed = passed_columns(unnest.input.schema(), &entries);
                (Arc::clone(&unnest.input), passed, Expr::Column(entries))
            }
            Source::Cast {
                below, list, value, ..
            } => {
                let passed = below
                    .expr
                    .iter()
                    .zip(below.schema.columns())
                    .filter(|(_, c)| *c != list)
                    .map(|(e, _)| e.clone())
                    .collect();
                (Arc::clone(&below.input), passed, value)
            }
            Source::Lambda => unreachable!("a lambda's rows are not unnested"),
        };
        let options = one_level(&unnest.options);
        if let [(_, name)] = self.accesses.as_slice() {
            below.push(values(reads, rows_of, value, paths).alias(name));
            return LogicalPlanBuilder::from(Arc::unwrap_or_clone(input))
                .project(below)?
                .unnest_columns_with_options(vec![Column::from_name(name)], options)?
                .build();
        }
        // Several accesses: one pass over each value finds them all, as the fields of
        // one list, each then named as the access it replaced.
        let list = (self.names)();
        below.push(values(reads, rows_of, value, paths).alias(&list));
        let unnested = LogicalPlanBuilder::from(Arc::unwrap_or_clone(input))
            .project(below)?
            .unnest_columns_with_options(vec![Column::from_name(&list)], options)?
            .build()?;
        let list = Column::from_name(list);
        let mut fields = passed_columns(unnested.schema(), &list);
        for (k, (_, name)) in self.accesses.iter().enumerate() {
            fields.push(get_field(Expr::Column(list.clone()), field_name(k)).alias(name));
        }
        LogicalPlanBuilder::from(unnested).project(fields)?.build()
    }
}

impl<F> Found<F> {
    /// What the lists read of each row's value, and the accesses' path arguments: the
    /// rows alone, one access, or several as the fields of a struct ([`field_name`]).
    fn reads(&self) -> (ValueReads, Vec<Expr>) {
        match self.accesses.as_slice() {
            [] => (ValueReads::Rows, Vec::new()),
            [((output, path), _)] => (
                output.map_or(ValueReads::Rows, ValueReads::One),
                path.clone(),
            ),
            several => {
                let mut reads = Vec::with_capacity(several.len());
                let mut paths = Vec::new();
                for ((output, path), _) in several {
                    let output = output.expect("several accesses each have an output");
                    reads.push((output, path.len()));
                    paths.extend(path.iter().cloned());
                }
                (ValueReads::Fields(reads), paths)
            }
        }
    }
}

/// Analyzer rule, run after type coercion: every `array_any_match(rows, r -> body)`
/// whose rows are `json_each`'s rows of a value and whose body reads them only through
/// accesses to their values reads the list of those accesses instead (see
/// [`over_lambda`]). It runs before the optimizer, whose rules would otherwise move the
/// rows' list into a projection of its own, out of reach of the scan's extraction.
#[derive(Debug, Default)]
pub struct ElementAccessesInLambdas;

impl AnalyzerRule for ElementAccessesInLambdas {
    fn name(&self) -> &str {
        "tessera_element_accesses_in_lambdas"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|plan| {
            let schema = match plan.inputs().as_slice() {
                [input] => Arc::clone(input.schema()),
                _ => return Ok(Transformed::no(plan)),
            };
            let preserver = NamePreserver::new(&plan);
            plan.map_expressions(|e| {
                let name = preserver.save(&e);
                Ok(over_lambda(e, &schema)?.update_data(|e| name.restore(e)))
            })
        })
        .map(|t| t.data)
    }
}

/// Every `array_any_match(rows, r -> body)` in `expr` (over `schema`) whose rows are
/// `json_each`'s rows of a value and whose body reads them only through accesses to
/// their values (an `EXISTS` or `IN` over `json_each`, which
/// [`crate::json_each_subquery`] turns into one), over the list of those accesses
/// instead ([`JsonEachValues`]), which the scan reads as it reads a lateral
/// `json_each`'s: from typed columns, with no row written as text.
fn over_lambda(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    expr.transform_up(|e| match any_match_over_values(&e, schema)? {
        Some(rewritten) => Ok(Transformed::yes(rewritten)),
        None => Ok(Transformed::no(e)),
    })
}

/// `expr` over the values' accesses, if it is an `array_any_match` [`over_lambda`]
/// rewrites.
fn any_match_over_values(expr: &Expr, schema: &DFSchema) -> Result<Option<Expr>> {
    let Expr::HigherOrderFunction(f) = expr else {
        return Ok(None);
    };
    let [rows, Expr::Lambda(lambda)] = f.args.as_slice() else {
        return Ok(None);
    };
    let [param] = lambda.params.as_slice() else {
        return Ok(None);
    };
    let shadowed = lambda
        .body
        .exists(|e| Ok(matches!(e, Expr::Lambda(inner) if inner.params.contains(param))))?;
    let Some(walked) = walked_value(rows)? else {
        return Ok(None);
    };
    if f.name() != "array_any_match" || shadowed {
        return Ok(None);
    }
    let mut next = 0;
    let mut found = Found {
        source: Source::Lambda,
        rows: RowsRef::Variable(param.clone()),
        accesses: Vec::new(),
        names: || {
            next += 1;
            field_name(next - 1)
        },
    };
    let variable = || Expr::LambdaVariable(LambdaVariable::new(param.clone(), None));
    let Some(mut body) =
        found.replace((*lambda.body).clone(), |name| get_field(variable(), name))?
    else {
        return Ok(None);
    };
    if let [(_, name)] = found.accesses.as_slice() {
        // One access: its list holds the values themselves, not structs of them.
        let field = get_field(variable(), name.as_str());
        body = body
            .transform(|e| match e == field {
                true => Ok(Transformed::yes(variable())),
                false => Ok(Transformed::no(e)),
            })?
            .data;
    }
    let (reads, paths) = found.reads();
    let list = values(reads, Rows::Each, walked, paths);
    let call = Expr::HigherOrderFunction(HigherOrderFunction::new(
        Arc::clone(&f.func),
        vec![list, Expr::Lambda(Lambda::new(vec![param.clone()], body))],
    ));
    Ok(Some(call.resolve_lambda_variables(schema)?.data))
}

/// The JSON text `json_each` walks, when `rows` is a call of `json_each`'s entries over
/// a document or over the value at a constant path of a document.
fn walked_value(rows: &Expr) -> Result<Option<Expr>> {
    let Expr::ScalarFunction(f) = rows else {
        return Ok(None);
    };
    let each = f
        .func
        .inner()
        .downcast_ref::<JsonEntries>()
        .is_some_and(|e| e.walk() == Walk::Each && !e.walks_value());
    if !each {
        return Ok(None);
    }
    Ok(match f.args.as_slice() {
        [document] => Some(document.clone()),
        args => {
            value_at_path(args, ReadColumns::of(["value"]))?.map(|mut args| args.swap_remove(0))
        }
    })
}

/// [`JsonEachValues`] reading `reads` of the `rows_of` `value`, with `paths`.
fn values(reads: ValueReads, rows_of: Rows, value: Expr, paths: Vec<Expr>) -> Expr {
    let function = Arc::new(ScalarUDF::from(JsonEachValues::reading(reads, rows_of)));
    let mut args = vec![value];
    args.extend(paths);
    Expr::ScalarFunction(ScalarFunction::new_udf(function, args))
}

/// `options` unnesting each list one level, under the names of the lists.
fn one_level(options: &UnnestOptions) -> UnnestOptions {
    UnnestOptions {
        null_handling: options.null_handling,
        recursions: Vec::new(),
    }
}

/// The columns of `schema` but `entries`.
fn passed_columns(schema: &DFSchema, entries: &Column) -> Vec<Expr> {
    schema
        .columns()
        .into_iter()
        .filter(|c| c != entries)
        .map(Expr::Column)
        .collect()
}

fn over_projection(
    projection: &Projection,
    unnest: &Unnest,
    names: impl FnMut() -> String,
) -> Result<Option<LogicalPlan>> {
    let Some(mut found) = Found::above(unnest, names) else {
        return Ok(None);
    };
    let preserver = NamePreserver::new_for_projection();
    let mut exprs = Vec::with_capacity(projection.expr.len());
    for expr in &projection.expr {
        let name = preserver.save(expr);
        let Some(replaced) = found.replace_by_columns(expr.clone())? else {
            return Ok(None);
        };
        exprs.push(name.restore(replaced));
    }
    let input = found.unnest(unnest)?;
    let projection = Projection::try_new(exprs, Arc::new(input))?;
    Ok(Some(LogicalPlan::Projection(projection)))
}

/// An aggregate reading nothing of the rows (`count(*)`) needs them counted only.
fn over_aggregate(
    aggregate: &Aggregate,
    unnest: &Unnest,
    names: impl FnMut() -> String,
) -> Result<Option<LogicalPlan>> {
    let Some(found) = Found::above(unnest, names) else {
        return Ok(None);
    };
    let reads_rows = aggregate
        .group_expr
        .iter()
        .chain(&aggregate.aggr_expr)
        .any(|e| found.rows.read_by(e));
    if reads_rows {
        return Ok(None);
    }
    let input = found.unnest(unnest)?;
    let aggregate = Aggregate::try_new(
        Arc::new(input),
        aggregate.group_expr.clone(),
        aggregate.aggr_expr.clone(),
    )?;
    Ok(Some(LogicalPlan::Aggregate(aggregate)))
}
