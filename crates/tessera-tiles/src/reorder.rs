//! Reordering documents inside a partition of tiles so that documents of one structure
//! share tiles (JSON Tiles §3.2; JSON Tiles is Durner, Leis, Neumann: "JSON Tiles: Fast
//! Analytics on Semi-Structured Data", SIGMOD 2021):
//!
//! 1. mine each tile at `threshold / P` (P = tiles per partition);
//! 2. exchange the maximal itemsets across the partition; those with a summed support
//!    of at least `threshold * T` survive (T = documents per tile);
//! 3. match every document to the surviving itemset sharing the most items with it
//!    (ties: the larger itemset, then the smaller sum of item ids);
//! 4. count matches per tile and partition; greedily give each itemset cluster the
//!    tiles it can fill to the threshold, preferring tiles that hold most of it;
//! 5. swap documents a tile does not need for documents of its cluster, first with a
//!    tile that needs the document given away (mutually beneficial), then any other.
//!
//! Step 6 (re-mining at the threshold) is the caller's: it mines the reordered tiles.

use std::collections::HashMap;

use crate::fpgrowth::maximal_itemsets;

/// Most itemset clusters kept per partition (by support): bounds matching work.
pub const MAX_CLUSTERS: usize = 64;

/// How a partition is cut and mined.
#[derive(Debug, Clone, Copy)]
pub struct Partitioning {
    /// Documents per tile (T).
    pub tile_docs: usize,
    /// Tiles per partition (P).
    pub partition_tiles: usize,
    /// Share of a tile an itemset must cover to be extracted.
    pub threshold: f64,
    /// Itemset budget of the miner per tile.
    pub budget: usize,
}

/// Documents needed in a tile of `len` documents to reach `threshold`.
pub fn needed(threshold: f64, len: usize) -> u32 {
    ((threshold * len as f64).ceil() as u32).max(1)
}

/// The new order of `docs.len()` documents given their items (sorted, unique): position
/// `i` of the result holds the index of the document that goes there. Documents move
/// only within their partition, and only between tiles.
pub fn reorder(docs: &[&[u32]], p: &Partitioning) -> Vec<usize> {
    assert!(
        p.tile_docs > 0 && p.partition_tiles > 0,
        "tiles and partitions hold something"
    );
    let mut order: Vec<usize> = (0..docs.len()).collect();
    let partition_docs = p.tile_docs * p.partition_tiles;
    for (n, slots) in order.chunks_mut(partition_docs).enumerate() {
        let start = n * partition_docs;
        let moved = reorder_partition(&docs[start..start + slots.len()], p);
        for (slot, doc) in slots.iter_mut().zip(moved) {
            *slot = start + doc;
        }
    }
    order
}

