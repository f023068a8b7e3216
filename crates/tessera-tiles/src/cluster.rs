//! Rows of a data file clustered by its low-cardinality shredded paths.
//!
//! Analytical filters mostly test paths with few distinct values (an event kind, an
//! operation, a collection name). When a file's rows are ordered by those paths, the
//! rows one value selects are contiguous, so the Parquet page statistics of the typed
//! columns exclude every other page: a reader decodes (and fetches) only the pages that
//! can match, and dictionary indices of the clustered columns compress to long runs.
//! The keys come from the data itself (the distinct-count sketches of the file's
//! statistics), never from per-dataset hints: ClickHouse's `ORDER BY` needs a schema
//! author to name them.

use arrow::array::{Array, ArrayRef, AsArray, StructArray, UInt32Array};
use arrow::compute::SortOptions;

use crate::TilesError;
use crate::keypaths::Choice;
use crate::layout::shredded_pair;
use crate::summary::PathStats;

/// Most distinct values a path may have to cluster rows by: beyond a dictionary page's
/// worth of values, runs get too short for page statistics to exclude anything.
pub const MAX_KEY_DISTINCT: u64 = 256;

/// Least share of a file's rows whose value must sit in a key's typed column: a path
/// most rows lack orders nothing.
const MIN_KEY_TYPED_SHARE: f64 = 0.5;

/// The shredded paths to cluster a file's rows by: the ones with the fewest distinct
/// values lead, so each later key orders rows within the runs of the earlier ones. At
/// most `limit` keys; indices into the file's shredded paths `choices` (and `stats`).
/// Lists are never keys: a row holds several elements, none of them its sort value.
pub(crate) fn cluster_keys(
    choices: &[Choice],
    stats: &[PathStats],
    rows: u64,
    limit: usize,
) -> Vec<usize> {
    assert_eq!(choices.len(), stats.len(), "statistics per shredded path");
    let mut keys: Vec<(u64, &str, usize)> = stats
        .iter()
        .enumerate()
        .filter(|&(i, _)| !choices[i].list)
        .filter(|(_, s)| s.typed_count as f64 >= MIN_KEY_TYPED_SHARE * rows as f64)
        .map(|(i, s)| (s.distinct.estimate(), s.path.as_str(), i))
        .filter(|&(distinct, _, _)| (2..=MAX_KEY_DISTINCT).contains(&distinct))
        .collect();
    keys.sort_unstable();
    keys.into_iter().take(limit).map(|(_, _, i)| i).collect()
}

/// The permutation that orders the rows of `column` by the typed values of `keys`
/// (ascending, rows without a typed value last), keeping the current order among equal
/// keys; `None` when there are no keys.
pub(crate) fn cluster_order(
    column: &StructArray,
    keys: &[&Choice],
) -> Result<Option<UInt32Array>, TilesError> {
    if keys.is_empty() {
        return Ok(None);
    }
    let rows = column.len();
    assert!(
        u32::try_from(rows).is_ok(),
        "a file's rows are u32 indexable"
    );
    let ranks = keys
        .iter()
        .map(|choice| {
            let (_, typed) = shredded_pair(column, &choice.path).ok_or_else(|| {
                TilesError::Internal(format!("cluster key {:?} is not shredded", choice.path))
            })?;
            let options = SortOptions {
                descending: false,
                nulls_first: false,
            };
            arrow::compute::rank(typed.as_ref(), Some(options)).map_err(TilesError::variant)
        })
        .collect::<Result<Vec<Vec<u32>>, _>>()?;
    let mut order: Vec<u32> = (0..rows as u32).collect();
    // A stable sort: equal keys keep the tiles' order, which groups similar documents.
    order.sort_by(|&a, &b| {
        ranks
            .iter()
            .map(|r| r[a as usize].cmp(&r[b as usize]))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Ok(Some(UInt32Array::from(order)))
}

/// `column` with its rows in `order`.
pub(crate) fn reorder_rows(
    column: &StructArray,
    order: &UInt32Array,
) -> Result<StructArray, TilesError> {
    assert_eq!(order.len(), column.len(), "a permutation of the rows");
    let taken: ArrayRef = arrow::compute::take(column, order, None).map_err(TilesError::variant)?;
    Ok(taken.as_struct().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{DistinctSketch, LeafType};

    #[test]
    fn lists_are_never_cluster_keys() {
        let mut distinct = DistinctSketch::default();
        (0..3u8).for_each(|v| distinct.insert(&[v]));
        let stats = |path: &str| PathStats {
            path: path.into(),
            min: None,
            max: None,
            max_truncated: false,
            null_count: 0,
            typed_count: 10,
            binary_count: 0,
            distinct: distinct.clone(),
        };
        let choice = |key: &str, list: bool| Choice {
            path: vec![key.into()],
            ty: LeafType::String,
            frequency: 1.0,
            list,
            format: None,
            element: Vec::new(),
        };
        let choices = [choice("langs", true), choice("kind", false)];
        let stats = [stats("$.langs[*]"), stats("$.kind")];
        assert_eq!(cluster_keys(&choices, &stats, 10, 3), vec![1]);
    }
}
