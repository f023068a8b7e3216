//! The S3 Select SQL of a CSV scan: the columns it reads, by position (`s._1`: the
//! scan reads every file's columns by position, in the table's schema, whatever its
//! header says), and a condition over the rows.
//!
//! A CSV field is text to S3 Select, so a number is compared through
//! `CAST(.. AS FLOAT)`, which fails the whole request on a field that is no number (an
//! empty field, which the scan reads as NULL, among them). Such a request is sent again
//! without the conditions that can fail ([`CsvSelect::robust`]); the projection alone
//! still saves the other columns' bytes. As for JSON ([`crate::select_sql`]), every
//! condition holds for at least the rows the scan's filter keeps, and the filter tests
//! the returned rows again.

use std::fmt::Write;

use crate::select_sql::{
    FIELDS_MAX, NUMBER_MAGNITUDE_MAX, Ordering, is_iso_date, string, write_joined,
};

/// A condition a store evaluates per CSV row.
#[derive(Debug, Clone, PartialEq)]
pub enum CsvCondition {
    /// The field, read as a number, compares with `value`. With `nan_passes`, a field
    /// holding an `n` (`NaN`, `inf`) passes too: a float column's NaN sorts above every
    /// number where the scan compares, and below none in the store.
    Number {
        /// The column's position, from 0.
        column: usize,
        /// How it compares.
        ordering: Ordering,
        /// The constant, at most [`NUMBER_MAGNITUDE_MAX`] in magnitude.
        value: f64,
        /// Whether text that may be a NaN passes.
        nan_passes: bool,
    },
    /// The field is one of `values`.
    StringIn {
        /// The column's position, from 0.
        column: usize,
        /// The accepted texts; never empty.
        values: Vec<String>,
    },
    /// The date written `YYYY-MM-DD` in the field compares with `date` as `ordering`
    /// says; text of another length passes (it does not sort as its date).
    Date {
        /// The column's position, from 0.
        column: usize,
        /// How it compares.
        ordering: Ordering,
        /// The constant, `YYYY-MM-DD`.
        date: String,
    },
    /// The field at this position is not empty (the scan reads an empty field as NULL).
    NotEmpty(usize),
    /// All of these hold.
    And(Vec<CsvCondition>),
    /// One of these holds.
    Or(Vec<CsvCondition>),
}

impl CsvCondition {
    /// Whether no row can make the condition fail the request: only number comparisons
    /// can (their cast).
    pub fn is_robust(&self) -> bool {
        match self {
            CsvCondition::Number { .. } => false,
            CsvCondition::StringIn { .. } | CsvCondition::Date { .. } => true,
            CsvCondition::NotEmpty(_) => true,
            CsvCondition::And(parts) | CsvCondition::Or(parts) => parts.iter().all(Self::is_robust),
        }
    }

    /// The weakest robust part: conjuncts that are not robust are dropped, a
    /// disjunction with one is dropped whole. `None` when nothing is left.
    fn robust(&self) -> Option<CsvCondition> {
        match self {
            CsvCondition::And(parts) => {
                let mut kept: Vec<CsvCondition> = parts.iter().filter_map(Self::robust).collect();
                match kept.len() {
                    0 => None,
                    1 => kept.pop(),
                    _ => Some(CsvCondition::And(kept)),
                }
            }
            other => other.is_robust().then(|| other.clone()),
        }
    }

    fn write(&self, out: &mut String) {
        match self {
            CsvCondition::Number {
                column,
                ordering,
                value,
                nan_passes,
            } => {
                assert!(value.abs() <= NUMBER_MAGNITUDE_MAX, "a bounded constant");
                let field = field(*column);
                let cast = format!("CAST({field} AS FLOAT) {} {value}", ordering.sql());
                match nan_passes {
                    true => write!(out, "({field} LIKE '%n%' OR {field} LIKE '%N%' OR {cast})"),
                    false => write!(out, "{cast}"),
                }
                .expect("writing to a String");
            }
            CsvCondition::StringIn { column, values } => {
                assert!(!values.is_empty(), "a value to accept");
                let values: Vec<String> = values.iter().map(|v| string(v)).collect();
                write!(out, "{} IN ({})", field(*column), values.join(", "))
                    .expect("writing to a String");
            }
            CsvCondition::Date {
                column,
                ordering,
                date,
            } => {
                assert!(is_iso_date(date), "a YYYY-MM-DD constant");
                let field = field(*column);
                write!(
                    out,
                    "(CHAR_LENGTH({field}) != 10 OR {field} {} {})",
                    ordering.sql(),
                    string(date)
                )
                .expect("writing to a String");
            }
            CsvCondition::NotEmpty(column) => {
                write!(out, "{} != ''", field(*column)).expect("writing to a String")
            }
            CsvCondition::And(parts) => write_joined(parts, " AND ", out, Self::write),
            CsvCondition::Or(parts) => write_joined(parts, " OR ", out, Self::write),
        }
    }
}

