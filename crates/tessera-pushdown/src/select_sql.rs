//! The S3 Select SQL of a scan: the paths it reads as the fields `c0`, `c1`, ... of each
//! returned record, and a condition over the documents.
//!
//! Every condition here is *conservative*: it holds for at least every document the
//! scan's own filters keep, and the scan filters the returned records again, so a
//! pushed condition only ever saves bytes. That lets the conditions be written in the
//! few forms a store's evaluator accepts on heterogeneous JSON. MinIO's, for one, stops
//! the whole request on an ordered comparison with a missing value, a `null` or a value
//! of another type, even under `IS NOT MISSING AND ...`, and has no `CASE`; so an
//! ordered comparison is written `(p IS MISSING OR COALESCE(p, v) op v)`, which lets
//! missing values and nulls through (the local filter rejects them), and a request that
//! still fails on a value of another type is sent again with only the conditions that
//! cannot fail ([`SelectScan::robust`]). A Bloom join's test of the probe side's key
//! ([`Condition::Bloom`]) is one of those that can.

use std::fmt::{self, Write};
use std::sync::Arc;

use tessera_json::path::PathElem;

use crate::bloom::BloomFilter;

/// Largest magnitude of a numeric constant a comparison is pushed with: stores compare
/// numbers as doubles, and a document's integer above 2^53 may round onto the constant.
/// Below 2^52 rounding keeps every integer on its side of the constant.
pub const NUMBER_MAGNITUDE_MAX: f64 = (1u64 << 52) as f64;

/// Most fields one request returns; beyond it the request is not worth building.
pub const FIELDS_MAX: usize = 256;

/// An ordered comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ordering {
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `>`
    Greater,
    /// `>=`
    GreaterOrEqual,
}

impl Ordering {
    /// The operator as S3 Select writes it.
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Ordering::Less => "<",
            Ordering::LessOrEqual => "<=",
            Ordering::Greater => ">",
            Ordering::GreaterOrEqual => ">=",
        }
    }
}

/// A condition a store evaluates per document; see the module documentation for why
/// each holds for a superset of what the scan keeps.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The value at `path` is a string equal to one of `values`.
    StringIn {
        /// Where the value is.
        path: Vec<PathElem>,
        /// The accepted strings; never empty.
        values: Vec<String>,
    },
    /// The value at `path` is present and not `null`.
    NotNull(Vec<PathElem>),
    /// The number at `path` compares with `value` as `ordering` says (missing values
    /// and nulls pass).
    Number {
        /// Where the value is.
        path: Vec<PathElem>,
        /// How it compares.
        ordering: Ordering,
        /// The constant, at most [`NUMBER_MAGNITUDE_MAX`] in magnitude.
        value: f64,
    },
    /// The date written `YYYY-MM-DD` at `path` compares with `date` as `ordering` says;
    /// text of another length, missing values and nulls pass. Such dates sort as
    /// their text does.
    Date {
        /// Where the value is.
        path: Vec<PathElem>,
        /// How it compares.
        ordering: Ordering,
        /// The constant, `YYYY-MM-DD`.
        date: String,
    },
    /// The value at `path`, when present and not null, is an integer: a guard, not a
    /// filter. A store writes an integral double (`17.0`, `1e3`) as an integer, so what
    /// it returns to a read of integers (`json_get_int`, which gives NULL for a double)
    /// must come from integers only. The guard makes the request fail on any other value
    /// (`SUBSTRING` takes an integer length only, and the request stops), and the scan
    /// then reads the object itself; it is never left out of a request.
    IntegerGuard(Vec<PathElem>),
    /// The value at `path`, when present and not null, is a number: a guard, not a
    /// filter (arithmetic on anything else fails the request).
    NumberGuard(Vec<PathElem>),
    /// The integer at `path` may be a key of `filter` (missing values and nulls, which
    /// join nothing, do not pass): a Bloom join's probe side.
    Bloom {
        /// Where the value is.
        path: Vec<PathElem>,
        /// The build side's keys.
        filter: Arc<BloomFilter>,
    },
    /// Exactly: the number at `path` compares with `value` as `ordering` says; the
    /// request fails on a missing value, a null or a value of another type (what an
    /// aggregation the store computes needs).
    NumberExact {
        /// Where the value is.
        path: Vec<PathElem>,
        /// How it compares.
        ordering: Ordering,
        /// The constant, at most [`NUMBER_MAGNITUDE_MAX`] in magnitude.
        value: f64,
    },
    /// Exactly: the date written `YYYY-MM-DD` at `path` compares with `date` as
    /// `ordering` says; the request fails on text of another length (a date written
    /// otherwise, which its text would not order as the date), a missing value, a null
    /// or a value of another type.
    DateExact {
        /// Where the value is.
        path: Vec<PathElem>,
        /// How it compares.
        ordering: Ordering,
        /// The constant, `YYYY-MM-DD`.
        date: String,
    },
    /// Exactly: each key equals its value, the documents of one group of a group-by.
    KeysEqual(Vec<(Scalar, KeyValue)>),
    /// The document is in none of `groups` (a value per key each): a key's path is
    /// missing or null, or the keys equal no group's values. The rest of a hybrid
    /// group-by, whose groups the store aggregated; never left out of a request.
    NotInGroups {
        /// The group keys.
        keys: Vec<Scalar>,
        /// The groups aggregated elsewhere; never empty.
        groups: Vec<Vec<KeyValue>>,
    },
    /// All of them hold.
    And(Vec<Condition>),
    /// One of them holds.
    Or(Vec<Condition>),
}

