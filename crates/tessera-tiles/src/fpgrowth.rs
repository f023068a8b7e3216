//! FP-growth frequent-itemset mining with the budget of JSON Tiles §3.3 (Durner, Leis,
//! Neumann: "JSON Tiles: Fast Analytics on Semi-Structured Data", SIGMOD 2021): with `n` frequent items, itemsets of sizes 1..k are enumerated where
//! `sum_{i=1..k} C(n, i) <= u' <= min(u, 2^n - 1)`, by capping the recursion depth of
//! the conditional FP-trees at `k`; smaller itemsets come first.
//!
//! A conditional tree that is a single path yields its whole path at once (every
//! subset of it is frequent with at least the support of its last node), which keeps
//! correlated items — the common case in JSON, where a document shape is a fixed set
//! of keys — from costing 2^n subsets. What callers use are the *maximal* itemsets.

/// Upper bound `u` on the number of itemsets mined per tile. The paper leaves its value
/// open; 1024 keeps a tile's mining to about a millisecond.
pub const DEFAULT_BUDGET: usize = 1024;

/// A frequent itemset: item ids (sorted) and the number of transactions holding all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Itemset {
    /// The items, ascending.
    pub items: Vec<u32>,
    /// Transactions that contain every item.
    pub support: u32,
}

/// Largest `k` with `sum_{i=1..k} C(n, i) <= min(budget, 2^n - 1)`, at least 1 (single
/// items are always mined).
pub fn depth_for_budget(n: usize, budget: usize) -> usize {
    // 128-bit arithmetic: C(n, k - 1) * (n - k + 1) stays exact while the sum is
    // within any 64-bit budget.
    let (n128, budget) = (n as u128, budget as u128);
    let mut total = 0u128;
    let mut binomial = 1u128;
    for k in 1..=n128 {
        // C(n, k) = C(n, k - 1) * (n - k + 1) / k, exact at every step.
        binomial = binomial * (n128 - k + 1) / k;
        total += binomial;
        if total > budget {
            return (k as usize - 1).max(1);
        }
    }
    n.max(1)
}

/// The maximal frequent itemsets of `transactions` (each a set of item ids, sorted and
/// unique) with at least `min_support` transactions, mined within `budget`.
pub fn maximal_itemsets(transactions: &[&[u32]], min_support: u32, budget: usize) -> Vec<Itemset> {
    assert!(
        min_support > 0,
        "an itemset is frequent in at least one transaction"
    );
    let mut counts: Vec<(u32, u32)> = Vec::new();
    {
        let mut all: Vec<u32> = transactions
            .iter()
            .flat_map(|t| t.iter().copied())
            .collect();
        all.sort_unstable();
        for item in all {
            match counts.last_mut() {
                Some((last, n)) if *last == item => *n += 1,
                _ => counts.push((item, 1)),
            }
        }
    }
    counts.retain(|&(_, n)| n >= min_support);
    // Rank 0 is the most frequent item (ties: smaller id), the order of FP-tree paths.
    counts.sort_by_key(|&(item, n)| (std::cmp::Reverse(n), item));
    let items: Vec<u32> = counts.iter().map(|&(item, _)| item).collect();
    if items.is_empty() {
        return Vec::new();
    }
    let mut by_item: Vec<(u32, u32)> = items
        .iter()
        .enumerate()
        .map(|(r, &i)| (i, r as u32))
        .collect();
    by_item.sort_unstable();
    let rank_of = |item: u32| {
        by_item
            .binary_search_by_key(&item, |&(i, _)| i)
            .ok()
            .map(|p| by_item[p].1)
    };
    let mut paths: Vec<(Vec<u32>, u32)> = Vec::with_capacity(transactions.len());
    for t in transactions {
        let mut ranks: Vec<u32> = t.iter().filter_map(|&i| rank_of(i)).collect();
        if !ranks.is_empty() {
            ranks.sort_unstable();
            paths.push((ranks, 1));
        }
    }
    let tree = Tree::build(&paths, items.len(), min_support);
    let mut miner = Miner {
        min_support,
        depth: depth_for_budget(items.len(), budget),
        budget,
        found: Vec::new(),
        suffix: Vec::new(),
    };
    miner.mine(&tree, 0);
    let sets = maximal(miner.found, items.len());
    let mut out: Vec<Itemset> = sets
        .into_iter()
        .map(|(ranks, support)| {
            let mut items: Vec<u32> = ranks.iter().map(|&r| items[r as usize]).collect();
            items.sort_unstable();
            Itemset { items, support }
        })
        .collect();
    out.sort_by(|a, b| {
        b.items
            .len()
            .cmp(&a.items.len())
            .then(a.items.cmp(&b.items))
    });
    out
}

/// An FP-tree over item ranks; node 0 is the root.
struct Tree {
    nodes: Vec<TreeNode>,
    /// Per rank, the nodes holding it.
    header: Vec<Vec<u32>>,
}

