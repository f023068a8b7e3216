//! The S3 Select SQL of an aggregation: PushdownDB's pushed aggregation and its
//! S3-side group-by ("PushdownDB: Accelerating a DBMS using S3 Computation", ICDE 2020,
//! §III and §VI), one request per object and group.
//!
//! A filter's store condition may hold for more documents than the filter keeps, since
//! the scan filters the returned records again ([`crate::select_sql`]). An aggregate
//! the store computes has no second filter, so its condition must be *exact*: for every
//! document the store either decides as the scan's filter would, or fails the request
//! (and the object is then read by the scan itself). MinIO's evaluator makes that
//! cheap to state: an ordered comparison with a missing value, a null or a value of
//! another type fails, arithmetic on anything but numbers (nulls included) fails, and
//! `SUM`, `MIN` and `MAX` skip nulls, as SQL aggregates skip NULLs, but fail on anything
//! else that is no number, a missing value included. So [`Condition::NumberExact`] is a
//! plain comparison, a read of doubles in arithmetic converts integers first
//! ([`Scalar::Double`]), a `COUNT` of a number is sent with a `SUM` beside it that
//! fails where a value is no number, and over sparse documents a request leaves out
//! those without the value its aggregates read, where that is exact.
//!
//! MinIO has no `CASE`, so each group of an S3-side group-by is one request whose
//! condition adds the group's keys ([`Condition::KeysEqual`]); PushdownDB's hybrid
//! group-by returns the documents of the other groups to be aggregated locally, which
//! the scan asks for with [`Condition::NotInGroups`].

use std::fmt::Write;

use crate::select_sql::{Condition, FIELDS_MAX, KeyValue, Scalar, conjoined};

/// Most groups one object is asked for, one request each: PushdownDB found 6 to 8
/// groups aggregated in S3 fastest (§VI-B), the store scanning the object once per
/// group.
pub const GROUPS_MAX: usize = 8;

/// An aggregate the store computes over the documents a request keeps.
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregate {
    /// `COUNT(*)`.
    CountAll,
    /// The values that are not null, missing ones included.
    Count(Scalar),
    /// Their sum, as a double (0 when there are none).
    Sum(Scalar),
    /// Their least (null when there are none).
    Min(Scalar),
    /// Their greatest (null when there are none).
    Max(Scalar),
}

impl Aggregate {
    fn write(&self, out: &mut String) {
        let (name, scalar) = match self {
            Aggregate::CountAll => return out.push_str("COUNT(*)"),
            Aggregate::Count(s) => ("COUNT", s),
            Aggregate::Sum(s) => ("SUM", s),
            Aggregate::Min(s) => ("MIN", s),
            Aggregate::Max(s) => ("MAX", s),
        };
        out.push_str(name);
        out.push('(');
        scalar.write(out);
        out.push(')');
    }
}

/// One S3 Select request aggregating the documents of one object for which `condition`
/// holds; its answer is one record whose field `c{i}` is aggregate `i`.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectAggregate {
    /// The aggregates, at most [`FIELDS_MAX`].
    pub aggregates: Vec<Aggregate>,
    /// The documents aggregated, exactly; `None`: all of them.
    pub condition: Option<Condition>,
}

impl SelectAggregate {
    /// The request's SQL.
    pub fn sql(&self) -> String {
        assert!(
            !self.aggregates.is_empty() && self.aggregates.len() <= FIELDS_MAX,
            "aggregates bounded"
        );
        let mut out = String::from("SELECT ");
        for (i, aggregate) in self.aggregates.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            aggregate.write(&mut out);
            write!(out, " AS c{i}").expect("a String");
        }
        out.push_str(" FROM s3object s");
        if let Some(condition) = &self.condition {
            out.push_str(" WHERE ");
            condition.write(&mut out);
        }
        out
    }

    /// The same request over the documents of one group too.
    pub fn of_group(&self, keys: &[Scalar], group: &[KeyValue]) -> SelectAggregate {
        assert_eq!(keys.len(), group.len(), "a value per key");
        let equal = Condition::KeysEqual(keys.iter().cloned().zip(group.iter().cloned()).collect());
        SelectAggregate {
            aggregates: self.aggregates.clone(),
            condition: Some(conjoined(self.condition.clone(), equal)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select_sql::{Arith, Ordering};
    use tessera_json::path::PathElem;

    fn key(k: &str) -> Vec<PathElem> {
        vec![PathElem::Key(k.into())]
    }

    #[test]
    fn an_aggregation_is_written_with_exact_conditions() {
        let revenue = Scalar::Arith(
            Box::new(Scalar::Double(key("price"))),
            Arith::Multiply,
            Box::new(Scalar::Arith(
                Box::new(Scalar::Number(1.0)),
                Arith::Subtract,
                Box::new(Scalar::Double(key("disc"))),
            )),
        );
        let request = SelectAggregate {
            aggregates: vec![Aggregate::CountAll, Aggregate::Sum(revenue)],
            condition: Some(Condition::And(vec![
                Condition::NumberExact {
                    path: key("q"),
                    ordering: Ordering::Less,
                    value: 24.0,
                },
                Condition::DateExact {
                    path: key("d"),
                    ordering: Ordering::GreaterOrEqual,
                    date: "1994-01-01".into(),
                },
            ])),
        };
        assert_eq!(
            request.sql(),
            "SELECT COUNT(*) AS c0, SUM(((s.\"price\" * 1.0) * (1 - (s.\"disc\" * 1.0)))) AS c1 \
             FROM s3object s WHERE (s.\"q\" < 24 AND \
             (SUBSTRING('1', 1, 10 - CHAR_LENGTH(s.\"d\")) = '' \
             AND SUBSTRING('1', 1, CHAR_LENGTH(s.\"d\") - 10) = '' AND s.\"d\" >= '1994-01-01'))"
        );
    }

    #[test]
    fn a_group_adds_its_keys_and_the_rest_excludes_every_group() {
        let keys = vec![
            Scalar::Field(key("flag")),
            Scalar::Arith(
                Box::new(Scalar::Field(key("k"))),
                Arith::Modulo,
                Box::new(Scalar::Integer(8)),
            ),
        ];
        let request = SelectAggregate {
            aggregates: vec![Aggregate::Min(Scalar::Field(key("n")))],
            condition: Some(Condition::NotNull(key("k"))),
        };
        let group = [KeyValue::Text("A".into()), KeyValue::Integer(3)];
        assert_eq!(
            request.of_group(&keys, &group).sql(),
            "SELECT MIN(s.\"n\") AS c0 FROM s3object s WHERE (s.\"k\" IS NOT NULL \
             AND (s.\"flag\" = 'A' AND (s.\"k\" % 8) = 3))"
        );
        let rest = Condition::NotInGroups {
            keys,
            groups: vec![
                group.to_vec(),
                vec![KeyValue::Text("it's".into()), KeyValue::Integer(-1)],
            ],
        };
        let mut sql = String::new();
        rest.write(&mut sql);
        assert_eq!(
            sql,
            "(s.\"flag\" IS MISSING OR s.\"flag\" IS NULL OR s.\"k\" IS MISSING OR s.\"k\" IS NULL \
             OR NOT ((s.\"flag\" = 'A' AND (s.\"k\" % 8) = 3) \
             OR (s.\"flag\" = 'it''s' AND (s.\"k\" % 8) = -1)))"
        );
    }
}
