//! Predicate grammar of pushed-down filters and a three-valued evaluator.
//!
//! Crystal's predicate API ("Crystal: A Unified Cache Storage System for
//! Analytical Databases", Section 3.1) is a tree of `and`/`or`/`not` over atomic
//! `column op literal` comparisons. Columns are opaque ids: the engine passes the
//! normalized text of a JSON access expression (e.g. `CAST(j->>'$.time_us' AS BIGINT)`),
//! so this module never interprets them.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Opaque column identifier; equal ids denote the same expression over a row.
///
/// Why opaque: the engine decides what a "column" is (a JSON path plus cast); the
/// cache only needs identity and a total order for deterministic maps.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ColumnId(pub String);

impl ColumnId {
    /// Builds a column id from any string-like expression text.
    pub fn new(text: impl Into<String>) -> Self {
        ColumnId(text.into())
    }
}

/// The kind (type family) of a [`Value`]; values compare only within one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ValueKind {
    /// `true` / `false`.
    Bool,
    /// Integers (wide enough for any SQL integer type).
    Int,
    /// IEEE-754 doubles.
    Float,
    /// UTF-8 text, compared bytewise.
    Text,
}

/// A non-NULL literal. NULL is modelled as `None` in rows and never as a literal,
/// because a comparison with a NULL literal is never TRUE and so caches nothing.
///
/// Order within a kind is total: floats order with NaN equal to NaN and above
/// every number, and `-0.0 == 0.0` (the PostgreSQL / DataFusion convention).
/// Across kinds [`Value::sql_cmp`] answers `None` ("unknown"); the [`Ord`]
/// implementation orders kinds first only so values can live in ordered sets.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Value {
    /// Boolean literal.
    Bool(bool),
    /// Integer literal.
    Int(i128),
    /// Floating-point literal.
    Float(f64),
    /// Text literal.
    Text(String),
}

impl Value {
    /// Returns the kind of this value.
    pub fn kind(&self) -> ValueKind {
        match self {
            Value::Bool(_) => ValueKind::Bool,
            Value::Int(_) => ValueKind::Int,
            Value::Float(_) => ValueKind::Float,
            Value::Text(_) => ValueKind::Text,
        }
    }