struct TreeNode {
    rank: u32,
    count: u32,
    parent: u32,
    children: Vec<u32>,
}

impl Tree {
    /// The tree of weighted `paths` (ranks ascending), without ranks below `min_support`.
    fn build(paths: &[(Vec<u32>, u32)], ranks: usize, min_support: u32) -> Tree {
        let mut support = vec![0u32; ranks];
        for (path, count) in paths {
            path.iter().for_each(|&r| support[r as usize] += count);
        }
        let mut tree = Tree {
            nodes: vec![TreeNode {
                rank: u32::MAX,
                count: 0,
                parent: 0,
                children: Vec::new(),
            }],
            header: vec![Vec::new(); ranks],
        };
        for (path, count) in paths {
            let mut at = 0u32;
            for &rank in path.iter().filter(|&&r| support[r as usize] >= min_support) {
                let existing = tree.nodes[at as usize]
                    .children
                    .iter()
                    .copied()
                    .find(|&c| tree.nodes[c as usize].rank == rank);
                at = match existing {
                    Some(child) => child,
                    None => {
                        let id = tree.nodes.len() as u32;
                        tree.nodes.push(TreeNode {
                            rank,
                            count: 0,
                            parent: at,
                            children: Vec::new(),
                        });
                        tree.nodes[at as usize].children.push(id);
                        tree.header[rank as usize].push(id);
                        id
                    }
                };
                tree.nodes[at as usize].count += count;
            }
        }
        tree
    }

    /// The ranks and count of the last node when the tree is one chain from the root.
    fn single_path(&self) -> Option<(Vec<u32>, u32)> {
        let mut ranks = Vec::new();
        let mut at = 0usize;
        let mut count = 0;
        loop {
            match self.nodes[at].children.as_slice() {
                [] => return Some((ranks, count)),
                [only] => {
                    at = *only as usize;
                    ranks.push(self.nodes[at].rank);
                    count = self.nodes[at].count;
                }
                _ => return None,
            }
        }
    }
}

struct Miner {
    min_support: u32,
    /// Largest itemset size enumerated by recursion (`k` of the budget).
    depth: usize,
    budget: usize,
    found: Vec<(Vec<u32>, u32)>,
    suffix: Vec<u32>,
}

impl Miner {
    fn emit(&mut self, extra: &[u32], support: u32) {
        let mut set: Vec<u32> = self.suffix.iter().chain(extra).copied().collect();
        set.sort_unstable();
        self.found.push((set, support));
    }

    fn mine(&mut self, tree: &Tree, level: usize) {
        if let Some((path, count)) = tree.single_path() {
            if !path.is_empty() && self.found.len() < self.budget {
                self.emit(&path, count);
            }
            return;
        }
        // Least frequent ranks first: their conditional bases are the smallest.
        for rank in (0..tree.header.len()).rev() {
            if self.found.len() >= self.budget {
                return;
            }
            let support: u32 = tree.header[rank]
                .iter()
                .map(|&n| tree.nodes[n as usize].count)
                .sum();
            if support < self.min_support {
                continue;
            }
            self.emit(&[rank as u32], support);
            if level + 1 < self.depth {
                let base: Vec<(Vec<u32>, u32)> = tree.header[rank]
                    .iter()
                    .map(|&n| {
                        let node = &tree.nodes[n as usize];
                        let mut path = Vec::new();
                        let mut at = node.parent as usize;
                        while at != 0 {
                            path.push(tree.nodes[at].rank);
                            at = tree.nodes[at].parent as usize;
                        }
                        path.reverse();
                        (path, node.count)
                    })
                    .collect();
                let conditional = Tree::build(&base, tree.header.len(), self.min_support);
                self.suffix.push(rank as u32);
                self.mine(&conditional, level + 1);
                self.suffix.pop();
            }
        }
    }
}