/// Steps 1-5 for one partition; returns its permutation (partition-local indexes).
fn reorder_partition(docs: &[&[u32]], p: &Partitioning) -> Vec<usize> {
    let tiles: Vec<std::ops::Range<usize>> = (0..docs.len())
        .step_by(p.tile_docs)
        .map(|s| s..(s + p.tile_docs).min(docs.len()))
        .collect();
    let mut order: Vec<usize> = (0..docs.len()).collect();
    // Documents that all have the same items (the elements of one long array of
    // strings, say) fill every tile alike, however they are ordered.
    if tiles.len() < 2 || docs.iter().all(|d| *d == docs[0]) {
        return order;
    }
    // 1-2. Mine at threshold / P and keep what is frequent enough across the partition.
    let mut supports: HashMap<Vec<u32>, u32> = HashMap::new();
    for tile in &tiles {
        let min = needed(p.threshold / p.partition_tiles as f64, tile.len());
        for set in maximal_itemsets(&docs[tile.clone()], min, p.budget) {
            *supports.entry(set.items).or_default() += set.support;
        }
    }
    let survive = needed(p.threshold, p.tile_docs);
    let mut clusters: Vec<(Vec<u32>, u32)> = supports
        .into_iter()
        .filter(|&(_, s)| s >= survive)
        .collect();
    clusters.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    clusters.truncate(MAX_CLUSTERS);
    if clusters.is_empty() {
        return order;
    }
    // 3. Match documents to clusters.
    let cluster_of: Vec<Option<usize>> = docs.iter().map(|d| best_match(d, &clusters)).collect();
    // 4. Counts per tile and cluster, then the greedy plan: tile -> cluster.
    // Cluster k stands for documents that match none.
    let k = clusters.len();
    let width = k + 1;
    let mut counts = vec![0u32; tiles.len() * width];
    for (tile, range) in tiles.iter().enumerate() {
        for doc in range.clone() {
            counts[tile * width + cluster_of[doc].unwrap_or(k)] += 1;
        }
    }
    let plan = assign(&tiles, &counts, width, k, p.threshold);
    // 5. Swaps. `spare[t][c]`: slots of tile t holding a document of cluster c that t
    // does not need (its plan is another cluster, or it has no plan).
    let mut spare: Vec<Vec<Vec<usize>>> = vec![vec![Vec::new(); k + 1]; tiles.len()];
    for (tile, range) in tiles.iter().enumerate() {
        for slot in range.clone() {
            let c = cluster_of[slot].unwrap_or(k);
            if plan[tile] != Some(c) {
                spare[tile][c].push(slot);
            }
        }
    }
    for (t, range) in tiles.iter().enumerate() {
        let Some(c) = plan[t] else { continue };
        let need = needed(p.threshold, range.len());
        // Bounded: every swap adds one document of c to t.
        while counts[t * width + c] < need {
            // A document of cluster c that another tile can give.
            let donor = (0..tiles.len())
                .filter(|&u| u != t && !spare[u][c].is_empty())
                .max_by_key(|&u| {
                    // Prefer a tile that wants one of our spare documents in return.
                    let mutual = plan[u].is_some_and(|want| !spare[t][want].is_empty());
                    (mutual, std::cmp::Reverse(u))
                });
            let Some(u) = donor else { break };
            // What t gives back: a document u needs if there is one, else any spare.
            let give_cluster = plan[u]
                .filter(|&want| !spare[t][want].is_empty())
                .or_else(|| (0..=k).find(|&c2| c2 != c && !spare[t][c2].is_empty()));
            let Some(give_cluster) = give_cluster else {
                break;
            };
            let from = spare[u][c].pop().expect("donor has a spare document");
            let to = spare[t][give_cluster]
                .pop()
                .expect("tile has a spare document");
            order.swap(from, to);
            if plan[u] != Some(give_cluster) {
                spare[u][give_cluster].push(from);
            }
            counts[t * width + c] += 1;
            counts[t * width + give_cluster] -= 1;
            counts[u * width + c] -= 1;
            counts[u * width + give_cluster] += 1;
        }
    }
    order
}

/// The cluster sharing the most items with `doc`; ties go to the larger itemset, then
/// to the smaller sum of item ids (so equal documents always pick the same cluster).
fn best_match(doc: &[u32], clusters: &[(Vec<u32>, u32)]) -> Option<usize> {
    clusters
        .iter()
        .enumerate()
        .map(|(i, (set, _))| {
            let common = common_items(doc, set);
            let sum: u64 = set.iter().map(|&x| u64::from(x)).sum();
            (i, common, set.len(), sum)
        })
        .filter(|&(_, common, _, _)| common > 0)
        .max_by(|a, b| {
            a.1.cmp(&b.1)
                .then(a.2.cmp(&b.2))
                .then(b.3.cmp(&a.3))
                .then(b.0.cmp(&a.0))
        })
        .map(|(i, ..)| i)
}

