//! Date and time strings stored typed (JSON Tiles §4.3 step 10; JSON Tiles is Durner,
//! Leis, Neumann: "JSON Tiles: Fast Analytics on Semi-Structured Data", SIGMOD 2021).
//!
//! A shredded string path whose sampled values are dates or timestamps written one way
//! (one [`TimeFormat`] per path and file) is stored as a Parquet date or timestamp
//! column instead of text: a fixed-width integer that compresses far better and orders
//! chronologically. Documents must still read back exactly, so a value is typed only
//! when the format renders it back to the very same text: every field has a fixed
//! width, ranges are checked (no month 13, no February 30, no leap second), and the
//! zone is part of the format. Any other string at the path is an outlier and keeps
//! its text in the Variant binary, like any value of another type.

use std::fmt;
use std::str::FromStr;

use arrow::array::{Array, AsArray, StringArray, StringBuilder};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type, TimeUnit};
use arrow::error::ArrowError;

/// Key of the Arrow field metadata that carries a typed date/time column's format, so a
/// data file alone says how to render its values back to text.
pub const FORMAT_METADATA_KEY: &str = "tessera.datetime_format";

/// Values sampled per path to detect a format.
pub const SAMPLES: usize = 64;

/// Fewest string samples a format is decided on: a handful of dates in a text path
/// would otherwise type it.
const MIN_SAMPLES: usize = 8;

/// Share of sampled strings one format must render exactly for the path to be typed.
const MIN_SHARE: f64 = 0.9;

/// Most fractional-second digits (nanoseconds).
const MAX_DIGITS: u8 = 9;

/// The zone suffix of a timestamp rendering.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Zone {
    /// No zone: a local date and time, stored as if it were UTC.
    Naive,
    /// `Z`.
    Utc,
    /// `+hh:mm` or `-hh:mm`, in minutes east of UTC; the value stored is the UTC
    /// instant.
    Offset(i16),
}

impl Zone {
    /// Seconds the rendering's clock is ahead of UTC.
    fn seconds_east(self) -> i64 {
        match self {
            Zone::Offset(minutes) => i64::from(minutes) * 60,
            Zone::Naive | Zone::Utc => 0,
        }
    }
}

/// One exact rendering of dates or timestamps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeFormat {
    /// `YYYY-MM-DD`, stored as days since 1970-01-01 (Arrow `Date32`).
    Date,
    /// `YYYY-MM-DD` `separator` `hh:mm:ss`, then `.` and exactly `digits` fractional
    /// digits when `digits > 0`, then the zone; stored as microseconds (up to 6 digits)
    /// or nanoseconds since the epoch.
    Timestamp {
        /// `T` or a space.
        separator: u8,
        /// Fractional-second digits, 0..=9.
        digits: u8,
        /// The zone suffix.
        zone: Zone,
    },
}

impl TimeFormat {
    /// The format that renders `text` exactly, if any.
    pub fn of(text: &[u8]) -> Option<TimeFormat> {
        let format = if text.len() == 10 {
            TimeFormat::Date
        } else {
            let separator = *text.get(10)?;
            if !matches!(separator, b'T' | b' ') {
                return None;
            }
            let rest = text.get(19..)?;
            let digits = match rest.first() {
                Some(b'.') => rest[1..].iter().take_while(|b| b.is_ascii_digit()).count(),
                _ => 0,
            };
            if digits > usize::from(MAX_DIGITS) {
                return None;
            }
            let zone_at = if digits > 0 { digits + 1 } else { 0 };
            let zone = match &rest[zone_at..] {
                b"" => Zone::Naive,
                b"Z" => Zone::Utc,
                [sign @ (b'+' | b'-'), h1, h0, b':', m1, m0] => {
                    let hours = two_digits(*h1, *h0)?;
                    let minutes = two_digits(*m1, *m0)?;
                    if hours > 23 || minutes > 59 {
                        return None;
                    }
                    let offset = (hours * 60 + minutes) as i16;
                    Zone::Offset(if *sign == b'-' { -offset } else { offset })
                }
                _ => return None,
            };
            TimeFormat::Timestamp {
                separator,
                digits: u8::try_from(digits).ok()?,
                zone,
            }
        };
        format.parse(text).map(|_| format)
    }