impl Condition {
    /// Whether a store evaluates this on any document without failing, or it must stay
    /// (a guard fails where the answer could not be read anyway): string equality and
    /// null tests do, ordered comparisons fail on values of another type.
    pub fn is_robust(&self) -> bool {
        match self {
            Condition::StringIn { .. }
            | Condition::NotNull(_)
            | Condition::IntegerGuard(_)
            | Condition::NumberGuard(_)
            | Condition::NotInGroups { .. } => true,
            Condition::Number { .. }
            | Condition::Date { .. }
            | Condition::Bloom { .. }
            | Condition::NumberExact { .. }
            | Condition::DateExact { .. }
            | Condition::KeysEqual(_) => false,
            Condition::And(parts) | Condition::Or(parts) => parts.iter().all(Self::is_robust),
        }
    }

    /// The weakest part of this condition that is robust: conjuncts that are not are
    /// dropped (a conjunction of fewer terms holds for more documents), a disjunction
    /// with one that is not is dropped whole. `None` when nothing robust is left.
    fn robust(&self) -> Option<Condition> {
        match self {
            Condition::And(parts) => {
                let kept: Vec<Condition> = parts.iter().filter_map(Self::robust).collect();
                match kept.len() {
                    0 => None,
                    1 => kept.into_iter().next(),
                    _ => Some(Condition::And(kept)),
                }
            }
            other => other.is_robust().then(|| other.clone()),
        }
    }

