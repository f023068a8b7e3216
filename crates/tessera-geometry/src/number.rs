//! A coordinate as text: the shortest digits that read back as the same double, laid
//! out as DuckDB lays them out in WKT (`%g`-like, `1e+16`) and in JSON (`1.0`, `1e21`).

use std::fmt::Write as _;

/// The shortest decimal digits of a finite, non-zero magnitude and its decimal exponent:
/// the value is `d.ddd × 10^exponent`.
fn digits(magnitude: f64) -> (String, i32) {
    let split = |scientific: &str| {
        let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific, "0"));
        let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
        (digits, exponent.parse().unwrap_or(0))
    };
    // `{:e}` writes the shortest digits that read back as the same double, but breaks
    // a tie between two such (279248847377553.625: .62 or .63) upwards; DuckDB takes
    // the even one, as `{:.Ne}` (exact, ties to even) at the same length does.
    let (shortest, exponent) = split(&format!("{magnitude:e}"));
    let precision = shortest.len() - 1;
    let even = format!("{magnitude:.precision$e}");
    match even.parse::<f64>() {
        Ok(back) if back == magnitude => {
            let (digits, exponent) = split(&even);
            (digits.trim_end_matches('0').to_string(), exponent)
        }
        _ => (shortest, exponent),
    }
}

/// `digits` (d.ddd × 10^exponent) in positional notation, with `.0` when `whole_suffix`
/// and the value is whole.
fn positional(out: &mut String, digits: &str, exponent: i32, whole_suffix: bool) {
    let count = digits.len() as i32;
    if exponent < 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
        out.push_str(digits);
    } else if count <= exponent + 1 {
        out.push_str(digits);
        out.extend(std::iter::repeat_n('0', (exponent + 1 - count) as usize));
        if whole_suffix {
            out.push_str(".0");
        }
    } else {
        let (whole, fraction) = digits.split_at(exponent as usize + 1);
        let _ = write!(out, "{whole}.{fraction}");
    }
}

/// `digits` in scientific notation: `d.ddd`, `e`, the exponent with a sign and at least
/// two digits in WKT (`1e+16`, `1e-05`) and as is in JSON (`1e21`, `1e-7`).
fn scientific(out: &mut String, digits: &str, exponent: i32, wkt: bool) {
    let (first, rest) = digits.split_at(1);
    out.push_str(first);
    if !rest.is_empty() {
        let _ = write!(out, ".{rest}");
    }
    match wkt {
        true => {
            let sign = if exponent < 0 { '-' } else { '+' };
            let _ = write!(out, "e{sign}{:02}", exponent.unsigned_abs());
        }
        false => {
            let _ = write!(out, "e{exponent}");
        }
    }
}

/// Appends `value` as DuckDB writes a coordinate in WKT: positional for decimal
/// exponents from -4 to 15, scientific otherwise; `nan`, `inf`, `-0` as such.
pub fn push_wkt(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("nan");
        return;
    }
    if value.is_sign_negative() {
        out.push('-');
    }
    let magnitude = value.abs();
    if magnitude.is_infinite() {
        out.push_str("inf");
    } else if magnitude == 0.0 {
        out.push('0');
    } else {
        let (digits, exponent) = digits(magnitude);
        match (-4..16).contains(&exponent) {
            true => positional(out, &digits, exponent, false),
            false => scientific(out, &digits, exponent, true),
        }
    }
}

/// Appends `value` as DuckDB writes a double in JSON: positional up to 21 integer digits
/// and down to 6 leading fraction zeros, with `.0` on whole numbers; `NaN`, `Infinity`.
pub fn push_json(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
        return;
    }
    if value.is_sign_negative() {
        out.push('-');
    }
    let magnitude = value.abs();
    if magnitude.is_infinite() {
        out.push_str("Infinity");
    } else if magnitude == 0.0 {
        out.push_str("0.0");
    } else {
        let (digits, exponent) = digits(magnitude);
        match (-6..21).contains(&exponent) {
            true => positional(out, &digits, exponent, true),
            false => scientific(out, &digits, exponent, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wkt(v: f64) -> String {
        let mut s = String::new();
        push_wkt(&mut s, v);
        s
    }

    fn json(v: f64) -> String {
        let mut s = String::new();
        push_json(&mut s, v);
        s
    }

    /// Every layout reads back as the same double, over doubles of all magnitudes.
    #[test]
    fn layouts_read_back() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let v = f64::from_bits(state);
            if !v.is_finite() {
                continue;
            }
            assert_eq!(
                wkt(v).parse::<f64>().unwrap().to_bits(),
                v.to_bits(),
                "{v:e}"
            );
            assert_eq!(
                json(v).parse::<f64>().unwrap().to_bits(),
                v.to_bits(),
                "{v:e}"
            );
        }
    }

    /// The boundaries where DuckDB switches notation (answers taken from DuckDB 2.0.0).
    #[test]
    fn notation_boundaries_match_duckdb() {
        let cases = [
            (1e15, "1000000000000000", "1000000000000000.0"),
            (1e16, "1e+16", "10000000000000000.0"),
            (
                1.2345678901234568e16,
                "1.2345678901234568e+16",
                "12345678901234568.0",
            ),
            (0.0001, "0.0001", "0.0001"),
            (0.00001, "1e-05", "0.00001"),
            (0.000001, "1e-06", "0.000001"),
            (1e-7, "1e-07", "1e-7"),
            (1e21, "1e+21", "1e21"),
            (
                279248847377553.62,
                "279248847377553.62",
                "279248847377553.62",
            ),
            (-0.0, "-0", "-0.0"),
            (5e-324, "5e-324", "5e-324"),
        ];
        for (v, w, j) in cases {
            assert_eq!((wkt(v).as_str(), json(v).as_str()), (w, j), "{v:e}");
        }
    }
}