    /// SQL comparison: `Some(ordering)` within a kind, `None` across kinds.
    ///
    /// Why `None` across kinds: the engine is expected to coerce literals to the
    /// column's type before pushing them down; if it did not, every relation must
    /// answer conservatively rather than guess a coercion.
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (Value::Float(a), Value::Float(b)) => Some(float_key(*a).total_cmp(&float_key(*b))),
            (Value::Text(a), Value::Text(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// Canonical float for ordering: every NaN becomes the positive quiet NaN (above
/// +inf under `total_cmp`) and `-0.0` becomes `0.0`.
fn float_key(f: f64) -> f64 {
    if f.is_nan() {
        f64::NAN
    } else if f == 0.0 {
        0.0
    } else {
        f
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        self.kind()
            .cmp(&other.kind())
            .then_with(|| self.sql_cmp(other).unwrap_or(Ordering::Equal))
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

/// Comparison operator of an atomic predicate `column op literal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `=`
    Eq,
    /// `<>`
    NotEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

impl CmpOp {
    /// The operator whose result is the negation of this one on non-NULL,
    /// same-kind operands (used to push `NOT` into atoms, Crystal Section 3.1).
    pub fn negate(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::GtEq,
            CmpOp::LtEq => CmpOp::Gt,
            CmpOp::Eq => CmpOp::NotEq,
            CmpOp::NotEq => CmpOp::Eq,
            CmpOp::Gt => CmpOp::LtEq,
            CmpOp::GtEq => CmpOp::Lt,
        }
    }

    /// Whether `left op right` holds given `left.cmp(right)`.
    pub fn holds(self, ordering: Ordering) -> bool {
        match self {
            CmpOp::Lt => ordering == Ordering::Less,
            CmpOp::LtEq => ordering != Ordering::Greater,
            CmpOp::Eq => ordering == Ordering::Equal,
            CmpOp::NotEq => ordering != Ordering::Equal,
            CmpOp::Gt => ordering == Ordering::Greater,
            CmpOp::GtEq => ordering != Ordering::Less,
        }
    }
}

/// A row for evaluation: column → value, `None` (or a missing column) is NULL.
pub type Row = BTreeMap<ColumnId, Option<Value>>;

/// A pushed-down filter predicate (Crystal's predicate API grammar).
///
/// `And(vec![])` is TRUE and `Or(vec![])` is FALSE; the latter is how FALSE is
/// written (e.g. an empty remainder), so the grammar needs no `False` variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Predicate {
    /// Conjunction of the children.
    And(Vec<Predicate>),
    /// Disjunction of the children.
    Or(Vec<Predicate>),
    /// Negation.
    Not(Box<Predicate>),
    /// `column op value`.
    Compare {
        /// Left operand.
        column: ColumnId,
        /// Operator.
        op: CmpOp,
        /// Right operand, a literal.
        value: Value,
    },
    /// `column IS NULL`.
    IsNull(ColumnId),
    /// `column IS NOT NULL`.
    IsNotNull(ColumnId),
    /// `column [NOT] IN (values)`; an empty list is FALSE (TRUE when negated).
    InList {
        /// Tested column.
        column: ColumnId,
        /// Literal list.
        values: Vec<Value>,
        /// `NOT IN` when true.
        negated: bool,
    },
    /// The always-true predicate (no filter).
    True,
    /// `p IS NOT TRUE`: TRUE where `p` is FALSE or UNKNOWN, never UNKNOWN.
    ///
    /// An extension of the requested grammar, needed by cover residuals: "B − A"
    /// written as `B AND NOT A` loses rows where A is UNKNOWN (e.g. A tests a
    /// column that is NULL there), because `NOT UNKNOWN` is not TRUE. The exact
    /// complement of A's TRUE rows is `A IS NOT TRUE` (standard SQL; DataFusion
    /// `Expr::IsNotTrue`). Normalization accepts it only under a negation.
    IsNotTrue(Box<Predicate>),
}

/// An atomic test on one column, the leaf of normalized predicates.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum AtomTest {
    /// `column op value`.
    Compare(CmpOp, Value),
    /// `column IS NULL`.
    IsNull,
    /// `column IS NOT NULL`.
    IsNotNull,
}

/// An atomic predicate: one test on one column.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Atom {
    /// Tested column.
    pub column: ColumnId,
    /// The test.
    pub test: AtomTest,
}

impl Atom {
    /// The atom that is TRUE exactly where this one is not TRUE, under WHERE
    /// semantics (the normalization module says why this is exact).
    pub fn negate(&self) -> Atom {
        let test = match &self.test {
            AtomTest::Compare(op, v) => AtomTest::Compare(op.negate(), v.clone()),
            AtomTest::IsNull => AtomTest::IsNotNull,
            AtomTest::IsNotNull => AtomTest::IsNull,
        };
        Atom {
            column: self.column.clone(),
            test,
        }
    }

    /// The atom as a [`Predicate`] leaf.
    pub fn to_predicate(&self) -> Predicate {
        let column = self.column.clone();
        match &self.test {
            AtomTest::Compare(op, value) => Predicate::Compare {
                column,
                op: *op,
                value: value.clone(),
            },
            AtomTest::IsNull => Predicate::IsNull(column),
            AtomTest::IsNotNull => Predicate::IsNotNull(column),
        }
    }
}

impl Predicate {
    /// The FALSE predicate (an empty disjunction).
    pub fn false_() -> Predicate {
        Predicate::Or(Vec::new())
    }

    /// SQL three-valued evaluation: `Some(true)` TRUE, `Some(false)` FALSE,
    /// `None` UNKNOWN. Used as ground truth by tests; the cache itself never
    /// evaluates rows.
    pub fn eval(&self, row: &Row) -> Option<bool> {
        match self {
            Predicate::True => Some(true),
            Predicate::And(children) => eval_and(children, row),
            Predicate::Or(children) => eval_or(children, row),
            Predicate::Not(child) => child.eval(row).map(|b| !b),
            Predicate::IsNotTrue(child) => Some(child.eval(row) != Some(true)),
            Predicate::Compare { column, op, value } => {
                let v = lookup(row, column)?;
                v.sql_cmp(value).map(|o| op.holds(o))
            }
            Predicate::IsNull(column) => Some(lookup(row, column).is_none()),
            Predicate::IsNotNull(column) => Some(lookup(row, column).is_some()),
            Predicate::InList {
                column,
                values,
                negated,
            } => eval_in_list(lookup(row, column), values).map(|b| b != *negated),
        }
    }

