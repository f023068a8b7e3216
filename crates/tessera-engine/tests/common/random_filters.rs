//! Random filters over a data set's paths: conjunctions of disjunctions of (sometimes
//! negated) comparisons, for differential tests of what rewrites a scan's filters.

use super::Rng;
use super::data_sets::DataSet;

/// A random comparison on one of the data set's paths (some never translate: LIKE).
pub fn atom(data: &DataSet, rng: &mut Rng, bounds: &[(i64, i64)]) -> String {
    let ops = ["=", "<>", "<", "<=", ">", ">="];
    let op = ops[rng.below(ops.len() as u64) as usize];
    match rng.below(10) {
        0..=4 => {
            let (path, values) = &data.texts[rng.below(data.texts.len() as u64) as usize];
            let value = values[rng.below(values.len() as u64) as usize];
            match rng.below(6) {
                0 => format!("{path} IS NULL"),
                1 => format!("{path} IN ('{value}', '{}')", values[0]),
                2 => format!("{path} LIKE '%{}%'", &value[..1.min(value.len())]),
                3 => format!("'{value}' {op} {path}"),
                _ => format!("{path} {op} '{value}'"),
            }
        }
        5..=8 => {
            let at = rng.below(data.integers.len() as u64) as usize;
            let (low, high) = bounds[at];
            let span = (high - low).max(1) as u64;
            let value = low + (rng.below(span) as i64);
            format!("{} {op} {value}", data.integers[at])
        }
        _ => format!("{} IS NOT NULL", data.integers[0]),
    }
}

/// A random filter: a conjunction of disjunctions of (sometimes negated) comparisons.
pub fn filter(data: &DataSet, rng: &mut Rng, bounds: &[(i64, i64)]) -> String {
    let conjuncts: Vec<String> = (0..1 + rng.below(3))
        .map(|_| {
            let disjuncts: Vec<String> = (0..1 + rng.below(2))
                .map(|_| {
                    let a = atom(data, rng, bounds);
                    match rng.below(5) {
                        0 => format!("NOT ({a})"),
                        _ => a,
                    }
                })
                .collect();
            format!("({})", disjuncts.join(" OR "))
        })
        .collect();
    conjuncts.join(" AND ")
}

/// A random query: two to four of the paths, under a random filter.
pub fn query(data: &DataSet, rng: &mut Rng, bounds: &[(i64, i64)]) -> (String, String) {
    let mut paths: Vec<&str> = data.texts.iter().map(|(p, _)| *p).collect();
    paths.extend(data.integers.iter().copied());
    let picked: Vec<&str> = (0..2 + rng.below(3))
        .map(|_| paths[rng.below(paths.len() as u64) as usize])
        .collect();
    let where_ = filter(data, rng, bounds);
    let select = picked.join(", ");
    (select, where_)
}
