//! Casts to and from DuckDB's `UNION(tag T, ...)` (the type: `json::union_type`) and
//! `union_value`. They follow DuckDB 2.0.0 ([`UnionCasts`], an analyzer rewrite of each cast into
//! the function computing it):
//!
//! - a value of another type becomes the member it casts to implicitly at the lowest
//!   cost (its own type and `JSON` cost nothing; integers widen, see `implicit_cost`);
//!   two members alike are an ambiguity, none an error naming the member types;
//! - a union becomes the union with the same member names, each value cast;
//! - a `NULL` constant is a NULL union. Arrow's unions have no validity of their own, so
//!   in an array a NULL value is the first member holding NULL (DuckDB, too, writes a
//!   NULL text cast to a union as `{"a":null}`);
//! - lists of values become lists of unions item by item.
//!
//! Casts from `JSON` (an object of one member, `{"tag": value}`) are `json_transform`'s;
//! to `JSON` they are `to_json`'s (the same object). `union_value(tag := v)` builds a
//! union of one member; the named argument, which DataFusion keeps for parameter names,
//! is made positional before planning ([`rewrite_statement`]).

use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, new_null_array};
use arrow::compute::{CastOptions, cast_with_options, interleave};
use arrow::datatypes::{DataType, Field, FieldRef, UnionFields, UnionMode};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast;

use super::cast_rewrite::{cast_parts, rewritten_to};
use super::json_build::to_json_array;
use super::json_cast::validate_text;
use super::json_transform::convert_json;
use crate::json::json_type::is_json;
use crate::json::sql_types::duckdb_type_name;
use crate::json::union_type::sparse_union;

/// The cost of a cast of text to `JSON` among a union's members: more than none (a
/// `VARCHAR` member takes text), the only implicit cast text has.
const TEXT_TO_JSON_COST: u32 = 1;

/// Gives casts to unions (and to lists of unions) DuckDB's meaning; see the module
/// documentation.
#[derive(Debug, Default)]
pub struct UnionCasts;

impl FunctionRewrite for UnionCasts {
    fn name(&self) -> &str {
        "union_casts"
    }

    fn rewrite(
        &self,
        expr: Expr,
        schema: &DFSchema,
        _config: &ConfigOptions,
    ) -> Result<Transformed<Expr>> {
        let Some((inner, target, strict)) = cast_parts(&expr) else {
            return Ok(Transformed::no(expr));
        };
        if !holds_union(target.data_type()) {
            return Ok(Transformed::no(expr));
        }
        let inner = integer_literal(inner);
        let (_, source) = inner.to_field(schema)?;
        if is_json(&source) || source.data_type() == target.data_type() {
            return Ok(Transformed::no(expr));
        }
        check_cast(&source, target).map_err(DataFusionError::Plan)?;
        let udf = UnionCast {
            target: Arc::clone(target),
            strict,
            signature: Signature::any(1, Volatility::Immutable),
        };
        Ok(rewritten_to(udf, vec![inner]))
    }
}

/// `expr`, an integer literal typed as DuckDB types it: `INTEGER` when it fits (SQL
/// planning makes every integer literal `BIGINT`), so that `1::UNION(a INTEGER, ...)`
/// finds its member.
fn integer_literal(expr: &Expr) -> Expr {
    match expr {
        Expr::Literal(ScalarValue::Int64(Some(v)), metadata) if let Ok(v) = i32::try_from(*v) => {
            Expr::Literal(ScalarValue::Int32(Some(v)), metadata.clone())
        }
        other => other.clone(),
    }
}

/// Whether `data_type` is a union or a list (of lists) of unions, as SQL types plan.
fn holds_union(data_type: &DataType) -> bool {
    match data_type {
        DataType::Union(..) => true,
        DataType::List(item) => holds_union(item.data_type()),
        _ => false,
    }
}

/// Whether a cast from `from` to `to` is one [`cast_value`] computes: the error DuckDB
/// gives otherwise, at planning.
fn check_cast(from: &Field, to: &Field) -> std::result::Result<(), String> {
    match (from.data_type(), to.data_type()) {
        (DataType::Null, _) => Ok(()),
        (
            DataType::List(a) | DataType::LargeList(a) | DataType::FixedSizeList(a, _),
            DataType::List(b) | DataType::LargeList(b) | DataType::FixedSizeList(b, _),
        ) => check_cast(a, b),
        (DataType::Union(source, _), DataType::Union(members, _)) => source
            .iter()
            .try_for_each(|(_, f)| member_named(members, f.name(), from, to).map(|_| ())),
        (_, DataType::Union(members, _)) => member_for(from, members, to).map(|_| ()),
        _ => Ok(()),
    }
}