    pub(crate) fn write(&self, out: &mut String) {
        match self {
            Condition::StringIn { path, values } => {
                assert!(!values.is_empty(), "an IN list has a value");
                let path = field(path);
                match values.as_slice() {
                    [one] => write!(out, "{path} = {}", string(one)),
                    many => {
                        let list: Vec<String> = many.iter().map(|v| string(v)).collect();
                        write!(out, "{path} IN ({})", list.join(", "))
                    }
                }
                .expect("writing to a String");
            }
            Condition::NotNull(path) => {
                write!(out, "{} IS NOT NULL", field(path)).expect("writing to a String");
            }
            Condition::IntegerGuard(path) => {
                let path = field(path);
                write!(
                    out,
                    "({path} IS MISSING OR {path} IS NULL OR SUBSTRING('1', 1, {path} - {path} + 1) = '1')"
                )
                .expect("writing to a String");
            }
            Condition::NumberGuard(path) => {
                let path = field(path);
                write!(
                    out,
                    "({path} IS MISSING OR {path} IS NULL OR {path} - {path} = 0)"
                )
                .expect("writing to a String");
            }
            Condition::Number {
                path,
                ordering,
                value,
            }
            | Condition::NumberExact {
                path,
                ordering,
                value,
            } => {
                assert!(value.abs() <= NUMBER_MAGNITUDE_MAX, "a pushable constant");
                let (path, value) = (field(path), number(*value));
                let op = ordering.sql();
                match self {
                    Condition::Number { .. } => write!(
                        out,
                        "({path} IS MISSING OR COALESCE({path}, {value}) {op} {value})"
                    ),
                    _ => write!(out, "{path} {op} {value}"),
                }
                .expect("writing to a String");
            }
            Condition::Date {
                path,
                ordering,
                date,
            }
            | Condition::DateExact {
                path,
                ordering,
                date,
            } => {
                assert!(is_iso_date(date), "a YYYY-MM-DD constant");
                let (path, date) = (field(path), string(date));
                let op = ordering.sql();
                match self {
                    Condition::Date { .. } => write!(
                        out,
                        "({path} IS MISSING OR CHAR_LENGTH(COALESCE({path}, '')) != 10 \
                         OR COALESCE({path}, {date}) {op} {date})"
                    ),
                    // A negative length fails SUBSTRING: the text is 10 long or the
                    // request fails.
                    _ => write!(
                        out,
                        "(SUBSTRING('1', 1, 10 - CHAR_LENGTH({path})) = '' \
                         AND SUBSTRING('1', 1, CHAR_LENGTH({path}) - 10) = '' AND {path} {op} {date})"
                    ),
                }
                .expect("writing to a String");
            }
            Condition::Bloom { path, filter } => out.push_str(&filter.test_sql(&field(path))),
            Condition::KeysEqual(pairs) => write_keys_equal(pairs, out),
            Condition::NotInGroups { keys, groups } => {
                assert!(!groups.is_empty(), "a group to leave out");
                out.push('(');
                for path in keys.iter().flat_map(Scalar::paths) {
                    let path = field(path);
                    write!(out, "{path} IS MISSING OR {path} IS NULL OR ").expect("a String");
                }
                out.push_str("NOT (");
                for (i, group) in groups.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" OR ");
                    }
                    let pairs: Vec<(Scalar, KeyValue)> =
                        keys.iter().cloned().zip(group.iter().cloned()).collect();
                    write_keys_equal(&pairs, out);
                }
                out.push_str("))");
            }
            Condition::And(parts) => write_joined(parts, " AND ", out, Condition::write),
            Condition::Or(parts) => write_joined(parts, " OR ", out, Condition::write),
        }
    }
}

/// An arithmetic operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    /// `+`
    Add,
    /// `-`
    Subtract,
    /// `*`
    Multiply,
    /// `%` of integers (truncated, as SQL's and Rust's).
    Modulo,
}

impl Arith {
    fn sql(self) -> &'static str {
        match self {
            Arith::Add => "+",
            Arith::Subtract => "-",
            Arith::Multiply => "*",
            Arith::Modulo => "%",
        }
    }
}

/// A value the store computes per document.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// The value at a path as the document has it (a string, or an integer that a
    /// guard ensures is one).
    Field(Vec<PathElem>),
    /// The number at a path as a double: an integer converted before any arithmetic,
    /// as a read of doubles converts it.
    Double(Vec<PathElem>),
    /// A numeric constant, at most [`NUMBER_MAGNITUDE_MAX`] in magnitude.
    Number(f64),
    /// An integer constant.
    Integer(i64),
    /// Arithmetic of two values.
    Arith(Box<Scalar>, Arith, Box<Scalar>),
}

impl Scalar {
    /// The paths the value reads.
    pub fn paths(&self) -> Vec<&[PathElem]> {
        match self {
            Scalar::Field(path) | Scalar::Double(path) => vec![path.as_slice()],
            Scalar::Number(_) | Scalar::Integer(_) => Vec::new(),
            Scalar::Arith(left, _, right) => {
                let mut paths = left.paths();
                paths.extend(right.paths());
                paths
            }
        }
    }

    pub(crate) fn write(&self, out: &mut String) {
        match self {
            Scalar::Field(path) => out.push_str(&field(path)),
            Scalar::Double(path) => write!(out, "({} * 1.0)", field(path)).expect("a String"),
            Scalar::Number(value) => {
                assert!(value.abs() <= NUMBER_MAGNITUDE_MAX, "a pushable constant");
                write!(out, "{value}").expect("a String");
            }
            Scalar::Integer(value) => write!(out, "{value}").expect("a String"),
            Scalar::Arith(left, op, right) => {
                out.push('(');
                left.write(out);
                write!(out, " {} ", op.sql()).expect("a String");
                right.write(out);
                out.push(')');
            }
        }
    }
}