    /// The most common format of the sampled strings, when it renders at least
    /// [`MIN_SHARE`] of at least [`MIN_SAMPLES`] of them exactly.
    pub fn detect<'a>(samples: impl IntoIterator<Item = &'a [u8]>) -> Option<TimeFormat> {
        let mut counts: Vec<(TimeFormat, usize)> = Vec::new();
        let mut total = 0;
        for sample in samples.into_iter().take(SAMPLES) {
            total += 1;
            let Some(format) = TimeFormat::of(sample) else {
                continue;
            };
            match counts.iter_mut().find(|(f, _)| *f == format) {
                Some((_, n)) => *n += 1,
                None => counts.push((format, 1)),
            }
        }
        let (format, n) = counts.into_iter().max_by_key(|&(_, n)| n)?;
        (total >= MIN_SAMPLES && n as f64 >= MIN_SHARE * total as f64).then_some(format)
    }

    /// The Arrow type of the typed column.
    pub fn data_type(&self) -> DataType {
        match *self {
            TimeFormat::Date => DataType::Date32,
            TimeFormat::Timestamp { digits, zone, .. } => DataType::Timestamp(
                if digits > 6 {
                    TimeUnit::Nanosecond
                } else {
                    TimeUnit::Microsecond
                },
                (zone != Zone::Naive).then(|| "UTC".into()),
            ),
        }
    }

    /// The stored value of `text` (days, or micro/nanoseconds since the epoch), when
    /// this format renders it back exactly.
    pub fn parse(&self, text: &[u8]) -> Option<i64> {
        let date = text.get(..10)?;
        if date[4] != b'-' || date[7] != b'-' {
            return None;
        }
        let year = i64::from(two_digits(date[0], date[1])? * 100 + two_digits(date[2], date[3])?);
        let month = two_digits(date[5], date[6])?;
        let day = two_digits(date[8], date[9])?;
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
            return None;
        }
        let days = days_from_civil(year, month, day);
        let TimeFormat::Timestamp {
            separator,
            digits,
            zone,
        } = *self
        else {
            return (text.len() == 10).then_some(days);
        };
        let time = text.get(10..19)?;
        if time[0] != separator || time[3] != b':' || time[6] != b':' {
            return None;
        }
        let hours = two_digits(time[1], time[2])?;
        let minutes = two_digits(time[4], time[5])?;
        let seconds = two_digits(time[7], time[8])?;
        if hours > 23 || minutes > 59 || seconds > 59 {
            return None;
        }
        let mut rest = &text[19..];
        let mut fraction = 0i64;
        if digits > 0 {
            let (dot, tail) = rest.split_first()?;
            let figures = tail.get(..usize::from(digits))?;
            if *dot != b'.' || !figures.iter().all(u8::is_ascii_digit) {
                return None;
            }
            fraction = figures.iter().fold(0, |n, b| n * 10 + i64::from(b - b'0'));
            rest = &tail[usize::from(digits)..];
        }
        if rest != zone_text(zone).as_bytes() {
            return None;
        }
        let offset = zone.seconds_east();
        let seconds = days * 86_400 + i64::from(hours * 3600 + minutes * 60 + seconds) - offset;
        let (per_second, scale) = self.units();
        seconds
            .checked_mul(per_second)?
            .checked_add(fraction * scale)
    }

    /// Appends the text of stored `value` to `out`: the inverse of [`Self::parse`].
    pub fn render(&self, value: i64, out: &mut String) {
        use std::fmt::Write;
        let TimeFormat::Timestamp {
            separator,
            digits,
            zone,
        } = *self
        else {
            write_date(value, out);
            return;
        };
        let (per_second, scale) = self.units();
        let offset = zone.seconds_east();
        let seconds = value.div_euclid(per_second).saturating_add(offset);
        let fraction = value.rem_euclid(per_second) / scale;
        write_date(seconds.div_euclid(86_400), out);
        let time = seconds.rem_euclid(86_400);
        let _ = write!(
            out,
            "{}{:02}:{:02}:{:02}",
            char::from(separator),
            time / 3600,
            time / 60 % 60,
            time % 60
        );
        if digits > 0 {
            let _ = write!(out, ".{fraction:0width$}", width = usize::from(digits));
        }
        out.push_str(&zone_text(zone));
    }

    /// The texts of a typed column written with this format (its stored integers as
    /// Date32, Timestamp or Int64), JSON-quoted with `quoted`; nulls stay null.
    pub fn render_array(&self, typed: &dyn Array, quoted: bool) -> Result<StringArray, ArrowError> {
        let stored = cast(typed, &DataType::Int64)?;
        let stored = stored.as_primitive::<Int64Type>();
        let mut out = StringBuilder::with_capacity(stored.len(), stored.len() * 32);
        let mut text = String::new();
        for value in stored {
            match value {
                Some(v) => {
                    text.clear();
                    if quoted {
                        text.push('"');
                    }
                    self.render(v, &mut text);
                    if quoted {
                        text.push('"');
                    }
                    out.append_value(&text);
                }
                None => out.append_null(),
            }
        }
        Ok(out.finish())
    }

    /// (stored units per second, stored units per last fractional digit).
    fn units(&self) -> (i64, i64) {
        match *self {
            TimeFormat::Date => (1, 1),
            TimeFormat::Timestamp { digits, .. } => {
                let per_second = if digits > 6 { 1_000_000_000 } else { 1_000_000 };
                let width = if digits > 6 { 9 } else { 6 };
                (per_second, 10i64.pow(u32::from(width - digits.min(width))))
            }
        }
    }
}