/// Size of the intersection of two sorted sets.
fn common_items(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Step 4: clusters by partition count (largest first) take as many tiles as they can
/// fill to the threshold, each the free tiles holding most of the cluster already.
/// `counts[t * width + c]`: documents of cluster c in tile t, for clusters `0..k`.
fn assign(
    tiles: &[std::ops::Range<usize>],
    counts: &[u32],
    width: usize,
    k: usize,
    threshold: f64,
) -> Vec<Option<usize>> {
    let mut plan = vec![None; tiles.len()];
    let mut totals: Vec<(usize, u32)> = (0..k)
        .map(|c| (c, (0..tiles.len()).map(|t| counts[t * width + c]).sum()))
        .collect();
    totals.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (c, mut left) in totals {
        loop {
            let free = (0..tiles.len())
                .filter(|&t| plan[t].is_none())
                .max_by_key(|&t| (counts[t * width + c], std::cmp::Reverse(t)));
            let Some(t) = free else { return plan };
            let need = needed(threshold, tiles[t].len());
            if left < need {
                break;
            }
            plan[t] = Some(c);
            left -= need;
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fpgrowth::DEFAULT_BUDGET;

    fn options(tile_docs: usize, partition_tiles: usize) -> Partitioning {
        Partitioning {
            tile_docs,
            partition_tiles,
            threshold: 0.6,
            budget: DEFAULT_BUDGET,
        }
    }

    /// JSON Tiles' Figure 4 in small: tiles of 5 tuples, threshold 60% (3 of 5), and
    /// three structures sharing no key path, A = {1,2,3}, B = {4,5,6}, C = {7,8,9},
    /// spread so that none reaches the threshold in any tile before reordering.
    ///
    /// By hand: mining at 0.6 / 3 needs 1 document per tile, so every tile yields its
    /// shapes; summed supports are 5 each (>= 3) and all survive. The plan gives A
    /// tile 0 (2 there, tie with tile 1 goes to the lower tile), B tile 2 (2 vs 1), C
    /// tile 1. Swaps: tile 0 takes the A of slot 9 from tile 1 for its C of slot 2
    /// (mutual, tile 1 wants C); tile 1 then holds 3 C; tile 2 takes the B of slot 4
    /// from tile 0 for its A of slot 12 (mutual). Tiles end as A A A A B | C A B C C |
    /// B C B B C.
    #[test]
    fn figure_4_in_small_clusters_structures_into_tiles() {
        let a: &[u32] = &[1, 2, 3];
        let b: &[u32] = &[4, 5, 6];
        let c: &[u32] = &[7, 8, 9];
        // Tile 0: A B C A B; tile 1: C A B C A; tile 2: B C A B C. Each structure has
        // 2 of 5 in every tile (below 3), and 5 in the partition.
        let docs: Vec<&[u32]> = vec![a, b, c, a, b, c, a, b, c, a, b, c, a, b, c];
        let before: Vec<u32> = (0..3)
            .map(|t| best_share(&docs, &(0..15).collect::<Vec<_>>(), t))
            .collect();
        assert_eq!(before, vec![2, 2, 2]);
        let order = reorder(&docs, &options(5, 3));
        assert_eq!(
            order,
            vec![0, 1, 9, 3, 12, 5, 6, 7, 8, 2, 10, 11, 4, 13, 14]
        );
        let after: Vec<u32> = (0..3).map(|t| best_share(&docs, &order, t)).collect();
        assert_eq!(after, vec![4, 3, 3]);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..15).collect::<Vec<_>>(), "a permutation");
    }

    /// Largest number of documents of one structure in tile `t` (tiles of 5).
    fn best_share(docs: &[&[u32]], order: &[usize], t: usize) -> u32 {
        let mut counts: HashMap<&[u32], u32> = HashMap::new();
        for &doc in &order[t * 5..(t + 1) * 5] {
            *counts.entry(docs[doc]).or_default() += 1;
        }
        counts.into_values().max().unwrap_or(0)
    }

    #[test]
    fn matching_prefers_most_common_items_then_larger_sets_then_smaller_ids() {
        let clusters = vec![
            (vec![1, 2], 10),
            (vec![1, 2, 9], 10),
            (vec![3, 4], 10),
            (vec![5, 6], 10),
        ];
        // {1,2,3}: shares 2 with {1,2} and {1,2,9}; the larger wins.
        assert_eq!(best_match(&[1, 2, 3], &clusters), Some(1));
        // {3,4,5,6}: shares 2 with {3,4} and {5,6}, same size; smaller id sum wins.
        assert_eq!(best_match(&[3, 4, 5, 6], &clusters), Some(2));
        assert_eq!(best_match(&[7], &clusters), None);
    }

    #[test]
    fn a_single_tile_or_no_common_structure_keeps_the_order() {
        let a: &[u32] = &[1];
        let docs: Vec<&[u32]> = vec![a; 4];
        assert_eq!(reorder(&docs, &options(8, 8)), vec![0, 1, 2, 3]);
        let distinct: Vec<Vec<u32>> = (0..20).map(|i| vec![i]).collect();
        let docs: Vec<&[u32]> = distinct.iter().map(|d| d.as_slice()).collect();
        assert_eq!(reorder(&docs, &options(5, 2)), (0..20).collect::<Vec<_>>());
    }
}
