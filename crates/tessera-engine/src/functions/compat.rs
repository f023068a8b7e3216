//! DuckDB-compatible spellings that JSONBench-style queries use: `hour(ts)` and friends,
//! `date_diff(part, start, end)`, and `typeof(x)` (in `type_of`); DuckDB's other names
//! of DataFusion's functions (`len`, `array_value`, the aggregate `list`); `from_hex`
//! (alias `unhex`), text of hex digits to a `BLOB`.

use std::sync::{Arc, LazyLock};

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, Int32Array, Int64Builder, TimestampMicrosecondArray,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type, TimeUnit};
use chrono::{DateTime, Datelike, Utc};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::scalar_doc_sections::DOC_SECTION_DATETIME;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    AggregateUDF, ColumnarValue, Documentation, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

/// The compatibility functions, ready to register.
pub fn all_functions() -> Vec<Arc<ScalarUDF>> {
    let mut out: Vec<Arc<ScalarUDF>> = ["year", "month", "day", "hour", "minute", "second"]
        .into_iter()
        .map(|part| Arc::new(ScalarUDF::from(TimePart::new(part))))
        .collect();
    out.push(Arc::new(ScalarUDF::from(DateDiff::new())));
    out.push(Arc::new(ScalarUDF::from(FromHex::new())));
    out.push(super::type_of::type_of());
    out.push(Arc::new(
        datafusion::functions::unicode::character_length()
            .as_ref()
            .clone()
            .with_aliases(["len"]),
    ));
    out.push(Arc::new(
        datafusion::functions_nested::make_array::make_array_udf()
            .as_ref()
            .clone()
            .with_aliases(["array_value"]),
    ));
    out
}

/// DuckDB's names of DataFusion's aggregates, ready to register: `list(x)` is
/// `array_agg(x)`, which DuckDB's queries (and its JSON tests) spell either way.
pub fn aggregate_functions() -> Vec<Arc<AggregateUDF>> {
    let array_agg = datafusion::functions_aggregate::array_agg::array_agg_udaf();
    vec![Arc::new(array_agg.as_ref().clone().with_aliases(["list"]))]
}

/// `hour(ts)` = `date_part('hour', ts)`, likewise for the other parts.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TimePart {
    part: &'static str,
    signature: Signature,
}

impl TimePart {
    fn new(part: &'static str) -> Self {
        Self {
            part,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }

    fn rewrite(&self, arg: Expr) -> Expr {
        datafusion::functions::datetime::date_part().call(vec![
            Expr::Literal(ScalarValue::Utf8(Some(self.part.to_string())), None),
            arg,
        ])
    }

    /// Microseconds per cycle and per unit of a part of the day that naive timestamps
    /// give by integer arithmetic (without a time zone a day is 24 hours of 60 minutes).
    fn day_fraction(&self) -> Option<(i64, i64)> {
        const MICROS_PER_MINUTE: i64 = 60_000_000;
        match self.part {
            "hour" => Some((24 * 60 * MICROS_PER_MINUTE, 60 * MICROS_PER_MINUTE)),
            "minute" => Some((60 * MICROS_PER_MINUTE, MICROS_PER_MINUTE)),
            _ => None,
        }
    }
}

/// The hour or minute (`fraction`, see [`TimePart::day_fraction`]) of every naive
/// timestamp of `array`, as `date_part` gives it but without a calendar date per value:
/// `date_part` goes through chrono, which spends most of its time on the year and day
/// the part does not need. Timestamps chrono cannot represent are NULL there and here.
fn part_of_day(array: &ArrayRef, (cycle, one): (i64, i64)) -> Result<ArrayRef> {
    let DataType::Timestamp(unit, None) = array.data_type() else {
        return exec_err!("{} is not a naive timestamp", array.data_type());
    };
    let (per_second, cycle, one) = match unit {
        TimeUnit::Second => (1, cycle / 1_000_000, one / 1_000_000),
        TimeUnit::Millisecond => (1_000, cycle / 1_000, one / 1_000),
        TimeUnit::Microsecond => (1_000_000, cycle, one),
        TimeUnit::Nanosecond => (1_000_000_000, cycle * 1_000, one * 1_000),
    };
    let seconds = DateTime::<Utc>::MIN_UTC.timestamp()..=DateTime::<Utc>::MAX_UTC.timestamp();
    let values = cast(array, &DataType::Int64)?;
    let parts: Int32Array = values
        .as_primitive::<Int64Type>()
        .iter()
        .map(|v| {
            let v = v?;
            seconds.contains(&v.div_euclid(per_second)).then(|| {
                i32::try_from(v.rem_euclid(cycle) / one).expect("a part of a day fits 32 bits")
            })
        })
        .collect();
    Ok(Arc::new(parts))
}

static TIME_PART_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_DATETIME,
        "A part of a timestamp, as date_part",
        "hour(ts)",
    )
    .with_argument("ts", "a timestamp or date")
    .build()
});

