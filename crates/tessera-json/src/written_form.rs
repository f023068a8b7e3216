//! Whether JSON text is already in the form the writer ([`crate::tree`]) gives it, so a
//! function that hands values on as text (`CAST(x AS JSON[])`, one element per list
//! item) can copy the bytes instead of parsing them and writing them again.
//!
//! The test is conservative: `true` only where the writer's output is certain to be the
//! same bytes, `false` on anything that asks for thought (whitespace, escapes,
//! exponents, long numbers, `NaN`, trailing commas), for which the caller writes the
//! value out as before. It reads one pass over the bytes and assumes text a parser has
//! already accepted.

/// Most significant digits of a number with a fraction copied as written: a decimal of
/// up to 15 significant digits reads back as itself from the nearest double, so no
/// other decimal as short names that double and the writer's shortest digits are these.
const FLOAT_DIGITS_MAX: usize = 15;

/// Most digits of an integer copied as written: any 18 digits fit an `i64`, which the
/// parsers read integers into and the writer writes back digit for digit.
const INTEGER_DIGITS_MAX: usize = 18;

/// Most zeros between the point and the first significant digit the writer keeps in
/// decimal notation (`0.000001`); one more and it writes `1e-7`.
const FRACTION_ZEROS_MAX: usize = 5;

/// Whether `text`, one JSON value a parser accepted, is exactly the text the writer
/// writes for it; see the module documentation.
pub fn is_written_form(text: &[u8]) -> bool {
    let mut pos = 0;
    let mut after_comma = false;
    while let Some(&byte) = text.get(pos) {
        let len = match byte {
            b'"' => string_len(&text[pos..]),
            b'-' | b'0'..=b'9' => number_len(&text[pos..]),
            b'}' | b']' if after_comma => None,
            // Letters outside strings spell `true`, `false` and `null` (`NaN` and
            // `Infinity` start with a capital, which falls through to `None`).
            b'{' | b'[' | b'}' | b']' | b':' | b',' | b'a'..=b'z' => Some(1),
            _ => None,
        };
        let Some(len) = len else {
            return false;
        };
        after_comma = byte == b',';
        pos += len;
    }
    true
}

/// The length of the string starting at `text[0]` (a quote) when it has no escape.
fn string_len(text: &[u8]) -> Option<usize> {
    let body = text.get(1..)?;
    let end = memchr::memchr2(b'"', b'\\', body)?;
    (body[end] == b'"').then_some(end + 2)
}

