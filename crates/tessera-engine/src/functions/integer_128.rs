//! Shifts (`<<`, `>>`) of DuckDB's 128-bit integers. Tessera plans `HUGEINT`,
//! `UHUGEINT` and `BIGNUM` as `DECIMAL(38,0)` (`json::sql_types`), and DataFusion
//! shifts a decimal as a 64-bit integer, so `1::HUGEINT << 100` wrapped around to
//! `2^36`. [`WideIntegerShifts`] (an analyzer rewrite) computes such shifts on 128
//! bits instead, with DuckDB's rules: a left shift of a negative number, by a negative
//! amount, by 128 or more, or past the type's range is an error; a right shift by a
//! negative amount or by 128 or more is 0.

use std::sync::Arc;

use super::cast_rewrite::rewritten_to;
use arrow::array::{Array, ArrayRef, AsArray, Decimal128Builder};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Decimal128Type, Int64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, exec_err};
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, Operator, ScalarFunctionArgs, ScalarUDFImpl,
    Signature, Volatility,
};

/// The Arrow type of Tessera's 128-bit integers.
const WIDE_INTEGER: DataType = DataType::Decimal128(38, 0);

/// Bits of the integers shifted: a shift by this many or more leaves nothing.
const BITS: i64 = 128;

/// Largest magnitude `DECIMAL(38,0)` holds.
const WIDE_MAX: i128 = 10_i128.pow(38) - 1;

/// Rewrites `a << b` and `a >> b` whose `a` is an integer decimal (`HUGEINT`) into
/// the 128-bit shift (see the module documentation).
#[derive(Debug, Default)]
pub struct WideIntegerShifts;

impl FunctionRewrite for WideIntegerShifts {
    fn name(&self) -> &str {
        "wide_integer_shifts"
    }

    fn rewrite(
        &self,
        expr: Expr,
        schema: &DFSchema,
        _config: &ConfigOptions,
    ) -> Result<Transformed<Expr>> {
        let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
            return Ok(Transformed::no(expr));
        };
        let left_shift = match op {
            Operator::BitwiseShiftLeft => true,
            Operator::BitwiseShiftRight => false,
            _ => return Ok(Transformed::no(expr)),
        };
        if !matches!(left.get_type(schema)?, DataType::Decimal128(_, 0)) {
            return Ok(Transformed::no(expr));
        }
        let args = vec![left.as_ref().clone(), right.as_ref().clone()];
        Ok(rewritten_to(Shift128::new(left_shift), args))
    }
}

/// The 128-bit shift a [`WideIntegerShifts`] rewrite calls.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Shift128 {
    left: bool,
    signature: Signature,
}

impl Shift128 {
    fn new(left: bool) -> Self {
        Self {
            left,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Shift128 {
    fn name(&self) -> &str {
        match self.left {
            true => "shift_left_128",
            false => "shift_right_128",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(WIDE_INTEGER)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [values, amounts] = arrays.as_slice() else {
            return exec_err!("{} takes two arguments", self.name());
        };
        let values = cast(values, &WIDE_INTEGER)?;
        let amounts = cast(amounts, &DataType::Int64)?;
        let out = shifted(
            values.as_primitive::<Decimal128Type>(),
            amounts.as_primitive::<Int64Type>(),
            self.left,
        )?;
        match scalar {
            true => Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&out, 0)?,
            )),
            false => Ok(ColumnarValue::Array(out)),
        }
    }
}

/// Each row's value shifted by its amount; NULL where either is NULL.
fn shifted(
    values: &arrow::array::Decimal128Array,
    amounts: &arrow::array::Int64Array,
    left: bool,
) -> Result<ArrayRef> {
    let mut out = Decimal128Builder::with_capacity(values.len());
    for row in 0..values.len() {
        if values.is_null(row) || amounts.is_null(row) {
            out.append_null();
            continue;
        }
        let (value, amount) = (values.value(row), amounts.value(row));
        match left {
            true => out.append_value(shift_left(value, amount)?),
            false => out.append_value(shift_right(value, amount)),
        }
    }
    Ok(Arc::new(out.finish().with_data_type(WIDE_INTEGER)))
}

/// `value << amount` as DuckDB computes it on `HUGEINT`.
fn shift_left(value: i128, amount: i64) -> Result<i128> {
    if value < 0 {
        return exec_err!("Cannot left-shift negative number {value}");
    }
    if amount < 0 {
        return exec_err!("Cannot left-shift by negative number {amount}");
    }
    if amount >= BITS {
        return exec_err!("Left-shift value {amount} is out of range");
    }
    // The value's top bits must be zeros that the shift moves out, the sign bit kept.
    let shifted = (value.leading_zeros() > amount as u32)
        .then(|| value << amount)
        .filter(|v| *v <= WIDE_MAX);
    match shifted {
        Some(v) => Ok(v),
        None => exec_err!("Overflow in left shift ({value} << {amount})"),
    }
}

/// `value >> amount` as DuckDB computes it on `HUGEINT`: arithmetic, and 0 for an
/// amount outside 0..128.
fn shift_right(value: i128, amount: i64) -> i128 {
    match amount {
        0..BITS => value >> amount,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Left shifts agree with multiplication by a power of two wherever the product
    /// fits 38 digits, and are errors where it does not.
    #[test]
    fn left_shift_is_multiplication_by_powers_of_two() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..10_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = i128::from(state >> (state % 64));
            let amount = (state % 130) as i64;
            let product = 2_i128
                .checked_pow(amount as u32)
                .and_then(|p| p.checked_mul(value))
                .filter(|p| *p <= WIDE_MAX);
            assert_eq!(
                shift_left(value, amount).ok(),
                product,
                "{value} << {amount}"
            );
        }
    }

    #[test]
    fn right_shift_is_floor_division_by_powers_of_two() {
        for value in [-1000_i128, -8, -1, 0, 1, 7, WIDE_MAX, -WIDE_MAX] {
            for amount in [-1_i64, 0, 1, 3, 100, 126, 128, 500] {
                let expected = match 2_i128.checked_pow(amount as u32) {
                    Some(p) if amount >= 0 => value.div_euclid(p),
                    _ => 0,
                };
                assert_eq!(shift_right(value, amount), expected, "{value} >> {amount}");
            }
        }
    }

    #[test]
    fn negative_values_and_amounts_are_errors() {
        assert!(shift_left(-1, 1).is_err());
        assert!(shift_left(1, -1).is_err());
        assert!(shift_left(1, 128).is_err());
        assert_eq!(shift_left(1, 100).ok(), Some(1 << 100));
    }
}