/// The member of `members` named `name` (exactly, else ignoring case, as DuckDB's
/// identifiers are), for a cast of the union `from` to the union `to`.
fn member_named(
    members: &UnionFields,
    name: &str,
    from: &Field,
    to: &Field,
) -> std::result::Result<i8, String> {
    members
        .iter()
        .find(|(_, m)| m.name() == name)
        .or_else(|| members.iter().find(|(_, m)| m.name().eq_ignore_ascii_case(name)))
        .map(|(id, _)| id)
        .ok_or_else(|| {
            format!(
                "Type {} can't be cast as {}. The member '\"{name}\"' is not present in target union",
                duckdb_type_name(from),
                duckdb_type_name(to)
            )
        })
}

/// The member a value of `from`'s type becomes in the union `to` (see the module
/// documentation).
fn member_for(from: &Field, members: &UnionFields, to: &Field) -> std::result::Result<i8, String> {
    let costs: Vec<(u32, i8)> = members
        .iter()
        .filter_map(|(id, m)| implicit_cost(from, m).map(|c| (c, id)))
        .collect();
    let best = costs.iter().map(|(c, _)| *c).min();
    let candidates: Vec<i8> = costs
        .into_iter()
        .filter(|(c, _)| Some(*c) == best)
        .map(|(_, id)| id)
        .collect();
    let named = |id: i8| {
        let member = members.iter().find(|(i, _)| *i == id).map(|(_, f)| f);
        member.map_or_else(String::new, |m| {
            format!("'{} ({})'", m.name(), duckdb_type_name(m))
        })
    };
    let (from_name, to_name) = (duckdb_type_name(from), duckdb_type_name(to));
    match candidates.as_slice() {
        [id] => Ok(*id),
        [] => {
            let types: Vec<String> = members.iter().map(|(_, m)| duckdb_type_name(m)).collect();
            Err(format!(
                "Type {from_name} can't be cast as {to_name}. {from_name} can't be implicitly \
                 cast to any of the union member types: {}",
                types.join(", ")
            ))
        }
        many => {
            let names: Vec<String> = many.iter().map(|&id| named(id)).collect();
            Err(format!(
                "Type {from_name} can't be cast as {to_name}. The cast is ambiguous, multiple \
                 possible members in target: {}",
                names.join(", ")
            ))
        }
    }
}

/// Whether `a` and `b` hold the same SQL type (text in any of Arrow's layouts).
fn same_type(a: &Field, b: &Field) -> bool {
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
    is_json(a) == is_json(b)
        && (a.data_type() == b.data_type() || text(a.data_type()) && text(b.data_type()))
}

/// The cost of DuckDB's implicit cast from `from` to `to`, `None` when there is none;
/// 0 for the same type. DuckDB 2.0.0 ranks a cast by its target (as its answers over
/// every pair of members show): `JSON` costs nothing, as the same type does (so the
/// two are an ambiguity), except from text; then `BIGINT`, `INTEGER`, `HUGEINT`,
/// `DOUBLE`, any decimal, the other numbers.
fn implicit_cost(from: &Field, to: &Field) -> Option<u32> {
    if same_type(from, to) {
        return Some(0);
    }
    if is_json(to) {
        return match from.data_type() {
            _ if is_json(from) => None,
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => Some(TEXT_TO_JSON_COST),
            _ => Some(0),
        };
    }
    if !casts_implicitly(from.data_type(), to.data_type()) {
        return None;
    }
    Some(match to.data_type() {
        DataType::Int64 => 101,
        DataType::Int32 => 102,
        // HUGEINT.
        DataType::Decimal128(38, 0) => 103,
        DataType::Float64 => 104,
        DataType::Decimal128(..) => 105,
        _ => 110,
    })
}

/// Whether DuckDB casts `from` to `to` implicitly: integers to wider integers (unsigned
/// to signed too, never signed to unsigned), to decimals and to floats; `FLOAT` to
/// `DOUBLE`.
fn casts_implicitly(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    let wider: &[DataType] = match from {
        Int8 => &[Int16, Int32, Int64],
        Int16 => &[Int32, Int64],
        Int32 => &[Int64],
        UInt8 => &[UInt16, UInt32, UInt64, Int16, Int32, Int64],
        UInt16 => &[UInt32, UInt64, Int32, Int64],
        UInt32 => &[UInt64, Int64],
        Int64 | UInt64 => &[],
        Float32 => return to == &Float64,
        _ => return false,
    };
    wider.contains(to) || matches!(to, Float32 | Float64 | Decimal128(..))
}