impl ScalarUDFImpl for TimePart {
    fn name(&self) -> &str {
        self.part
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // Planning simplifies every call but hours and minutes of naive timestamps into
        // `date_part`.
        let (Some(fraction), [arg]) = (self.day_fraction(), args.args.as_slice()) else {
            return exec_err!(
                "{} must be simplified into date_part before execution ({} rows)",
                self.part,
                args.number_rows
            );
        };
        Ok(match arg {
            ColumnarValue::Array(array) => ColumnarValue::Array(part_of_day(array, fraction)?),
            ColumnarValue::Scalar(scalar) => {
                let part = part_of_day(&scalar.to_array()?, fraction)?;
                ColumnarValue::Scalar(ScalarValue::try_from_array(&part, 0)?)
            }
        })
    }

    fn simplify(&self, mut args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let arg = match args.pop() {
            Some(arg) if args.is_empty() => arg,
            _ => return plan_err!("{} takes one argument", self.part),
        };
        // Hours and minutes of naive timestamps are computed here; anything else is
        // date_part's.
        let naive = matches!(info.get_data_type(&arg), Ok(DataType::Timestamp(_, None)));
        match (self.day_fraction(), naive) {
            (Some(_), true) => Ok(ExprSimplifyResult::Original(vec![arg])),
            _ => Ok(ExprSimplifyResult::Simplified(self.rewrite(arg))),
        }
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&TIME_PART_DOCS)
    }
}

/// `date_diff(part, start, end)`: how many `part` boundaries lie between two timestamps
/// (DuckDB semantics: the difference of the truncated values).
#[derive(Debug, PartialEq, Eq, Hash)]
struct DateDiff {
    signature: Signature,
    aliases: Vec<String>,
}

impl DateDiff {
    fn new() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            aliases: vec!["datediff".to_string()],
        }
    }
}

const MICROS_TS: DataType = DataType::Timestamp(TimeUnit::Microsecond, None);

/// A unit of `date_diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Fixed(i64),
    Week,
    Month,
    Quarter,
    Year,
}

fn unit(name: &str) -> Option<Unit> {
    const SECOND: i64 = 1_000_000;
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "us" | "usec" | "usecs" | "microsecond" | "microseconds" => Unit::Fixed(1),
        "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => Unit::Fixed(1_000),
        "s" | "sec" | "secs" | "second" | "seconds" => Unit::Fixed(SECOND),
        "m" | "min" | "mins" | "minute" | "minutes" => Unit::Fixed(60 * SECOND),
        "h" | "hr" | "hrs" | "hour" | "hours" => Unit::Fixed(3600 * SECOND),
        "d" | "day" | "days" => Unit::Fixed(86_400 * SECOND),
        "w" | "week" | "weeks" => Unit::Week,
        "mon" | "mons" | "month" | "months" => Unit::Month,
        "q" | "quarter" | "quarters" => Unit::Quarter,
        "y" | "yr" | "yrs" | "year" | "years" => Unit::Year,
        _ => return None,
    })
}