/// A group key's value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyValue {
    /// A string.
    Text(String),
    /// An integer.
    Integer(i64),
}

impl KeyValue {
    pub(crate) fn write(&self, out: &mut String) {
        match self {
            KeyValue::Text(text) => out.push_str(&string(text)),
            KeyValue::Integer(value) => write!(out, "{value}").expect("a String"),
        }
    }
}

/// `condition` (if any) and then `extra`, as one conjunction.
/// `parts`, each written by `write`, between `separator`s, in parentheses.
pub(crate) fn write_joined<T>(
    parts: &[T],
    separator: &str,
    out: &mut String,
    write: impl Fn(&T, &mut String),
) {
    out.push('(');
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        write(part, out);
    }
    out.push(')');
}

pub(crate) fn conjoined(condition: Option<Condition>, extra: Condition) -> Condition {
    match condition {
        None => extra,
        Some(Condition::And(mut parts)) => {
            parts.push(extra);
            Condition::And(parts)
        }
        Some(other) => Condition::And(vec![other, extra]),
    }
}

/// `(k1 = v1 AND k2 = v2 ...)`.
fn write_keys_equal(pairs: &[(Scalar, KeyValue)], out: &mut String) {
    assert!(!pairs.is_empty(), "a key");
    out.push('(');
    for (i, (key, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push_str(" AND ");
        }
        key.write(out);
        out.push_str(" = ");
        value.write(out);
    }
    out.push(')');
}

/// What one S3 Select request over a JSON-lines object asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectScan {
    /// The paths returned, as the fields `c0`, `c1`, ... of each record; a path that is
    /// missing from a document is missing from its record.
    pub fields: Vec<Vec<PathElem>>,
    /// The documents returned; `None`: all of them.
    pub condition: Option<Condition>,
}

impl SelectScan {
    /// The request's SQL.
    pub fn sql(&self) -> String {
        assert!(self.fields.len() <= FIELDS_MAX, "fields bounded");
        let mut out = String::from("SELECT ");
        if self.fields.is_empty() {
            // A record per document and nothing in it: the scan counts them.
            out.push_str("1 AS c0");
        }
        for (i, path) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            write!(out, "{} AS c{i}", field(path)).expect("writing to a String");
        }
        out.push_str(" FROM s3object s");
        if let Some(condition) = &self.condition {
            out.push_str(" WHERE ");
            condition.write(&mut out);
        }
        out
    }

    /// The request's SQL returning at most `rows` records: a sample.
    pub fn limited_sql(&self, rows: u64) -> String {
        format!("{} LIMIT {rows}", self.sql())
    }

    /// The same scan returning only the documents for which `extra` holds too.
    pub fn with_condition(&self, extra: Condition) -> SelectScan {
        SelectScan {
            fields: self.fields.clone(),
            condition: Some(conjoined(self.condition.clone(), extra)),
        }
    }

    /// The same scan with only the conditions no document can make fail, or `None` when
    /// it has none that can.
    pub fn robust(&self) -> Option<SelectScan> {
        let condition = self.condition.as_ref()?;
        if condition.is_robust() {
            return None;
        }
        Some(SelectScan {
            fields: self.fields.clone(),
            condition: condition.robust(),
        })
    }
}

/// Whether `path` can be written as an S3 Select path: keys without quotes or control
/// characters, indexes from the start.
pub fn is_pushable_path(path: &[PathElem]) -> bool {
    !path.is_empty()
        && path.iter().all(|step| match step {
            PathElem::Key(k) => !k.is_empty() && !k.chars().any(|c| c == '"' || c.is_control()),
            PathElem::Index(i) => *i >= 0,
        })
}

/// Whether `text` is a date written `YYYY-MM-DD`.
pub fn is_iso_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

/// Whether a string constant compared with `->>` text can only equal the text of a JSON
/// string: not the text a number, `true`, `false` or a container has.
pub fn only_strings_equal(text: &str) -> bool {
    let looks_like_number = text
        .bytes()
        .next()
        .is_some_and(|c| c == b'-' || c.is_ascii_digit());
    !(looks_like_number
        || text == "true"
        || text == "false"
        || text.starts_with('{')
        || text.starts_with('['))
}