/// The length of the number starting at `text[0]` when the writer writes it as written.
fn number_len(text: &[u8]) -> Option<usize> {
    let sign = usize::from(text[0] == b'-');
    let digits = |from: usize| {
        text[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let whole = digits(sign);
    let after_whole = sign + whole;
    // A leading zero stands alone (`0`, `0.5`); the parser rejects `01` anyway.
    if whole == 0 || (whole > 1 && text[sign] == b'0') {
        return None;
    }
    if text.get(after_whole) != Some(&b'.') {
        let negative_zero = sign == 1 && text[sign] == b'0';
        let exponent = matches!(text.get(after_whole), Some(b'e' | b'E'));
        return (!negative_zero && !exponent && whole <= INTEGER_DIGITS_MAX).then_some(after_whole);
    }
    let fraction = digits(after_whole + 1);
    let end = after_whole + 1 + fraction;
    let fraction_digits = &text[after_whole + 1..end];
    if fraction == 0 || matches!(text.get(end), Some(b'e' | b'E')) {
        return None;
    }
    // The writer drops trailing zeros but keeps `.0` on an integral value (`5.0`).
    let trailing_zero = fraction > 1 && fraction_digits[fraction - 1] == b'0';
    let significant = match text[sign] {
        b'0' => {
            let zeros = fraction_digits.iter().take_while(|b| **b == b'0').count();
            if zeros == fraction {
                // `0.0`: written as is; `0.00` has a trailing zero, caught above.
                return (!trailing_zero).then_some(end);
            }
            if zeros > FRACTION_ZEROS_MAX {
                return None;
            }
            fraction - zeros
        }
        _ => whole + fraction,
    };
    (!trailing_zero && significant <= FLOAT_DIGITS_MAX).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::Tape;
    use crate::tree::Json;

    fn written(text: &str) -> String {
        Json::parse(text.as_bytes(), &mut Tape::default())
            .unwrap()
            .to_text()
    }

    /// A small xorshift generator, so the cases are the same on every run.
    struct Cases(u64);

    impl Cases {
        fn next(&mut self, below: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % below
        }

        fn number(&mut self) -> String {
            let digits = |cases: &mut Self, n: u64| {
                (0..n)
                    .map(|_| char::from(b'0' + cases.next(10) as u8))
                    .collect::<String>()
            };
            let sign = if self.next(4) == 0 { "-" } else { "" };
            let whole = match self.next(3) {
                0 => "0".to_string(),
                _ => {
                    let (first, n) = (1 + self.next(9), self.next(20));
                    format!("{first}{}", digits(self, n))
                }
            };
            let fraction = match self.next(3) {
                0 => String::new(),
                _ => {
                    let n = 1 + self.next(18);
                    format!(".{}", digits(self, n))
                }
            };
            let exponent = match self.next(6) {
                0 => format!("e{}", self.next(30)),
                _ => String::new(),
            };
            format!("{sign}{whole}{fraction}{exponent}")
        }

        fn value(&mut self, depth: u32) -> String {
            let space = |cases: &mut Self| if cases.next(8) == 0 { " " } else { "" };
            match self.next(if depth > 3 { 4 } else { 7 }) {
                0 => ["true", "false", "null"][self.next(3) as usize].to_string(),
                1 | 2 => self.number(),
                3 => ["\"a\"", "\"\\n\"", "\"é/\"", "\"\\u00e9\"", "\"\""][self.next(5) as usize]
                    .to_string(),
                4 | 5 => {
                    let items: Vec<String> =
                        (0..self.next(4)).map(|_| self.value(depth + 1)).collect();
                    format!(
                        "[{}{}]",
                        items.join(&format!(",{}", space(self))),
                        space(self)
                    )
                }
                _ => {
                    let members: Vec<String> = (0..self.next(4))
                        .map(|i| format!("\"k{}\":{}{}", i % 2, space(self), self.value(depth + 1)))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }
            }
        }
    }

    #[test]
    fn text_said_to_be_in_written_form_is_what_the_writer_writes() {
        let mut cases = Cases(0x9e37_79b9_7f4a_7c15);
        let mut copied = 0;
        for _ in 0..50_000 {
            let text = cases.value(0);
            if is_written_form(text.as_bytes()) {
                assert_eq!(written(&text), text);
                copied += 1;
            }
        }
        // The test means something only if the fast answer is given often.
        assert!(copied > 10_000, "{copied} of 50,000 copied");
    }

    #[test]
    fn what_the_writer_would_change_is_not_in_written_form() {
        for text in [
            "[1, 2]",
            "1.50",
            "-0",
            "1e5",
            "0.0000001",
            "NaN",
            "[1,]",
            "{\"a\":1,}",
            "1234567890.123456789",
        ] {
            assert!(!is_written_form(text.as_bytes()), "{text}");
            if let Ok(value) = Json::parse(text.as_bytes(), &mut Tape::default()) {
                assert_ne!(value.to_text(), text);
            }
        }
        // Escapes and integers past 18 digits are left to the writer, even where it
        // writes them back as they were.
        assert!(!is_written_form(br#""\n""#));
        assert!(!is_written_form(b"1234567890123456789"));
        for text in [
            "[1,2]",
            "5.0",
            "-0.0",
            "0.000001",
            "{\"a\":[true,null]}",
            "59.84",
        ] {
            assert!(is_written_form(text.as_bytes()), "{text}");
        }
    }
}
