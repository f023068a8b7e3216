use std::sync::Arc;

use super::{FileId, Fingerprint, Hit, PredicateCache, PredicateLimits, RowRanges};
use crate::semantic::normalize::NormalizeLimits;
use crate::semantic::predicate::{CmpOp, ColumnId, Predicate, Value};

fn file(name: &str) -> FileId {
    FileId {
        store: "s3://bucket".into(),
        path: format!("t/data/{name}.parquet"),
        size: 1000,
    }
}

fn compare(column: &str, op: CmpOp, value: i64) -> Predicate {
    Predicate::Compare {
        column: ColumnId::new(column),
        op,
        value: Value::Int(value.into()),
    }
}

fn fingerprint(p: &Predicate) -> Arc<Fingerprint> {
    Fingerprint::new(p, &NormalizeLimits::default()).unwrap()
}

fn ranges(runs: &[(u32, u32)]) -> RowRanges {
    RowRanges::from_runs(runs.iter().map(|&(s, e)| s..e))
}

fn pairs(r: &RowRanges) -> Vec<(u32, u32)> {
    r.runs().map(|r| (r.start, r.end)).collect()
}

#[test]
fn runs_merge_intersect_and_coarsen_to_supersets() {
    let r = ranges(&[(10, 20), (0, 5), (5, 7), (15, 30), (40, 40)]);
    assert_eq!(pairs(&r), [(0, 7), (10, 30)]);
    assert_eq!(r.row_count(), 27);
    let other = ranges(&[(3, 12), (25, 50)]);
    assert_eq!(pairs(&r.intersection(&other)), [(3, 7), (10, 12), (25, 30)]);
    assert!(r.intersection(&ranges(&[(7, 10)])).is_empty());
    // Gaps of 1, 5 and 2 rows: to two runs, the two shortest gaps are filled.
    let scattered = ranges(&[(0, 1), (2, 3), (8, 9), (11, 12)]);
    assert_eq!(pairs(&scattered.clone().coarsened(2)), [(0, 3), (8, 12)]);
    assert_eq!(pairs(&scattered.clone().coarsened(1)), [(0, 12)]);
    assert_eq!(scattered.clone().coarsened(4), scattered);
    assert!(ranges(&[(0, 9)]).covers(9));
    assert!(!ranges(&[(0, 8)]).covers(9));
}

#[test]
fn a_stronger_predicate_uses_the_rows_of_every_predicate_containing_it() {
    let cache = PredicateCache::in_memory(PredicateLimits::default());
    let f = file("a");
    let over_5 = compare("x", CmpOp::Gt, 5);
    let under_9 = compare("y", CmpOp::Lt, 9);
    cache.record(&f, 0, &fingerprint(&over_5), ranges(&[(0, 100)]));
    cache.record(&f, 0, &fingerprint(&under_9), ranges(&[(50, 200)]));
    cache.record(&f, 1, &fingerprint(&over_5), RowRanges::none());
    let stronger = Predicate::And(vec![compare("x", CmpOp::Gt, 10), under_9.clone()]);
    let hits = cache.lookup(&f, &[0, 1, 2], &fingerprint(&stronger));
    let expected = Hit {
        ranges: ranges(&[(50, 100)]),
        exact: false,
    };
    assert_eq!(hits[0], Some(expected));
    assert_eq!(hits[1].as_ref().map(|h| h.ranges.is_empty()), Some(true));
    assert_eq!(hits[2], None);
    // A weaker predicate is contained by none of them.
    let weaker = fingerprint(&compare("x", CmpOp::Gt, 3));
    assert_eq!(cache.lookup(&f, &[0, 1], &weaker), [None, None]);
    // Another spelling of the same predicate shares the entry.
    let swapped = Predicate::And(vec![under_9, over_5.clone()]);
    cache.record(&f, 3, &fingerprint(&swapped), ranges(&[(1, 2)]));
    let same = Predicate::And(vec![over_5.clone(), compare("y", CmpOp::Lt, 9)]);
    let hit = cache
        .lookup(&f, &[3], &fingerprint(&same))
        .remove(0)
        .unwrap();
    assert!(hit.exact);
    // Another file, or the same path with another size, knows nothing.
    let resized = FileId { size: 999, ..f };
    assert_eq!(cache.lookup(&resized, &[0], &fingerprint(&over_5)), [None]);
}