pub(crate) fn field(path: &[PathElem]) -> String {
    assert!(is_pushable_path(path), "a pushable path: {path:?}");
    let mut out = String::from("s");
    for step in path {
        match step {
            PathElem::Key(k) => write!(out, ".\"{k}\""),
            PathElem::Index(i) => write!(out, "[{i}]"),
        }
        .expect("writing to a String");
    }
    out
}

pub(crate) fn string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn number(value: f64) -> impl fmt::Display {
    // Rust's shortest round-trip form, never an exponent.
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Vec<PathElem> {
        vec![PathElem::Key(k.into())]
    }

    #[test]
    fn fields_and_conditions_are_written_as_the_store_reads_them() {
        let scan = SelectScan {
            fields: vec![
                key("kind"),
                vec![PathElem::Key("a b".into()), PathElem::Index(2)],
            ],
            condition: Some(Condition::And(vec![
                Condition::StringIn {
                    path: key("kind"),
                    values: vec!["it's".into()],
                },
                Condition::Number {
                    path: key("n"),
                    ordering: Ordering::Less,
                    value: 0.05,
                },
                Condition::Date {
                    path: key("d"),
                    ordering: Ordering::GreaterOrEqual,
                    date: "1994-01-01".into(),
                },
            ])),
        };
        assert_eq!(
            scan.sql(),
            "SELECT s.\"kind\" AS c0, s.\"a b\"[2] AS c1 FROM s3object s WHERE \
             (s.\"kind\" = 'it''s' AND (s.\"n\" IS MISSING OR COALESCE(s.\"n\", 0.05) < 0.05) \
             AND (s.\"d\" IS MISSING OR CHAR_LENGTH(COALESCE(s.\"d\", '')) != 10 \
             OR COALESCE(s.\"d\", '1994-01-01') >= '1994-01-01'))"
        );
    }

    #[test]
    fn the_robust_scan_keeps_only_conditions_that_cannot_fail() {
        let number = Condition::Number {
            path: key("n"),
            ordering: Ordering::Greater,
            value: 3.0,
        };
        let strings = Condition::StringIn {
            path: key("k"),
            values: vec!["a".into(), "b".into()],
        };
        let scan = |condition| SelectScan {
            fields: vec![key("n")],
            condition: Some(condition),
        };
        let both = scan(Condition::And(vec![number.clone(), strings.clone()]));
        assert_eq!(both.robust(), Some(scan(strings.clone())));
        // A disjunction with a comparison is dropped whole: fewer documents would pass.
        let either = scan(Condition::Or(vec![number.clone(), strings.clone()]));
        assert_eq!(either.robust().unwrap().condition, None);
        // A guard is never left out.
        let guard = Condition::IntegerGuard(key("i"));
        let guarded = scan(Condition::And(vec![number.clone(), guard.clone()]));
        assert_eq!(guarded.robust(), Some(scan(guard.clone())));
        assert_eq!(scan(guard).robust(), None);
        // Already robust: nothing to send again.
        assert_eq!(scan(strings).robust(), None);
        assert_eq!(scan(number).robust().unwrap().condition, None);
    }

    #[test]
    fn constants_that_other_json_types_print_as_are_not_string_only() {
        for text in ["5", "-1", "true", "false", "{\"a\":1}", "[1]"] {
            assert!(!only_strings_equal(text), "{text}");
        }
        for text in ["commit", "", "app.bsky.feed.post", " 5", "null"] {
            assert!(only_strings_equal(text), "{text}");
        }
    }

    #[test]
    fn paths_and_dates_are_checked() {
        assert!(is_pushable_path(&key("a.b")));
        assert!(!is_pushable_path(&key("a\"b")));
        assert!(!is_pushable_path(&[PathElem::Index(-1)]));
        assert!(!is_pushable_path(&[]));
        assert!(is_iso_date("1998-09-02"));
        assert!(!is_iso_date("1998-9-02"));
        assert!(!is_iso_date("1998/09/02"));
    }

    #[test]
    fn a_scan_without_fields_returns_a_record_per_document() {
        let scan = SelectScan {
            fields: vec![],
            condition: Some(Condition::NotNull(key("k"))),
        };
        assert_eq!(
            scan.sql(),
            "SELECT 1 AS c0 FROM s3object s WHERE s.\"k\" IS NOT NULL"
        );
    }
}