/// What one S3 Select request over a CSV object with a header line asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvSelect {
    /// The columns returned, by position from 0, in this order; never empty.
    pub columns: Vec<usize>,
    /// The rows returned; `None`: all of them.
    pub condition: Option<CsvCondition>,
}

impl CsvSelect {
    /// The request's SQL.
    pub fn sql(&self) -> String {
        assert!(
            !self.columns.is_empty() && self.columns.len() <= FIELDS_MAX,
            "columns bounded"
        );
        let columns: Vec<String> = self.columns.iter().map(|c| field(*c)).collect();
        let mut out = format!("SELECT {} FROM s3object s", columns.join(", "));
        if let Some(condition) = &self.condition {
            out.push_str(" WHERE ");
            condition.write(&mut out);
        }
        out
    }

    /// The same request with only the conditions no row can make fail, or `None` when
    /// it has none that can.
    pub fn robust(&self) -> Option<CsvSelect> {
        let condition = self.condition.as_ref()?;
        if condition.is_robust() {
            return None;
        }
        Some(CsvSelect {
            columns: self.columns.clone(),
            condition: condition.robust(),
        })
    }
}

fn field(column: usize) -> String {
    format!("s._{}", column + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(column: usize, ordering: Ordering, value: f64, nan_passes: bool) -> CsvCondition {
        CsvCondition::Number {
            column,
            ordering,
            value,
            nan_passes,
        }
    }

    #[test]
    fn columns_and_conditions_are_written_as_the_store_reads_them() {
        let select = CsvSelect {
            columns: vec![4, 14],
            condition: Some(CsvCondition::And(vec![
                number(4, Ordering::Less, 24.0, false),
                number(6, Ordering::Greater, 0.05, true),
                CsvCondition::StringIn {
                    column: 14,
                    values: vec!["MAIL".into(), "O'NE".into()],
                },
                CsvCondition::Or(vec![
                    CsvCondition::Date {
                        column: 10,
                        ordering: Ordering::GreaterOrEqual,
                        date: "1994-01-01".into(),
                    },
                    CsvCondition::NotEmpty(0),
                ]),
            ])),
        };
        assert_eq!(
            select.sql(),
            "SELECT s._5, s._15 FROM s3object s WHERE (CAST(s._5 AS FLOAT) < 24 AND \
             (s._7 LIKE '%n%' OR s._7 LIKE '%N%' OR CAST(s._7 AS FLOAT) > 0.05) AND \
             s._15 IN ('MAIL', 'O''NE') AND ((CHAR_LENGTH(s._11) != 10 OR \
             s._11 >= '1994-01-01') OR s._1 != ''))"
        );
    }

    #[test]
    fn the_robust_request_keeps_only_conditions_that_cannot_fail() {
        let text = CsvCondition::NotEmpty(0);
        let cast = number(1, Ordering::Less, 1.0, false);
        let select = |condition| CsvSelect {
            columns: vec![0],
            condition,
        };
        let both = select(Some(CsvCondition::And(vec![text.clone(), cast.clone()])));
        assert_eq!(both.robust(), Some(select(Some(text.clone()))));
        let either = select(Some(CsvCondition::Or(vec![text.clone(), cast.clone()])));
        assert_eq!(either.robust(), Some(select(None)));
        assert_eq!(select(Some(text)).robust(), None, "nothing can fail");
        assert_eq!(select(None).robust(), None);
    }
}