/// The chrono-style pattern of the format, e.g. `%Y-%m-%dT%H:%M:%S%.3fZ`.
impl fmt::Display for TimeFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("%Y-%m-%d")?;
        if let TimeFormat::Timestamp {
            separator,
            digits,
            zone,
        } = *self
        {
            write!(f, "{}%H:%M:%S", char::from(separator))?;
            if digits > 0 {
                write!(f, "%.{digits}f")?;
            }
            f.write_str(&zone_text(zone))?;
        }
        Ok(())
    }
}

/// Reads a pattern written by [`fmt::Display`] back.
impl FromStr for TimeFormat {
    type Err = String;

    fn from_str(pattern: &str) -> Result<Self, Self::Err> {
        let bad = || format!("not a Tessera date/time format: {pattern:?}");
        let rest = pattern.strip_prefix("%Y-%m-%d").ok_or_else(bad)?;
        if rest.is_empty() {
            return Ok(TimeFormat::Date);
        }
        let separator = *rest.as_bytes().first().ok_or_else(bad)?;
        let mut rest = rest[1..].strip_prefix("%H:%M:%S").ok_or_else(bad)?;
        let mut digits = 0;
        if let Some(tail) = rest.strip_prefix("%.") {
            let (n, tail) = tail.split_at_checked(1).ok_or_else(bad)?;
            digits = n.parse::<u8>().map_err(|_| bad())?;
            rest = tail.strip_prefix('f').ok_or_else(bad)?;
            if digits == 0 || digits > MAX_DIGITS {
                return Err(bad());
            }
        }
        let zone = match rest {
            "" => Zone::Naive,
            "Z" => Zone::Utc,
            offset => {
                let probe = format!("1970-01-01T00:00:00{offset}");
                match TimeFormat::of(probe.as_bytes()) {
                    Some(TimeFormat::Timestamp { zone, .. }) if zone_text(zone) == offset => zone,
                    _ => return Err(bad()),
                }
            }
        };
        if !matches!(separator, b'T' | b' ') {
            return Err(bad());
        }
        Ok(TimeFormat::Timestamp {
            separator,
            digits,
            zone,
        })
    }
}

fn zone_text(zone: Zone) -> String {
    match zone {
        Zone::Naive => String::new(),
        Zone::Utc => "Z".to_string(),
        Zone::Offset(minutes) => {
            let sign = if minutes < 0 { '-' } else { '+' };
            let minutes = minutes.unsigned_abs();
            format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
        }
    }
}