/// The itemsets of `found` that no other found itemset contains (ranks < `ranks`).
fn maximal(mut found: Vec<(Vec<u32>, u32)>, ranks: usize) -> Vec<(Vec<u32>, u32)> {
    found.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    found.dedup_by(|a, b| a.0 == b.0);
    let words = ranks.div_ceil(64);
    let bits = |set: &[u32]| {
        let mut w = vec![0u64; words];
        set.iter()
            .for_each(|&r| w[r as usize / 64] |= 1 << (r % 64));
        w
    };
    let mut kept: Vec<Vec<u64>> = Vec::new();
    let mut out = Vec::new();
    for (set, support) in found {
        let b = bits(&set);
        let contained = kept
            .iter()
            .any(|k| k.iter().zip(&b).all(|(k, b)| b & !k == 0));
        if !contained {
            kept.push(b);
            out.push((set, support));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_depth_follows_the_binomial_sum() {
        // n = 5: C(5,1) = 5, +C(5,2) = 15, +C(5,3) = 25, +C(5,4) = 30, +C(5,5) = 31.
        assert_eq!(depth_for_budget(5, 5), 1);
        assert_eq!(depth_for_budget(5, 15), 2);
        assert_eq!(depth_for_budget(5, 24), 2);
        assert_eq!(depth_for_budget(5, 25), 3);
        assert_eq!(depth_for_budget(5, 1_000), 5);
        // u' <= 2^n - 1 caps nothing more: all subsets fit.
        assert_eq!(depth_for_budget(3, 7), 3);
        // Even a budget below n mines single items.
        assert_eq!(depth_for_budget(40, 3), 1);
        // The sum up to C(200, 13) (about 1.8e20) exceeds any 64-bit budget.
        assert_eq!(depth_for_budget(200, usize::MAX), 12);
    }

    /// The running example of FP-growth's paper (Han, Pei, Yin 2000: five
    /// transactions, minimum support 3), worked out by hand below.
    #[test]
    fn han_example_by_hand() {
        // Items: a=1 b=2 c=3 f=6 m=13 p=16 (letters by alphabet position), and others.
        let t: Vec<Vec<u32>> = vec![
            vec![1, 3, 4, 6, 7, 9, 13, 16],   // f a c d g i m p
            vec![1, 2, 3, 6, 12, 13, 15],     // a b c f l m o
            vec![2, 6, 8, 10, 15],            // b f h j o
            vec![2, 3, 11, 16, 19],           // b c k s p
            vec![1, 3, 5, 6, 12, 13, 14, 16], // a f c e l p m n
        ];
        let refs: Vec<&[u32]> = t.iter().map(|v| v.as_slice()).collect();
        // Support >= 3: f:4 c:4 a:3 b:3 m:3 p:3 (o: 2, l: 2).
        // {f,c,a,m} in t1, t2, t5 = 3; {c,p} in t1, t4, t5 = 3; {b} alone: {b,f} 2,
        // {b,c} 2. {f,c,a,m,p} only t1, t5. Maximal: {a,c,f,m}:3, {c,p}:3, {b}:3.
        let got = maximal_itemsets(&refs, 3, DEFAULT_BUDGET);
        assert_eq!(
            got,
            vec![
                Itemset {
                    items: vec![1, 3, 6, 13],
                    support: 3
                },
                Itemset {
                    items: vec![3, 16],
                    support: 3
                },
                Itemset {
                    items: vec![2],
                    support: 3
                },
            ]
        );
    }

    #[test]
    fn a_small_budget_caps_the_itemset_size() {
        // {1,2,3} twice and {1,2,4} twice, support 2: the tree branches below 1 -> 2.
        // Maximal by hand: {1,2,3} and {1,2,4}. A budget of u = 4 with n = 4 frequent
        // items gives k = 1 (C(4,1) = 4, C(4,1) + C(4,2) = 10): no conditional trees,
        // so only the single items are mined, all four maximal among themselves.
        let t: Vec<Vec<u32>> = vec![vec![1, 2, 3], vec![1, 2, 3], vec![1, 2, 4], vec![1, 2, 4]];
        let refs: Vec<&[u32]> = t.iter().map(|v| v.as_slice()).collect();
        assert_eq!(
            maximal_itemsets(&refs, 2, DEFAULT_BUDGET),
            vec![
                Itemset {
                    items: vec![1, 2, 3],
                    support: 2
                },
                Itemset {
                    items: vec![1, 2, 4],
                    support: 2
                },
            ]
        );
        let capped = maximal_itemsets(&refs, 2, 4);
        let items: Vec<Vec<u32>> = capped.iter().map(|s| s.items.clone()).collect();
        assert_eq!(items, vec![vec![1], vec![2], vec![3], vec![4]]);
    }

    #[test]
    fn identical_transactions_are_one_path() {
        // One shape of document: a single-path tree, mined at once whatever the budget.
        let t: Vec<Vec<u32>> = vec![vec![1, 2, 3, 4, 5, 6, 7, 8]; 10];
        let refs: Vec<&[u32]> = t.iter().map(|v| v.as_slice()).collect();
        assert_eq!(
            maximal_itemsets(&refs, 6, 1),
            vec![Itemset {
                items: (1..=8).collect(),
                support: 10
            }]
        );
    }

    #[test]
    fn nothing_frequent_gives_nothing() {
        let t: Vec<Vec<u32>> = vec![vec![1], vec![2], vec![3]];
        let refs: Vec<&[u32]> = t.iter().map(|v| v.as_slice()).collect();
        assert!(maximal_itemsets(&refs, 2, DEFAULT_BUDGET).is_empty());
        assert!(maximal_itemsets(&[], 1, DEFAULT_BUDGET).is_empty());
    }
}