    /// All columns referenced anywhere in the predicate.
    pub fn columns(&self) -> std::collections::BTreeSet<ColumnId> {
        let mut out = std::collections::BTreeSet::new();
        self.collect_columns(&mut out);
        out
    }

    fn collect_columns(&self, out: &mut std::collections::BTreeSet<ColumnId>) {
        match self {
            Predicate::True => {}
            Predicate::And(cs) | Predicate::Or(cs) => {
                cs.iter().for_each(|c| c.collect_columns(out))
            }
            Predicate::Not(c) | Predicate::IsNotTrue(c) => c.collect_columns(out),
            Predicate::Compare { column, .. }
            | Predicate::IsNull(column)
            | Predicate::IsNotNull(column)
            | Predicate::InList { column, .. } => {
                out.insert(column.clone());
            }
        }
    }
}

fn lookup<'a>(row: &'a Row, column: &ColumnId) -> Option<&'a Value> {
    row.get(column).and_then(|v| v.as_ref())
}

fn eval_and(children: &[Predicate], row: &Row) -> Option<bool> {
    let mut acc = Some(true);
    for child in children {
        match child.eval(row) {
            Some(false) => return Some(false),
            None => acc = None,
            Some(true) => {}
        }
    }
    acc
}

fn eval_or(children: &[Predicate], row: &Row) -> Option<bool> {
    let mut acc = Some(false);
    for child in children {
        match child.eval(row) {
            Some(true) => return Some(true),
            None => acc = None,
            Some(false) => {}
        }
    }
    acc
}

/// `v IN (values)`: TRUE on a match, FALSE if every comparison is FALSE, else
/// UNKNOWN. An empty list is FALSE even for NULL (a choice; `normalize` agrees).
fn eval_in_list(v: Option<&Value>, values: &[Value]) -> Option<bool> {
    if values.is_empty() {
        return Some(false);
    }
    let v = v?;
    let mut acc = Some(false);
    for candidate in values {
        match v.sql_cmp(candidate) {
            Some(Ordering::Equal) => return Some(true),
            None => acc = None,
            Some(_) => {}
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str) -> ColumnId {
        ColumnId::new(name)
    }

    fn row(pairs: &[(&str, Option<Value>)]) -> Row {
        pairs.iter().map(|(c, v)| (col(c), v.clone())).collect()
    }

    #[test]
    fn float_order_is_total_with_nan_on_top_and_signed_zero_equal() {
        assert_eq!(Value::Float(-0.0), Value::Float(0.0));
        assert_eq!(Value::Float(f64::NAN), Value::Float(-f64::NAN));
        assert!(Value::Float(f64::INFINITY) < Value::Float(f64::NAN));
        assert_eq!(Value::Int(1).sql_cmp(&Value::Float(1.0)), None);
    }

    #[test]
    fn three_valued_logic_matches_sql() {
        let x = col("x");
        let lt = Predicate::Compare {
            column: x.clone(),
            op: CmpOp::Lt,
            value: Value::Int(1),
        };
        let null_row = row(&[("x", None)]);
        assert_eq!(lt.eval(&null_row), None);
        assert_eq!(Predicate::Not(Box::new(lt.clone())).eval(&null_row), None);
        assert_eq!(
            Predicate::Or(vec![lt.clone(), Predicate::True]).eval(&null_row),
            Some(true)
        );
        assert_eq!(
            Predicate::And(vec![lt.clone(), Predicate::false_()]).eval(&null_row),
            Some(false)
        );
        let text_row = row(&[("x", Some(Value::Text("a".into())))]);
        assert_eq!(lt.eval(&text_row), None, "kind mismatch is unknown");
        let in_list = Predicate::InList {
            column: x,
            values: vec![Value::Int(1), Value::Text("a".into())],
            negated: true,
        };
        assert_eq!(in_list.eval(&row(&[("x", Some(Value::Int(2)))])), None);
        assert_eq!(
            in_list.eval(&row(&[("x", Some(Value::Int(1)))])),
            Some(false)
        );
    }

    #[test]
    fn predicates_round_trip_through_json_with_wide_integers() {
        let p = Predicate::And(vec![
            Predicate::Compare {
                column: col("x"),
                op: CmpOp::GtEq,
                value: Value::Int(i128::from(i64::MIN) - 1),
            },
            Predicate::InList {
                column: col("y"),
                values: vec![Value::Text("a".into()), Value::Bool(true)],
                negated: true,
            },
            Predicate::IsNull(col("z")),
        ]);
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Predicate>(&text).unwrap(), p);
    }
}
