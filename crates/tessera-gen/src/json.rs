//! Hand-written JSON output primitives. The generator writes bytes straight into the
//! output buffer: going through serde would cost an intermediate value per document and
//! halve throughput, and data generation has to outrun the engine it feeds.

/// "00" to "99", so integers are written two digits per division.
const DIGIT_PAIRS: [u8; 200] = {
    let mut table = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        table[2 * i] = b'0' + (i / 10) as u8;
        table[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    table
};

/// For every byte, the character after the backslash that escapes it (`u` for the
/// `\u00XX` form), or 0 when the byte passes through unchanged.
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `v` in decimal.
pub(crate) fn write_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    }
    if v >= 10 {
        pos -= 2;
        let pair = v as usize * 2;
        buf[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
    } else {
        pos -= 1;
        buf[pos] = b'0' + v as u8;
    }
    out.extend_from_slice(&buf[pos..]);
}

/// Appends `v` zero-padded to exactly two digits (`v < 100`).
fn write_2(out: &mut Vec<u8>, v: u64) {
    let pair = v as usize * 2;
    out.extend_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
}

/// Appends `v` zero-padded to exactly `width` digits.
fn write_padded(out: &mut Vec<u8>, mut v: u64, width: usize) {
    let mut buf = [b'0'; 20];
    for slot in buf[..width].iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out.extend_from_slice(&buf[..width]);
}

/// Appends `s` as a quoted JSON string. Runs of bytes that need no escaping are copied
/// whole, since escapes are rare in real text.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc = ESCAPE[b as usize];
        if esc == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if esc == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0xf) as usize]);
        } else {
            out.push(b'\\');
            out.push(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends `"key":`, preceded by a comma unless it is the object's first key; `first`
/// tracks that, so writers can skip or reorder keys without comma bookkeeping.
pub(crate) fn write_key(out: &mut Vec<u8>, first: &mut bool, key: &str) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    write_str(out, key);
    out.push(b':');
}

/// Appends the low `digits` hex digits of `v` (at most 16), most significant first.
pub(crate) fn write_hex(out: &mut Vec<u8>, v: u64, digits: u32) {
    for i in (0..digits.min(16)).rev() {
        out.push(HEX[((v >> (4 * i)) & 0xf) as usize]);
    }
}

/// How a timestamp's fractional seconds are written: clients disagree, and queries
/// that parse `createdAt` must cope with all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Precision {
    /// `2024-11-21T16:00:00Z`
    Seconds,
    /// `2024-11-21T16:00:00.123Z`, what the official app writes.
    Millis,
    /// `2024-11-21T16:00:00.123456Z`
    Micros,
}

/// Appends microseconds since the Unix epoch as an RFC 3339 UTC timestamp (no quotes).
pub(crate) fn write_timestamp(out: &mut Vec<u8>, micros: u64, precision: Precision) {
    let secs = micros / 1_000_000;
    write_date(out, secs / 86_400);
    let of_day = secs % 86_400;
    out.push(b'T');
    write_2(out, of_day / 3600);
    out.push(b':');
    write_2(out, of_day / 60 % 60);
    out.push(b':');
    write_2(out, of_day % 60);
    match precision {
        Precision::Seconds => {}
        Precision::Millis => {
            out.push(b'.');
            write_padded(out, micros % 1_000_000 / 1000, 3);
        }
        Precision::Micros => {
            out.push(b'.');
            write_padded(out, micros % 1_000_000, 6);
        }
    }
    out.push(b'Z');
}

/// Appends days since the Unix epoch as an ISO date `YYYY-MM-DD` (no quotes).
pub(crate) fn write_date(out: &mut Vec<u8>, days: u64) {
    let (year, month, day) = civil_from_days(days);
    write_padded(out, year, 4);
    out.push(b'-');
    write_2(out, month);
    out.push(b'-');
    write_2(out, day);
}

/// Appends an amount in hundredths as a JSON number with exactly two decimals
/// (`-12.50`), the way SQL prints a DECIMAL(15,2); integer cents avoid any float
/// rounding in generated money values.
pub(crate) fn write_cents(out: &mut Vec<u8>, cents: i64) {
    if cents < 0 {
        out.push(b'-');
    }
    let abs = cents.unsigned_abs();
    write_u64(out, abs / 100);
    out.push(b'.');
    write_2(out, abs % 100);
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's
/// `civil_from_days`, restricted to dates after the epoch (all ours are).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_match_std_formatting() {
        let mut out = Vec::new();
        for v in [
            0,
            7,
            10,
            99,
            100,
            101,
            9_999,
            123_456_789,
            1_732_204_800_000_000,
            u64::MAX,
        ] {
            out.clear();
            write_u64(&mut out, v);
            assert_eq!(String::from_utf8(out.clone()).unwrap(), v.to_string());
        }
    }

    #[test]
    fn strings_round_trip_through_a_json_parser() {
        let cases = [
            "",
            "plain ascii",
            "say \"hi\"",
            "back\\slash ¯\\_(ツ)_/¯",
            "line one\nline two\r\n\ttabbed",
            "control \u{0} \u{1} \u{8} \u{c} \u{1f} \u{7f}",
            "accents: ação, müde, garçon, niño",
            "CJK: 今日はいい天気ですね 안녕하세요",
            "emoji: 🦋 ❤️ 👍🏽 🏳️‍🌈",
            "\"\"\\\\\n\n",
        ];
        for s in cases {
            let mut out = Vec::new();
            write_str(&mut out, s);
            let back: String =
                serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            assert_eq!(back, s);
        }
    }

    #[test]
    fn dates_and_cents() {
        let mut out = Vec::new();
        // 1992-01-01 and 1998-12-31 bound TPC-H's dates; 1996-02-29 is a leap day.
        for (days, text) in [
            (8035, "1992-01-01"),
            (10_591, "1998-12-31"),
            (9555, "1996-02-29"),
        ] {
            out.clear();
            write_date(&mut out, days);
            assert_eq!(String::from_utf8(out.clone()).unwrap(), text);
        }
        for (cents, text) in [
            (0, "0.00"),
            (5, "0.05"),
            (-99_999, "-999.99"),
            (123_456, "1234.56"),
        ] {
            out.clear();
            write_cents(&mut out, cents);
            assert_eq!(String::from_utf8(out.clone()).unwrap(), text);
        }
    }

    #[test]
    fn timestamps_are_rfc3339() {
        let mut out = Vec::new();
        write_timestamp(&mut out, 1_732_204_800_000_000, Precision::Millis);
        assert_eq!(out, b"2024-11-21T16:00:00.000Z");
        out.clear();
        // Leap day, last microsecond of the day.
        write_timestamp(&mut out, 1_709_251_199_999_999, Precision::Micros);
        assert_eq!(out, b"2024-02-29T23:59:59.999999Z");
        out.clear();
        write_timestamp(&mut out, 0, Precision::Seconds);
        assert_eq!(out, b"1970-01-01T00:00:00Z");
        out.clear();
        write_timestamp(&mut out, 951_782_400_123_000, Precision::Millis);
        assert_eq!(out, b"2000-02-29T00:00:00.123Z");
    }
}
