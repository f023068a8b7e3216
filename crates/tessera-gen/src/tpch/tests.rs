use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::rows::{CURRENT_DATE, END_DATE, Generator, START_DATE};
use super::vocab::{
    CONTAINER_KIND, CONTAINER_SIZE, INSTRUCTIONS, PRIORITIES, SEGMENTS, SHIP_MODES, TYPE_FINISH,
    TYPE_METAL, TYPE_SIZE,
};
use super::*;

type Doc = Map<String, Value>;

/// Generates `cfg` and sorts the documents by table, recognised by key column.
fn tables(cfg: &TpchConfig) -> HashMap<&'static str, Vec<Doc>> {
    let mut out = Vec::new();
    let bytes = write_tpch_ndjson(cfg, 2, &mut out).unwrap();
    assert_eq!(bytes, out.len() as u64);
    let keys = [
        "l_orderkey",
        "ps_partkey",
        "o_orderkey",
        "p_partkey",
        "c_custkey",
        "s_suppkey",
        "n_nationkey",
        "r_regionkey",
    ];
    let mut by_table: HashMap<&str, Vec<Doc>> = HashMap::new();
    for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let doc: Doc = serde_json::from_slice(line).unwrap();
        let present: Vec<_> = keys.iter().filter(|k| doc.contains_key(**k)).collect();
        assert_eq!(present.len(), 1, "one table per document: {doc:?}");
        by_table.entry(present[0]).or_default().push(doc);
    }
    by_table
}

fn int(doc: &Doc, key: &str) -> u64 {
    doc[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {doc:?}"))
}

fn text<'a>(doc: &'a Doc, key: &str) -> &'a str {
    doc[key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {doc:?}"))
}

fn money(doc: &Doc, key: &str) -> f64 {
    doc[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} in {doc:?}"))
}