fn two_digits(tens: u8, ones: u8) -> Option<u32> {
    (tens.is_ascii_digit() && ones.is_ascii_digit())
        .then(|| u32::from(tens - b'0') * 10 + u32::from(ones - b'0'))
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Appends `YYYY-MM-DD` of `days` since 1970-01-01: the inverse of [`days_from_civil`].
fn write_date(days: i64, out: &mut String) {
    use std::fmt::Write;
    let days = days.saturating_add(719_468);
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let _ = write!(out, "{year:04}-{month:02}-{day:02}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> Option<(TimeFormat, i64)> {
        let format = TimeFormat::of(text.as_bytes())?;
        let value = format.parse(text.as_bytes()).expect("of() checked parse");
        let mut back = String::new();
        format.render(value, &mut back);
        assert_eq!(back, text, "{format}");
        assert_eq!(format.to_string().parse::<TimeFormat>(), Ok(format));
        Some((format, value))
    }

    #[test]
    fn renderings_read_back_exactly() {
        assert_eq!(round_trip("1970-01-01"), Some((TimeFormat::Date, 0)));
        assert_eq!(round_trip("1969-12-31").map(|r| r.1), Some(-1));
        assert_eq!(round_trip("2000-02-29").map(|r| r.1), Some(11_016));
        assert_eq!(
            round_trip("2024-11-21T16:06:58.310Z"),
            Some((
                TimeFormat::Timestamp {
                    separator: b'T',
                    digits: 3,
                    zone: Zone::Utc
                },
                1_732_205_218_310_000
            ))
        );
        // An offset is part of the format; the stored value is the UTC instant.
        assert_eq!(
            round_trip("2024-11-21T18:06:58+02:00").map(|r| r.1),
            Some(1_732_205_218_000_000)
        );
        assert_eq!(
            round_trip("2024-11-21 16:06:58.123456789").map(|r| r.1),
            Some(1_732_205_218_123_456_789)
        );
        for text in [
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999Z",
            "1900-03-01 00:00:00.1",
            "1960-06-15T12:00:00-09:30",
            "2262-04-11T23:47:16.854775807Z",
        ] {
            assert!(round_trip(text).is_some(), "{text}");
        }
    }

    #[test]
    fn texts_another_rendering_would_change_are_refused() {
        for text in [
            "2023-02-29",
            "2024-13-01",
            "2024-04-31",
            "2024-01-01T24:00:00Z",
            "2024-01-01T23:59:60Z",
            "2024-1-01",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+2:00",
            "2024-01-01T00:00:00+24:00",
            "2024-01-01T00:00:00z",
            "2024-01-01X00:00:00",
            "+2024-01-01",
            "2024-01-01T00:00:00.1234567890Z",
            "2262-04-11T23:47:16.854775808Z",
            "hello world",
            "",
        ] {
            let format = TimeFormat::of(text.as_bytes());
            assert_eq!(format, None, "{text}");
        }
        let millis = TimeFormat::of(b"2024-01-01T00:00:00.000Z").unwrap();
        assert_eq!(millis.parse(b"2024-01-01T00:00:00.00Z"), None);
        assert_eq!(millis.parse(b"2024-01-01T00:00:00Z"), None);
        assert_eq!(millis.parse(b"2024-01-01 00:00:00.000Z"), None);
    }

    #[test]
    fn detection_needs_most_samples_in_one_format() {
        let dates: Vec<String> = (1..=20).map(|d| format!("2024-01-{d:02}")).collect();
        let samples = || dates.iter().map(|s| s.as_bytes());
        assert_eq!(TimeFormat::detect(samples()), Some(TimeFormat::Date));
        // Too few samples.
        assert_eq!(TimeFormat::detect(samples().take(5)), None);
        // Three of twenty are free text: 85% is below the share.
        let mixed = samples()
            .take(17)
            .chain(["n/a".as_bytes(), b"soon", b"2024-01-01 "]);
        assert_eq!(TimeFormat::detect(mixed), None);
        // One odd value of twenty: 95%.
        let one_off = samples().take(19).chain(["tomorrow".as_bytes()]);
        assert_eq!(TimeFormat::detect(one_off), Some(TimeFormat::Date));
    }

    #[test]
    fn formats_read_as_patterns() {
        assert_eq!(
            "%Y-%m-%dT%H:%M:%S%.3fZ".parse::<TimeFormat>(),
            Ok(TimeFormat::Timestamp {
                separator: b'T',
                digits: 3,
                zone: Zone::Utc
            })
        );
        for bad in [
            "%Y",
            "%Y-%m-%dX%H:%M:%S",
            "%Y-%m-%dT%H:%M:%S%.0f",
            "%Y-%m-%dT%H:%M:%S+99:00",
        ] {
            assert!(bad.parse::<TimeFormat>().is_err(), "{bad}");
        }
    }
}