#[test]
fn entries_and_bytes_stay_within_their_bounds_least_recently_used_first() {
    let limits = PredicateLimits {
        entries_max: 3,
        ..PredicateLimits::default()
    };
    let cache = PredicateCache::in_memory(limits);
    let p = fingerprint(&compare("x", CmpOp::Eq, 1));
    for g in 0..3 {
        cache.record(&file("a"), g, &p, ranges(&[(0, 1)]));
    }
    // Group 0 is used, so group 1 is the least recently used when group 3 arrives.
    assert!(cache.lookup(&file("a"), &[0], &p)[0].is_some());
    cache.record(&file("a"), 3, &p, ranges(&[(0, 1)]));
    assert_eq!(cache.len(), 3);
    let found = cache.lookup(&file("a"), &[0, 1, 2, 3], &p);
    let found: Vec<bool> = found.iter().map(Option::is_some).collect();
    assert_eq!(found, [true, false, true, true]);

    let small = PredicateLimits {
        bytes_max: 2000,
        runs_per_entry_max: 4,
        ..PredicateLimits::default()
    };
    let cache = PredicateCache::in_memory(small);
    for g in 0..100 {
        let scattered = (0..50).map(|i| i * 4..i * 4 + 1);
        cache.record(&file("b"), g, &p, RowRanges::from_runs(scattered));
        assert!(cache.bytes() <= small.bytes_max, "{}", cache.bytes());
    }
    assert!(cache.len() > 1 && cache.len() < 100, "{}", cache.len());
    let kept = cache.lookup(&file("b"), &[99], &p).remove(0).unwrap();
    assert_eq!(kept.ranges.runs().count(), 4);

    let few = PredicateLimits {
        predicates_per_group_max: 2,
        ..PredicateLimits::default()
    };
    let cache = PredicateCache::in_memory(few);
    for v in 0..5 {
        cache.record(
            &file("c"),
            0,
            &fingerprint(&compare("x", CmpOp::Eq, v)),
            ranges(&[(0, 1)]),
        );
    }
    assert_eq!(cache.len(), 2);
}

#[test]
fn entries_survive_a_restart_and_a_torn_file_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let p = fingerprint(&Predicate::Or(vec![
        compare("x", CmpOp::Lt, 0),
        Predicate::IsNull(ColumnId::new("y")),
    ]));
    let q = fingerprint(&compare("z", CmpOp::GtEq, 7));
    {
        let cache = PredicateCache::open(dir.path(), PredicateLimits::default()).unwrap();
        assert!(cache.is_empty());
        cache.record(&file("a"), 2, &p, ranges(&[(3, 9), (20, 21)]));
        cache.record(&file("b"), 0, &q, RowRanges::none());
        assert!(cache.persist().unwrap());
        assert!(!cache.persist().unwrap(), "nothing changed since");
    }
    let reopened = PredicateCache::open(dir.path(), PredicateLimits::default()).unwrap();
    assert_eq!(reopened.len(), 2);
    let hit = reopened.lookup(&file("a"), &[2], &p).remove(0).unwrap();
    assert_eq!(pairs(&hit.ranges), [(3, 9), (20, 21)]);
    assert!(hit.exact);
    let none = reopened.lookup(&file("b"), &[0], &q).remove(0).unwrap();
    assert!(none.ranges.is_empty());

    let path = dir
        .path()
        .join(super::DIR_NAME)
        .join(super::persist::FILE_NAME);
    let whole = std::fs::read(&path).unwrap();
    // Still valid JSON, but not what was written: only the checksum tells.
    let text = String::from_utf8(whole.clone()).unwrap();
    assert!(text.contains("[3,9]"), "{text}");
    let altered = text.replacen("[3,9]", "[3,8]", 1).into_bytes();
    for torn in [
        whole[..whole.len() - 5].to_vec(),
        altered,
        b"garbage".to_vec(),
    ] {
        std::fs::write(&path, &torn).unwrap();
        let cache = PredicateCache::open(dir.path(), PredicateLimits::default()).unwrap();
        assert!(cache.is_empty());
        assert!(!path.exists(), "a torn file is deleted");
    }
    std::fs::write(&path, &whole).unwrap();
    let restored = PredicateCache::open(dir.path(), PredicateLimits::default()).unwrap();
    assert_eq!(restored.len(), 2);
}

#[test]
fn a_restart_keeps_the_recency_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = fingerprint(&compare("x", CmpOp::Eq, 1));
    let cache = PredicateCache::open(dir.path(), PredicateLimits::default()).unwrap();
    for g in 0..3 {
        cache.record(&file("a"), g, &p, ranges(&[(0, 1)]));
    }
    cache.lookup(&file("a"), &[0], &p);
    cache.persist().unwrap();
    let two = PredicateLimits {
        entries_max: 2,
        ..PredicateLimits::default()
    };
    let reopened = PredicateCache::open(dir.path(), two).unwrap();
    let found = reopened.lookup(&file("a"), &[0, 1, 2], &p);
    let found: Vec<bool> = found.iter().map(Option::is_some).collect();
    assert_eq!(found, [true, false, true]);
}