/// Days since the epoch of a `YYYY-MM-DD` string, checking the format on the way.
fn day(doc: &Doc, key: &str) -> u64 {
    let s = text(doc, key);
    let parts: Vec<u64> = s.split('-').map(|p| p.parse().unwrap()).collect();
    assert_eq!((s.len(), parts.len()), (10, 3), "{s}");
    let (y, m, d) = (parts[0], parts[1], parts[2]);
    // Howard Hinnant's days_from_civil, the inverse of what the writer uses.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[test]
fn cardinalities_follow_the_scale_factor() {
    let t = tables(&TpchConfig::new(0.01, 1).unwrap());
    for (table, rows) in [
        ("r_regionkey", 5),
        ("n_nationkey", 25),
        ("s_suppkey", 100),
        ("c_custkey", 1_500),
        ("p_partkey", 2_000),
        ("ps_partkey", 8_000),
        ("o_orderkey", 15_000),
    ] {
        assert_eq!(t[table].len(), rows, "{table}");
    }
    // 1 to 7 lineitems per order, 4 on average.
    let lines = t["l_orderkey"].len();
    assert!((57_000..63_000).contains(&lines), "{lines} lineitems");
}

#[test]
fn keys_are_unique_and_foreign_keys_resolve() {
    let t = tables(&TpchConfig::new(0.01, 7).unwrap());
    let keys = |table: &str, key: &str| -> HashSet<u64> {
        let set: HashSet<u64> = t[table].iter().map(|d| int(d, key)).collect();
        assert_eq!(set.len(), t[table].len(), "{key} is unique");
        set
    };
    let regions = keys("r_regionkey", "r_regionkey");
    let nations = keys("n_nationkey", "n_nationkey");
    let suppliers = keys("s_suppkey", "s_suppkey");
    let customers = keys("c_custkey", "c_custkey");
    let parts = keys("p_partkey", "p_partkey");
    let orders = keys("o_orderkey", "o_orderkey");
    assert!(
        t["n_nationkey"]
            .iter()
            .all(|d| regions.contains(&int(d, "n_regionkey")))
    );
    assert!(
        t["s_suppkey"]
            .iter()
            .all(|d| nations.contains(&int(d, "s_nationkey")))
    );
    assert!(
        t["c_custkey"]
            .iter()
            .all(|d| nations.contains(&int(d, "c_nationkey")))
    );

    let mut pairs = HashSet::new();
    for d in &t["ps_partkey"] {
        let pair = (int(d, "ps_partkey"), int(d, "ps_suppkey"));
        assert!(parts.contains(&pair.0) && suppliers.contains(&pair.1));
        assert!(pairs.insert(pair), "duplicate partsupp {pair:?}");
    }
    let mut ordering = HashSet::new();
    for d in &t["o_orderkey"] {
        let customer = int(d, "o_custkey");
        assert!(customers.contains(&customer));
        assert_ne!(
            customer % 3,
            0,
            "customers with keys divisible by 3 never order"
        );
        ordering.insert(customer);
    }
    // Two thirds of the customers are eligible and nearly all of them order.
    assert!(
        ordering.len() > customers.len() / 2,
        "{} customers order",
        ordering.len()
    );

    let mut lines = HashSet::new();
    for d in &t["l_orderkey"] {
        let order = int(d, "l_orderkey");
        assert!(orders.contains(&order));
        assert!(pairs.contains(&(int(d, "l_partkey"), int(d, "l_suppkey"))));
        assert!(lines.insert((order, int(d, "l_linenumber"))));
    }
    // Every order has lineitems, numbered from 1 without gaps.
    for d in &t["o_orderkey"] {
        assert!(lines.contains(&(int(d, "o_orderkey"), 1)));
    }
    for &(order, number) in &lines {
        assert!(number == 1 || lines.contains(&(order, number - 1)));
    }
}

#[test]
fn values_lie_in_their_domains() {
    let t = tables(&TpchConfig::new(0.01, 3).unwrap());
    let types: HashSet<String> = TYPE_SIZE
        .iter()
        .flat_map(|a| {
            TYPE_FINISH
                .iter()
                .flat_map(move |b| TYPE_METAL.iter().map(move |c| format!("{a} {b} {c}")))
        })
        .collect();
    let containers: HashSet<String> = CONTAINER_SIZE
        .iter()
        .flat_map(|a| CONTAINER_KIND.iter().map(move |b| format!("{a} {b}")))
        .collect();
    for d in &t["p_partkey"] {
        assert!(types.contains(text(d, "p_type")), "{d:?}");
        assert!(containers.contains(text(d, "p_container")), "{d:?}");
        assert!((1..=50).contains(&int(d, "p_size")));
        let words: HashSet<&str> = text(d, "p_name").split(' ').collect();
        assert_eq!(words.len(), 5, "five distinct colours: {d:?}");
        let brand = text(d, "p_brand").strip_prefix("Brand#").unwrap();
        let mfgr = text(d, "p_mfgr").strip_prefix("Manufacturer#").unwrap();
        assert!(brand.starts_with(mfgr) && brand.len() == 2);
    }
    for d in t["c_custkey"].iter().chain(&t["s_suppkey"]) {
        let (nation, phone) = match d.get("c_custkey") {
            Some(_) => (int(d, "c_nationkey"), text(d, "c_phone")),
            None => (int(d, "s_nationkey"), text(d, "s_phone")),
        };
        assert!(phone.starts_with(&format!("{}-", nation + 10)), "{d:?}");
        assert_eq!(phone.len(), 15, "{phone}");
    }
    assert!(
        t["c_custkey"]
            .iter()
            .all(|d| SEGMENTS.contains(&text(d, "c_mktsegment")))
    );

    let mut statuses = HashMap::new();
    let mut charges: HashMap<u64, f64> = HashMap::new();
    for d in &t["l_orderkey"] {
        let (ship, commit, receipt) = (
            day(d, "l_shipdate"),
            day(d, "l_commitdate"),
            day(d, "l_receiptdate"),
        );
        assert!(
            START_DATE < ship && ship < receipt && receipt <= END_DATE,
            "{d:?}"
        );
        assert!(START_DATE < commit && commit <= END_DATE);
        let flag = text(d, "l_returnflag");
        assert!(
            if receipt <= CURRENT_DATE {
                flag == "R" || flag == "A"
            } else {
                flag == "N"
            },
            "{d:?}"
        );
        let status = text(d, "l_linestatus");
        assert_eq!(status, if ship > CURRENT_DATE { "O" } else { "F" });
        statuses
            .entry(int(d, "l_orderkey"))
            .or_insert_with(HashSet::new)
            .insert(status.to_string());
        assert!((1.0..=50.0).contains(&money(d, "l_quantity")));
        assert!((0.0..=0.10).contains(&money(d, "l_discount")));
        assert!((0.0..=0.08).contains(&money(d, "l_tax")));
        assert!(INSTRUCTIONS.contains(&text(d, "l_shipinstruct")));
        assert!(SHIP_MODES.contains(&text(d, "l_shipmode")));
        let charge = money(d, "l_extendedprice")
            * (1.0 + money(d, "l_tax"))
            * (1.0 - money(d, "l_discount"));
        *charges.entry(int(d, "l_orderkey")).or_default() += charge;
    }
    for d in &t["o_orderkey"] {
        let key = int(d, "o_orderkey");
        let date = day(d, "o_orderdate");
        assert!((START_DATE..=END_DATE - 151).contains(&date));
        assert!(PRIORITIES.contains(&text(d, "o_orderpriority")));
        let expected = match statuses[&key].len() {
            2 => "P".to_string(),
            _ => statuses[&key].iter().next().unwrap().clone(),
        };
        assert_eq!(text(d, "o_orderstatus"), expected);
        // Per-line rounding to cents: within half a cent per lineitem.
        assert!(
            (money(d, "o_totalprice") - charges[&key]).abs() < 0.04,
            "{d:?}"
        );
    }
}

#[test]
fn lineitems_follow_their_order() {
    let cfg = TpchConfig::new(0.01, 5).unwrap();
    let generator = Generator::new(&cfg);
    for index in 0..2_000 {
        let order = generator.order(index);
        assert!((1..=7).contains(&order.lines.len()));
        for line in &order.lines {
            assert!((1..=121).contains(&(line.ship - order.date)));
            assert!((30..=90).contains(&(line.commit - order.date)));
            assert!((1..=30).contains(&(line.receipt - line.ship)));
        }
    }
}

#[test]
fn decimals_have_two_places_and_dates_are_iso() {
    let cfg = TpchConfig::new(0.001, 1).unwrap();
    let mut out = Vec::new();
    write_tpch_ndjson(&cfg, 1, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("{\"l_orderkey\":1,"))
        .unwrap();
    for key in ["l_quantity", "l_extendedprice", "l_discount", "l_tax"] {
        let at = line.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
        let number: String = line[at..].chars().take_while(|c| *c != ',').collect();
        assert_eq!(
            number.split('.').nth(1).map(str::len),
            Some(2),
            "{key}: {number}"
        );
    }
    assert!(line.contains("\"l_shipdate\":\"199"), "{line}");
}

#[test]
fn special_comments_appear_at_the_specified_rate() {
    let cfg = TpchConfig::new(1.0, 1).unwrap();
    let generator = Generator::new(&cfg);
    let mut out = Vec::new();
    generator.write_units(Table::Supplier, 0..10_000, &mut out);
    let text = String::from_utf8(out).unwrap();
    let matching = |a: &str, b: &str| {
        text.lines()
            .filter(|l| l.find(a).is_some_and(|at| l[at..].contains(b)))
            .count()
    };
    // The specification puts 5 per scale factor in each class (Q16 excludes them).
    assert!((1..=15).contains(&matching("Customer ", "Complaints")));
    assert!((1..=15).contains(&matching("Customer ", "Recommends")));
}

#[test]
fn output_is_deterministic_and_independent_of_threads() {
    let cfg = TpchConfig::new(0.002, 9).unwrap();
    let mut one = Vec::new();
    let mut three = Vec::new();
    write_tpch_ndjson(&cfg, 1, &mut one).unwrap();
    write_tpch_ndjson(&cfg, 3, &mut three).unwrap();
    assert_eq!(one, three);
    let mut other = Vec::new();
    write_tpch_ndjson(&TpchConfig::new(0.002, 10).unwrap(), 1, &mut other).unwrap();
    assert_ne!(one, other);
}

#[test]
fn tiny_and_invalid_scales() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e9] {
        assert!(
            matches!(TpchConfig::new(bad, 1), Err(TpchError::Scale(_))),
            "{bad}"
        );
    }
    // Clamped to the smallest consistent data set: the key formulas still hold.
    let t = tables(&TpchConfig::new(1e-7, 1).unwrap());
    assert_eq!(t["s_suppkey"].len(), 4);
    assert_eq!(t["ps_partkey"].len(), 4);
    assert_eq!(t["o_orderkey"].len(), 1);
}