/// The index of the `unit` period containing `micros` (since the epoch).
fn period(unit: Unit, micros: i64) -> Option<i64> {
    const DAY: i64 = 86_400_000_000;
    match unit {
        Unit::Fixed(size) => Some(micros.div_euclid(size)),
        // 1970-01-01 was a Thursday; ISO weeks start on Monday.
        Unit::Week => Some((micros.div_euclid(DAY) + 3).div_euclid(7)),
        Unit::Month | Unit::Quarter | Unit::Year => {
            let t = DateTime::from_timestamp_micros(micros)?;
            let months = t.year() as i64 * 12 + t.month0() as i64;
            Some(match unit {
                Unit::Month => months,
                Unit::Quarter => months.div_euclid(3),
                _ => t.year() as i64,
            })
        }
    }
}

static DATE_DIFF_DOCS: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        DOC_SECTION_DATETIME,
        "Number of part boundaries between two timestamps",
        "date_diff('milliseconds', start, end)",
    )
    .with_argument("part", "microseconds, milliseconds, seconds, minutes, hours, days, weeks, months, quarters or years")
    .build()
});

impl ScalarUDFImpl for DateDiff {
    fn name(&self) -> &str {
        "date_diff"
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [part, start, end] if part_is_text(part) && is_temporal(start) && is_temporal(end) => {
                Ok(vec![DataType::Utf8, MICROS_TS, MICROS_TS])
            }
            _ => plan_err!(
                "date_diff expects (part text, start timestamp, end timestamp), got {arg_types:?}"
            ),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = if all_scalar { 1 } else { args.number_rows };
        let ColumnarValue::Scalar(part) = &args.args[0] else {
            return exec_err!("date_diff: the part must be a constant");
        };
        let Some(part_name) = part.try_as_str().flatten() else {
            return Ok(ColumnarValue::Scalar(ScalarValue::Int64(None)));
        };
        let Some(unit) = unit(part_name) else {
            return exec_err!("date_diff: unknown part '{part_name}'");
        };
        let micros =
            |v: &ColumnarValue| -> Result<ArrayRef> { Ok(cast(&v.to_array(n)?, &MICROS_TS)?) };
        let (start, end) = (micros(&args.args[1])?, micros(&args.args[2])?);
        let start = start
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()
            .expect("cast to micros");
        let end = end
            .as_any()
            .downcast_ref::<TimestampMicrosecondArray>()
            .expect("cast to micros");
        let mut out = Int64Builder::with_capacity(n);
        for i in 0..n {
            let diff = (start.is_valid(i) && end.is_valid(i))
                .then(|| Some(period(unit, end.value(i))? - period(unit, start.value(i))?))
                .flatten();
            out.append_option(diff);
        }
        let array: ArrayRef = Arc::new(out.finish());
        if all_scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &array, 0,
            )?))
        } else {
            Ok(ColumnarValue::Array(array))
        }
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DATE_DIFF_DOCS)
    }
}

fn part_is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
}

fn is_temporal(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64 | DataType::Null
    )
}

/// `from_hex(text)` (alias `unhex`): the bytes that pairs of hex digits spell, as
/// DuckDB reads them; an odd count reads the first digit alone. Any other character is
/// an error naming it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct FromHex {
    signature: Signature,
    aliases: Vec<String>,
}

impl FromHex {
    fn new() -> Self {
        Self {
            signature: Signature::string(1, Volatility::Immutable),
            aliases: vec!["unhex".to_string()],
        }
    }
}

impl ScalarUDFImpl for FromHex {
    fn name(&self) -> &str {
        "from_hex"
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args.as_slice(), [ColumnarValue::Scalar(_)]);
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let [input] = arrays.as_slice() else {
            return exec_err!("from_hex takes one argument");
        };
        let texts = cast(input, &DataType::Utf8)?;
        let mut out = BinaryBuilder::with_capacity(texts.len(), texts.len() / 2);
        for text in texts.as_string::<i32>() {
            match text {
                Some(text) => out.append_value(hex_bytes(text)?),
                None => out.append_null(),
            }
        }
        let out: ArrayRef = Arc::new(out.finish());
        match scalar {
            true => Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)),
            false => Ok(ColumnarValue::Array(out)),
        }
    }
}