/// `array` (of `from`'s type) cast to `to`'s type: unions and lists of them as the module
/// documentation says, values as the session casts them (to and from `JSON` too).
fn cast_value(array: &ArrayRef, from: &Field, to: &Field, strict: bool) -> Result<ArrayRef> {
    if from.data_type() == to.data_type() && is_json(from) == is_json(to) {
        return Ok(Arc::clone(array));
    }
    match to.data_type() {
        DataType::Union(members, _) => return cast_to_union(array, from, to, members, strict),
        DataType::List(item) if holds_union(item.data_type()) => {
            return cast_list(array, from, item, strict);
        }
        _ => {}
    }
    match (is_json(from), is_json(to)) {
        (false, true) if matches!(from.data_type(), DataType::Utf8 | DataType::Utf8View) => {
            validate_text(array, strict)
        }
        (false, true) | (true, true) => to_json_array(array, from),
        (true, false) => match convert_json(array, to, strict)? {
            Some(out) => Ok(out),
            None => arrow_cast(array, to.data_type(), strict),
        },
        (false, false) => arrow_cast(array, to.data_type(), strict),
    }
}

fn arrow_cast(array: &ArrayRef, data_type: &DataType, strict: bool) -> Result<ArrayRef> {
    let options = CastOptions {
        safe: !strict,
        ..CastOptions::default()
    };
    Ok(cast_with_options(array, data_type, &options)?)
}

/// A list cast item by item to a list of `item`.
fn cast_list(array: &ArrayRef, from: &Field, item: &FieldRef, strict: bool) -> Result<ArrayRef> {
    let list = match from.data_type() {
        DataType::List(_) => array.as_list::<i32>().clone(),
        DataType::Null => {
            return Ok(new_null_array(
                &DataType::List(Arc::clone(item)),
                array.len(),
            ));
        }
        _ => {
            let plain = DataType::List(Arc::new(Field::new_list_field(
                list_item(from)?.data_type().clone(),
                true,
            )));
            arrow_cast(array, &plain, strict)?.as_list::<i32>().clone()
        }
    };
    let (source_item, offsets, values, nulls) = list.into_parts();
    let values = cast_value(
        &values,
        &list_item(from).unwrap_or(source_item),
        item,
        strict,
    )?;
    let out = arrow::array::ListArray::try_new(Arc::clone(item), offsets, values, nulls)?;
    Ok(Arc::new(out))
}

/// The item field of a list type (its metadata kept, unlike the array's).
fn list_item(field: &Field) -> Result<FieldRef> {
    match field.data_type() {
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            Ok(Arc::clone(item))
        }
        other => exec_err!("cannot cast {other} to a list of unions"),
    }
}

/// A value, a NULL or a union cast to the union `to` of `members`.
fn cast_to_union(
    array: &ArrayRef,
    from: &Field,
    to: &Field,
    members: &UnionFields,
    strict: bool,
) -> Result<ArrayRef> {
    let rows = array.len();
    let nulls = |f: &FieldRef| new_null_array(f.data_type(), rows);
    match from.data_type() {
        DataType::Union(source, _) => remap_union(array, source, from, to, members, strict),
        DataType::Null => {
            let first = members.iter().next().map_or(0, |(id, _)| id);
            let children = members.iter().map(|(_, f)| nulls(f)).collect();
            sparse_union(members, vec![first; rows], children)
        }
        _ => {
            let chosen = member_for(from, members, to).map_err(DataFusionError::Execution)?;
            let children = members
                .iter()
                .map(|(id, f)| match id == chosen {
                    true => cast_value(array, from, f, strict),
                    false => Ok(nulls(f)),
                })
                .collect::<Result<Vec<_>>>()?;
            sparse_union(members, vec![chosen; rows], children)
        }
    }
}

/// A union (sparse or dense) cast to the union of `members`: each row keeps its
/// member's name, its value cast to that member's type.
fn remap_union(
    array: &ArrayRef,
    source: &UnionFields,
    from: &Field,
    to: &Field,
    members: &UnionFields,
    strict: bool,
) -> Result<ArrayRef> {
    let union = array.as_union();
    let rows = union.len();
    // Per source member: its type id, the target member's, its values cast to that type.
    let mut mapped: Vec<(i8, i8, ArrayRef)> = Vec::with_capacity(source.len());
    for (id, field) in source.iter() {
        let target =
            member_named(members, field.name(), from, to).map_err(DataFusionError::Execution)?;
        if let Some((_, member)) = members.iter().find(|(i, _)| *i == target) {
            let values = cast_value(union.child(id), field, member, strict)?;
            mapped.push((id, target, values));
        }
    }
    let type_ids = (0..rows)
        .map(|row| {
            let id = union.type_id(row);
            match mapped.iter().find(|(source, _, _)| *source == id) {
                Some((_, target, _)) => Ok(*target),
                None => exec_err!("union type id {id} has no member"),
            }
        })
        .collect::<Result<Vec<i8>>>()?;
    let children = members
        .iter()
        .map(|(target, member)| {
            let Some((_, _, values)) = mapped.iter().find(|(_, t, _)| *t == target) else {
                return Ok(new_null_array(member.data_type(), rows));
            };
            let none = new_null_array(member.data_type(), 1);
            let picks: Vec<(usize, usize)> = (0..rows)
                .map(|row| match type_ids[row] == target {
                    true => (1, union.value_offset(row)),
                    false => (0, 0),
                })
                .collect();
            Ok(interleave(&[none.as_ref(), values.as_ref()], &picks)?)
        })
        .collect::<Result<Vec<_>>>()?;
    sparse_union(members, type_ids, children)
}