/// The bytes hex digits spell; with an odd count the first digit is a byte alone.
fn hex_bytes(text: &str) -> Result<Vec<u8>> {
    let digit = |c: u8| match char::from(c).to_digit(16) {
        Some(d) => Ok(d as u8),
        None => exec_err!("Invalid input for hex digit: {}", char::from(c)),
    };
    let bytes = text.as_bytes();
    let (head, pairs) = bytes.split_at(bytes.len() % 2);
    let mut out = Vec::with_capacity(bytes.len().div_ceil(2));
    if let [first] = head {
        out.push(digit(*first)?);
    }
    for pair in pairs.chunks_exact(2) {
        out.push(digit(pair[0])? << 4 | digit(pair[1])?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Generated bytes written as hex (either case) read back to themselves; an odd
    /// count of digits reads the first alone; a non-digit is an error.
    #[test]
    fn from_hex_reads_what_hex_writes() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex_bytes(&hex).unwrap(), bytes);
            assert_eq!(hex_bytes(&hex.to_uppercase()).unwrap(), bytes);
        }
        assert_eq!(hex_bytes("a").unwrap(), vec![0x0a]);
        assert_eq!(hex_bytes("abc").unwrap(), vec![0x0a, 0xbc]);
        assert!(hex_bytes("zz").is_err());
        assert!(hex_bytes("é").is_err());
    }

    #[test]
    fn hours_and_minutes_are_date_parts() {
        use arrow::array::Int64Array;
        use arrow::compute::kernels::temporal::{DatePart, date_part};
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut values: Vec<Option<i64>> = vec![Some(i64::MIN), Some(i64::MAX), Some(0), None];
        for _ in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = x as i64;
            values.extend([
                Some(v),
                Some(v >> 16),
                Some(v >> 24),
                Some(v >> 40),
                Some(-1 - v % 7),
            ]);
        }
        let values: ArrayRef = Arc::new(Int64Array::from(values));
        let units = [
            TimeUnit::Second,
            TimeUnit::Millisecond,
            TimeUnit::Microsecond,
            TimeUnit::Nanosecond,
        ];
        for unit in units {
            let array = cast(&values, &DataType::Timestamp(unit, None)).unwrap();
            for (part, expected) in [("hour", DatePart::Hour), ("minute", DatePart::Minute)] {
                let fraction = TimePart::new(part).day_fraction().unwrap();
                let fast = part_of_day(&array, fraction).unwrap();
                let slow = date_part(&array, expected).unwrap();
                assert_eq!(fast.as_ref(), slow.as_ref(), "{part} of {unit:?}");
                assert!(fast.null_count() > 0 || unit == TimeUnit::Nanosecond);
            }
        }
    }

    #[test]
    fn periods_count_boundaries() {
        let ms = unit("milliseconds").unwrap();
        assert_eq!(period(ms, 1_999).unwrap() - period(ms, 1_000).unwrap(), 0);
        assert_eq!(period(ms, 2_000).unwrap() - period(ms, 1_999).unwrap(), 1);
        assert_eq!(period(ms, -1).unwrap(), -1);
        let week = unit("week").unwrap();
        // Sunday 1970-01-04 and Monday 1970-01-05 are in different ISO weeks.
        let day = 86_400_000_000;
        assert_eq!(
            period(week, 4 * day).unwrap() - period(week, 3 * day).unwrap(),
            1
        );
        let month = unit("months").unwrap();
        assert_eq!(
            period(month, 31 * day).unwrap() - period(month, 30 * day).unwrap(),
            1
        );
        assert!(unit("fortnight").is_none());
        assert_eq!(unit("m"), Some(Unit::Fixed(60_000_000)));
    }
}