/// The function a cast to a union (or a list of unions) becomes.
#[derive(Debug, PartialEq, Eq, Hash)]
struct UnionCast {
    target: FieldRef,
    strict: bool,
    signature: Signature,
}

impl ScalarUDFImpl for UnionCast {
    fn name(&self) -> &str {
        "cast_to_union"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.target.data_type().clone())
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(
            self.target
                .as_ref()
                .clone()
                .with_name(self.name())
                .with_nullable(true),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [input] = args.args.as_slice() else {
            return exec_err!("{} takes one argument", self.name());
        };
        let from = &args.arg_fields[0];
        if let (ColumnarValue::Scalar(ScalarValue::Null), DataType::Union(fields, mode)) =
            (input, self.target.data_type())
        {
            return Ok(ColumnarValue::Scalar(ScalarValue::Union(
                None,
                fields.clone(),
                *mode,
            )));
        }
        let array = input.to_array(args.number_rows)?;
        let out = cast_value(&array, from, &self.target, self.strict)?;
        same_shape(input, out)
    }
}

/// `out` as a scalar when `input` is one (a constant folds), else as an array.
fn same_shape(input: &ColumnarValue, out: ArrayRef) -> Result<ColumnarValue> {
    match input {
        ColumnarValue::Scalar(_) => {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        }
        ColumnarValue::Array(_) => Ok(ColumnarValue::Array(out)),
    }
}

/// `union_value(tag := v)`, ready to register (planned as `union_value('tag', v)`).
pub fn union_value() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(UnionValue {
        signature: Signature::any(2, Volatility::Immutable),
    }))
}

/// `union_value`: a union of one member, named by the tag, holding the value.
#[derive(Debug, PartialEq, Eq, Hash)]
struct UnionValue {
    signature: Signature,
}

impl UnionValue {
    /// The union's fields: its one member, named `tag`, of the value's type.
    fn fields(tag: &str, value: &Field) -> UnionFields {
        let member = value.clone().with_name(tag).with_nullable(true);
        UnionFields::from_fields(vec![member])
    }
}

impl ScalarUDFImpl for UnionValue {
    fn name(&self) -> &str {
        "union_value"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        plan_err!("union_value's type depends on its tag")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let tag = match args.scalar_arguments.first() {
            Some(Some(ScalarValue::Utf8(Some(tag)) | ScalarValue::Utf8View(Some(tag)))) => tag,
            _ => {
                return plan_err!(
                    "union_value takes one named argument: union_value(tag := value)"
                );
            }
        };
        let fields = Self::fields(tag, &args.arg_fields[1]);
        let union = DataType::Union(fields, UnionMode::Sparse);
        Ok(Arc::new(Field::new(self.name(), union, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let DataType::Union(fields, _) = args.return_field.data_type() else {
            return exec_err!("union_value returns a union");
        };
        let value = &args.args[1];
        let array = value.to_array(args.number_rows)?;
        let rows = array.len();
        let out = sparse_union(fields, vec![0; rows], vec![array])?;
        same_shape(value, out)
    }
}

/// Makes `union_value(tag := v)` positional (`union_value('tag', v)`), since DataFusion
/// takes named arguments only for a function's declared parameter names.
pub fn rewrite_statement(statement: &mut Statement) {
    let _ = crate::statement_walk::walk(statement, &mut NamedTag);
}

struct NamedTag;

impl ast::VisitorMut for NamedTag {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        let is_union_value = function
            .name
            .0
            .last()
            .and_then(|part| part.as_ident())
            .is_some_and(|ident| ident.value.eq_ignore_ascii_case("union_value"));
        let ast::FunctionArguments::List(list) = &mut function.args else {
            return ControlFlow::Continue(());
        };
        if let (true, [ast::FunctionArg::Named { name, arg, .. }]) =
            (is_union_value, list.args.as_slice())
        {
            let tag = ast::Expr::value(ast::Value::SingleQuotedString(name.value.clone()));
            list.args = vec![
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(tag)),
                ast::FunctionArg::Unnamed(arg.clone()),
            ];
        }
        ControlFlow::Continue(())
    }
}
